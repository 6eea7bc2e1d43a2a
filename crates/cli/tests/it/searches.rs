//! A suite's capacity column and intermediary cost: the suites (an echo back-end, the
//! passthrough proxy in front of it; small bounds and short steps so each run takes seconds),
//! and what `--estimate` counts for them. The runs themselves take the machine alone, so they
//! are in `alone`.

use crate::support::{self, run_suite as run, temp_dir};

pub(crate) const CAPACITY: &str = r#"
[suite]
name = "capacity"
warmup = "0.2s"
duration = "0.5s"
include = ["*_capacity_*"]

[matrix]
users = [2]
sizes = [50]
delays = ["0ms"]

[load]
connections = 4
threads = 1

[capacity]
slo = "p50<50ms,errors<1%"
start = 100
min_rate = 50
max_rate = 400
step = "500ms"
max_step = "1s"
warmup = "200ms"
max_steps = 8

[[scenario]]
name = "echo"
title = "Echo"
backend = { serve = "echo --port {port} --threads 1" }
"#;

pub(crate) const COST: &str = r#"
[suite]
name = "cost"
warmup = "0.2s"
duration = "0.5s"
include = ["*_cost_*"]

[matrix]
users = [2]
sizes = [50]
delays = ["0ms"]

[load]
connections = 4
threads = 1

[cost]
rate = 300
repeats = 2
duration = "0.6s"
warmup = "0.2s"

[[scenario]]
name = "proxy"
title = "Proxy"
backend = { serve = "echo --port {port} --threads 1" }
sut = { serve = "proxy --port {port} --upstream {upstream} --threads 1" }
cost = true
"#;

/// `--estimate` counts a search at its bound (`max_steps × (warmup + max_step)`, plus the
/// closed-model probe without a start) and a cost cell at its `2 × repeats` runs, each with
/// the second a cell takes to start and stop; it runs nothing.
#[test]
fn the_estimate_counts_searches_at_their_bound_and_cost_runs() {
    let dir = temp_dir("estimate");
    let suite = COST
        .replace("include = [\"*_cost_*\"]\n", "")
        .replace(
            "[cost]",
            "[capacity]\nslo = \"p99<10ms\"\nmax_steps = 10\nwarmup = \"1s\"\nmax_step = \"5s\"\n\n[cost]",
        );
    let o = run(&dir, &suite, &["--estimate"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", support::stderr(&o));
    // One load cell (0.2 + 0.5 + 1 s), one search (10 × 6 s + 2.5 s probe + 1 s), one cost
    // cell (4 × 0.8 s + 1 s): 1.7 + 63.5 + 4.2 = 69.4 s.
    assert!(out.contains("Estimated time: 1m 09s"), "{out}");
    assert!(
        out.contains("capacity: 1 searches for the max rate within p99<10ms"),
        "{out}"
    );
    assert!(
        out.contains("counted at that bound, 1m 03s per search"),
        "{out}"
    );
    assert!(out.contains("cost: 1 measurements"), "{out}");
    assert!(!dir.join("results").exists(), "the estimate runs nothing");
    std::fs::remove_dir_all(&dir).unwrap();
}
