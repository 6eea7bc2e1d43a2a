//! The history crate's integration tests: the store against SQLite files and a real
//! PostgreSQL server, on results directories the tests write.
//!
//! # Layout
//! - `fixture`: results directories with chosen figures, temporary directories.
//! - `cases`: the store's behaviour, written once for both databases.
//! - `sqlite`: the cases on SQLite files, plus several processes at once, a process killed in
//!   the middle of adding, a newer schema and a file that is not a history.
//! - `postgres`: the cases on a PostgreSQL started from Debian's binaries for the test.

mod cases;
mod fixture;
mod postgres;
mod sqlite;
