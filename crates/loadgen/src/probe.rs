//! The correctness probe: one request, sent before any load, that must be answered correctly.
//! A benchmark of a target that answers 404, or echoes the wrong bytes, measures nothing useful;
//! the probe refuses it with a clear message instead.

use std::time::Duration;

use gatebench_model::Outcome;

use crate::config::LoadConfig;
use crate::connect::{connect, Transport};
use crate::error::LoadgenError;
use crate::http1::H1Conn;

/// How long the probe waits for its answer at most.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Sends one request and checks the answer: a complete 2xx response, and with verification on,
/// the expected body.
pub fn probe(config: &LoadConfig) -> Result<(), LoadgenError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| LoadgenError::Worker(e.to_string()))?;
    rt.block_on(probe_async(config))
}

async fn probe_async(config: &LoadConfig) -> Result<(), LoadgenError> {
    let fail = |reason: String| LoadgenError::Probe {
        url: config.target.url.clone(),
        reason,
    };
    let stream = connect(
        config.target.addr,
        &Transport::Tcp,
        config.connect_timeout.min(PROBE_TIMEOUT),
    )
    .await
    .map_err(|o| {
        fail(format!(
            "cannot connect to {}: {}",
            config.target.addr,
            o.label()
        ))
    })?;
    let mut conn = H1Conn::new(stream);
    let answer = tokio::time::timeout(
        config.timeout.min(PROBE_TIMEOUT),
        conn.exchange(&config.request, config.verify),
    )
    .await
    .map_err(|_| fail("no response within the timeout".into()))?
    .map_err(|f| fail(format!("no valid response: {}", f.outcome.label())))?;
    match answer.outcome {
        Outcome::Ok => Ok(()),
        Outcome::BodyMismatch => Err(fail(
            "the response body differs from the request body (--verify expects an echo)".into(),
        )),
        other => Err(fail(format!(
            "the target answered with {} to {} {} (use --no-probe to benchmark it anyway)",
            other.label().trim_end_matches(" responses"),
            config.request.method(),
            config.target.path_and_query
        ))),
    }
}
