//! The history crate's one error type: a store that cannot be opened or written, a database
//! of a newer schema, a results directory that cannot be stored, a version stored twice, two
//! different suites under one name.
//!
//! Every message is one line naming the problem; the database's own error sits in
//! `source()`, so the binary prints both with `{:#}`.

use std::path::PathBuf;

/// Errors of the release history.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The SQLite database could not be opened, read or written.
    #[error("history database {}: cannot {action}", path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What was being done (`open`, `migrate`, `add a run`, …).
        action: &'static str,
        /// The cause.
        #[source]
        source: rusqlite::Error,
    },
    /// The PostgreSQL database could not be reached, read or written.
    #[error("history database {url}: cannot {action}")]
    Postgres {
        /// The URL, password left out.
        url: String,
        /// What was being done.
        action: &'static str,
        /// The cause.
        #[source]
        source: postgres::Error,
    },
    /// A file or directory could not be read or created.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// `--history` or `GATEBENCH_HISTORY` is neither a path nor a `postgres://` URL, or no
    /// default location can be found.
    #[error("history location `{location}`: {problem}")]
    Location {
        /// The location as given.
        location: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The database was written by a newer gatebench.
    #[error(
        "history database {location} has schema version {found}, this gatebench knows up to \
         {known}; use a newer gatebench"
    )]
    NewerSchema {
        /// The database.
        location: String,
        /// Its schema version.
        found: i64,
        /// The newest this build knows.
        known: i64,
    },
    /// The database is not a gatebench history (or is damaged).
    #[error("history database {location}: {problem}")]
    Corrupt {
        /// The database.
        location: String,
        /// What is wrong.
        problem: String,
    },
    /// The results directory could not be read (not one, or of another schema version).
    #[error(transparent)]
    Results(#[from] gatebench_results::ResultsError),
    /// The results directory is not complete, or lacks a file the history needs.
    #[error("{}: {problem}", path.display())]
    Unstorable {
        /// The results directory.
        path: PathBuf,
        /// Why it cannot be stored.
        problem: String,
    },
    /// The version is already stored for this suite.
    #[error(
        "version {version} of suite \"{suite}\" is already in the history; pass --replace to \
         replace it"
    )]
    VersionExists {
        /// The suite.
        suite: String,
        /// The version.
        version: String,
    },
    /// A run of another suite (another fingerprint) under a stored suite's name.
    #[error(
        "suite \"{suite}\" in the history has fingerprint {}, this run's is {}: its \
         scenarios, matrix or load settings differ, so it is another suite; give it another \
         name",
        short(stored),
        short(found)
    )]
    SuiteMismatch {
        /// The suite's name.
        suite: String,
        /// The stored fingerprint.
        stored: String,
        /// This run's fingerprint.
        found: String,
    },
    /// No suite of that name is stored.
    #[error("no suite \"{suite}\" in the history (`gatebench history list` shows the suites)")]
    UnknownSuite {
        /// The name asked for.
        suite: String,
    },
    /// A value given by the user is not valid.
    #[error("{what}: {problem}")]
    Invalid {
        /// The value (`--version`, `--date`, …).
        what: String,
        /// What is wrong with it.
        problem: String,
    },
}

/// The first 12 hex digits of a fingerprint, for messages.
fn short(fingerprint: &str) -> &str {
    fingerprint.get(..12).unwrap_or(fingerprint)
}
