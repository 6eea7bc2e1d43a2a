//! `gatebench load URL --find-max --slo …`: the capacity search, each step a real open-model
//! run of the load generator, printed as a table (stdout), and optionally as a JSON record
//! (`--json`) and a latency-against-rate chart (`--svg`).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use gatebench_loadgen::bounds::check_rate;
use gatebench_loadgen::capacity::{self, SearchSettings, Slo};
use gatebench_loadgen::{LoadConfig, RunOptions};
use gatebench_model::CapacityStep;

use super::load::{create, spec};
use crate::cmd::load::LoadArgs;
use crate::signal;

/// Most steps a search runs (its check included).
const MAX_STEPS: u32 = 30;

/// Why a search stopped early.
#[derive(Debug)]
enum Stopped {
    /// Ctrl-C.
    Interrupted,
    /// A step could not run.
    Failed(anyhow::Error),
}

/// Runs the search.
pub fn run(args: LoadArgs) -> Result<ExitCode> {
    let text = args.slo.as_deref().unwrap_or_default();
    let slo: Slo = text.parse().map_err(|e| anyhow!("--slo: {e}"))?;
    if !(args.precision.is_finite() && args.precision > 0.0 && args.precision <= 50.0) {
        anyhow::bail!(
            "--precision must be above 0 and at most 50 (percent), got {}",
            args.precision
        );
    }
    if let Some(r) = args.start_rate {
        check_rate(r).map_err(|e| anyhow!("--start-rate {e}"))?;
    }
    if args.step_duration < Duration::from_millis(100) {
        anyhow::bail!("--step-duration must be at least 100ms");
    }
    let config = LoadConfig::try_new(spec(&args)?)?;
    gatebench_loadgen::limits::ensure_fd_limit(u64::from(config.connections))?;
    let mut json_out = match args.json.as_deref() {
        Some(p) if p == Path::new("-") => None,
        Some(p) => Some(create(p, "--json")?),
        None => None,
    };
    let json_stdout = args.json.as_deref() == Some(Path::new("-"));
    let mut svg_out = match args.svg.as_deref() {
        Some(p) => Some(create(p, "--svg")?),
        None => None,
    };
    if !args.no_probe {
        gatebench_loadgen::probe(&config)?;
    }
    let stop = signal::interrupt_flag();
    let warmup = args.warmup.unwrap_or(Duration::from_secs(1));

    let start = match args.start_rate {
        Some(r) => r,
        None => {
            let out = gatebench_loadgen::run(
                capacity::probe_config(&config),
                RunOptions {
                    stop: Some(stop.clone()),
                    ..RunOptions::default()
                },
            )?;
            let t = out.report.measurement.throughput_rps;
            eprintln!(
                "closed-model probe with {} connections: {:.0} req/s; first step at half",
                config.connections, t
            );
            capacity::start_from_probe(t)
        }
    };
    let settings = SearchSettings::new(slo.clone(), start, args.precision / 100.0, MAX_STEPS);
    let mut seen: Vec<CapacityStep> = Vec::new();
    let result = capacity::search(
        &settings,
        &config.target.url,
        config.connections,
        |rate, _phase| {
            if stop.load(Ordering::Relaxed) {
                return Err(Stopped::Interrupted);
            }
            let config =
                capacity::step_config(&config, &slo, rate, warmup, args.step_duration, None);
            let out = gatebench_loadgen::run(
                config,
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
        |s| {
            if !args.quiet {
                eprintln!(
                    "step {:>2} ({}) at {:.0} req/s: p99 {:.3} ms, errors {:.3}% — {}",
                    s.step,
                    s.phase,
                    s.rate,
                    s.p99_ms,
                    s.error_percent,
                    if s.passed { "pass" } else { "fail" }
                );
            }
            seen.push(s.clone());
        },
    );
    let report = match result {
        Ok(r) => r,
        Err(Stopped::Failed(e)) => return Err(e.context(format!("step {}", seen.len() + 1))),
        Err(Stopped::Interrupted) => {
            eprintln!(
                "gatebench: interrupted after {} steps; no answer (the steps so far are above)",
                seen.len()
            );
            return Ok(ExitCode::from(130));
        }
    };
    let text = gatebench_report::capacity::render(&report);
    if json_stdout {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    let json = serde_json::to_string_pretty(&report).context("encoding the JSON record")?;
    if json_stdout {
        println!("{json}");
    } else if let Some(out) = json_out.as_mut() {
        writeln!(out, "{json}")
            .and_then(|_| out.flush())
            .context("writing the --json file")?;
    }
    if let Some(out) = svg_out.as_mut() {
        out.write_all(gatebench_report::capacity::chart(&report).as_bytes())
            .and_then(|_| out.flush())
            .context("writing the --svg file")?;
    }
    Ok(ExitCode::SUCCESS)
}
