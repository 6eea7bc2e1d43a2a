//! `gatebench load ws://…`: the WebSocket load. Rule: the flags that mean the same for a
//! WebSocket run (`-c`, `-d`, `-t`, `--timeout`, `--no-probe`, `-q`, `--json`, the TLS ones
//! for `wss://`; `-R` and `-n` as connection opens: a connection's handshake is its request)
//! are taken, the `--ws-*` ones added; any other flag that shapes HTTP requests or outputs is refused in one
//! line rather than silently ignored. The probe (one handshake) runs before the load, and a
//! refused handshake is one line and exit 2.

use std::process::ExitCode;
use std::time::Duration;

use std::time::SystemTime;

use anyhow::{Context, Result};
use gatebench_loadgen::tls::TlsOptions;
use gatebench_loadgen::ws::{self, WsConfig};

use super::LoadArgs;

/// True for a `ws://` or `wss://` URL.
pub(super) fn is_ws(url: &str) -> bool {
    let lower = url.get(..6).unwrap_or(url).to_ascii_lowercase();
    lower.starts_with("ws://") || lower.starts_with("wss://")
}

/// The HTTP-only flags given, by name.
fn http_only(args: &LoadArgs) -> Option<&'static str> {
    [
        (args.hlog.is_some(), "--hlog"),
        (args.stream.is_some(), "--stream"),
        (args.llm, "--llm"),
        (args.mix.is_some(), "--mix"),
        (args.replay.is_some(), "--replay"),
        (args.metrics.is_some(), "--metrics"),
        (args.shard.is_some(), "--shard"),
    ]
    .into_iter()
    .find_map(|(given, name)| given.then_some(name))
}

fn config(args: &LoadArgs) -> Result<WsConfig> {
    if let Some(flag) = http_only(args) {
        anyhow::bail!("{flag} is not supported with a ws:// target yet");
    }
    let target = WsConfig::parse_url(&args.url)?;
    if args.http2 && !target.tls {
        anyhow::bail!(
            "--http2 (WebSocket over HTTP/2, ALPN h2) needs a wss:// URL; use --h2c for ws://"
        );
    }
    if args.h2c && target.tls {
        anyhow::bail!(
            "--h2c (WebSocket over cleartext HTTP/2) needs a ws:// URL; use --http2 for wss://"
        );
    }
    let tls_given = args.insecure || args.cacert.is_some() || args.sni.is_some();
    if !target.tls && (tls_given || args.no_tls_resume) {
        anyhow::bail!(
            "TLS options (--insecure, --cacert, --sni, --no-tls-resume) need a wss:// URL"
        );
    }
    let connect_rate = match args.rate.as_deref() {
        None => None,
        Some(r) => Some(r.trim().parse::<f64>().map_err(|_| {
            anyhow::anyhow!(
                "-R {r}: a WebSocket load takes a plain rate of connection opens per second (no arrival program)"
            )
        })?),
    };
    if args.requests.is_some() && args.duration.is_none() && args.ws_messages.is_none() {
        anyhow::bail!(
            "-n without -d needs --ws-messages: a connection without a message count ends only with the run"
        );
    }
    // -n alone runs until its connections are done (bounded as an HTTP run's -d is).
    let duration = match (args.duration, args.requests) {
        (Some(d), _) => d,
        (None, Some(_)) => Duration::from_secs(100 * 24 * 3600),
        (None, None) => Duration::from_secs(10),
    };
    let config = WsConfig {
        url: args.url.clone(),
        addr: target.addr,
        authority: target.authority,
        path: target.path,
        host: target.host,
        tls: target.tls.then(|| TlsOptions {
            insecure: args.insecure,
            cacert: args.cacert.clone(),
            sni: args.sni.clone(),
            no_resume: args.no_tls_resume,
        }),
        http2: args.http2 || args.h2c,
        connections: args.connections,
        duration,
        size: args.ws_size,
        binary: args.ws_binary,
        rate: args.ws_rate,
        messages: args.ws_messages,
        connect_rate,
        total: args.requests,
        timeout: args.timeout,
        threads: args.threads.map_or_else(
            || std::thread::available_parallelism().map_or(1, |n| n.get()),
            |t| t as usize,
        ),
        thresholds: args.thresholds.clone(),
    };
    config.validate()?;
    Ok(config)
}

/// Runs the WebSocket load and prints its report.
pub(super) fn run(args: &LoadArgs) -> Result<ExitCode> {
    let config = config(args)?;
    gatebench_loadgen::limits::ensure_fd_limit(u64::from(config.connections))?;
    let json_out = super::open_json(args)?;
    if !args.no_probe {
        ws::probe(&config)?;
    }
    let model = match config.rate {
        Some(r) => format!("{r} messages/s per connection"),
        None => "one message in flight per connection".to_owned(),
    };
    let opens = match (config.connect_rate, config.total) {
        (Some(r), Some(n)) => format!(
            "{n} connections opened at {r}/s, at most {} at once",
            config.connections
        ),
        (Some(r), None) => format!(
            "connections opened at {r}/s, at most {} at once",
            config.connections
        ),
        (None, Some(n)) => format!("{n} connections, {} at a time", config.connections),
        (None, None) => format!("{} connections", config.connections),
    };
    let per = config
        .messages
        .map_or_else(String::new, |m| format!(", {m} each"));
    let span = if args.duration.is_none() && args.requests.is_some() {
        String::new()
    } else {
        format!("{:?} ", config.duration)
    };
    eprintln!(
        "Running {span}WebSocket @ {} ({opens}, {model}, {} B {} messages{per})",
        config.url,
        config.size,
        if config.binary { "binary" } else { "text" },
    );
    let started = SystemTime::now();
    let out = ws::run(&config)?;
    let text = gatebench_report::ws_text::render(&out.report);
    super::report_and_record(&text, json_out, || {
        let record = config.record(started, out.report.clone());
        serde_json::to_string_pretty(&record).context("encoding the JSON record")
    })?;
    if let Some(why) = out.refusal {
        eprintln!("gatebench: handshakes refused during the load, the first: {why}");
    }
    Ok(super::threshold_exit(&out.report.thresholds))
}
