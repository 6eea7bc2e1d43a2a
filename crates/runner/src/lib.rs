//! gatebench's suite runner: from a suite (a file, or the built-in default) to a results
//! directory.
//!
//! A suite names scenarios — a system under test and its backends, built-in services or any
//! program started by a command line — and a matrix of users (or rates), message sizes, back-end
//! delays, protocols and repeats. The runner expands it into cells, and for every cell starts
//! the processes fresh, waits until they are ready, verifies the target answers correctly,
//! runs the load (warm-up, then measurement) while sampling the SUT's CPU, memory, threads and
//! descriptors from `/proc`, stops everything by PID, and writes the cell's record at once.
//!
//! It does not render summaries (see `gatebench-report`; the caller rewrites them after every
//! cell through [`run::Observer`]) nor generate load itself (see `gatebench-loadgen`). From
//! `gatebench-report` it takes only a cost cell's statistics (`cost::report`), so that a suite
//! and `gatebench cost` compute the intermediary's added latency alike.
//!
//! # Layout
//! - [`suite`]: the suite format (`suite::raw`) and its validation into real types.
//! - [`matrix`]: expansion into cells, run order, filters, the time estimate.
//! - [`placeholder`]: `{port}`, `{upstream}`, … in command lines and templates.
//! - [`launch`]: the [`launch::Launcher`] seam, real process groups, stop by PID, the guard.
//! - [`driver`]: the [`driver::Driver`] seam: readiness, verification, the load; protocols.
//! - [`hosts`]: `local` and `ssh://` hosts: preflight, the binary copy, remote processes and
//!   sampling, the clock offset.
//! - [`shards`]: a cell's load split across generator hosts and merged.
//! - [`pin`]: CPU placement of the SUT and the generator.
//! - [`sampler`]: `/proc` sampling and cutting samples to the load's windows.
//! - [`gc`]: the SUT's GC log (JVM unified logging, Go gctrace, Node --trace-gc), cut to the
//!   same windows.
//! - [`cell`]: the lifecycle of one cell (capacity and cost cells in `cell/search.rs`).
//! - [`run`](mod@run): the whole run, setup commands, progress for an observer.
//! - [`settle`]: `--until-stable`: whether a cell's repeats have settled.
//! - [`results`]: the environment and default directory name; the results directory itself
//!   (`gatebench-results`) re-exported.
//! - [`error`]: the one error type, [`RunnerError`].

pub mod cell;
pub mod driver;
pub mod error;
pub mod gc;
pub mod gc_follow;
pub mod hosts;
pub mod launch;
pub mod matrix;
pub mod pin;
pub mod placeholder;
pub mod results;
pub mod run;
pub mod sampler;
pub mod settle;
pub mod shards;
pub mod suite;
pub mod suite_metrics;

pub use error::RunnerError;
pub use matrix::{Cell, Plan};
pub use results::ResultsDir;
pub use run::{prepare, run_suite, Observer, Progress, RunSettings, RunSummary};
pub use suite::{Protocol, Suite};
