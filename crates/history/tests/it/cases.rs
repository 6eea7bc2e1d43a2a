//! The store's behaviour, written once and run against SQLite (`sqlite`) and a real PostgreSQL
//! (`postgres`): each case gets a fresh, empty database from `fresh(name)`.

use gatebench_history::series::Metric;
use gatebench_history::{HistoryError, Location, RunInput, Store};
use gatebench_model::histogram;

use crate::fixture::{self, Spec, TempDir};

/// A function that gives a fresh, empty history.
pub type Fresh<'a> = &'a dyn Fn(&str) -> Location;

/// Every case, in order, for a backend that runs them in one test.
pub fn all(fresh: Fresh<'_>) {
    round_trip(fresh);
    duplicate_versions_are_refused_unless_replaced(fresh);
    another_suite_under_the_same_name_is_refused(fresh);
    dates_order_the_versions(fresh);
    incomplete_and_newer_directories_write_nothing(fresh);
    a_run_stored_as_it_runs(fresh);
    concurrent_adds_all_land(fresh);
    the_same_version_added_at_once_lands_once(fresh);
    a_writer_that_dies_mid_transaction_leaves_nothing(fresh);
    failed_and_generator_bound_repeats_are_stored_but_not_in_series(fresh);
    gates_and_summaries(fresh);
}

fn add(
    store: &mut Store,
    dir: &std::path::Path,
    version: &str,
    replace: bool,
) -> Result<usize, HistoryError> {
    let (run, records) = RunInput::from_results_dir(dir, version, Some("deadbeef"), None)?;
    Ok(store.add_run(&run, &records, replace, &mut |_| {})?.cells)
}

