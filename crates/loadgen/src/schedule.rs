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

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
}

/// One worker's schedule. Single-threaded: plain `Cell`s, no atomics.
#[derive(Debug)]
pub(crate) struct Schedule {
    clock: Clock,
    /// Measurement requests this worker may still schedule (count stop rule).
    quota: Cell<Option<u64>>,
    /// Open model: ticket spacing and the first ticket's time.
    open: Option<Tickets>,
    /// Set when the run is interrupted (Ctrl-C): no further permits.
    stop: Arc<AtomicBool>,
}

#[derive(Debug)]
struct Tickets {
    base: Instant,
    interval: Duration,
    next: Cell<u64>,
}

impl Tickets {
    fn due(&self, k: u64) -> Instant {
        self.base + self.interval.mul_f64(k as f64)
    }

    /// The first ticket index whose due time is at or after `t`.
    fn first_at_or_after(&self, t: Instant) -> u64 {
        if t <= self.base {
            return 0;
        }
        let k = (t - self.base).as_secs_f64() / self.interval.as_secs_f64();
        let mut k = k.floor() as u64;
        while self.due(k) < t {
            k += 1;
        }
        while k > 0 && self.due(k - 1) >= t {
            k -= 1;
        }
        k
    }
}

impl Schedule {
    /// A closed-model schedule.
    pub(crate) fn closed(clock: Clock, quota: Option<u64>, stop: Arc<AtomicBool>) -> Schedule {
        Schedule {
            clock,
            quota: Cell::new(quota),
            open: None,
            stop,
        }
    }

    /// An open-model schedule at `rate` requests/s for this worker; `offset` staggers workers.
    pub(crate) fn open(
        clock: Clock,
        quota: Option<u64>,
        rate: f64,
        offset: Duration,
        stop: Arc<AtomicBool>,
    ) -> Schedule {
        Schedule {
            stop,
            clock,
            quota: Cell::new(quota),
            open: Some(Tickets {
                base: clock.start + offset,
                interval: Duration::from_secs_f64(1.0 / rate),
                next: Cell::new(0),
            }),
        }
    }

    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The next request to send, or `None` when the run is over for this worker.
    pub(crate) fn next(&self) -> Option<Permit> {
        // A relaxed load of a line that is written once: no contention on the hot path.
        if self.stop.load(Ordering::Relaxed) {
            return None;
        }
        let now = Instant::now();
        let at = match &self.open {
            None => now,
            Some(t) => t.due(t.next.get()),
        };
        // Past the deadline nothing more is sent, not even overdue tickets: those are the
        // backlog (never sent), counted by `never_sent`.
        if self.clock.deadline.is_some_and(|d| at >= d || now >= d) {
            return None;
        }
        let phase = self.clock.phase_at(at);
        if phase == Phase::Measure {
            if let Some(q) = self.quota.get() {
                if q == 0 {
                    return None;
                }
                self.quota.set(Some(q - 1));
            }
        }
        let due = self.open.as_ref().map(|t| {
            t.next.set(t.next.get() + 1);
            at
        });
        Some(Permit { due, phase })
    }

    /// Open model, once the run is over: tickets due before the end that were never taken,
    /// per phase `[warm-up, measurement]` (the backlog).
    pub(crate) fn never_sent(&self, end: Instant) -> [u64; 2] {
        let Some(t) = &self.open else { return [0, 0] };
        let end = self.clock.deadline.map_or(end, |d| d.min(end));
        let taken = t.next.get();
        let warm_due = t.first_at_or_after(self.clock.measure_start.min(end));
        let all_due = t.first_at_or_after(end);
        let warm = warm_due.saturating_sub(taken);
        let mut measure = all_due.saturating_sub(taken.max(warm_due));
        if let Some(q) = self.quota.get() {
            measure = measure.min(q);
        }
        [warm, measure]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_stop() -> Arc<AtomicBool> {
        Arc::new(AtomicBool::new(false))
    }

    #[test]
    fn stop_flag_ends_the_schedule() {
        let stop = no_stop();
        let s = Schedule::closed(clock(0, Some(60_000)), None, stop.clone());
        assert!(s.next().is_some());
        stop.store(true, Ordering::Relaxed);
        assert!(s.next().is_none());
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
        let s = Schedule::open(
            clock(0, Some(1000)),
            None,
            1000.0,
            Duration::ZERO,
            no_stop(),
        );
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
        let s = Schedule::open(c, None, 100.0, Duration::ZERO, no_stop());
        for _ in 0..10 {
            s.next().unwrap();
        }
        // 100 req/s: 50 tickets in warm-up, 50 in measurement; 10 were taken.
        assert_eq!(s.never_sent(c.deadline.unwrap()), [40, 50]);
    }

    #[test]
    fn count_quota_applies_to_measurement_only() {
        let c = clock(0, None);
        let s = Schedule::closed(c, Some(3), no_stop());
        assert!(s.next().is_some());
        assert!(s.next().is_some());
        assert!(s.next().is_some());
        assert!(s.next().is_none());
    }

    #[test]
    fn phase_follows_the_scheduled_time() {
        let c = clock(1000, Some(1000));
        let s = Schedule::open(c, None, 10.0, Duration::ZERO, no_stop());
        let phases: Vec<Phase> = std::iter::from_fn(|| s.next()).map(|p| p.phase).collect();
        assert_eq!(phases.len(), 20);
        assert_eq!(phases.iter().filter(|p| **p == Phase::Warmup).count(), 10);
    }
}
