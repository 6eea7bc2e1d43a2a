//! What can go wrong on the request path of the intermediaries, and how it is reported: the
//! [`Failure`] kinds with their side, status and RFC 9209 error type, the [`BodyError`]s of
//! streamed bodies, and the rate-limited failure log.
//!
//! Everything that forwards (the forwarding loop, the HTTP/1.1 upstream client, the bodies, the
//! transform's conversion) reports through this module, which depends on no other module of the
//! crate: it is the bottom of the request path, not a part of the proxy.

use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use http::StatusCode;
use tracing::{debug, warn};

/// Which side a failure is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Upstream,
    Downstream,
    Internal,
}

impl Side {
    fn as_str(self) -> &'static str {
        match self {
            Side::Upstream => "upstream",
            Side::Downstream => "downstream",
            Side::Internal => "internal",
        }
    }
}

/// Every way a forwarded request can fail; a small `Copy` enum, nothing allocated per failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    ConnectRefused,
    ConnectTimeout,
    ConnectFailed,
    TlsFailed,
    ResponseTimeout,
    UpstreamClosed,
    UpstreamProtocol,
    ResponseHeadTooLarge,
    UpstreamBodyBroken,
    NoUpstream,
    LoopDetected,
    RequestTooLarge,
    RequestBodyInvalid,
    RequestBodyTimeout,
    UnsupportedMediaType,
    InvalidJson,
}

impl Failure {
    /// Every failure, in declaration order (the index of [`Failure::index`]).
    pub(crate) const ALL: [Failure; 16] = [
        Failure::ConnectRefused,
        Failure::ConnectTimeout,
        Failure::ConnectFailed,
        Failure::TlsFailed,
        Failure::ResponseTimeout,
        Failure::UpstreamClosed,
        Failure::UpstreamProtocol,
        Failure::ResponseHeadTooLarge,
        Failure::UpstreamBodyBroken,
        Failure::NoUpstream,
        Failure::LoopDetected,
        Failure::RequestTooLarge,
        Failure::RequestBodyInvalid,
        Failure::RequestBodyTimeout,
        Failure::UnsupportedMediaType,
        Failure::InvalidJson,
    ];

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The status the client gets.
    pub(crate) fn status(self) -> StatusCode {
        match self {
            Failure::ConnectTimeout | Failure::ResponseTimeout => StatusCode::GATEWAY_TIMEOUT,
            Failure::NoUpstream => StatusCode::SERVICE_UNAVAILABLE,
            Failure::LoopDetected => StatusCode::LOOP_DETECTED,
            Failure::RequestTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Failure::RequestBodyInvalid | Failure::InvalidJson => StatusCode::BAD_REQUEST,
            Failure::RequestBodyTimeout => StatusCode::REQUEST_TIMEOUT,
            Failure::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            _ => StatusCode::BAD_GATEWAY,
        }
    }

    pub(crate) fn side(self) -> Side {
        match self {
            Failure::RequestTooLarge
            | Failure::RequestBodyInvalid
            | Failure::RequestBodyTimeout
            | Failure::UnsupportedMediaType
            | Failure::InvalidJson => Side::Downstream,
            Failure::LoopDetected => Side::Internal,
            _ => Side::Upstream,
        }
    }

    /// The RFC 9209 §2.3 error type.
    pub(crate) fn proxy_error(self) -> &'static str {
        match self {
            Failure::ConnectRefused => "connection_refused",
            Failure::ConnectTimeout => "connection_timeout",
            Failure::ConnectFailed | Failure::UpstreamClosed => "connection_terminated",
            Failure::TlsFailed => "tls_protocol_error",
            Failure::ResponseTimeout => "http_response_timeout",
            Failure::UpstreamProtocol => "http_protocol_error",
            Failure::ResponseHeadTooLarge => "http_response_header_section_size",
            Failure::UpstreamBodyBroken => "http_response_incomplete",
            Failure::NoUpstream => "destination_unavailable",
            Failure::LoopDetected => "proxy_loop_detected",
            Failure::RequestTooLarge
            | Failure::RequestBodyInvalid
            | Failure::RequestBodyTimeout
            | Failure::UnsupportedMediaType
            | Failure::InvalidJson => "http_request_error",
        }
    }

    /// What the log and the error body say.
    pub(crate) fn message(self) -> &'static str {
        match self {
            Failure::ConnectRefused => "upstream refused the connection",
            Failure::ConnectTimeout => "upstream connect timed out",
            Failure::ConnectFailed => "upstream connect failed",
            Failure::TlsFailed => "upstream TLS handshake failed",
            Failure::ResponseTimeout => "upstream sent no response in time",
            Failure::UpstreamClosed => "upstream closed or reset the connection before a response",
            Failure::UpstreamProtocol => "upstream sent a malformed response",
            Failure::ResponseHeadTooLarge => "upstream response head is over the limit",
            Failure::UpstreamBodyBroken => {
                "upstream response body broke off: client sees a truncated response"
            }
            Failure::NoUpstream => "no upstream is available",
            Failure::LoopDetected => "request loops back to this proxy (Via)",
            Failure::RequestTooLarge => "request body is over the limit",
            Failure::RequestBodyInvalid => "request body could not be read",
            Failure::RequestBodyTimeout => "request body stalled",
            Failure::UnsupportedMediaType => "request body is not JSON",
            Failure::InvalidJson => "request body is not valid JSON",
        }
    }
}

