//! When each request is sent: the arrival model combined with the stop rule.
//!
//! The arrival model (closed or open) and the stop rule (duration or count) are independent
//! values; this module is the one place where they meet, so the connection loop has a single
//! shape whatever the combination (unlike a `work_*` function per combination).
//!
//! In the open model each worker owns a ticket dispenser: ticket `k` is due at
//! `base + k × interval`. A connection that becomes free takes the next ticket. If the ticket is
//! already due (every connection was busy: the target is slow), latency is measured from the
//! ticket's due time, so the waiting shows in the result — wrk2's correction of coordinated
//! omission. If the ticket is in the future, the connection sleeps until it and latency is
//! measured from the actual send; the timer's lateness is the generator's own and is recorded
//! apart as send lag for the self-check.
//!
//! A replay's tickets are its recorded requests at their own times, dealt to the workers in
//! turn (worker `i` of `n` takes requests `i`, `i + n`, …); each ticket carries its request. A
//! mix's requests are picked per permit (and per backlog ticket) by the worker's
//! [`Picker`](crate::mix::Picker).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::arrival::{Curve, ExpGaps, Spacing};
use crate::classes::ReplayTimes;
use crate::mix::Picker;

/// Which phase a request belongs to (by its scheduled time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Warmup = 0,
    Measure = 1,
}

/// The times that bound a run, shared by every worker.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    /// Start of the run (and of the warm-up).
    pub start: Instant,
    /// Start of the measurement phase.
    pub measure_start: Instant,
    /// End of the measurement phase, when a duration is set.
    pub deadline: Option<Instant>,
}

impl Clock {
    pub(crate) fn phase_at(&self, t: Instant) -> Phase {
        if t < self.measure_start {
            Phase::Warmup
        } else {
            Phase::Measure
        }
    }
}

/// Permission to send one request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Permit {
    /// Open model: when the request should be sent.
    pub due: Option<Instant>,
    /// The phase it counts in.
    pub phase: Phase,
    /// Which of the run's requests to send (an index into its `RequestSet`).
    pub req: u32,
}

/// How many measurement requests may still be scheduled (count stop rule).
///
/// In the open model each worker has its own share, in proportion to its share of the rate, so
/// that every worker's tickets run out at the same instant (N ÷ R after the start). In the
/// closed model the workers draw from one shared count: a worker whose connections answer
/// faster sends more, and the run ends when N were sent, however threads and connections
/// divide. One atomic decrement per request, only with `-n`.
#[derive(Debug)]
pub(crate) enum Quota {
    /// No count stop rule.
    Unlimited,
    /// This worker's own share.
    Own(Cell<u64>),
    /// A count shared by every worker.
    Shared(Arc<AtomicU64>),
}

impl Quota {
    /// Takes one request from the quota; false when it is exhausted.
    fn take(&self) -> bool {
        match self {
            Quota::Unlimited => true,
            Quota::Own(c) => {
                let q = c.get();
                if q == 0 {
                    return false;
                }
                c.set(q - 1);
                true
            }
            Quota::Shared(a) => a
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |q| q.checked_sub(1))
                .is_ok(),
        }
    }

    /// What is left, `None` without a count rule.
    fn left(&self) -> Option<u64> {
        match self {
            Quota::Unlimited => None,
            Quota::Own(c) => Some(c.get()),
            Quota::Shared(a) => Some(a.load(Ordering::Relaxed)),
        }
    }
}

/// What ends every worker's schedule early: the caller's flag (Ctrl-C, a suite's interrupt) or
/// the run's own (an `abort` threshold). Two flags, so that a run that stops itself never looks
/// to its caller like an interrupt.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stop {
    caller: Arc<AtomicBool>,
    run: Arc<AtomicBool>,
}

impl Stop {
    /// Stops on `caller`'s flag, or on the run's own.
    pub(crate) fn new(caller: Arc<AtomicBool>) -> Stop {
        Stop {
            caller,
            run: Arc::default(),
        }
    }

    /// The run's own flag, for what decides to stop it.
    pub(crate) fn run_flag(&self) -> Arc<AtomicBool> {
        self.run.clone()
    }

