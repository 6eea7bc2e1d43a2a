//! The HTTP/2 client: one connection carries up to `--streams` concurrent requests (h2 crate).
//!
//! Streams are gated here, not inside h2: a request waits for a free stream below both the
//! configured count and the server's SETTINGS_MAX_CONCURRENT_STREAMS before it is opened. That
//! keeps the count of streams in use exact (h2 would otherwise queue an extra stream
//! internally) and means the server's limit is never exceeded.
//!
//! Stream errors are classified: REFUSED_STREAM, another RST_STREAM, GOAWAY, and connection
//! I/O errors each have their class.

use std::cell::Cell;
use std::time::Duration;

use bytes::Bytes;
use gatebench_model::Outcome;
use h2::client::SendRequest;
use tokio::sync::Notify;

use crate::body::BodyCheck;
use crate::connect::Stream;
use crate::http1::{classify_io, Answer, Failure};
use crate::request::RequestTemplate;

/// Per-stream receive window: large enough that flow control never paces a benchmark.
const STREAM_WINDOW: u32 = 4 * 1024 * 1024;
/// Per-connection receive window.
const CONNECTION_WINDOW: u32 = 32 * 1024 * 1024;

/// One HTTP/2 connection shared by its stream slots.
#[derive(Debug)]
pub(crate) struct H2Conn {
    sender: SendRequest<Bytes>,
    streams: usize,
    in_use: Cell<usize>,
    max_in_use: Cell<usize>,
    freed: Notify,
    dead: Cell<bool>,
}

/// Performs the HTTP/2 handshake (the connection preface and SETTINGS) over `io`; the
/// connection's I/O driver is spawned on the current `LocalSet` and marks the connection dead
/// when it ends.
pub(crate) async fn handshake(
    io: Stream,
    streams: u32,
    timeout: Duration,
) -> Result<std::rc::Rc<H2Conn>, Outcome> {
    let mut builder = h2::client::Builder::new();
    builder
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .enable_push(false);
    let (sender, mut connection) = match tokio::time::timeout(timeout, builder.handshake(io)).await
    {
        Err(_) => return Err(Outcome::Timeout),
        Ok(Err(e)) => return Err(classify(&e)),
        Ok(Ok(pair)) => pair,
    };
    let mut ping = connection
        .ping_pong()
        .expect("ping_pong is taken once, right after the handshake");
    let conn = std::rc::Rc::new(H2Conn {
        sender,
        streams: streams.max(1) as usize,
        in_use: Cell::new(0),
        max_in_use: Cell::new(0),
        freed: Notify::new(),
        dead: Cell::new(false),
    });
    let watch = std::rc::Rc::downgrade(&conn);
    tokio::task::spawn_local(async move {
        let _ = connection.await;
        if let Some(c) = watch.upgrade() {
            c.dead.set(true);
            c.freed.notify_waiters();
        }
    });
    // The server's SETTINGS (its stream limit among them) come before its answer to a PING, so
    // one round trip here means no stream is opened against a limit not yet known.
    match tokio::time::timeout(timeout, ping.ping(h2::Ping::opaque())).await {
        Err(_) => return Err(Outcome::Timeout),
        Ok(Err(e)) => return Err(classify(&e)),
        Ok(Ok(_)) => {}
    }
    Ok(conn)
}

impl H2Conn {
    /// Whether the connection has ended (GOAWAY, error, close).
    pub(crate) fn is_dead(&self) -> bool {
        self.dead.get()
    }

    /// The most streams that were open at once.
    pub(crate) fn max_in_use(&self) -> u64 {
        self.max_in_use.get() as u64
    }

    /// Waits until a stream may be opened. `false` if the connection died meanwhile.
    pub(crate) async fn acquire(&self) -> bool {
        loop {
            if self.dead.get() {
                return false;
            }
            let limit = self
                .streams
                .min(self.sender.current_max_send_streams().max(1));
            if self.in_use.get() < limit {
                let n = self.in_use.get() + 1;
                self.in_use.set(n);
                if n > self.max_in_use.get() {
                    self.max_in_use.set(n);
                }
                return true;
            }
            self.freed.notified().await;
        }
    }

    /// Gives back a stream taken by [`H2Conn::acquire`].
    pub(crate) fn release(&self) {
        self.in_use.set(self.in_use.get() - 1);
        self.freed.notify_one();
    }

    /// Sends one request on a stream already acquired and reads its response.
    /// A handle for sending on this connection; each stream slot keeps its own, so nothing is
    /// cloned per request.
    pub(crate) fn sender(&self) -> SendRequest<Bytes> {
        self.sender.clone()
    }

    /// Sends one request through `sender` (from [`H2Conn::sender`]) on a stream already
    /// acquired, and reads its response.
    pub(crate) async fn exchange(
        &self,
        sender: &mut SendRequest<Bytes>,
        req: &RequestTemplate,
        verify: bool,
    ) -> Result<Answer, Failure> {
        let fail = |outcome, bytes_read| Failure {
            outcome,
            bytes_read,
        };
        if let Err(e) = std::future::poll_fn(|cx| sender.poll_ready(cx)).await {
            return Err(fail(classify(&e), 0));
        }
        let body = req.body();
        let (response, mut send) = match sender.send_request(req.h2_request(), body.is_empty()) {
            Ok(pair) => pair,
            Err(e) => return Err(fail(classify(&e), 0)),
        };
        if !body.is_empty() {
            if let Err(e) = send.send_data(body.clone(), true) {
                return Err(fail(classify(&e), 0));
            }
        }
        let response = match response.await {
            Ok(r) => r,
            Err(e) => return Err(fail(classify(&e), 0)),
        };
        let mut outcome = Outcome::from_status(response.status().as_u16());
        let expected = (verify && outcome == Outcome::Ok && !req.head_only()).then(|| req.body());
        let mut check = BodyCheck::new(expected.map(|b| &b[..]).filter(|b| !b.is_empty()));
        let mut read = 0u64;
        let mut recv = response.into_body();
        while let Some(chunk) = recv.data().await {
            let chunk = chunk.map_err(|e| fail(classify(&e), read))?;
            read += chunk.len() as u64;
            check.feed(&chunk);
            let _ = recv.flow_control().release_capacity(chunk.len());
        }
        if !check.matches() {
            outcome = Outcome::BodyMismatch;
        }
        Ok(Answer {
            outcome,
            bytes_read: read,
            reusable: true,
        })
    }
}

/// Maps an h2 error to its class.
pub(crate) fn classify(e: &h2::Error) -> Outcome {
    if e.is_go_away() {
        Outcome::GoAway
    } else if e.reason() == Some(h2::Reason::REFUSED_STREAM) {
        Outcome::RefusedStream
    } else if e.is_reset() {
        Outcome::StreamReset
    } else if let Some(io) = e.get_io() {
        classify_io(io)
    } else {
        Outcome::ProtocolError
    }
}
