//! Running a load: starting the workers, collecting their one-second intervals (live view and
//! interval log), merging their results exactly, and building the report with its self-check.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gatebench_model::{
    histogram, ClassReport, ConnectionStats, LiveSecond, LoadReport, Outcome, OutcomeCounts,
    PhaseHistograms, PhaseReport, SecondRecord, SelfCheck, ToolInfo, SCHEMA_VERSION,
};

use crate::arrival::Curve;
use crate::config::{Arrival, LoadConfig, Spacing};
use crate::error::LoadgenError;
use crate::hlog;
use crate::limits;
use crate::schedule::{Clock, OpenPlan, Quota, Stop};
use crate::selfcheck;
use crate::stats::{
    longer_than_all, new_sparse_histogram, summarize, summarize_censored, ClassStats,
    IntervalStats, LatencyHistogram, PhaseStats,
};
use crate::threshold::Watch;
use crate::throttle::{self, Throttled};
use crate::worker::{self, Stalls, WorkerMsg, WorkerPlan, WorkerResult, STALL_COUNTED};

/// A request still unanswered at the end counts as a stall (an error) only once it has waited
/// this long (or the request timeout, if shorter), besides longer than every answer: shorter
/// waits at the end of a healthy run are scheduling noise, not a target that stopped.
pub const STALL_FLOOR: Duration = Duration::from_secs(1);
/// A stall of a generator thread longer than this (see [`crate::worker`]'s `Stalls`) makes the
/// run's self-check fail: at a second's resolution it moves a tenth of that second's requests,
/// and in the open model it adds itself to the latency of every request due meanwhile.
const STALL_WARN: Duration = Duration::from_millis(100);

/// The live view of one second of the run.
#[derive(Debug, Clone, Default)]
pub struct IntervalView {
    /// Seconds since the run started (warm-up included), 0-based.
    pub index: u64,
    /// Time since the run started at the end of this interval.
    pub elapsed: Duration,
    /// Whether the interval lies in the warm-up.
    pub warmup: bool,
    /// Complete responses in this interval.
    pub responses: u64,
    /// Errors in this interval.
    pub errors: u64,
    /// Responses per second in this interval (over its real length: the last interval of a
    /// run is usually shorter than a second).
    pub rps: f64,
    /// The interval's length: one second, or less for the last.
    pub length: Duration,
    /// p99 latency of this interval, ms (corrected in the open model).
    pub p99_ms: f64,
    /// Complete responses so far.
    pub total_responses: u64,
    /// Errors so far.
    pub total_errors: u64,
    /// Requests sent in this interval.
    pub sent: u64,
    /// The target rate over this interval (open model), requests per second.
    pub target_rate: Option<f64>,
    /// p50, p90 and the largest latency of this interval, ms (corrected in the open model;
    /// timeouts in as the time they had waited).
    pub p50_ms: f64,
    /// See `p50_ms`.
    pub p90_ms: f64,
    /// See `p50_ms`.
    pub max_ms: f64,
    /// This interval's outcomes by class.
    pub outcomes: OutcomeCounts,
    /// Connections opened in this interval.
    pub opened: u64,
    /// The longest stall of a generator thread so far.
    pub stall_longest: Duration,
}

/// Optional outputs of a run.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Where to write the HdrHistogram interval log.
    pub hlog: Option<&'a mut dyn Write>,
    /// Called once a second with the live view.
    pub on_interval: Option<&'a mut dyn FnMut(&IntervalView)>,
    /// When set to true (e.g. on Ctrl-C), workers stop scheduling requests; outstanding ones
    /// finish or time out, and the report covers what was measured.
    pub stop: Option<Arc<AtomicBool>>,
    /// The instant the schedule counts from, when the caller waited for one
    /// ([`crate::start::wait_until`]); now otherwise.
    pub anchor: Option<crate::start::Anchor>,
    /// Keep a per-second timeline in the record with each second's latency histogram, whatever
    /// the arrival (a shard's record, so that a merge has exact per-second figures).
    pub timeline: bool,
    /// Live figures for Prometheus (`--metrics`), updated once a second.
    pub metrics: Option<Arc<crate::metrics::LiveMetrics>>,
    /// Called with each finished second, histogram and outcomes included (a shard streaming
    /// its seconds to a coordinator). With [`RunOptions::timeline`], the same seconds as the
    /// record's timeline.
    pub on_second: Option<&'a mut dyn FnMut(&LiveSecond)>,
}

