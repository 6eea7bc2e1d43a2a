//! One worker: an OS thread with its own single-threaded tokio runtime, its own connections and
//! its own statistics. Nothing is shared with other workers while the run goes on; once a second
//! the worker sends its interval statistics to the collector over a channel.
//!
//! Each connection is a "slot" task: take a permit from the schedule, (re)connect if needed,
//! send, read, record. Every permit ends in exactly one outcome, which is what makes the counts
//! add up.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gatebench_model::Outcome;
use tokio::task::LocalSet;

use crate::config::LoadConfig;
use crate::connect::{connect, Transport};
use crate::http1::H1Conn;
use crate::schedule::{Clock, Permit, Phase, Schedule};
use crate::stats::{record, IntervalStats, PhaseStats};

/// Messages from workers to the collector.
#[derive(Debug)]
pub(crate) enum WorkerMsg {
    /// One second of a worker's results.
    Interval(usize, IntervalStats),
    /// The worker finished.
    Done(usize, Box<WorkerResult>),
}

/// What a worker hands back at the end.
#[derive(Debug)]
pub(crate) struct WorkerResult {
    /// `[warm-up, measurement]`.
    pub phases: [PhaseStats; 2],
    /// User CPU seconds of this thread.
    pub cpu_user: f64,
    /// System CPU seconds of this thread.
    pub cpu_sys: f64,
    /// When its last connection finished.
    pub finished: Instant,
}

/// The fixed inputs of one worker.
#[derive(Debug)]
pub(crate) struct WorkerPlan {
    pub id: usize,
    pub config: Arc<LoadConfig>,
    pub clock: Clock,
    pub connections: u32,
    /// Open model: this worker's share of the rate.
    pub rate: Option<f64>,
    /// Open model: offset of this worker's first ticket (staggers workers).
    pub offset: Duration,
    /// Count stop rule: this worker's share of the requests.
    pub quota: Option<u64>,
    /// Interruption flag shared with the caller.
    pub stop: Arc<AtomicBool>,
}

struct Shared {
    config: Arc<LoadConfig>,
    schedule: Schedule,
    transport: Transport,
    phases: RefCell<[PhaseStats; 2]>,
    interval: RefCell<IntervalStats>,
}

impl Shared {
    fn complete(&self, phase: Phase, outcome: Outcome, latency: Option<(Duration, Duration)>) {
        let mut phases = self.phases.borrow_mut();
        let p = &mut phases[phase as usize];
        p.outcomes.add(outcome, 1);
        let mut iv = self.interval.borrow_mut();
        iv.outcomes.add(outcome, 1);
        if let Some((corrected, uncorrected)) = latency {
            record(&mut p.latency, corrected);
            record(&mut iv.latency, corrected);
            if self.schedule_is_open() {
                record(&mut p.latency_uncorrected, uncorrected);
                record(&mut iv.latency_uncorrected, uncorrected);
            }
        }
    }

    fn schedule_is_open(&self) -> bool {
        matches!(self.config.arrival, crate::config::Arrival::Open { .. })
    }
}

/// Runs a worker to completion on the current thread.
pub(crate) fn run(plan: WorkerPlan, tx: Sender<WorkerMsg>) -> WorkerResult {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime only fails to build when the OS is out of resources");
    let cpu0 = thread_cpu();
    let schedule = match plan.rate {
        None => Schedule::closed(plan.clock, plan.quota, plan.stop.clone()),
        Some(rate) => Schedule::open(plan.clock, plan.quota, rate, plan.offset, plan.stop.clone()),
    };
    let shared = Rc::new(Shared {
        config: plan.config.clone(),
        schedule,
        transport: Transport::Tcp,
        phases: RefCell::new([PhaseStats::default(), PhaseStats::default()]),
        interval: RefCell::new(IntervalStats::new(0)),
    });
    let local = LocalSet::new();
    let id = plan.id;
    let finished = local.block_on(&rt, async {
        let ticker = {
            let shared = shared.clone();
            let tx = tx.clone();
            let start = plan.clock.start;
            tokio::task::spawn_local(async move {
                let mut index = 0u64;
                loop {
                    let at = start + Duration::from_secs(index + 1);
                    tokio::time::sleep_until(at.into()).await;
                    let mut iv = shared.interval.borrow_mut();
                    let snapshot = iv.clone();
                    index += 1;
                    iv.reset(index);
                    drop(iv);
                    if tx.send(WorkerMsg::Interval(id, snapshot)).is_err() {
                        return;
                    }
                }
            })
        };
        let slots: Vec<_> = (0..plan.connections)
            .map(|_| tokio::task::spawn_local(slot(shared.clone())))
            .collect();
        for s in slots {
            // A slot never panics by design; if one did, its permit would be lost, so surface it.
            s.await.expect("connection task panicked");
        }
        ticker.abort();
        Instant::now()
    });
    let end = finished;
    let backlog = shared.schedule.never_sent(end);
    let last = shared.interval.borrow().clone();
    let mut phases = shared
        .phases
        .replace([PhaseStats::default(), PhaseStats::default()]);
    let mut last = last;
    for (i, n) in backlog.iter().enumerate() {
        phases[i].outcomes.add(Outcome::NeverSent, *n);
        last.outcomes.add(Outcome::NeverSent, *n);
    }
    let _ = tx.send(WorkerMsg::Interval(id, last));
    let cpu1 = thread_cpu();
    WorkerResult {
        phases,
        cpu_user: cpu1.0 - cpu0.0,
        cpu_sys: cpu1.1 - cpu0.1,
        finished,
    }
}

