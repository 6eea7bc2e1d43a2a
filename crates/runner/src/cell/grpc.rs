//! The measurement of a gRPC scenario's cell (`[[scenario]] grpc = {…}`): the target checked by
//! one probe call, sampled while a warm-up (discarded) and the measured gRPC load run here, and
//! the record filled with the gRPC load's record, the SUT's figures over both windows and, with
//! gatebench's echo as back-end, what the echo saw (its origin statistics). The
//! cell's users are calls in flight (closed model), shared over `grpc.connections` HTTP/2
//! connections; a rate is calls per second (open model); the matrix size is each message's
//! body. The scenario's thresholds are judged on the whole measurement. No timeline, events or
//! shards: those are the HTTP load's.

use std::net::SocketAddr;
use std::time::Duration;

use gatebench_loadgen::grpc::{self as load, GrpcConfig};
use gatebench_loadgen::tls::TlsOptions;
use http::header::{HeaderName, HeaderValue};

use super::start::Started;
use super::{CellOutput, CellRun};
use crate::error::RunnerError;
use crate::suite::{Intensity, Protocol};

/// Runs the cell's gRPC load and fills its record.
pub(super) fn measure(
    run: &CellRun<'_, '_>,
    mut started: Started,
    out: &mut CellOutput,
) -> Result<(), RunnerError> {
    let config = config(run, &started)?;
    let invalid = |e: gatebench_loadgen::LoadgenError| RunnerError::InvalidLoad {
        reason: e.to_string(),
    };
    config.validate().map_err(invalid)?;
    if let Some(status) = load::probe(&config).map_err(|e| RunnerError::Load {
        reason: e.to_string(),
    })? {
        tracing::warn!("{}: {status}; the load goes on and counts it", run.cell.id);
    }
    // The echo back-ends' counts give connections opened per 1,000 calls, as for an HTTP cell.
    let (output, started_at) = super::measure::own_load(
        run,
        &mut started,
        out,
        || {
            let mut w = config.clone();
            w.duration = run.ctx.suite.warmup;
            w.calls = None;
            load::run(&w).map(drop)
        },
        || load::run(&config),
        |o| o.report.duration_s,
    )?;
    out.record.grpc = Some(config.record(started_at, output.report));
    Ok(())
}

/// The gRPC load of the cell.
fn config(run: &CellRun<'_, '_>, started: &Started) -> Result<GrpcConfig, RunnerError> {
    let g = run.sc.grpc.as_ref().expect("a gRPC scenario");
    let suite = run.ctx.suite;
    let l = &suite.load;
    let invalid = |reason: String| RunnerError::InvalidLoad { reason };
    let addr = SocketAddr::new(started.target.addr, started.target_port);
    let tls = run.cell.protocol == Protocol::H2;
    let (concurrency, rate) = match &run.cell.intensity {
        Intensity::Users(u) => ((u / g.connections).max(1), None),
        Intensity::Rate(r) => (1, Some(*r)),
        Intensity::Program(_) => {
            return Err(invalid(
                "a gRPC scenario takes users or plain rates, not an arrival program".into(),
            ))
        }
    };
    let metadata = l
        .headers
        .iter()
        .map(|line| {
            let (name, value) = gatebench_loadgen::request::parse_header(line)
                .map_err(|e| invalid(e.to_string()))?;
            Ok((
                HeaderName::from_bytes(name.as_bytes()).map_err(|e| invalid(e.to_string()))?,
                HeaderValue::from_str(&value).map_err(|e| invalid(e.to_string()))?,
            ))
        })
        .collect::<Result<Vec<_>, RunnerError>>()?;
    Ok(GrpcConfig {
        url: format!(
            "{}://{addr}{}",
            if tls { "grpcs" } else { "grpc" },
            g.method
        ),
        addr,
        authority: addr.to_string(),
        path: g.method.clone(),
        host: addr.ip().to_string(),
        // Benchmark targets are self-signed, as for the HTTP load of a suite.
        tls: tls.then_some(TlsOptions {
            insecure: true,
            cacert: None,
            sni: None,
            no_resume: false,
        }),
        kind: g.kind,
        message: load::payload_message(run.cell.size as usize),
        messages: g.messages,
        message_rate: g.message_rate,
        connections: g.connections,
        concurrency,
        rate,
        duration: if suite.duration_bound {
            suite.duration
        } else {
            Duration::from_secs(86_400)
        },
        calls: suite.requests,
        deadline: g.deadline,
        metadata,
        timeout: l.timeout,
        max_message: load::MAX_MESSAGE,
        threads: l.threads.map_or_else(
            || std::thread::available_parallelism().map_or(1, |n| n.get()),
            |t| t as usize,
        ),
        thresholds: run.sc.thresholds.clone(),
    })
}