    /// Whether either flag is set.
    #[inline]
    pub(crate) fn is_set(&self) -> bool {
        // Relaxed loads of lines written once: no contention on the hot path.
        self.caller.load(Ordering::Relaxed) || self.run.load(Ordering::Relaxed)
    }
}

/// One worker's schedule. Single-threaded but for the shared count of [`Quota::Shared`].
#[derive(Debug)]
pub(crate) struct Schedule {
    clock: Clock,
    /// Measurement requests that may still be scheduled (count stop rule).
    quota: Quota,
    /// Open model: ticket spacing and the first ticket's time.
    open: Option<Tickets>,
    /// Set when the run is interrupted (Ctrl-C) or stops itself: no further permits.
    stop: Stop,
    /// When this worker first saw `stop` set: tickets due after it are not a backlog.
    stopped_at: Cell<Option<Instant>>,
    /// A mix: picks each permit's request.
    picker: Option<RefCell<Picker>>,
}

/// An open-model worker's part of the run's arrival curve.
#[derive(Debug, Clone)]
pub(crate) struct OpenPlan {
    /// The whole run's arrival curve (the program after the warm-up).
    pub curve: Arc<Curve>,
    /// This worker's share of the run's requests, in (0, 1].
    pub share: f64,
    /// Even spacing: the coordinate of this worker's first ticket, in requests of the whole run
    /// (staggers workers: worker `i` starts at `i`).
    pub offset: f64,
    /// Even or Poisson.
    pub spacing: Spacing,
}

/// The open model's ticket dispenser. Ticket `k` of this worker sits at a coordinate in
/// requests of the whole run — `offset + k ÷ share` evenly spaced, or a sum of exponential
/// gaps ÷ `share` for Poisson arrivals — and is due when the run's arrival curve reaches it.
/// Even coordinates are computed afresh for each ticket, so rounding never accumulates. A
/// replay's ticket `k` is its request `first + k × stride`, due at its own time.
#[derive(Debug)]
struct Tickets {
    base: Instant,
    source: Source,
    /// Index of the next ticket.
    next: Cell<u64>,
    /// Its due time; `None` when the program ends at rate zero (or the replay ends) before it.
    due: Cell<Option<Instant>>,
}

#[derive(Debug)]
enum Source {
    Curve {
        plan: OpenPlan,
        gaps: RefCell<Option<ExpGaps>>,
        /// The next ticket's coordinate.
        coord: Cell<f64>,
    },
    Replay {
        times: Arc<ReplayTimes>,
        first: usize,
        stride: usize,
    },
}

impl Tickets {
    fn new(base: Instant, plan: OpenPlan) -> Tickets {
        let mut gaps = match plan.spacing {
            Spacing::Even => None,
            Spacing::Poisson { seed } => Some(ExpGaps::new(seed)),
        };
        let coord = match gaps.as_mut() {
            None => plan.offset,
            Some(g) => g.next() / plan.share,
        };
        let t = Tickets {
            base,
            source: Source::Curve {
                plan,
                gaps: RefCell::new(gaps),
                coord: Cell::new(coord),
            },
            next: Cell::new(0),
            due: Cell::new(None),
        };
        t.due.set(t.at(0));
        t
    }

    fn replay(base: Instant, times: Arc<ReplayTimes>, first: usize, stride: usize) -> Tickets {
        let t = Tickets {
            base,
            source: Source::Replay {
                times,
                first,
                stride: stride.max(1),
            },
            next: Cell::new(0),
            due: Cell::new(None),
        };
        t.due.set(t.at(0));
        t
    }

    /// The due time of ticket `k` (whose coordinate, on a curve, is already set).
    fn at(&self, k: u64) -> Option<Instant> {
        match &self.source {
            Source::Curve { plan, coord, .. } => {
                let secs = plan.curve.time_of(coord.get())?;
                // Past any run's end (bounds cap runs at 100 days): never due.
                (secs.is_finite() && secs < 1e9)
                    .then(|| self.base + Duration::from_secs_f64(secs.max(0.0)))
            }
            Source::Replay { times, .. } => {
                let i = self.replay_index(k)?;
                Some(self.base + Duration::from_nanos(times.due_ns[i]))
            }
        }
    }

