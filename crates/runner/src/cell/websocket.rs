//! The measurement of a WebSocket scenario's cell (`[[scenario]] websocket = {…}`): the target
//! checked by one probe handshake, sampled while a warm-up (discarded) and the measured
//! WebSocket load run here, and the record filled with the WebSocket load's record, the SUT's
//! figures over both windows and, with gatebench's echo as back-end, what the echo saw (its
//! origin statistics). The cell's users are connections held for the measurement, each with
//! one message in flight or `message_rate` a second; a rate is connection opens per second
//! (each handshake timed from when it was due, at most `[load] connections` open at once, as
//! an HTTP rate cell's connections); the matrix size is each message's. The scenario's thresholds are judged on the whole measurement. No timeline, events or
//! shards: those are the HTTP load's.

use std::net::SocketAddr;

use gatebench_loadgen::tls::TlsOptions;
use gatebench_loadgen::ws::{self as load, WsConfig};

use super::start::Started;
use super::{CellOutput, CellRun};
use crate::error::RunnerError;
use crate::suite::{Intensity, Protocol};

/// Runs the cell's WebSocket load and fills its record.
pub(super) fn measure(
    run: &CellRun<'_, '_>,
    mut started: Started,
    out: &mut CellOutput,
) -> Result<(), RunnerError> {
    let config = config(run, &started)?;
    config.validate().map_err(|e| RunnerError::InvalidLoad {
        reason: e.to_string(),
    })?;
    let failed = |e: gatebench_loadgen::LoadgenError| RunnerError::Load {
        reason: e.to_string(),
    };
    load::probe(&config).map_err(failed)?;
    let (output, started_at) = super::measure::own_load(
        run,
        &mut started,
        out,
        || {
            let mut w = config.clone();
            w.duration = run.ctx.suite.warmup;
            w.total = None;
            load::run(&w).map(drop)
        },
        || load::run(&config),
        |o| o.report.duration_s,
    )?;
    out.record.websocket = Some(config.record(started_at, output.report));
    Ok(())
}

/// The WebSocket load of the cell.
fn config(run: &CellRun<'_, '_>, started: &Started) -> Result<WsConfig, RunnerError> {
    let w = run.sc.websocket.as_ref().expect("a WebSocket scenario");
    let suite = run.ctx.suite;
    let l = &suite.load;
    let addr = SocketAddr::new(started.target.addr, started.target_port);
    let tls = matches!(run.cell.protocol, Protocol::H1 | Protocol::H2);
    // Over HTTP/2, each connection carries one extended CONNECT (RFC 8441).
    let http2 = matches!(run.cell.protocol, Protocol::H2c | Protocol::H2);
    let (connections, connect_rate) = match &run.cell.intensity {
        Intensity::Users(u) => (*u, None),
        Intensity::Rate(r) => (l.connections, Some(*r)),
        Intensity::Program(_) => {
            return Err(RunnerError::InvalidLoad {
                reason: "a WebSocket scenario takes users or plain rates, not an arrival program"
                    .into(),
            })
        }
    };
    Ok(WsConfig {
        url: format!("{}://{addr}{}", if tls { "wss" } else { "ws" }, w.path),
        addr,
        authority: addr.to_string(),
        path: w.path.clone(),
        host: addr.ip().to_string(),
        // Benchmark targets are self-signed, as for the HTTP load of a suite.
        tls: tls.then_some(TlsOptions {
            insecure: true,
            cacert: None,
            sni: None,
            no_resume: false,
        }),
        http2,
        connections,
        // [suite] requests is refused for WebSocket scenarios: the duration ends each cell.
        duration: suite.duration,
        size: run.cell.size as usize,
        binary: w.binary,
        rate: w.message_rate,
        messages: w.messages,
        connect_rate,
        total: None,
        timeout: l.timeout,
        threads: l.threads.map_or_else(
            || std::thread::available_parallelism().map_or(1, |n| n.get()),
            |t| t as usize,
        ),
        thresholds: run.sc.thresholds.clone(),
    })
}
