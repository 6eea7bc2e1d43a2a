//! WebSocket load (`gatebench load ws://host:port/path`). Rule: a run of its own beside the
//! HTTP one, sharing its histograms and classes' words: `-c` connections, each opened with a
//! timed handshake ([`handshake`]), then loaded with messages (`conn`) of a set size, text or
//! binary, on a fixed schedule per connection (`--ws-rate`) or one in flight at a time; the
//! round trip of each message counts from its intended send time. Frames are [`codec`]'s.
//! Connections are either held for the run (`-c`), or opened one after another (`-R` opens per
//! second from their intended times, or `-n` in all, at most `-c` at once), each sending
//! `--ws-messages` messages and closing: the connection-open rate and its latency under churn
//! ([`WsConfig::churns`]).
//!
//! `wss://` runs the same over TLS (the HTTP load's client: `--insecure`, `--cacert`, `--sni`,
//! resumption unless `--no-tls-resume`); the handshake's time includes TLS's. With `http2`
//! (`--http2` for `wss://`, `--h2c` for `ws://`) each connection is an HTTP/2 connection
//! carrying one extended CONNECT stream (RFC 8441), its frames in DATA frames. Not measured
//! yet: several WebSockets on one HTTP/2 connection, compression extensions (none is offered).

pub mod codec;
mod conn;
pub mod handshake;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gatebench_model::histogram::{new_histogram, summarize, LatencyHistogram};
use gatebench_model::websocket::WebSocketReport;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::connect::Transport;
use crate::error::LoadgenError;
use crate::stats::new_sparse_histogram;
use crate::tls::TlsOptions;

/// A WebSocket run's settings.
#[derive(Clone, Debug)]
pub struct WsConfig {
    /// The URL as given.
    pub url: String,
    /// Where connections go.
    pub addr: SocketAddr,
    /// The `Host` field.
    pub authority: String,
    /// Path and query of the upgrade request.
    pub path: String,
    /// The host name, for TLS's server name.
    pub host: String,
    /// `wss://`: TLS, with these options; `None` for `ws://`.
    pub tls: Option<TlsOptions>,
    /// WebSocket over HTTP/2 (RFC 8441): each connection an HTTP/2 connection (ALPN `h2` over
    /// TLS, by prior knowledge over cleartext) carrying one extended CONNECT stream.
    pub http2: bool,
    /// Connections held open at once.
    pub connections: u32,
    /// How long messages are sent.
    pub duration: Duration,
    /// Bytes per message.
    pub size: usize,
    /// Binary messages instead of text.
    pub binary: bool,
    /// Messages per second per connection (open model); `None`: one in flight at a time.
    pub rate: Option<f64>,
    /// Messages each connection sends before it closes (1000, cleanly); `None`: until the end.
    pub messages: Option<u64>,
    /// Connection opens per second (open model: open `k` is due at `start + k / rate`, and its
    /// handshake is timed from then); `None`: see [`WsConfig::churns`].
    pub connect_rate: Option<f64>,
    /// Connections to open in all; `None`: as many as the duration allows.
    pub total: Option<u64>,
    /// Judged on the whole run's messages (latency, the share not back, received per second;
    /// the target, with `--ws-rate` and held connections, is the rate times the connections).
    pub thresholds: Vec<crate::threshold::Threshold>,
    /// Longest wait for a connection to open and for a message's echo.
    pub timeout: Duration,
    /// Runtime threads.
    pub threads: usize,
}

/// Largest message size accepted (16 MiB, the echo's default largest message).
pub const MAX_SIZE: usize = 16 * 1024 * 1024;

/// Where a WebSocket URL points.
#[derive(Clone, Debug)]
pub struct WsTarget {
    /// Where connections go.
    pub addr: SocketAddr,
    /// The `Host` field.
    pub authority: String,
    /// Path and query of the upgrade request.
    pub path: String,
    /// The host name.
    pub host: String,
    /// `wss://`.
    pub tls: bool,
}

