//! `gatebench load grpc://…`: the gRPC load. Rule: the flags that mean the same for a gRPC run
//! (`-c`, `--streams`, `-R` as a plain rate, `-d`, `-n`, `-H` as metadata, `-t`, `--timeout`,
//! `--no-probe`, `-q`, `--json`, the TLS ones for `grpcs://`) are taken, the `--grpc-*` ones
//! added; any other flag that shapes HTTP requests or outputs is refused in one line rather
//! than silently ignored. The probe (one call) runs before the load: a target that cannot be
//! reached or is not a gRPC server is one line and exit 2; a gRPC status other than `ok` (an
//! unknown method's `unimplemented`) is said in one line and the load goes on, counting it.

use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use gatebench_loadgen::grpc::{self, CallKind, GrpcConfig};
use gatebench_loadgen::tls::TlsOptions;
use http::header::{HeaderName, HeaderValue};

use super::args::GrpcKindArg;
use super::LoadArgs;

/// The flags of other kinds of load given, by name.
fn foreign(args: &LoadArgs) -> Option<&'static str> {
    [
        (args.hlog.is_some(), "--hlog"),
        (args.warmup.is_some(), "--warmup"),
        (args.method != "GET", "-m"),
        (args.body.is_some(), "--body"),
        (args.body_file.is_some(), "--body-file"),
        (args.payload_size.is_some(), "--payload-size"),
        (args.verify, "--verify"),
        (args.http2, "--http2"),
        (args.h2c, "--h2c"),
        (args.stream.is_some(), "--stream"),
        (args.llm, "--llm"),
        (args.mix.is_some(), "--mix"),
        (args.replay.is_some(), "--replay"),
        (args.metrics.is_some(), "--metrics"),
        (args.remote_write.is_some(), "--remote-write"),
        (args.shard.is_some(), "--shard"),
        (args.mark_header.is_some(), "--mark-header"),
        (args.find_max, "--find-max"),
    ]
    .into_iter()
    .find_map(|(given, name)| given.then_some(name))
}

/// The `--grpc-*` flags given, by name (refused for other targets).
pub(super) fn grpc_flag(args: &LoadArgs) -> Option<&'static str> {
    [
        (args.grpc_kind.is_some(), "--grpc-kind"),
        (args.grpc_size.is_some(), "--grpc-size"),
        (args.grpc_message_file.is_some(), "--grpc-message-file"),
        (args.grpc_proto_set.is_some(), "--grpc-proto-set"),
        (args.grpc_proto.is_some(), "--grpc-proto"),
        (!args.grpc_import_path.is_empty(), "--grpc-import-path"),
        (args.grpc_json.is_some(), "--grpc-json"),
        (args.grpc_messages.is_some(), "--grpc-messages"),
        (args.grpc_message_rate.is_some(), "--grpc-message-rate"),
        (args.grpc_deadline.is_some(), "--grpc-deadline"),
    ]
    .into_iter()
    .find_map(|(given, name)| given.then_some(name))
}