impl std::fmt::Debug for RunOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("hlog", &self.hlog.is_some())
            .field("on_interval", &self.on_interval.is_some())
            .field("anchor", &self.anchor)
            .field("timeline", &self.timeline)
            .field("metrics", &self.metrics.is_some())
            .field("on_second", &self.on_second.is_some())
            .finish()
    }
}

/// The result of a run: the report and the merged statistics behind it.
#[derive(Debug)]
pub struct RunOutput {
    /// The record (what `--json` prints).
    pub report: LoadReport,
    /// Merged warm-up statistics.
    pub warmup: PhaseStats,
    /// Merged measurement statistics.
    pub measurement: PhaseStats,
}

/// Runs the load described by `config`. Blocks until the run is over.
pub fn run(config: LoadConfig, mut opts: RunOptions<'_>) -> Result<RunOutput, LoadgenError> {
    limits::ensure_fd_limit(u64::from(config.connections))?;
    let config = Arc::new(config);
    let threads = config.threads as usize;
    let anchor = opts.anchor.unwrap_or_else(crate::start::Anchor::now);
    let (wall_start, start) = (anchor.wall, anchor.mono);
    let quota = throttle::Snapshot::take();
    let measure_start = start + config.warmup;
    let clock = Clock {
        start,
        measure_start,
        deadline: config.stop.duration.map(|d| measure_start + d),
    };
    if let Some(out) = opts.hlog.as_deref_mut() {
        let comment = format!(
            "[gatebench {} load {} -c {}{}; values in nanoseconds]",
            env!("CARGO_PKG_VERSION"),
            config.target.url,
            config.connections,
            match &config.arrival {
                Arrival::Closed => String::new(),
                Arrival::Open { rate } => format!(" -R {rate}"),
                Arrival::Program(p) => format!(
                    " -R {}{}",
                    p.rate,
                    match p.spacing {
                        Spacing::Even => String::new(),
                        Spacing::Poisson { seed } => format!(" --arrival poisson --seed {seed}"),
                    }
                ),
                Arrival::Replay(r) => format!(" --speed {}", r.speed),
            }
        );
        hlog::write_header(out, wall_start, &comment).map_err(|source| LoadgenError::Output {
            what: "the interval log".into(),
            source,
        })?;
    }

    let stop = Stop::new(opts.stop.clone().unwrap_or_default());
    let (tx, rx) = mpsc::channel();
    let mut handles = Vec::with_capacity(threads);
    let conn_shares = split(u64::from(config.connections), threads);
    // `-n N` sends N requests however threads and connections divide. Open model: each worker's
    // share of N follows its share of the rate, so all run out together at N ÷ R. Closed
    // model: one count shared by the workers.
    let shared_quota = config
        .stop
        .requests
        .map(|n| Arc::new(std::sync::atomic::AtomicU64::new(n)));
    let open_quotas = config
        .stop
        .requests
        .map(|n| split_weighted(n, &conn_shares));
    let curve = config
        .arrival
        .rate_program()
        .map(|p| Arc::new(Curve::new(p, config.warmup)));
    for (id, conns) in conn_shares.iter().copied().enumerate() {
        let share = conns as f64 / f64::from(config.connections);
        let plan = WorkerPlan {
            id,
            workers: threads,
            config: config.clone(),
            clock,
            connections: conns as u32,
            open: curve.as_ref().map(|curve| OpenPlan {
                curve: curve.clone(),
                share,
                // Even spacing: worker `id`'s first request is the run's request `id`, so the
                // workers' tickets interleave.
                offset: id as f64,
                spacing: match config.arrival.spacing() {
                    // Each worker its own stream of gaps: independent Poisson processes add up
                    // to one at the total rate.
                    Some(Spacing::Poisson { seed }) => Spacing::Poisson {
                        seed: seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    },
                    _ => Spacing::Even,
                },
            }),
            quota: match (config.arrival.is_open(), &shared_quota, &open_quotas) {
                // A replay's `-n` took its first n requests already.
                _ if matches!(config.arrival, Arrival::Replay(_)) => Quota::Unlimited,
                (_, None, _) => Quota::Unlimited,
                (true, _, Some(q)) => Quota::Own(std::cell::Cell::new(q[id])),
                (_, Some(shared), _) => Quota::Shared(shared.clone()),
            },
            stop: stop.clone(),
        };
        let tx = tx.clone();
        let h = std::thread::Builder::new()
            .name(format!("gatebench-worker-{id}"))
            .spawn(move || {
                let result = worker::run(plan, tx.clone());
                let _ = tx.send(WorkerMsg::Done(id, Box::new(result)));
            })
            .map_err(|e| LoadgenError::Worker(e.to_string()))?;
        handles.push(h);
    }
    drop(tx);

    let timeline_curve = matches!(config.arrival, Arrival::Program(_))
        .then(|| curve.clone())
        .flatten();
    let fixed_rate = config
        .arrival
        .is_open()
        .then(|| config.mean_rate())
        .flatten();
    let mut collector = Collector::new(
        threads,
        config.warmup,
        timeline_curve,
        fixed_rate,
        Watch::new(config.thresholds.clone()),
        stop.run_flag(),
        &mut opts,
    );
    let mut results: Vec<Option<WorkerResult>> = (0..threads).map(|_| None).collect();
    for msg in rx {
        match msg {
            WorkerMsg::Interval(id, iv) => collector.interval(id, *iv)?,
            // The worker's last interval waits for `censor`, which needs every worker.
            WorkerMsg::Done(id, r) => results[id] = Some(*r),
        }
    }
    for h in handles {
        h.join()
            .map_err(|_| LoadgenError::Worker("a worker thread panicked".into()))?;
    }
    let mut results: Vec<WorkerResult> = results
        .into_iter()
        .map(|r| r.ok_or_else(|| LoadgenError::Worker("a worker ended without results".into())))
        .collect::<Result<_, _>>()?;
    let mut warm = PhaseStats::default();
    let mut meas = PhaseStats::default();
    let mut classes = vec![ClassStats::default(); config.requests.classes().len()];
    let mut stream = crate::stream::StreamStats::default();
    for r in &results {
        warm.merge(&r.phases[0]);
        meas.merge(&r.phases[1]);
        stream.merge(&r.stream);
        for (c, w) in classes.iter_mut().zip(&r.classes) {
            c.merge(w);
        }
    }
    // With nothing at all ended by the target in the run (no response, no reset, no refusal),
    // every request cut off at the end is a stall; otherwise one must also have waited at least
    // the stall floor (see `censor`). A target that resets every stream at once is not stalled.
    let floor = if !target_ended_any(&warm.outcomes) && !target_ended_any(&meas.outcomes) {
        Duration::ZERO
    } else {
        config.timeout.min(STALL_FLOOR)
    };
    // The classes against the whole measurement's answers, as its totals are: what each
    // class moves and censors adds up to what the totals do.
    let class_censored: Vec<Censored> = classes
        .iter_mut()
        .map(|c| censor_class(c, &meas, floor))
        .collect();
    let censored = [
        censor(&mut warm, 0, &mut results, floor),
        censor(&mut meas, 1, &mut results, floor),
    ];
    for (id, r) in results.iter_mut().enumerate() {
        let last = std::mem::replace(&mut r.last, IntervalStats::new(0));
        collector.interval(id, last)?;
        collector.done(id)?;
    }
    collector.flush_all()?;
    let timeline = collector.timeline.take();
    let watch = std::mem::replace(&mut collector.watch, Watch::new(Vec::new()));
    let throttled = quota.since();
    let mut out = build(
        &config,
        clock,
        wall_start,
        results,
        [warm, meas],
        censored,
        throttled,
    );
    out.report.timeline = timeline;
    out.report.stream = config
        .stream
        .map(|spec| stream.report(spec, out.report.measurement.duration_s));
    out.report.thresholds = watch.finish(&out.report);
    if let Some(m) = &collector.opts.metrics {
        m.finish(&out.report.measurement.outcomes);
    }
    if config.requests.is_multi() {
        let open = config.arrival.is_open();
        out.report.classes = Some(
            config
                .requests
                .classes()
                .iter()
                .zip(classes.iter().zip(&class_censored))
                .map(|(info, (s, c))| class_report(info, s, c, open))
                .collect(),
        );
    }
    Ok(out)
}

