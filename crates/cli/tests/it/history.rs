//! End to end: `gatebench run --history` on the tiny example suite with the real binary, then
//! `gatebench history add|list|export` on the history it made, and the exit status and one
//! line of each refusal.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::{shared, temp_dir, text};

/// The binary in `cwd`, without a `GATEBENCH_HISTORY` of the environment.
fn gatebench(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gatebench"))
        .args(args)
        .current_dir(cwd)
        .env_remove("GATEBENCH_HISTORY")
        .output()
        .expect("running gatebench")
}

/// A refusal: exit 2 and one line on stderr holding `needle`.
fn refused(out: &Output, needle: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("History: "))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains(needle), "{stderr}");
}

#[test]
fn a_run_stored_as_it_runs_then_added_listed_and_exported() {
    let _machine = shared();
    let tmp = temp_dir("history");
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tiny.toml");
    let db = tmp.join("h/history.sqlite");
    let db_s = db.to_str().unwrap();
    let out_dir = tmp.join("run1");
    let out = gatebench(
        &[
            "run",
            suite.to_str().unwrap(),
            "--repeats",
            "2",
            "--out",
            out_dir.to_str().unwrap(),
            "--history",
            db_s,
            "--version",
            "1.0",
            "--commit",
            "abc123",
        ],
        &tmp,
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!("History: {db_s} (created)")),
        "{stderr}"
    );
    assert!(
        stdout.contains("History: version 1.0 stored, 2 cells"),
        "{stdout}"
    );

    // The same version again is refused before anything runs: no results directory.
    let again = tmp.join("run-again");
    let out = gatebench(
        &[
            "run",
            suite.to_str().unwrap(),
            "--repeats",
            "2",
            "--out",
            again.to_str().unwrap(),
            "--history",
            db_s,
            "--version",
            "1.0",
        ],
        &tmp,
    );
    refused(
        &out,
        "version 1.0 of suite \"tiny\" is already in the history",
    );
    assert!(!again.exists());

    // Backfill the same directory as another version, then as the same one.
    let out = gatebench(
        &[
            "history",
            "add",
            out_dir.to_str().unwrap(),
            "--version",
            "1.1",
            "--history",
            db_s,
        ],
        &tmp,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("Added version 1.1 of suite \"tiny\": 2 cells"));
    let out = gatebench(
        &[
            "history",
            "add",
            out_dir.to_str().unwrap(),
            "--version",
            "1.1",
            "--history",
            db_s,
        ],
        &tmp,
    );
    refused(&out, "pass --replace");
    let out = gatebench(
        &[
            "history",
            "add",
            out_dir.to_str().unwrap(),
            "--version",
            "1.1",
            "--replace",
            "--date",
            "2030-01-01T00:00:00Z",
            "--history",
            db_s,
        ],
        &tmp,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("replaced"));

    // An incomplete directory is refused and nothing is written.
    std::fs::remove_file(out_dir.join("cells/backend-alone_u2_s50_d0_r2/record.json")).unwrap();
    let out = gatebench(
        &[
            "history",
            "add",
            out_dir.to_str().unwrap(),
            "--version",
            "1.2",
            "--history",
            db_s,
        ],
        &tmp,
    );
    refused(&out, "incomplete: 1 of 2 planned cells have no record");

    let out = gatebench(&["history", "list", "--history", db_s], &tmp);
    let stdout = text(&out.stdout);
    assert!(out.status.success());
    assert!(stdout.contains("| tiny | 2 | 0 | 4 | 1 |"), "{stdout}");
    let out = gatebench(
        &["history", "list", "--suite", "tiny", "--history", db_s],
        &tmp,
    );
    let stdout = text(&out.stdout);
    let v10 = stdout.find("| 1.0 |").expect("1.0 listed");
    let v11 = stdout
        .find("| 1.1 | 2030-01-01T00:00:00Z |")
        .expect("1.1 listed, dated");
    assert!(v10 < v11, "{stdout}");
    assert!(stdout.contains("abc123"), "{stdout}");

    let out = gatebench(
        &[
            "history",
            "export",
            "--format",
            "json",
            "--suite",
            "tiny",
            "--history",
            db_s,
        ],
        &tmp,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    let p99: Vec<&serde_json::Value> = rows.iter().filter(|r| r["metric"] == "p99").collect();
    // Two versions × one cell × two repeats.
    assert_eq!(p99.len(), 4);
    assert!(p99
        .iter()
        .all(|r| r["cell"] == "backend-alone_u2_s50_d0" && r["value"].as_f64().unwrap() > 0.0));
    let csv = tmp.join("export.csv");
    let out = gatebench(
        &[
            "history",
            "export",
            "--out",
            csv.to_str().unwrap(),
            "--history",
            db_s,
        ],
        &tmp,
    );
    assert!(out.status.success());
    let csv = std::fs::read_to_string(csv).unwrap();
    assert!(csv.starts_with("suite,version,date,commit,cell,"), "{csv}");
    assert_eq!(csv.lines().count(), rows.len() + 1);

    // Where the history is: GATEBENCH_HISTORY when --history is not given, else the XDG
    // data directory.
    let env_list = |envs: &[(&str, &str)]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_gatebench"));
        c.args(["history", "list"])
            .current_dir(&tmp)
            .env_remove("GATEBENCH_HISTORY");
        for (k, v) in envs {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let out = env_list(&[("GATEBENCH_HISTORY", db_s)]);
    assert!(
        text(&out.stdout).contains("| tiny | 2 |"),
        "{}",
        text(&out.stderr)
    );
    let xdg = tmp.join("xdg");
    let out = env_list(&[("XDG_DATA_HOME", xdg.to_str().unwrap())]);
    assert!(out.status.success());
    assert!(
        text(&out.stderr).contains(&format!(
            "History: {}/gatebench/history.sqlite (created)",
            xdg.display()
        )),
        "{}",
        text(&out.stderr)
    );
    assert!(xdg.join("gatebench/history.sqlite").is_file());

    // Bad input: one line, exit 2.
    refused(
        &gatebench(
            &["history", "list", "--suite", "nope", "--history", db_s],
            &tmp,
        ),
        "no suite \"nope\"",
    );
    refused(
        &gatebench(&["history", "list", "--history", "mysql://x/y"], &tmp),
        "is not supported",
    );
    let out = gatebench(
        &[
            "history",
            "add",
            out_dir.to_str().unwrap(),
            "--version",
            "2",
            "--date",
            "soon",
        ],
        &tmp,
    );
    refused(&out, "not an RFC 3339 date");
    let _ = std::fs::remove_dir_all(&tmp);
}
