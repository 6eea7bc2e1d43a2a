//! Validated configuration of a load run.
//!
//! [`LoadSpec`] is what a caller fills in (the CLI from its flags, the suite runner from a suite
//! cell); [`LoadConfig::try_new`] checks every value and resolves the target once, so that a run
//! only starts when everything is valid (raw input → validated types → effects). Nothing here
//! opens a socket.

use std::sync::Arc;
use std::time::{Duration, Instant};

use gatebench_model::{ArrivalRecord, LoadConfigRecord, Model};

pub use crate::arrival::{ArrivalProgram, RateProgram, Spacing};
use crate::bounds::{
    check_count, check_rate, MAX_CONNECTIONS, MAX_DURATION, MAX_DURATION_TEXT, MAX_PAYLOAD,
    MAX_STREAMS, MAX_THREADS,
};
pub use crate::classes::{ClassInfo, ReplayTimes, RequestSet, Requests};
use crate::error::LoadgenError;
use crate::request::{RequestBody, RequestTemplate};
use crate::stream::StreamSpec;
use crate::target::is_token_byte;
pub use crate::target::Target;
use crate::threshold::{Threshold, MAX_THRESHOLDS};
use crate::tls::TlsOptions;

/// The arrival model: when requests are sent.
#[derive(Clone, Debug, PartialEq)]
pub enum Arrival {
    /// Each connection sends its next request when the previous answer arrived.
    Closed,
    /// A target rate in requests/s over the whole run, evenly spaced; latency is measured from
    /// each request's intended send time (wrk2's coordinated-omission correction).
    Open {
        /// Requests per second, > 0.
        rate: f64,
    },
    /// The open model with a rate that follows a program (ramp, steps, sine), or with Poisson
    /// arrivals; latency is measured from each request's intended send time as with `Open`.
    Program(ArrivalProgram),
    /// The open model with explicit due times: a replay's recorded requests at their own
    /// times (set by [`LoadConfig::try_new`] from [`Requests::Replay`]; not given by callers).
    Replay(Arc<ReplayTimes>),
}

impl Arrival {
    /// Whether requests follow a schedule (the open model) rather than the answers.
    pub fn is_open(&self) -> bool {
        !matches!(self, Arrival::Closed)
    }

    /// The open model's rate over time; `None` for the closed model.
    pub fn rate_program(&self) -> Option<RateProgram> {
        match self {
            Arrival::Closed => None,
            Arrival::Open { rate } => Some(RateProgram::Constant(*rate)),
            Arrival::Program(p) => Some(p.rate.clone()),
            Arrival::Replay(_) => None,
        }
    }

    /// The open model's spacing; `None` for the closed model.
    pub fn spacing(&self) -> Option<Spacing> {
        match self {
            Arrival::Closed => None,
            Arrival::Open { .. } => Some(Spacing::Even),
            Arrival::Program(p) => Some(p.spacing),
            Arrival::Replay(_) => None,
        }
    }
}

/// When the run (its measurement phase) ends. At least one of the two is set; with both, the
/// first reached wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopRule {
    /// Stop sending after this long.
    pub duration: Option<Duration>,
    /// Stop after this many requests have been scheduled.
    pub requests: Option<u64>,
}

/// The HTTP version spoken on the wire. Whether it runs over TLS follows from the URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1, one request at a time per connection.
    Http1,
    /// HTTP/2: over TLS negotiated by ALPN (`https://`), or by prior knowledge over cleartext
    /// (h2c, `http://`); several concurrent streams per connection.
    Http2,
}

impl Protocol {
    /// The name used in records: `http/1.1`, `h2` (TLS) or `h2c` (cleartext).
    pub fn name(self, tls: bool) -> &'static str {
        match (self, tls) {
            (Protocol::Http1, _) => "http/1.1",
            (Protocol::Http2, true) => "h2",
            (Protocol::Http2, false) => "h2c",
        }
    }
}

