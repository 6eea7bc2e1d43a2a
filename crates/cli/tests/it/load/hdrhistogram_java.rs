//! The interval log (`--hlog`) read by HdrHistogram's own Java `HistogramLogProcessor`, the
//! jar from Maven Central (`scripts/hdrhistogram-jar.sh` fetches it once per machine), gives
//! the figures of the JSON record (`--json`) of the same run: without a warm-up, the request
//! count, p50 … p99.99 and the max of the whole log are those of `measurement.latency` (and,
//! in the open model, the lines tagged `uncorrected` those of `latency_uncorrected`). With a
//! warm-up, the whole log holds warm-up plus measurement, and `-start W` cuts it at the right
//! second (not exactly at the JSON's phase boundary: see the test).
//!
//! Both outputs come from one set of histograms, so they agree to HdrHistogram's precision
//! whatever those histograms hold; the test compares the two outputs, never fixed numbers.
//!
//! Without `java` or the jar the test prints why and passes, except under CI (`CI` set to
//! anything but `false`/`0`), where it fails: a CI machine must run this check.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::support::{gatebench, stderr, EchoChild};

const PROCESSOR: &str = "org.HdrHistogram.HistogramLogProcessor";

/// HdrHistogram's log processor, ready to run.
struct Processor {
    jar: String,
}

/// The processor's cumulative figures, in the unit of `-outputValueUnitRatio`.
#[derive(Debug)]
struct Totals {
    count: u64,
    /// p50, p90, p99, p99.9, p99.99, max.
    values: [f64; 6],
}

/// The percentiles of [`Totals::values`] before the max, as the processor's CSV names them.
const TOTAL_PERCENTILES: [f64; 5] = [50.0, 90.0, 99.0, 99.9, 99.99];

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