impl WsConfig {
    /// Parses `ws://host[:port][/path]` or `wss://…`.
    pub fn parse_url(url: &str) -> Result<WsTarget, LoadgenError> {
        let bad = |why: &str| LoadgenError::config(format!("invalid URL `{url}`: {why}"));
        let uri: http::Uri = url.parse().map_err(|e| bad(&format!("{e}")))?;
        let tls = match uri.scheme_str() {
            Some("ws") => false,
            Some("wss") => true,
            _ => return Err(bad("the scheme must be ws:// or wss://")),
        };
        let end = crate::target::endpoint(&uri, tls, bad)?;
        let path = uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "/".to_owned());
        Ok(WsTarget {
            addr: end.addr,
            authority: end.authority,
            path,
            host: end.host,
            tls,
        })
    }

    /// How connections reach the target: TCP, or TLS offering HTTP/1.1 (the upgrade is an
    /// HTTP/1.1 request); a bad CA file or server name is one line.
    pub(crate) fn transport(&self) -> Result<Transport, LoadgenError> {
        match &self.tls {
            None => Ok(Transport::Tcp),
            Some(opts) => Ok(Transport::Tls(crate::tls::client(
                opts,
                &self.host,
                if self.http2 { &[b"h2"] } else { &[b"http/1.1"] },
            )?)),
        }
    }

    /// Whether connections are opened one after another (`connect_rate` or `total` set): each
    /// opened once, when due (open model) or when one of the `connections` slots is free
    /// (closed), sends its `messages`, closes, and is not opened again; at most `connections`
    /// are open at once, and an open due while all are taken waits for one, its handshake timed
    /// from when it was due. Otherwise `connections` connections are held for the whole run,
    /// each opened again after a failure.
    pub fn churns(&self) -> bool {
        self.connect_rate.is_some() || self.total.is_some()
    }

    /// The JSON record of a run of these settings that started at `started`
    /// (`schema/websocket-report.schema.json`): for `gatebench load` and for suites alike.
    pub fn record(
        &self,
        started: std::time::SystemTime,
        report: WebSocketReport,
    ) -> gatebench_model::websocket::WebSocketRecord {
        use gatebench_model::websocket::{
            WebSocketConfig, WebSocketRecord, WEBSOCKET_SCHEMA_VERSION,
        };
        WebSocketRecord {
            schema_version: WEBSOCKET_SCHEMA_VERSION,
            kind: "websocket".into(),
            tool: gatebench_model::ToolInfo {
                name: "gatebench".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            started_at_unix_ms: started
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            config: WebSocketConfig {
                url: self.url.clone(),
                tls: self.tls.is_some(),
                connections: self.connections,
                connect_rate: self.connect_rate,
                connections_total: self.total,
                messages_per_connection: self.messages,
                duration_s: self.duration.as_secs_f64(),
                size_bytes: self.size as u64,
                binary: self.binary,
                rate_per_connection: self.rate,
                timeout_s: self.timeout.as_secs_f64(),
                threads: self.threads as u32,
            },
            websocket: report,
        }
    }

    /// Checks the settings: one line for the first that is wrong.
    pub fn validate(&self) -> Result<(), LoadgenError> {
        if self.connections == 0 {
            return Err(LoadgenError::config("-c must be at least 1"));
        }
        if self.size > MAX_SIZE {
            return Err(LoadgenError::config(format!(
                "--ws-size must be at most {MAX_SIZE} bytes"
            )));
        }
        if self.rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
            return Err(LoadgenError::config("--ws-rate must be a number above 0"));
        }
        if self
            .connect_rate
            .is_some_and(|r| !(r.is_finite() && r > 0.0))
        {
            return Err(LoadgenError::config(
                "-R must be a number of connection opens per second above 0",
            ));
        }
        if self.messages == Some(0) || self.total == Some(0) {
            return Err(LoadgenError::config(
                "--ws-messages and -n must be at least 1",
            ));
        }
        crate::threshold::refuse_windows(&self.thresholds, "a WebSocket load")?;
        if self.duration.is_zero() || self.timeout.is_zero() {
            return Err(LoadgenError::config("-d and --timeout must be above zero"));
        }
        Ok(())
    }
}

