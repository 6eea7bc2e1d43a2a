//! The error type of the services crate.
//!
//! Only start-up and configuration failures are errors here: once a service is serving, a bad
//! request or a broken connection is answered (400, 413, a close) and logged, never returned,
//! because one misbehaving client must not stop a backend in the middle of a benchmark.

use std::io;
use std::path::PathBuf;

impl ServicesError {
    /// An [`ServicesError::InvalidValue`] for `field`.
    pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        ServicesError::InvalidValue {
            field,
            reason: reason.into(),
        }
    }
}

/// Why a service could not start (or could not be run to completion).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServicesError {
    /// A configuration value is out of range or inconsistent.
    #[error("invalid configuration: {reason}")]
    InvalidConfig {
        /// What is wrong, in words meant for the user.
        reason: String,
    },
    /// One configuration value is out of range: `field` names it as the configuration type
    /// does (`max_head`, `health.interval`), so that a front end can name its own option.
    #[error("invalid configuration: {field} {reason}")]
    InvalidValue {
        /// The field, as a path into the configuration type (`timeouts.client_header`).
        field: &'static str,
        /// What is wrong with it, worded to follow the field's name ("must be at least 1").
        reason: String,
    },
    /// The listener handed in could not be prepared for async use.
    #[error("failed to prepare the listening socket")]
    Listener {
        /// The underlying I/O error.
        #[source]
        source: io::Error,
    },
    /// A tokio runtime (or a worker thread for one) could not be created.
    #[error("failed to start the runtime")]
    Runtime {
        /// The underlying I/O error.
        #[source]
        source: io::Error,
    },
    /// A worker thread panicked while serving.
    #[error("a worker thread panicked")]
    WorkerPanicked,
    /// A PEM file (certificate or key) could not be read or parsed.
    #[error("failed to read PEM file {path}")]
    Pem {
        /// The file that was read.
        path: PathBuf,
        /// The parse or I/O error.
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// A PEM file held no certificate.
    #[error("no certificate found in {path}")]
    NoCertificate {
        /// The file that was read.
        path: PathBuf,
    },
    /// rustls refused the configuration (for example a key that does not match the certificate).
    #[error("invalid TLS configuration")]
    Tls {
        /// The rustls error.
        #[source]
        source: rustls::Error,
    },
    /// A self-signed certificate could not be generated.
    #[error("failed to generate a self-signed certificate")]
    CertGen {
        /// The rcgen error.
        #[source]
        source: rcgen::Error,
    },
}