impl Processor {
    /// The processor, or `None` (after saying so on stderr) when Java or the jar is missing
    /// outside CI. Under CI a missing tool is a failure.
    fn find() -> Option<&'static Processor> {
        // Looked for once per test binary: the tests run in parallel, and the first look may
        // download the jar.
        static FOUND: OnceLock<Result<Processor, String>> = OnceLock::new();
        let why = match FOUND.get_or_init(Self::locate) {
            Ok(p) => return Some(p),
            Err(why) => why,
        };
        let msg = format!(
            "HdrHistogram's HistogramLogProcessor is not available ({why}), so the interval log \
             was NOT checked against HdrHistogram's own reader"
        );
        if in_ci() {
            panic!("{msg}. CI must run this check: install Java 17 and Maven (.ci/run fetches the jar).");
        }
        eprintln!(
            "\n*** SKIPPED: {msg}. Run scripts/hdrhistogram-jar.sh as root once (it installs java and Maven) to run it (with CI=true it fails). ***\n"
        );
        None
    }

    fn locate() -> Result<Processor, String> {
        match Command::new("java").arg("-version").output() {
            Ok(o) if o.status.success() => {}
            Ok(o) => return Err(format!("`java -version` exited with {}", o.status)),
            Err(e) => return Err(format!("cannot run java: {e}")),
        }
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/hdrhistogram-jar.sh");
        let o = Command::new("bash")
            .arg(&script)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        if !o.status.success() {
            return Err(format!(
                "scripts/hdrhistogram-jar.sh failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
        let jar = String::from_utf8_lossy(&o.stdout).trim().to_owned();
        if !Path::new(&jar).is_file() {
            return Err(format!(
                "scripts/hdrhistogram-jar.sh printed `{jar}`, not a file"
            ));
        }
        Ok(Processor { jar })
    }

    /// Runs the processor on `hlog` with `args`; returns its stdout.
    fn run(&self, hlog: &Path, args: &[&str]) -> String {
        let o = Command::new("java")
            .args(["-cp", &self.jar, PROCESSOR, "-i"])
            .arg(hlog)
            .args(args)
            .output()
            .expect("run java");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            o.status.success(),
            "{PROCESSOR} {args:?}: {}\n{err}",
            o.status
        );
        // Anything on stderr is a complaint (an output file it could not open, a line it could
        // not parse), apart from the JVM's note about JAVA_TOOL_OPTIONS.
        let complaints: Vec<&str> = err
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with("Picked up "))
            .collect();
        assert!(
            complaints.is_empty(),
            "{PROCESSOR} {args:?} complained: {err}"
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The cumulative figures over the selected intervals, in nanoseconds: the last line of
    /// the processor's interval CSV (`-csv -o FILE`, whose `Total_*` columns accumulate).
    fn totals(&self, hlog: &Path, args: &[&str]) -> Totals {
        let out = hlog.with_extension(format!("processor-{}", args.join("_")));
        let mut all = vec!["-csv", "-outputValueUnitRatio", "1", "-o"];
        all.push(out.to_str().unwrap());
        all.extend_from_slice(args);
        self.run(hlog, &all);
        let csv = std::fs::read_to_string(&out).expect("the processor's -o file");
        let legend = "\"Timestamp\",\"Int_Count\",\"Int_50%\",\"Int_90%\",\"Int_Max\",\
                      \"Total_Count\",\"Total_50%\",\"Total_90%\",\"Total_99%\",\"Total_99.9%\",\
                      \"Total_99.99%\",\"Total_Max\"";
        assert!(csv.lines().any(|l| l == legend), "{args:?}: legend\n{csv}");
        let last = csv
            .lines()
            .rfind(|l| !l.starts_with('#') && !l.starts_with('"'))
            .unwrap_or_else(|| panic!("{args:?}: no interval read from the log\n{csv}"));
        let f: Vec<&str> = last.split(',').collect();
        assert_eq!(f.len(), 12, "{last}");
        let num = |s: &str| -> f64 { s.parse().unwrap_or_else(|_| panic!("`{s}` in {last}")) };
        Totals {
            count: f[5].parse().unwrap_or_else(|_| panic!("count in {last}")),
            values: std::array::from_fn(|i| num(f[6 + i])),
        }
    }
}

/// The figures a JSON latency summary gives for the processor's [`Totals`], in nanoseconds.
fn json_totals(summary: &serde_json::Value) -> Totals {
    let ms = |v: &serde_json::Value| v.as_f64().unwrap_or_else(|| panic!("a number: {v}"));
    let at = |p: f64| {
        let point = summary["percentiles"]
            .as_array()
            .expect("percentiles")
            .iter()
            .find(|x| (ms(&x["p"]) - p).abs() < 1e-9)
            .unwrap_or_else(|| panic!("p{p} in {summary}"));
        ms(&point["ms"]) * 1e6
    };
    let mut values = [0.0; 6];
    for (v, p) in values.iter_mut().zip(TOTAL_PERCENTILES) {
        *v = at(p);
    }
    values[5] = ms(&summary["max_ms"]) * 1e6;
    Totals {
        count: summary["count"].as_u64().expect("count"),
        values,
    }
}

/// Same count; each value the same to HdrHistogram's three significant digits (both read the
/// value of one bucket; one part in a thousand covers how each library rounds a percentile to
/// a count) and at least a few values.
fn assert_agree(what: &str, java: &Totals, json: &Totals) {
    assert!(
        json.count >= 100,
        "{what}: too few responses to compare: {json:?}"
    );
    assert_eq!(
        java.count, json.count,
        "{what}: count\njava {java:?}\njson {json:?}"
    );
    let names = ["p50", "p90", "p99", "p99.9", "p99.99", "max"];
    for ((name, j), g) in names.iter().zip(java.values).zip(json.values) {
        assert!(g > 0.0, "{what}: {name} is {g}");
        assert!(
            (j - g).abs() <= j.max(g) * 1e-3 + 1.0,
            "{what}: {name}: HistogramLogProcessor {j} ns, gatebench JSON {g} ns\n\
             java {java:?}\njson {json:?}"
        );
    }
}

/// Runs `gatebench load` on a fresh echo with `args`, writing the JSON record and the interval
/// log into a fresh directory; returns (record, hlog path, directory).
fn load(name: &str, args: &[&str]) -> (serde_json::Value, PathBuf, PathBuf) {
    let _shared = super::support::shared();
    let echo = EchoChild::start(&[]);
    let dir = std::env::temp_dir().join(format!("gatebench-hdr-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let hlog = dir.join("latency.hlog");
    let json = dir.join("run.json");
    let mut all = vec!["load", &echo.url, "-q", "--json"];
    all.push(json.to_str().unwrap());
    all.extend_from_slice(&["--hlog", hlog.to_str().unwrap()]);
    all.extend_from_slice(args);
    let o = gatebench(&all);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let record = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (record, hlog, dir)
}

#[test]
fn closed_model_log_gives_the_json_figures_to_hdrhistograms_java_reader() {
    let Some(java) = Processor::find() else {
        return;
    };
    // No warm-up: every interval of the log is the measurement.
    let (record, hlog, dir) = load("closed", &["-c", "2", "-t", "2", "-d", "2s"]);
    assert_eq!(record["config"]["model"], "closed");
    assert!(
        record["warmup"].is_null(),
        "no warm-up: {}",
        record["warmup"]
    );
    let measured = json_totals(&record["measurement"]["latency"]);
    assert_agree("measurement", &java.totals(&hlog, &[]), &measured);

    // The command the README gives a user prints milliseconds: the distribution and a footer
    // `#[Max = …, Total count = …]`.
    let text = java.run(&hlog, &[]);
    let footer = text
        .lines()
        .find(|l| l.starts_with("#[Max"))
        .unwrap_or_else(|| panic!("a `#[Max = …, Total count = …]` footer:\n{text}"));
    let nums: Vec<f64> = footer
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|s| s.parse().ok())
        .collect();
    assert_eq!(nums.len(), 2, "{footer}");
    assert_eq!(nums[1] as u64, measured.count, "{footer}");
    let max_ms = measured.values[5] / 1e6;
    assert!(
        (nums[0] - max_ms).abs() <= 0.0005 + max_ms * 1e-3,
        "{footer} vs the JSON's max {max_ms} ms"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn open_model_log_gives_both_json_spectra_to_hdrhistograms_java_reader() {
    let Some(java) = Processor::find() else {
        return;
    };
    let (record, hlog, dir) = load("open", &["-c", "2", "-t", "2", "-R", "300", "-d", "2s"]);
    assert_eq!(record["config"]["model"], "open");
    assert!(
        record["warmup"].is_null(),
        "no warm-up: {}",
        record["warmup"]
    );
    let corrected = json_totals(&record["measurement"]["latency"]);
    assert_agree("corrected", &java.totals(&hlog, &[]), &corrected);
    let uncorrected = json_totals(&record["measurement"]["latency_uncorrected"]);
    let java_uncorrected = java.totals(&hlog, &["-tag", "uncorrected"]);
    assert_agree("uncorrected", &java_uncorrected, &uncorrected);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An arrival program's log carries `#[TargetRate: …]` comment lines before its intervals:
/// Java's reader still reads every interval (its totals match the JSON's).
#[test]
fn program_log_with_target_rates_reads_in_java() {
    let Some(java) = Processor::find() else {
        return;
    };
    let (record, hlog, dir) = load("program", &["-c", "2", "-t", "2", "-R", "steps:200,400/1s"]);
    let text = std::fs::read_to_string(&hlog).unwrap();
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("#[TargetRate: "))
            .count(),
        record["timeline"].as_array().unwrap().len(),
        "{text}"
    );
    let corrected = json_totals(&record["measurement"]["latency"]);
    assert_agree("corrected", &java.totals(&hlog, &[]), &corrected);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn warm_up_is_in_the_log_and_start_skips_it() {
    let Some(java) = Processor::find() else {
        return;
    };
    let (record, hlog, dir) = load(
        "warmup",
        &["-c", "2", "-t", "2", "--warmup", "1s", "-d", "2s"],
    );
    let warmup = json_totals(&record["warmup"]["latency"]).count;
    let measured = json_totals(&record["measurement"]["latency"]).count;
    // The whole log is the warm-up and the measurement: nothing lost, nothing twice.
    let all = java.totals(&hlog, &[]).count;
    assert_eq!(
        all,
        warmup + measured,
        "whole log vs warm-up {warmup} + measurement {measured}"
    );
    // `-start W` (W the warm-up in seconds) keeps the intervals from the end of the warm-up.
    // The JSON puts a request in the phase of its send and the log in the second its answer
    // was recorded in, so the answers in flight across the boundary may fall on either side:
    // the cut must be at the right second (off by far less than one second's answers), not
    // exact.
    let warm_s = record["config"]["warmup_s"].as_f64().expect("warmup_s");
    let duration_s = record["config"]["duration_s"].as_f64().expect("duration_s");
    let from_start = java.totals(&hlog, &["-start", &format!("{warm_s}")]).count;
    let per_second = measured as f64 / duration_s;
    assert!(
        (from_start as f64 - measured as f64).abs() < per_second / 4.0,
        "-start {warm_s}: {from_start} answers, the JSON's measurement {measured} \
         ({per_second:.0}/s)"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
