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
use gatebench_model::{CostReport, CostRun, SCHEMA_VERSION};
use gatebench_report::cost::{self, COST_PERCENTILES};

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
    let mut runs = Vec::new();
    let mut order = 0;
    for repeat in 1..=args.repeats {
        // direct, via, via, direct, …: each path goes first as often as second.
        let paths = if repeat % 2 == 1 {
            ["direct", "via"]
        } else {
            ["via", "direct"]
        };
        for path in paths {
            let config = if path == "direct" { &direct } else { &via };
            let cpu0 = match (path, args.via_pid) {
                ("via", Some(pid)) => Some(process_cpu(pid)?),
                _ => None,
            };
            let out = gatebench_loadgen::run(
                config.clone(),
                RunOptions {
                    stop: Some(stop.clone()),
                    ..RunOptions::default()
                },
            )?;
            if stop.load(Ordering::Relaxed) {
                eprintln!("gatebench: interrupted; no cost figures (the runs so far are above)");
                return Ok(ExitCode::from(130));
            }
            // The whole run's CPU (warm-up included) over the whole run's responses.
            let cpu = match (cpu0, args.via_pid) {
                (Some(c0), Some(pid)) => Some(process_cpu(pid)? - c0),
                _ => None,
            };
            let r = &out.report;
            let m = &r.measurement;
            let responses_all =
                m.outcomes.responses() + r.warmup.as_ref().map_or(0, |w| w.outcomes.responses());
            order += 1;
            let run = CostRun {
                order,
                path: path.to_owned(),
                repeat,
                percentiles_ms: COST_PERCENTILES
                    .iter()
                    .map(|p| m.latency.at(*p).unwrap_or(f64::NAN))
                    .collect(),
                responses: m.outcomes.responses(),
                throughput_rps: m.throughput_rps,
                error_percent: m.error_percent,
                // Scaled to the measurement's share of the answers, so that CPU per request
                // divides like for like.
                intermediary_cpu_s: cpu
                    .map(|c| c * m.outcomes.responses() as f64 / (responses_all.max(1)) as f64),
                valid: r.valid,
            };
            if !args.quiet {
                eprintln!(
                    "run {order:>2}: {path:<6} p50 {:.3} ms  p99 {:.3} ms  errors {:.3}%{}",
                    run.percentiles_ms[0],
                    run.percentiles_ms[2],
                    run.error_percent,
                    run.intermediary_cpu_s
                        .map(|c| format!("  intermediary CPU {c:.2} s"))
                        .unwrap_or_default()
                );
            }
            runs.push(run);
        }
    }
    let mut warnings = Vec::new();
    let errored: Vec<String> = runs
        .iter()
        .filter(|r| r.error_percent > 0.0)
        .map(|r| format!("{} {} ({:.3}%)", r.path, r.repeat, r.error_percent))
        .collect();
    if !errored.is_empty() {
        warnings.push(format!(
            "runs with errors: {}; their latency includes censored values",
            errored.join(", ")
        ));
    }
    if runs.iter().any(|r| !r.valid) {
        warnings.push(
            "the generator's self-check flagged some runs: it may have been the bottleneck".into(),
        );
    }
    let duration_s = args.duration.as_secs_f64();
    let (cpu_us, cpu_pct) = cost::intermediary_cpu(&runs, duration_s);
    let report = CostReport {
        schema_version: SCHEMA_VERSION,
        direct_url: direct.target.url.clone(),
        via_url: via.target.url.clone(),
        rate: args.rate,
        connections: args.connections,
        duration_s,
        repeats: args.repeats,
        added: cost::added_latency(&runs),
        runs,
        intermediary_cpu_us_per_request: cpu_us,
        intermediary_cpu_percent: cpu_pct,
        warnings,
    };
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