/// What a caller asks for. Plain values; [`LoadConfig::try_new`] validates them.
#[derive(Clone, Debug)]
pub struct LoadSpec {
    /// `http://host[:port]/path?query`.
    pub url: String,
    /// HTTP method (upper case is conventional; sent as given).
    pub method: String,
    /// Extra header lines, `Name: value`.
    pub headers: Vec<String>,
    /// The request body.
    pub body: RequestBody,
    /// Where the requests come from: one (`method`, `headers`, `body`), a mix, a replay.
    pub requests: Requests,
    /// Concurrent connections.
    pub connections: u32,
    /// Worker threads; `None` = the cores this process may use.
    pub threads: Option<u32>,
    /// Arrival model.
    pub arrival: Arrival,
    /// Stop rule of the measurement phase.
    pub stop: StopRule,
    /// Warm-up before the measurement, measured and reported apart.
    pub warmup: Duration,
    /// Per-request timeout.
    pub timeout: Duration,
    /// TCP connect timeout.
    pub connect_timeout: Duration,
    /// Keep connections alive between requests (`false`: a new connection per request).
    pub keepalive: bool,
    /// Check every response: 2xx, and when the request has a body, that the response body is
    /// the same bytes (the echo backend's contract).
    pub verify: bool,
    /// A status counted as a correct answer besides 2xx (an error endpoint's declared 500):
    /// the probe accepts it and the load does not count it as an error. `None` = 2xx only.
    pub expect_status: Option<u16>,
    /// HTTP version.
    pub protocol: Protocol,
    /// HTTP/2: concurrent streams per connection.
    pub streams: u32,
    /// TLS settings, used when the URL is `https://`.
    pub tls: TlsOptions,
    /// Pass/fail conditions judged while the run goes and at its end (`--threshold`).
    pub thresholds: Vec<Threshold>,
    /// Read responses as streams of events, each timed (`--stream`); `None`: whole responses.
    pub stream: Option<StreamSpec>,
    /// A response header whose values are marked per second (`--mark-header`): the first
    /// time each value was seen on a successful response (HTTP/1.x only).
    pub mark_header: Option<String>,
}

impl LoadSpec {
    /// A spec with wrk-like defaults: GET, 10 connections, closed model, 10 s, 10 s timeout.
    pub fn new(url: impl Into<String>) -> LoadSpec {
        LoadSpec {
            url: url.into(),
            method: "GET".to_owned(),
            headers: Vec::new(),
            body: RequestBody::None,
            requests: Requests::Single,
            connections: 10,
            threads: None,
            arrival: Arrival::Closed,
            stop: StopRule {
                duration: Some(Duration::from_secs(10)),
                requests: None,
            },
            warmup: Duration::ZERO,
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(3),
            keepalive: true,
            verify: false,
            expect_status: None,
            protocol: Protocol::Http1,
            streams: 1,
            tls: TlsOptions::default(),
            thresholds: Vec::new(),
            stream: None,
            mark_header: None,
        }
    }
}

/// A validated load configuration, ready to run.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// Where requests go.
    pub target: Target,
    /// The encoded requests (one, a mix's, a replay's) and their classes.
    pub requests: RequestSet,
    /// The wire protocol.
    pub protocol: Protocol,
    /// Concurrent connections, ≥ 1.
    pub connections: u32,
    /// Worker threads, 1 ≤ threads ≤ connections.
    pub threads: u32,
    /// Arrival model.
    pub arrival: Arrival,
    /// Stop rule of the measurement phase.
    pub stop: StopRule,
    /// Warm-up duration (zero for none).
    pub warmup: Duration,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Keep connections alive.
    pub keepalive: bool,
    /// Verify every response.
    pub verify: bool,
    /// HTTP/2: concurrent streams per connection (1 for HTTP/1.1).
    pub streams: u32,
    /// TLS settings (used for `https://`).
    pub tls: TlsOptions,
    /// Pass/fail conditions judged while the run goes and at its end.
    pub thresholds: Vec<Threshold>,
    /// Stream mode, if on.
    pub stream: Option<StreamSpec>,
    /// The response header marked per second (`--mark-header`), lower case.
    pub mark_header: Option<String>,
    /// The spec's header lines, for the record.
    headers: Vec<String>,
    /// The spec's method, for the record.
    method: String,
}