/// What goes in comes out: runs, every repeat's figures, percentiles from the histograms, the
/// histograms themselves, and the tidy export.
pub fn round_trip(fresh: Fresh<'_>) {
    let tmp = TempDir::new("round-trip");
    let spec = Spec {
        censored: 5,
        ..Spec::default()
    };
    let records = fixture::write_run(&tmp.join("v1"), &spec);
    let mut store = Store::open(&fresh("round_trip")).unwrap();
    assert_eq!(add(&mut store, &tmp.join("v1"), "1.0", false).unwrap(), 6);
    let fast = Spec {
        throughput: 20_000.0,
        latency_us: 250,
        started_at_unix_ms: spec.started_at_unix_ms + 86_400_000,
        ..Spec::default()
    };
    let fast_records = fixture::write_run(&tmp.join("v2"), &fast);
    add(&mut store, &tmp.join("v2"), "2.0", false).unwrap();

    let suites = store.suites().unwrap();
    assert_eq!(suites.len(), 1);
    assert_eq!(
        (suites[0].runs, suites[0].cells, suites[0].cell_keys),
        (2, 12, 2)
    );

    let runs = store.runs("test suite").unwrap();
    let versions: Vec<&str> = runs.iter().map(|r| r.version.as_str()).collect();
    assert_eq!(versions, ["1.0", "2.0"]);
    assert_eq!(runs[0].commit.as_deref(), Some("deadbeef"));
    assert_eq!(runs[0].date_unix_ms, spec.started_at_unix_ms as i64);
    assert!(runs[0].complete);
    assert_eq!(runs[0].env_fingerprint.len(), 64);
    assert_eq!(runs[0].env_fingerprint, runs[1].env_fingerprint);
    assert!(runs[0].environment.contains("Test CPU"));
    assert!(std::path::Path::new(&runs[0].results_dir).is_absolute());
    assert!(runs[0].results_dir.ends_with("v1"));

    let series = store
        .series(
            "test suite",
            &[Metric::Throughput, Metric::P99, Metric::SutMemory],
        )
        .unwrap();
    // Two cells × three metrics, cells by key.
    assert_eq!(series.len(), 6);
    let tp = &series[0];
    assert_eq!(
        (tp.cell.as_str(), tp.metric),
        ("proxy_u100_s50_d0", Metric::Throughput)
    );
    assert_eq!(tp.points.len(), 2);
    assert_eq!(tp.points[0].version, "1.0");
    let want: Vec<f64> = records
        .iter()
        .filter(|r| r.cell.users == 100)
        .map(|r| r.load.as_ref().unwrap().measurement.throughput_rps)
        .collect();
    assert_eq!(tp.points[0].samples, want);
    assert_eq!(tp.points[1].samples[0], 20_000.0 * 1.01);
    // p99 from the stored histograms equals the record's own (answered and censored together).
    let p99 = &series[1];
    assert_eq!(p99.metric, Metric::P99);
    let want: Vec<f64> = records
        .iter()
        .filter(|r| r.cell.users == 100)
        .map(fixture::p99)
        .collect();
    assert_eq!(p99.points[0].samples, want);
    let want2: Vec<f64> = fast_records
        .iter()
        .filter(|r| r.cell.users == 100)
        .map(fixture::p99)
        .collect();
    assert_eq!(p99.points[1].samples, want2);
    assert_eq!(series[2].points[0].samples, vec![13.0, 14.0, 15.0]);

    // The histograms are lossless and add up across repeats.
    let h = store.histograms("test suite", "proxy_u10_s50_d0").unwrap();
    assert_eq!(h.len(), 2);
    assert_eq!(h[0].version, "1.0");
    assert_eq!(h[0].repeats, 3);
    let mut want = histogram::new_histogram();
    for r in records.iter().filter(|r| r.cell.users == 10) {
        let hs = r
            .load
            .as_ref()
            .unwrap()
            .measurement
            .histograms
            .as_ref()
            .unwrap();
        histogram::add(&mut want, &histogram::decode(&hs.answered).unwrap());
    }
    assert_eq!(h[0].answered, want);
    assert_eq!(h[0].latency.len(), want.len() + 15);
    assert_eq!(h[1].latency.len(), 3000);

    let rows = store.export(Some("test suite")).unwrap();
    // 2 versions × 2 cells × 3 repeats × (7 metrics + mean, SUT CPU %, SUT mean memory).
    assert_eq!(rows.len(), 2 * 2 * 3 * 10);
    assert!(rows
        .iter()
        .any(|r| r.metric == "p99.9" && r.version == "2.0"));
    assert_eq!(rows[0].date, "2026-11-25T16:00:00Z");

    assert!(matches!(
        store.series("no such suite", &[Metric::P50]),
        Err(HistoryError::UnknownSuite { .. })
    ));
}

/// A version added twice is refused, unless `--replace`, which replaces it whole.
pub fn duplicate_versions_are_refused_unless_replaced(fresh: Fresh<'_>) {
    let tmp = TempDir::new("dup");
    fixture::write_run(&tmp.join("a"), &Spec::default());
    fixture::write_run(
        &tmp.join("b"),
        &Spec {
            throughput: 5.0,
            repeats: 2,
            ..Spec::default()
        },
    );
    let mut store = Store::open(&fresh("duplicates")).unwrap();
    add(&mut store, &tmp.join("a"), "1.0", false).unwrap();
    let e = add(&mut store, &tmp.join("b"), "1.0", false).unwrap_err();
    assert!(matches!(e, HistoryError::VersionExists { .. }), "{e}");
    assert!(e.to_string().contains("--replace"), "{e}");
    let (run, _) = RunInput::from_results_dir(&tmp.join("b"), "1.0", None, None).unwrap();
    assert!(store.check(&run.suite, &run.version, false).is_err());
    assert!(store.check(&run.suite, &run.version, true).is_ok());
    assert_eq!(add(&mut store, &tmp.join("b"), "1.0", true).unwrap(), 4);
    let runs = store.runs("test suite").unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].cells, 4);
    let s = store.series("test suite", &[Metric::Throughput]).unwrap();
    assert_eq!(s[0].points[0].samples, vec![5.0 * 1.01, 5.0 * 1.02]);
}

