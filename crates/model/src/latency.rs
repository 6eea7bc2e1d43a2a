//! Latency summaries: the figures a report prints for one histogram.
//!
//! Values are milliseconds as `f64` (the unit of the seed reports' tables). The histograms they
//! come from record nanoseconds; the summary is computed by the load generator, which owns the
//! histograms, and is only carried here.

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
}

/// Summary of one latency histogram.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Number of recorded values.
    pub count: u64,
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
}