/// Fields a call's metadata may not set: gRPC's own, and HTTP/2's connection-specific ones.
const RESERVED: [&str; 9] = [
    "content-type",
    "te",
    "grpc-timeout",
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

fn metadata(args: &LoadArgs) -> Result<Vec<(HeaderName, HeaderValue)>> {
    let mut lines = args.headers.clone();
    if let Some(path) = &args.header_file {
        lines.extend(super::read_header_file(path)?);
    }
    lines
        .iter()
        .map(|line| {
            let (name, value) = gatebench_loadgen::request::parse_header(line)?;
            let name = HeaderName::from_bytes(name.as_bytes())
                .with_context(|| format!("invalid header `{line}`"))?;
            if RESERVED.contains(&name.as_str()) {
                anyhow::bail!(
                    "-H {name}: gatebench sets it for gRPC calls (the deadline is --grpc-deadline)"
                );
            }
            let value = HeaderValue::from_str(&value)
                .with_context(|| format!("invalid header value in `{line}`"))?;
            Ok((name, value))
        })
        .collect()
}

fn config(args: &LoadArgs) -> Result<GrpcConfig> {
    if let Some(flag) = foreign(args) {
        anyhow::bail!("{flag} is not supported with a grpc:// target");
    }
    let target = GrpcConfig::parse_url(&args.url)?;
    let tls_given = args.insecure || args.cacert.is_some() || args.sni.is_some();
    if !target.tls && (tls_given || args.no_tls_resume) {
        anyhow::bail!(
            "TLS options (--insecure, --cacert, --sni, --no-tls-resume) need a grpcs:// URL"
        );
    }
    let rate = match args.rate.as_deref() {
        None => None,
        Some(r) => Some(r.trim().parse::<f64>().map_err(|_| {
            anyhow::anyhow!(
                "-R {r}: a gRPC load takes a plain rate in calls/s (no arrival program)"
            )
        })?),
    };
    // The kind the descriptor says, when the message comes through one.
    let mut described = None;
    // A descriptor set, as given or compiled from a .proto file, and its name for messages.
    let schema = match (&args.grpc_proto_set, &args.grpc_proto) {
        (Some(path), _) => Some((
            std::fs::read(path).with_context(|| format!("--grpc-proto-set {}", path.display()))?,
            path.display().to_string(),
        )),
        (None, Some(path)) => Some((
            grpc::proto::compile_proto(path, &args.grpc_import_path)?,
            path.display().to_string(),
        )),
        (None, None) => None,
    };
    if schema.is_none() && args.grpc_json.is_some() {
        anyhow::bail!(
            "--grpc-json needs the message's type: --grpc-proto-set FILE or --grpc-proto FILE"
        );
    }
    let message = match (&args.grpc_message_file, args.grpc_size) {
        _ if schema.is_some() => {
            let (set, name) = schema.as_ref().expect("checked");
            let encoded = grpc::proto::encode_json(
                set,
                name,
                &target.path,
                args.grpc_json.as_deref().unwrap_or("{}"),
            )?;
            described = Some(encoded.kind);
            encoded.message
        }
        (Some(path), _) => std::fs::read(path)
            .with_context(|| format!("--grpc-message-file {}", path.display()))?
            .into(),
        (None, size) => {
            let size = size.unwrap_or(64);
            if size > grpc::MAX_MESSAGE - 8 {
                anyhow::bail!(
                    "--grpc-size must be at most {} bytes",
                    grpc::MAX_MESSAGE - 8
                );
            }
            grpc::payload_message(size)
        }
    };
    let config = GrpcConfig {
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
        kind: call_kind(args.grpc_kind, described)?,
        message,
        messages: args.grpc_messages.unwrap_or(1),
        message_rate: args.grpc_message_rate,
        connections: args.connections,
        concurrency: args.streams,
        rate,
        duration: args.duration.unwrap_or(if args.requests.is_some() {
            // -n alone: the count decides, within a day.
            Duration::from_secs(86_400)
        } else {
            Duration::from_secs(10)
        }),
        calls: args.requests,
        deadline: args.grpc_deadline,
        metadata: metadata(args)?,
        timeout: args.timeout,
        max_message: grpc::MAX_MESSAGE,
        threads: args.threads.map_or_else(
            || std::thread::available_parallelism().map_or(1, |n| n.get()),
            |t| t as usize,
        ),
        thresholds: args.thresholds.clone(),
    };
    config.validate()?;
    Ok(config)
}

/// The kind of call: `--grpc-kind`, which must agree with the descriptor's method when there
/// is one; without either, unary.
fn call_kind(given: Option<GrpcKindArg>, described: Option<CallKind>) -> Result<CallKind> {
    let given = given.map(|k| match k {
        GrpcKindArg::Unary => CallKind::Unary,
        GrpcKindArg::ServerStream => CallKind::ServerStream,
        GrpcKindArg::ClientStream => CallKind::ClientStream,
        GrpcKindArg::Bidi => CallKind::Bidi,
    });
    match (given, described) {
        (Some(g), Some(d)) if g != d => anyhow::bail!(
            "--grpc-kind {} disagrees with the descriptor set, whose method is {}",
            g.name(),
            d.name()
        ),
        (g, d) => Ok(g.or(d).unwrap_or(CallKind::Unary)),
    }
}

/// Runs the gRPC load and prints its report.
pub(super) fn run(args: &LoadArgs) -> Result<ExitCode> {
    let config = config(args)?;
    gatebench_loadgen::limits::ensure_fd_limit(u64::from(config.connections))?;
    let json_out = super::open_json(args)?;
    if !args.no_probe {
        if let Some(status) = grpc::probe(&config)? {
            // Answered by a gRPC server: what the load measures, said before it.
            eprintln!("gatebench: {status}; the load goes on and counts it");
        }
    }
    let model = match config.rate {
        Some(r) => format!("{r} calls/s"),
        None => format!("{} calls in flight per connection", config.concurrency),
    };
    if !args.quiet {
        eprintln!(
            "Running {} gRPC {} calls @ {} ({} connections, {model}, {} B messages{})",
            config
                .calls
                .map_or_else(|| format!("{:?} of", config.duration), |n| format!("{n}")),
            config.kind.name(),
            config.url,
            config.connections,
            config.message.len(),
            if config.kind == CallKind::Unary {
                String::new()
            } else {
                format!(", {} per call", config.messages)
            },
        );
    }
    let started = SystemTime::now();
    let out = grpc::run(&config)?;
    let text = gatebench_report::grpc_text::render(&out.report);
    super::report_and_record(&text, json_out, || {
        let record = config.record(started, out.report.clone());
        serde_json::to_string_pretty(&record).context("encoding the JSON record")
    })?;
    if let Some(why) = out.first_failure {
        eprintln!("gatebench: calls failed during the load, the first: {why}");
    }
    Ok(super::threshold_exit(&out.report.thresholds))
}
