//! The record of an intermediary-cost measurement (`gatebench cost`): the same open-model
//! schedule sent to a back-end directly and through an intermediary, interleaved, and what the
//! intermediary adds.

use serde::{Deserialize, Serialize};

/// The percentiles whose added latency is reported, in [`CostRun::percentiles_ms`] order.
pub const COST_PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];

/// One run of the measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostRun {
    /// Position in the interleaved order, from 1.
    pub order: u32,
    /// `direct` or `via`.
    pub path: String,
    /// Which repeat, from 1.
    pub repeat: u32,
    /// Corrected latency at p50, p90, p99 and p99.9, ms.
    pub percentiles_ms: Vec<f64>,
    /// Complete responses in the measurement.
    pub responses: u64,
    /// Complete responses per second.
    pub throughput_rps: f64,
    /// Error % of the measurement.
    pub error_percent: f64,
    /// CPU seconds the intermediary spent during the measurement (user + system), when its
    /// process was given.
    pub intermediary_cpu_s: Option<f64>,
    /// False when the generator's self-check flagged the run.
    pub valid: bool,
}

/// What the intermediary adds at one percentile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AddedLatency {
    /// The percentile (99.9 means p99.9).
    pub p: f64,
    /// Median over the direct runs, ms.
    pub direct_ms: f64,
    /// Median over the runs through the intermediary, ms.
    pub via_ms: f64,
    /// The Hodges-Lehmann shift via − direct, ms.
    pub added_ms: f64,
    /// Lower end of its distribution-free confidence interval, ms.
    pub low_ms: f64,
    /// Upper end, ms.
    pub high_ms: f64,
    /// The interval's confidence level (0.95, or the highest the repeats allow).
    pub level: f64,
}

/// The whole measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostReport {
    /// [`crate::SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The back-end, reached directly.
    pub direct_url: String,
    /// The same back-end through the intermediary.
    pub via_url: String,
    /// The open-model rate of every run, requests/s.
    pub rate: f64,
    /// Connections of every run.
    pub connections: u32,
    /// Measurement length of every run, seconds.
    pub duration_s: f64,
    /// Repeats of each path.
    pub repeats: u32,
    /// Every run, in the order they ran.
    pub runs: Vec<CostRun>,
    /// The latency added at p50, p90, p99 and p99.9.
    pub added: Vec<AddedLatency>,
    /// The intermediary's CPU time per response through it, µs (median over the runs).
    pub intermediary_cpu_us_per_request: Option<f64>,
    /// The intermediary's CPU use during the runs through it, percent of one core (median).
    pub intermediary_cpu_percent: Option<f64>,
    /// What could make the figures mislead: errors, generator-bound runs.
    pub warnings: Vec<String>,
}
