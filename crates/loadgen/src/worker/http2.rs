//! One HTTP/2 connection's loops: the connection slot (connect, run its stream slots, reconnect
//! when it ends) and one loop per stream slot. Streams are gated below the server's limit by
//! [`H2Conn`]; which comes first, the permit or the free stream, is the schedule's to say
//! ([`crate::schedule::Schedule::slot_first`]).

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use gatebench_model::Outcome;

use super::{unsent_took, Settled, Shared, Took};
use crate::http2::{self, H2Conn};
use crate::schedule::Permit;

/// Why a stream loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamEnd {
    /// No more permits: the run is over for this worker.
    Done,
    /// The connection ended; the slot reconnects.
    ConnectionLost,
}

/// One HTTP/2 connection: connects, runs `streams` stream loops on it, reconnects when it
/// ends, until the schedule is exhausted.
pub(super) async fn slot(shared: Rc<Shared>) {
    let config = shared.config.clone();
    let streams = config.streams;
    let mut had_conn = false;
    let mut failures = 0u32;
    loop {
        // The first permit pays for the connection attempt: if it fails, that request failed.
        let Some(first) = shared.schedule.next() else {
            return;
        };
        shared.back_off(failures).await;
        let Some(start) = shared.start_of(first).await else {
            continue;
        };
        let conn = match shared.open_connection(first.phase, had_conn).await {
            Ok((stream, est)) => {
                if config.target.tls && !est.alpn_h2 {
                    // The server did not agree to HTTP/2: nothing can be sent.
                    failures += 1;
                    shared.complete(
                        first.phase,
                        first.req,
                        Outcome::ProtocolError,
                        Took::Nothing,
                    );
                    continue;
                }
                match http2::handshake(stream, streams, config.connect_timeout).await {
                    Ok(c) => {
                        // Several requests cannot all be the few indices of a connection's
                        // first request's table entries: each is sent as literals.
                        if config.requests.templates().len() > 1 {
                            c.literal_only();
                        }
                        c
                    }
                    Err(o) => {
                        failures += 1;
                        shared.complete(first.phase, first.req, o, Took::Nothing);
                        continue;
                    }
                }
            }
            Err(outcome) => {
                if outcome != Outcome::InFlight {
                    failures += 1;
                }
                shared.complete(first.phase, first.req, outcome, unsent_took(outcome, start));
                continue;
            }
        };
        had_conn = true;
        let answered = Rc::new(Cell::new(0u64));
        let loops: Vec<_> = (0..streams)
            .map(|i| {
                let first = (i == 0).then_some((first, start));
                tokio::task::spawn_local(h2_stream_loop(
                    shared.clone(),
                    conn.clone(),
                    first,
                    answered.clone(),
                ))
            })
            .collect();
        let mut done = false;
        for l in loops {
            done |= l.await.expect("stream task panicked") == StreamEnd::Done;
        }
        {
            let mut phases = shared.phases.borrow_mut();
            let phase = shared.schedule.clock().phase_at(Instant::now()) as usize;
            let p = &mut phases[phase];
            p.conns.max_streams = p.conns.max_streams.max(conn.max_in_use());
        }
        failures = if answered.get() > 0 { 0 } else { failures + 1 };
        if done {
            return;
        }
    }
}

