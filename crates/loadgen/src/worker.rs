//! One worker: an OS thread with its own single-threaded tokio runtime, its own connections and
//! its own statistics. Nothing is shared with other workers while the run goes on; once a second
//! the worker sends its interval statistics to the collector over a channel.
//!
//! Each connection is a "slot" task: take a permit from the schedule, (re)connect if needed,
//! send, read, record. Every permit ends in exactly one outcome, which is what makes the counts
//! add up.

mod http1;
mod http2;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gatebench_model::Outcome;
use tokio::task::LocalSet;

use crate::config::{Arrival, LoadConfig, Protocol};
use crate::connect::{connect, Established, Stream, Transport};
use crate::exchange::{Answer, Failure};
use crate::mark::MarkTable;
use crate::schedule::{Clock, OpenPlan, Permit, Phase, Quota, Schedule, Stop};
use crate::stats::{record, ClassStats, IntervalStats, PhaseStats};
use crate::stream::{StreamBook, StreamStats, StreamWatch};

/// Messages from workers to the collector.
#[derive(Debug)]
pub(crate) enum WorkerMsg {
    /// One second of a worker's results.
    Interval(usize, Box<IntervalStats>),
    /// The worker finished.
    Done(usize, Box<WorkerResult>),
}

/// What a worker hands back at the end.
#[derive(Debug)]
pub(crate) struct WorkerResult {
    /// `[warm-up, measurement]`.
    pub phases: [PhaseStats; 2],
    /// With several requests: the measurement by request class.
    pub classes: Vec<ClassStats>,
    /// User CPU seconds of this thread.
    pub cpu_user: f64,
    /// System CPU seconds of this thread.
    pub cpu_sys: f64,
    /// When its last connection finished.
    pub finished: Instant,
    /// When it saw the run interrupted, if it was.
    pub stopped_at: Option<Instant>,
    /// Its last, partial interval, held back until the run decides which of the requests cut
    /// off at the end stalled (see `run::censor`).
    pub last: IntervalStats,
    /// How the thread itself was kept from running: see [`Stalls`].
    pub stalls: Stalls,
    /// Stream mode: the measurement's stream figures.
    pub stream: StreamStats,
}

/// How long the worker's own thread was kept from running, measured by a task that sleeps
/// 5 ms at a time and notes how much later it woke: the thread starved of a core (other
/// processes, too few cores) or its event loop saturated. During such a stall no request is
/// sent; the open model then sends the overdue ones late and measures them from their due
/// time, charging the generator's stall to the target. Send lag alone cannot see it: an
/// overdue ticket looks the same whether the target or the generator held it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Stalls {
    /// The longest oversleep.
    pub longest: Duration,
    /// Oversleeps longer than [`STALL_COUNTED`].
    pub count: u64,
}

/// Oversleeps beyond this count as stalls (a timer wakes within about a millisecond; a
/// scheduler on a busy machine can add a few).
pub(crate) const STALL_COUNTED: Duration = Duration::from_millis(10);

/// The watcher's sleep between checks.
const WATCH_PERIOD: Duration = Duration::from_millis(5);

/// The fixed inputs of one worker.
#[derive(Debug)]
pub(crate) struct WorkerPlan {
    pub id: usize,
    /// How many workers the run has (a replay deals its requests to them in turn).
    pub workers: usize,
    pub config: Arc<LoadConfig>,
    pub clock: Clock,
    pub connections: u32,
    /// Open model: this worker's part of the arrival curve.
    pub open: Option<OpenPlan>,
    /// Count stop rule: this worker's share of the requests, or the shared count.
    pub quota: Quota,
    /// The caller's interruption and the run's own stop.
    pub stop: Stop,
}

