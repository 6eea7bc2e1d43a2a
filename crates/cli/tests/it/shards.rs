//! Shards as a user runs them: `gatebench load --shard I/N --start-at T` processes against a
//! real echo backend on a free loopback port, their records merged by `gatebench merge`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use gatebench_model::{histogram, LoadReport, Outcome};

use crate::support::{gatebench, stderr, temp_dir, EchoChild, BIN};

fn read_record(p: &Path) -> LoadReport {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Two shards of `-c 3` start at one instant against one backend; `merge` gives one record:
/// every request of both, no error, the whole run's connections, and the percentiles of both
/// shards' histograms added.
#[test]
fn two_shards_started_at_one_instant_merge_into_one_run() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&[]);
    let dir = temp_dir("two");
    // Far enough ahead that both processes are up and probed on a loaded machine.
    let at = unix_now() + 4;
    let at_s = at.to_string();
    let files: Vec<PathBuf> = (0..2)
        .map(|i| dir.join(format!("shard-{i}.json")))
        .collect();
    let children: Vec<Child> = (0..2)
        .map(|i| {
            Command::new(BIN)
                .args(["load", &echo.url, "-c", "3", "-d", "1s", "--threads", "1"])
                .args(["--shard", &format!("{i}/2"), "--start-at", &at_s, "-q"])
                .arg("--json")
                .arg(&files[i])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn gatebench load --shard")
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "a shard failed: {}", stderr(&out));
        assert!(stderr(&out).contains("/2 of -c 3)"), "{}", stderr(&out));
    }
    let shards: Vec<LoadReport> = files.iter().map(|f| read_record(f)).collect();
    for (i, s) in shards.iter().enumerate() {
        let info = s.shard.as_ref().expect("a shard's record says so");
        assert_eq!((info.index, info.count), (i as u32, 2));
        assert_eq!(info.start_at_unix_ms, Some(at * 1000));
        // It waited for the agreed instant, and did not sleep past it by a whole coarse
        // sleep (the bound leaves room for a loaded machine's scheduler).
        assert!(
            s.started_at_unix_ms >= at * 1000,
            "{}",
            s.started_at_unix_ms
        );
        let late_us = s.started_at_unix_us as i64 - (at * 1_000_000) as i64;
        assert!(
            (0..500_000).contains(&late_us),
            "{late_us} µs after the instant"
        );
        assert!(s.measurement.requests > 0);
    }
    // -c 3 over two shards: the remainder goes to the lowest index.
    assert_eq!(shards[0].config.connections, 2);
    assert_eq!(shards[1].config.connections, 1);

    let out = Command::new(BIN)
        .arg("merge")
        .args(&files)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("Merged 2 shards"), "{}", stderr(&out));
    let merged: LoadReport = serde_json::from_slice(&out.stdout).expect("merge prints a record");
    let m = &merged.measurement;
    assert_eq!(
        m.requests,
        shards[0].measurement.requests + shards[1].measurement.requests
    );
    assert_eq!(m.outcomes.errors(), 0, "{:?}", m.outcomes);
    assert_eq!(
        m.outcomes.get(Outcome::Ok),
        shards
            .iter()
            .map(|s| s.measurement.outcomes.get(Outcome::Ok))
            .sum::<u64>()
    );
    assert_eq!(merged.config.connections, 3);
    assert!(merged.shard.is_none());
    let info = merged.merged.as_ref().unwrap();
    assert_eq!(info.shards.len(), 2);
    assert!(info.start_skew_ms < 1000.0, "{}", info.start_skew_ms);
    // Exactly the percentiles of both shards' values in one histogram: the answered ones and,
    // on a loaded machine, the censored ones (requests cut off at the end) too.
    let mut both = histogram::new_histogram();
    let mut censored = histogram::new_histogram();
    for s in &shards {
        let hs = s.measurement.histograms.as_ref().unwrap();
        histogram::add(&mut both, &histogram::decode(&hs.answered).unwrap());
        if let Some(c) = &hs.censored {
            histogram::add(&mut censored, &histogram::decode(c).unwrap());
        }
    }
    let one = histogram::summarize_censored(&both, &censored);
    for p in [50.0, 99.0, 99.9] {
        assert_eq!(m.latency.at(p), one.at(p), "p{p}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_shard_arguments_exit_2_with_one_line() {
    let dir = temp_dir("bad");
    for (args, want) in [
        (
            vec!["load", "http://127.0.0.1:1/", "-c", "2", "--shard", "2/3"],
            "leaves shard 2 without a connection",
        ),
        (
            vec!["load", "http://127.0.0.1:1/", "--shard", "2/2"],
            "shard indices count from 0",
        ),
        (
            vec![
                "load",
                "http://127.0.0.1:1/",
                "--start-at",
                "2020-01-01T00:00:00Z",
            ],
            "in the past",
        ),
        (vec!["merge", "/nonexistent/shard-0.json"], "reading"),
    ] {
        let out = gatebench(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// `merge` names the shard that is missing.
#[test]
fn merge_names_a_missing_shard() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&[]);
    let dir = temp_dir("missing");
    let f = dir.join("shard-0.json");
    let out = Command::new(BIN)
        .args([
            "load",
            &echo.url,
            "-c",
            "3",
            "-d",
            "200ms",
            "--threads",
            "1",
        ])
        .args(["--shard", "0/3", "-q", "--json"])
        .arg(&f)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = Command::new(BIN).arg("merge").arg(&f).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("shards 1/3, 2/3 missing: every shard's record is needed"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `--live-seconds`: a shard streams each finished second on stdout before its record, and
/// what it streamed is its record's timeline, second for second, histograms included, with
/// every request's outcome: a coordinator merging the streams loses nothing.
#[test]
fn a_shard_streams_its_seconds_losslessly_before_its_record() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&[]);
    let out = Command::new(BIN)
        .args([
            "load",
            &echo.url,
            "-c",
            "2",
            "-d",
            "2s",
            "--warmup",
            "1s",
            "--threads",
            "1",
        ])
        .args(["--shard", "0/1", "--live-seconds", "--json", "-", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let prefix = gatebench_model::load::LIVE_SECOND_PREFIX;
    let (streamed, record): (Vec<&str>, Vec<&str>) =
        stdout.lines().partition(|l| l.starts_with(prefix));
    let seconds: Vec<gatebench_model::LiveSecond> = streamed
        .iter()
        .map(|l| serde_json::from_str(&l[prefix.len()..]).unwrap())
        .collect();
    let record: LoadReport = serde_json::from_str(&record.join("\n")).unwrap();
    let timeline = record.timeline.as_ref().expect("a shard keeps its seconds");
    // Three seconds (one of warm-up, two measured), the last maybe a part of one.
    assert!((3..=4).contains(&seconds.len()), "{}", seconds.len());
    assert_eq!(
        seconds.iter().map(|s| s.second.clone()).collect::<Vec<_>>(),
        *timeline
    );
    // Every outcome of both phases is in exactly one streamed second.
    let mut outcomes = gatebench_model::OutcomeCounts::default();
    seconds.iter().for_each(|s| outcomes.merge(&s.outcomes));
    let mut both = record.measurement.outcomes;
    both.merge(&record.warmup.as_ref().unwrap().outcomes);
    assert_eq!(outcomes, both);
    assert!(outcomes.get(Outcome::Ok) > 0);
}
