//! A run's live figures for Prometheus: served for scraping (`gatebench load --metrics ADDRESS`)
//! and pushed by remote write (`--remote-write URL`). The rule: the load's hot path pays nothing
//! for it. The figures are updated once a second, from the seconds the collector already merges
//! (so a scrape lags by at most a second), and encoded only when scraped or pushed.
//!
//! Metric names follow Prometheus's conventions (base units, `_total` counters, `_seconds`):
//! - `gatebench_requests_sent_total{phase}`: requests sent;
//! - `gatebench_requests_total{phase,outcome}`: requests finished, by outcome class (the same
//!   classes as the record's `outcomes`); `in flight at the end` and `never sent` are counted
//!   once the run ends;
//! - `gatebench_request_duration_seconds{phase}`: a histogram of the latency (corrected for
//!   coordinated omission in the open model; requests that never got an answer at the time they
//!   had waited), with classic buckets for HTTP latencies from 0.5 ms to 10 s and, in the
//!   protobuf exposition, native buckets too ([`native`]);
//! - `gatebench_target_rate`, `gatebench_achieved_rate`: the target (open model) and achieved
//!   responses per second over the last second;
//! - `gatebench_in_flight_requests`: sent and not finished, at the end of the last second;
//! - `gatebench_phase`: 0 warm-up, 1 measurement, 2 done;
//! - `gatebench_connections_opened_total`: connections the generator opened;
//! - `gatebench_generator_cpu_seconds_total`: the generator process's CPU time (the self-check's
//!   view of it).
//!
//! Every series carries the labels given with `--metrics-label` (e.g. `scenario="proxy"`). A
//! series' `phase` is that of the second a request finished in (Prometheus counts events when
//! they happen), where the record counts a request in the phase it was sent in: the two differ
//! by the requests in flight across the warm-up's end, and agree exactly over both phases.
//!
//! # Layout
//! - this file: the figures ([`LiveMetrics`]) and their one description as metric families,
//!   which every form below encodes;
//! - [`text`]: the text exposition format 0.0.4;
//! - [`scrape`]: the delimited protobuf exposition (`io.prometheus.client.MetricFamily`), the
//!   only scrape format that carries native histograms;
//! - [`native`]: the HdrHistogram → native histogram mapping;
//! - [`proto`]: the protobuf wire format, written by hand;
//! - [`server`]: `GET /metrics` and its content negotiation;
//! - [`remote_write`]: Prometheus remote write 1.0 on a thread of its own.

pub mod native;
pub mod proto;
pub mod remote_write;
pub mod scrape;
pub mod server;
pub mod text;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use gatebench_model::histogram::LatencyHistogram;
use gatebench_model::{Outcome, OutcomeCounts};

pub use remote_write::{RemoteWrite, RemoteWriteStats, RemoteWriteUrl};
pub use server::MetricsServer;

use native::Native;

/// The histogram's upper bounds, seconds: HTTP latencies from half a millisecond to ten seconds
/// (Prometheus's default buckets, with 0.5 ms and 1 ms below them for fast services).
pub const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Most labels `--metrics-label` takes.
pub const MAX_LABELS: usize = 16;

/// The phases figures are kept apart by.
const PHASES: [&str; 2] = ["warmup", "measurement"];

/// A latency histogram in the exposition's forms: classic counts per bucket (not cumulative;
/// `+Inf` last), the native buckets, the sum and the count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Histogram {
    /// Values per classic bucket of [`BUCKETS`], then those above the last (`+Inf`).
    pub counts: [u64; BUCKETS.len() + 1],
    /// The same values in native buckets.
    pub native: Native,
    /// Sum of the values, seconds.
    pub sum_s: f64,
    /// Number of values.
    pub count: u64,
}

impl Histogram {
    /// Adds every value of `h` (nanoseconds). One pass over its recorded values, once a second
    /// off the hot path; each value stands for its HdrHistogram sub-bucket's highest equivalent
    /// value, as gatebench's percentiles do.
    pub fn add(&mut self, h: &LatencyHistogram) {
        for v in h.iter_recorded() {
            let n = v.count_at_value();
            let s = v.value_iterated_to() as f64 / 1e9;
            let i = BUCKETS.partition_point(|b| *b < s);
            self.counts[i] += n;
            self.native.add_value(s, n);
            self.sum_s += s * n as f64;
            self.count += n;
        }
    }

    /// The classic buckets, cumulative, with their upper bounds (`+Inf` last).
    pub fn cumulative(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        BUCKETS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(self.counts.iter().scan(0u64, |c, n| {
                *c += n;
                Some(*c)
            }))
    }
}

/// The figures of a run so far.
#[derive(Clone, Debug, Default)]
struct State {
    sent: [u64; 2],
    outcomes: [OutcomeCounts; 2],
    latency: [Histogram; 2],
    target_rate: Option<f64>,
    achieved_rate: f64,
    in_flight: u64,
    phase: u8,
    /// Connections opened, both phases.
    opened: u64,
}

