//! The values the analyses (change points, gates, trends) work on: one cell's metric along the
//! version order, each version carrying every repeat's value as its samples. The store builds
//! them; the analyses never see the store.

use serde::{Deserialize, Serialize};

/// A metric kept for every repeat of every cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Metric {
    /// Responses per second over the measurement.
    Throughput,
    /// Median latency, ms, from the stored histogram.
    P50,
    /// 99th percentile latency, ms, from the stored histogram.
    P99,
    /// 99.9th percentile latency, ms, from the stored histogram.
    P999,
    /// Errors as a percentage of scheduled requests.
    ErrorPct,
    /// The system under test's CPU time per request, µs.
    SutCpuPerRequest,
    /// The system under test's peak resident memory, MiB.
    SutMemory,
}

impl Metric {
    /// Every metric, in display order.
    pub const ALL: [Metric; 7] = [
        Metric::Throughput,
        Metric::P50,
        Metric::P99,
        Metric::P999,
        Metric::ErrorPct,
        Metric::SutCpuPerRequest,
        Metric::SutMemory,
    ];

    /// The name used on the command line, in the store and in exports.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::P50 => "p50",
            Metric::P99 => "p99",
            Metric::P999 => "p99.9",
            Metric::ErrorPct => "errors",
            Metric::SutCpuPerRequest => "sut_cpu_per_request",
            Metric::SutMemory => "sut_memory",
        }
    }

    /// The metric called `name` ([`Metric::name`]).
    pub fn parse(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The unit values are in.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Throughput => "req/s",
            Metric::P50 | Metric::P99 | Metric::P999 => "ms",
            Metric::ErrorPct => "%",
            Metric::SutCpuPerRequest => "µs",
            Metric::SutMemory => "MiB",
        }
    }

    /// Whether a larger value is better (throughput) or worse (everything else).
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Throughput)
    }
}

/// One version's values of one metric in one cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The version, as the user named it.
    pub version: String,
    /// Every repeat's value, in run order; at least one.
    pub samples: Vec<f64>,
}

/// One cell's metric along the version order (oldest first).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// The suite's name.
    pub suite: String,
    /// The cell's key (its id without the repeat: scenario, users, size, delay, protocol).
    pub cell: String,
    /// The metric.
    pub metric: Metric,
    /// One point per version, oldest first.
    pub points: Vec<Point>,
}
