//! The shared vocabulary of gatebench: what a load run produced, in the form that is written to
//! disk and read back by reports and comparisons.
//!
//! This crate owns the record types and their JSON shape (the committed schema lives in
//! `schema/load-report.schema.json` at the repository root), the latency histograms a record
//! carries and the summaries computed from them, and the merge of the records of several load
//! generators into one; nothing else: no I/O, no measuring, no rendering. Every type derives
//! `serde` so that a results directory written by one version can be read, or refused with a
//! clear message, by another.
//!
//! # Layout
//! - [`outcome`]: the classes every scheduled request ends in.
//! - [`latency`]: latency summaries (mean, stddev, percentile spectrum).
//! - [`histogram`]: HdrHistograms as a record carries them (V2 compressed, base64), and the
//!   summaries computed from them.
//! - [`load`]: the record of one `gatebench load` run (one suite cell).
//! - [`suite`]: the records of a suite run: manifest, environment, one record per cell.
//! - [`capacity`]: the record of a capacity search (`gatebench load --find-max`).
//! - [`cost`]: the record of an intermediary-cost measurement (`gatebench cost`).
//! - [`origin`]: what a cell's echo back-ends saw of its intermediary (origin statistics).
//! - [`stream`]: the figures of a streamed run (SSE, LLM chat completions, chunked bodies).
//! - [`merge`]: shards of one load run (`gatebench load --shard I/N`) merged into one record.

pub mod capacity;
pub mod cost;
pub mod events;
pub mod grpc;
pub mod histogram;
pub mod latency;
pub mod load;
pub mod merge;
pub mod origin;
pub mod outcome;
pub mod stream;
pub mod suite;
pub mod websocket;

pub use capacity::{CapacityReport, CapacityStep, CapacityVerdict};
pub use cost::{AddedLatency, CostReport, CostRun, COST_PERCENTILES};
pub use events::{EventCost, EventRecord, MarkSeen, SecondDetail};
pub use latency::{LatencySummary, Percentile, PERCENTILES};
pub use load::redact_header;
pub use load::{
    ArrivalRecord, ClassReport, ConnectionStats, LiveMergeCheck, LiveSecond, LoadConfigRecord,
    LoadReport, MergeInfo, MergedShard, Model, PhaseHistograms, PhaseReport, RequestsFrom,
    SecondRecord, SelfCheck, ShardInfo, ThresholdResult, ToolInfo,
};
pub use origin::{OriginBackend, OriginReport};
pub use outcome::{Outcome, OutcomeCounts};
pub use stream::{RateSummary, StreamReport};
pub use suite::{
    CellKind, CellParams, CellRecord, CellStatus, Environment, GcSummary, ProcessRecord,
    ResourceSummary, RunManifest, SystemSettings, UnitLoad,
};

/// Version of the on-disk JSON formats. Bumped whenever a field changes meaning or goes away;
/// readers refuse records of another version rather than misread them.
pub const SCHEMA_VERSION: u32 = 2;
