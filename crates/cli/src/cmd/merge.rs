//! `gatebench merge RECORD…`: the JSON records of a run's shards (`gatebench load --shard I/N
//! --json`) merged into one record, printed on stdout; the merged text report goes to stderr.
//!
//! A record may be a file holding just the record, or a log that holds it among other lines
//! (what `kubectl logs` returns for a pod that printed its text report and its record): the
//! record starts at a line that is a lone `{`, as `--json` prints it. One file may hold several
//! records (logs of several pods, concatenated). The merge itself is
//! `gatebench_model::merge::merge`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use gatebench_model::LoadReport;

/// `gatebench merge RECORD…`.
#[derive(Debug, Args)]
#[command(
    after_help = "Each RECORD is a file written by `gatebench load --shard I/N --json FILE`, \
or a log holding such a record (e.g. `kubectl logs` of a pod; `-` reads stdin). Every shard of the \
run must be there, once. Histograms are added exactly (the merged p99 is the p99 of every \
shard's values), counts and bytes summed, rates taken over the union of the shards' windows; a \
generator-bound shard makes the merged record invalid.\n\nExample:\n  gatebench merge shard-0.json \
shard-1.json > merged.json\n\nExit status: 0 merged, 2 the records are not every shard of one run, \
or another error."
)]
pub struct MergeArgs {
    /// Shard records (files or logs; `-` for stdin).
    #[arg(required = true, value_name = "RECORD")]
    pub records: Vec<PathBuf>,
}

/// Runs the subcommand.
pub fn run(args: MergeArgs) -> Result<ExitCode> {
    let mut records = Vec::new();
    for path in &args.records {
        let text = read(path)?;
        let found = records_in(&text).with_context(|| format!("reading {}", path.display()))?;
        if found.is_empty() {
            anyhow::bail!(
                "{}: no gatebench record in it (write one with `gatebench load --json`)",
                path.display()
            );
        }
        records.extend(found);
    }
    let merged = gatebench_model::merge::merge(&records)?;
    eprint!("{}", gatebench_report::load_text::render(&merged));
    let info = merged.merged.as_ref().expect("a merge says what it merged");
    eprintln!(
        "Merged {} shards; start skew {:.0} ms{}",
        info.count,
        info.start_skew_ms,
        if merged.valid {
            ""
        } else {
            " (a shard was generator-bound: see the warnings)"
        }
    );
    println!(
        "{}",
        serde_json::to_string_pretty(&merged).context("encoding the merged record")?
    );
    Ok(ExitCode::SUCCESS)
}

fn read(path: &Path) -> Result<String> {
    if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading stdin")?;
        Ok(s)
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    }
}

/// The records in `text`: the whole text when it is one JSON record, else every record that
/// starts at a line holding a lone `{` (a log with other lines around its records).
pub fn records_in(text: &str) -> Result<Vec<LoadReport>> {
    if let Ok(r) = serde_json::from_str::<LoadReport>(text) {
        return Ok(vec![r]);
    }
    let mut out = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        if line.trim_end() != "{" || start < out_end(&out) {
            continue;
        }
        let mut stream =
            serde_json::Deserializer::from_str(&text[start..]).into_iter::<LoadReport>();
        let record = stream
            .next()
            .expect("text from a `{` line holds a value")
            .with_context(|| {
                let line_no = text[..start].lines().count() + 1;
                format!("the record at line {line_no} does not read")
            })?;
        out.push((record, start + stream.byte_offset()));
    }
    Ok(out.into_iter().map(|(r, _)| r).collect())
}

/// Where the last record found ends (nested `{` lines inside it are not records).
fn out_end(found: &[(LoadReport, usize)]) -> usize {
    found.last().map_or(0, |(_, end)| *end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(users: u32) -> LoadReport {
        let phase = serde_json::from_value(serde_json::json!({
            "duration_s": 1.0, "outcomes": {}, "requests": 0, "throughput_rps": 0.0,
            "ok_rps": 0.0, "error_percent": 0.0, "target_rps": null, "sent_rps": 0.0,
            "bytes_read": 0, "bytes_written": 0,
            "latency": {"count": 0, "min_ms": 0.0, "mean_ms": 0.0, "stdev_ms": 0.0,
                        "max_ms": 0.0, "percentiles": [{"p": 50.0, "ms": 0.0}]},
            "latency_uncorrected": null, "concurrency": 0.0, "connections": {
                "opened": 0, "reconnects": 0, "connect_failures": 0,
                "requests_per_connection": 0.0, "tls_full_handshakes": 0,
                "tls_resumed_handshakes": 0, "connect_time": null,
                "tls_handshake_time": null, "max_streams_in_use": null}
        }))
        .expect("a phase");
        gatebench_testkit::records::load_report(users, 0, None, phase, true)
    }

    #[test]
    fn records_are_found_in_logs_around_other_lines() {
        let a = serde_json::to_string_pretty(&record(1)).unwrap();
        let b = serde_json::to_string_pretty(&record(2)).unwrap();
        assert_eq!(records_in(&a).unwrap(), [record(1)]);
        let log =
            format!("Running 1s @ http://x/ (closed model)\n  p50=1ms\n{a}\nwarning: x\n{b}\n");
        let found = records_in(&log).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[1].config.connections, 2);
        assert!(records_in("no record here\n").unwrap().is_empty());
        let broken = format!("text\n{}\n", &a[..a.len() / 2]);
        assert!(records_in(&broken).is_err());
    }
}