impl LoadConfig {
    /// Validates `spec`, resolves the target and encodes the request.
    pub fn try_new(mut spec: LoadSpec) -> Result<LoadConfig, LoadgenError> {
        let cfg = |option: &str, reason: String| LoadgenError::config(format!("{option} {reason}"));
        let replay = matches!(spec.requests, Requests::Replay(_));
        if let Requests::Replay(r) = &spec.requests {
            if spec.arrival != Arrival::Closed {
                return Err(LoadgenError::config(
                    "--replay sends each request at its recorded time: leave out -R",
                ));
            }
            if !(r.speed.is_finite() && r.speed > 0.0 && r.speed <= 1e6) {
                return Err(cfg(
                    "--speed",
                    format!("must be more than 0 and at most 1e6, got {}", r.speed),
                ));
            }
            let span = Duration::from_secs_f64(r.span_ns() as f64 / 1e9 / r.speed);
            if span > MAX_DURATION {
                return Err(LoadgenError::config(format!(
                    "{}: the replay lasts {} at --speed {}, more than {MAX_DURATION_TEXT}",
                    r.file,
                    humantime::format_duration(Duration::from_secs(span.as_secs())),
                    r.speed
                )));
            }
        }
        check_count(u64::from(spec.connections), u64::from(MAX_CONNECTIONS))
            .map_err(|r| cfg("-c/--connections", r))?;
        match &spec.arrival {
            Arrival::Closed => {}
            Arrival::Replay(_) => {
                return Err(LoadgenError::config(
                    "a replay's schedule comes from its file (Requests::Replay)",
                ))
            }
            Arrival::Open { rate } => check_rate(*rate).map_err(|r| cfg("-R/--rate", r))?,
            Arrival::Program(p) => p
                .rate
                .check()
                .map_err(|r| cfg("-R/--rate", r.to_string()))?,
        }
        match (spec.stop.duration, spec.stop.requests) {
            // A replay ends with its last request.
            (None, None) if replay => {}
            (None, None) => {
                return Err(LoadgenError::config(
                    "give a duration (-d) or a request count (-n)",
                ))
            }
            (Some(d), _) if d.is_zero() => {
                return Err(LoadgenError::config("-d/--duration must be more than 0"))
            }
            (_, Some(0)) => return Err(LoadgenError::config("-n/--requests must be at least 1")),
            _ => {}
        }
        if spec.timeout.is_zero() {
            return Err(LoadgenError::config("--timeout must be more than 0"));
        }
        if spec.connect_timeout.is_zero() {
            return Err(LoadgenError::config(
                "--connect-timeout must be more than 0",
            ));
        }
        for (option, d) in [
            ("-d/--duration", spec.stop.duration.unwrap_or_default()),
            ("--warmup", spec.warmup),
            ("--timeout", spec.timeout),
            ("--connect-timeout", spec.connect_timeout),
        ] {
            if d > MAX_DURATION {
                return Err(cfg(
                    option,
                    format!(
                        "must be at most {MAX_DURATION_TEXT}, got {}",
                        humantime::format_duration(d)
                    ),
                ));
            }
        }
        // The run adds warm-up, measurement and a timeout to the clock: make sure the sum is
        // a time this clock can hold (the bounds above already ensure it on any real clock).
        let replay_span = match &spec.requests {
            Requests::Replay(r) => Duration::from_secs_f64(r.span_ns() as f64 / 1e9 / r.speed),
            _ => Duration::ZERO,
        };
        let horizon = spec.warmup
            + spec.stop.duration.unwrap_or_default().max(replay_span)
            + spec.timeout.max(spec.connect_timeout);
        if Instant::now().checked_add(horizon).is_none() {
            return Err(LoadgenError::config(
                "--warmup, -d/--duration and --timeout together reach past what the clock can hold",
            ));
        }
        if spec.method.is_empty() || !spec.method.bytes().all(is_token_byte) {
            return Err(LoadgenError::config(format!(
                "invalid method `{}`: must be an HTTP token such as GET or POST",
                spec.method
            )));
        }
        if let RequestBody::Payload(n) = spec.body {
            if n as u64 > MAX_PAYLOAD {
                return Err(cfg(
                    "--payload-size",
                    format!("must be at most {MAX_PAYLOAD} bytes (1 GiB), got {n}"),
                ));
            }
        }
        let threads = match spec.threads {
            Some(t) => {
                check_count(u64::from(t), u64::from(MAX_THREADS))
                    .map_err(|r| cfg("-t/--threads", r))?;
                t
            }
            None => std::thread::available_parallelism()
                .map(|n| n.get() as u32)
                .unwrap_or(1),
        }
        .min(spec.connections);
        check_count(u64::from(spec.streams), u64::from(MAX_STREAMS))
            .map_err(|r| cfg("--streams", r))?;
        if spec.protocol == Protocol::Http1 && spec.streams > 1 {
            return Err(LoadgenError::config(
                "--streams needs HTTP/2 (--http2 for https://, --h2c for http://)",
            ));
        }
        if let Some(st) = spec.stream {
            if spec.protocol != Protocol::Http1 {
                return Err(LoadgenError::config(
                    "--stream reads HTTP/1.1 responses only for now: leave out --http2/--h2c",
                ));
            }
            if st.stall.is_zero() || st.stall > MAX_DURATION {
                return Err(cfg(
                    "--stall",
                    format!(
                        "must be more than 0 and at most {MAX_DURATION_TEXT}, got {}",
                        humantime::format_duration(st.stall)
                    ),
                ));
            }
        }
        check_mark_header(spec.mark_header.as_deref(), spec.protocol)?;
        let target = Target::parse(&spec.url)?;
        if !target.tls && (spec.tls.insecure || spec.tls.cacert.is_some() || spec.tls.sni.is_some())
        {
            return Err(LoadgenError::config(
                "TLS options (--insecure, --cacert, --sni) need an https:// URL",
            ));
        }
        // Fail on a bad CA file or server name now, not on the first connection.
        if target.tls {
            crate::tls::client(&spec.tls, &target.host, &[])?;
        }
        if let Some(s) = spec.expect_status {
            if !(200..=599).contains(&s) {
                return Err(LoadgenError::config(format!(
                    "expected status {s} is not a final HTTP status (200 to 599)"
                )));
            }
        }
        let requests = match std::mem::take(&mut spec.requests) {
            Requests::Single => RequestSet::single(RequestTemplate::encode(
                &target,
                &spec.method,
                &spec.headers,
                spec.body,
                spec.keepalive,
            )?),
            Requests::Mix(mix) => {
                RequestSet::mix(&mix, &target, &spec.method, &spec.headers, spec.keepalive)?
            }
            Requests::Replay(r) => {
                let (set, times) = RequestSet::replay(
                    &r,
                    spec.stop.requests,
                    &target,
                    &spec.headers,
                    spec.keepalive,
                )?;
                spec.arrival = Arrival::Replay(Arc::new(times));
                set
            }
        }
        .with_expected_status(spec.expect_status);
        if spec.thresholds.len() > MAX_THRESHOLDS {
            return Err(cfg(
                "--threshold",
                format!(
                    "given {} times; at most {MAX_THRESHOLDS}",
                    spec.thresholds.len()
                ),
            ));
        }
        for t in &spec.thresholds {
            t.check_against(spec.arrival != Arrival::Closed, spec.stop.duration)
                .map_err(|e| LoadgenError::config(e.to_string()))?;
        }
        Ok(LoadConfig {
            target,
            requests,
            method: spec.method,
            protocol: spec.protocol,
            streams: spec.streams,
            tls: spec.tls,
            connections: spec.connections,
            threads,
            arrival: spec.arrival,
            stop: spec.stop,
            warmup: spec.warmup,
            timeout: spec.timeout,
            connect_timeout: spec.connect_timeout,
            keepalive: spec.keepalive,
            verify: spec.verify,
            thresholds: spec.thresholds,
            stream: spec.stream,
            mark_header: spec.mark_header.map(|h| h.to_ascii_lowercase()),
            headers: spec.headers,
        })
    }