    /// A replay: the request index of ticket `k`, if there is one.
    fn replay_index(&self, k: u64) -> Option<usize> {
        let Source::Replay {
            times,
            first,
            stride,
        } = &self.source
        else {
            return None;
        };
        let i = usize::try_from(k)
            .ok()?
            .checked_mul(*stride)?
            .checked_add(*first)?;
        (i < times.len()).then_some(i)
    }

    /// The next ticket's due time.
    fn peek(&self) -> Option<Instant> {
        self.due.get()
    }

    /// A replay: the request the next ticket carries.
    fn request(&self) -> Option<u32> {
        match &self.source {
            Source::Replay { times, .. } => {
                Some(times.template[self.replay_index(self.next.get())?])
            }
            Source::Curve { .. } => None,
        }
    }

    /// Moves on to the following ticket.
    fn advance(&self) {
        let k = self.next.get() + 1;
        self.next.set(k);
        if let Source::Curve { plan, gaps, coord } = &self.source {
            let c = match gaps.borrow_mut().as_mut() {
                None => plan.offset + k as f64 / plan.share,
                Some(g) => coord.get() + g.next() / plan.share,
            };
            coord.set(c);
        }
        self.due.set(self.at(k));
    }
}

impl Schedule {
    /// A closed-model schedule.
    pub(crate) fn closed(clock: Clock, quota: Quota, stop: Stop) -> Schedule {
        Schedule {
            clock,
            quota,
            open: None,
            stop,
            stopped_at: Cell::new(None),
            picker: None,
        }
    }

    /// A replay's schedule: this worker's share of its requests (every `stride`-th from
    /// `first`), each due at its own time.
    pub(crate) fn replay(
        clock: Clock,
        quota: Quota,
        times: Arc<ReplayTimes>,
        first: usize,
        stride: usize,
        stop: Stop,
    ) -> Schedule {
        Schedule {
            stop,
            stopped_at: Cell::new(None),
            clock,
            quota,
            open: Some(Tickets::replay(clock.start, times, first, stride)),
            picker: None,
        }
    }

    /// Picks each request among `weights` (a mix) rather than always the first.
    pub(crate) fn with_mix(mut self, weights: Option<&[u64]>) -> Schedule {
        self.picker = weights.map(|w| RefCell::new(Picker::new(w)));
        self
    }

    /// The request of the next permit or backlog ticket.
    #[inline]
    fn pick(&self) -> u32 {
        if let Some(t) = self.open.as_ref().and_then(Tickets::request) {
            return t;
        }
        match &self.picker {
            Some(p) => p.borrow_mut().pick(),
            None => 0,
        }
    }

    /// An open-model schedule: this worker's part of the run's arrival curve.
    pub(crate) fn open(clock: Clock, quota: Quota, plan: OpenPlan, stop: Stop) -> Schedule {
        Schedule {
            stop,
            stopped_at: Cell::new(None),
            clock,
            quota,
            open: Some(Tickets::new(clock.start, plan)),
            picker: None,
        }
    }

    /// Whether a connection takes a free slot (an HTTP/2 stream) before its permit, rather than
    /// the permit first. Closed model: a user never holds a request that cannot be sent, so the
    /// slot comes first. Open model: the ticket is due whatever the target's stream limit, so it
    /// is taken first and the wait for a free stream counts in its latency.
    pub(crate) fn slot_first(&self) -> bool {
        self.open.is_none()
    }

    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Notes the instant the run was interrupted, if it was; true once it has been. Called by
    /// every permit request and by a watcher a few times a second, so that the instant is known
    /// even when every connection is waiting on a stalled target.
    pub(crate) fn check_stop(&self) -> bool {
        if self.stopped_at.get().is_some() {
            return true;
        }
        if self.stop.is_set() {
            self.stopped_at.set(Some(Instant::now()));
            return true;
        }
        false
    }

    /// When the run was interrupted, as this worker saw it.
    pub(crate) fn stopped_at(&self) -> Option<Instant> {
        self.stopped_at.get()
    }

