//! The record of a capacity search (`gatebench load --find-max`): every step's rate and
//! figures, the objective, and the highest rate found to meet it.

use serde::{Deserialize, Serialize};

/// One run of the search at one open-model rate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CapacityStep {
    /// Order of the step, from 1.
    pub step: u32,
    /// Why the search ran it: `bracket`, `bisect` or `check`.
    pub phase: String,
    /// The open-model rate asked, requests/s.
    pub rate: f64,
    /// Measurement length, seconds.
    pub duration_s: f64,
    /// Requests sent per second.
    pub sent_rps: f64,
    /// Complete responses per second.
    pub throughput_rps: f64,
    /// Corrected latency at p50, ms.
    pub p50_ms: f64,
    /// Corrected latency at p99, ms.
    pub p99_ms: f64,
    /// Corrected latency at p99.9, ms.
    pub p999_ms: f64,
    /// Error % of the measurement.
    pub error_percent: f64,
    /// Whether every objective held.
    pub passed: bool,
    /// The first objective that failed, in words; empty when it passed.
    pub reason: String,
    /// The generator's self-check warnings: a non-empty list ends the search.
    pub generator_warnings: Vec<String>,
}

/// How the search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapacityVerdict {
    /// The highest passing rate is bracketed by a failing one within the precision, and
    /// passed again when checked.
    Found,
    /// The generator was the bottleneck at some step: `max_rate` is only a lower bound.
    GeneratorBound,
    /// Not even the lowest rate tried met the objective.
    NoneMet,
    /// The step budget ran out before the precision was reached.
    StepLimit,
}

/// The whole search.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CapacityReport {
    /// [`crate::SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// Target URL.
    pub url: String,
    /// The objective as given, e.g. `p99<10ms,errors<0.1%`.
    pub slo: String,
    /// Connections every step used.
    pub connections: u32,
    /// Every step, in order.
    pub steps: Vec<CapacityStep>,
    /// How the search ended.
    pub verdict: CapacityVerdict,
    /// The highest rate that met the objective (and its check), requests/s; `None` when none
    /// did.
    pub max_rate: Option<f64>,
    /// The lowest rate that failed above it, requests/s, when one did.
    pub failed_rate: Option<f64>,
    /// `(failed_rate − max_rate) ÷ max_rate × 100`: how far the true limit may lie above the
    /// answer.
    pub uncertainty_percent: Option<f64>,
    /// The knee of the latency-against-rate curve (Kneedle on the objective's percentile):
    /// where latency starts to climb, requests/s.
    pub knee_rate: Option<f64>,
}
