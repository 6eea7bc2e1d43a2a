//! The HTTP machinery of the services, cut by version × side (pingora's
//! `protocols/http/{v1,v2}/{server,client}`): it serves and speaks HTTP and knows nothing of
//! what is answered. Rule: nothing here imports the echo, the proxy, the balancer or the
//! transform; they sit above it and reach it through [`h1::server::H1Handler`],
//! [`h2::server::H2Handler`] and the bodies of [`body`].
//!
//! - [`h1`]: HTTP/1.x: the server, its connection, the request rules, the upstream client.
//! - [`h2`]: HTTP/2: the server (h2 crate) and its control-frame flood limit.
//! - [`body`]: the bodies both sides move (client request bodies, responses, upstream bodies).
//! - [`interim`]: interim (1xx) responses on their way to a client's connection.
//! - [`deadline`]: the one re-armable timer of the hand-written readers.
//! - [`drain`]: the graceful drain every server shares.
//! - [`upgrade`]: a connection (101) or an HTTP/2 stream (extended CONNECT) handed to what runs
//!   on it.
//!
//! [`Answer`], the future a handler gives for one request of either version, is here.

pub(crate) mod body;
pub(crate) mod deadline;
pub(crate) mod drain;
pub(crate) mod h1;
pub(crate) mod h2;
pub(crate) mod interim;
pub(crate) mod scratch;
pub(crate) mod upgrade;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::Response;

use crate::protocol::body::ResBody;

/// The future answering one request (either protocol): ready at once for an answer that needs
/// no waiting (the echo's GET), so that it costs no allocation, or boxed. Built once per
/// request and polled where it lies: boxing the large variant would bring back the allocation.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Answer {
    /// The response, taken on the first poll.
    Ready(Option<Response<ResBody>>),
    /// A response still being worked out.
    Boxed(Pin<Box<dyn Future<Output = Response<ResBody>> + Send>>),
}

impl Answer {
    /// An answer that needs `future` to run.
    pub(crate) fn boxed(future: impl Future<Output = Response<ResBody>> + Send + 'static) -> Self {
        Answer::Boxed(Box::pin(future))
    }
}

impl Future for Answer {
    type Output = Response<ResBody>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Answer::Ready(response) => {
                Poll::Ready(response.take().expect("Answer polled after completion"))
            }
            Answer::Boxed(future) => future.as_mut().poll(cx),
        }
    }
}
