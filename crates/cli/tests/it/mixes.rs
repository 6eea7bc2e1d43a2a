//! `gatebench load --mix` and `--replay` as a user runs them: the real binary against a
//! scripted server that logs every request, and bad files refused in one line, exit status 2,
//! before any load.

use std::path::PathBuf;
use std::process::Command;

use gatebench_model::LoadReport;
use gatebench_testkit::{Behavior, TestServer};

use crate::support::{gatebench, stderr, temp_dir, BIN};

/// `name` with `text` in a fresh temporary directory.
fn file(name: &str, text: &str) -> PathBuf {
    let dir = temp_dir("mix");
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const LOG_LINE: &str =
    "192.0.2.7 - - [25/Nov/2026:16:00:00 +0000] \"GET /a HTTP/1.1\" 200 12 \"-\" \"curl/8.5\"\n";

#[test]
fn bad_mix_and_replay_files_exit_2_with_one_line_naming_file_and_line() {
    let empty = file("empty.toml", "# nothing yet\n");
    let zero = file(
        "zero.toml",
        "[[request]]\npath = \"/a\"\n\n[[request]]\npath = \"/b\"\nweight = 0\n",
    );
    let bad_json = file(
        "m.jsonl",
        "{\"path\":\"/a\"}\n{\"path\":\"/b\",\"wieght\":2}\n",
    );
    let log = file(
        "access.log",
        &format!("{LOG_LINE}{LOG_LINE}192.0.2.7 - - [25/Nov/2026:16:00:01 +0000] \"GET /b HTTP/1.1\" 200\n{LOG_LINE}"),
    );
    let common = file("common.log", LOG_LINE);
    let gor = file(
        "t.gor",
        "1 ab 1795622400000000000 0\nGET / HTTP/1.1\r\n\r\n",
    );
    let path = |p: &PathBuf| p.to_str().unwrap().to_owned();
    let url = "http://127.0.0.1:1/";
    for (args, want) in [
        (
            vec!["--mix".into(), path(&empty)],
            format!("{}: the mix has no requests", path(&empty)),
        ),
        (
            vec!["--mix".into(), path(&zero)],
            format!("{}:4: weight must be from 1 to 1000000, got 0", path(&zero)),
        ),
        (
            vec!["--mix".into(), path(&bad_json)],
            format!("{}:2: not a mix entry", path(&bad_json)),
        ),
        (
            vec!["--mix".into(), "/nonexistent/mix.toml".into()],
            "cannot read mix file /nonexistent/mix.toml".into(),
        ),
        (
            vec!["--replay".into(), path(&log)],
            format!(
                "{}:3: not a combined log line: no status and size",
                path(&log)
            ),
        ),
        (
            vec![
                "--replay".into(),
                path(&common),
                "--replay-format".into(),
                "common".into(),
            ],
            format!(
                "{}:1: not a common log line: more fields after the size",
                path(&common)
            ),
        ),
        (
            vec!["--replay".into(), path(&gor)],
            format!("{}:1: a goreplay payload without", path(&gor)),
        ),
        (
            vec!["--replay".into(), path(&log), "--speed".into(), "-2".into()],
            format!("{}:3:", path(&log)),
        ),
        (
            vec![
                "--replay".into(),
                path(&common),
                "--speed".into(),
                "0".into(),
            ],
            "--speed must be more than 0".into(),
        ),
        (
            vec![
                "--replay".into(),
                path(&common),
                "--speed".into(),
                "NaN".into(),
            ],
            "--speed must be more than 0".into(),
        ),
        (
            vec![
                "--replay".into(),
                path(&common),
                "--speed".into(),
                "-1".into(),
            ],
            "--speed must be more than 0".into(),
        ),
        (
            vec!["--replay".into(), path(&common), "-R".into(), "10".into()],
            "cannot be used with".into(),
        ),
        (
            vec!["--mix".into(), path(&zero), "--body".into(), "x".into()],
            "cannot be used with".into(),
        ),
    ] {
        let mut all = vec!["load".to_owned(), url.to_owned()];
        all.extend(args);
        let o = Command::new(BIN).args(&all).output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {err}");
        assert!(err.contains(&want), "{all:?}: expected `{want}` in {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{all:?}: one line, got {err}"
        );
        assert!(o.stdout.is_empty(), "{all:?}: nothing measured");
    }
}

#[test]
fn a_mix_from_the_command_line_reports_each_class() {
    let _shared = crate::support::shared();
    let server = TestServer::start(Behavior::Respond {
        status: 200,
        body: b"ok".to_vec(),
    });
    let mix = file(
        "mix.toml",
        "[[request]]\nname = \"list\"\npath = \"/items\"\nweight = 1\n\n[[request]]\nname = \"one\"\npath = \"/items/7\"\nweight = 3\n",
    );
    let o = gatebench(&[
        "load",
        &server.url(),
        "--mix",
        mix.to_str().unwrap(),
        "-n",
        "400",
        "-c",
        "2",
        "-t",
        "1",
        "--no-probe",
        "--json",
        "-",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let r: LoadReport = serde_json::from_slice(&o.stdout).expect("the record");
    let classes: Vec<(String, u64)> = r
        .classes
        .unwrap()
        .into_iter()
        .map(|c| (c.name, c.requests))
        .collect();
    assert_eq!(
        classes,
        vec![("list".to_owned(), 100), ("one".to_owned(), 300)]
    );
    let seen = server.requests_by_target();
    assert_eq!(
        (seen.get("/items"), seen.get("/items/7")),
        (Some(&100), Some(&300))
    );
    // The text report (on stderr with --json -) has the per-class table.
    assert!(err.contains("By request class"), "{err}");
    let row = err
        .lines()
        .find(|l| l.trim_start().starts_with("one "))
        .expect("a row");
    assert!(row.contains("300") && row.contains("75.0%"), "{row}");
}

#[test]
fn a_replay_from_the_command_line_sends_every_line() {
    let _shared = crate::support::shared();
    let server = TestServer::start(Behavior::Respond {
        status: 200,
        body: b"ok".to_vec(),
    });
    let mut log = String::new();
    for s in 0..3 {
        for p in ["/a", "/b?page=2", "/a"] {
            log.push_str(&format!(
                "192.0.2.7 - - [25/Nov/2026:16:00:0{s} +0000] \"GET {p} HTTP/1.1\" 200 12 \"-\" \"curl/8.5\"\n"
            ));
        }
    }
    let log = file("access.log", &log);
    let o = gatebench(&[
        "load",
        &server.url(),
        "--replay",
        log.to_str().unwrap(),
        "--speed",
        "10",
        "-c",
        "2",
        "--no-probe",
        "--json",
        "-",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let r: LoadReport = serde_json::from_slice(&o.stdout).expect("the record");
    assert_eq!(r.measurement.requests, 9);
    assert_eq!(r.config.duration_s, None, "runs to the end of the replay");
    let seen = server.requests_by_target();
    assert_eq!(
        (seen.get("/a"), seen.get("/b?page=2")),
        (Some(&6), Some(&3))
    );
    assert!(err.contains("replay of"), "{err}");
}

/// `--stream sse` against a target that answers plain text: one line, exit 2, before any load.
#[test]
fn a_stream_load_of_a_target_that_serves_no_event_stream_is_refused() {
    let _shared = crate::support::shared();
    let server = TestServer::start(Behavior::Respond {
        status: 200,
        body: b"plain".to_vec(),
    });
    let o = gatebench(&["load", &server.url(), "--stream", "sse", "-n", "10"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("is not an event stream"), "{err}");
    assert_eq!(
        err.trim()
            .lines()
            .filter(|l| l.starts_with("gatebench:"))
            .count(),
        1,
        "{err}"
    );
    // Only the probe's request reached the target.
    assert_eq!(server.requests_seen(), 1);
}
