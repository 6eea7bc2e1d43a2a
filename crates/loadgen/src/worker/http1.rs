//! One HTTP/1.1 connection's loop: take a permit, (re)connect if needed, send, read, settle.
//! A connection carries one request at a time; a request left unanswered (timed out, cut off)
//! or failed takes its connection with it, and so do bytes the server sent while no request
//! was outstanding (found before the next request is written).

use std::rc::Rc;
use std::time::{Duration, Instant};

use gatebench_model::Outcome;

use super::{unsent_took, Settled, Shared, Took};
use crate::connect::Stream;
use crate::http1::H1Conn;

/// One HTTP/1.1 connection's loop.
pub(super) async fn slot(shared: Rc<Shared>) {
    let config = shared.config.clone();
    let mut conn: Option<H1Conn<Stream>> = None;
    let mut had_conn = false;
    let mut failures = 0u32;
    let timer = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(timer);
    while let Some(permit) = shared.schedule.next() {
        shared.back_off(failures).await;
        let Some(start) = shared.start_of(permit).await else {
            continue;
        };
        let phase = permit.phase;
        let req = config.requests.get(permit.req);
        if let Some(c) = conn.as_mut() {
            // Bytes a server sent after the last response had been settled belong to no
            // request: this one is counted as their protocol error, unsent, and the connection
            // goes (docs/architecture.md, "HTTP/1.1").
            if let Some((outcome, read)) = c.stray_before_reuse() {
                failures += 1;
                conn = None;
                shared.count_read(phase, read);
                shared.complete(phase, permit.req, outcome, Took::Nothing);
                continue;
            }
        }
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match shared.open_connection(phase, had_conn).await {
                Ok((stream, _)) => {
                    had_conn = true;
                    conn.insert(
                        H1Conn::new(stream)
                            .with_stream(shared.stream_watch())
                            .with_marks(shared.marks.clone()),
                    )
                }
                Err(outcome) => {
                    if outcome != Outcome::InFlight {
                        failures += 1;
                    }
                    shared.complete(phase, permit.req, outcome, unsent_took(outcome, start));
                    continue;
                }
            },
        };
        let sent_at = Instant::now();
        let (limit, by_deadline) = shared.give_up_at(sent_at);
        if by_deadline && sent_at >= limit {
            // The run ended while its connection was being opened: in flight, like a connect
            // cut short by the end.
            shared.complete(phase, permit.req, Outcome::InFlight, Took::Nothing);
            continue;
        }
        if let Some(w) = c.stream_mut() {
            w.begin(phase as usize, start);
        }
        timer.as_mut().reset(limit.into());
        let result = tokio::select! {
            biased;
            r = c.exchange(req, config.verify) => Some(r),
            _ = &mut timer => None,
        };
        match shared.settle(phase, permit.req, result, start, sent_at, by_deadline) {
            Settled::Answered { reusable } => {
                failures = 0;
                if !reusable || !config.keepalive {
                    conn = None;
                }
            }
            Settled::Failed(_) => {
                failures += 1;
                conn = None;
            }
            // A connection with an unanswered request cannot carry the next one.
            Settled::CutOff => conn = None,
        }
    }
}
