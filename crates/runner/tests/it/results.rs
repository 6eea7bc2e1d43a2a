//! Reading results directories back: refuse what is not one, or is of another version; say
//! what is missing.

use gatebench_runner::results::{read, write_atomic};
use gatebench_runner::ResultsDir;

use crate::support::temp_dir;

#[test]
fn a_directory_without_run_json_is_refused() {
    let d = temp_dir("not-results");
    let e = read(&d).unwrap_err().to_string();
    assert!(
        e.ends_with("not a gatebench results directory (no run.json; `gatebench run` writes one)"),
        "{e}"
    );
    std::fs::write(
        d.join("run.json"),
        r#"{"kind": "something-else", "schema_version": 1}"#,
    )
    .unwrap();
    let e = read(&d).unwrap_err().to_string();
    assert!(e.contains("run.json is of another kind"), "{e}");
    let e = read(&d.join("nope")).unwrap_err().to_string();
    assert!(e.ends_with("no such directory"), "{e}");
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn another_schema_version_is_refused_with_both_versions() {
    let d = temp_dir("other-version");
    std::fs::write(
        d.join("run.json"),
        r#"{"kind": "gatebench-results", "schema_version": 99}"#,
    )
    .unwrap();
    let e = read(&d).unwrap_err().to_string();
    assert!(
        e.contains("run.json has schema version 99, this gatebench reads version 2"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn a_results_directory_is_never_reused() {
    let d = temp_dir("reuse");
    std::fs::write(d.join("something"), "x").unwrap();
    let e = ResultsDir::create(&d).unwrap_err().to_string();
    assert!(
        e.ends_with("exists and is not empty; choose another --out directory"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn atomic_writes_leave_no_temporary_file() {
    let d = temp_dir("atomic");
    write_atomic(&d.join("a.json"), b"{}").unwrap();
    write_atomic(&d.join("a.json"), b"{\"x\":1}").unwrap();
    let names: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["a.json"]);
    assert_eq!(
        std::fs::read_to_string(d.join("a.json")).unwrap(),
        "{\"x\":1}"
    );
    let _ = std::fs::remove_dir_all(d);
}