struct Shared {
    config: Arc<LoadConfig>,
    schedule: Schedule,
    transport: Transport,
    /// Bytes written per request, for each of the run's requests (HTTP/2: after the
    /// connection's first, whose header block is longer by the fields it adds to the server's
    /// table).
    req_len: Vec<u64>,
    phases: RefCell<[PhaseStats; 2]>,
    /// With several requests: the measurement by request class.
    classes: RefCell<Vec<ClassStats>>,
    interval: RefCell<IntervalStats>,
    /// When the current interval ends: a settled request's check for a closed second is one
    /// comparison with it (`roll_to`), not a borrow and a sum.
    interval_end: Cell<Instant>,
    /// Woken when the run is interrupted: connections waiting for a future ticket give it up.
    stopped: tokio::sync::Notify,
    /// The thread's own stalls so far.
    stalls: Cell<Stalls>,
    /// Stream mode: the phases' stream figures, shared by the connections' watches.
    stream: StreamBook,
    /// The run's start: interval `i` is the second from `start + i s`.
    start: Instant,
    /// `--mark-header`: the values seen so far.
    marks: Option<Rc<MarkTable>>,
    /// This worker's number, in its interval messages.
    id: usize,
    /// Where each closed second goes.
    tx: Sender<WorkerMsg>,
}

/// How long a settled request took or had waited: `(corrected, uncorrected)`, the first from
/// the intended send time in the open model (from the send in the closed one), the second from
/// the actual send.
#[derive(Debug, Clone, Copy)]
enum Took {
    /// Nothing to record (a failure that ended the request, such as a refused connection).
    Nothing,
    /// A complete response.
    Answered(Duration, Duration),
    /// The per-request timeout fired: a censored value (the latency is at least this). No
    /// uncorrected value when it was never sent (it waited for a stream).
    TimedOut(Duration, Option<Duration>),
    /// Still unanswered (or still connecting) at the run's end; counted in the measurement
    /// phase.
    CutSent(Duration, Option<Duration>),
    /// Due, never sent, and the run ended (open model); the time since it was due.
    CutUnsent(Duration),
}

impl Shared {
    /// Closes the current second and sends it, and every whole second since, when `now` is
    /// past its end: the ticker does this when it wakes at each second's end, and a settled
    /// request does it first, so that a request counts in the second it settled in even when
    /// the ticker wakes a few milliseconds late (a back-end killed on a second's boundary
    /// fails its requests in the second after it, where the event's window looks).
    fn roll_to(&self, now: Instant) {
        if now < self.interval_end.get() {
            return;
        }
        let mut iv = self.interval.borrow_mut();
        while now >= self.start + Duration::from_secs(iv.index + 1) {
            iv.stall_longest = self.stalls.get().longest;
            let snapshot = iv.clone();
            let next = iv.index + 1;
            iv.reset(next);
            self.interval_end
                .set(self.start + Duration::from_secs(next + 1));
            if self
                .tx
                .send(WorkerMsg::Interval(self.id, Box::new(snapshot)))
                .is_err()
            {
                return;
            }
        }
    }

    fn complete(&self, phase: Phase, req: u32, outcome: Outcome, took: Took) {
        // A request still unanswered at the end held its connection through the measurement,
        // whichever phase scheduled it: the measurement is where it shows.
        let phase = match took {
            Took::CutSent(..) => Phase::Measure,
            _ => phase,
        };
        let open = self.schedule_is_open();
        if phase == Phase::Measure {
            if let Some(c) = self.config.requests.class_of(req) {
                record_class(&mut self.classes.borrow_mut()[c], open, outcome, took);
            }
        }
        let mut phases = self.phases.borrow_mut();
        let p = &mut phases[phase as usize];
        p.outcomes.add(outcome, 1);
        let mut iv = self.interval.borrow_mut();
        iv.outcomes.add(outcome, 1);
        match took {
            Took::Nothing => {}
            Took::Answered(corrected, uncorrected) => {
                record(&mut p.latency, corrected);
                record(&mut iv.latency, corrected);
                if open {
                    record(&mut p.latency_uncorrected, uncorrected);
                    record(&mut iv.latency_uncorrected, uncorrected);
                }
            }
            Took::TimedOut(corrected, uncorrected) => {
                record(&mut p.timed_out, corrected);
                record(&mut iv.censored, corrected);
                if let (true, Some(u)) = (open, uncorrected) {
                    record(&mut p.timed_out_uncorrected, u);
                    record(&mut iv.censored_uncorrected, u);
                }
            }
            // Whether these stalled is known only once every worker has finished.
            Took::CutSent(corrected, uncorrected) => {
                record(&mut p.cut, corrected);
                if let (true, Some(u)) = (open, uncorrected) {
                    record(&mut p.cut_uncorrected, u);
                }
            }
            Took::CutUnsent(waited) => record(&mut p.backlog, waited),
        }
    }

