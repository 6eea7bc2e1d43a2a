//! Interim (1xx) responses on their way from a request's handler to the client's connection
//! (RFC 9110 §15.2: a proxy forwards the 1xx responses it did not ask for itself).
//!
//! Neither of hyper's servers can send them, so each protocol has its own channel: on HTTP/1.1
//! an [`Interim`] queue of serialized heads that the connection's loop (`h1::server`) writes
//! between responses; on HTTP/2 an [`H2Interim`] sender whose heads `h2::server` sends as 1xx
//! HEADERS on the request's stream (RFC 9113 §8.1). [`InterimTarget`] is either of them, as the
//! forwarding code sees it. This module only carries heads; what goes into them (hop-by-hop
//! fields removed, Via added) is the forwarding code's business.

use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};

use bytes::BytesMut;
use http::header::HeaderValue;
use http::Response;
use tokio::sync::mpsc;

/// Interim (1xx) responses on their way from a request's handler to its HTTP/1.1 connection:
/// one per connection, shared by the service and the connection's loop (`h1::server`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Interim(Arc<Mutex<InterimQueue>>);

#[derive(Debug, Default)]
struct InterimQueue {
    /// Serialized heads waiting for the connection.
    queued: BytesMut,
    /// Bytes ever queued, and ever written: a handler waits until `written` reaches the count
    /// its own head brought `queued_total` to.
    queued_total: u64,
    written: u64,
    /// The connection's task (which polls the handler too), and a waiting handler.
    conn: Option<Waker>,
    handler: Option<Waker>,
    /// The connection is gone: nothing more will be written.
    closed: bool,
}

impl Interim {
    fn lock(&self) -> MutexGuard<'_, InterimQueue> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues one serialized interim response head and waits until it has been written to the
    /// connection; false when the connection is gone. The caller must not return its final
    /// response before this returns: that is what keeps the order on the wire.
    pub(crate) async fn send(&self, head: &[u8]) -> bool {
        let target = {
            let mut queue = self.lock();
            if queue.closed {
                return false;
            }
            queue.queued.extend_from_slice(head);
            queue.queued_total += head.len() as u64;
            if let Some(conn) = &queue.conn {
                conn.wake_by_ref();
            }
            queue.queued_total
        };
        std::future::poll_fn(|cx| {
            let mut queue = self.lock();
            if queue.written >= target {
                Poll::Ready(true)
            } else if queue.closed {
                Poll::Ready(false)
            } else {
                queue.handler = Some(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }

    /// The connection's side: takes every queued head (`None` when there is none), and
    /// remembers `conn` as the task to wake when the next one is queued.
    pub(crate) fn take(&self, conn: &Waker) -> Option<BytesMut> {
        let mut queue = self.lock();
        if !queue.conn.as_ref().is_some_and(|w| w.will_wake(conn)) {
            queue.conn = Some(conn.clone());
        }
        (!queue.queued.is_empty()).then(|| queue.queued.split())
    }

    /// The connection's side: `n` bytes taken with [`Interim::take`] are on the wire; the
    /// handler waiting for them may go on.
    pub(crate) fn written(&self, n: u64) {
        let mut queue = self.lock();
        queue.written += n;
        if let Some(handler) = queue.handler.take() {
            handler.wake();
        }
    }

    /// The connection's side: it is gone, nothing more will be written.
    pub(crate) fn close(&self) {
        let mut queue = self.lock();
        queue.closed = true;
        if let Some(handler) = queue.handler.take() {
            handler.wake();
        }
    }
}

/// Interim responses on their way from a request's handler to its HTTP/2 stream.
#[derive(Debug, Clone)]
pub(crate) struct H2Interim(mpsc::UnboundedSender<Response<()>>);

impl H2Interim {
    /// The handler's end of a stream's channel; `h2::server` reads the other.
    pub(crate) fn new(sender: mpsc::UnboundedSender<Response<()>>) -> Self {
        Self(sender)
    }

    /// Queues one interim response. The stream's task sends every queued one before the final
    /// response, so the order on the wire is the order of the calls.
    pub(crate) fn send(&self, response: Response<()>) {
        // The receiver lives as long as the handler runs; an error means the stream is gone.
        let _ = self.0.send(response);
    }
}

/// The client connection interim (1xx) responses go to.
#[derive(Debug, Clone)]
pub(crate) enum InterimTarget {
    /// An HTTP/1.1 client: serialized heads, written by its connection's loop (`h1::server`).
    H1(Interim),
    /// An HTTP/2 client's stream: HEADERS frames sent by `h2::server` (RFC 9113 §8.1).
    H2(H2Interim),
}

/// Where the upstream's interim (1xx) responses go: the client's connection, with this
/// proxy's Via entry added to each (RFC 9110 §7.6.3).
#[derive(Debug, Clone, Copy)]
pub(crate) struct InterimSink<'a> {
    /// The client's connection.
    pub interim: &'a InterimTarget,
    /// This proxy's Via entry.
    pub via: &'a HeaderValue,
}
