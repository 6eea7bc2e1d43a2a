//! What a worker records: latency histograms, outcome counts, bytes and connection figures,
//! per phase and per one-second interval.
//!
//! Each worker owns its [`PhaseStats`]; nothing is shared on the hot path. Workers' stats are
//! merged exactly at the end (histograms add bucket by bucket, counters add), which is also how
//! shards on several machines would merge. Latency is recorded in nanoseconds with three
//! significant digits, from 1 ns to one hour; larger values saturate at the top rather than
//! being dropped.
//!
//! Requests that never got an answer are kept apart from answered ones: timeouts, requests cut
//! off by the run's end and, in the open model, tickets still waiting in the backlog each have
//! a histogram of the time they had waited. [`summarize_censored`] joins them to the answered
//! latencies as censored values (lower bounds); which of the cut-off ones count is decided once
//! the whole run is known (see `run::censor`).

use std::time::Duration;

// The summaries and the histogram type are the model's, so that a merge of shards' records
// computes them exactly as a run does.
use gatebench_model::events::{
    encode_ok_ms, merge_marks, MarkSeen, SecondDetail, MS_PER_SECOND, OK_WORDS,
};
pub use gatebench_model::histogram::{
    new_histogram, summarize, summarize_censored, LatencyHistogram, HIGHEST_NS,
};
use gatebench_model::OutcomeCounts;
use hdrhistogram::Histogram;

/// A new empty histogram that grows as values arrive: for figures that are usually empty
/// (timeouts, cut-off requests), so a healthy run does not pay a full histogram's memory for
/// each of them. Values are clamped to the same one-hour top by [`record`].
pub fn new_sparse_histogram() -> LatencyHistogram {
    let mut h = Histogram::new_with_bounds(1, 2, 3).expect("constant bounds are valid");
    h.auto(true);
    h
}

/// Records a duration, saturating at the highest trackable value.
#[inline]
pub fn record(h: &mut LatencyHistogram, d: Duration) {
    let ns = u64::try_from(d.as_nanos())
        .unwrap_or(u64::MAX)
        .clamp(1, HIGHEST_NS);
    // `record` grows a sparse histogram (saturating would clamp it to its initial top); on a
    // full-range histogram a clamped value always fits.
    if h.record(ns).is_err() {
        h.saturating_record(ns);
    }
}

/// The values of `h` that are longer than every value of `than` (in HdrHistogram's bucket
/// terms: the lowest value equivalent to a bucket lies above `than`'s highest), as a new
/// histogram. With `than` empty, all of `h`.
pub fn longer_than_all(h: &LatencyHistogram, than: &LatencyHistogram) -> LatencyHistogram {
    let mut out = new_sparse_histogram();
    let top = if than.is_empty() { 0 } else { than.max() };
    for v in h.iter_recorded() {
        let value = v.value_iterated_to();
        if h.lowest_equivalent(value) > top {
            out.record_n(value, v.count_at_value())
                .expect("an auto-resizing histogram takes any value");
        }
    }
    out
}

/// Connection lifecycle counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnCounters {
    /// Connections established.
    pub opened: u64,
    /// Connections established on a slot that had one before.
    pub reconnects: u64,
    /// Failed connection attempts.
    pub connect_failures: u64,
    /// Full TLS handshakes.
    pub tls_full: u64,
    /// Resumed TLS handshakes.
    pub tls_resumed: u64,
    /// HTTP/2: the most streams open at once on one connection.
    pub max_streams: u64,
}

impl ConnCounters {
    fn merge(&mut self, o: &ConnCounters) {
        self.opened += o.opened;
        self.reconnects += o.reconnects;
        self.connect_failures += o.connect_failures;
        self.tls_full += o.tls_full;
        self.tls_resumed += o.tls_resumed;
        self.max_streams = self.max_streams.max(o.max_streams);
    }
}