/// One stream slot of an HTTP/2 connection.
///
/// Closed model: the slot first waits for a free stream, then takes a permit, so a user never
/// holds a request that cannot be sent. Open model: the ticket is taken first and waiting for a
/// free stream counts in its latency (the request is due; the target's stream limit delays it).
/// Nothing is sent once the request's give-up instant has passed.
async fn h2_stream_loop(
    shared: Rc<Shared>,
    conn: Rc<H2Conn>,
    mut first: Option<(Permit, Instant)>,
    answered: Rc<Cell<u64>>,
) -> StreamEnd {
    let config = shared.config.clone();
    let slot_first = shared.schedule.slot_first();
    let timer = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(timer);
    loop {
        let (permit, start, limit, by_deadline) = match first.take() {
            Some((permit, start)) => {
                let (limit, by_deadline) = shared.give_up_at(start.max(Instant::now()));
                timer.as_mut().reset(limit.into());
                if !acquire_before(&conn, &mut timer).await {
                    // The connection was opened for this request: it cannot be lost silently.
                    let outcome = stream_wait_outcome(&conn, by_deadline);
                    shared.complete(
                        permit.phase,
                        permit.req,
                        outcome,
                        unsent_took(outcome, start),
                    );
                    return StreamEnd::ConnectionLost;
                }
                (permit, start, limit, by_deadline)
            }
            None if !slot_first => {
                if conn.is_dead() {
                    return StreamEnd::ConnectionLost;
                }
                let Some(permit) = shared.schedule.next() else {
                    return StreamEnd::Done;
                };
                let Some(start) = shared.start_of(permit).await else {
                    continue;
                };
                let (limit, by_deadline) = shared.give_up_at(start.max(Instant::now()));
                timer.as_mut().reset(limit.into());
                if !acquire_before(&conn, &mut timer).await {
                    let outcome = stream_wait_outcome(&conn, by_deadline);
                    shared.complete(
                        permit.phase,
                        permit.req,
                        outcome,
                        unsent_took(outcome, start),
                    );
                    if conn.is_dead() {
                        return StreamEnd::ConnectionLost;
                    }
                    continue;
                }
                (permit, start, limit, by_deadline)
            }
            None => {
                if !conn.acquire().await {
                    return StreamEnd::ConnectionLost;
                }
                let Some(permit) = shared.schedule.next() else {
                    conn.release();
                    return StreamEnd::Done;
                };
                let start = Instant::now();
                let (limit, by_deadline) = shared.give_up_at(start);
                timer.as_mut().reset(limit.into());
                (permit, start, limit, by_deadline)
            }
        };
        let phase = permit.phase;
        let req = config.requests.get(permit.req);
        let sent_at = Instant::now();
        let result = if sent_at >= limit {
            None
        } else {
            tokio::select! {
                biased;
                r = conn.exchange(req, config.verify) => Some(r),
                _ = &mut timer => None,
            }
        };
        conn.release();
        if result.is_none() && sent_at >= limit {
            // A stream was free but the time was up before sending (a late timer wake-up at the
            // run's end is the generator's, not the target's): nothing was sent.
            let outcome = if by_deadline {
                Outcome::InFlight
            } else {
                Outcome::Timeout
            };
            shared.complete(phase, permit.req, outcome, unsent_took(outcome, start));
            continue;
        }
        // A cut-off stream was reset (RST_STREAM CANCEL) when its response future was dropped;
        // the connection itself stays usable.
        match shared.settle(phase, permit.req, result, start, sent_at, by_deadline) {
            Settled::Answered { .. } => {
                answered.set(answered.get() + 1);
                if !config.keepalive {
                    return StreamEnd::ConnectionLost;
                }
            }
            Settled::Failed(outcome) => {
                let connection_level = matches!(
                    outcome,
                    Outcome::GoAway
                        | Outcome::Reset
                        | Outcome::IoError
                        | Outcome::Incomplete
                        | Outcome::ProtocolError
                );
                if connection_level || conn.is_dead() {
                    return StreamEnd::ConnectionLost;
                }
            }
            Settled::CutOff => {}
        }
    }
}

/// Waits for a free stream until `timer` fires. `false` when the timer fired first or the
/// connection died; a stream acquired is held by the caller.
async fn acquire_before(conn: &H2Conn, timer: &mut std::pin::Pin<&mut tokio::time::Sleep>) -> bool {
    // A free stream is taken even if the timer has fired meanwhile; the caller then checks the
    // time before sending anything.
    tokio::select! {
        biased;
        ok = conn.acquire() => ok,
        _ = timer.as_mut() => false,
    }
}

/// The class of a request that never got a stream: the connection died (GOAWAY), or its time
/// ran out — at the run's end it was never sent, otherwise it timed out waiting.
fn stream_wait_outcome(conn: &H2Conn, by_deadline: bool) -> Outcome {
    if conn.is_dead() {
        Outcome::GoAway
    } else if by_deadline {
        Outcome::NeverSent
    } else {
        Outcome::Timeout
    }
}
