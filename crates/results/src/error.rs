//! The results directory's one error type: a file that cannot be written or read, a directory
//! that is not a results directory, a file of another schema version.

use std::io;
use std::path::PathBuf;

/// Errors of writing or reading a results directory.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResultsError {
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
    /// A directory is not a results directory (or may not be written to), or one of its
    /// files does not read.
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
}

impl ResultsError {
    /// Shorthand for an I/O failure on `path`.
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        ResultsError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