    fn schedule_is_open(&self) -> bool {
        self.config.arrival.is_open()
    }

    /// Stream mode: a new connection's watch.
    fn stream_watch(&self) -> Option<StreamWatch> {
        self.config
            .stream
            .map(|spec| StreamWatch::new(spec, self.stream.clone()))
    }
}

/// A settled request of a class, recorded as [`Shared::complete`] records it in the phase.
fn record_class(c: &mut ClassStats, open: bool, outcome: Outcome, took: Took) {
    c.outcomes.add(outcome, 1);
    match took {
        Took::Nothing => {}
        Took::Answered(corrected, uncorrected) => {
            record(&mut c.latency, corrected);
            if open {
                record(&mut c.latency_uncorrected, uncorrected);
            }
        }
        Took::TimedOut(corrected, uncorrected) => {
            record(&mut c.timed_out, corrected);
            if let (true, Some(u)) = (open, uncorrected) {
                record(&mut c.timed_out_uncorrected, u);
            }
        }
        Took::CutSent(corrected, uncorrected) => {
            record(&mut c.cut, corrected);
            if let (true, Some(u)) = (open, uncorrected) {
                record(&mut c.cut_uncorrected, u);
            }
        }
        Took::CutUnsent(waited) => record(&mut c.backlog, waited),
    }
}

/// Runs a worker to completion on the current thread.
pub(crate) fn run(plan: WorkerPlan, tx: Sender<WorkerMsg>) -> WorkerResult {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime only fails to build when the OS is out of resources");
    let cpu0 = thread_cpu();
    let schedule = match (&plan.config.arrival, plan.open) {
        (Arrival::Replay(times), _) => Schedule::replay(
            plan.clock,
            plan.quota,
            times.clone(),
            plan.id,
            plan.workers,
            plan.stop.clone(),
        ),
        (_, None) => Schedule::closed(plan.clock, plan.quota, plan.stop.clone()),
        (_, Some(open)) => Schedule::open(plan.clock, plan.quota, open, plan.stop.clone()),
    }
    .with_mix(plan.config.requests.weights());
    let requests = &plan.config.requests;
    // Several requests: HTTP/2 connections send every header block as literals (see
    // `worker::http2`).
    let literal = requests.templates().len() > 1;
    let shared = Rc::new(Shared {
        config: plan.config.clone(),
        schedule,
        transport: transport(&plan.config),
        req_len: requests
            .templates()
            .iter()
            .map(|t| match plan.config.protocol {
                Protocol::Http1 => t.bytes().len() as u64,
                Protocol::Http2 => t.h2_wire_len(literal) as u64,
            })
            .collect(),
        classes: RefCell::new(vec![ClassStats::default(); requests.classes().len()]),
        phases: RefCell::new([PhaseStats::default(), PhaseStats::default()]),
        interval: RefCell::new(IntervalStats::new(0)),
        interval_end: Cell::new(plan.clock.start + Duration::from_secs(1)),
        stopped: tokio::sync::Notify::new(),
        stalls: Cell::new(Stalls::default()),
        stream: StreamBook::default(),
        start: plan.clock.start,
        marks: plan
            .config
            .mark_header
            .as_deref()
            .map(|h| Rc::new(MarkTable::new(h))),
        id: plan.id,
        tx,
    });
    let local = LocalSet::new();
    let finished = local.block_on(&rt, async {
        let ticker = {
            let shared = shared.clone();
            let start = plan.clock.start;
            tokio::task::spawn_local(async move {
                loop {
                    let index = shared.interval.borrow().index;
                    let at = start + Duration::from_secs(index + 1);
                    tokio::time::sleep_until(at.into()).await;
                    shared.roll_to(Instant::now());
                }
            })
        };
        // Notes when the run is interrupted even if every connection waits on a stalled target
        // and none asks the schedule for a permit (the instant bounds the backlog).
        let watcher = {
            let shared = shared.clone();
            tokio::task::spawn_local(async move {
                watch(&shared.stalls, || shared.schedule.check_stop()).await;
                shared.stopped.notify_waiters();
            })
        };
        let slots: Vec<_> = (0..plan.connections)
            .map(|_| match plan.config.protocol {
                Protocol::Http1 => tokio::task::spawn_local(http1::slot(shared.clone())),
                Protocol::Http2 => tokio::task::spawn_local(http2::slot(shared.clone())),
            })
            .collect();
        for s in slots {
            // A slot never panics by design; if one did, its permit would be lost, so surface it.
            s.await.expect("connection task panicked");
        }
        ticker.abort();
        watcher.abort();
        Instant::now()
    });
    let end = finished;
    let mut last = shared.interval.borrow().clone();
    last.stall_longest = shared.stalls.get().longest;
    // The last interval ends with the worker, part-way through its second.
    last.length = end
        .saturating_duration_since(plan.clock.start + Duration::from_secs(last.index))
        .min(Duration::from_secs(1));
    let mut phases = shared
        .phases
        .replace([PhaseStats::default(), PhaseStats::default()]);
    let mut classes = shared.classes.take();
    let open = plan.config.arrival.is_open();
    shared.schedule.backlog(end, |phase, waited, req| {
        let p = &mut phases[phase as usize];
        p.outcomes.add(Outcome::NeverSent, 1);
        record(&mut p.backlog, waited);
        last.outcomes.add(Outcome::NeverSent, 1);
        if phase == Phase::Measure {
            if let Some(c) = plan.config.requests.class_of(req) {
                record_class(
                    &mut classes[c],
                    open,
                    Outcome::NeverSent,
                    Took::CutUnsent(waited),
                );
            }
        }
    });
    let stream = std::mem::take(&mut shared.stream.borrow_mut()[1]);
    let cpu1 = thread_cpu();
    WorkerResult {
        phases,
        classes,
        cpu_user: cpu1.0 - cpu0.0,
        cpu_sys: cpu1.1 - cpu0.1,
        finished,
        stopped_at: shared.schedule.stopped_at(),
        last,
        stalls: shared.stalls.get(),
        stream,
    }
}

