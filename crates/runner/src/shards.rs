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
//! While the load runs, each shard streams its finished seconds (`--live-seconds`) and the
//! coordinator merges them as they come (`shards/live.rs`): one live line per second for the whole
//! load, and the scenario's thresholds judged on the merged seconds, so that an `abort` one
//! stops every shard (SIGINT: each ends early and still prints its record). At the end the live
//! merge is compared with the exact merge of the records (`merged.live` in the record). The
//! cell's `timeline.csv` and `latency.hlog` come from the merged record's seconds, as every
//! cell's do (`cell/seconds.rs`).

mod live;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gatebench_loadgen::threshold::Threshold;
use gatebench_loadgen::IntervalView;
use gatebench_model::load::LIVE_SECOND_PREFIX;
use gatebench_model::LoadReport;

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

impl Shard {
    /// Takes the lines that have come: streamed seconds to `live`, the rest is the record.
    fn take_lines(&mut self, index: usize, live: &mut live::LiveMerge) -> Result<(), RunnerError> {
        while let Ok(line) = self.lines.try_recv() {
            self.line(index, line, live)?;
        }
        Ok(())
    }

    fn line(
        &mut self,
        index: usize,
        line: String,
        live: &mut live::LiveMerge,
    ) -> Result<(), RunnerError> {
        match line.strip_prefix(LIVE_SECOND_PREFIX) {
            Some(json) => live
                .push(index, json)
                .map_err(|reason| RunnerError::Load { reason }),
            None => {
                self.stdout.push_str(&line);
                self.stdout.push('\n');
                Ok(())
            }
        }
    }
}

/// One sharded load: what [`run`] needs.
#[derive(Debug)]
pub struct ShardedRun<'a> {
    /// The generator hosts, one shard each.
    pub generators: &'a [Arc<SshHost>],
    /// `gatebench load`'s arguments common to every shard.
    pub args: &'a [String],
    /// The suite's request headers (credentials among them).
    pub headers: &'a [String],
    /// The load's warm-up, for the live view.
    pub warmup: Duration,
    /// Bounds the whole load (warm-up, measurement, timeouts).
    pub deadline: Duration,
    /// The scenario's thresholds, judged on the merged seconds.
    pub thresholds: &'a [Threshold],
    /// Where the merged seconds' live figures go (`gatebench run --metrics`).
    pub metrics: Option<Arc<gatebench_loadgen::metrics::LiveMetrics>>,
    /// Where each shard's log is kept.
    pub cell_dir: &'a Path,
    /// Ctrl-C.
    pub stop: &'a AtomicBool,
}

/// Runs `gatebench load ARGS` as one shard on every host of `generators`, waits for all, and
/// merges their records; `show` gets the merged live view of each second.
///
/// `headers` (the suite's request headers, credentials among them) are written to a file on
/// each host that only its owner can read, passed as `--header-file`, and removed when the
/// load ends however it ends: a header value never appears on a command line, where any user
/// of either machine could read it.
pub fn run(
    r: &ShardedRun<'_>,
    show: &mut dyn FnMut(&IntervalView),
) -> Result<ShardedLoad, RunnerError> {
    let ShardedRun {
        generators,
        args,
        headers,
        deadline,
        cell_dir,
        stop,
        ..
    } = *r;
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
            "--live-seconds".to_owned(),
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
    let mut live = live::LiveMerge::new(n, start_unix_s, r.warmup, r.thresholds, r.metrics.clone());
    // Set once the shards were asked to stop for a threshold: each then ends with 130.
    let mut interrupted = false;
    let until = Instant::now() + START_LEAD + deadline;
    loop {
        for (i, s) in shards.iter_mut().enumerate() {
            if let Err(e) = s.take_lines(i, &mut live) {
                stop_all(&mut shards);
                return Err(e);
            }
            if s.status.is_none() {
                s.status = s.process.try_status();
            }
        }
        let ended_well = |c: i32| c == 0 || (interrupted && c == 130);
        if let Some((i, code)) = shards
            .iter()
            .enumerate()
            .find_map(|(i, s)| s.status.filter(|c| !ended_well(*c)).map(|c| (i, c)))
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
        if shards.iter().all(|s| s.status.is_some()) {
            break;
        }
        match live.merge_ready(unix_now(), show) {
            Ok(Some(why)) if !interrupted => {
                tracing::warn!("{why}: stopping every shard");
                for s in &shards {
                    s.process.interrupt();
                }
                interrupted = true;
            }
            Ok(_) => {}
            Err(reason) => {
                stop_all(&mut shards);
                return Err(RunnerError::Load { reason });
            }
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
            s.line(i, line, &mut live)?;
        }
        live.end(i);
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
    let mut report = gatebench_model::merge::merge(&records)
        .map_err(|error| RunnerError::ShardMerge { error })?;
    live.finish(&mut report, unix_now())
        .map_err(|reason| RunnerError::Load { reason })?;
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
