//! `gatebench cost --direct URL --via URL -R RATE`: what an intermediary adds. The same
//! open-model schedule runs against the back-end directly and through the intermediary,
//! alternating (direct, via, via, direct, …, so slow drift of the machine hits both paths
//! alike); the latency added at p50, p90, p99 and p99.9 is the Hodges-Lehmann shift between
//! the two sets of runs with its distribution-free interval, and the intermediary's CPU per
//! request comes from its process's own CPU time over each run (`--via-pid`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use clap::Args;
use gatebench_loadgen::bounds::{check_rate, parse_duration};
use gatebench_loadgen::{Arrival, LoadConfig, LoadSpec, RequestBody, RunOptions, StopRule};
use gatebench_model::LoadReport;
use gatebench_report::cost::{self, CostSetup};

use super::load::create;
use crate::signal;

/// `gatebench cost`.
#[derive(Debug, Args)]
#[command(
    after_help = "Each run is a full open-model load (latency from each request's intended send \
time). Runs alternate direct, via, via, direct, … so that drift of the machine hits both paths \
alike. The added latency is the Hodges-Lehmann shift between the runs through the intermediary \
and the direct ones, with Moses's distribution-free 95% interval (or the highest level the \
repeats allow: 5 repeats give 95%).\n\nExit status: 0 done, 2 bad arguments or another error, \
130 interrupted."
)]
pub struct CostArgs {
    /// The back-end, reached directly, e.g. http://127.0.0.1:8688/
    #[arg(long, value_name = "URL")]
    pub direct: String,
    /// The same back-end through the intermediary, e.g. http://127.0.0.1:8080/
    #[arg(long, value_name = "URL")]
    pub via: String,
    /// The intermediary's process id, for its CPU per request (user + system time from /proc).
    #[arg(long, value_name = "PID")]
    pub via_pid: Option<u32>,
    /// Open-model rate of every run, requests/s (0.001 to 1e9).
    #[arg(short = 'R', long, value_name = "RPS", allow_negative_numbers = true)]
    pub rate: f64,
    /// Connections of every run.
    #[arg(short = 'c', long, default_value_t = 50, value_name = "N")]
    pub connections: u32,
    /// Measurement length of every run.
    #[arg(short = 'd', long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub duration: Duration,
    /// Warm-up before every run's measurement.
    #[arg(long, default_value = "2s", value_parser = parse_duration, value_name = "DURATION")]
    pub warmup: Duration,
    /// Runs of each path (2 to 100).
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub repeats: u32,
    /// Generator worker threads [default: the cores this process may use].
    #[arg(short = 't', long, value_name = "N")]
    pub threads: Option<u32>,
    /// HTTP method.
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    /// Request header `Name: value` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// A seed-004 JSON payload of exactly N bytes as the request body.
    #[arg(long, value_name = "N")]
    pub payload_size: Option<usize>,
    /// Per-request timeout.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub timeout: Duration,
    /// Write the JSON record to FILE (`-` for stdout; the text then goes to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

fn spec(args: &CostArgs, url: &str) -> LoadSpec {
    let mut s = LoadSpec::new(url);
    s.connections = args.connections;
    s.threads = args.threads;
    s.method = args.method.clone();
    s.headers = args.headers.clone();
    s.body = args
        .payload_size
        .map_or(RequestBody::None, RequestBody::Payload);
    s.arrival = Arrival::Open { rate: args.rate };
    s.warmup = args.warmup;
    s.stop = StopRule {
        duration: Some(args.duration),
        requests: None,
    };
    s.timeout = args.timeout;
    s
}

/// Why the measurement stopped early.
enum Stopped {
    /// Ctrl-C.
    Interrupted,
    /// A run could not run, or the intermediary's CPU could not be read.
    Failed(anyhow::Error),
}

/// CPU seconds (user + system) of process `pid` so far.
fn process_cpu(pid: u32) -> Result<f64> {
    let p = procfs::process::Process::new(pid as i32)
        .with_context(|| format!("--via-pid {pid}: no such process"))?;
    let st = p
        .stat()
        .with_context(|| format!("--via-pid {pid}: cannot read its /proc stat"))?;
    Ok((st.utime + st.stime) as f64 / procfs::ticks_per_second() as f64)
}

/// Runs the measurement.
pub fn run(args: CostArgs) -> Result<ExitCode> {
    check_rate(args.rate).map_err(|e| anyhow!("-R/--rate {e}"))?;
    if !(2..=100).contains(&args.repeats) {
        anyhow::bail!(
            "--repeats must be from 2 to 100 (an interval needs repeats), got {}",
            args.repeats
        );
    }
    if args.duration.is_zero() {
        anyhow::bail!("-d/--duration must be more than 0");
    }
    let direct = LoadConfig::try_new(spec(&args, &args.direct)).context("--direct")?;
    let via = LoadConfig::try_new(spec(&args, &args.via)).context("--via")?;
    if let Some(pid) = args.via_pid {
        process_cpu(pid)?;
    }
    gatebench_loadgen::limits::ensure_fd_limit(u64::from(args.connections))?;
    let mut json_file = match args.json.as_deref() {
        Some(p) if p != Path::new("-") => Some(create(p, "--json")?),
        _ => None,
    };
    let json_stdout = args.json.as_deref() == Some(Path::new("-"));
    gatebench_loadgen::probe(&direct).context("--direct")?;
    gatebench_loadgen::probe(&via).context("--via")?;

    let stop = signal::interrupt_flag();
    let quiet = args.quiet;
    let runs = gatebench_loadgen::cost::measure(
        &direct,
        &via,
        args.repeats,
        |config| -> Result<LoadReport, Stopped> {
            let out = gatebench_loadgen::run(
                config.clone(),
                RunOptions {
                    stop: Some(stop.clone()),
                    ..RunOptions::default()
                },
            )
            .map_err(|e| Stopped::Failed(e.into()))?;
            if stop.load(Ordering::Relaxed) {
                return Err(Stopped::Interrupted);
            }
            Ok(out.report)
        },
        || match args.via_pid {
            Some(pid) => process_cpu(pid).map(Some).map_err(Stopped::Failed),
            None => Ok(None),
        },
        |run| {
            if !quiet {
                eprintln!(
                    "run {:>2}: {:<6} p50 {:.3} ms  p99 {:.3} ms  errors {:.3}%{}",
                    run.order,
                    run.path,
                    run.percentiles_ms[0],
                    run.percentiles_ms[2],
                    run.error_percent,
                    run.intermediary_cpu_s
                        .map(|c| format!("  intermediary CPU {c:.2} s"))
                        .unwrap_or_default()
                );
            }
        },
    );
    let runs = match runs {
        Ok(r) => r,
        Err(Stopped::Failed(e)) => return Err(e),
        Err(Stopped::Interrupted) => {
            eprintln!("gatebench: interrupted; no cost figures (the runs so far are above)");
            return Ok(ExitCode::from(130));
        }
    };
    let report = cost::report(
        CostSetup {
            direct_url: direct.target.url.clone(),
            via_url: via.target.url.clone(),
            rate: args.rate,
            connections: args.connections,
            duration_s: args.duration.as_secs_f64(),
            repeats: args.repeats,
        },
        runs,
    );
    let text = cost::render(&report);
    let json = serde_json::to_string_pretty(&report).context("encoding the JSON record")?;
    if json_stdout {
        eprint!("{text}");
        println!("{json}");
    } else {
        print!("{text}");
        if let Some(f) = json_file.as_mut() {
            writeln!(f, "{json}")
                .and_then(|_| f.flush())
                .context("writing the --json file")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
