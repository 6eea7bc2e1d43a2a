//! Taking over a connection after `101 Switching Protocols` (HTTP/1.1), or a stream after an
//! extended CONNECT's `200` (HTTP/2, RFC 8441). Rule: the protocol layer knows only that a
//! handler may hand back, with its 101 response, a [`TakeOver`]: after the 101 is written,
//! `h1::server` gives it the connection and the bytes already read past the request and serves
//! nothing more on it; `h2::server` answers the extended CONNECT with a 200 carrying the 101's
//! fields and gives it the stream as bytes (`gatebench_h2io`). What runs on it (a WebSocket
//! echo, a tunnel) is the handler's, so nothing here imports a service.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use bytes::BytesMut;
use http::{Response, StatusCode};
use tokio::io::{AsyncRead, AsyncWrite};

/// What a taken-over connection or stream is: bytes both ways.
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// What runs on a connection once it is taken over.
pub(crate) type Upgraded = Pin<Box<dyn Future<Output = ()> + Send>>;
type Start = Box<dyn FnOnce(Box<dyn Io>, BytesMut) -> Upgraded + Send>;

/// The connection's new owner, carried in a 101 response's extensions ([`TakeOver::attach`]).
/// Cloneable only because extensions must be; it starts once.
#[derive(Clone)]
pub(crate) struct TakeOver(Arc<Mutex<Option<Start>>>);

impl TakeOver {
    /// Attaches `start` to `response` (which must be a 101): it gets the connection and the
    /// bytes read past the request head once the 101 is written.
    pub(crate) fn attach<B>(
        response: &mut Response<B>,
        start: impl FnOnce(Box<dyn Io>, BytesMut) -> Upgraded + Send + 'static,
    ) {
        debug_assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
        let start: Start = Box::new(start);
        response
            .extensions_mut()
            .insert(TakeOver(Arc::new(Mutex::new(Some(start)))));
    }

    /// Takes the new owner out of a 101 response, if it has one.
    pub(crate) fn take<B>(response: &mut Response<B>) -> Option<Start> {
        if response.status() != StatusCode::SWITCHING_PROTOCOLS {
            return None;
        }
        let take = response.extensions_mut().remove::<TakeOver>()?;
        let start = take.0.lock().ok()?.take();
        start
    }
}
