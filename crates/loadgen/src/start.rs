//! Starting at an agreed wall-clock instant (`gatebench load --start-at`): how the shards of one
//! run on several machines start together.
//!
//! Each shard sleeps until the instant on its own wall clock, and its schedule counts from the
//! moment it woke ([`Anchor`], passed to [`crate::run()`] in [`crate::RunOptions::anchor`]). The
//! shards' records carry that moment in microseconds, and `gatebench merge` reports how far
//! apart they were (`merged.start_skew_ms`).
//!
//! Waking together takes more than a precise timer. The sleep itself is one absolute
//! `clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME)` with the thread's timer slack at 1 ns (a
//! relative sleep adds its overshoot; the default slack is 50 µs). But a woken thread still
//! waits for a core: with three shards on two cores, or a build running beside them, the last
//! one to get a core started more than a millisecond late, measured on a 2-core machine. So
//! the last stretch of the wait runs at real-time priority (`SCHED_FIFO`, priority 1), which
//! takes a core from ordinary threads at once, only long enough to read the clock; the thread
//! then goes back to its own policy. Where real-time priority is not allowed (not root, no
//! `CAP_SYS_NICE`, a container without real-time bandwidth) the wait is the same without it.

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustix::thread::{clock_nanosleep_absolute, set_current_timer_slack, ClockId, Timespec};

/// The instant a run's schedule counts from, on both clocks: the wall clock's reading goes in
/// the record, the monotonic one drives the schedule.
#[derive(Clone, Copy, Debug)]
pub struct Anchor {
    /// The wall clock at the start.
    pub wall: SystemTime,
    /// The monotonic clock at the same moment.
    pub mono: Instant,
}

impl Anchor {
    /// Now, on both clocks.
    pub fn now() -> Self {
        Anchor {
            wall: SystemTime::now(),
            mono: Instant::now(),
        }
    }
}

/// How long before the instant the wait turns from short sleeps (each checking `stop`) to
/// the one absolute sleep at real-time priority.
const FINE_WAIT: Duration = Duration::from_millis(20);

/// Sleeps until the wall clock reads `at`; returns the moment it woke. `None` when `stop` was
/// set first (Ctrl-C). An instant already past returns at once.
pub fn wait_until(at: SystemTime, stop: &AtomicBool) -> Option<Anchor> {
    while let Ok(left) = at.duration_since(SystemTime::now()) {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        if left <= FINE_WAIT {
            return Some(sleep_until_wall(at));
        }
        std::thread::sleep((left - FINE_WAIT).min(Duration::from_millis(50)));
    }
    Some(Anchor::now())
}

/// The absolute sleep: timer slack at its minimum, real-time priority where allowed, both put
/// back once the clock is read.
fn sleep_until_wall(at: SystemTime) -> Anchor {
    let Ok(since_epoch) = at.duration_since(UNIX_EPOCH) else {
        return Anchor::now();
    };
    // Only this thread's current value changes; threads started later keep the default.
    let _ = set_current_timer_slack(NonZeroU64::new(1));
    let boosted = priority::boost();
    let ts = Timespec {
        tv_sec: since_epoch.as_secs() as i64,
        tv_nsec: since_epoch.subsec_nanos().into(),
    };
    loop {
        match clock_nanosleep_absolute(ClockId::Realtime, &ts) {
            Ok(()) => break,
            // A signal's handler ran (Ctrl-C sets a flag): the instant is under FINE_WAIT
            // away, so sleep on.
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => {
                if let Ok(left) = at.duration_since(SystemTime::now()) {
                    std::thread::sleep(left);
                }
                break;
            }
        }
    }
    let anchor = Anchor::now();
    if let Some(previous) = boosted {
        priority::restore(previous);
    }
    let _ = set_current_timer_slack(None);
    anchor
}

/// Real-time priority for the calling thread, and back.
mod priority {
    /// The thread's policy and priority before the boost.
    #[derive(Clone, Copy, Debug)]
    pub(super) struct Previous {
        policy: libc::c_int,
        priority: libc::c_int,
    }

    /// `SCHED_FIFO` at priority 1 with `SCHED_RESET_ON_FORK` (a thread started meanwhile
    /// would not inherit it); `None` when not allowed. Through libc: rustix has no
    /// `sched_setscheduler`.
    #[allow(unsafe_code)]
    pub(super) fn boost() -> Option<Previous> {
        // SAFETY: pid 0 is the calling thread; `sched_param` is a plain struct of integers, for
        // which all-zero bytes are valid, and both calls only read or write the one we own.
        unsafe {
            let policy = libc::sched_getscheduler(0);
            let mut param: libc::sched_param = std::mem::zeroed();
            if policy < 0 || libc::sched_getparam(0, &mut param) != 0 {
                return None;
            }
            let mut fifo: libc::sched_param = std::mem::zeroed();
            fifo.sched_priority = 1;
            (libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &fifo) == 0)
                .then_some(Previous {
                    policy,
                    priority: param.sched_priority,
                })
        }
    }

    /// Puts the policy back (the nice value was never changed).
    #[allow(unsafe_code)]
    pub(super) fn restore(previous: Previous) {
        // SAFETY: as in `boost`: the calling thread and a `sched_param` we own.
        unsafe {
            let mut param: libc::sched_param = std::mem::zeroed();
            param.sched_priority = previous.priority;
            libc::sched_setscheduler(0, previous.policy, &param);
        }
    }

    #[cfg(test)]
    #[allow(unsafe_code)]
    pub(super) fn current_policy() -> libc::c_int {
        // SAFETY: reads the calling thread's policy; no memory is passed.
        unsafe { libc::sched_getscheduler(0) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_wakes_at_the_instant_not_before_and_leaves_the_policy_as_it_was() {
        let before = priority::current_policy();
        let at = SystemTime::now() + Duration::from_millis(120);
        let stop = AtomicBool::new(false);
        let woke = wait_until(at, &stop).expect("not interrupted");
        let late = woke
            .wall
            .duration_since(at)
            .expect("never before the instant");
        // A loaded machine may wake it late; a wait that overslept by a coarse sleep, or one
        // that did not wait, would be far off.
        assert!(late < Duration::from_millis(40), "{late:?} late");
        assert_eq!(priority::current_policy(), before);
    }

    #[test]
    fn a_stop_before_the_instant_ends_the_wait() {
        let stop = AtomicBool::new(true);
        let at = SystemTime::now() + Duration::from_secs(60);
        let t = Instant::now();
        assert!(wait_until(at, &stop).is_none());
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn an_instant_already_past_starts_at_once() {
        let at = SystemTime::now() - Duration::from_millis(300);
        let woke = wait_until(at, &AtomicBool::new(false)).unwrap();
        assert!(woke.wall >= at + Duration::from_millis(300));
    }
}
