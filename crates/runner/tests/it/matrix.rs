//! Matrix expansion: every combination once, interleaved so no scenario always runs first,
//! filters by glob, estimates that add up.

use std::collections::HashSet;
use std::time::Duration;

use gatebench_runner::matrix::{expand, CELL_OVERHEAD};
use gatebench_runner::{Plan, RunnerError, Suite};

use crate::support::{quick_suite, suite};

fn three_scenarios(order: &str, repeats: u32) -> Suite {
    suite(&format!(
        r#"
[suite]
warmup = "2s"
duration = "5s"
order = "{order}"
repeats = {repeats}

[matrix]
users = [10, 100]
sizes = [50, 1024]
delays = ["0ms", "20ms"]

[[scenario]]
name = "a"
backend = {{ serve = "echo --port {{port}}" }}

[[scenario]]
name = "b"
protocols = ["h1c", "h2"]
backend = {{ serve = "echo --port {{port}}" }}
sut = {{ serve = "proxy --port {{port}} --upstream {{upstream}}" }}

[[scenario]]
name = "c"
sut = {{ command = "run --port {{port}}" }}
"#
    ))
}

#[test]
fn every_combination_once_with_stable_unique_ids() {
    let s = three_scenarios("interleaved", 2);
    let cells = expand(&s);
    // (a: 1 protocol + b: 2 + c: 1) × 2 users × 2 sizes × 2 delays × 2 repeats.
    assert_eq!(cells.len(), 4 * 2 * 2 * 2 * 2);
    let ids: HashSet<&str> = cells.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids.len(), cells.len(), "ids are unique");
    assert!(ids.contains("a_u10_s50_d0_r1"));
    assert!(ids.contains("b_u100_s1024_d20_h2_r2"));
    assert!(ids.contains("c_u100_s1024_d20_r2"));
    assert!(cells.iter().all(|c| c
        .id
        .chars()
        .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch))));
    // The same suite expands to the same ids.
    let again: Vec<String> = expand(&s).into_iter().map(|c| c.id).collect();
    assert_eq!(
        again,
        cells.iter().map(|c| c.id.clone()).collect::<Vec<_>>()
    );
}

#[test]
fn interleaved_order_rotates_the_first_scenario() {
    let s = three_scenarios("interleaved", 1);
    let cells = expand(&s);
    let scenario_of = |i: usize| s.scenarios[cells[i].scenario].name.as_str();
    // Point 1: a, b(h1c), b(h2), c; point 2 starts with b; point 3 with c.
    let first: Vec<&str> = (0..4).map(scenario_of).collect();
    assert_eq!(first, ["a", "b", "b", "c"]);
    assert_eq!(scenario_of(4), "b");
    assert_eq!(scenario_of(8), "c");
    // Every point holds every scenario before the next point starts.
    for chunk in cells.chunks(4) {
        let p = (&chunk[0].intensity, chunk[0].size, chunk[0].delay);
        assert!(chunk.iter().all(|c| (&c.intensity, c.size, c.delay) == p));
    }
}

#[test]
fn sequential_order_runs_a_scenario_to_the_end() {
    let s = three_scenarios("sequential", 2);
    let names: Vec<&str> = expand(&s)
        .iter()
        .map(|c| s.scenarios[c.scenario].name.as_str())
        .collect();
    let changes = names.windows(2).filter(|w| w[0] != w[1]).count();
    assert_eq!(changes, 2, "a…a b…b c…c");
    let cells = expand(&s);
    // Repeats back to back.
    assert_eq!(cells[0].id, "a_u10_s50_d0_r1");
    assert_eq!(cells[1].id, "a_u10_s50_d0_r2");
}

#[test]
fn filters_match_ids_or_scenario_names() {
    let s = three_scenarios("interleaved", 1);
    let p = Plan::new(&s, &["b".into()], &[]).unwrap();
    assert_eq!(p.cells.len(), 16);
    assert_eq!(p.expanded, 32);
    let p = Plan::new(&s, &["*_u100_*".into()], &["*_h2_*".into(), "c".into()]).unwrap();
    assert!(p.cells.iter().all(|c| c.id.contains("_u100_")));
    assert!(p
        .cells
        .iter()
        .all(|c| !c.id.contains("_h2_") && !c.id.starts_with("c_")));
    assert_eq!(p.cells.len(), 8);
    let e = Plan::new(&s, &["nothing*".into()], &[]).unwrap_err();
    assert!(matches!(e, RunnerError::NothingToRun { planned: 32 }));
    assert!(e.to_string().contains("matched none of the 32 cells"));
}

#[test]
fn the_estimate_is_cells_times_phases_and_overhead() {
    let s = three_scenarios("interleaved", 1);
    let p = Plan::new(&s, &[], &[]).unwrap();
    assert_eq!(
        p.estimate,
        (Duration::from_secs(7) + CELL_OVERHEAD) * p.cells.len() as u32
    );
}

