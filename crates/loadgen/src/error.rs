//! The load generator's error type: what can go wrong before or around a run (bad configuration,
//! resource limits, a target that fails its probe). Failures of individual requests are not
//! errors here; they are counted as [`gatebench_model::Outcome`]s.

use std::io;

/// Errors of the load generator's setup and orchestration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadgenError {
    /// The configuration is invalid; the message names the option and what is wrong.
    #[error("{0}")]
    Config(String),
    /// The open-files limit is too low for the asked concurrency.
    #[error(
        "{connections} connections need about {needed} open files, but the limit is {soft} \
         (hard limit {hard}); raise it with `ulimit -n {needed}` or lower -c"
    )]
    FdLimit {
        /// Connections asked for.
        connections: u64,
        /// File descriptors needed.
        needed: u64,
        /// Current soft limit.
        soft: u64,
        /// Current hard limit.
        hard: u64,
    },
    /// The correctness probe sent before the load did not get the right answer.
    #[error("probe of {url} failed: {reason}")]
    Probe {
        /// The target.
        url: String,
        /// What was wrong, for a person.
        reason: String,
    },
    /// Resolving the target's host name failed.
    #[error("cannot resolve {host}")]
    Resolve {
        /// The host name.
        host: String,
        /// The resolver's error.
        #[source]
        source: io::Error,
    },
    /// Writing an output (the interval log) failed.
    #[error("cannot write {what}")]
    Output {
        /// What was being written.
        what: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A worker thread could not be started or panicked.
    #[error("worker thread failed: {0}")]
    Worker(String),
}

impl LoadgenError {
    /// Shorthand for a configuration error.
    pub(crate) fn config(msg: impl Into<String>) -> Self {
        LoadgenError::Config(msg.into())
    }
}