/// Everything recorded for one phase (warm-up or measurement) by one worker, or merged.
#[derive(Debug, Clone)]
pub struct PhaseStats {
    /// Every scheduled request by class.
    pub outcomes: OutcomeCounts,
    /// Latency: from the intended send time in the open model, from the send in the closed one.
    pub latency: LatencyHistogram,
    /// Open model: latency from the actual send.
    pub latency_uncorrected: LatencyHistogram,
    /// Requests that timed out: the time they had waited (from the intended send time in the
    /// open model), a lower bound of their latency.
    pub timed_out: LatencyHistogram,
    /// Open model: timed-out requests' wait from the actual send.
    pub timed_out_uncorrected: LatencyHistogram,
    /// Requests still unanswered when the run ended: the time they had waited. Counted as
    /// `in_flight` until the run decides which of them stalled (see `run::censor`).
    pub cut: LatencyHistogram,
    /// Open model: `cut` measured from the actual send.
    pub cut_uncorrected: LatencyHistogram,
    /// Open model: backlog tickets (never sent) at the end, the time since they were due.
    pub backlog: LatencyHistogram,
    /// Open model: how late the generator itself sent against the schedule.
    pub send_lag: LatencyHistogram,
    /// Time to establish connections (TCP connect and, with TLS, the handshake).
    pub connect_time: LatencyHistogram,
    /// TLS handshake time alone.
    pub tls_handshake: LatencyHistogram,
    /// Requests written.
    pub sent: u64,
    /// Response bytes read.
    pub bytes_read: u64,
    /// Request bytes written.
    pub bytes_written: u64,
    /// Connection counters.
    pub conns: ConnCounters,
}

impl Default for PhaseStats {
    fn default() -> Self {
        PhaseStats {
            outcomes: OutcomeCounts::default(),
            latency: new_histogram(),
            latency_uncorrected: new_histogram(),
            timed_out: new_sparse_histogram(),
            timed_out_uncorrected: new_sparse_histogram(),
            cut: new_sparse_histogram(),
            cut_uncorrected: new_sparse_histogram(),
            backlog: new_sparse_histogram(),
            send_lag: new_histogram(),
            connect_time: new_histogram(),
            tls_handshake: new_histogram(),
            sent: 0,
            bytes_read: 0,
            bytes_written: 0,
            conns: ConnCounters::default(),
        }
    }
}

impl PhaseStats {
    /// Adds `other` into `self`. Exact: histogram buckets and counters add up.
    pub fn merge(&mut self, other: &PhaseStats) {
        self.outcomes.merge(&other.outcomes);
        add(&mut self.latency, &other.latency);
        add(&mut self.latency_uncorrected, &other.latency_uncorrected);
        add(&mut self.timed_out, &other.timed_out);
        add(
            &mut self.timed_out_uncorrected,
            &other.timed_out_uncorrected,
        );
        add(&mut self.cut, &other.cut);
        add(&mut self.cut_uncorrected, &other.cut_uncorrected);
        add(&mut self.backlog, &other.backlog);
        add(&mut self.send_lag, &other.send_lag);
        add(&mut self.connect_time, &other.connect_time);
        add(&mut self.tls_handshake, &other.tls_handshake);
        self.sent += other.sent;
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        self.conns.merge(&other.conns);
    }
}

/// The measurement's figures for one request class (a mix entry, a replay group), kept beside
/// the phase's totals, which they add up to. Histograms are sparse: a class costs memory for
/// the range of latencies it saw only.
#[derive(Debug, Clone)]
pub struct ClassStats {
    /// Its requests by class of outcome.
    pub outcomes: OutcomeCounts,
    /// As [`PhaseStats::latency`].
    pub latency: LatencyHistogram,
    /// As [`PhaseStats::latency_uncorrected`].
    pub latency_uncorrected: LatencyHistogram,
    /// As [`PhaseStats::timed_out`].
    pub timed_out: LatencyHistogram,
    /// As [`PhaseStats::timed_out_uncorrected`].
    pub timed_out_uncorrected: LatencyHistogram,
    /// As [`PhaseStats::cut`].
    pub cut: LatencyHistogram,
    /// As [`PhaseStats::cut_uncorrected`].
    pub cut_uncorrected: LatencyHistogram,
    /// As [`PhaseStats::backlog`].
    pub backlog: LatencyHistogram,
}

impl Default for ClassStats {
    fn default() -> Self {
        ClassStats {
            outcomes: OutcomeCounts::default(),
            latency: new_sparse_histogram(),
            latency_uncorrected: new_sparse_histogram(),
            timed_out: new_sparse_histogram(),
            timed_out_uncorrected: new_sparse_histogram(),
            cut: new_sparse_histogram(),
            cut_uncorrected: new_sparse_histogram(),
            backlog: new_sparse_histogram(),
        }
    }
}

impl ClassStats {
    /// Adds `other` into `self`, exactly.
    pub fn merge(&mut self, other: &ClassStats) {
        self.outcomes.merge(&other.outcomes);
        add(&mut self.latency, &other.latency);
        add(&mut self.latency_uncorrected, &other.latency_uncorrected);
        add(&mut self.timed_out, &other.timed_out);
        add(
            &mut self.timed_out_uncorrected,
            &other.timed_out_uncorrected,
        );
        add(&mut self.cut, &other.cut);
        add(&mut self.cut_uncorrected, &other.cut_uncorrected);
        add(&mut self.backlog, &other.backlog);
    }
}

