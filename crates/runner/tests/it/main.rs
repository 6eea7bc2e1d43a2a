//! Integration tests of gatebench-runner: one binary, one module per topic (ripgrep's
//! `tests/tests.rs` layout).
//!
//! - `suite`: validation of suite files and the committed examples.
//! - `matrix`: expansion, run order, filters, estimates.
//! - `lifecycle`: cells and runs with a fake launcher and a fake network driver.
//! - `results`: reading results directories back.
//! - `support`: the fakes and fixtures.

mod lifecycle;
mod matrix;
mod results;
mod suite;
mod support;
