//! The series of gatebench runs across releases: every run of a suite kept with its version,
//! each release judged against the whole series, the versions where a metric moved found, and
//! the trends published as a static site (docs/history.md).
//!
//! It reads results directories through `gatebench-results` and judges with
//! `gatebench-report`'s statistics; it does not run anything.
//!
//! # Layout
//! - [`series`]: the values the analyses work on: one cell's metric, version by version, each
//!   version with every repeat's value.
//! - [`store`]: where the runs are kept (SQLite by default, PostgreSQL by URL): the schema and
//!   its migrations, adding runs, and the reads the analyses use ([`Store::series`],
//!   [`Store::runs`], [`Store::histograms`]).
//! - [`export`]: the stored figures as tidy CSV or JSON.
//! - [`changepoint`]: the versions where a series moved (E-divisive means with a permutation
//!   test), each with its shift, interval and p-value.
//! - [`gate`]: release gates (absolute, relative to a pinned baseline, stability), their
//!   verdict, exit codes and JUnit XML.
//! - [`site`]: the static trend site (index, a page per scenario with charts against version,
//!   a page per release with seed 004's summary table).
//! - [`synthetic`]: results directories with chosen figures and realistic noise, for tests,
//!   the scale benchmark and demonstrations.
//! - [`error`]: the one error type, [`HistoryError`].

pub mod changepoint;
pub mod error;
pub mod export;
pub mod gate;
pub mod series;
pub mod site;
pub mod store;
pub mod synthetic;

pub use error::HistoryError;
pub use store::{Location, Release, RunInput, Store};