/// What a worker reports for one second of the run (the live view and the interval log).
#[derive(Debug, Clone)]
pub struct IntervalStats {
    /// Index of the second since the run started (warm-up included).
    pub index: u64,
    /// How much of that second the interval covers: a full second, or less for the last one
    /// (the run ended part-way through it).
    pub length: Duration,
    /// Requests sent in this second (by the actual send).
    pub sent: u64,
    /// Outcomes completed in this second.
    pub outcomes: OutcomeCounts,
    /// Latency of responses completed in this second (corrected in the open model).
    pub latency: LatencyHistogram,
    /// Open model: uncorrected latency of responses completed in this second.
    pub latency_uncorrected: LatencyHistogram,
    /// Censored values settled in this second: timeouts and, in the run's last interval, the
    /// requests that stalled until the end (the time they had waited).
    pub censored: LatencyHistogram,
    /// Open model: `censored` measured from the actual send.
    pub censored_uncorrected: LatencyHistogram,
    /// Connections opened in this second.
    pub opened: u64,
    /// The longest stall of a generator thread so far (at the end of this second).
    pub stall_longest: Duration,
    /// The milliseconds of this second in which a successful response completed, a bit each.
    pub ok_ms: [u64; OK_WORDS],
    /// With `--mark-header`: each value seen on a successful response, first time in this
    /// second (milliseconds from its start).
    pub marks: Vec<MarkSeen>,
}

impl IntervalStats {
    /// An empty interval with index `index`.
    pub fn new(index: u64) -> Self {
        IntervalStats {
            index,
            length: Duration::from_secs(1),
            sent: 0,
            outcomes: OutcomeCounts::default(),
            latency: new_histogram(),
            latency_uncorrected: new_histogram(),
            censored: new_sparse_histogram(),
            censored_uncorrected: new_sparse_histogram(),
            opened: 0,
            stall_longest: Duration::ZERO,
            ok_ms: [0; OK_WORDS],
            marks: Vec::new(),
        }
    }

    /// A successful response completed `ms` milliseconds into this second, carrying marked
    /// value `mark` (if any).
    #[inline]
    pub fn ok_at(&mut self, ms: usize, mark: Option<&str>) {
        let ms = ms.min(MS_PER_SECOND - 1);
        self.ok_ms[ms / 64] |= 1 << (ms % 64);
        if let Some(v) = mark {
            match self.marks.iter_mut().find(|m| m.value == v) {
                Some(m) => m.last_ms = Some(ms as u32),
                None => self.marks.push(MarkSeen {
                    value: v.to_owned(),
                    first_ms: ms as u32,
                    last_ms: Some(ms as u32),
                }),
            }
        }
    }

    /// The second's detail for its record: errors by class, the map of successful
    /// milliseconds, the marked values.
    pub fn detail(&self) -> SecondDetail {
        SecondDetail {
            error_classes: self
                .outcomes
                .nonzero()
                .filter(|(o, _)| o.is_error())
                .map(|(o, n)| (o.name().to_owned(), n))
                .collect(),
            ok_ms: self
                .ok_ms
                .iter()
                .any(|w| *w != 0)
                .then(|| encode_ok_ms(&self.ok_ms)),
            marks: self.marks.clone(),
        }
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &IntervalStats) {
        self.sent += other.sent;
        self.outcomes.merge(&other.outcomes);
        add(&mut self.latency, &other.latency);
        add(&mut self.latency_uncorrected, &other.latency_uncorrected);
        add(&mut self.censored, &other.censored);
        add(&mut self.censored_uncorrected, &other.censored_uncorrected);
        self.opened += other.opened;
        self.stall_longest = self.stall_longest.max(other.stall_longest);
        for (a, b) in self.ok_ms.iter_mut().zip(other.ok_ms) {
            *a |= b;
        }
        merge_marks(&mut self.marks, &other.marks);
        // Workers that ran longer cover more of the last second.
        self.length = self.length.max(other.length);
    }

    /// Clears for reuse as interval `index`.
    pub fn reset(&mut self, index: u64) {
        self.index = index;
        self.length = Duration::from_secs(1);
        self.sent = 0;
        self.outcomes = OutcomeCounts::default();
        self.latency.reset();
        self.latency_uncorrected.reset();
        self.censored.reset();
        self.censored_uncorrected.reset();
        self.opened = 0;
        self.ok_ms = [0; OK_WORDS];
        self.marks.clear();
    }