/// The censored values of one phase: requests that never got an answer, at the time they had
/// waited (lower bounds of their latency).
#[derive(Debug)]
struct Censored {
    /// From the intended send time (open model) or the send (closed).
    latency: LatencyHistogram,
    /// Open model: from the actual send (tickets never sent have none).
    latency_uncorrected: LatencyHistogram,
}

/// Decides, once every worker has finished, how the requests that never got an answer enter
/// phase `phase`'s figures, and returns its censored values.
///
/// - A timed-out request is censored at the time it waited (the timeout).
/// - A request still unanswered at the end (`in_flight`) that had waited longer than every
///   answered request of the phase is censored at its wait. It **stalled** — it becomes
///   `unanswered`, an error — when it had also waited at least `floor` (the smaller of the
///   request timeout and [`STALL_FLOOR`]; zero when nothing at all was answered): a short
///   run's last requests caught by a scheduler hiccup are not a target that stopped. One that
///   had waited less than every answer may well have been answered in time: it stays
///   `in_flight`, outside the distribution, as wrk leaves it.
/// - A backlog ticket (open model, never sent) that had been due longer than every answered
///   request is censored at that wait; it is `never_sent` either way.
///
/// The worker's held-back last interval gets the same changes, so the interval log and the
/// live totals agree with the report.
fn censor(
    merged: &mut PhaseStats,
    phase: usize,
    results: &mut [WorkerResult],
    floor: Duration,
) -> Censored {
    let mut latency = merged.timed_out.clone();
    let mut latency_uncorrected = merged.timed_out_uncorrected.clone();
    let mut stalled_total = 0;
    for r in results.iter_mut() {
        let p = &r.phases[phase];
        let stalled = longer_than_all(&p.cut, &merged.latency);
        let stalled_uncorrected = longer_than_all(&p.cut_uncorrected, &merged.latency_uncorrected);
        let backlog = longer_than_all(&p.backlog, &merged.latency);
        let n = count_at_least(&stalled, floor);
        stalled_total += n;
        let last = &mut r.last;
        move_class(
            &mut last.outcomes,
            Outcome::InFlight,
            Outcome::Unanswered,
            n,
        );
        for h in [&stalled, &backlog] {
            crate::stats::add(&mut last.censored, h);
            crate::stats::add(&mut latency, h);
        }
        crate::stats::add(&mut last.censored_uncorrected, &stalled_uncorrected);
        crate::stats::add(&mut latency_uncorrected, &stalled_uncorrected);
    }
    move_class(
        &mut merged.outcomes,
        Outcome::InFlight,
        Outcome::Unanswered,
        stalled_total,
    );
    if latency.is_empty() {
        latency = new_sparse_histogram();
    }
    Censored {
        latency,
        latency_uncorrected,
    }
}

