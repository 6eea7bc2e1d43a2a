//! What one request-response exchange ends in, whatever the protocol: a complete answer or a
//! failure, each with its outcome class and the bytes read. Shared by the HTTP/1.1 and HTTP/2
//! clients and by the worker that settles each exchange; it knows nothing of either protocol.

use std::io;

use gatebench_model::Outcome;

/// How a completed exchange ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Answer {
    /// The class: `Ok`, a status class, or `BodyMismatch`.
    pub outcome: Outcome,
    /// Response bytes read (head and body).
    pub bytes_read: u64,
    /// Whether the connection can carry the next request.
    pub reusable: bool,
    /// With `--mark-header`: the number of the marked header's value in the worker's table.
    pub mark: Option<u8>,
}

/// An exchange that failed before a complete response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Failure {
    /// The class: `Reset`, `Incomplete`, `IoError` or `ProtocolError`.
    pub outcome: Outcome,
    /// Response bytes read before the failure.
    pub bytes_read: u64,
}

/// Maps an I/O error on an established connection to its class.
pub(crate) fn classify_io(e: &io::Error) -> Outcome {
    match e.kind() {
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::ConnectionAborted => Outcome::Reset,
        io::ErrorKind::UnexpectedEof => Outcome::Incomplete,
        _ => Outcome::IoError,
    }
}
