//! Upstream selection for every intermediary: round robin over the eligible upstreams, active
//! health checks and passive ejection (the proxy and the transform are balancers over one
//! upstream, without health checks or ejection). The balance service itself is `balance`.
//!
//! - **Round robin.** One counter shared by every serving thread; the n-th request goes to the
//!   (n mod k)-th eligible upstream, so with every upstream healthy the distribution is exact,
//!   and with one out the others share its turns evenly. Retries walk on from the failed
//!   upstream to the next eligible one not yet tried, and do not move the counter.
//! - **Active health checks** (HAProxy's defaults: every 2 s, down after 3 failed checks, up
//!   after 2 good ones): `GET <path>` on a fresh HTTP/1.1 connection with `Connection: close`,
//!   2xx or 3xx within the check timeout is good. Checks run on their own task, never through
//!   the pools, and never touch the round-robin counter, so they neither count as client traffic
//!   nor shift the order. Upstreams start up.
//! - **Passive ejection.** After `after` consecutive failed requests (connect failures, resets,
//!   timeouts, malformed responses — not 5xx answers, which are the upstream's to give) an
//!   upstream is ejected for `base`, doubled at each ejection that follows without a success in
//!   between, up to `max`. After the ejection it gets traffic again; its first failure ejects it
//!   again at once (half-open), its first success resets the back-off (Envoy's outlier
//!   detection, nginx's `max_fails`/`fail_timeout`).
//! - **Nothing eligible**: 503 at once; selection reads atomics, it never tries dead hosts in
//!   turn.
//!
//! With a single upstream nothing is ever ejected or checked (nginx: "if there is only a single
//! server in a group, max_fails … are ignored"): the proxy answers 502/504 instead of 503.
//!
//! - **Membership changes** ([`Members`]): the set of upstreams can be replaced while the
//!   service runs (the reload, `proxy::reload`). A request takes the current [`Balancer`] when
//!   it starts and keeps it to its end, so an in-flight request finishes (and retries) on its
//!   old set; the next request sees the new one. An upstream in both sets is the same
//!   [`Upstream`]: its pool, health and ejection state carry over. An upstream that left has
//!   its pool retired (idle connections closed now, busy ones after their exchange). The
//!   health checks follow the current set.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use http::StatusCode;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::{info, warn};

use crate::error::ServicesError;
use crate::protocol::h1::client as h1client;
use crate::upstream::{Connector, Pool, Target};

/// Active health checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthConfig {
    /// Path requested (`GET`), e.g. the echo backend's `/health`.
    pub path: String,
    /// Time between two checks of one upstream.
    pub interval: Duration,
    /// How long one check may take.
    pub timeout: Duration,
    /// Consecutive failed checks that take an upstream out.
    pub fall: u32,
    /// Consecutive good checks that bring it back.
    pub rise: u32,
}

impl Default for HealthConfig {
    /// HAProxy's defaults: `inter 2s fall 3 rise 2`; `GET /health` with a 1 s timeout.
    fn default() -> Self {
        Self {
            path: "/health".to_owned(),
            interval: Duration::from_secs(2),
            timeout: Duration::from_secs(1),
            fall: 3,
            rise: 2,
        }
    }
}

impl HealthConfig {
    /// Checks the settings: a zero interval would make tokio's interval panic, a zero timeout
    /// fails every check, a zero fall or rise never changes state.
    pub fn validate(&self) -> Result<(), ServicesError> {
        for (field, d) in [
            ("health.interval", self.interval),
            ("health.timeout", self.timeout),
        ] {
            if d.is_zero() {
                return Err(ServicesError::invalid(field, "must be more than 0"));
            }
        }
        for (field, n) in [("health.fall", self.fall), ("health.rise", self.rise)] {
            if n == 0 {
                return Err(ServicesError::invalid(field, "must be at least 1"));
            }
        }
        if !self.path.starts_with('/') {
            return Err(ServicesError::invalid("health.path", "must start with /"));
        }
        Ok(())
    }
}

/// Passive ejection after consecutive failures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EjectionConfig {
    /// Consecutive failed requests that eject an upstream.
    pub after: u32,
    /// First ejection time; doubled for each further ejection without a success in between.
    pub base: Duration,
    /// Longest ejection time.
    pub max: Duration,
}

