//! The runner's one error type: what stops a suite from starting or a results directory from
//! being read. A cell that fails (a process that does not start, a wrong answer) is not an
//! error here: it is recorded as a failed cell and the run goes on.

use std::io;
use std::path::PathBuf;

/// Errors of suite validation, planning and the results directory.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunnerError {
    /// The suite is invalid. `file` names it (`suite.toml`, or `built-in suite`); `message` is
    /// one line naming the key and what is wrong.
    #[error("{file}: {message}")]
    Suite {
        /// The suite file's name.
        file: String,
        /// What is wrong, naming the key.
        message: String,
    },
    /// Include/exclude filters left no cell to run.
    #[error(
        "no cell left to run: the include/exclude filters matched none of the {planned} cells"
    )]
    NothingToRun {
        /// Cells before filtering.
        planned: usize,
    },
    /// A file or directory could not be read or written.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// What was being done (`create`, `write`, `read`).
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A directory given to `report` is not a results directory, or is of another version.
    #[error("{}: {message}", path.display())]
    Results {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A results file was written with another schema version.
    #[error(
        "{file} has schema version {found}, this gatebench reads version {}; \
         use the gatebench that wrote it",
        gatebench_model::SCHEMA_VERSION
    )]
    SchemaVersion {
        /// The file, relative to the results directory.
        file: String,
        /// The version it has.
        found: u64,
    },
    /// A results file has no schema version.
    #[error("{file} has no schema_version")]
    NoSchemaVersion {
        /// The file, relative to the results directory.
        file: String,
    },
    /// A command line has a `}` that closes nothing.
    #[error("unmatched `}}` (write `}}}}` for a literal brace)")]
    UnmatchedClose,
    /// A command line has a `{` that is never closed.
    #[error("unmatched `{{` (write `{{{{` for a literal brace)")]
    UnmatchedOpen,
    /// A command line names a placeholder that does not exist (or has no value there).
    #[error(
        "unknown placeholder {{{name}}} (known: {})",
        crate::placeholder::known_names()
    )]
    UnknownPlaceholder {
        /// The name between the braces.
        name: String,
    },
    /// A cell's protocol and its target URL's scheme disagree.
    #[error(
        "protocol {protocol} needs a{} URL, got {url}",
        if *tls { "n https://" } else { " http://" }
    )]
    ProtocolScheme {
        /// The protocol's name (`h2`, …).
        protocol: &'static str,
        /// Whether the protocol needs TLS (`https://`).
        tls: bool,
        /// The URL given.
        url: String,
    },
}

impl RunnerError {
    /// Shorthand for an invalid suite.
    pub(crate) fn suite(file: &str, message: impl Into<String>) -> Self {
        RunnerError::Suite {
            file: file.to_owned(),
            message: message.into(),
        }
    }

    /// Shorthand for an I/O failure on `path`.
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        RunnerError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