/// Logs at most [`LogGate::PER_SECOND`] failures a second at `warn`; the rest at `debug`, with
/// the count of those held back reported on the next `warn`. A dead upstream under load must
/// not turn the proxy into a log writer.
struct LogGate {
    second: AtomicU64,
    count: AtomicU32,
    held_back: AtomicU64,
}

impl LogGate {
    const PER_SECOND: u32 = 10;

    /// `Some(held back since the last warn)` when this one may be a warn.
    fn admit(&self) -> Option<u64> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if self.second.swap(now, Ordering::Relaxed) != now {
            self.count.store(0, Ordering::Relaxed);
        }
        if self.count.fetch_add(1, Ordering::Relaxed) < Self::PER_SECOND {
            Some(self.held_back.swap(0, Ordering::Relaxed))
        } else {
            self.held_back.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

static LOG_GATE: LogGate = LogGate {
    second: AtomicU64::new(0),
    count: AtomicU32::new(0),
    held_back: AtomicU64::new(0),
};

/// Logs a failure with its side and, for upstream failures, which upstream.
pub(crate) fn log_failure(failure: Failure, upstream: Option<&str>, error: &dyn fmt::Display) {
    let side = failure.side().as_str();
    let upstream = upstream.unwrap_or("-");
    match LOG_GATE.admit() {
        Some(held_back) => warn!(
            side,
            upstream,
            status = failure.status().as_u16(),
            %error,
            similar_held_back = held_back,
            "{}",
            failure.message()
        ),
        None => debug!(side, upstream, %error, "{}", failure.message()),
    }
}

/// Why a body stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    /// The client's body went past the configured limit (413).
    #[error("request body is larger than the limit of {0} bytes")]
    TooLarge(u64),
    /// The client's HTTP/1.x body could not be read (`h1::server`): broken framing
    /// (`InvalidData`), a stall (`TimedOut`), or the client left.
    #[error("reading the request body failed")]
    DownstreamH1(#[source] std::io::Error),
    /// The client's HTTP/2 stream broke (a reset, or a body that contradicts its
    /// Content-Length, which h2 checks: RFC 9113 §8.1.1).
    #[error("reading the request body failed")]
    DownstreamH2(#[source] h2::Error),
    /// The client's HTTP/2 stream sent no DATA for the body timeout (408).
    #[error("request body stalled for {0:?}")]
    DownstreamStalled(Duration),
    /// The HTTP/2 upstream's body could not be read: a reset, a truncation or a protocol
    /// error.
    #[error("reading the upstream response body failed")]
    Upstream(#[source] h2::Error),
    /// The upstream sent nothing for the read timeout in the middle of a body.
    #[error("upstream response body stalled for {0:?}")]
    UpstreamStalled(Duration),
    /// The upstream's body broke its framing (or ended early).
    #[error("upstream response body: {0}")]
    UpstreamFraming(&'static str),
    /// Reading the upstream's body failed (a reset).
    #[error("reading the upstream response body failed")]
    UpstreamIo(#[source] std::io::Error),
}

impl BodyError {
    /// The failure a client's body error is for the forwarded request: over the limit (413),
    /// stalled (408) or broken (400).
    pub(crate) fn downstream_failure(&self) -> Failure {
        match self {
            BodyError::TooLarge(_) => Failure::RequestTooLarge,
            BodyError::DownstreamStalled(_) => Failure::RequestBodyTimeout,
            BodyError::DownstreamH1(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                Failure::RequestBodyTimeout
            }
            _ => Failure::RequestBodyInvalid,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_table_is_in_declaration_order() {
        for (i, f) in Failure::ALL.iter().enumerate() {
            assert_eq!(f.index(), i, "{f:?}");
        }
    }

    #[test]
    fn statuses_follow_behaviour_md() {
        assert_eq!(Failure::ConnectRefused.status(), 502);
        assert_eq!(Failure::UpstreamClosed.status(), 502);
        assert_eq!(Failure::UpstreamProtocol.status(), 502);
        assert_eq!(Failure::ConnectTimeout.status(), 504);
        assert_eq!(Failure::ResponseTimeout.status(), 504);
        assert_eq!(Failure::NoUpstream.status(), 503);
        assert_eq!(Failure::RequestTooLarge.side(), Side::Downstream);
    }
}