    /// The next request to send, or `None` when the run is over for this worker.
    pub(crate) fn next(&self) -> Option<Permit> {
        if self.check_stop() {
            return None;
        }
        let now = Instant::now();
        let at = match &self.open {
            None => now,
            // The program ended at rate zero: nothing more to send.
            Some(t) => t.peek()?,
        };
        // Past the deadline nothing more is sent, not even overdue tickets: those are the
        // backlog (never sent), counted by `never_sent`.
        if self.clock.deadline.is_some_and(|d| at >= d || now >= d) {
            return None;
        }
        let phase = self.clock.phase_at(at);
        if phase == Phase::Measure && !self.quota.take() {
            return None;
        }
        let req = self.pick();
        let due = self.open.as_ref().map(|t| {
            t.advance();
            at
        });
        Some(Permit { due, phase, req })
    }

    /// The instant the schedule ended: the deadline, or the interruption, or `end` (when the
    /// last connection finished), whichever came first.
    pub(crate) fn ended_at(&self, end: Instant) -> Instant {
        let end = self.clock.deadline.map_or(end, |d| d.min(end));
        self.stopped_at.get().map_or(end, |s| s.min(end))
    }

    /// Open model, once the run is over: tickets due before the schedule ended that were never
    /// taken, per phase `[warm-up, measurement]` (the backlog). Tickets due after an
    /// interruption are not counted: nobody asked for them any more.
    #[cfg(test)]
    pub(crate) fn never_sent(&self, end: Instant) -> [u64; 2] {
        let mut n = [0u64; 2];
        self.backlog(end, |phase, _, _| n[phase as usize] += 1);
        n
    }

