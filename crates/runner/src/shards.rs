//! A cell's load split across generator hosts: one `gatebench load --shard I/N --start-at T`
//! per host over ssh, their JSON records merged exactly (`gatebench_model::merge`: histograms
//! added, counts summed, never an average of percentiles).
//!
//! Every shard is told the same real instant to start, on its own clock: the runner's clock
//! plus that host's measured offset ([`crate::hosts::HostReport`]), so shards start together
//! even when the hosts' clocks disagree; what is left shows as the merged record's start skew.
//! A shard that fails (its ssh session ends with another status than 0) fails the cell with
//! the last line it printed on stderr, and every other shard is stopped by its PID on its
//! host; Ctrl-C does the same. Each shard's stderr (its text report, or its error) is kept as
//! `generator-<I>.log` in the cell's directory.
//!
//! A sharded cell has no live per-second view. Its `timeline.csv` and `latency.hlog` are
//! written after the load ([`seconds`]), from the merged record's seconds: each shard's record
//! carries its per-second counts and latency histograms, and the merge added them second by
//! second, so each second's p99 is exact.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gatebench_model::{histogram, LoadReport};
use gatebench_results::rows::TimelineRow;

use crate::error::RunnerError;
use crate::hosts::{spawn_with_lines, unix_now, RemoteProcess, SshHost};
use crate::launch::Running;

/// How far ahead the shards' common start is set: time for every ssh session to open and
/// every shard's correctness probe to pass.
pub const START_LEAD: Duration = Duration::from_secs(4);

/// The merged record of a sharded load, and when (Unix seconds, this machine's clock) it was
/// set to start.
#[derive(Debug)]
pub struct ShardedLoad {
    /// The merged record.
    pub report: LoadReport,
    /// The start instant given to the shards, on this machine's clock.
    pub start_unix_s: f64,
}

struct Shard {
    process: RemoteProcess,
    lines: Receiver<String>,
    stdout: String,
    status: Option<i32>,
}