/// What kind of metric a family is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up.
    Counter,
    /// Goes up and down.
    Gauge,
    /// A histogram (classic and native buckets, sum, count).
    Histogram,
}

/// One series' value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A whole number (a count).
    Int(u64),
    /// A real number.
    Float(f64),
    /// A histogram.
    Histogram(Box<Histogram>),
}

impl Value {
    /// The value as a sample (a histogram's count).
    pub fn as_f64(&self) -> f64 {
        match self {
            Value::Int(v) => *v as f64,
            Value::Float(v) => *v,
            Value::Histogram(h) => h.count as f64,
        }
    }
}

/// One series of a family: its own labels (after the run's) and its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Labels of this series beyond the run's (`phase`, `outcome`).
    pub labels: Vec<(&'static str, &'static str)>,
    /// Its value.
    pub value: Value,
}

/// A metric family: a name, its help and type, and its series.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    /// The metric name (a histogram's base name, without `_bucket`/`_sum`/`_count`).
    pub name: &'static str,
    /// The `# HELP` text.
    pub help: &'static str,
    /// The type.
    pub kind: Kind,
    /// The series, in exposition order.
    pub series: Vec<Series>,
}

/// Everything one scrape or one push carries: the run's labels and the families.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// The run's labels (`--metrics-label`), on every series, in the order given.
    pub labels: Arc<[(String, String)]>,
    /// The families, in exposition order.
    pub families: Vec<Family>,
}

/// What a metrics server serves: the figures now, as metric families.
pub trait Source {
    /// The figures now.
    fn snapshot(&self) -> Snapshot;
}

impl Source for LiveMetrics {
    fn snapshot(&self) -> Snapshot {
        LiveMetrics::snapshot(self)
    }
}

/// The live figures of one run, shared by the collector (writes once a second) and the
/// metrics server and remote writer (read when they scrape or push).
#[derive(Debug)]
pub struct LiveMetrics {
    state: Mutex<State>,
    /// The run's labels (name, value), every series carries them.
    labels: Arc<[(String, String)]>,
    /// Told of every second, when `--remote-write` pushes.
    remote: Mutex<Option<Arc<remote_write::Feed>>>,
}

impl LiveMetrics {
    /// Figures that carry `labels` (name, value) on every series; names are checked with
    /// [`check_label`].
    pub fn new(labels: &[(String, String)]) -> Arc<LiveMetrics> {
        Arc::new(LiveMetrics {
            state: Mutex::new(State::default()),
            labels: labels.into(),
            remote: Mutex::new(None),
        })
    }

    /// The run's labels.
    pub fn labels(&self) -> &[(String, String)] {
        &self.labels
    }

    /// One more second of the run: what was sent and finished in it, its latency, its length
    /// and target rate, and whether it lies in the warm-up. (The run's collector calls it; a
    /// coordinator of shards, with the merged seconds.)
    pub fn second(
        &self,
        warmup: bool,
        sent: u64,
        outcomes: &OutcomeCounts,
        latency: &LatencyHistogram,
        length: Duration,
        target: Option<f64>,
    ) {
        let p = usize::from(!warmup);
        {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            s.sent[p] += sent;
            s.outcomes[p].merge(outcomes);
            s.latency[p].add(latency);
            s.target_rate = target;
            s.achieved_rate = outcomes.responses() as f64 / length.as_secs_f64().max(1e-3);
            let sent_all: u64 = s.sent.iter().sum();
            let done: u64 = s.outcomes.iter().map(|o| o.total()).sum();
            s.in_flight = sent_all.saturating_sub(done);
            s.phase = p as u8;
        }
        self.tick();
    }

