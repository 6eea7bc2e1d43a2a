//! Build script of the `gatebench` binary: lays out its code in execution order.
//!
//! `symbol-order.txt` (written by `scripts/symbol-order.sh` from a trace of the functions the
//! services and the load generator execute) is passed to the linker as
//! `--symbol-ordering-file`, so those functions sit together at the start of `.text` and a
//! process maps a few contiguous pages of the binary instead of pieces of its whole 10 MiB
//! text (docs/build.md, "Code layout"). `--no-warn-symbol-ordering` keeps entries that no
//! longer name a function (renamed or inlined since the trace) silent.
//!
//! Only lld (and linkers compatible with it) know the option, and the link fails on one that
//! does not (GNU ld: "unrecognized option"). So the argument is added only when the link is the
//! one rustc makes by default on a target where that default is lld:
//!
//! - the target is `x86_64-unknown-linux-gnu` or `aarch64-unknown-linux-gnu`: since Rust 1.90
//!   (both, as of 1.95: `rustc -Z unstable-options --print target-spec-json`) their linker
//!   flavor is `gnu-lld-cc` with a self-contained linker: `cc -fuse-ld=lld -B
//!   <sysroot>/lib/rustlib/<host>/bin/gcc-ld`, i.e. rustc's bundled rust-lld driven by cc, so
//!   the argument is spelled `-Wl,...`;
//! - the user chose no linker: no `target.<triple>.linker` in `.cargo/config` (Cargo hands it
//!   to build scripts as `RUSTC_LINKER`) and none of `-C linker`, `-C linker-flavor`,
//!   `-C linker-features` (`-lld` switches back to the system linker),
//!   `-C link-self-contained` (`-linker` uses a system `ld.lld`, which may be missing) or a
//!   `-fuse-ld=`/`--ld-path=` link argument in the flags Cargo passes
//!   (`CARGO_ENCODED_RUSTFLAGS`: RUSTFLAGS, `build.rustflags`, `target.<triple>.rustflags`);
//! - and a probe link of an empty program with exactly these flags and the option succeeds.
//!   It settles what the rules above cannot see: an older rustc (the crate builds from 1.85,
//!   before lld was the default), a rustc built with another default linker (distributions),
//!   a cross link whose `cc` cannot link the target.
//!
//! Otherwise the binary is linked as before, only without the ordering. Setting
//! `GATEBENCH_NO_SYMBOL_ORDER=1` skips it too (to measure what the ordering gives).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=symbol-order.txt");
    println!("cargo:rerun-if-env-changed=GATEBENCH_NO_SYMBOL_ORDER");
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by Cargo"));
    let order = manifest_dir.join("symbol-order.txt");
    match ordering_arg(&order) {
        Ok(arg) => println!("cargo:rustc-link-arg-bin=gatebench={arg}"),
        // Not a warning: a user's linker choice is legitimate, the binary is just laid out as
        // the linker pleases. `cargo build -vv` shows the reason.
        Err(why) => eprintln!("gatebench: linking without {}: {why}", order.display()),
    }
}

/// The `-Wl,...` argument that orders the binary's functions, or why it is left out.
fn ordering_arg(order: &Path) -> Result<String, String> {
    if env::var_os("GATEBENCH_NO_SYMBOL_ORDER").is_some_and(|v| !v.is_empty() && v != "0") {
        return Err("GATEBENCH_NO_SYMBOL_ORDER is set".into());
    }
    let cfg = |key: &str| env::var(format!("CARGO_CFG_TARGET_{key}")).unwrap_or_default();
    let (arch, os, env_, vendor) = (cfg("ARCH"), cfg("OS"), cfg("ENV"), cfg("VENDOR"));
    if !matches!(arch.as_str(), "x86_64" | "aarch64")
        || os != "linux"
        || env_ != "gnu"
        || vendor != "unknown"
    {
        return Err(format!(
            "target {arch}-{vendor}-{os}-{env_} does not link with lld by default"
        ));
    }
    if let Some(linker) = env::var_os("RUSTC_LINKER") {
        return Err(format!(
            "a linker is configured ({})",
            linker.to_string_lossy()
        ));
    }
    let rustflags: Vec<String> = env::var("CARGO_ENCODED_RUSTFLAGS")
        .unwrap_or_default()
        .split('\x1f')
        .filter(|f| !f.is_empty())
        .map(str::to_owned)
        .collect();
    if let Some(flag) = linker_choice(&rustflags) {
        return Err(format!("the rustflags choose the linker ({flag})"));
    }
    let path = order
        .to_str()
        .ok_or("the ordering file's path is not UTF-8")?;
    // `-Wl,` splits at commas.
    if path.contains(',') || !order.is_file() {
        return Err("the ordering file is missing or its path has a comma".into());
    }
    let arg = format!("-Wl,--symbol-ordering-file={path},--no-warn-symbol-ordering");
    probe(&rustflags, &arg)?;
    Ok(arg)
}

/// The first of `flags` that picks the linker, its flavor or its features.
fn linker_choice(flags: &[String]) -> Option<String> {
    const CHOOSERS: [&str; 4] = [
        "linker=",
        "linker-flavor=",
        "linker-features=",
        "link-self-contained=",
    ];
    let mut prev_is_c = false;
    for flag in flags {
        // `-Cx=y`, `-C x=y`, `--codegen x=y`, `--codegen=x=y`; `-Z` options likewise.
        let value = if prev_is_c {
            Some(flag.as_str())
        } else {
            ["-C", "--codegen=", "-Z"]
                .iter()
                .find_map(|p| flag.strip_prefix(p))
                .filter(|v| !v.is_empty())
        };
        prev_is_c = matches!(flag.as_str(), "-C" | "--codegen" | "-Z");
        let Some(value) = value else { continue };
        let picks_linker = CHOOSERS.iter().any(|c| value.starts_with(c))
            || ((value.starts_with("link-arg=") || value.starts_with("link-args="))
                && (value.contains("-fuse-ld") || value.contains("--ld-path")));
        if picks_linker {
            return Some(value.to_owned());
        }
    }
    None
}

/// Links an empty program for the target with `rustflags` and `arg`: Ok if the linker took it.
fn probe(rustflags: &[String], arg: &str) -> Result<(), String> {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").ok_or("OUT_DIR unset")?);
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let target = env::var("TARGET").map_err(|_| "TARGET unset")?;
    let src = out_dir.join("symbol_order_probe.rs");
    fs::write(&src, "fn main() {}\n").map_err(|e| format!("writing the probe: {e}"))?;
    let output = Command::new(rustc)
        .args([
            "--edition=2021",
            "--crate-type=bin",
            "--crate-name=symbol_order_probe",
            "--target",
        ])
        .arg(&target)
        .args(rustflags)
        .args(["-C", "opt-level=0", "-C", "debuginfo=0", "-C"])
        .arg(format!("link-arg={arg}"))
        .arg("-o")
        .arg(out_dir.join("symbol_order_probe"))
        .arg(&src)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running rustc for the probe link: {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let why = stderr
        .lines()
        .find(|l| l.contains("unrecognized") || l.contains("unknown"))
        .or_else(|| stderr.lines().next())
        .unwrap_or("no message");
    Err(format!("the probe link failed: {}", why.trim()))
}
