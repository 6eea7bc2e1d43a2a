//! gatebench's renderers: pure functions from records to text. They do no I/O of their own;
//! callers write what they return.
//!
//! # Layout
//! - [`load_text`]: the human report of one `gatebench load` run.
//! - [`stream_text`]: its stream section (`--stream`): first token, inter-token gaps, rates.
//! - [`capacity`]: the capacity search's table and latency-against-rate chart.
//! - [`summary`]: the summary of a suite run (seed-004 columns) as Markdown, CSV and JSON.
//! - [`fmt`]: number formatting shared by the renderers.
//! - [`table`]: what the results tables share (the row type, protocol order, cell names).
//! - [`stats`]: Mann-Whitney U, Hodges-Lehmann shifts, medians, geometric means.
//! - [`cost`]: the intermediary's own cost (added latency per percentile, CPU per request).
//! - [`searches`]: a suite's capacity and cost cells as tables (summary, CSV, JSON, HTML).
//! - [`compare`]: runs against a baseline, per cell and metric; its submodules render the
//!   comparison as Markdown, JSON and JUnit XML (a CI gate's report).
//! - [`cellfiles`]: a cell's side files (`samples.csv`, `timeline.csv`, `latency.hlog`) read
//!   into series for plots.
//! - [`svg`]: hand-written SVG charts: lines over linear or logarithmic axes.
//! - [`html`]: the self-contained `report.html` and its plots as SVG files.
//! - [`export`]: the one exporter of a results directory: every derived file (summaries,
//!   tables, `report.html`, plots), for a run cell by cell and for `gatebench report`.

pub mod capacity;
pub mod cellfiles;
pub mod compare;
pub mod cost;
pub mod events;
pub mod export;
pub mod fmt;
pub mod grpc_table;
pub mod grpc_text;
pub mod html;
pub mod load_text;
pub mod searches;
pub mod stats;
pub mod stream_text;
pub mod streams;
pub mod summary;
pub mod svg;
pub mod table;
pub mod websocket_table;
pub mod ws_text;