impl EjectionConfig {
    /// Checks the settings: ejection needs a failure count and a base time above zero.
    pub fn validate(&self) -> Result<(), ServicesError> {
        if self.after == 0 {
            return Err(ServicesError::invalid(
                "ejection.after",
                "must be at least 1",
            ));
        }
        if self.base.is_zero() {
            return Err(ServicesError::invalid(
                "ejection.base",
                "must be more than 0",
            ));
        }
        Ok(())
    }
}

impl Default for EjectionConfig {
    /// 3 failures; 1 s, doubling up to 30 s.
    fn default() -> Self {
        Self {
            after: 3,
            base: Duration::from_secs(1),
            max: Duration::from_secs(30),
        }
    }
}

/// One upstream with its pool and its state.
#[derive(Debug)]
pub(crate) struct Upstream {
    pub target: Target,
    pub pool: Arc<Pool>,
    /// The URL, for logs and body errors.
    pub label: Arc<str>,
    /// Active health checks say up.
    up: AtomicBool,
    /// Consecutive failed requests.
    failures: AtomicU32,
    /// Ejected until this many ms after the balancer's epoch (plus one); 0: not ejected.
    ejected_until: AtomicU64,
    /// Ejections since the last success (the back-off exponent).
    ejections: AtomicU32,
}

impl Upstream {
    fn new(target: Target, pool: Pool) -> Self {
        Upstream {
            label: target.url.as_str().into(),
            target,
            pool: Arc::new(pool),
            up: AtomicBool::new(true),
            failures: AtomicU32::new(0),
            ejected_until: AtomicU64::new(0),
            ejections: AtomicU32::new(0),
        }
    }
}

/// The upstreams of one service and how requests are spread over them.
#[derive(Debug)]
pub(crate) struct Balancer {
    pub upstreams: Box<[Arc<Upstream>]>,
    next: AtomicUsize,
    ejection: Option<EjectionConfig>,
    epoch: Instant,
}

impl Balancer {
    pub(crate) fn new(
        targets: Vec<Target>,
        pool: impl Fn() -> Pool,
        ejection: Option<EjectionConfig>,
    ) -> Self {
        let upstreams = targets
            .into_iter()
            .map(|target| Arc::new(Upstream::new(target, pool())))
            .collect();
        Self::of(upstreams, ejection, Instant::now())
    }

    fn of(upstreams: Vec<Arc<Upstream>>, ejection: Option<EjectionConfig>, epoch: Instant) -> Self {
        // One upstream is never ejected (see the module docs).
        let ejection = ejection.filter(|_| upstreams.len() > 1);
        Self {
            upstreams: upstreams.into(),
            next: AtomicUsize::new(0),
            ejection,
            epoch,
        }
    }

    /// The balancer over `targets` that follows this one: an upstream already here (same URL)
    /// is kept as it is, a new one gets a pool from `pool`. Also returns the upstreams that
    /// are left out. The epoch is kept, so ejection deadlines stay true.
    pub(crate) fn renewed(
        &self,
        targets: Vec<Target>,
        pool: impl Fn() -> Pool,
        ejection: Option<EjectionConfig>,
    ) -> (Balancer, Vec<Arc<Upstream>>) {
        let upstreams: Vec<Arc<Upstream>> = targets
            .into_iter()
            .map(
                |target| match self.upstreams.iter().find(|u| u.target.url == target.url) {
                    Some(kept) => kept.clone(),
                    None => Arc::new(Upstream::new(target, pool())),
                },
            )
            .collect();
        let gone = self
            .upstreams
            .iter()
            .filter(|u| !upstreams.iter().any(|n| Arc::ptr_eq(n, u)))
            .cloned()
            .collect();
        (Self::of(upstreams, ejection, self.epoch), gone)
    }

    /// The upstreams' URLs, in order.
    pub(crate) fn urls(&self) -> Vec<&str> {
        self.upstreams
            .iter()
            .map(|u| u.target.url.as_str())
            .collect()
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64 + 1
    }

    fn eligible(&self, index: usize, now: &mut Option<u64>) -> bool {
        let upstream = &self.upstreams[index];
        if !upstream.up.load(Ordering::Relaxed) {
            return false;
        }
        let until = upstream.ejected_until.load(Ordering::Relaxed);
        until == 0 || *now.get_or_insert_with(|| self.now_ms()) >= until
    }

