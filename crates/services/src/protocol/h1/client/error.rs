//! Why an HTTP/1.1 exchange with an upstream failed, with the side and the [`Failure`] it
//! answers the client with.

use std::io;

use crate::failure::Failure;

/// Why an exchange failed.
#[derive(Debug)]
pub(crate) enum H1Error {
    /// The first write failed: not a byte reached the upstream; the request may go elsewhere
    /// whatever its method. The first body chunk, if one was taken, is in the stash.
    Unsent(io::Error),
    /// The client's side failed (body over the limit, broken or stalled).
    Downstream(Failure, String),
    /// The upstream failed after the request (or part of it) was written.
    Upstream {
        failure: Failure,
        error: String,
        /// No response byte had arrived (the classic stale keep-alive race).
        nothing_received: bool,
    },
}

/// A malformed response: 502, the connection closed.
pub(super) fn protocol(why: &str) -> H1Error {
    H1Error::Upstream {
        failure: Failure::UpstreamProtocol,
        error: why.to_owned(),
        nothing_received: false,
    }
}

/// A response head over the limit: 502.
pub(super) fn head_too_large(max: usize) -> H1Error {
    H1Error::Upstream {
        failure: Failure::ResponseHeadTooLarge,
        error: format!("response head is over {max} bytes"),
        nothing_received: false,
    }
}