    /// Connections opened in the second about to be given to [`LiveMetrics::second`].
    pub fn connections_opened(&self, n: u64) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).opened += n;
    }

    /// The run ended: the requests settled only then (in flight at the end, never sent) are
    /// counted, and the phase reads done.
    pub(crate) fn finish(&self, measurement: &OutcomeCounts) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for o in [Outcome::InFlight, Outcome::NeverSent] {
            let have = s.outcomes[1].get(o);
            let add = measurement.get(o).saturating_sub(have);
            s.outcomes[1].add(o, add);
        }
        s.in_flight = 0;
        s.achieved_rate = 0.0;
        s.phase = 2;
    }

    /// Hands the remote writer, if any, a copy of the figures when its interval is due; never
    /// waits for it.
    fn tick(&self) {
        let feed = self
            .remote
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(feed) = feed.filter(|f| f.due()) {
            feed.offer(self.snapshot());
        }
    }

    /// Attaches a remote writer's intake (`RemoteWrite::start` does).
    pub(crate) fn attach(&self, feed: Arc<remote_write::Feed>) {
        *self.remote.lock().unwrap_or_else(|e| e.into_inner()) = Some(feed);
    }

    /// The figures now, as metric families.
    pub fn snapshot(&self) -> Snapshot {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let cpu = process_cpu_seconds();
        let mut families = Vec::with_capacity(10);
        families.push(Family {
            name: "gatebench_requests_sent_total",
            help: "Requests sent.",
            kind: Kind::Counter,
            series: PHASES
                .iter()
                .zip(s.sent)
                .map(|(p, n)| Series {
                    labels: vec![("phase", p)],
                    value: Value::Int(n),
                })
                .collect(),
        });
        families.push(Family {
            name: "gatebench_requests_total",
            help: "Requests finished, by outcome class.",
            kind: Kind::Counter,
            series: PHASES
                .iter()
                .zip(&s.outcomes)
                .flat_map(|(p, o)| {
                    Outcome::ALL.iter().map(move |c| Series {
                        labels: vec![("phase", p), ("outcome", c.name())],
                        value: Value::Int(o.get(*c)),
                    })
                })
                .collect(),
        });
        families.push(Family {
            name: "gatebench_request_duration_seconds",
            help: "Request latency (corrected for coordinated omission in the open model).",
            kind: Kind::Histogram,
            series: PHASES
                .iter()
                .zip(s.latency)
                .map(|(p, h)| Series {
                    labels: vec![("phase", p)],
                    value: Value::Histogram(Box::new(h)),
                })
                .collect(),
        });
        let gauge = |name, help, v| Family {
            name,
            help,
            kind: Kind::Gauge,
            series: vec![Series {
                labels: Vec::new(),
                value: Value::Float(v),
            }],
        };
        if let Some(t) = s.target_rate {
            families.push(gauge(
                "gatebench_target_rate",
                "The open model's target rate over the last second, requests per second.",
                t,
            ));
        }
        families.push(gauge(
            "gatebench_achieved_rate",
            "Responses per second over the last second.",
            s.achieved_rate,
        ));
        families.push(gauge(
            "gatebench_in_flight_requests",
            "Requests sent and not finished, at the end of the last second.",
            s.in_flight as f64,
        ));
        families.push(gauge(
            "gatebench_phase",
            "0 warm-up, 1 measurement, 2 done.",
            f64::from(s.phase),
        ));
        families.push(Family {
            name: "gatebench_connections_opened_total",
            help: "Connections the generator opened (TCP, and TLS where the target is https).",
            kind: Kind::Counter,
            series: vec![Series {
                labels: Vec::new(),
                value: Value::Int(s.opened),
            }],
        });
        families.push(Family {
            name: "gatebench_generator_cpu_seconds_total",
            help: "CPU time of the generator process.",
            kind: Kind::Counter,
            series: vec![Series {
                labels: Vec::new(),
                value: Value::Float(cpu),
            }],
        });
        Snapshot {
            labels: self.labels.clone(),
            families,
        }
    }

    /// The text exposition (format 0.0.4).
    pub fn render(&self) -> String {
        text::render(&self.snapshot())
    }
}

/// Checks a label name given with `--metrics-label`: Prometheus's `[a-zA-Z_][a-zA-Z0-9_]*`,
/// not reserved (`__…`) and not one gatebench sets (`phase`, `outcome`, `le`).
pub fn check_label(name: &str) -> Result<(), String> {
    let ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(format!(
            "'{name}' is not a Prometheus label name (letters, digits and _, not starting \
             with a digit)"
        ));
    }
    if name.starts_with("__") || ["phase", "outcome", "le"].contains(&name) {
        return Err(format!("'{name}' is reserved"));
    }
    Ok(())
}

/// User plus system CPU seconds of this process (`/proc/self/stat`); 0 where unreadable.
pub fn process_cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces) start past the last ')'.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are fields 14 and 15 of the line: 12 and 13 after the state field.
    let hz = rustix::param::clock_ticks_per_second().max(1) as f64;
    (ticks(11) + ticks(12)) as f64 / hz
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_names_are_checked() {
        assert!(check_label("scenario").is_ok());
        assert!(check_label("1a").is_err());
        assert!(check_label("a-b").is_err());
        assert!(check_label("__x").is_err());
        assert!(check_label("phase").is_err());
    }

    #[test]
    fn classic_buckets_are_upper_inclusive() {
        let mut h = Histogram::default();
        let mut hdr = gatebench_model::histogram::new_histogram();
        hdr.record_n(1_000_000, 2).unwrap(); // exactly 1 ms: highest equivalent 1.000499 ms
        hdr.record_n(20_000, 1).unwrap(); // 20 µs
        hdr.record_n(20_000_000_000, 1).unwrap(); // 20 s
        h.add(&hdr);
        let c: Vec<(f64, u64)> = h.cumulative().collect();
        assert_eq!(c[0], (0.0005, 1));
        assert_eq!(c[1], (0.001, 1));
        assert_eq!(c[2], (0.0025, 3), "1.0005 ms is above 1 ms");
        assert_eq!(c[13], (10.0, 3));
        assert_eq!(c[14], (f64::INFINITY, 4));
        assert_eq!(h.count, 4);
    }
}