/// Sleeps [`WATCH_PERIOD`] at a time until `stopped` says so, noting in `stalls` how much later
/// than asked each sleep ended: the thread's own stalls.
async fn watch(stalls: &Cell<Stalls>, stopped: impl Fn() -> bool) {
    while !stopped() {
        let before = Instant::now();
        tokio::time::sleep(WATCH_PERIOD).await;
        let late = before.elapsed().saturating_sub(WATCH_PERIOD);
        let mut st = stalls.get();
        st.longest = st.longest.max(late);
        st.count += u64::from(late > STALL_COUNTED);
        stalls.set(st);
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

impl Shared {
    /// Sleeps for the back-off after `failures`, never past the end of the run.
    async fn back_off(&self, failures: u32) {
        let pause = backoff(failures);
        if !pause.is_zero() {
            let until = Instant::now() + pause;
            let until = self
                .schedule
                .clock()
                .deadline
                .map_or(until, |d| until.min(d));
            tokio::time::sleep_until(until.into()).await;
        }
    }

    /// Open model: waits for the ticket's due time and returns the instant latency is measured
    /// from — the due time if the ticket was already overdue (every connection was busy: the
    /// wait is the target's), else the actual send (the timer's lateness is the generator's and
    /// goes to the send-lag histogram). Closed model: now. `None` when the run was interrupted
    /// before the ticket fell due: nobody asks for it any more, and it is not counted.
    async fn start_of(&self, permit: Permit) -> Option<Instant> {
        let start = self.wait_for(permit).await;
        if start.is_some() {
            self.interval.borrow_mut().sent += 1;
        }
        start
    }

    /// Waits until the permit's due time (open model); the instant the request is sent from.
    async fn wait_for(&self, permit: Permit) -> Option<Instant> {
        match permit.due {
            Some(due) => {
                let now = Instant::now();
                if due > now {
                    // Registered before the flag is read, so a stop between the two wakes us.
                    let stopped = self.stopped.notified();
                    if self.schedule.check_stop() {
                        return None;
                    }
                    tokio::select! {
                        biased;
                        _ = stopped => return None,
                        _ = tokio::time::sleep_until(due.into()) => {}
                    }
                    let actual = Instant::now();
                    record(
                        &mut self.phases.borrow_mut()[permit.phase as usize].send_lag,
                        actual - due,
                    );
                    Some(actual)
                } else {
                    Some(due)
                }
            }
            None => Some(Instant::now()),
        }
    }

    /// Opens a connection (TCP, TLS) within the connect timeout, cut short by the run's end,
    /// and records it. On failure, the permit's outcome.
    async fn open_connection(
        &self,
        phase: Phase,
        had_conn: bool,
    ) -> Result<(Stream, Established), Outcome> {
        let config = &self.config;
        let deadline = self.schedule.clock().deadline;
        let t0 = Instant::now();
        let limit = deadline.map_or(config.connect_timeout, |d| {
            config.connect_timeout.min(d.saturating_duration_since(t0))
        });
        match connect(config.target.addr, &self.transport, limit).await {
            Ok((stream, est)) => {
                let mut phases = self.phases.borrow_mut();
                let p = &mut phases[phase as usize];
                p.conns.opened += 1;
                self.interval.borrow_mut().opened += 1;
                if had_conn {
                    p.conns.reconnects += 1;
                }
                record(&mut p.connect_time, t0.elapsed());
                if let Some((resumed, took)) = est.tls {
                    if resumed {
                        p.conns.tls_resumed += 1;
                    } else {
                        p.conns.tls_full += 1;
                    }
                    record(&mut p.tls_handshake, took);
                }
                Ok((stream, est))
            }
            Err(outcome) => {
                if deadline.is_some_and(|d| Instant::now() >= d) && limit < config.connect_timeout {
                    // The run ended while connecting: not the target's fault.
                    return Err(Outcome::InFlight);
                }
                self.phases.borrow_mut()[phase as usize]
                    .conns
                    .connect_failures += 1;
                Err(outcome)
            }
        }
    }

    /// The instant a request sent at `sent_at` gives up, and whether that is the run's end.
    fn give_up_at(&self, sent_at: Instant) -> (Instant, bool) {
        let limit = sent_at + self.config.timeout;
        match self.schedule.clock().deadline {
            Some(d) if d < limit => (d, true),
            _ => (limit, false),
        }
    }

    /// Records how a sent request ended — answered, failed, or cut off by its timeout or the
    /// run's end — and says what that means for the connection it used.
    fn settle(
        &self,
        phase: Phase,
        req: u32,
        result: Option<Result<Answer, Failure>>,
        start: Instant,
        sent_at: Instant,
        by_deadline: bool,
    ) -> Settled {
        let done = Instant::now();
        self.roll_to(done);
        match result {
            Some(Ok(answer)) => {
                if answer.outcome == Outcome::Ok {
                    self.ok_at(done, answer.mark);
                }
                self.count_sent(phase, req, answer.bytes_read);
                self.complete(
                    phase,
                    req,
                    answer.outcome,
                    Took::Answered(done - start, done - sent_at),
                );
                Settled::Answered {
                    reusable: answer.reusable,
                }
            }
            Some(Err(f)) => {
                self.count_sent(phase, req, f.bytes_read);
                self.complete(phase, req, f.outcome, Took::Nothing);
                Settled::Failed(f.outcome)
            }
            None => {
                self.count_sent(phase, req, 0);
                let (corrected, uncorrected) = (done - start, Some(done - sent_at));
                if by_deadline {
                    self.complete(
                        phase,
                        req,
                        Outcome::InFlight,
                        Took::CutSent(corrected, uncorrected),
                    );
                } else {
                    self.complete(
                        phase,
                        req,
                        Outcome::Timeout,
                        Took::TimedOut(corrected, uncorrected),
                    );
                }
                Settled::CutOff
            }
        }
    }

    /// A successful response completed at `done`: its millisecond in the second, and the
    /// marked value it carried.
    fn ok_at(&self, done: Instant, mark: Option<u8>) {
        let mut iv = self.interval.borrow_mut();
        let second = self.start + Duration::from_secs(iv.index);
        let ms = done.saturating_duration_since(second).as_millis() as usize;
        match (mark, &self.marks) {
            (Some(id), Some(t)) => {
                t.with_value(id, |v| iv.ok_at(ms, Some(v)));
            }
            _ => iv.ok_at(ms, None),
        }
    }

    /// Records response bytes read for no request that was written (a server's stray bytes
    /// found before a kept connection was used again).
    fn count_read(&self, phase: Phase, bytes_read: u64) {
        self.phases.borrow_mut()[phase as usize].bytes_read += bytes_read;
    }

    /// Records a request that was written (whatever came back).
    fn count_sent(&self, phase: Phase, req: u32, bytes_read: u64) {
        let mut phases = self.phases.borrow_mut();
        let p = &mut phases[phase as usize];
        p.sent += 1;
        p.bytes_written += self.req_len[req as usize];
        p.bytes_read += bytes_read;
    }
}

/// What a settled request means for its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    /// A complete response; `reusable` when the connection may carry the next request.
    Answered { reusable: bool },
    /// No complete response, for this reason.
    Failed(Outcome),
    /// Timed out, or still outstanding at the run's end.
    CutOff,
}

/// What a request that ended before it was sent had waited, by its class: a ticket with no
/// stream before the end joins the backlog, a wait for a stream cut by the timeout timed out;
/// anything else has no latency — a refused connection or GOAWAY failed, and a connection still
/// being opened when the run ended (`in_flight`) says nothing of the target's answers.
fn unsent_took(outcome: Outcome, start: Instant) -> Took {
    let waited = Instant::now().saturating_duration_since(start);
    match outcome {
        Outcome::NeverSent => Took::CutUnsent(waited),
        Outcome::Timeout => Took::TimedOut(waited, None),
        _ => Took::Nothing,
    }
}

/// The transport for this worker's connections. Each worker has its own TLS configuration and
/// so its own session cache: nothing shared between threads.
pub(crate) fn transport(config: &LoadConfig) -> Transport {
    if !config.target.tls {
        return Transport::Tcp;
    }
    let alpn: &[&[u8]] = match config.protocol {
        Protocol::Http1 => &[b"http/1.1"],
        Protocol::Http2 => &[b"h2"],
    };
    Transport::Tls(
        crate::tls::client(&config.tls, &config.target.host, alpn)
            .expect("the TLS configuration was validated by LoadConfig::try_new"),
    )
}

/// This thread's (user, system) CPU seconds.
///
/// `getrusage(RUSAGE_THREAD)` through libc: neither std nor rustix reads a thread's user and
/// system times apart (rustix's `clock_gettime(ThreadCPUTime)` is their sum, and the record
/// reports both).
#[allow(unsafe_code)]
fn thread_cpu() -> (f64, f64) {
    // SAFETY: `rusage` is plain integers, for which all-zero bytes are a valid value;
    // getrusage writes into that struct, which we own, and RUSAGE_THREAD is valid on Linux.
    let (rc, ru) = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        (libc::getrusage(libc::RUSAGE_THREAD, &mut ru), ru)
    };
    if rc != 0 {
        return (0.0, 0.0);
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task that blocks the thread for 250 ms (as a starved thread would be kept from
    /// running) shows as a stall of at least that long; ordinary sleeps do not.
    #[test]
    fn a_blocked_thread_shows_as_a_stall() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = LocalSet::new();
        let stalls = Rc::new(Cell::new(Stalls::default()));
        let done = Rc::new(Cell::new(false));
        local.block_on(&rt, async {
            let w = {
                let (stalls, done) = (stalls.clone(), done.clone());
                tokio::task::spawn_local(async move { watch(&stalls, || done.get()).await })
            };
            tokio::time::sleep(Duration::from_millis(30)).await;
            std::thread::sleep(Duration::from_millis(250));
            tokio::time::sleep(Duration::from_millis(30)).await;
            done.set(true);
            w.await.unwrap();
        });
        let st = stalls.get();
        assert!(st.longest >= Duration::from_millis(240), "{st:?}");
        assert!(st.count >= 1, "{st:?}");
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        assert_eq!(backoff(0), Duration::ZERO);
        assert_eq!(backoff(1), Duration::from_millis(10));
        assert_eq!(backoff(2), Duration::from_millis(20));
        assert_eq!(backoff(30), Duration::from_secs(1));
    }
}