    /// Every latency value of the interval, censored ones included (what the interval log
    /// carries untagged).
    pub fn all_latency(&self) -> LatencyHistogram {
        let mut h = self.latency.clone();
        add(&mut h, &self.censored);
        h
    }

    /// Open model: every uncorrected value of the interval, censored ones included.
    pub fn all_latency_uncorrected(&self) -> LatencyHistogram {
        let mut h = self.latency_uncorrected.clone();
        add(&mut h, &self.censored_uncorrected);
        h
    }

    /// Responses (any status) completed in the interval.
    pub fn responses(&self) -> u64 {
        self.outcomes.responses()
    }

    /// Errors completed in the interval.
    pub fn errors(&self) -> u64 {
        self.outcomes.errors()
    }
}

/// Adds `from` into `into` bucket by bucket.
pub(crate) fn add(into: &mut LatencyHistogram, from: &LatencyHistogram) {
    into.add(from)
        .expect("histograms share bounds and saturate, so addition cannot overflow them");
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatebench_model::Outcome;

    #[test]
    fn merge_of_worker_histograms_is_exact() {
        // Two "workers" record disjoint halves of the same values; the merge must equal one
        // histogram that recorded everything.
        let mut all = new_histogram();
        let mut a = PhaseStats::default();
        let mut b = PhaseStats::default();
        for i in 1..=20_000u64 {
            let d = Duration::from_micros(i * 37 % 50_000 + 1);
            record(&mut all, d);
            let w = if i % 3 == 0 { &mut a } else { &mut b };
            record(&mut w.latency, d);
            w.outcomes.add(Outcome::Ok, 1);
        }
        let mut merged = PhaseStats::default();
        merged.merge(&a);
        merged.merge(&b);
        assert_eq!(merged.latency, all);
        assert_eq!(merged.outcomes.get(Outcome::Ok), 20_000);
        let s = summarize(&merged.latency);
        let t = summarize(&all);
        assert_eq!(s, t);
        assert_eq!(s.count, 20_000);
    }

    #[test]
    fn summary_in_milliseconds() {
        let mut h = new_histogram();
        for _ in 0..99 {
            record(&mut h, Duration::from_millis(20));
        }
        record(&mut h, Duration::from_secs(1));
        let s = summarize(&h);
        assert!((s.at(50.0).unwrap() - 20.0).abs() < 0.05, "{s:?}");
        assert!((s.max_ms - 1000.0).abs() < 1.0, "{s:?}");
        assert!(s.at(99.9).unwrap() > 900.0);
        assert!((s.mean_ms - 29.8).abs() < 0.1, "{s:?}");
    }

    #[test]
    fn huge_values_saturate_instead_of_vanishing() {
        let mut h = new_histogram();
        record(&mut h, Duration::from_secs(10_000));
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn censored_values_make_only_the_percentiles_they_reach_lower_bounds() {
        let mut answered = new_histogram();
        for _ in 0..99 {
            record(&mut answered, Duration::from_millis(1));
        }
        let mut cut = new_sparse_histogram();
        record(&mut cut, Duration::from_millis(500)); // no longer than an answer: left out
        record(&mut cut, Duration::from_micros(900));
        record(&mut cut, Duration::from_secs(5));
        let mut slow = new_histogram();
        record(&mut slow, Duration::from_millis(600));
        let censored = longer_than_all(&cut, &slow);
        assert_eq!(
            censored.len(),
            1,
            "only the 5 s wait is longer than every answer"
        );
        let s = summarize_censored(&answered, &censored);
        assert_eq!((s.count, s.censored), (100, 1));
        let p99 = s.point(99.0).unwrap();
        assert!((p99.ms - 1.0).abs() < 0.01 && !p99.lower_bound, "{p99:?}");
        let p999 = s.point(99.9).unwrap();
        assert!(p999.ms > 4990.0 && p999.lower_bound, "{p999:?}");
        assert!(s.point(100.0).unwrap().lower_bound);
        // Without censored values nothing is a lower bound.
        let plain = summarize_censored(&answered, &new_sparse_histogram());
        assert!(plain.percentiles.iter().all(|p| !p.lower_bound));
        assert_eq!(plain.censored, 0);
    }

    #[test]
    fn a_sparse_histogram_grows_instead_of_clamping() {
        let mut h = new_sparse_histogram();
        record(&mut h, Duration::from_secs(3));
        assert!(h.max() >= 2_990_000_000, "{}", h.max());
    }
}
