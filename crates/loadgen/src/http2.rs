//! gatebench's HTTP/2 client: one connection carries up to `--streams` concurrent requests.
//!
//! It is written for the load generator's hot path, as the HTTP/1.1 client is: the request's
//! header block is HPACK-encoded once per run (`hpack`), a request is a copy of those bytes
//! into the connection's write buffer, and a response is decoded only as far as it is counted
//! (`:status`, `content-length`, the body's length or its bytes under `--verify`). Each
//! connection has one driver task (`driver`) that writes everything queued in one write and
//! reads whole frames; the protocol itself (`conn`) is a state machine without I/O.
//!
//! Streams are gated here: a request waits for a free stream below both the configured count
//! and the server's SETTINGS_MAX_CONCURRENT_STREAMS before it is opened, so the count of
//! streams in use is exact and the server's limit is never exceeded. A PING round trip before
//! the first stream means the server's SETTINGS are known by then.
//!
//! Stream errors are classified: REFUSED_STREAM, another RST_STREAM, GOAWAY, a malformed
//! response and connection I/O errors each have their class.
//!
//! # Layout
//! - `frame`: frame header, types, flags, writers.
//! - `conn`: the protocol state of one connection.
//!
//! Header compression (`crate::hpack`, `crate::huffman`) lives beside this module: the request
//! template encodes its head with it, without depending on the HTTP/2 connection.
//! - `driver`: the I/O task.

mod conn;
mod driver;
mod frame;
#[cfg(feature = "fuzzing")]
pub(crate) mod fuzz;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use gatebench_model::Outcome;
use tokio::sync::Notify;

use crate::connect::Stream;
use crate::exchange::{Answer, Failure};
use crate::request::RequestTemplate;

/// What the driver and the handle share.
#[derive(Debug)]
struct Shared {
    state: RefCell<conn::State>,
    /// Signalled when a stream is given back, the limit changes or the connection ends.
    freed: Notify,
}

/// One HTTP/2 connection shared by its stream slots. Dropping it ends the connection.
#[derive(Debug)]
pub(crate) struct H2Conn {
    shared: Rc<Shared>,
    streams: usize,
    in_use: Cell<usize>,
    max_in_use: Cell<usize>,
}

impl Drop for H2Conn {
    fn drop(&mut self) {
        let mut st = self.shared.state.borrow_mut();
        st.closing = true;
        st.nudge();
    }
}

/// Performs the HTTP/2 handshake over `io` — the preface, both SETTINGS, and a PING round
/// trip — with the connection's driver spawned on the current `LocalSet`.
pub(crate) async fn handshake(
    io: Stream,
    streams: u32,
    timeout: Duration,
) -> Result<Rc<H2Conn>, Outcome> {
    let shared = Rc::new(Shared {
        state: RefCell::new(conn::State::new()),
        freed: Notify::new(),
    });
    tokio::task::spawn_local(driver::Driver::new(shared.clone(), io));
    let conn = H2Conn {
        shared,
        streams: streams.max(1) as usize,
        in_use: Cell::new(0),
        max_in_use: Cell::new(0),
    };
    let ready = std::future::poll_fn(|cx| conn.shared.state.borrow_mut().poll_handshake(cx));
    match tokio::time::timeout(timeout, ready).await {
        Err(_) => Err(Outcome::Timeout),
        Ok(Err(o)) => Err(o),
        Ok(Ok(())) => Ok(Rc::new(conn)),
    }
}

impl H2Conn {
    /// Every header block as literals (see `conn::State::literal_only`); before the first
    /// stream.
    pub(crate) fn literal_only(&self) {
        self.shared.state.borrow_mut().literal_only();
    }
}

/// Resets a stream whose request task stopped waiting for it.
struct CancelOnDrop<'a> {
    shared: &'a Shared,
    id: u32,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.shared.state.borrow_mut().cancel(self.id);
        }
    }
}

impl H2Conn {
    /// Whether the connection takes no more streams (GOAWAY, error, close).
    pub(crate) fn is_dead(&self) -> bool {
        self.shared.state.borrow().no_new_streams()
    }

    /// The most streams that were open at once.
    pub(crate) fn max_in_use(&self) -> u64 {
        self.max_in_use.get() as u64
    }

    /// Waits until a stream may be opened. `false` if the connection died meanwhile.
    pub(crate) async fn acquire(&self) -> bool {
        loop {
            let limit = {
                let st = self.shared.state.borrow();
                if st.no_new_streams() {
                    return false;
                }
                self.streams.min((st.peer_max_streams() as usize).max(1))
            };
            if self.in_use.get() < limit {
                let n = self.in_use.get() + 1;
                self.in_use.set(n);
                if n > self.max_in_use.get() {
                    self.max_in_use.set(n);
                }
                return true;
            }
            self.shared.freed.notified().await;
        }
    }

    /// Gives back a stream taken by [`H2Conn::acquire`].
    pub(crate) fn release(&self) {
        self.in_use.set(self.in_use.get() - 1);
        self.shared.freed.notify_one();
    }

    /// Sends one request on a stream already acquired and reads its response. Dropping the
    /// future before it finishes resets the stream (RST_STREAM CANCEL).
    pub(crate) async fn exchange(
        &self,
        req: &RequestTemplate,
        verify: bool,
    ) -> Result<Answer, Failure> {
        let id = self
            .shared
            .state
            .borrow_mut()
            .open(req, verify)
            .map_err(|outcome| Failure {
                outcome,
                bytes_read: 0,
            })?;
        let mut guard = CancelOnDrop {
            shared: &self.shared,
            id,
            armed: true,
        };
        let result =
            std::future::poll_fn(|cx| self.shared.state.borrow_mut().poll_stream(id, cx)).await;
        guard.armed = false;
        result
    }
}
