//! gatebench's renderers: pure functions from records to text. They do no I/O of their own;
//! callers write what they return.
//!
//! # Layout
//! - [`load_text`]: the human report of one `gatebench load` run.
//! - [`summary`]: the summary of a suite run (seed-004 columns) as Markdown, CSV and JSON.
//! - [`fmt`]: number formatting shared by the renderers.

pub mod fmt;
pub mod load_text;
pub mod summary;