/// Two different suites never mix under one name.
pub fn another_suite_under_the_same_name_is_refused(fresh: Fresh<'_>) {
    let tmp = TempDir::new("mismatch");
    fixture::write_run(&tmp.join("a"), &Spec::default());
    fixture::write_run(
        &tmp.join("b"),
        &Spec {
            users: vec![10, 1000],
            ..Spec::default()
        },
    );
    let mut store = Store::open(&fresh("mismatch")).unwrap();
    add(&mut store, &tmp.join("a"), "1.0", false).unwrap();
    let e = add(&mut store, &tmp.join("b"), "2.0", false).unwrap_err();
    assert!(matches!(e, HistoryError::SuiteMismatch { .. }), "{e}");
    assert!(e.to_string().contains("another suite"), "{e}");
    assert_eq!(store.runs("test suite").unwrap().len(), 1);
}

/// Versions are ordered by date, then by the order they were added.
pub fn dates_order_the_versions(fresh: Fresh<'_>) {
    let tmp = TempDir::new("dates");
    fixture::write_run(&tmp.join("a"), &Spec::default());
    let mut store = Store::open(&fresh("dates")).unwrap();
    let day = 86_400_000;
    let t0 = Spec::default().started_at_unix_ms as i64;
    for (version, date) in [
        ("3", Some(t0 + 2 * day)),
        ("1", Some(t0 - day)),
        ("2", None),
        ("2b", None),
    ] {
        let (run, records) =
            RunInput::from_results_dir(&tmp.join("a"), version, None, date).unwrap();
        store.add_run(&run, &records, false, &mut |_| {}).unwrap();
    }
    let order: Vec<String> = store
        .runs("test suite")
        .unwrap()
        .into_iter()
        .map(|r| r.version)
        .collect();
    assert_eq!(order, ["1", "2", "2b", "3"]);
    let s = store.series("test suite", &[Metric::P50]).unwrap();
    let order: Vec<&str> = s[0].points.iter().map(|p| p.version.as_str()).collect();
    assert_eq!(order, ["1", "2", "2b", "3"]);
}

/// An incomplete results directory, or one of a newer format, is refused and nothing written.
pub fn incomplete_and_newer_directories_write_nothing(fresh: Fresh<'_>) {
    let tmp = TempDir::new("incomplete");
    let records = fixture::write_run(&tmp.join("a"), &Spec::default());
    let store = Store::open(&fresh("incomplete")).unwrap();
    std::fs::remove_file(
        tmp.join("a")
            .join(format!("cells/{}/record.json", records[2].cell.id)),
    )
    .unwrap();
    let e = RunInput::from_results_dir(&tmp.join("a"), "1.0", None, None).unwrap_err();
    assert!(e.to_string().contains("incomplete: 1 of 6"), "{e}");

    fixture::write_run(&tmp.join("b"), &Spec::default());
    let rec = tmp
        .join("b")
        .join(format!("cells/{}/record.json", records[0].cell.id));
    let text = std::fs::read_to_string(&rec).unwrap();
    std::fs::write(
        &rec,
        text.replacen("\"schema_version\": 2", "\"schema_version\": 3", 1),
    )
    .unwrap();
    let e = RunInput::from_results_dir(&tmp.join("b"), "1.0", None, None).unwrap_err();
    assert!(e.to_string().contains("schema version 3"), "{e}");

    // A record whose histogram does not decode: refused when its cell is written, and the
    // cells before it go with the transaction.
    let mut store = store;
    fixture::write_run(&tmp.join("c"), &Spec::default());
    let rec = tmp
        .join("c")
        .join(format!("cells/{}/record.json", records[4].cell.id));
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&rec).unwrap()).unwrap();
    v["load"]["measurement"]["histograms"]["answered"] =
        "SElTVGhpcyBpcyBub3QgYSBoaXN0b2dyYW0=".into();
    std::fs::write(&rec, v.to_string()).unwrap();
    let e = add(&mut store, &tmp.join("c"), "1.0", false).unwrap_err();
    assert!(e.to_string().contains("a histogram"), "{e}");
    assert!(store.suites().unwrap().is_empty());
}