    /// The upstream for the next attempt: round robin for a first attempt (`tried` empty), the
    /// next eligible one after the last tried for a retry. `None`: nothing eligible is left.
    pub(crate) fn pick(&self, tried: &[usize]) -> Option<usize> {
        let n = self.upstreams.len();
        let mut now = None;
        match tried.last() {
            None => {
                let turn = self.next.fetch_add(1, Ordering::Relaxed);
                let first = turn % n;
                let eligible = (0..n).filter(|&i| self.eligible(i, &mut now)).count();
                if eligible == n {
                    return Some(first);
                }
                if eligible == 0 {
                    return None;
                }
                (0..n)
                    .filter(|&i| self.eligible(i, &mut now))
                    .nth(turn % eligible)
            }
            Some(&last) => (1..n)
                .map(|d| (last + d) % n)
                .find(|i| !tried.contains(i) && self.eligible(*i, &mut now)),
        }
    }

    /// Counts a failed request against upstream `index`.
    pub(crate) fn failed(&self, index: usize) {
        let Some(ejection) = &self.ejection else {
            return;
        };
        let upstream = &self.upstreams[index];
        let failures = upstream.failures.fetch_add(1, Ordering::Relaxed) + 1;
        let previous = upstream.ejections.load(Ordering::Relaxed);
        // Half-open: after an ejection, the first failure ejects again.
        if failures < ejection.after && previous == 0 {
            return;
        }
        let now = self.now_ms();
        if upstream.ejected_until.load(Ordering::Relaxed) > now {
            return;
        }
        upstream.failures.store(0, Ordering::Relaxed);
        let ejections = upstream.ejections.fetch_add(1, Ordering::Relaxed);
        let backoff = ejection
            .base
            .saturating_mul(1u32 << ejections.min(16))
            .min(ejection.max);
        upstream
            .ejected_until
            .store(now + backoff.as_millis() as u64, Ordering::Relaxed);
        warn!(
            side = "upstream",
            upstream = %upstream.label,
            failures,
            ejected_for_ms = backoff.as_millis() as u64,
            "upstream ejected after consecutive failures",
        );
    }

    /// Counts a successful exchange with upstream `index`.
    pub(crate) fn succeeded(&self, index: usize) {
        if self.ejection.is_none() {
            return;
        }
        let upstream = &self.upstreams[index];
        // Read before writing: on the hot path these stay zero and their cache line shared.
        if upstream.failures.load(Ordering::Relaxed) != 0 {
            upstream.failures.store(0, Ordering::Relaxed);
        }
        if upstream.ejections.load(Ordering::Relaxed) != 0 {
            upstream.ejections.store(0, Ordering::Relaxed);
            upstream.ejected_until.store(0, Ordering::Relaxed);
            info!(upstream = %upstream.label, "upstream answers again: back-off reset");
        }
    }

    /// How many upstreams would take a request now.
    pub(crate) fn eligible_count(&self) -> usize {
        let mut now = None;
        (0..self.upstreams.len())
            .filter(|&i| self.eligible(i, &mut now))
            .count()
    }
}

/// The current set of upstreams of one service, replaceable while it runs (module docs).
#[derive(Debug)]
pub(crate) struct Members {
    current: RwLock<Arc<Balancer>>,
    /// Counts the replacements; the health checks wait on it.
    changes: watch::Sender<u64>,
}

impl Members {
    pub(crate) fn new(balancer: Balancer) -> Self {
        Self {
            current: RwLock::new(Arc::new(balancer)),
            changes: watch::Sender::new(0),
        }
    }