/// One class's share of [`censor`]: its stalled requests (against the merged measurement's
/// answers, before the totals' own censoring changes nothing of them) become `unanswered`, and
/// its censored values are returned.
fn censor_class(c: &mut ClassStats, meas: &PhaseStats, floor: Duration) -> Censored {
    let mut latency = c.timed_out.clone();
    let mut latency_uncorrected = c.timed_out_uncorrected.clone();
    let stalled = longer_than_all(&c.cut, &meas.latency);
    let stalled_uncorrected = longer_than_all(&c.cut_uncorrected, &meas.latency_uncorrected);
    let backlog = longer_than_all(&c.backlog, &meas.latency);
    let n = count_at_least(&stalled, floor);
    move_class(&mut c.outcomes, Outcome::InFlight, Outcome::Unanswered, n);
    crate::stats::add(&mut latency, &stalled);
    crate::stats::add(&mut latency, &backlog);
    crate::stats::add(&mut latency_uncorrected, &stalled_uncorrected);
    Censored {
        latency,
        latency_uncorrected,
    }
}

/// The record of one request class.
fn class_report(
    info: &crate::config::ClassInfo,
    s: &ClassStats,
    censored: &Censored,
    open: bool,
) -> ClassReport {
    let some = |h: &LatencyHistogram| (!h.is_empty()).then(|| histogram::encode(h));
    ClassReport {
        name: info.name.clone(),
        method: info.method.clone(),
        path: info.path.clone(),
        weight: info.weight,
        requests: s.outcomes.total(),
        outcomes: s.outcomes,
        error_percent: s.outcomes.error_percent(),
        latency: summarize_censored(&s.latency, &censored.latency),
        latency_uncorrected: open
            .then(|| summarize_censored(&s.latency_uncorrected, &censored.latency_uncorrected)),
        histograms: Some(PhaseHistograms {
            answered: histogram::encode(&s.latency),
            censored: some(&censored.latency),
            answered_uncorrected: open.then(|| histogram::encode(&s.latency_uncorrected)),
            censored_uncorrected: if open {
                some(&censored.latency_uncorrected)
            } else {
                None
            },
            connect_time: None,
            tls_handshake: None,
            send_lag: None,
        }),
    }
}

/// Whether any request of `o` was ended by the target (a response of any status, or an error
/// the target caused: a reset, a refused stream, a cut-off body), rather than by the run's end
/// or the client's own timeout.
fn target_ended_any(o: &OutcomeCounts) -> bool {
    let by_client = o.get(Outcome::InFlight)
        + o.get(Outcome::NeverSent)
        + o.get(Outcome::Timeout)
        + o.get(Outcome::ConnectTimeout);
    o.total() > by_client
}

