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

/// What makes a write atomic: a reader never sees a file half written, and two writers of the
/// same file (a temporary name shared between them) never mix their bytes or fail. A plain
/// `std::fs::write` fails this: readers see it truncated to nothing and half filled.
#[test]
fn readers_see_whole_files_while_several_writers_replace_one() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let d = temp_dir("atomic-race");
    let path = d.join("record.json");
    // Each writer's content is one byte repeated: a mix of two shows as two different bytes.
    let contents: Vec<Vec<u8>> = (b'a'..=b'd').map(|c| vec![c; 256 * 1024]).collect();
    write_atomic(&path, &contents[0]).unwrap();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut reads = 0u32;
            while !done.load(Ordering::Relaxed) {
                let got = std::fs::read(&path).unwrap();
                assert_eq!(got.len(), 256 * 1024, "a reader saw a partial file");
                assert!(got.iter().all(|b| *b == got[0]), "two writes mixed");
                reads += 1;
            }
            reads
        });
        let writers: Vec<_> = contents
            .iter()
            .map(|c| s.spawn(|| (0..40).for_each(|_| write_atomic(&path, c).unwrap())))
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
    });
    let names: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["record.json"]);
    let _ = std::fs::remove_dir_all(d);
}
