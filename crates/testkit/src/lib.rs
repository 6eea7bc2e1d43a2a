//! Test support for gatebench: scripted HTTP/1.1 servers that misbehave on purpose, so the load
//! generator's integration tests can produce each outcome class of docs/behaviour.md ("Load
//! generator") against a real socket, and check that the classes add up.
//!
//! A [`TestServer`] binds `127.0.0.1:0`, plays one [`Behavior`] on every connection, runs on its
//! own thread with its own tokio runtime, and stops when dropped. [`refused`] holds a port
//! where nothing listens.
//!
//! | Behavior | What a client sees | Outcome class |
//! |---|---|---|
//! | [`Respond`](Behavior::Respond), [`Echo`](Behavior::Echo), [`Chunked`](Behavior::Chunked) | correct keep-alive responses | by status |
//! | [`WrongBody`](Behavior::WrongBody) | 200 with a body of the right length but wrong bytes | body mismatch |
//! | [`ResetAfterRequest`](Behavior::ResetAfterRequest) | RST after the request | reset |
//! | [`CloseMidBody`](Behavior::CloseMidBody), [`CloseOnAccept`](Behavior::CloseOnAccept) | FIN before the response is complete | incomplete |
//! | [`Garbage`](Behavior::Garbage) | bytes that are not HTTP | protocol error |
//! | [`Hang`](Behavior::Hang), [`Silent`](Behavior::Silent) | nothing, connection open | timeout |
//! | [`StallWindow`](Behavior::StallWindow) | every response held for a while | ok, slow |
//! | [`CloseAfterEach`](Behavior::CloseAfterEach) | one response per connection | ok, reconnects |
//! | [`refused`] | ECONNREFUSED | connect refused |
//!
//! Deliberately out of scope: TLS (no TLS failure class here), HTTP/2 beyond the scripted
//! stream faults of [`h2`], connect timeouts (loopback connects do not time out), and real HTTP
//! parsing — requests are framed by hand
//! (`\r\n\r\n` and `Content-Length`), without any HTTP library, so this crate costs little to
//! compile and cannot share a bug with the parser under test.
//!
//! # Layout
//!
//! - `server`: [`TestServer`] — listener, thread, runtime, counters and the log of requests
//!   read (method, target, instant), stop on drop.
//! - `script`: what each [`Behavior`] does with one connection.
//! - `request`: the minimal request framing (head, `Content-Length`, body).
//! - [`h2`]: scripted HTTP/2 servers (refused and reset streams, GOAWAY, a stream limit).
//! - [`records`]: complete result records for renderer and comparison tests.
//! - `post_sink`: [`PostSink`], an endpoint that keeps the POSTs it receives (remote write).

pub mod h2;
mod post_sink;
pub mod records;
mod request;
mod script;
mod server;

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

pub use crate::post_sink::{Post, PostSink};
pub use crate::server::TestServer;

/// A request head a [`TestServer`] read: what its request line said, and when it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenRequest {
    /// The method.
    pub method: String,
    /// The request target (path and query), as sent.
    pub target: String,
    /// When the head was read.
    pub at: std::time::Instant,
}

