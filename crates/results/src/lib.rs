//! The results directory of a gatebench run, in one place: what its files are called, the row
//! types of its CSV files, and how its JSON files are written and read back. The runner writes
//! through it, `gatebench report` and `gatebench compare` read through it, so the format
//! (documented in `docs/results-format.md`) has one owner.
//!
//! It does not decide what goes into the files: the records are `gatebench-model`'s types,
//! the summaries and plots `gatebench-report`'s renderings, the samples the runner's.
//!
//! # Layout
//! - [`paths`]: every file name, and the path of a cell's files.
//! - [`rows`]: one serde type per CSV row (`samples.csv`, `timeline.csv`), the writer and the
//!   lenient reader.
//! - [`dir`]: [`ResultsDir`]: atomic writes, JSON files written and read back, schema checks.
//! - [`error`]: the one error type, [`ResultsError`].

pub mod dir;
pub mod error;
pub mod paths;
pub mod rows;

pub use dir::{read, read_environment, write_atomic, CellFiles, ResultsDir, RunResults};
pub use error::ResultsError;
