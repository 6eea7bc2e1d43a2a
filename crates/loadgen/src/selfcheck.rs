//! The generator's self-check: was the generator, rather than the target, the bottleneck? The
//! rules every load shares are here — its threads' CPU against their capacity, a cgroup CPU quota
//! that held it back, an open model's schedule kept late — each a warning in words; the HTTP run
//! (`run`) adds its threads' stalls. A run of its own on a tokio runtime (WebSocket, gRPC)
//! watches itself with [`RunWatch`]: the process's CPU over the run (its runtime's threads are
//! the process's busy ones) and the quota.

use std::time::{Duration, Instant};

use gatebench_model::{LatencySummary, SelfCheck};

use crate::stats::{summarize, LatencyHistogram};
use crate::throttle::{self, Throttled};

/// Threads' CPU above this share of their capacity means the generator may have been the
/// bottleneck.
const CPU_SATURATED_PERCENT: f64 = 95.0;
/// Open model: a p99 send lag above this means the generator could not keep its schedule.
const SEND_LAG_P99_LIMIT_MS: f64 = 10.0;
/// A CPU quota that held the generator back for more than this share of the run's wall time
/// (and more than [`QUOTA_WARN_FLOOR`]) invalidates the run: a quota's periods are 100 ms by
/// default, so even a few of them are requests not sent, or answers not read, on time.
const QUOTA_WARN_SHARE: f64 = 0.01;
/// See [`QUOTA_WARN_SHARE`].
const QUOTA_WARN_FLOOR: Duration = Duration::from_millis(20);

/// The warning for threads `cpu_percent` busy, if they were saturated.
pub(crate) fn cpu_warning(cpu_percent: f64) -> Option<String> {
    (cpu_percent >= CPU_SATURATED_PERCENT).then(|| {
        format!(
            "the generator's worker threads were {cpu_percent:.0}% busy: the result may describe \
             the generator rather than the target (add --threads, or generate load from another machine)"
        )
    })
}

/// The warning for a quota that held the generator back over a run of `wall` seconds.
pub(crate) fn quota_warning(throttled: Option<Throttled>, wall: f64) -> Option<String> {
    let t = throttled
        .filter(|t| t.time > QUOTA_WARN_FLOOR && t.time.as_secs_f64() > QUOTA_WARN_SHARE * wall)?;
    Some(format!(
        "the generator's cgroup CPU quota kept it from running for {:.2} s of the run's \
         {wall:.2} s ({} quota periods): the result may describe the quota rather than the \
         target (raise the quota, or generate load from another machine)",
        t.time.as_secs_f64(),
        t.periods
    ))
}

/// The warning for an open model's send lag, if its p99 was past the limit.
pub(crate) fn send_lag_warning(lag: &LatencySummary) -> Option<String> {
    let p99 = lag.at(99.0).unwrap_or(0.0);
    (lag.count > 0 && p99 > SEND_LAG_P99_LIMIT_MS).then(|| {
        format!(
            "the generator sent late against its schedule (p99 {p99:.1} ms behind): \
             it could not keep the asked rate by itself"
        )
    })
}

/// A run of its own, watching itself from [`RunWatch::start`] to [`RunWatch::finish`].
#[derive(Debug)]
pub(crate) struct RunWatch {
    started: Instant,
    cpu: (f64, f64),
    quota: throttle::Snapshot,
    threads: usize,
}

impl RunWatch {
    /// Starts watching a run on `threads` runtime threads.
    pub(crate) fn start(threads: usize) -> RunWatch {
        RunWatch {
            started: Instant::now(),
            cpu: process_cpu(),
            quota: throttle::Snapshot::take(),
            threads: threads.max(1),
        }
    }

    /// The self-check of the run, with the open model's `send_lag` (how late scheduled sends
    /// left against their due times, by the generator's own doing) when there is one.
    pub(crate) fn finish(self, send_lag: Option<&LatencyHistogram>) -> SelfCheck {
        let wall = self.started.elapsed().as_secs_f64().max(1e-9);
        let (user, sys) = process_cpu();
        let (user, sys) = ((user - self.cpu.0).max(0.0), (sys - self.cpu.1).max(0.0));
        let cpu_percent = 100.0 * (user + sys) / (wall * self.threads as f64);
        let throttled = self.quota.since();
        let send_lag = send_lag.map(summarize);
        let warnings = [
            cpu_warning(cpu_percent),
            quota_warning(throttled, wall),
            send_lag.as_ref().and_then(send_lag_warning),
        ]
        .into_iter()
        .flatten()
        .collect();
        SelfCheck {
            cpu_user_s: user,
            cpu_sys_s: sys,
            cpu_percent,
            send_lag,
            schedule_kept_percent: None,
            cpu_throttled_s: throttled.map(|t| t.time.as_secs_f64()),
            warnings,
        }
    }
}

/// This process's (user, system) CPU seconds so far, from `/proc/self/stat`; zeros where it
/// cannot be read.
fn process_cpu() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0.0, 0.0);
    };
    // Fields after the command's closing parenthesis: state is the first, utime the 12th,
    // stime the 13th (proc(5): fields 14 and 15).
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return (0.0, 0.0);
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = rustix::param::clock_ticks_per_second() as f64;
    let at = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .map_or(0.0, |t| t / ticks)
    };
    (at(11), at(12))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_process_is_seen_and_saturation_is_warned_of() {
        let watch = RunWatch::start(1);
        // 150 ms of work on this thread: the process's CPU moves by about that much.
        let until = Instant::now() + Duration::from_millis(150);
        let mut x = 0u64;
        while Instant::now() < until {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        assert_ne!(x, 1);
        let check = watch.finish(None);
        let cpu = check.cpu_user_s + check.cpu_sys_s;
        assert!(cpu >= 0.05, "{check:?}");
        assert!(check.send_lag.is_none());
        assert!(cpu_warning(99.0).is_some() && cpu_warning(50.0).is_none());
        let mut lag = crate::stats::new_histogram();
        for _ in 0..100 {
            crate::stats::record(&mut lag, Duration::from_millis(20));
        }
        assert!(send_lag_warning(&summarize(&lag))
            .unwrap()
            .contains("sent late"));
        assert!(quota_warning(
            Some(Throttled {
                time: Duration::from_secs(1),
                periods: 10
            }),
            10.0
        )
        .is_some());
    }
}