#[test]
fn the_default_suite_fits_in_five_minutes() {
    let s = Suite::builtin();
    let p = Plan::new(&s, &[], &[]).unwrap();
    assert_eq!(p.cells.len(), 40);
    assert!(p.estimate < Duration::from_secs(300), "{:?}", p.estimate);
}

/// `[capacity]` and `cost = true`: one capacity cell per scenario, size, delay and protocol
/// (not per users, not per repeat), one cost cell per point of the scenario that asks, after
/// every load cell; the estimate counts a search at its bound and a cost cell at its runs.
#[test]
fn capacity_and_cost_cells_come_once_per_point_and_count_in_the_estimate() {
    let s = suite(
        r#"
[suite]
warmup = "1s"
duration = "2s"
repeats = 2

[matrix]
users = [10, 100]
sizes = [50, 1024]
delays = ["0ms"]

[capacity]
slo = "p99<10ms"
start = 1000
step = "1s"
max_step = "4s"
warmup = "500ms"
max_steps = 10

[cost]
rate = 500
repeats = 3
duration = "1s"
warmup = "250ms"

[[scenario]]
name = "echo"
backend = { serve = "echo --port {port}" }

[[scenario]]
name = "proxy"
protocols = ["h1c", "h2c"]
backend = { serve = "echo --port {port}" }
sut = { serve = "proxy --port {port} --upstream {upstream}" }
cost = true

[[scenario]]
name = "off"
capacity = false
backend = { serve = "echo --port {port}" }
"#,
    );
    let cells = expand(&s);
    let ids: Vec<&str> = cells.iter().map(|c| c.id.as_str()).collect();
    // Load cells: (echo 1 + proxy 2 + off 1 protocols) × 2 users × 2 sizes × 2 repeats.
    let loads = 4 * 2 * 2 * 2;
    assert_eq!(
        &ids[loads..],
        &[
            "echo_capacity_s50_d0",
            "proxy_capacity_s50_d0_h1c",
            "proxy_cost_s50_d0_h1c",
            "proxy_capacity_s50_d0_h2c",
            "proxy_cost_s50_d0_h2c",
            "echo_capacity_s1024_d0",
            "proxy_capacity_s1024_d0_h1c",
            "proxy_cost_s1024_d0_h1c",
            "proxy_capacity_s1024_d0_h2c",
            "proxy_cost_s1024_d0_h2c",
        ]
    );
    assert!(cells[..loads]
        .iter()
        .all(|c| c.kind == gatebench_model::CellKind::Load));
    let plan = Plan::new(&s, &[], &[]).unwrap();
    // Load cells 1 + 2 + 1 s; a search at most 10 × (0.5 + 4) s (a start is given: no probe);
    // a cost cell 2 × 3 × (0.25 + 1) s; each + 1 s.
    let want =
        Duration::from_secs_f64(loads as f64 * 4.0 + 6.0 * (10.0 * 4.5 + 1.0) + 4.0 * (7.5 + 1.0));
    assert_eq!(plan.estimate, want);
    assert_eq!(CELL_OVERHEAD, Duration::from_secs(1));
    // Without a start, the closed-model probe (0.5 s + 2 s) counts too.
    let no_start = suite(&s.to_toml().replace("start = 1000.0\n", ""));
    assert!(no_start.capacity.as_ref().unwrap().start.is_none());
    let plan2 = Plan::new(&no_start, &[], &[]).unwrap();
    assert_eq!(plan2.estimate, want + Duration::from_secs_f64(6.0 * 2.5));
    // The filters see their ids.
    let only = Plan::new(&s, &["*_cost_*".to_owned()], &[]).unwrap();
    assert_eq!(only.cells.len(), 4);

    // The short form shortens searches and cost runs with the load cells: steps and runs no
    // longer than a quick cell (2 s, 0.5 s warm-up), at most 8 steps to 10 %, 2 runs a path.
    let quick = quick_suite(&s.to_toml());
    let c = quick.capacity.as_ref().unwrap();
    assert_eq!(
        (
            c.step,
            c.max_step,
            c.warmup,
            c.max_steps,
            c.precision_percent
        ),
        (
            Duration::from_secs(1),
            Duration::from_secs(2),
            Duration::from_millis(500),
            8,
            10.0
        )
    );
    let cost = quick.cost.as_ref().unwrap();
    assert_eq!(
        (cost.duration, cost.warmup, cost.repeats),
        (Duration::from_secs(1), Duration::from_millis(250), 2)
    );
    let plan = Plan::new(&quick, &[], &[]).unwrap();
    // Load cells (0.5 + 2) s; a search at most 8 × (0.5 + 2) s; a cost cell 2 × 2 × 1.25 s.
    let want =
        Duration::from_secs_f64(loads as f64 * 3.5 + 6.0 * (8.0 * 2.5 + 1.0) + 4.0 * (5.0 + 1.0));
    assert_eq!(plan.estimate, want);
}