/// Back-off after consecutive failures without a response: 10 ms doubling to 1 s. Keeps a dead
/// target from making the generator spin.
fn backoff(failures: u32) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    Duration::from_millis(10u64 << (failures - 1).min(7)).min(Duration::from_secs(1))
}

/// One connection's loop.
async fn slot(shared: Rc<Shared>) {
    let config = shared.config.clone();
    let clock = *shared.schedule.clock();
    let mut conn: Option<H1Conn<tokio::net::TcpStream>> = None;
    let mut had_conn = false;
    let mut failures = 0u32;
    let req = config.request.clone();
    let req_len = req.bytes().len() as u64;
    let timer = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(timer);
    while let Some(Permit { due, phase }) = shared.schedule.next() {
        // Back off after failures, but never past the end of the run.
        let pause = backoff(failures);
        if !pause.is_zero() {
            let until = Instant::now() + pause;
            let until = clock.deadline.map_or(until, |d| until.min(d));
            tokio::time::sleep_until(until.into()).await;
        }
        // Open model: wait for the ticket, or measure from its due time if it is overdue.
        let start = match due {
            Some(due) => {
                let now = Instant::now();
                if due > now {
                    tokio::time::sleep_until(due.into()).await;
                    let actual = Instant::now();
                    record(
                        &mut shared.phases.borrow_mut()[phase as usize].send_lag,
                        actual - due,
                    );
                    actual
                } else {
                    due
                }
            }
            None => Instant::now(),
        };
        let c = match conn.as_mut() {
            Some(c) => c,
            None => {
                let t0 = Instant::now();
                let limit = clock.deadline.map_or(config.connect_timeout, |d| {
                    config.connect_timeout.min(d.saturating_duration_since(t0))
                });
                match connect(config.target.addr, &shared.transport, limit).await {
                    Ok(stream) => {
                        let mut phases = shared.phases.borrow_mut();
                        let p = &mut phases[phase as usize];
                        p.conns.opened += 1;
                        if had_conn {
                            p.conns.reconnects += 1;
                        }
                        record(&mut p.connect_time, t0.elapsed());
                        had_conn = true;
                        conn.insert(H1Conn::new(stream))
                    }
                    Err(mut outcome) => {
                        let now = Instant::now();
                        if outcome == Outcome::ConnectTimeout
                            && clock.deadline.is_some_and(|d| now >= d)
                            && limit < config.connect_timeout
                        {
                            // The run ended while connecting: not the target's fault.
                            outcome = Outcome::InFlight;
                        } else {
                            shared.phases.borrow_mut()[phase as usize]
                                .conns
                                .connect_failures += 1;
                            failures += 1;
                        }
                        shared.complete(phase, outcome, None);
                        continue;
                    }
                }
            }
        };
        let sent_at = Instant::now();
        let mut limit = sent_at + config.timeout;
        let mut by_deadline = false;
        if let Some(d) = clock.deadline {
            if d < limit {
                limit = d;
                by_deadline = true;
            }
        }
        timer.as_mut().reset(limit.into());
        let result = tokio::select! {
            biased;
            r = c.exchange(&req, config.verify) => Some(r),
            _ = &mut timer => None,
        };
        let done = Instant::now();
        {
            let mut phases = shared.phases.borrow_mut();
            let p = &mut phases[phase as usize];
            p.sent += 1;
            p.bytes_written += req_len;
        }
        match result {
            Some(Ok(answer)) => {
                shared.phases.borrow_mut()[phase as usize].bytes_read += answer.bytes_read;
                shared.complete(phase, answer.outcome, Some((done - start, done - sent_at)));
                failures = 0;
                if !answer.reusable || !config.keepalive {
                    conn = None;
                }
            }
            Some(Err(f)) => {
                shared.phases.borrow_mut()[phase as usize].bytes_read += f.bytes_read;
                shared.complete(phase, f.outcome, None);
                failures += 1;
                conn = None;
            }
            None => {
                let outcome = if by_deadline {
                    Outcome::InFlight
                } else {
                    Outcome::Timeout
                };
                shared.complete(phase, outcome, None);
                // A connection with an unanswered request cannot carry the next one.
                conn = None;
            }
        }
    }
}

/// This thread's (user, system) CPU seconds.
fn thread_cpu() -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we own; RUSAGE_THREAD is valid on Linux.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if rc != 0 {
        return (0.0, 0.0);
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        assert_eq!(backoff(0), Duration::ZERO);
        assert_eq!(backoff(1), Duration::from_millis(10));
        assert_eq!(backoff(2), Duration::from_millis(20));
        assert_eq!(backoff(30), Duration::from_secs(1));
    }
}