/// Runs `gatebench load ARGS` as one shard on every host of `generators`, waits for all, and
/// merges their records. `deadline` bounds the whole load (warm-up, measurement, timeouts).
///
/// `headers` (the suite's request headers, credentials among them) are written to a file on
/// each host that only its owner can read, passed as `--header-file`, and removed when the
/// load ends however it ends: a header value never appears on a command line, where any user
/// of either machine could read it.
pub fn run(
    generators: &[Arc<SshHost>],
    args: &[String],
    headers: &[String],
    deadline: Duration,
    cell_dir: &Path,
    stop: &AtomicBool,
) -> Result<ShardedLoad, RunnerError> {
    let n = generators.len();
    let start_unix_s = unix_now() + START_LEAD.as_secs_f64();
    let mut header_files = HeaderFiles(Vec::new());
    if !headers.is_empty() {
        let mut text = headers.join("\n");
        text.push('\n');
        let name = format!(
            "headers-{}-{}.txt",
            std::process::id(),
            (start_unix_s * 1e6) as u64
        );
        for g in generators {
            let path = format!("{}/{name}", g.cache);
            g.put_private(&path, text.as_bytes())?;
            header_files.0.push((g.clone(), path));
        }
    }
    let mut shards: Vec<Shard> = Vec::with_capacity(n);
    for (i, g) in generators.iter().enumerate() {
        let at = start_unix_s + g.report.clock_offset_s;
        let mut argv = vec![g.exe.clone(), "load".to_owned()];
        argv.extend(args.iter().cloned());
        if let Some((_, path)) = header_files.0.get(i) {
            argv.extend(["--header-file".to_owned(), path.clone()]);
        }
        argv.extend([
            "--shard".to_owned(),
            format!("{i}/{n}"),
            "--start-at".to_owned(),
            format!("{at:.6}"),
            "--json".to_owned(),
            "-".to_owned(),
            "--quiet".to_owned(),
        ]);
        match spawn_with_lines(g, &argv, &g.cache) {
            Ok((process, lines)) => shards.push(Shard {
                process,
                lines,
                stdout: String::new(),
                status: None,
            }),
            Err(e) => {
                stop_all(&mut shards);
                return Err(RunnerError::ShardStart {
                    index: i,
                    count: n,
                    error: Box::new(e),
                });
            }
        }
    }
    let until = Instant::now() + START_LEAD + deadline;
    loop {
        for s in &mut shards {
            while let Ok(line) = s.lines.try_recv() {
                s.stdout.push_str(&line);
                s.stdout.push('\n');
            }
            if s.status.is_none() {
                s.status = s.process.try_status();
            }
        }
        if let Some((i, code)) = shards
            .iter()
            .enumerate()
            .find_map(|(i, s)| s.status.filter(|c| *c != 0).map(|c| (i, c)))
        {
            let why = shards[i].process.take_stderr();
            let url = shards[i].process.host().url.clone();
            let _ = std::fs::write(cell_dir.join(format!("generator-{}.log", i + 1)), &why);
            stop_all(&mut shards);
            let last = why
                .lines()
                .map(str::trim)
                .rev()
                .find(|l| !l.is_empty())
                .unwrap_or("no message")
                .to_owned();
            return Err(RunnerError::ShardExited {
                index: i,
                count: n,
                host: url,
                code,
                last_line: last,
            });
        }
        if shards.iter().all(|s| s.status == Some(0)) {
            break;
        }
        if stop.load(Ordering::Relaxed) {
            stop_all(&mut shards);
            return Err(RunnerError::Interrupted);
        }
        if Instant::now() >= until {
            stop_all(&mut shards);
            return Err(RunnerError::ShardsTimeout { after: deadline });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Every shard ended: its last lines may still be in the channel.
    let mut records = Vec::with_capacity(n);
    for (i, s) in shards.iter_mut().enumerate() {
        let deadline = Instant::now() + Duration::from_secs(2);
        while let Ok(line) = s
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            s.stdout.push_str(&line);
            s.stdout.push('\n');
        }
        let _ = std::fs::write(
            cell_dir.join(format!("generator-{}.log", i + 1)),
            s.process.take_stderr(),
        );
        let record: LoadReport =
            serde_json::from_str(&s.stdout).map_err(|error| RunnerError::ShardRecord {
                index: i,
                count: n,
                error,
            })?;
        records.push(record);
        s.process.stop();
    }
    let report = gatebench_model::merge::merge(&records)
        .map_err(|error| RunnerError::ShardMerge { error })?;
    Ok(ShardedLoad {
        report,
        start_unix_s,
    })
}

/// The header files written on the generator hosts, removed when dropped.
struct HeaderFiles(Vec<(Arc<SshHost>, String)>);

impl Drop for HeaderFiles {
    fn drop(&mut self) {
        for (host, path) in &self.0 {
            host.remove(path);
        }
    }
}

/// Stops every shard still running, by its PID on its host.
fn stop_all(shards: &mut [Shard]) {
    for s in shards {
        s.process.stop();
    }
}

/// A sharded cell's `timeline.csv` rows and `latency.hlog`, from the merged record's seconds
/// (`load_start_s`: when the load started, seconds since the cell did). Empty when the record
/// has no seconds with histograms (shards of an older gatebench).
pub fn seconds(report: &LoadReport, load_start_s: f64) -> (Vec<TimelineRow>, Vec<u8>) {
    let Some(seconds) = report.timeline.as_deref() else {
        return (Vec::new(), Vec::new());
    };
    let warmup_s = report.warmup.as_ref().map_or(0.0, |w| w.duration_s);
    let program = report.config.arrival.is_some();
    let mut rows = Vec::with_capacity(seconds.len());
    let mut hlog = Vec::new();
    let start = std::time::UNIX_EPOCH + Duration::from_micros(report.started_at_unix_us);
    let comment = format!(
        "[gatebench {} load {} -c {}, {} shards merged; values in nanoseconds]",
        env!("CARGO_PKG_VERSION"),
        report.config.url,
        report.config.connections,
        report.merged.as_ref().map_or(1, |m| m.count)
    );
    // Writing into a Vec cannot fail.
    let _ = gatebench_loadgen::hlog::write_header(&mut hlog, start, &comment);
    for s in seconds {
        let Some(h) = s.latency.as_deref().and_then(|t| histogram::decode(t).ok()) else {
            return (Vec::new(), Vec::new());
        };
        let from_load_start = warmup_s + s.t_s;
        rows.push(TimelineRow {
            t_s: load_start_s + from_load_start + s.length_s,
            window: if s.t_s < 0.0 { "warmup" } else { "measurement" }.to_owned(),
            responses: Some(s.responses),
            errors: Some(s.errors),
            rps: s.responses as f64 / s.length_s.max(1e-3),
            p99_ms: if h.is_empty() {
                0.0
            } else {
                h.value_at_quantile(0.99) as f64 / 1e6
            },
            target_rate: program.then_some(s.target_rate),
        });
        let at = Duration::from_secs_f64(from_load_start.max(0.0));
        if program {
            let _ = gatebench_loadgen::hlog::write_target_rate(&mut hlog, at, s.target_rate);
        }
        let _ = gatebench_loadgen::hlog::write_interval(
            &mut hlog,
            &h,
            at,
            Duration::from_secs_f64(s.length_s),
            None,
        );
    }
    (rows, hlog)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatebench_model::{
        ConnectionStats, LatencySummary, OutcomeCounts, PhaseReport, SecondRecord,
    };

    fn phase(duration_s: f64) -> PhaseReport {
        PhaseReport {
            duration_s,
            outcomes: OutcomeCounts::default(),
            requests: 0,
            throughput_rps: 0.0,
            ok_rps: 0.0,
            error_percent: 0.0,
            target_rps: None,
            sent_rps: 0.0,
            bytes_read: 0,
            bytes_written: 0,
            latency: LatencySummary::default(),
            latency_answered: None,
            latency_uncorrected: None,
            concurrency: 0.0,
            connections: ConnectionStats::default(),
            histograms: None,
        }
    }

    fn second(t_s: f64, length_s: f64, responses: u64, values_ms: &[u64]) -> SecondRecord {
        let mut h = histogram::new_histogram();
        for v in values_ms {
            h.record(v * 1_000_000).unwrap();
        }
        SecondRecord {
            t_s,
            length_s,
            target_rate: 0.0,
            sent: responses,
            responses,
            errors: 0,
            latency: Some(histogram::encode(&h)),
        }
    }

    #[test]
    fn a_sharded_cell_gets_its_seconds_from_the_merged_record() {
        let mut r =
            gatebench_testkit::records::load_report(4, 100, Some(phase(1.0)), phase(2.0), true);
        r.started_at_unix_us = 1_700_000_000_250_000;
        r.timeline = Some(vec![
            second(-1.0, 1.0, 10, &[1, 2]),
            second(0.0, 1.0, 300, &[3; 100]),
            second(1.0, 0.5, 100, &[40]),
        ]);
        // The load started 2.5 s into the cell.
        let (rows, hlog) = seconds(&r, 2.5);
        let got: Vec<(f64, &str, Option<u64>, f64)> = rows
            .iter()
            .map(|row| (row.t_s, row.window.as_str(), row.responses, row.rps))
            .collect();
        assert_eq!(
            got,
            [
                (3.5, "warmup", Some(10), 10.0),
                (4.5, "measurement", Some(300), 300.0),
                (5.0, "measurement", Some(100), 200.0),
            ]
        );
        assert!((rows[1].p99_ms - 3.0).abs() < 0.01, "{}", rows[1].p99_ms);
        assert!((rows[2].p99_ms - 40.0).abs() < 0.1, "{}", rows[2].p99_ms);
        // No program: no target column.
        assert!(rows.iter().all(|row| row.target_rate.is_none()));
        let hlog = String::from_utf8(hlog).unwrap();
        assert!(hlog.contains("#[StartTime: 1700000000.250"), "{hlog}");
        let lines: Vec<&str> = hlog
            .lines()
            .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
            .collect();
        assert_eq!(lines.len(), 3, "{hlog}");
        assert!(lines[0].starts_with("0.000,1.000,"), "{}", lines[0]);
        assert!(lines[2].starts_with("2.000,0.500,"), "{}", lines[2]);
    }

    #[test]
    fn records_without_second_histograms_give_no_timeline() {
        let mut r = gatebench_testkit::records::load_report(4, 100, None, phase(2.0), true);
        let mut s = second(0.0, 1.0, 5, &[1]);
        s.latency = None;
        r.timeline = Some(vec![s]);
        let (rows, hlog) = seconds(&r, 0.0);
        assert!(rows.is_empty() && hlog.is_empty());
    }
}