/// How many values of `h` are at least `floor`.
fn count_at_least(h: &LatencyHistogram, floor: Duration) -> u64 {
    let floor = u64::try_from(floor.as_nanos()).unwrap_or(u64::MAX);
    h.iter_recorded()
        .filter(|v| h.highest_equivalent(v.value_iterated_to()) >= floor)
        .map(|v| v.count_at_value())
        .sum()
}

/// Moves `n` requests from class `from` to class `to` (at most as many as `from` holds).
fn move_class(c: &mut gatebench_model::OutcomeCounts, from: Outcome, to: Outcome, n: u64) {
    let n = n.min(c.get(from));
    c.sub(from, n);
    c.add(to, n);
}

/// Splits `n` in proportion to `weights` (largest remainders), the shares adding up to `n`.
fn split_weighted(n: u64, weights: &[u64]) -> Vec<u64> {
    let total: u64 = weights.iter().sum();
    if total == 0 {
        return split(n, weights.len());
    }
    let exact: Vec<u128> = weights
        .iter()
        .map(|w| u128::from(n) * u128::from(*w))
        .collect();
    let mut shares: Vec<u64> = exact
        .iter()
        .map(|e| (e / u128::from(total)) as u64)
        .collect();
    let mut left = n - shares.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by_key(|i| std::cmp::Reverse(exact[*i] % u128::from(total)));
    for i in order {
        if left == 0 {
            break;
        }
        shares[i] += 1;
        left -= 1;
    }
    shares
}

/// Splits `n` into `parts` shares that differ by at most one.
fn split(n: u64, parts: usize) -> Vec<u64> {
    let parts_u = parts as u64;
    (0..parts_u)
        .map(|i| n / parts_u + u64::from(i < n % parts_u))
        .collect()
}

/// Gathers workers' intervals; emits an interval once every live worker has reported it.
struct Collector<'o, 'a> {
    threads: usize,
    warmup: Duration,
    pending: BTreeMap<u64, IntervalStats>,
    reported: Vec<Option<u64>>,
    done: Vec<bool>,
    next: u64,
    total_responses: u64,
    total_errors: u64,
    /// With an arrival program: the run's curve, for the target rate of each second.
    curve: Option<Arc<Curve>>,
    /// Without a program: the open model's fixed rate, each second's target in a timeline.
    fixed_rate: Option<f64>,
    /// With an arrival program, or when asked ([`RunOptions::timeline`]): the seconds so far.
    timeline: Option<Vec<SecondRecord>>,
    /// Each second of the timeline carries its latency histogram.
    second_histograms: bool,
    /// The run's thresholds, judged as each second of the measurement comes in.
    watch: Watch,
    /// What the workers watch to stop scheduling: set when an `abort` threshold breaches.
    stop: Arc<AtomicBool>,
    opts: &'o mut RunOptions<'a>,
}

impl<'o, 'a> Collector<'o, 'a> {
    fn new(
        threads: usize,
        warmup: Duration,
        curve: Option<Arc<Curve>>,
        fixed_rate: Option<f64>,
        watch: Watch,
        stop: Arc<AtomicBool>,
        opts: &'o mut RunOptions<'a>,
    ) -> Self {
        Collector {
            watch,
            stop,
            timeline: (curve.is_some() || opts.timeline).then(Vec::new),
            second_histograms: opts.timeline,
            curve,
            fixed_rate,
            threads,
            warmup,
            pending: BTreeMap::new(),
            reported: vec![None; threads],
            done: vec![false; threads],
            next: 0,
            total_responses: 0,
            total_errors: 0,
            opts,
        }
    }

    fn interval(&mut self, id: usize, iv: IntervalStats) -> Result<(), LoadgenError> {
        self.reported[id] = Some(self.reported[id].map_or(iv.index, |r| r.max(iv.index)));
        match self.pending.get_mut(&iv.index) {
            Some(acc) => acc.merge(&iv),
            None => {
                self.pending.insert(iv.index, iv);
            }
        }
        self.emit_ready(false)
    }

    fn done(&mut self, id: usize) -> Result<(), LoadgenError> {
        self.done[id] = true;
        self.emit_ready(false)
    }

    fn flush_all(&mut self) -> Result<(), LoadgenError> {
        self.emit_ready(true)
    }