/// What a [`TestServer`] does on every connection it accepts.
///
/// Requests are read as a head up to `\r\n\r\n` plus a body of its `Content-Length` (case
/// insensitive; none means no body). Chunked request bodies are not supported.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Behavior {
    /// Correct keep-alive server: reads each request (head + `Content-Length` body), answers
    /// `status` with `body` and `Content-Length`, keeps the connection open.
    ///
    /// `status` is written as given: one outside 100..=999 makes an invalid status line, and a
    /// 1xx, 204 or 304 with a `Content-Length` is not a valid final response either; pick a
    /// status that allows a body unless that is the point of the test.
    Respond {
        /// The status code of every response.
        status: u16,
        /// The body of every response.
        body: Vec<u8>,
    },
    /// Echo: answers 200 with the request body echoed, or `hello` for a request without body.
    Echo,
    /// Like [`Behavior::Echo`], but the body answered has the same length as the echo and
    /// differs from it in every byte (`x` everywhere, `y` where the echo has an `x`), for
    /// body-mismatch verification.
    WrongBody,
    /// Reads a request head, then resets the connection (SO_LINGER 0, then close: a RST).
    ResetAfterRequest,
    /// Reads a request, sends a head with `Content-Length: 100` and only 10 body bytes, then
    /// closes with a FIN.
    CloseMidBody,
    /// Reads a request, sends bytes that are not HTTP (`garbage\r\n\r\n`), and keeps the socket
    /// open until the client closes it.
    Garbage,
    /// Reads requests and never answers; connections stay open until the client closes them
    /// or the server is dropped.
    Hang,
    /// Accepts the TCP connection and closes it at once with a FIN, without reading a request.
    ///
    /// Whatever the client sends afterwards is discarded unread, so the close stays a FIN (an
    /// empty response: incomplete) rather than becoming a RST when a request was already in the
    /// socket's receive buffer.
    CloseOnAccept,
    /// Correct keep-alive server answering 200 `ok` at once, except that between `from` and
    /// `from + length` after the server started it holds every response: requests received in
    /// that window, and those already being answered, are answered at the end of the window.
    ///
    /// Used to check coordinated-omission correction (wrk2): a stalled target must show in the
    /// corrected latency tail, not only in the few requests that were in flight.
    StallWindow {
        /// When the stall begins, counted from [`TestServer::start`].
        from: Duration,
        /// How long the stall lasts.
        length: Duration,
    },
    /// Answers 200 with a chunked body of `chunks` chunks of `chunk_size` `x` bytes each,
    /// correctly terminated; keep-alive. With `chunk_size` 0 the body is empty (a zero-size
    /// chunk would be the terminator).
    Chunked {
        /// Number of data chunks.
        chunks: usize,
        /// Bytes per data chunk.
        chunk_size: usize,
    },
    /// Reads one request, answers 200 `ok` with `Connection: close`, and closes (FIN): every
    /// request needs a new connection (tests reconnects).
    CloseAfterEach,
    /// Accepts but never reads and never answers (for timeouts with the request unread).
    Silent,
    /// Answers each request with raw bytes written in pieces, each after its pause (the
    /// pieces include the response head): streams of events on a schedule. With `hang`, after
    /// the last piece the connection stays open and silent (a stalled stream); otherwise the
    /// next request is read.
    Paced {
        /// `(pause before it, bytes)`, written and flushed one by one.
        pieces: Vec<(Duration, Vec<u8>)>,
        /// Go silent after the last piece instead of reading the next request.
        hang: bool,
    },
    /// Answers the first request with `head`, then writes `piece` every `every`, for ever
    /// (until the client goes away): a stream that never ends, or a line that never does.
    Endless {
        /// The response head (and any first bytes of the body).
        head: Vec<u8>,
        /// Written again and again.
        piece: Vec<u8>,
        /// The pause between pieces.
        every: Duration,
    },
}

/// A port on 127.0.0.1 that refuses connections (ECONNREFUSED) for as long as this lives: a
/// TCP socket bound to it that never listens. Holding the port, it keeps any other socket from
/// taking it meanwhile (a listener bound and dropped would free it for the next test's
/// server, which would then answer).
#[derive(Debug)]
pub struct Refused {
    _socket: socket2::Socket,
    addr: SocketAddr,
}

impl Refused {
    /// The address that refuses.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

/// A [`Refused`] port of its own.
///
/// # Panics
///
/// If a TCP socket cannot be made or bound to 127.0.0.1:0.
pub fn refused() -> Refused {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        .expect("refused: a TCP socket");
    socket
        .bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into())
        .expect("refused: binding 127.0.0.1:0");
    let addr = socket
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .expect("a bound socket has an address");
    Refused {
        _socket: socket,
        addr,
    }
}

#[cfg(test)]
mod tests {
    use std::io::ErrorKind;
    use std::net::{TcpListener, TcpStream};

    use super::*;

    #[test]
    fn a_refused_port_refuses_connections_and_no_listener_takes_it() {
        let refused = refused();
        let addr = refused.addr();
        assert!(addr.ip().is_loopback());
        let err = TcpStream::connect(addr).expect_err("nothing listens there");
        assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
        assert!(TcpListener::bind(addr).is_err(), "the port is held");
    }
}