    /// Open model: calls `f` with the phase of each backlog ticket (see
    /// [`Schedule::never_sent`]), how long it had been due when the schedule ended, and its
    /// request.
    pub(crate) fn backlog(&self, end: Instant, mut f: impl FnMut(Phase, Duration, u32)) {
        let Some(t) = &self.open else { return };
        let end = self.ended_at(end);
        let mut left = self.quota.left();
        while let Some(due) = t.peek().filter(|d| *d < end) {
            let phase = self.clock.phase_at(due);
            if phase == Phase::Measure {
                match left {
                    Some(0) => break,
                    Some(q) => left = Some(q - 1),
                    None => {}
                }
            }
            f(phase, end.saturating_duration_since(due), self.pick());
            t.advance();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrival::RateProgram;

    /// Every ticket of a constant `rate` to one worker, evenly spaced.
    fn constant(c: Clock, rate: f64) -> OpenPlan {
        OpenPlan {
            curve: Arc::new(Curve::new(
                RateProgram::Constant(rate),
                c.measure_start - c.start,
            )),
            share: 1.0,
            offset: 0.0,
            spacing: Spacing::Even,
        }
    }

    fn no_stop() -> Stop {
        Stop::default()
    }

    #[test]
    fn stop_flag_ends_the_schedule() {
        let stop = no_stop();
        let s = Schedule::closed(clock(0, Some(60_000)), Quota::Unlimited, stop.clone());
        assert!(s.next().is_some());
        stop.caller.store(true, Ordering::Relaxed);
        assert!(s.next().is_none());
    }

    #[test]
    fn the_runs_own_stop_ends_the_schedule_without_the_callers_flag() {
        let stop = Stop::new(Arc::new(AtomicBool::new(false)));
        let s = Schedule::closed(clock(0, Some(60_000)), Quota::Unlimited, stop.clone());
        assert!(s.next().is_some());
        stop.run_flag().store(true, Ordering::Relaxed);
        assert!(s.next().is_none());
        assert!(!stop.caller.load(Ordering::Relaxed));
    }

    fn clock(warm_ms: u64, dur_ms: Option<u64>) -> Clock {
        let start = Instant::now();
        let measure_start = start + Duration::from_millis(warm_ms);
        Clock {
            start,
            measure_start,
            deadline: dur_ms.map(|d| measure_start + Duration::from_millis(d)),
        }
    }

    #[test]
    fn open_tickets_are_evenly_spaced_and_stop_at_the_deadline() {
        let c = clock(0, Some(1000));
        let s = Schedule::open(c, Quota::Unlimited, constant(c, 1000.0), no_stop());
        let mut n = 0;
        let mut last = None;
        while let Some(p) = s.next() {
            let due = p.due.unwrap();
            if let Some(l) = last {
                let gap: Duration = due - l;
                assert!((gap.as_secs_f64() - 0.001).abs() < 1e-6);
            }
            last = Some(due);
            n += 1;
        }
        assert_eq!(n, 1000, "1000 req/s for 1 s schedules exactly 1000");
        assert_eq!(
            s.never_sent(Instant::now() + Duration::from_secs(5)),
            [0, 0]
        );
    }

    #[test]
    fn untaken_tickets_are_the_backlog_by_phase() {
        let c = clock(500, Some(500));
        let s = Schedule::open(c, Quota::Unlimited, constant(c, 100.0), no_stop());
        for _ in 0..10 {
            s.next().unwrap();
        }
        // 100 req/s: 50 tickets in warm-up, 50 in measurement; 10 were taken.
        assert_eq!(s.never_sent(c.deadline.unwrap()), [40, 50]);
    }

    #[test]
    fn count_quota_applies_to_measurement_only() {
        let c = clock(0, None);
        let s = Schedule::closed(c, Quota::Own(Cell::new(3)), no_stop());
        assert!(s.next().is_some());
        assert!(s.next().is_some());
        assert!(s.next().is_some());
        assert!(s.next().is_none());
    }

    #[test]
    fn phase_follows_the_scheduled_time() {
        let c = clock(1000, Some(1000));
        let s = Schedule::open(c, Quota::Unlimited, constant(c, 10.0), no_stop());
        let phases: Vec<Phase> = std::iter::from_fn(|| s.next()).map(|p| p.phase).collect();
        assert_eq!(phases.len(), 20);
        assert_eq!(phases.iter().filter(|p| **p == Phase::Warmup).count(), 10);
    }

    #[test]
    fn a_shared_count_is_drawn_down_by_every_worker_to_exactly_n() {
        let c = clock(0, None);
        let shared = Arc::new(AtomicU64::new(300));
        let a = Schedule::closed(c, Quota::Shared(shared.clone()), no_stop());
        let b = Schedule::closed(c, Quota::Shared(shared), no_stop());
        let mut n = 0;
        // One worker takes two permits for every one the other takes.
        loop {
            let x = a.next().is_some() as u32 + a.next().is_some() as u32;
            let y = b.next().is_some() as u32;
            n += x + y;
            if x + y == 0 {
                break;
            }
        }
        assert_eq!(n, 300);
    }

    #[test]
    fn tickets_due_after_an_interruption_are_not_a_backlog() {
        let c = clock(0, Some(10_000));
        let stop = no_stop();
        let s = Schedule::open(c, Quota::Unlimited, constant(c, 1000.0), stop.clone());
        for _ in 0..5 {
            s.next().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
        stop.caller.store(true, Ordering::Relaxed);
        assert!(s.next().is_none());
        let stopped = s.stopped_at().expect("the interruption was seen");
        // Ten seconds later the run ends; only tickets due before the interruption count.
        let [warm, measure] = s.never_sent(c.start + Duration::from_secs(10));
        assert_eq!(warm, 0);
        let due_before_stop = ((stopped - c.start).as_secs_f64() * 1000.0).ceil() as u64;
        assert_eq!(measure, due_before_stop - 5, "stopped after {stopped:?}");
        assert!(
            measure < 1000,
            "{measure}: tickets after the interruption were counted"
        );
    }

    #[test]
    fn backlog_waits_are_the_time_since_each_ticket_was_due() {
        let c = clock(0, Some(1000));
        let s = Schedule::open(c, Quota::Unlimited, constant(c, 10.0), no_stop());
        let mut waits = Vec::new();
        s.backlog(c.deadline.unwrap(), |_, w, _| waits.push(w));
        // 10 tickets due at 0, 100, …, 900 ms; at 1 s they had waited 1000, 900, …, 100 ms.
        assert_eq!(waits.len(), 10);
        for (i, w) in waits.iter().enumerate() {
            let want = 1000 - 100 * i as u64;
            assert!(
                (w.as_secs_f64() * 1000.0 - want as f64).abs() < 0.01,
                "{i}: {w:?}"
            );
        }
    }
}