    /// The set a new request uses to its end.
    pub(crate) fn current(&self) -> Arc<Balancer> {
        self.current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Makes `balancer` the set of every request from now on.
    pub(crate) fn replace(&self, balancer: Balancer) {
        *self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(balancer);
        self.changes.send_modify(|n| *n += 1);
    }

    /// Runs the active health checks of every current upstream until dropped (the checks are
    /// tasks of a `JoinSet`, aborted with it); after a replacement, the new set's.
    pub(crate) async fn run_health_checks(
        self: Arc<Self>,
        connector: Arc<Connector>,
        config: HealthConfig,
    ) {
        let mut changes = self.changes.subscribe();
        loop {
            changes.mark_unchanged();
            let mut checks = JoinSet::new();
            for upstream in self.current().upstreams.iter() {
                checks.spawn(check_loop(
                    upstream.clone(),
                    connector.clone(),
                    config.clone(),
                ));
            }
            tokio::select! {
                _ = changes.changed() => {}
                () = async { while checks.join_next().await.is_some() {} } => {
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}

/// Checks one upstream forever.
async fn check_loop(upstream: Arc<Upstream>, connector: Arc<Connector>, config: HealthConfig) {
    let mut ticks = tokio::time::interval(config.interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut good, mut bad) = (0u32, 0u32);
    loop {
        ticks.tick().await;
        let outcome =
            health_check(&connector, &upstream.target, &config.path, config.timeout).await;
        let up = upstream.up.load(Ordering::Relaxed);
        match outcome {
            Ok(status) if status.is_success() || status.is_redirection() => {
                good += 1;
                bad = 0;
                if !up && good >= config.rise {
                    upstream.up.store(true, Ordering::Relaxed);
                    info!(upstream = %upstream.label, checks = good, "upstream is UP");
                }
            }
            outcome => {
                bad += 1;
                good = 0;
                if up && bad >= config.fall {
                    upstream.up.store(false, Ordering::Relaxed);
                    let reason = match outcome {
                        Ok(status) => format!("status {status}"),
                        Err(error) => error,
                    };
                    warn!(
                        side = "upstream",
                        upstream = %upstream.label,
                        checks = bad,
                        %reason,
                        "upstream is DOWN after failed health checks",
                    );
                }
            }
        }
    }
}

/// One active health check: a fresh HTTP/1.1 connection, `GET path` with `Connection: close`,
/// within `timeout`. Returns the status, or why there is none.
async fn health_check(
    connector: &Connector,
    target: &Target,
    path: &str,
    timeout: Duration,
) -> Result<StatusCode, String> {
    let check = async {
        let conn = connector.connect_for_check(target).await?;
        h1client::health_status(conn, &target.host_header, path).await
    };
    match tokio::time::timeout(timeout, check).await {
        Ok(result) => result,
        Err(_) => Err(format!("no answer within {timeout:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn balancer(n: usize, ejection: Option<EjectionConfig>) -> Balancer {
        let targets = (0..n)
            .map(|i| Target::parse(&format!("http://127.0.0.1:{}", 1000 + i)).unwrap())
            .collect();
        Balancer::new(
            targets,
            || Pool::new(1, Duration::from_secs(1), 8),
            ejection,
        )
    }

    #[test]
    fn round_robin_is_exact_and_skips_the_ineligible_evenly() {
        let b = balancer(5, None);
        let picks: Vec<usize> = (0..10).map(|_| b.pick(&[]).unwrap()).collect();
        assert_eq!(picks, [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]);
        b.upstreams[2].up.store(false, Ordering::Relaxed);
        let mut counts = [0; 5];
        for _ in 0..400 {
            counts[b.pick(&[]).unwrap()] += 1;
        }
        assert_eq!(counts, [100, 100, 0, 100, 100]);
        for u in b.upstreams.iter() {
            u.up.store(false, Ordering::Relaxed);
        }
        assert_eq!(b.pick(&[]), None);
    }

    #[test]
    fn retries_walk_on_to_untried_upstreams() {
        let b = balancer(3, None);
        assert_eq!(b.pick(&[1]), Some(2));
        assert_eq!(b.pick(&[1, 2]), Some(0));
        assert_eq!(b.pick(&[1, 2, 0]), None);
        let single = balancer(1, Some(EjectionConfig::default()));
        assert_eq!(single.pick(&[]), Some(0));
        assert_eq!(single.pick(&[0]), None);
        for _ in 0..10 {
            single.failed(0);
        }
        assert_eq!(
            single.pick(&[]),
            Some(0),
            "a single upstream is never ejected"
        );
    }

    #[test]
    fn ejection_after_consecutive_failures_with_growing_backoff() {
        let b = balancer(
            2,
            Some(EjectionConfig {
                after: 2,
                base: Duration::from_millis(50),
                max: Duration::from_secs(1),
            }),
        );
        b.failed(0);
        assert_eq!(b.eligible_count(), 2);
        b.failed(0);
        assert_eq!(b.eligible_count(), 1);
        assert!((0..4).all(|_| b.pick(&[]) == Some(1)));
        std::thread::sleep(Duration::from_millis(70));
        assert_eq!(b.eligible_count(), 2);
        // Half-open: one more failure ejects again, for twice as long.
        b.failed(0);
        let until = b.upstreams[0].ejected_until.load(Ordering::Relaxed);
        assert!(until >= b.now_ms() + 80, "second ejection is ~100 ms");
        b.succeeded(0);
        assert_eq!(b.eligible_count(), 2);
        assert_eq!(b.upstreams[0].ejections.load(Ordering::Relaxed), 0);
    }
}