/// `run --history`: the run row at the start, each cell as it finishes, complete at the end;
/// series see the run once it is complete.
pub fn a_run_stored_as_it_runs(fresh: Fresh<'_>) {
    let tmp = TempDir::new("live");
    let records = fixture::write_run(&tmp.join("a"), &Spec::default());
    let mut store = Store::open(&fresh("live")).unwrap();
    let (run, _) = RunInput::from_results_dir(&tmp.join("a"), "1.0", None, None).unwrap();
    let added = store.begin_run(&run, false).unwrap();
    for r in &records[..3] {
        store.add_cell(added.run, r).unwrap();
    }
    let runs = store.runs("test suite").unwrap();
    assert!(!runs[0].complete);
    assert_eq!((runs[0].cells, runs[0].planned_cells), (3, 6));
    assert!(store
        .series("test suite", &[Metric::P50])
        .unwrap()
        .is_empty());
    assert_eq!(store.suites().unwrap()[0].incomplete_runs, 1);
    for r in &records[3..] {
        store.add_cell(added.run, r).unwrap();
    }
    store.finish_run(added.run).unwrap();
    assert!(store.runs("test suite").unwrap()[0].complete);
    assert_eq!(store.series("test suite", &[Metric::P50]).unwrap().len(), 2);
    // The same version again is refused at the start, before anything runs.
    assert!(matches!(
        store.begin_run(&run, false),
        Err(HistoryError::VersionExists { .. })
    ));
}

/// Several writers adding runs at once (each with its own connection) all land, whole.
pub fn concurrent_adds_all_land(fresh: Fresh<'_>) {
    let tmp = TempDir::new("concurrent");
    fixture::write_run(&tmp.join("a"), &Spec::default());
    let location = fresh("concurrent");
    // Opened once first so the threads do not all migrate at once... and once more in
    // each thread, concurrently, which must also be safe.
    drop(Store::open(&location).unwrap());
    std::thread::scope(|s| {
        for t in 0..6 {
            let (location, dir) = (&location, tmp.join("a"));
            s.spawn(move || {
                let mut store = Store::open(location).unwrap();
                for k in 0..3 {
                    add(&mut store, &dir, &format!("{t}.{k}"), false).unwrap();
                }
            });
        }
    });
    let store = Store::open(&location).unwrap();
    let runs = store.runs("test suite").unwrap();
    assert_eq!(runs.len(), 18);
    assert!(runs.iter().all(|r| r.cells == 6 && r.complete));
}