    /// The open model's mean target rate over the measurement (the rate itself when constant);
    /// `None` for the closed model.
    pub fn mean_rate(&self) -> Option<f64> {
        if let Arrival::Replay(r) = &self.arrival {
            // The rate between its first request and its last: n − 1 gaps over the span (the
            // exact rate of evenly spaced requests); a replay of one instant counts as one
            // second's requests.
            let span = r.span_s();
            return Some(if span > 0.0 && r.len() > 1 {
                (r.len() - 1) as f64 / span
            } else {
                r.len() as f64
            });
        }
        let program = self.arrival.rate_program()?;
        let len = self
            .stop
            .duration
            .or(program.natural_length())
            .map_or(0.0, |d| d.as_secs_f64());
        Some(if len > 0.0 {
            program.cumulative(len) / len
        } else {
            program.rate_at(0.0)
        })
    }

    /// The single request of a plain run; a mix's or a replay's first.
    pub fn request(&self) -> &RequestTemplate {
        self.requests.first()
    }

    /// The record of this configuration embedded in every report.
    pub fn record(&self) -> LoadConfigRecord {
        LoadConfigRecord {
            url: self.target.url.clone(),
            method: self.method.clone(),
            protocol: self.protocol.name(self.target.tls).to_owned(),
            model: if self.arrival.is_open() {
                Model::Open
            } else {
                Model::Closed
            },
            connections: self.connections,
            streams: self.streams,
            threads: self.threads,
            rate: self.mean_rate(),
            arrival: match &self.arrival {
                Arrival::Program(p) => Some(ArrivalRecord {
                    program: p.rate.to_string(),
                    spacing: match p.spacing {
                        Spacing::Even => "even".into(),
                        Spacing::Poisson { .. } => "poisson".into(),
                    },
                    seed: match p.spacing {
                        Spacing::Even => None,
                        Spacing::Poisson { seed } => Some(seed),
                    },
                }),
                _ => None,
            },
            duration_s: self.stop.duration.map(|d| d.as_secs_f64()),
            requests: self.stop.requests,
            warmup_s: self.warmup.as_secs_f64(),
            timeout_ms: self.timeout.as_secs_f64() * 1e3,
            connect_timeout_ms: self.connect_timeout.as_secs_f64() * 1e3,
            keepalive: self.keepalive,
            verify: self.verify,
            headers: self
                .headers
                .iter()
                .map(|h| gatebench_model::redact_header(h))
                .collect(),
            body_bytes: self.requests.first().body_len() as u64,
            requests_from: self.requests.from(),
        }
    }
}

