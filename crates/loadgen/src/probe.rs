//! The correctness probe: one request, sent before any load, that must be answered correctly.
//! A benchmark of a target that answers 404, or echoes the wrong bytes, measures nothing useful;
//! the probe refuses it with a clear message instead.

use std::time::Duration;

use gatebench_model::Outcome;

use crate::config::{LoadConfig, Protocol};
use crate::connect::connect;
use crate::error::LoadgenError;
use crate::exchange::{Answer, Failure};
use crate::http1::H1Conn;
use crate::http2;
use crate::stream::{StreamBook, StreamWatch};
use crate::worker::transport;

/// How long the probe waits for its answer at most.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Sends one request (same protocol, TLS settings and request as the load) and checks the
/// answer: a complete 2xx response, and with verification on, the expected body.
pub fn probe(config: &LoadConfig) -> Result<(), LoadgenError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| LoadgenError::Worker(e.to_string()))?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, probe_async(config))
}

async fn probe_async(config: &LoadConfig) -> Result<(), LoadgenError> {
    let fail = |reason: String| LoadgenError::Probe {
        url: config.target.url.clone(),
        reason,
    };
    let wait = config.connect_timeout.min(PROBE_TIMEOUT);
    let (stream, est) = connect(config.target.addr, &transport(config), wait)
        .await
        .map_err(|o| {
            let hint = if o == Outcome::TlsError && !config.tls.insecure {
                " (a self-signed certificate? use --insecure or --cacert PATH; a plain HTTP port? use http://)"
            } else {
                ""
            };
            fail(format!("cannot connect to {}: {}{hint}", config.target.addr, o.label()))
        })?;
    let answer: Result<Answer, Failure> = match config.protocol {
        Protocol::Http1 => {
            // Stream mode: the probe's answer must be a stream that ends complete, and may
            // take the whole request timeout to (a completion of many tokens).
            let watch = config
                .stream
                .map(|spec| StreamWatch::new(spec, StreamBook::default()));
            let limit = if watch.is_some() {
                config.timeout
            } else {
                config.timeout.min(PROBE_TIMEOUT)
            };
            let mut conn = H1Conn::new(stream).with_stream(watch);
            if let Some(w) = conn.stream_mut() {
                w.begin(0, std::time::Instant::now());
            }
            tokio::time::timeout(limit, conn.exchange(config.request(), config.verify))
                .await
                .map_err(|_| fail("no response within the timeout".into()))?
        }
        Protocol::Http2 => {
            if config.target.tls && !est.alpn_h2 {
                return Err(fail(
                    "the server did not agree to HTTP/2 (ALPN h2); drop --http2 to use HTTP/1.1"
                        .into(),
                ));
            }
            let conn = http2::handshake(stream, 1, wait)
                .await
                .map_err(|o| fail(format!("HTTP/2 handshake failed: {}", o.label())))?;
            if !conn.acquire().await {
                return Err(fail("the HTTP/2 connection closed at once".into()));
            }
            tokio::time::timeout(
                config.timeout.min(PROBE_TIMEOUT),
                conn.exchange(config.request(), config.verify),
            )
            .await
            .map_err(|_| fail("no response within the timeout".into()))?
        }
    };
    let answer = answer.map_err(|f| match f.outcome {
        // Asking for a stream of a target that does not serve one is bad input, not a failed
        // check: one line, exit status 2, before any load.
        Outcome::NotEventStream => LoadgenError::config(format!(
            "{}: the answer to {} {} is not an event stream (no text/event-stream Content-Type), \
             which --stream/--llm expect (--no-probe measures it anyway, each answer counted as \
             not_event_stream)",
            config.target.url,
            config.request().method(),
            config.request().path()
        )),
        other => fail(format!("no valid response: {}", other.label())),
    })?;
    match answer.outcome {
        Outcome::Ok => Ok(()),
        Outcome::BodyMismatch => Err(fail(
            "the response body differs from the request body (--verify expects an echo)".into(),
        )),
        other => Err(fail(format!(
            "the target answered with {} to {} {} (use --no-probe to benchmark it anyway)",
            other.label().trim_end_matches(" responses"),
            config.request().method(),
            config.request().path()
        ))),
    }
}