/// Two writers adding the same version at once: one lands, the other is refused.
pub fn the_same_version_added_at_once_lands_once(fresh: Fresh<'_>) {
    let tmp = TempDir::new("race");
    fixture::write_run(&tmp.join("a"), &Spec::default());
    let location = fresh("race");
    drop(Store::open(&location).unwrap());
    let results: Vec<Result<usize, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let (location, dir) = (&location, tmp.join("a"));
                s.spawn(move || {
                    let mut store = Store::open(location).unwrap();
                    add(&mut store, &dir, "1.0", false).map_err(|e| e.to_string())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    for e in results.iter().filter_map(|r| r.as_ref().err()) {
        assert!(e.contains("already in the history"), "{e}");
    }
    let store = Store::open(&location).unwrap();
    assert_eq!(store.runs("test suite").unwrap()[0].cells, 6);
}

/// A writer that dies inside its transaction (here a panic after the first cell, which drops
/// the connection with the transaction open) leaves the database as it was.
pub fn a_writer_that_dies_mid_transaction_leaves_nothing(fresh: Fresh<'_>) {
    let tmp = TempDir::new("dies");
    fixture::write_run(&tmp.join("a"), &Spec::default());
    let location = fresh("dies");
    {
        let mut store = Store::open(&location).unwrap();
        add(&mut store, &tmp.join("a"), "1.0", false).unwrap();
    }
    let died = std::thread::scope(|s| {
        s.spawn(|| {
            let mut store = Store::open(&location).unwrap();
            let (run, records) =
                RunInput::from_results_dir(&tmp.join("a"), "2.0", None, None).unwrap();
            store
                .add_run(&run, &records, true, &mut |_| {
                    panic!("the writer dies here")
                })
                .unwrap();
        })
        .join()
    });
    assert!(died.is_err());
    let store = Store::open(&location).unwrap();
    let runs = store.runs("test suite").unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!((runs[0].version.as_str(), runs[0].cells), ("1.0", 6));
    assert_eq!(store.suites().unwrap()[0].cells, 6);
}

/// The scale: 50 versions × 40 cells × 5 repeats with histograms. Prints how long one
/// `add` takes (the slowest of the 50), a full series read and the histograms of one cell, and
/// checks the bounds: an add in at most 2 s. Run with `--release -- --ignored`.
pub fn scale(fresh: Fresh<'_>) -> gatebench_history::Location {
    use std::time::{Duration, Instant};
    let tmp = TempDir::new("scale");
    let spec = Spec {
        users: (1..=40).collect(),
        repeats: 5,
        ..Spec::default()
    };
    fixture::write_run(&tmp.join("a"), &spec);
    let location = fresh("scale");
    let mut store = Store::open(&location).unwrap();
    let mut slowest = Duration::ZERO;
    for v in 0..50 {
        let t = Instant::now();
        let (run, records) =
            RunInput::from_results_dir(&tmp.join("a"), &format!("1.{v}"), None, None).unwrap();
        store.add_run(&run, &records, false, &mut |_| {}).unwrap();
        slowest = slowest.max(t.elapsed());
    }
    let t = Instant::now();
    let series = store.series("test suite", &Metric::ALL).unwrap();
    let series_time = t.elapsed();
    assert_eq!(series.len(), 40 * Metric::ALL.len());
    assert!(series
        .iter()
        .all(|s| s.points.len() == 50 && s.points[0].samples.len() == 5));
    let t = Instant::now();
    let h = store.histograms("test suite", "proxy_u7_s50_d0").unwrap();
    let hist_time = t.elapsed();
    assert_eq!(h.len(), 50);
    println!(
        "scale: 50 versions x 40 cells x 5 repeats: slowest add {:.3} s (reading the directory \
         included), series of every cell and metric {:.3} s, one cell's histograms per version \
         {:.3} s",
        slowest.as_secs_f64(),
        series_time.as_secs_f64(),
        hist_time.as_secs_f64()
    );
    assert!(slowest < Duration::from_secs(2), "an add took {slowest:?}");
    location
}

/// A failed repeat and a generator-bound one are stored (the run has every cell) but give no
/// sample: their figures are not the target's.
pub fn failed_and_generator_bound_repeats_are_stored_but_not_in_series(fresh: Fresh<'_>) {
    let tmp = TempDir::new("failed");
    let records = fixture::write_run(&tmp.join("a"), &Spec::default());
    let edit = |id: &str, f: &dyn Fn(&mut serde_json::Value)| {
        let rec = tmp.join("a").join(format!("cells/{id}/record.json"));
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&rec).unwrap()).unwrap();
        f(&mut v);
        std::fs::write(&rec, v.to_string()).unwrap();
    };
    // Repeats 1 and 2 of the 10-user cell.
    edit(&records[0].cell.id, &|v| {
        v["status"] = "failed".into();
        v["reason"] = "the SUT exited".into();
        v["load"] = serde_json::Value::Null;
    });
    edit(&records[2].cell.id, &|v| v["load"]["valid"] = false.into());
    let mut store = Store::open(&fresh("failed")).unwrap();
    assert_eq!(add(&mut store, &tmp.join("a"), "1.0", false).unwrap(), 6);
    assert_eq!(store.runs("test suite").unwrap()[0].cells, 6);
    let s = store.series("test suite", &[Metric::Throughput]).unwrap();
    let by_key = |k: &str| {
        s.iter().find(|s| s.cell == k).unwrap().points[0]
            .samples
            .len()
    };
    assert_eq!(by_key("proxy_u10_s50_d0"), 1);
    assert_eq!(by_key("proxy_u100_s50_d0"), 3);
}

