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
    // A repeat the generator itself limited is stored, but its figures stay out of the series
    // and the export: on a loaded machine one of these two can be.
    let valid_repeats = (1..=2)
        .filter(|r| {
            let rec = out_dir.join(format!("cells/backend-alone_u2_s50_d0_r{r}/record.json"));
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(rec).unwrap()).unwrap();
            v["load"]["valid"] == true
        })
        .count();

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
    // Two versions × one cell × its valid repeats (two, unless the generator was the limit).
    assert_eq!(p99.len(), 2 * valid_repeats);
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

// ---- The analyses: `history changes`, `history gate`, `history report`, on synthetic
// series (gatebench_history::synthetic) whose truth is known.

use gatebench_history::synthetic::{self, RunSpec};

/// Writes a results directory per `(version, spec)` under `tmp` and adds each to `db`, in
/// order (each a day after the one before).
fn make_history(tmp: &Path, db: &str, versions: &[(&str, RunSpec)]) {
    for (i, (version, spec)) in versions.iter().enumerate() {
        let dir = tmp.join(format!("runs/{version}"));
        let spec = RunSpec {
            started_at_unix_ms: 1_795_622_400_000 + i as u64 * 86_400_000,
            seed: 1000 + i as u64,
            ..spec.clone()
        };
        synthetic::write_run(&dir, &spec).unwrap();
        let out = gatebench(
            &[
                "history",
                "add",
                dir.to_str().unwrap(),
                "--version",
                version,
                "--history",
                db,
            ],
            tmp,
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
}

/// `n` versions `1.0.0` … of the default synthetic run, throughput × `factor` from index `at`.
fn shifted_series(n: usize, at: usize, factor: f64) -> Vec<(String, RunSpec)> {
    (0..n)
        .map(|i| {
            (
                format!("1.{i}.0"),
                RunSpec {
                    gates: vec!["p99 < 50ms".into()],
                    throughput_factor: if i >= at { factor } else { 1.0 },
                    ..RunSpec::default()
                },
            )
        })
        .collect()
}

fn as_refs(v: &[(String, RunSpec)]) -> Vec<(&str, RunSpec)> {
    v.iter().map(|(n, s)| (n.as_str(), s.clone())).collect()
}

#[test]
fn changes_finds_a_known_shift_at_its_version() {
    let tmp = temp_dir("history-changes");
    let db = tmp.join("h.sqlite");
    let db_s = db.to_str().unwrap();
    // No history yet: refused, and nothing created.
    refused(
        &gatebench(&["history", "changes", "--history", db_s], &tmp),
        "no history at",
    );
    assert!(!db.exists());
    // Twelve versions, throughput 10 % lower from 1.7.0 on, repeats varying by 2 %.
    make_history(&tmp, db_s, &as_refs(&shifted_series(12, 7, 0.90)));
    let out = gatebench(
        &[
            "history",
            "changes",
            "--metric",
            "throughput",
            "--json",
            "-",
            "--history",
            db_s,
        ],
        &tmp,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["series"], 2, "{v}");
    let changes = v["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 2, "one per cell, nothing else: {v}");
    for c in changes {
        assert_eq!(c["version"], "1.7.0", "{c}");
        assert_eq!(c["metric"], "throughput");
        assert_eq!(c["regression"], true);
        let pct = c["shift_pct"].as_f64().unwrap();
        assert!((-12.0..-8.0).contains(&pct), "{c}");
        let (lo, hi) = (
            c["shift_pct_interval"][0].as_f64().unwrap(),
            c["shift_pct_interval"][1].as_f64().unwrap(),
        );
        assert!(lo <= pct && pct <= hi && hi < 0.0, "{c}");
        assert!(c["p_value"].as_f64().unwrap() <= 0.01);
    }
    // The table, every metric; the latency did not move, so only throughput (and nothing at
    // another version) is listed.
    let out = gatebench(&["history", "changes", "--history", db_s], &tmp);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("| proxy_u10_s50_d0 | throughput | 1.7.0 | ")
            && stdout.contains("| proxy_u100_s50_d0 | throughput | 1.7.0 | "),
        "{stdout}"
    );
    assert!(stdout.contains("| regression |"), "{stdout}");
    assert!(
        stdout.contains("2 change point(s) in 14 series of synthetic: 2 regression(s)"),
        "{stdout}"
    );
    // --cell narrows to one cell.
    let out = gatebench(
        &[
            "history",
            "changes",
            "--cell",
            "*_u100_*",
            "--metric",
            "throughput,p99",
            "--history",
            db_s,
        ],
        &tmp,
    );
    let stdout = text(&out.stdout);
    assert!(stdout.contains("1 change point(s) in 2 series"), "{stdout}");
    // A series without a shift: nothing found.
    let out = gatebench(
        &["history", "changes", "--metric", "p50", "--history", db_s],
        &tmp,
    );
    assert!(
        text(&out.stdout).starts_with("No change point in 2 series of synthetic"),
        "{}",
        text(&out.stdout)
    );
    // Bad input: one line, exit 2.
    refused(
        &gatebench(
            &[
                "history",
                "changes",
                "--metric",
                "latency",
                "--history",
                db_s,
            ],
            &tmp,
        ),
        "`latency` is not a metric",
    );
    refused(
        &gatebench(
            &["history", "changes", "--suite", "nope", "--history", db_s],
            &tmp,
        ),
        "no suite \"nope\"",
    );
    refused(
        &gatebench(
            &["history", "changes", "--alpha", "2", "--history", db_s],
            &tmp,
        ),
        "--alpha must be between 0 and 1",
    );
    refused(
        &gatebench(
            &["history", "changes", "--cell", "zzz*", "--history", db_s],
            &tmp,
        ),
        "no cell of synthetic matches",
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn gate_exit_codes_and_the_other_machine_refusal() {
    let tmp = temp_dir("history-gate");
    let db = tmp.join("h.sqlite");
    let db_s = db.to_str().unwrap();
    let base = RunSpec {
        gates: vec!["p99 < 50ms".into()],
        ..RunSpec::default()
    };
    make_history(
        &tmp,
        db_s,
        &[
            ("1.0", base.clone()),
            ("1.1", base.clone()),
            (
                "1.2",
                RunSpec {
                    throughput_factor: 0.85,
                    ..base.clone()
                },
            ),
            (
                "1.3",
                RunSpec {
                    noise: 0.25,
                    ..base.clone()
                },
            ),
            (
                "1.4",
                RunSpec {
                    repeats: 2,
                    ..base.clone()
                },
            ),
            (
                "1.5",
                RunSpec {
                    cpu_model: "Another CPU @ 3.1GHz".into(),
                    ..base.clone()
                },
            ),
        ],
    );
    let gate = |version: &str, extra: &[&str]| {
        let mut args = vec!["history", "gate", "--version", version, "--history", db_s];
        args.extend_from_slice(extra);
        gatebench(&args, &tmp)
    };
    let relative = ["--gate", "throughput >= -5% vs 1.0"];

    // Pass: the suite's own gate and the relative one.
    let out = gate("1.1", &relative);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("`p99 < 50ms`, `throughput >= -5% vs 1.0`"),
        "{stdout}"
    );
    assert!(stdout.contains("Verdict: pass (exit 0)"), "{stdout}");
    // Fail: 15 % less throughput, significant; JUnit as compare writes it.
    let junit = tmp.join("gate.xml");
    let out = gate(
        "1.2",
        &[relative[0], relative[1], "--junit", junit.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("| fail |"));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.starts_with("<?xml"), "{xml}");
    assert!(xml.contains("<failure type=\"gate\""), "{xml}");
    assert_eq!(
        xml.matches("<testcase ").count(),
        4,
        "2 cells × 2 gates: {xml}"
    );
    // Unstable: repeats spread by 25 %.
    let out = gate("1.3", &["--gate", "cv(throughput) <= 3%"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("Verdict: unstable (exit 3)"));
    // Cannot judge: two repeats cannot be significant against five.
    let out = gate("1.4", &[relative[0], relative[1], "--junit", "-"]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("type=\"cannot-judge\""));
    assert!(text(&out.stderr).contains("too few repeats"));
    // Bad input.
    refused(
        &gate("1.1", &["--gate", "p99 < 50%"]),
        "bad gate `p99 < 50%`",
    );
    refused(
        &gate("9.9", &relative),
        "version 9.9 is not in the history of suite \"synthetic\"",
    );
    // Another machine: a relative gate refuses, naming what differs…
    let out = gate("1.5", &relative);
    refused(
        &out,
        "ran on another machine (cpu_model: \"Synthetic CPU @ 2.0GHz\" vs \"Another CPU @ 3.1GHz\"",
    );
    assert!(text(&out.stderr).contains("--allow-other-machine"));
    // …an absolute one does not need the baseline…
    assert_eq!(gate("1.5", &[]).status.code(), Some(0));
    // …and --allow-other-machine judges it, flagged.
    let out = gate("1.5", &[relative[0], relative[1], "--allow-other-machine"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("warning: version 1.5 ran on another machine"));
    assert!(text(&out.stdout).contains("Flagged: the baseline 1.0 ran on another machine"));
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn report_writes_the_site_with_every_chart_drawn() {
    let tmp = temp_dir("history-report");
    let db = tmp.join("h.sqlite");
    let db_s = db.to_str().unwrap();
    let mut versions = shifted_series(8, 5, 0.90);
    for (_, s) in &mut versions {
        s.gates = vec!["p99 < 50ms".into(), "throughput >= -5% vs 1.0.0".into()];
    }
    make_history(&tmp, db_s, &as_refs(&versions));
    let site = tmp.join("site");
    let out = gatebench(
        &[
            "history",
            "report",
            "--out",
            site.to_str().unwrap(),
            "--history",
            db_s,
        ],
        &tmp,
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("Trend site: 10 pages (1 suite(s), 8 releases"),
        "{stdout}"
    );
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert_eq!(index.matches("href=\"synthetic/release-").count(), 8);
    let scenario = std::fs::read_to_string(site.join("synthetic/proxy.html")).unwrap();
    // Two cells × throughput, p99, SUT CPU per request, SUT memory; every chart has a point
    // per version.
    assert_eq!(scenario.matches("<svg ").count(), 8, "{scenario}");
    assert_eq!(scenario.matches("data-points=\"8\"").count(), 8);
    assert!(!scenario.contains("data-points=\"0\""));
    assert!(
        scenario.contains("<td>throughput</td><td>1.5.0</td>"),
        "{scenario}"
    );
    let release = std::fs::read_to_string(site.join("synthetic/release-1.5.0.html")).unwrap();
    assert!(release.contains("<td>Passthrough proxy proxy</td><td class=\"n\">100</td>"));
    assert!(
        release.contains("badge fail"),
        "the drop fails the relative gate"
    );
    let first = std::fs::read_to_string(site.join("synthetic/release-1.1.0.html")).unwrap();
    assert!(first.contains("badge pass"), "{first}");
    refused(
        &gatebench(
            &[
                "history",
                "report",
                "--out",
                site.to_str().unwrap(),
                "--suite",
                "x",
                "--history",
                db_s,
            ],
            &tmp,
        ),
        "no suite \"x\"",
    );
    let _ = std::fs::remove_dir_all(&tmp);
}