    fn emit_ready(&mut self, all: bool) -> Result<(), LoadgenError> {
        loop {
            let ready = all
                || (0..self.threads)
                    .all(|w| self.done[w] || self.reported[w].is_some_and(|r| r >= self.next));
            if !ready {
                return Ok(());
            }
            let Some((&index, _)) = self.pending.iter().next() else {
                return Ok(());
            };
            if index > self.next && !all {
                // Nobody had anything for `next` (cannot happen with live tickers); move on.
                self.next = index;
                continue;
            }
            let iv = self.pending.remove(&index).expect("key just seen");
            self.next = index + 1;
            self.emit(iv)?;
        }
    }

    fn emit(&mut self, iv: IntervalStats) -> Result<(), LoadgenError> {
        let start = Duration::from_secs(iv.index);
        let length = iv.length;
        let target_rate = self.curve.as_ref().map(|c| {
            let a = start.as_secs_f64();
            c.mean_rate(a, a + length.as_secs_f64())
        });
        let second = |with_latency: bool| SecondRecord {
            t_s: start.as_secs_f64() - self.warmup.as_secs_f64(),
            length_s: length.as_secs_f64(),
            target_rate: target_rate.or(self.fixed_rate).unwrap_or(0.0),
            sent: iv.sent,
            responses: iv.responses(),
            errors: iv.errors(),
            latency: with_latency.then(|| gatebench_model::histogram::encode(&iv.all_latency())),
            detail: iv.detail(),
        };
        if let Some(cb) = self.opts.on_second.as_deref_mut() {
            cb(&LiveSecond {
                second: second(true),
                outcomes: iv.outcomes,
                censored_min_ns: (!iv.censored.is_empty()).then(|| iv.censored.min()),
            });
        }
        if let Some(timeline) = self.timeline.as_mut() {
            timeline.push(second(self.second_histograms));
        }
        if let Some(out) = self.opts.hlog.as_deref_mut() {
            let io = |source| LoadgenError::Output {
                what: "the interval log".into(),
                source,
            };
            if let Some(rate) = target_rate {
                // A comment line: HdrHistogram's log readers skip it; gatebench's plots read it.
                hlog::write_target_rate(out, start, rate).map_err(io)?;
            }
            // Censored values (timeouts, stalls) go in as the times they had waited, as in
            // the report's latency.
            hlog::write_interval(out, &iv.all_latency(), start, length, None).map_err(io)?;
            let uncorrected = iv.all_latency_uncorrected();
            if !uncorrected.is_empty() {
                hlog::write_interval(out, &uncorrected, start, length, Some("uncorrected"))
                    .map_err(io)?;
            }
            out.flush().map_err(io)?;
        }
        self.total_responses += iv.responses();
        self.total_errors += iv.errors();
        if let Some(m) = &self.opts.metrics {
            m.connections_opened(iv.opened);
            m.second(
                start < self.warmup,
                iv.sent,
                &iv.outcomes,
                &iv.all_latency(),
                length,
                target_rate.or(self.fixed_rate),
            );
        }
        if !self.watch.is_empty() && start >= self.warmup {
            let censored_min = (!iv.censored.is_empty()).then(|| iv.censored.min());
            let stop = self.watch.second(
                iv.all_latency(),
                censored_min,
                iv.outcomes,
                length,
                target_rate.or(self.fixed_rate),
            );
            if let Some(why) = stop {
                tracing::warn!("{why}: stopping the run");
                self.stop.store(true, Ordering::Relaxed);
            }
        }
        if let Some(cb) = self.opts.on_interval.as_deref_mut() {
            let all = iv.all_latency();
            let q = |p: f64| {
                if all.is_empty() {
                    0.0
                } else {
                    all.value_at_quantile(p) as f64 / 1e6
                }
            };
            let view = IntervalView {
                index: iv.index,
                elapsed: start + length,
                warmup: start < self.warmup,
                responses: iv.responses(),
                errors: iv.errors(),
                length,
                rps: iv.responses() as f64 / length.as_secs_f64().max(1e-3),
                p99_ms: q(0.99),
                total_responses: self.total_responses,
                total_errors: self.total_errors,
                sent: iv.sent,
                target_rate: target_rate.or(self.fixed_rate),
                p50_ms: q(0.5),
                p90_ms: q(0.9),
                max_ms: if all.is_empty() {
                    0.0
                } else {
                    all.max() as f64 / 1e6
                },
                outcomes: iv.outcomes,
                opened: iv.opened,
                stall_longest: iv.stall_longest,
            };
            cb(&view);
        }
        Ok(())
    }
}