/// A run's `[suite] gates` are stored with it and read back by `runs`; a bad one is refused;
/// `summaries` gives the medians of every cell's repeats per version.
pub fn gates_and_summaries(fresh: Fresh<'_>) {
    use gatebench_history::synthetic::{self, RunSpec};
    let tmp = TempDir::new("gates");
    let mut store = Store::open(&fresh("gates_and_summaries")).unwrap();
    let spec = RunSpec {
        gates: vec!["p99 < 50ms".into(), "throughput >= -5% vs 1.0".into()],
        ..RunSpec::default()
    };
    synthetic::write_run(&tmp.join("v1"), &spec).unwrap();
    add(&mut store, &tmp.join("v1"), "1.0", false).unwrap();
    let faster = RunSpec {
        throughput_factor: 2.0,
        started_at_unix_ms: spec.started_at_unix_ms + 86_400_000,
        gates: Vec::new(),
        ..spec.clone()
    };
    synthetic::write_run(&tmp.join("v2"), &faster).unwrap();
    add(&mut store, &tmp.join("v2"), "2.0", false).unwrap();
    let runs = store.runs("synthetic").unwrap();
    assert_eq!(runs[0].gates, spec.gates);
    assert!(runs[1].gates.is_empty());
    let (cells, versions) = store.summaries("synthetic").unwrap();
    assert_eq!(
        cells.iter().map(|c| c.key.as_str()).collect::<Vec<_>>(),
        ["proxy_u100_s50_d0", "proxy_u10_s50_d0"]
    );
    assert_eq!(cells[1].users, 10);
    assert_eq!(versions.len(), 2);
    let series = store
        .series("synthetic", &[Metric::Throughput, Metric::P99])
        .unwrap();
    for (v, summary) in versions.iter().enumerate() {
        assert_eq!(summary.rows.len(), 2);
        for (key, row) in &summary.rows {
            let median = |m: Metric| {
                let s = series
                    .iter()
                    .find(|s| s.cell == *key && s.metric == m)
                    .unwrap();
                let mut x = s.points[v].samples.clone();
                x.sort_by(f64::total_cmp);
                x[x.len() / 2]
            };
            assert_eq!(row.throughput, median(Metric::Throughput), "{key}");
            assert_eq!(row.p99_ms, median(Metric::P99), "{key}");
            assert!(row.sut_cpu_pct.is_some() && row.mean_ms > 0.0);
        }
    }
    let ratio = versions[1].rows[0].1.throughput / versions[0].rows[0].1.throughput;
    assert!((1.9..2.1).contains(&ratio), "{ratio}");
    // A gate that does not parse: the directory is not stored.
    let bad = RunSpec {
        gates: vec!["p99 < 50%".into()],
        started_at_unix_ms: spec.started_at_unix_ms + 2 * 86_400_000,
        ..spec.clone()
    };
    synthetic::write_run(&tmp.join("v3"), &bad).unwrap();
    let e = add(&mut store, &tmp.join("v3"), "3.0", false).unwrap_err();
    assert!(
        e.to_string()
            .contains("[suite] gates: bad gate `p99 < 50%`"),
        "{e}"
    );
    assert_eq!(store.runs("synthetic").unwrap().len(), 2);
}
