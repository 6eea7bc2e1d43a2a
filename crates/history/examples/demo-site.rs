//! Writes the trend site of a synthetic suite (`gatebench_history::site::demo`: 20 versions,
//! a throughput drop and a p99 rise at version 12, change points and gates computed) to the
//! directory given, for `scripts/check-site.sh` to open in a browser.
//!
//!     cargo run -p gatebench-history --example demo-site -- OUT_DIR

use std::path::PathBuf;

fn main() {
    let Some(out) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: demo-site OUT_DIR");
        std::process::exit(2);
    };
    let site = gatebench_history::site::demo(20);
    match gatebench_history::site::render(&site, &out) {
        Ok(pages) => println!("{} pages in {}", pages.len(), out.display()),
        Err(e) => {
            eprintln!("demo-site: cannot write {}: {e}", out.display());
            std::process::exit(2);
        }
    }
}
