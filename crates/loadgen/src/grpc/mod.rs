//! gRPC load (`gatebench load grpc://host:port/pkg.Service/Method`, `grpcs://` over TLS).
//! Rule: a run of its own beside the HTTP one, sharing its histograms and its words for
//! classes: `-c` HTTP/2 connections; calls started at a set rate (open model, `-R`: each call
//! counts from its intended start) or `--streams` calls in flight per connection (closed
//! model); each call of one kind ([`CallKind`]), its messages on a schedule of their own
//! (`call`). Every call ends in one class: its gRPC status by name, or what ended it below
//! gRPC. As in the HTTP load (`schedule.rs`), a call or message the generator reaches before
//! its time waits for it and counts from when it actually went (the timer's lateness is the
//! generator's, not the server's); one the generator reaches late (a backlog behind a slow
//! server) counts from when it was due.
//!
//! HTTP/2 is spoken by the h2 crate's client, not by the generator's own HTTP/2 client (which
//! is built for request and response, whole): a call is a stream whose request and response
//! both carry messages over time and whose answer is in trailers, which h2 gives as they are.
//!
//! The calls of a run are all followed to their end, so a run lasts its duration plus its
//! slowest call's tail (bounded by `--timeout`, the longest silence within a call, and the
//! deadline). Streams sent by the client stop at the run's end: a message whose time falls
//! after it is not sent, and the client half-closes.

mod call;
pub mod proto;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use gatebench_model::grpc::GrpcReport;
use gatebench_model::histogram::{new_histogram, summarize, LatencyHistogram};
use http::header::{HeaderName, HeaderValue};
use tokio::time::Instant;

use crate::connect::Transport;
use crate::error::LoadgenError;
use crate::tls::TlsOptions;

/// The four kinds of gRPC call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    /// One message each way.
    Unary,
    /// One message sent, a stream of replies.
    ServerStream,
    /// A stream of messages sent, one reply.
    ClientStream,
    /// Both ways at once: each message's reply is matched to it in order.
    Bidi,
}

impl CallKind {
    /// The name used in records: `unary`, `server_stream`, `client_stream`, `bidi`.
    pub fn name(self) -> &'static str {
        match self {
            CallKind::Unary => "unary",
            CallKind::ServerStream => "server_stream",
            CallKind::ClientStream => "client_stream",
            CallKind::Bidi => "bidi",
        }
    }

    /// The client sends a stream.
    fn client_streams(self) -> bool {
        matches!(self, CallKind::ClientStream | CallKind::Bidi)
    }
}

/// A gRPC run's settings.
#[derive(Clone, Debug)]
pub struct GrpcConfig {
    /// The URL as given.
    pub url: String,
    /// Where connections go.
    pub addr: SocketAddr,
    /// `:authority`.
    pub authority: String,
    /// The method's path, `/pkg.Service/Method`.
    pub path: String,
    /// The host name, for TLS's server name.
    pub host: String,
    /// `grpcs://`: TLS (ALPN h2) with these options; `None` for `grpc://` (h2c).
    pub tls: Option<TlsOptions>,
    /// The kind of call.
    pub kind: CallKind,
    /// Each request message's bytes (an encoded protobuf message, or any bytes).
    pub message: Bytes,
    /// Messages per call: sent (client and bidirectional streams), or asked of the echo with
    /// `x-gatebench-count` (server streams). Unary calls send one.
    pub messages: u64,
    /// Messages per second within a stream (sent, or asked of the echo as an interval);
    /// `None`: back to back (bidirectional: the next when the last one's reply arrives).
    pub message_rate: Option<f64>,
    /// HTTP/2 connections.
    pub connections: u32,
    /// Closed model: calls in flight per connection.
    pub concurrency: u32,
    /// Open model: calls started per second.
    pub rate: Option<f64>,
    /// How long calls are started.
    pub duration: Duration,
    /// At most this many calls.
    pub calls: Option<u64>,
    /// Sent as `grpc-timeout` and kept: a call still open after it ends `deadline_exceeded`.
    pub deadline: Option<Duration>,
    /// Request metadata, after gatebench's own fields.
    pub metadata: Vec<(HeaderName, HeaderValue)>,
    /// Longest silence from the server within a call (and the connect timeout).
    pub timeout: Duration,
    /// Largest reply message accepted.
    pub max_message: usize,
    /// Runtime threads.
    pub threads: usize,
    /// Judged on the whole run's calls (the `ok` calls' latency, the share not `ok`, `ok`
    /// calls per second; the open model's rate is the target).
    pub thresholds: Vec<crate::threshold::Threshold>,
}