/// What one connection (or, merged, the run) counted.
#[derive(Debug)]
pub(crate) struct ConnStats {
    attempted: u64,
    opened: u64,
    refused: u64,
    failed: u64,
    /// Connections the client closed at their end, the close handshake sent.
    closed_clean: u64,
    /// The first refusal's reason.
    refusal: Option<String>,
    /// The first failure to connect (TCP or TLS), by class.
    failure: Option<gatebench_model::Outcome>,
    handshake: LatencyHistogram,
    sent: u64,
    received: u64,
    timeout: u64,
    reset: u64,
    protocol_error: u64,
    closed: u64,
    pings: u64,
    latency: LatencyHistogram,
    /// Open models: how late each scheduled message (or connection open) left against its due
    /// time, by the generator's own doing.
    send_lag: LatencyHistogram,
    close_codes: BTreeMap<String, u64>,
}

impl ConnStats {
    fn new() -> Self {
        ConnStats {
            attempted: 0,
            opened: 0,
            refused: 0,
            failed: 0,
            closed_clean: 0,
            refusal: None,
            failure: None,
            handshake: new_sparse_histogram(),
            sent: 0,
            received: 0,
            timeout: 0,
            reset: 0,
            protocol_error: 0,
            closed: 0,
            pings: 0,
            latency: new_histogram(),
            send_lag: new_histogram(),
            close_codes: BTreeMap::new(),
        }
    }

    fn merge(&mut self, o: &ConnStats) {
        self.attempted += o.attempted;
        self.opened += o.opened;
        self.refused += o.refused;
        self.failed += o.failed;
        self.closed_clean += o.closed_clean;
        if self.failure.is_none() {
            self.failure = o.failure;
        }
        if self.refusal.is_none() {
            self.refusal.clone_from(&o.refusal);
        }
        let _ = self.handshake.add(&o.handshake);
        self.sent += o.sent;
        self.received += o.received;
        self.timeout += o.timeout;
        self.reset += o.reset;
        self.protocol_error += o.protocol_error;
        self.closed += o.closed;
        self.pings += o.pings;
        let _ = self.latency.add(&o.latency);
        let _ = self.send_lag.add(&o.send_lag);
        for (code, n) in &o.close_codes {
            *self.close_codes.entry(code.clone()).or_default() += n;
        }
    }
}

/// A WebSocket run's result: the record's section and the first refusal, if any.
#[derive(Debug)]
pub struct WsOutput {
    /// The figures.
    pub report: WebSocketReport,
    /// The first handshake refusal's reason, in words.
    pub refusal: Option<String>,
}

/// A seed from the clock and `salt`, mixed (splitmix64): keys and masks need to differ, not to
/// be secret from the server they are sent to.
pub(crate) fn random_u64(salt: u64) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut z = nanos ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn runtime(threads: usize) -> Result<tokio::runtime::Runtime, LoadgenError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
        .map_err(|e| LoadgenError::Worker(format!("cannot start the runtime: {e}")))
}

/// Opens one connection and closes it: `Err` with one line when the handshake is refused or
/// the target cannot be reached, before any load.
pub fn probe(config: &WsConfig) -> Result<(), LoadgenError> {
    let mut once = config.clone();
    once.connections = 1;
    let transport = config.transport()?;
    let mut stats = ConnStats::new();
    runtime(1)?.block_on(async {
        conn::probe(&once, &transport, &mut stats).await;
    });
    if let Some(why) = stats.refusal {
        return Err(LoadgenError::config(format!(
            "{}: the WebSocket handshake was refused: {why}",
            config.url
        )));
    }
    if stats.opened == 0 {
        let why = match stats.failure {
            Some(gatebench_model::Outcome::TlsError) => {
                " (the TLS handshake failed: an untrusted certificate needs --cacert or --insecure)"
                    .to_owned()
            }
            Some(o) => format!(" ({})", o.label()),
            None => String::new(),
        };
        return Err(LoadgenError::config(format!(
            "{}: no WebSocket connection could be opened within {:?}{why}",
            config.url, config.timeout
        )));
    }
    Ok(())
}