/// Builds the report from the merged worker results.
fn build(
    config: &LoadConfig,
    clock: Clock,
    wall_start: SystemTime,
    results: Vec<WorkerResult>,
    [warm, meas]: [PhaseStats; 2],
    censored: [Censored; 2],
    throttled: Option<Throttled>,
) -> RunOutput {
    let mut cpu_user = 0.0;
    let mut cpu_sys = 0.0;
    let mut finished = clock.measure_start;
    let mut stopped_at: Option<Instant> = None;
    let mut stalls = Stalls::default();
    for r in &results {
        stalls.longest = stalls.longest.max(r.stalls.longest);
        stalls.count += r.stalls.count;
        cpu_user += r.cpu_user;
        cpu_sys += r.cpu_sys;
        finished = finished.max(r.finished);
        if let Some(s) = r.stopped_at {
            stopped_at = Some(stopped_at.map_or(s, |x| x.min(s)));
        }
    }
    // With both a duration and a count, whichever ended the run bounds the phase; an
    // interruption ends it where it happened (what was in flight then still finishes).
    let meas_end = clock.deadline.map_or(finished, |d| d.min(finished));
    let meas_end = stopped_at.map_or(meas_end, |s| s.max(clock.measure_start).min(meas_end));
    let meas_len = meas_end.saturating_duration_since(clock.measure_start);
    let target = config.mean_rate();
    let open = config.arrival.is_open();
    let http2 = config.protocol == crate::config::Protocol::Http2;
    let [warm_censored, meas_censored] = &censored;
    let warm_len = stopped_at.map_or(config.warmup, |s| {
        s.saturating_duration_since(clock.start).min(config.warmup)
    });
    let warmup = (!config.warmup.is_zero())
        .then(|| phase_report(&warm, warm_censored, warm_len, target, open, http2));
    let measurement = phase_report(&meas, meas_censored, meas_len, target, open, http2);
    let target_warnings = target_warnings(&meas, &measurement);

    let wall = finished
        .saturating_duration_since(clock.start)
        .as_secs_f64()
        .max(1e-9);
    let cpu_percent = 100.0 * (cpu_user + cpu_sys) / (wall * f64::from(config.threads));
    let mut warnings: Vec<String> = selfcheck::cpu_warning(cpu_percent).into_iter().collect();
    if stalls.longest > STALL_WARN {
        warnings.push(format!(
            "a generator thread was kept from running for up to {:.0} ms ({} stalls over {} ms): \
             nothing was sent meanwhile{} (the machine starved the generator: other processes, or \
             fewer free cores than threads)",
            stalls.longest.as_secs_f64() * 1e3,
            stalls.count,
            STALL_COUNTED.as_millis(),
            if open {
                ", and the requests due then were sent late with the stall in their latency"
            } else {
                ""
            }
        ));
    }
    warnings.extend(selfcheck::quota_warning(throttled, wall));
    let mut send_lag = None;
    let mut schedule_kept = None;
    if open {
        let mut lag = warm.send_lag.clone();
        lag.add(&meas.send_lag).expect("same bounds");
        let s = summarize(&lag);
        warnings.extend(selfcheck::send_lag_warning(&s));
        send_lag = Some(s);
        let due = meas.outcomes.total();
        let never = meas.outcomes.get(Outcome::NeverSent);
        schedule_kept = Some(if due == 0 {
            100.0
        } else {
            100.0 * (due - never) as f64 / due as f64
        });
    }
    let valid = warnings.is_empty();
    let report = LoadReport {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo {
            name: "gatebench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        started_at_unix_ms: wall_start
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
        started_at_unix_us: wall_start
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0),
        config: config.record(),
        warmup,
        measurement,
        self_check: SelfCheck {
            cpu_user_s: cpu_user,
            cpu_sys_s: cpu_sys,
            cpu_percent,
            send_lag,
            schedule_kept_percent: schedule_kept,
            cpu_throttled_s: throttled.map(|t| t.time.as_secs_f64()),
            warnings,
        },
        target_warnings,
        timeline: None,
        classes: None,
        valid,
        shard: None,
        merged: None,
        thresholds: Vec::new(),
        stream: None,
    };
    RunOutput {
        report,
        warmup: warm,
        measurement: meas,
    }
}

