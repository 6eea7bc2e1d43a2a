//! Writes a synthetic series of results directories for the history's scale benchmark
//! (`bench/history-scale.sh`): VERSIONS runs of one suite, each of 40 cells (2 scenarios × 5
//! users × 4 sizes) × REPEATS repeats with their latency histograms (2,000 values each), made by
//! `gatebench_history::synthetic` with 2 % noise. Throughput drops 6 % from the version at 3/5
//! of the series and latency rises 8 % from the one at 4/5, so `history changes` has something
//! to find. Directories are `OUT_DIR/v001` …, one version each, dated a day apart; one line per
//! directory is printed: `DIR VERSION DATE`.
//!
//!     cargo run --release -p gatebench-history --example synthetic-series -- OUT_DIR 50 5

use std::path::PathBuf;

use gatebench_history::store::rfc3339;
use gatebench_history::synthetic::{write_run, RunSpec};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || -> ! {
        eprintln!("usage: synthetic-series OUT_DIR VERSIONS REPEATS");
        std::process::exit(2);
    };
    let [out, versions, repeats] = args.as_slice() else {
        usage()
    };
    let out = PathBuf::from(out);
    let (Ok(versions), Ok(repeats)) = (versions.parse::<usize>(), repeats.parse::<u32>()) else {
        usage()
    };
    if versions == 0 || repeats == 0 {
        usage();
    }
    let drop_at = versions * 3 / 5;
    let rise_at = versions * 4 / 5;
    for v in 0..versions {
        let started = 1_767_225_600_000 + v as u64 * 86_400_000;
        let spec = RunSpec {
            suite: "synthetic scale".into(),
            scenarios: vec!["passthrough".into(), "transform".into()],
            users: vec![10, 50, 100, 200, 500],
            sizes: vec![50, 1024, 10_240, 102_400],
            repeats,
            gates: vec![
                "p99 < 100ms".into(),
                "throughput >= -5% vs 1.0.0".into(),
                "cv(throughput) <= 5%".into(),
            ],
            started_at_unix_ms: started,
            seed: 7 + v as u64,
            throughput_factor: if v >= drop_at { 0.94 } else { 1.0 },
            latency_factor: if v >= rise_at { 1.08 } else { 1.0 },
            ..RunSpec::default()
        };
        let dir = out.join(format!("v{:03}", v + 1));
        if let Err(e) = write_run(&dir, &spec) {
            eprintln!("synthetic-series: {}: {e}", dir.display());
            std::process::exit(2);
        }
        println!("{} 1.{v}.0 {}", dir.display(), rfc3339(started as i64));
    }
}
