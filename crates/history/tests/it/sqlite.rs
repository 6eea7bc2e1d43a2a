//! The store on SQLite files: the shared cases, and what only a file shows: several processes
//! adding at once, a process killed half-way through adding, a database of a newer schema, and
//! a file that is not a gatebench history.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gatebench_history::{HistoryError, Location, RunInput, Store};

use crate::cases;
use crate::fixture::{self, Spec, TempDir};

/// Runs `case` on a fresh SQLite file in a temporary directory.
fn on_sqlite(case: fn(cases::Fresh<'_>)) {
    let tmp = TempDir::new("sqlite");
    let fresh = |name: &str| Location::Sqlite(tmp.join(&format!("{name}/history.sqlite")));
    case(&fresh);
}

#[test]
fn round_trip() {
    on_sqlite(cases::round_trip);
}

#[test]
fn duplicate_versions_are_refused_unless_replaced() {
    on_sqlite(cases::duplicate_versions_are_refused_unless_replaced);
}

#[test]
fn another_suite_under_the_same_name_is_refused() {
    on_sqlite(cases::another_suite_under_the_same_name_is_refused);
}

#[test]
fn dates_order_the_versions() {
    on_sqlite(cases::dates_order_the_versions);
}

#[test]
fn incomplete_and_newer_directories_write_nothing() {
    on_sqlite(cases::incomplete_and_newer_directories_write_nothing);
}

#[test]
fn a_run_stored_as_it_runs() {
    on_sqlite(cases::a_run_stored_as_it_runs);
}

#[test]
fn concurrent_adds_all_land() {
    on_sqlite(cases::concurrent_adds_all_land);
}

#[test]
fn the_same_version_added_at_once_lands_once() {
    on_sqlite(cases::the_same_version_added_at_once_lands_once);
}

#[test]
fn failed_and_generator_bound_repeats_are_stored_but_not_in_series() {
    on_sqlite(cases::failed_and_generator_bound_repeats_are_stored_but_not_in_series);
}

#[test]
fn a_writer_that_dies_mid_transaction_leaves_nothing() {
    on_sqlite(cases::a_writer_that_dies_mid_transaction_leaves_nothing);
}

#[test]
fn gates_and_summaries() {
    on_sqlite(cases::gates_and_summaries);
}

/// The scale on SQLite (`cargo test --release -p gatebench-history -- --ignored
/// scale`): prints the times and the file's size, at most 200 MB.
#[test]
#[ignore = "a scale measurement: run with --release -- --ignored"]
fn scale() {
    let tmp = TempDir::new("sqlite-scale");
    let fresh = |name: &str| Location::Sqlite(tmp.join(&format!("{name}.sqlite")));
    let Location::Sqlite(path) = cases::scale(&fresh) else {
        unreachable!()
    };
    let size = std::fs::metadata(&path).unwrap().len();
    println!("scale: SQLite file {:.1} MB", size as f64 / 1e6);
    assert!(size < 200_000_000);
}

#[test]
fn the_file_and_its_directory_are_created_on_first_use() {
    let tmp = TempDir::new("create");
    let path = tmp.join("deep/er/history.sqlite");
    let store = Store::open(&Location::Sqlite(path.clone())).unwrap();
    assert!(store.created());
    assert!(path.is_file());
    assert_eq!(store.schema_version().unwrap(), 2);
    drop(store);
    assert!(!Store::open(&Location::Sqlite(path)).unwrap().created());
}

/// The environment variables a child process of this test binary acts on.
const CHILD_DB: &str = "GATEBENCH_HISTORY_TEST_DB";
const CHILD_DIR: &str = "GATEBENCH_HISTORY_TEST_DIR";
const CHILD_VERSION: &str = "GATEBENCH_HISTORY_TEST_VERSION";
/// Set: the child stops inside its transaction, after one cell, and touches this file.
const CHILD_STALL: &str = "GATEBENCH_HISTORY_TEST_STALL";

/// Not a test of its own: what a child process started by the tests below does (nothing
/// when run by `cargo test`). Adds the results directory `$DIR` as `$VERSION` to `$DB`.
#[test]
fn child_adds_a_run() {
    let (Ok(db), Ok(dir), Ok(version)) = (
        std::env::var(CHILD_DB),
        std::env::var(CHILD_DIR),
        std::env::var(CHILD_VERSION),
    ) else {
        return;
    };
    let stall = std::env::var(CHILD_STALL).ok();
    let mut store = Store::open(&Location::Sqlite(db.into())).unwrap();
    let (run, records) = RunInput::from_results_dir(Path::new(&dir), &version, None, None).unwrap();
    store
        .add_run(&run, &records, false, &mut |_| {
            if let Some(marker) = &stall {
                std::fs::write(marker, b"in the transaction").unwrap();
                std::thread::sleep(Duration::from_secs(120));
            }
        })
        .unwrap();
}

/// This test binary, run as a child that adds `dir` as `version` to `db`.
fn child(db: &Path, dir: &Path, version: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", "sqlite::child_adds_a_run", "--test-threads", "1"])
        .env(CHILD_DB, db)
        .env(CHILD_DIR, dir)
        .env(CHILD_VERSION, version)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

#[test]
fn several_processes_adding_at_once_all_land() {
    let tmp = TempDir::new("processes");
    fixture::write_run(&tmp.join("a"), &Spec::default());
    let db: PathBuf = tmp.join("history.sqlite");
    let children: Vec<_> = (0..5)
        .map(|i| {
            child(&db, &tmp.join("a"), &format!("1.{i}"))
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let store = Store::open(&Location::Sqlite(db)).unwrap();
    let runs = store.runs("test suite").unwrap();
    assert_eq!(runs.len(), 5);
    assert!(runs.iter().all(|r| r.cells == 6));
}

#[test]
fn a_process_killed_while_adding_leaves_the_database_as_it_was() {
    let tmp = TempDir::new("killed");
    fixture::write_run(&tmp.join("a"), &Spec::default());
    let db = tmp.join("history.sqlite");
    // One run already there, which must survive.
    {
        let mut store = Store::open(&Location::Sqlite(db.clone())).unwrap();
        let (run, records) = RunInput::from_results_dir(&tmp.join("a"), "0.9", None, None).unwrap();
        store.add_run(&run, &records, false, &mut |_| {}).unwrap();
    }
    let marker = tmp.join("stalled");
    let mut c = child(&db, &tmp.join("a"), "1.0")
        .env(CHILD_STALL, &marker)
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !marker.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the child never got to its transaction"
        );
        assert!(c.try_wait().unwrap().is_none(), "the child ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SIGKILL: no handler, no rollback by the process itself.
    c.kill().unwrap();
    c.wait().unwrap();
    let store = Store::open(&Location::Sqlite(db.clone())).unwrap();
    let runs = store.runs("test suite").unwrap();
    let versions: Vec<&str> = runs.iter().map(|r| r.version.as_str()).collect();
    assert_eq!(versions, ["0.9"]);
    assert_eq!(runs[0].cells, 6);
    drop(store);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let cells: i64 = conn
        .query_row("SELECT COUNT(*) FROM cells", [], |r| r.get(0))
        .unwrap();
    assert_eq!(cells, 6);
}

#[test]
fn a_database_of_a_newer_schema_is_refused() {
    let tmp = TempDir::new("newer");
    let db = tmp.join("history.sqlite");
    drop(Store::open(&Location::Sqlite(db.clone())).unwrap());
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "INSERT INTO schema_migrations VALUES (99, 'from the future', 0, '9.9.9')",
        [],
    )
    .unwrap();
    drop(conn);
    let e = Store::open(&Location::Sqlite(db)).unwrap_err();
    assert!(
        matches!(
            e,
            HistoryError::NewerSchema {
                found: 99,
                known: 2,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("use a newer gatebench"), "{e}");
}

#[test]
fn a_file_that_is_not_a_history_is_refused() {
    let tmp = TempDir::new("foreign");
    let db = tmp.join("other.sqlite");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE notes (x TEXT)")
        .unwrap();
    let e = Store::open(&Location::Sqlite(db)).unwrap_err();
    assert!(e.to_string().contains("not a gatebench history"), "{e}");
    let text = tmp.join("text.sqlite");
    std::fs::write(
        &text,
        "hello, this is not a database at all, not even close......",
    )
    .unwrap();
    let e = Store::open(&Location::Sqlite(text)).unwrap_err();
    assert!(matches!(e, HistoryError::Sqlite { .. }), "{e}");
}

/// A history written before schema version 2 gets `runs.gates` (`[]` for its runs) when a newer
/// gatebench opens it, and its runs read back.
#[test]
fn a_version_1_history_is_migrated_to_version_2() {
    let tmp = TempDir::new("v1");
    let db = tmp.join("history.sqlite");
    let mut store = Store::open(&Location::Sqlite(db.clone())).unwrap();
    fixture::write_run(&tmp.join("run"), &Spec::default());
    let (run, records) =
        gatebench_history::RunInput::from_results_dir(&tmp.join("run"), "1.0", None, None).unwrap();
    store.add_run(&run, &records, false, &mut |_| {}).unwrap();
    drop(store);
    // Back to version 1: no gates column, no migration 2.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "ALTER TABLE runs DROP COLUMN gates; DELETE FROM schema_migrations WHERE version = 2;",
    )
    .unwrap();
    drop(conn);
    let store = Store::open(&Location::Sqlite(db)).unwrap();
    assert_eq!(store.schema_version().unwrap(), 2);
    let runs = store.runs("test suite").unwrap();
    assert_eq!(runs.len(), 1);
    assert!(runs[0].gates.is_empty());
}