/// What the measurement saw of the target that its figures alone could hide, in plain words.
fn target_warnings(meas: &PhaseStats, report: &PhaseReport) -> Vec<String> {
    let o = &report.outcomes;
    let mut out = Vec::new();
    let unanswered = o.get(Outcome::Unanswered);
    let timeouts = o.get(Outcome::Timeout);
    let responses = o.responses();
    let ms = |ns: u64| ns as f64 / 1e6;
    if responses == 0 && unanswered + timeouts > 0 {
        out.push(format!(
            "the target answered none of the {} requests sent: {timeouts} timed out, \
             {unanswered} were still unanswered at the end",
            timeouts + unanswered + o.get(Outcome::InFlight)
        ));
    } else if unanswered > 0 {
        out.push(format!(
            "the target stalled: {unanswered} requests were still unanswered at the end, the \
             oldest after {:.2} s, longer than any answered request ({:.2} ms)",
            ms(meas.cut.max()) / 1e3,
            ms(meas.latency.max()),
        ));
    }
    if report.latency.censored > 0 && responses > 0 {
        let lower: Vec<String> = report
            .latency
            .percentiles
            .iter()
            .filter(|p| p.lower_bound && p.p >= 50.0 && p.p < 100.0)
            .map(|p| format!("p{}", p.p))
            .collect();
        if let Some(first) = lower.first() {
            out.push(format!(
                "{} requests never got an answer; latency from {first} up is a lower bound \
                 (they enter at the time they had waited)",
                report.latency.censored
            ));
        }
    }
    out
}

fn phase_report(
    s: &PhaseStats,
    censored: &Censored,
    len: Duration,
    target: Option<f64>,
    open: bool,
    http2: bool,
) -> PhaseReport {
    let secs = len.as_secs_f64().max(1e-9);
    let responses = s.outcomes.responses();
    let latency = summarize_censored(&s.latency, &censored.latency);
    let latency_answered = (!censored.latency.is_empty()).then(|| summarize(&s.latency));
    let throughput = responses as f64 / secs;
    PhaseReport {
        duration_s: len.as_secs_f64(),
        outcomes: s.outcomes,
        requests: s.outcomes.total(),
        throughput_rps: throughput,
        ok_rps: s.outcomes.get(Outcome::Ok) as f64 / secs,
        error_percent: s.outcomes.error_percent(),
        target_rps: target,
        sent_rps: s.sent as f64 / secs,
        bytes_read: s.bytes_read,
        bytes_written: s.bytes_written,
        concurrency: throughput * latency_answered.as_ref().unwrap_or(&latency).mean_ms / 1e3,
        latency,
        latency_answered,
        latency_uncorrected: open
            .then(|| summarize_censored(&s.latency_uncorrected, &censored.latency_uncorrected)),
        connections: ConnectionStats {
            opened: s.conns.opened,
            reconnects: s.conns.reconnects,
            connect_failures: s.conns.connect_failures,
            requests_per_connection: if s.conns.opened == 0 {
                0.0
            } else {
                responses as f64 / s.conns.opened as f64
            },
            tls_full_handshakes: s.conns.tls_full,
            tls_resumed_handshakes: s.conns.tls_resumed,
            connect_time: (!s.connect_time.is_empty()).then(|| summarize(&s.connect_time)),
            tls_handshake_time: (!s.tls_handshake.is_empty()).then(|| summarize(&s.tls_handshake)),
            max_streams_in_use: http2.then_some(s.conns.max_streams),
        },
        histograms: Some(phase_histograms(s, censored, open)),
    }
}

/// The phase's histograms as the record carries them: lossless, so shards' records merge
/// exactly (`gatebench_model::merge`).
fn phase_histograms(s: &PhaseStats, censored: &Censored, open: bool) -> PhaseHistograms {
    let some = |h: &LatencyHistogram| (!h.is_empty()).then(|| histogram::encode(h));
    PhaseHistograms {
        answered: histogram::encode(&s.latency),
        censored: some(&censored.latency),
        answered_uncorrected: open.then(|| histogram::encode(&s.latency_uncorrected)),
        censored_uncorrected: if open {
            some(&censored.latency_uncorrected)
        } else {
            None
        },
        connect_time: some(&s.connect_time),
        tls_handshake: some(&s.tls_handshake),
        send_lag: if open { some(&s.send_lag) } else { None },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_that_resets_everything_has_ended_requests_a_silent_one_has_not() {
        let mut o = OutcomeCounts::default();
        o.add(Outcome::InFlight, 2);
        o.add(Outcome::NeverSent, 5);
        o.add(Outcome::Timeout, 3);
        o.add(Outcome::ConnectTimeout, 1);
        assert!(!target_ended_any(&o), "only the client ended these");
        o.add(Outcome::StreamReset, 1);
        assert!(target_ended_any(&o), "a reset is the target's answer");
    }

    #[test]
    fn split_is_fair_and_complete() {
        assert_eq!(split(10, 3), vec![4, 3, 3]);
        assert_eq!(split(2, 2), vec![1, 1]);
        assert_eq!(split(5, 1), vec![5]);
        assert_eq!(split(7, 4).iter().sum::<u64>(), 7);
    }
}
