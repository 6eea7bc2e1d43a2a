//! Latency summaries: the figures a report prints for one histogram.
//!
//! Values are milliseconds as `f64` (the unit of the seed reports' tables). The histograms they
//! come from record nanoseconds; the summary is computed by the load generator, which owns the
//! histograms, and is only carried here.
//!
//! A summary may hold **censored** values: requests that never got an answer (timed out, or
//! stalled past every answered request when the run ended) enter the distribution at the time
//! they had waited, which is a lower bound of their latency. A percentile that falls on such
//! values is itself a lower bound and says so ([`Percentile::lower_bound`]); the mean, the
//! standard deviation and the maximum are lower bounds whenever [`LatencySummary::censored`] is
//! not zero.

use serde::{Deserialize, Serialize};

/// The percentiles every summary carries, in order (the wrk `--latency` set and the tail).
pub const PERCENTILES: [f64; 10] = [
    25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99, 99.999, 100.0,
];

/// One point of the percentile spectrum.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Percentile {
    /// The percentile, 0–100 (99.9 means p99.9).
    pub p: f64,
    /// The latency at that percentile, milliseconds.
    pub ms: f64,
    /// True when the percentile falls on censored values (requests that never got an answer):
    /// the true latency at that percentile is at least `ms`. Printed as `≥`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub lower_bound: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Summary of one latency histogram.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Number of recorded values (censored ones included).
    pub count: u64,
    /// How many of the values are censored: requests that never got an answer, recorded at
    /// the time they had waited. When non-zero, the mean, standard deviation and maximum are
    /// lower bounds.
    #[serde(default)]
    pub censored: u64,
    /// Smallest value, ms.
    pub min_ms: f64,
    /// Arithmetic mean, ms.
    pub mean_ms: f64,
    /// Standard deviation, ms.
    pub stdev_ms: f64,
    /// Largest value, ms.
    pub max_ms: f64,
    /// The spectrum at [`PERCENTILES`].
    pub percentiles: Vec<Percentile>,
}

impl LatencySummary {
    /// The value at percentile `p` if the summary carries it.
    pub fn at(&self, p: f64) -> Option<f64> {
        self.percentiles
            .iter()
            .find(|x| (x.p - p).abs() < 1e-9)
            .map(|x| x.ms)
    }

    /// The point at percentile `p` (value and whether it is a lower bound), if carried.
    pub fn point(&self, p: f64) -> Option<Percentile> {
        self.percentiles
            .iter()
            .find(|x| (x.p - p).abs() < 1e-9)
            .copied()
    }
}
