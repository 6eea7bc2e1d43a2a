//! `gatebench load URL`: the single-shot load generator.
//!
//! Validates every argument and opens every output file before the first request, runs the
//! correctness probe, then the load with a live panel on stderr (`panel.rs`, only when stderr
//! is a terminal), and prints the text report, the JSON record and the interval log.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use gatebench_loadgen::metrics::{LiveMetrics, MetricsServer, RemoteWrite};
use gatebench_loadgen::start::Anchor;
use gatebench_loadgen::{
    Arrival, ArrivalProgram, ChatRequest, IntervalView, LoadConfig, LoadSpec, Mix, Protocol,
    RateProgram, Replay, ReplayFormat, RequestBody, Requests, RunOptions, Spacing, StopRule,
    StreamMode, StreamSpec, TlsOptions,
};
use gatebench_model::{LiveSecond, ShardInfo};

use crate::signal;

mod args;
mod grpc;
mod panel;
mod ws;

pub(crate) use args::{parse_label, parse_remote_write, parse_remote_write_interval};
pub use args::{ArrivalSpacing, LoadArgs, ReplayFormatArg, StreamModeArg, START_AT_TOLERANCE};
use panel::Panel;

/// Runs the subcommand (`--find-max` runs `cmd::find_max` instead, from `main`).
pub fn run(args: LoadArgs) -> Result<ExitCode> {
    if gatebench_loadgen::grpc::is_grpc_url(&args.url) {
        return grpc::run(&args);
    }
    if let Some(flag) = grpc::grpc_flag(&args) {
        anyhow::bail!("{flag} needs a grpc:// or grpcs:// target");
    }
    if ws::is_ws(&args.url) {
        return ws::run(&args);
    }
    let config = LoadConfig::try_new(spec(&args)?)?;
    let shard = args.shard.map(|(index, count)| ShardInfo {
        index,
        count,
        connections_total: args.connections,
        // A program's shards carry it scaled in their own config; the total is the number given.
        rate_total: args
            .rate
            .as_deref()
            .and_then(|t| t.trim().parse::<f64>().ok()),
        program_total: args
            .rate
            .as_deref()
            .filter(|t| t.trim().parse::<f64>().is_err())
            .map(|t| t.trim().to_owned()),
        requests_total: args.requests,
        start_at_unix_ms: args.start_at.map(unix_ms),
    });
    // Enough file descriptors for -c, checked before anything touches the network.
    gatebench_loadgen::limits::ensure_fd_limit(u64::from(config.connections))?;
    // Open outputs first: a typo in a path must not cost a whole run.
    let mut json_out = match args.json.as_deref() {
        Some(p) if p == Path::new("-") => Some(Output::Stdout),
        Some(p) => Some(Output::File(create(p, "--json")?)),
        None => None,
    };
    let mut hlog_out = match args.hlog.as_deref() {
        Some(p) => Some(create(p, "--hlog")?),
        None => None,
    };
    // The metrics address too: one in use is an error before the probe.
    if args.metrics_labels.len() > gatebench_loadgen::metrics::MAX_LABELS {
        anyhow::bail!(
            "--metrics-label: at most {} labels",
            gatebench_loadgen::metrics::MAX_LABELS
        );
    }
    // One set of live figures for the scrape and the pushes.
    let live_metrics = (args.metrics.is_some() || args.remote_write.is_some())
        .then(|| LiveMetrics::new(&args.metrics_labels));
    let metrics = args
        .metrics
        .zip(live_metrics.clone())
        .map(|(addr, live)| -> Result<_> {
            let server = MetricsServer::start(addr, live.clone())
                .with_context(|| format!("--metrics: cannot listen on {addr}"))?;
            Ok((live, server))
        })
        .transpose()?;
    if !args.no_probe {
        gatebench_loadgen::probe(&config)?;
    }
    if let Some((_, server)) = &metrics {
        eprintln!("Metrics: http://{}/metrics", server.addr());
    }
    // Started after the probe: nothing is pushed before the load. An endpoint that is down is
    // found by the first push, said once, and does not stop the run.
    let remote = match (&args.remote_write, &live_metrics) {
        (Some(url), Some(live)) => Some(
            RemoteWrite::start(url.clone(), args.remote_write_interval, live.clone())
                .context("--remote-write: cannot start its thread")?,
        ),
        _ => None,
    };
    let text_to_stderr = matches!(json_out, Some(Output::Stdout));
    let live = !args.quiet && std::io::stderr().is_terminal();
    eprintln!("{}", banner(&config, shard.as_ref()));

    let stop = signal::interrupt_flag();
    let anchor = match args.start_at {
        Some(at) => Some(wait_until(at, &stop)?),
        None => None,
    };
    // Cleared when dropped, so an error or the report starts on a clean line.
    let panel = live.then(|| {
        let planned = config.stop.duration.map(|d| d + config.warmup);
        let p = Panel::new(planned, config.threads);
        let mut p = PanelOnStderr(p);
        p.0.draw(&mut std::io::stderr().lock(), panel::terminal_width());
        std::cell::RefCell::new(p)
    });
    let mut progress = |v: &IntervalView| {
        if let Some(p) = &panel {
            let mut p = p.borrow_mut();
            p.0.update(v);
            p.0.draw(&mut std::io::stderr().lock(), panel::terminal_width());
        }
    };
    // Each second as one line, flushed at once: the coordinator reads them as they come.
    let mut stream_second = |s: &LiveSecond| {
        let line = serde_json::to_string(s).expect("a second always serializes");
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}{line}", gatebench_model::load::LIVE_SECOND_PREFIX);
        let _ = out.flush();
    };
    let output = gatebench_loadgen::run(
        config,
        RunOptions {
            on_second: args
                .live_seconds
                .then_some(&mut stream_second as &mut dyn FnMut(&LiveSecond)),
            hlog: hlog_out.as_mut().map(|w| w as &mut dyn Write),
            on_interval: Some(&mut progress),
            stop: Some(stop.clone()),
            anchor,
            // A shard's record carries its seconds, histograms included, for the merge.
            timeline: shard.is_some(),
            metrics: live_metrics.clone(),
        },
    )?;
    let mut output = output;
    output.report.shard = shard;
    drop(panel);
    // An `abort` threshold stops the run through its own flag; Ctrl-C is the caller's.
    let aborted = output.report.thresholds.iter().any(|t| t.aborted);
    let interrupted = stop.load(Ordering::Relaxed) && !aborted;
    let failed = output
        .report
        .thresholds
        .iter()
        .filter(|t| !t.passed)
        .count();
    let text = gatebench_report::load_text::render(&output.report);
    if text_to_stderr {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    if interrupted {
        eprintln!("gatebench: interrupted; the report covers what was measured until then");
    }
    if let Some(t) = output.report.thresholds.iter().find(|t| t.aborted) {
        eprintln!(
            "gatebench: stopped early: threshold '{}' breached {:.0} s into the measurement ({}); \
             the report covers what was measured until then",
            t.threshold,
            t.breached_at_s.unwrap_or(0.0),
            t.breach.as_deref().unwrap_or(&t.observed)
        );
    }
    if failed > 0 {
        eprintln!(
            "gatebench: {failed} of {} thresholds failed",
            output.report.thresholds.len()
        );
    }
    if let Some(r) = remote {
        // The last push, of the final figures; a dead endpoint fails it at once, a slow one
        // holds the exit up at most this long.
        say_remote_write(&r.finish(Duration::from_secs(15)));
    }
    if let Some(out) = json_out.as_mut() {
        let json =
            serde_json::to_string_pretty(&output.report).context("encoding the JSON record")?;
        out.write_line(&json).context("writing the JSON record")?;
    }
    if let Some(mut h) = hlog_out {
        h.flush().context("writing the interval log")?;
    }
    if metrics.is_some() && !args.metrics_linger.is_zero() && !interrupted {
        // The final figures stay up for the scraper's next scrape; Ctrl-C ends the wait. (An
        // abort threshold stopped the run through the same flag: the run is over, so it is
        // cleared to watch for a real Ctrl-C.)
        stop.store(false, Ordering::Relaxed);
        let until = std::time::Instant::now() + args.metrics_linger;
        while std::time::Instant::now() < until && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    drop(metrics);
    Ok(if interrupted {
        ExitCode::from(130)
    } else if failed > 0 {
        ExitCode::from(THRESHOLD_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

/// The exit status of a run with a failed threshold (k6's).
pub const THRESHOLD_FAILED: u8 = 99;

/// A load of its own's exit status from its thresholds' verdicts: [`THRESHOLD_FAILED`] when one
/// failed (and said so on stderr), success otherwise.
fn threshold_exit(thresholds: &[gatebench_model::ThresholdResult]) -> ExitCode {
    let failed = thresholds.iter().filter(|t| !t.passed).count();
    if failed == 0 {
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "gatebench: {failed} of {} thresholds failed",
        thresholds.len()
    );
    ExitCode::from(THRESHOLD_FAILED)
}

/// Waits until the wall clock reaches `at` (`--start-at`), or Ctrl-C; returns the moment the
/// load starts from. Refuses an instant that has passed by more than the tolerance by now (a
/// slow probe, a late start).
fn wait_until(at: SystemTime, stop: &AtomicBool) -> Result<Anchor> {
    if let Ok(ago) = SystemTime::now().duration_since(at) {
        if ago > START_AT_TOLERANCE {
            anyhow::bail!(
                "--start-at: the instant passed {:.1} s ago, before the load could start",
                ago.as_secs_f64()
            );
        }
    }
    gatebench_loadgen::start::wait_until(at, stop)
        .ok_or_else(|| anyhow::anyhow!("interrupted while waiting for --start-at"))
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Shard `index` of `count`'s share of the run: its connections (`-c` divided, remainders to
/// the lowest indices), its rate and its request count (both in proportion to its
/// connections, as the load generator divides them among its own workers).
fn apply_shard(s: &mut LoadSpec, args: &LoadArgs, index: u32, count: u32) -> Result<()> {
    let total = u64::from(args.connections);
    let conns = ShardInfo::share(total, index, count);
    if conns == 0 {
        anyhow::bail!(
            "--shard {index}/{count}: -c {total} leaves shard {index} without a connection; \
             give at least {count} connections (one per shard)"
        );
    }
    s.connections = conns as u32;
    let part = conns as f64 / total as f64;
    match &mut s.arrival {
        Arrival::Closed | Arrival::Replay(_) => {}
        Arrival::Open { rate } => *rate *= part,
        Arrival::Program(p) => {
            p.rate = p.rate.scaled(part);
            // Independent gaps per shard: independent Poisson processes add up to one.
            if let Spacing::Poisson { seed } = &mut p.spacing {
                *seed ^= u64::from(index).wrapping_mul(0xD1B5_4A32_D192_ED03);
            }
        }
    }
    if let Some(n) = s.stop.requests {
        // Each shard's share of n in proportion to its connections; what rounding leaves goes
        // to the lowest indices, one each.
        let shares: Vec<u64> = (0..count)
            .map(|i| n * ShardInfo::share(total, i, count) / total)
            .collect();
        let left = n - shares.iter().sum::<u64>();
        let mine = shares[index as usize] + u64::from(u64::from(index) < left);
        if mine == 0 {
            anyhow::bail!("--shard {index}/{count}: -n {n} leaves shard {index} without a request");
        }
        s.stop.requests = Some(mine);
    }
    Ok(())
}

/// `--header-file`: one header a line; blank lines and `#` comments skipped. A line without a
/// colon is refused with its line number.
fn read_header_file(path: &std::path::Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--header-file {}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if !line.contains(':') {
            anyhow::bail!(
                "{}:{}: not a header line (write Name: value)",
                path.display(),
                i + 1
            );
        }
        out.push(line.to_owned());
    }
    Ok(out)
}

pub(crate) fn spec(args: &LoadArgs) -> Result<LoadSpec> {
    let mut s = LoadSpec::new(args.url.clone());
    s.method = args.method.clone();
    s.headers = args.headers.clone();
    if let Some(path) = &args.header_file {
        s.headers.extend(read_header_file(path)?);
    }
    s.body = if let Some(b) = &args.body {
        RequestBody::Inline(b.clone().into_bytes())
    } else if let Some(p) = &args.body_file {
        RequestBody::from_file(p)?
    } else if let Some(n) = args.payload_size {
        RequestBody::Payload(n)
    } else {
        RequestBody::None
    };
    // The whole file is read and checked here, before the probe and the load.
    s.requests = if let Some(p) = &args.mix {
        Requests::Mix(Mix::read(p)?)
    } else if let Some(p) = &args.replay {
        let format = args.replay_format.map(|f| match f {
            ReplayFormatArg::Common => ReplayFormat::Common,
            ReplayFormatArg::Combined => ReplayFormat::Combined,
            ReplayFormatArg::Goreplay => ReplayFormat::Goreplay,
        });
        let mut r = Replay::read(p, format)?;
        r.speed = args.speed;
        Requests::Replay(r)
    } else {
        Requests::Single
    };
    s.connections = args.connections;
    s.threads = args.threads;
    s.arrival = arrival(args)?;
    s.stop = StopRule {
        duration: match (args.duration, args.requests) {
            // A replay runs until its last request.
            (None, None) if args.replay.is_some() => None,
            (None, None) => Some(
                s.arrival
                    .rate_program()
                    .and_then(|p| p.natural_length())
                    .unwrap_or(Duration::from_secs(10)),
            ),
            (d, _) => d,
        },
        requests: args.requests,
    };
    s.warmup = args.warmup.unwrap_or(Duration::ZERO);
    s.timeout = args.timeout;
    s.connect_timeout = args.connect_timeout;
    s.keepalive = !args.no_keepalive;
    s.verify = args.verify;
    s.expect_status = args.expect_status;
    s.mark_header = args.mark_header.clone();
    s.thresholds = args.thresholds.clone();
    let mode = if args.llm {
        let chat = ChatRequest {
            model: args.llm_model.clone(),
            prompt: args.llm_prompt.clone(),
            max_tokens: args.max_tokens,
        };
        s.method = "POST".into();
        // The caller's headers come last: one may replace Accept or add Authorization.
        let mut headers: Vec<String> = ChatRequest::headers().map(String::from).into();
        headers.append(&mut s.headers);
        s.headers = headers;
        s.body = RequestBody::Inline(chat.body());
        Some(StreamMode::Llm)
    } else {
        args.stream.map(|m| match m {
            StreamModeArg::Sse => StreamMode::Sse,
            StreamModeArg::Llm => StreamMode::Llm,
            StreamModeArg::Chunks => StreamMode::Chunks,
        })
    };
    s.stream = mode.map(|mode| StreamSpec {
        mode,
        stall: args.stall,
    });
    let https = args
        .url
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("https://");
    if args.http2 && !https {
        anyhow::bail!("--http2 negotiates HTTP/2 over TLS and needs an https:// URL; use --h2c for cleartext HTTP/2");
    }
    if args.h2c && https {
        anyhow::bail!("--h2c is cleartext HTTP/2 and needs an http:// URL; use --http2 for HTTPS");
    }
    s.protocol = if args.http2 || args.h2c {
        Protocol::Http2
    } else {
        Protocol::Http1
    };
    s.streams = args.streams;
    s.tls = TlsOptions {
        insecure: args.insecure,
        cacert: args.cacert.clone(),
        sni: args.sni.clone(),
        no_resume: args.no_tls_resume,
    };
    if let Some((index, count)) = args.shard {
        apply_shard(&mut s, args, index, count)?;
    }
    Ok(s)
}

/// `-R` and `--arrival`: a plain number is the constant rate (checked with the other options);
/// anything else is an arrival program.
fn arrival(args: &LoadArgs) -> Result<Arrival> {
    let Some(text) = args.rate.as_deref() else {
        return Ok(Arrival::Closed);
    };
    let rate = match text.trim().parse::<f64>() {
        Ok(rate) if args.arrival == ArrivalSpacing::Even => return Ok(Arrival::Open { rate }),
        Ok(rate) => RateProgram::Constant(rate),
        Err(_) => text
            .parse::<RateProgram>()
            .map_err(|e| anyhow::anyhow!("-R/--rate '{}': {e}", text.trim()))?,
    };
    let spacing = match args.arrival {
        ArrivalSpacing::Even => Spacing::Even,
        ArrivalSpacing::Poisson => Spacing::Poisson {
            seed: args.seed.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64)
            }),
        },
    };
    Ok(Arrival::Program(ArrivalProgram { rate, spacing }))
}

fn banner(c: &LoadConfig, shard: Option<&ShardInfo>) -> String {
    let stop = match (c.stop.duration, c.stop.requests) {
        (Some(d), Some(n)) => format!("{} or {n} requests", humantime::format_duration(d)),
        (Some(d), None) => humantime::format_duration(d).to_string(),
        (None, Some(n)) => format!("{n} requests"),
        (None, None) => "to the end of the replay".to_owned(),
    };
    let model = match &c.arrival {
        Arrival::Closed => "closed model".to_owned(),
        Arrival::Open { rate } => format!("open model at {rate} req/s"),
        Arrival::Program(p) => format!(
            "open model, rate {}{}",
            match &p.rate {
                RateProgram::Constant(r) => format!("{r} req/s"),
                other => other.to_string(),
            },
            match p.spacing {
                Spacing::Even => "",
                Spacing::Poisson { .. } => ", Poisson arrivals",
            }
        ),
        Arrival::Replay(r) => format!(
            "replay of {} requests over {:.1}s at speed {}",
            r.len(),
            r.span_s(),
            r.speed
        ),
    };
    let model = match c.requests.classes() {
        [] => model,
        classes if matches!(c.arrival, Arrival::Replay(_)) => {
            format!("{model}, {} classes", classes.len())
        }
        classes => format!("{model}, a mix of {} requests", classes.len()),
    };
    let warm = if c.warmup.is_zero() {
        String::new()
    } else {
        format!(" after {} warm-up", humantime::format_duration(c.warmup))
    };
    let streams = if c.streams > 1 {
        format!(" × {} streams", c.streams)
    } else {
        String::new()
    };
    let shard = shard.map_or(String::new(), |s| {
        format!(
            "; shard {}/{} of -c {}{}",
            s.index,
            s.count,
            s.connections_total,
            match (&s.program_total, s.rate_total) {
                (Some(p), _) => format!(" -R {p}"),
                (None, Some(r)) => format!(" -R {r}"),
                (None, None) => String::new(),
            }
        )
    });
    format!(
        "Running {stop}{warm} @ {} ({model}, {}, {} connections{streams}, {} threads{shard})",
        c.target.url,
        c.protocol.name(c.target.tls),
        c.connections,
        c.threads
    )
}

pub(crate) fn create(path: &Path, flag: &str) -> Result<BufWriter<File>> {
    File::create(path)
        .map(BufWriter::new)
        .with_context(|| format!("cannot create {flag} file {}", path.display()))
}

enum Output {
    Stdout,
    File(BufWriter<File>),
}

/// `--json`'s destination, opened before any load (a typo in a path must not cost a run):
/// `None` without the flag. For the loads that write a record of their own (WebSocket, gRPC).
fn open_json(args: &LoadArgs) -> Result<Option<Output>> {
    Ok(match args.json.as_deref() {
        Some(p) if p == Path::new("-") => Some(Output::Stdout),
        Some(p) => Some(Output::File(create(p, "--json")?)),
        None => None,
    })
}

/// Prints a run's text report (on stderr when the record takes stdout) and writes its record.
fn report_and_record(
    text: &str,
    json_out: Option<Output>,
    record: impl FnOnce() -> Result<String>,
) -> Result<()> {
    match json_out {
        Some(Output::Stdout) => eprint!("{text}"),
        _ => print!("{text}"),
    }
    if let Some(mut sink) = json_out {
        sink.write_line(&record()?)
            .context("writing the JSON record")?;
    }
    Ok(())
}

impl Output {
    fn write_line(&mut self, s: &str) -> std::io::Result<()> {
        match self {
            Output::Stdout => {
                let mut o = std::io::stdout().lock();
                writeln!(o, "{s}")?;
                o.flush()
            }
            Output::File(f) => {
                writeln!(f, "{s}")?;
                f.flush()
            }
        }
    }
}

/// Says on stderr what went wrong with a run's remote-write pushes, if anything did.
pub(crate) fn say_remote_write(stats: &gatebench_loadgen::metrics::RemoteWriteStats) {
    if stats.failed == 0 && stats.dropped == 0 && !stats.unfinished {
        return;
    }
    eprintln!(
        "gatebench: --remote-write: {} of {} pushes failed{}{}",
        stats.failed,
        stats.failed + stats.pushed,
        if stats.dropped > 0 {
            format!(
                ", {} copies of the figures dropped (queue full)",
                stats.dropped
            )
        } else {
            String::new()
        },
        if stats.unfinished {
            "; the last push had not finished after 15 s"
        } else {
            ""
        }
    );
}

/// The live panel, erased from the terminal when dropped (the run's end or an error).
struct PanelOnStderr(Panel);

impl Drop for PanelOnStderr {
    fn drop(&mut self) {
        self.0.clear(&mut std::io::stderr().lock());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_file_gives_its_lines_and_names_a_bad_one() {
        let dir = std::env::temp_dir().join(format!("gatebench-hf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("h.txt");
        std::fs::write(
            &f,
            "# credentials\nAuthorization: Bearer t\r\n\nX-Tenant: 7\n",
        )
        .unwrap();
        assert_eq!(
            read_header_file(&f).unwrap(),
            ["Authorization: Bearer t", "X-Tenant: 7"]
        );
        std::fs::write(&f, "X-Ok: 1\nnot a header\n").unwrap();
        let e = read_header_file(&f).unwrap_err().to_string();
        assert!(
            e.ends_with("h.txt:2: not a header line (write Name: value)"),
            "{e}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