/// Checks `--mark-header`'s name: an HTTP token, and an HTTP/1.x load.
fn check_mark_header(name: Option<&str>, protocol: Protocol) -> Result<(), LoadgenError> {
    let Some(name) = name else {
        return Ok(());
    };
    if name.is_empty() || !name.bytes().all(crate::target::is_token_byte) {
        return Err(LoadgenError::config(format!(
            "--mark-header `{name}` is not a header name"
        )));
    }
    if protocol != Protocol::Http1 {
        return Err(LoadgenError::config(
            "--mark-header reads HTTP/1.1 responses only for now: leave out --http2/--h2c",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marked_header_is_a_token_on_an_http1_load() {
        assert!(check_mark_header(Some("x y"), Protocol::Http1).is_err());
        assert!(check_mark_header(Some("x-id"), Protocol::Http2).is_err());
        assert!(check_mark_header(Some("x-id"), Protocol::Http1).is_ok());
        assert!(check_mark_header(None, Protocol::Http2).is_ok());
    }

    #[test]
    fn parses_url_with_defaults() {
        let t = Target::parse("http://127.0.0.1:8688").unwrap();
        assert_eq!(t.port, 8688);
        assert_eq!(t.path_and_query, "/");
        assert_eq!(t.authority, "127.0.0.1:8688");
        let t = Target::parse("http://localhost/a/b?x=1").unwrap();
        assert_eq!(t.port, 80);
        assert_eq!(t.path_and_query, "/a/b?x=1");
        assert!(t.addr.ip().is_loopback());
        let t = Target::parse("http://[::1]:9/").unwrap();
        assert_eq!(t.host, "::1");
    }

    #[test]
    fn rejects_bad_urls_with_a_reason() {
        for (url, want) in [
            ("127.0.0.1:80", "no scheme"),
            ("ftp://x/", "unsupported scheme"),
            ("https://u:p@127.0.0.1/", "user info"),
            ("http://", "invalid URL"),
            ("http://u:p@127.0.0.1/", "user info"),
            ("not a url", "invalid URL"),
        ] {
            let err = Target::parse(url).unwrap_err().to_string();
            assert!(err.contains(want), "{url}: {err}");
        }
    }

    #[test]
    fn rejects_bad_values() {
        let base = || LoadSpec::new("http://127.0.0.1:1/");
        let mut s = base();
        s.connections = 0;
        assert!(LoadConfig::try_new(s).is_err());
        let mut s = base();
        s.arrival = Arrival::Open { rate: 0.0 };
        let e = LoadConfig::try_new(s).unwrap_err().to_string();
        assert!(e.contains("--rate"), "{e}");
        let mut s = base();
        s.stop = StopRule {
            duration: None,
            requests: None,
        };
        assert!(LoadConfig::try_new(s).is_err());
        let mut s = base();
        s.method = "GE T".into();
        assert!(LoadConfig::try_new(s).is_err());
    }

    #[test]
    fn refuses_values_outside_the_bounds_naming_the_option_and_range() {
        let base = || LoadSpec::new("http://127.0.0.1:1/");
        let err = |s: LoadSpec| LoadConfig::try_new(s).unwrap_err().to_string();
        for rate in [1e-300, 1e12, f64::NAN, f64::INFINITY, -1.0] {
            let mut s = base();
            s.arrival = Arrival::Open { rate };
            let e = err(s);
            assert!(
                e.starts_with("-R/--rate must be from 0.001 to 1e9"),
                "{rate}: {e}"
            );
        }
        for rate in [crate::bounds::MIN_RATE, crate::bounds::MAX_RATE] {
            let mut s = base();
            s.arrival = Arrival::Open { rate };
            assert!(LoadConfig::try_new(s).is_ok(), "{rate} is in range");
        }
        let too_long = MAX_DURATION + Duration::from_secs(1);
        let mut s = base();
        s.stop.duration = Some(too_long);
        assert!(err(s).starts_with("-d/--duration must be at most 100 days"));
        let mut s = base();
        s.warmup = too_long;
        assert!(err(s).starts_with("--warmup must be at most 100 days"));
        let mut s = base();
        s.timeout = too_long;
        assert!(err(s).starts_with("--timeout must be at most 100 days"));
        let mut s = base();
        s.connections = u32::MAX;
        assert_eq!(
            err(s),
            "-c/--connections must be at most 1000000, got 4294967295"
        );
        let mut s = base();
        s.threads = Some(100_000);
        assert_eq!(err(s), "-t/--threads must be at most 1024, got 100000");
        let mut s = base();
        s.protocol = Protocol::Http2;
        s.streams = u32::MAX;
        assert!(err(s).starts_with("--streams must be at most 10000"));
        let mut s = base();
        s.body = RequestBody::Payload(usize::MAX);
        assert!(err(s).starts_with("--payload-size must be at most 1073741824 bytes"));
        // The largest of everything still fits the clock.
        let mut s = base();
        s.stop.duration = Some(MAX_DURATION);
        s.warmup = MAX_DURATION;
        s.timeout = MAX_DURATION;
        s.connect_timeout = MAX_DURATION;
        assert!(LoadConfig::try_new(s).is_ok());
    }

    #[test]
    fn threads_never_exceed_connections() {
        let mut s = LoadSpec::new("http://127.0.0.1:1/");
        s.connections = 1;
        s.threads = Some(8);
        assert_eq!(LoadConfig::try_new(s).unwrap().threads, 1);
    }
}