/// Opens connections one after another until `until` or `total` (see [`WsConfig::churns`]);
/// each connection's figures are added to the run's as it ends.
async fn churn(config: &WsConfig, transport: &Transport, until: Instant) -> ConnStats {
    let start = Instant::now();
    let slots = Arc::new(Semaphore::new(config.connections as usize));
    let totals = Arc::new(Mutex::new(ConnStats::new()));
    let mut tasks = tokio::task::JoinSet::new();
    let mut k: u64 = 0;
    while config.total.is_none_or(|n| k < n) {
        let due = config
            .connect_rate
            .map(|r| start + Duration::from_secs_f64(k as f64 / r));
        if let Some(due) = due {
            if due >= until {
                break;
            }
            tokio::time::sleep_until(due).await;
        }
        let slot_free_at = Instant::now();
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = tokio::time::sleep_until(until) => break,
        };
        // Open model: from when it was due, however long it waited for a slot.
        let intended = due.unwrap_or_else(Instant::now);
        if let Some(due) = due {
            // Late by the generator's doing: its timer, or a busy runtime (not a full pool,
            // which is the target's: the wait for a slot is in the handshake's time).
            let lag = slot_free_at.saturating_duration_since(due);
            crate::stats::record(
                &mut totals
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .send_lag,
                lag,
            );
        }
        let (config, transport, totals) = (config.clone(), transport.clone(), totals.clone());
        tasks.spawn(async move {
            let mut stats = ConnStats::new();
            conn::once(&config, &transport, k, intended, until, &mut stats).await;
            drop(slot);
            totals
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .merge(&stats);
        });
        k += 1;
        // Ended connections' tasks, reaped as the run goes.
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    Arc::try_unwrap(totals)
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        })
        .unwrap_or_else(|_| ConnStats::new())
}

/// Runs the load: every connection for `duration`, then the figures.
pub fn run(config: &WsConfig) -> Result<WsOutput, LoadgenError> {
    config.validate()?;
    let transport = config.transport()?;
    let watch = crate::selfcheck::RunWatch::start(config.threads);
    let started = std::time::Instant::now();
    let total = runtime(config.threads)?.block_on(async {
        let until = Instant::now() + config.duration;
        if config.churns() {
            return Ok(churn(config, &transport, until).await);
        }
        let tasks: Vec<_> = (0..config.connections)
            .map(|i| {
                let config = config.clone();
                let transport = transport.clone();
                tokio::spawn(async move {
                    let mut stats = ConnStats::new();
                    conn::run(&config, &transport, u64::from(i), until, &mut stats).await;
                    stats
                })
            })
            .collect();
        let mut total = ConnStats::new();
        for task in tasks {
            match task.await {
                Ok(stats) => total.merge(&stats),
                Err(e) => {
                    return Err(LoadgenError::Worker(format!(
                        "a connection task failed: {e}"
                    )))
                }
            }
        }
        Ok(total)
    })?;
    let duration_s = started.elapsed().as_secs_f64();
    let scheduled = config.rate.is_some() || config.connect_rate.is_some();
    let self_check = watch.finish(scheduled.then_some(&total.send_lag));
    let mut report = WebSocketReport {
        duration_s,
        connections_attempted: total.attempted,
        connections_opened: total.opened,
        handshakes_refused: total.refused,
        connections_failed: total.failed,
        connections_closed: total.closed_clean,
        connections_per_s: total.opened as f64 / duration_s.max(1e-9),
        handshake_latency: summarize(&total.handshake),
        messages_sent: total.sent,
        messages_received: total.received,
        messages_timeout: total.timeout,
        messages_reset: total.reset,
        messages_protocol_error: total.protocol_error,
        messages_closed: total.closed,
        message_latency: summarize(&total.latency),
        messages_per_s: total.received as f64 / duration_s.max(1e-9),
        close_codes: total.close_codes,
        pings_answered: total.pings,
        self_check: Some(self_check),
        thresholds: Vec::new(),
    };
    let target = match (config.rate, config.churns()) {
        (Some(r), false) => Some(r * f64::from(config.connections)),
        _ => None,
    };
    report.thresholds = crate::threshold::judge_whole(
        &config.thresholds,
        &report.message_latency,
        report.error_percent(),
        report.messages_per_s,
        target,
    );
    Ok(WsOutput {
        report,
        refusal: total.refusal,
    })
}
