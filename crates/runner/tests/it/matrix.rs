//! Matrix expansion: every combination once, interleaved so no scenario always runs first,
//! filters by glob, estimates that add up.

use std::collections::HashSet;
use std::time::Duration;

use gatebench_runner::matrix::{expand, CELL_OVERHEAD};
use gatebench_runner::{Plan, RunnerError, Suite};

use crate::support::suite;

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