/// Largest request message (16 MiB, the echo's largest body).
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;
/// Most messages per call.
pub const MAX_MESSAGES: u64 = 10_000_000;

/// Where a gRPC URL points.
#[derive(Clone, Debug)]
pub struct GrpcTarget {
    /// Where connections go.
    pub addr: SocketAddr,
    /// `:authority`.
    pub authority: String,
    /// `/pkg.Service/Method`.
    pub path: String,
    /// The host name.
    pub host: String,
    /// `grpcs://`.
    pub tls: bool,
}

/// True for a `grpc://` or `grpcs://` URL.
pub fn is_grpc_url(url: &str) -> bool {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    lower.starts_with("grpc://") || lower.starts_with("grpcs://")
}

/// A gRPC message of type `gatebench.echo.v1.Payload` whose `body` is `size` bytes: the
/// message a raw load sends (`proto/gatebench/echo/v1/echo.proto`), valid for any schema
/// that has no field 1 or a bytes field 1.
pub fn payload_message(size: usize) -> Bytes {
    let mut out = Vec::with_capacity(size + 6);
    if size > 0 {
        out.push(0x0a); // field 1, length-delimited
        let mut n = size as u64;
        while n >= 0x80 {
            out.push((n as u8) | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
        out.extend(std::iter::repeat_n(b'x', size));
    }
    out.into()
}

impl GrpcConfig {
    /// Parses `grpc://host[:port]/pkg.Service/Method` or `grpcs://…`.
    pub fn parse_url(url: &str) -> Result<GrpcTarget, LoadgenError> {
        let bad = |why: &str| LoadgenError::config(format!("invalid URL `{url}`: {why}"));
        let uri: http::Uri = url.parse().map_err(|e| bad(&format!("{e}")))?;
        let tls = match uri.scheme_str().map(str::to_ascii_lowercase).as_deref() {
            Some("grpc") => false,
            Some("grpcs") => true,
            _ => return Err(bad("the scheme must be grpc:// or grpcs://")),
        };
        let path = uri.path();
        let method_ok = path
            .strip_prefix('/')
            .and_then(|p| p.split_once('/'))
            .is_some_and(|(service, method)| {
                !service.is_empty() && !method.is_empty() && !method.contains('/')
            });
        if !method_ok || uri.query().is_some() {
            return Err(bad(
                "the path must name the method, /package.Service/Method (e.g. /gatebench.echo.v1.Echo/Unary)",
            ));
        }
        let end = crate::target::endpoint(&uri, tls, bad)?;
        Ok(GrpcTarget {
            addr: end.addr,
            authority: end.authority,
            path: path.to_owned(),
            host: end.host,
            tls,
        })
    }

    /// The JSON record of a run of this configuration that started at `started`
    /// (`schema/grpc-report.schema.json`).
    pub fn record(
        &self,
        started: std::time::SystemTime,
        report: GrpcReport,
    ) -> gatebench_model::grpc::GrpcRecord {
        use gatebench_model::grpc::{GrpcConfig as Settings, GrpcRecord, GRPC_SCHEMA_VERSION};
        GrpcRecord {
            schema_version: GRPC_SCHEMA_VERSION,
            kind: "grpc".into(),
            tool: gatebench_model::ToolInfo {
                name: "gatebench".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            started_at_unix_ms: started
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            config: Settings {
                url: self.url.clone(),
                tls: self.tls.is_some(),
                call_kind: self.kind.name().to_owned(),
                connections: self.connections,
                concurrency: self.concurrency,
                rate: self.rate,
                duration_s: self.duration.as_secs_f64(),
                calls: self.calls,
                message_bytes: self.message.len() as u64,
                messages_per_call: self.messages,
                message_rate: self.message_rate,
                deadline_s: self.deadline.map(|d| d.as_secs_f64()),
                timeout_s: self.timeout.as_secs_f64(),
                threads: self.threads as u32,
            },
            grpc: report,
        }
    }

    /// How connections reach the target: TCP (h2c), or TLS offering only h2.
    pub(crate) fn transport(&self) -> Result<Transport, LoadgenError> {
        match &self.tls {
            None => Ok(Transport::Tcp),
            Some(opts) => Ok(Transport::Tls(crate::tls::client(
                opts,
                &self.host,
                &[b"h2"],
            )?)),
        }
    }

    /// Checks the settings: one line for the first that is wrong.
    pub fn validate(&self) -> Result<(), LoadgenError> {
        crate::threshold::refuse_windows(&self.thresholds, "a gRPC load")?;
        let bad = |why: String| Err(LoadgenError::config(why));
        if self.connections == 0 || self.concurrency == 0 {
            return bad("-c and --streams must be at least 1".into());
        }
        if self.message.len() > MAX_MESSAGE {
            return bad(format!(
                "a gRPC message must be at most {MAX_MESSAGE} bytes"
            ));
        }
        if self.messages == 0 || self.messages > MAX_MESSAGES {
            return bad(format!("--grpc-messages must be 1 to {MAX_MESSAGES}"));
        }
        if self
            .message_rate
            .is_some_and(|r| !(r.is_finite() && r > 0.0 && r <= 1e6))
        {
            return bad("--grpc-message-rate must be above 0 and at most 1000000".into());
        }
        if self
            .rate
            .is_some_and(|r| !(r.is_finite() && r > 0.0 && r <= 1e7))
        {
            return bad("-R must be above 0 and at most 10000000 calls/s for a gRPC load".into());
        }
        if self.duration.is_zero() || self.timeout.is_zero() {
            return bad("-d and --timeout must be above zero".into());
        }
        if self.calls == Some(0) {
            return bad("-n must be at least 1".into());
        }
        if self.deadline.is_some_and(|d| d.is_zero()) {
            return bad("--grpc-deadline must be above zero".into());
        }
        Ok(())
    }
}

/// What calls counted; merged into the run's figures.
#[derive(Debug)]
pub(crate) struct Stats {
    opened: u64,
    failed: u64,
    started: u64,
    calls: BTreeMap<&'static str, u64>,
    http_statuses: BTreeMap<u16, u64>,
    call_latency: LatencyHistogram,
    first_message: LatencyHistogram,
    message_latency: LatencyHistogram,
    message_gap: LatencyHistogram,
    sent: u64,
    received: u64,
    messages: BTreeMap<&'static str, u64>,
    /// The first failure's words, for the probe.
    first_failure: Option<String>,
}

impl Stats {
    fn new() -> Self {
        Stats {
            opened: 0,
            failed: 0,
            started: 0,
            calls: BTreeMap::new(),
            http_statuses: BTreeMap::new(),
            call_latency: new_histogram(),
            first_message: new_histogram(),
            message_latency: new_histogram(),
            message_gap: new_histogram(),
            sent: 0,
            received: 0,
            messages: BTreeMap::new(),
            first_failure: None,
        }
    }
}

/// The connections of a run, each reopened when it breaks, and the figures.
pub(crate) struct Shared {
    config: GrpcConfig,
    transport: Transport,
    conns: Vec<tokio::sync::Mutex<Option<h2::client::SendRequest<Bytes>>>>,
    stats: Vec<Mutex<Stats>>,
    /// The request's head, built once (`{scheme}://{authority}{path}` and the fields).
    uri: http::Uri,
}

/// A gRPC run's result.
#[derive(Debug)]
pub struct GrpcOutput {
    /// The figures.
    pub report: GrpcReport,
    /// The first call that did not end `ok`, in words.
    pub first_failure: Option<String>,
}

fn runtime(threads: usize) -> Result<tokio::runtime::Runtime, LoadgenError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
        .map_err(|e| LoadgenError::Worker(format!("cannot start the runtime: {e}")))
}

impl Shared {
    fn new(config: &GrpcConfig) -> Result<Arc<Shared>, LoadgenError> {
        let transport = config.transport()?;
        let scheme = if config.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let uri = format!("{scheme}://{}{}", config.authority, config.path)
            .parse()
            .map_err(|e| LoadgenError::config(format!("invalid URL `{}`: {e}", config.url)))?;
        Ok(Arc::new(Shared {
            config: config.clone(),
            transport,
            conns: (0..config.connections)
                .map(|_| tokio::sync::Mutex::new(None))
                .collect(),
            stats: (0..config.connections)
                .map(|_| Mutex::new(Stats::new()))
                .collect(),
            uri,
        }))
    }

    fn stats(&self, conn: usize) -> std::sync::MutexGuard<'_, Stats> {
        self.stats[conn]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn merged(&self) -> Stats {
        let mut total = Stats::new();
        for s in &self.stats {
            let s = s.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            total.opened += s.opened;
            total.failed += s.failed;
            total.started += s.started;
            for (k, v) in &s.calls {
                *total.calls.entry(k).or_default() += v;
            }
            for (k, v) in &s.http_statuses {
                *total.http_statuses.entry(*k).or_default() += v;
            }
            for (into, from) in [
                (&mut total.call_latency, &s.call_latency),
                (&mut total.first_message, &s.first_message),
                (&mut total.message_latency, &s.message_latency),
                (&mut total.message_gap, &s.message_gap),
            ] {
                let _ = into.add(from);
            }
            total.sent += s.sent;
            total.received += s.received;
            for (k, v) in &s.messages {
                *total.messages.entry(k).or_default() += v;
            }
            if total.first_failure.is_none() {
                total.first_failure.clone_from(&s.first_failure);
            }
        }
        total
    }
}

/// Makes one call first, of the run's kind with one message: `Err` with one line when the target cannot be reached or does not
/// answer as a gRPC server (a connection, TLS or HTTP/2 failure, a response that is not gRPC,
/// silence), before any load. A call answered with a gRPC status other than `ok` (a method
/// that does not exist, a refusal) is what the load measures: `Ok` with that status in words,
/// and the load goes on.
pub fn probe(config: &GrpcConfig) -> Result<Option<String>, LoadgenError> {
    let mut once = config.clone();
    once.connections = 1;
    once.concurrency = 1;
    // One message each way, however long the run's streams are.
    once.messages = 1;
    once.message_rate = None;
    let shared = Shared::new(&once)?;
    runtime(1)?.block_on(async {
        let end = Instant::now() + once.timeout.max(Duration::from_secs(1));
        call::call(&shared, 0, Instant::now(), end).await;
    });
    let stats = shared.merged();
    if stats.calls.get("ok") == Some(&1) {
        return Ok(None);
    }
    let why = stats
        .first_failure
        .unwrap_or_else(|| "no answer".to_owned());
    let answered = stats
        .calls
        .keys()
        .any(|class| gatebench_grpc::Code::ALL.iter().any(|c| c.name() == *class));
    if answered {
        return Ok(Some(format!("the probe call ended {why}")));
    }
    Err(LoadgenError::config(format!(
        "{}: the probe call failed: {why}",
        config.url
    )))
}

/// Runs the load: calls for `duration` (or `calls` of them), each followed to its end, then the
/// figures.
pub fn run(config: &GrpcConfig) -> Result<GrpcOutput, LoadgenError> {
    config.validate()?;
    let shared = Shared::new(config)?;
    let watch = crate::selfcheck::RunWatch::start(config.threads);
    // Open model: how late each call started against its due time, by the generator's doing.
    let send_lag = Arc::new(std::sync::Mutex::new(crate::stats::new_histogram()));
    let started = std::time::Instant::now();
    runtime(config.threads)?.block_on(async {
        let start = Instant::now();
        let end = start + config.duration;
        let mut tasks = Vec::new();
        match config.rate {
            Some(rate) => {
                // Open model: call i is due at start + i / rate, on connection i mod c.
                let shared = shared.clone();
                let send_lag = send_lag.clone();
                tasks.push(tokio::spawn(async move {
                    let mut calls = tokio::task::JoinSet::new();
                    let mut i: u64 = 0;
                    loop {
                        if shared.config.calls.is_some_and(|n| i >= n) {
                            break;
                        }
                        let due = start + Duration::from_secs_f64(i as f64 / rate);
                        if due >= end {
                            break;
                        }
                        let from = call::wait_until(due).await;
                        crate::stats::record(
                            &mut send_lag
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner),
                            Instant::now().saturating_duration_since(due),
                        );
                        let conn = (i % u64::from(shared.config.connections)) as usize;
                        let s = shared.clone();
                        calls.spawn(async move { call::call(&s, conn, from, end).await });
                        i += 1;
                        while calls.try_join_next().is_some() {}
                    }
                    while calls.join_next().await.is_some() {}
                }));
            }
            None => {
                // Closed model: --streams loops per connection, each starting its next call
                // when the last one ends.
                let budget = config
                    .calls
                    .map(|n| Arc::new(std::sync::atomic::AtomicU64::new(n)));
                for conn in 0..config.connections as usize {
                    for _ in 0..config.concurrency {
                        let s = shared.clone();
                        let budget = budget.clone();
                        tasks.push(tokio::spawn(async move {
                            loop {
                                let now = Instant::now();
                                if now >= end {
                                    break;
                                }
                                if let Some(b) = &budget {
                                    let taken = b.fetch_update(
                                        std::sync::atomic::Ordering::Relaxed,
                                        std::sync::atomic::Ordering::Relaxed,
                                        |left| left.checked_sub(1),
                                    );
                                    if taken.is_err() {
                                        break;
                                    }
                                }
                                call::call(&s, conn, now, end).await;
                            }
                        }));
                    }
                }
            }
        }
        for t in tasks {
            t.await
                .map_err(|e| LoadgenError::Worker(format!("a call task failed: {e}")))?;
        }
        Ok::<(), LoadgenError>(())
    })?;
    let duration_s = started.elapsed().as_secs_f64().max(1e-9);
    let lag = send_lag
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let self_check = watch.finish(config.rate.is_some().then_some(&lag));
    let total = shared.merged();
    let ok = total.calls.get("ok").copied().unwrap_or(0);
    let mut output = GrpcOutput {
        report: GrpcReport {
            duration_s,
            connections_opened: total.opened,
            connections_failed: total.failed,
            calls_started: total.started,
            calls: total
                .calls
                .iter()
                .map(|(k, v)| ((*k).to_owned(), *v))
                .collect(),
            http_statuses: total
                .http_statuses
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            calls_per_s: ok as f64 / duration_s,
            call_latency: summarize(&total.call_latency),
            first_message_latency: summarize(&total.first_message),
            message_latency: summarize(&total.message_latency),
            message_gap: summarize(&total.message_gap),
            messages_sent: total.sent,
            messages_received: total.received,
            messages_per_s: total.received as f64 / duration_s,
            messages: total
                .messages
                .iter()
                .map(|(k, v)| ((*k).to_owned(), *v))
                .collect(),
            self_check: Some(self_check),
            thresholds: Vec::new(),
        },
        first_failure: total.first_failure,
    };
    let r = &output.report;
    output.report.thresholds = crate::threshold::judge_whole(
        &config.thresholds,
        &r.call_latency,
        r.error_percent(),
        r.calls_per_s,
        config.rate,
    );
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_method() {
        let t =
            GrpcConfig::parse_url("grpc://127.0.0.1:50051/gatebench.echo.v1.Echo/Unary").unwrap();
        assert_eq!(t.path, "/gatebench.echo.v1.Echo/Unary");
        assert!(!t.tls);
        assert_eq!(t.addr.port(), 50051);
        assert!(
            GrpcConfig::parse_url("grpcs://localhost/a.B/C")
                .unwrap()
                .tls
        );
        for bad in [
            "grpc://127.0.0.1:1/",
            "grpc://127.0.0.1:1/a.B",
            "grpc://127.0.0.1:1/a.B/C/D",
            "grpc://127.0.0.1:1/a.B/C?x=1",
            "http://127.0.0.1:1/a.B/C",
            "grpc://u@127.0.0.1:1/a.B/C",
        ] {
            assert!(GrpcConfig::parse_url(bad).is_err(), "{bad}");
        }
        assert!(is_grpc_url("GRPC://x/a.B/C"));
        assert!(!is_grpc_url("http://x/"));
    }

    #[test]
    fn a_raw_payload_is_a_payload_message_of_that_body() {
        assert!(payload_message(0).is_empty());
        let m = payload_message(5);
        assert_eq!(&m[..], b"\x0a\x05xxxxx");
        let m = payload_message(300);
        assert_eq!(&m[..3], &[0x0a, 0xac, 0x02]);
        assert_eq!(m.len(), 303);
    }
}
