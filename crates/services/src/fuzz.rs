//! Entry points for the fuzz targets under `fuzz/` (feature `fuzzing`, never in production
//! builds): the parsers of what clients and upstreams send, reached without a listener.
//!
//! - [`h1client_response`]: the upstream client's response head and body parsing.
//! - [`h1server`]: the intermediaries' HTTP/1.x server over a scripted client connection.
//!
//! The JSON → XML converter is public already ([`crate::json_xml`]).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub use crate::protocol::h1::client::fuzz::{
    response as h1client_response, H1ClientResponse, MAX_PIECE as H1CLIENT_MAX_PIECE,
    MAX_PIECES as H1CLIENT_MAX_PIECES,
};

use crate::protocol::body::{ClientBody, ResBody};
use crate::protocol::h1::check::H1Limits;
use crate::protocol::h1::server::{self as h1server, H1Handler};
use crate::protocol::interim::Interim;
use crate::protocol::Answer;

/// The server's request limits (the timeouts are an hour, out of the fuzzer's way).
#[derive(Debug, Clone, Copy)]
pub struct H1ServerLimits {
    /// Longest request line.
    pub max_request_line: usize,
    /// Largest head and trailer section.
    pub max_head: usize,
    /// Largest Content-Length.
    pub max_body: u64,
}

impl H1ServerLimits {
    /// The listener limits these stand for, with hour-long timeouts.
    fn strict(self) -> Arc<H1Limits> {
        Arc::new(H1Limits {
            max_request_line: self.max_request_line,
            max_head: self.max_head,
            max_body: self.max_body,
            head_timeout: Duration::from_secs(3600),
            body_timeout: Duration::from_secs(3600),
            send_timeout: Duration::from_secs(3600),
        })
    }
}

/// A client that sends scripted reads, then closes; it accepts every write.
struct Script {
    /// Reads still to come, last first.
    reads: Vec<Vec<u8>>,
}

impl AsyncRead for Script {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(mut next) = self.reads.pop() {
            let n = next.len().min(buf.remaining());
            buf.put_slice(&next[..n]);
            if n < next.len() {
                next.drain(..n);
                self.reads.push(next);
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Script {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        Poll::Ready(Ok(b.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// One request the intermediaries' HTTP/1.x server handed on, as its handler read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H1ServerRequest {
    /// The method and the request target, as sent.
    pub method: String,
    /// The request target (origin, absolute or asterisk form).
    pub target: String,
    /// The body's bytes (chunked coding decoded).
    pub body: Vec<u8>,
    /// The body ended as its framing says (false: it broke, or the client closed first).
    pub complete: bool,
}

/// What the intermediaries' HTTP/1.x server did with a client connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H1ServerRun {
    /// Every request handed on, in order.
    pub requests: Vec<H1ServerRequest>,
    /// The status of the refused head that ended the connection, if one did.
    pub refused: Option<u16>,
}

/// Serves a client connection that sends `pieces` (one read each) and then closes with the
/// intermediaries' HTTP/1.x server (`h1server`), whose handler reads every body to its end
/// and answers 200 (400 for a body that broke).
///
/// # Panics
/// When the server does not finish within a minute (a loop or a lost wake-up).
pub fn h1server(pieces: &[&[u8]], limits: H1ServerLimits) -> H1ServerRun {
    let limits = limits.strict();
    let script = Script {
        reads: pieces.iter().rev().map(|p| p.to_vec()).collect(),
    };
    let run = Arc::new(std::sync::Mutex::new(H1ServerRun {
        requests: Vec::new(),
        refused: None,
    }));
    let handler: Arc<dyn H1Handler> = Arc::new(Recorder(run.clone()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let (_drain_tx, mut drain) = tokio::sync::watch::channel(false);
        let serve = h1server::serve(
            script,
            limits,
            Duration::from_secs(3600),
            handler,
            &mut drain,
        );
        tokio::time::timeout(Duration::from_secs(60), serve)
            .await
            .expect("the server finishes the connection");
    });
    let run = run.lock().expect("not poisoned").clone();
    run
}

/// The handler of [`h1server`]: records each request with its whole body.
struct Recorder(Arc<std::sync::Mutex<H1ServerRun>>);

impl H1Handler for Recorder {
    fn call_h1(&self, req: Request<ClientBody>, _: Option<Interim>) -> Answer {
        let (parts, mut body) = req.into_parts();
        let mut seen = H1ServerRequest {
            method: parts.method.to_string(),
            target: parts.uri.to_string(),
            body: Vec::new(),
            complete: true,
        };
        let run = self.0.clone();
        Answer::boxed(async move {
            use hyper::body::Body;
            loop {
                let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
                match frame {
                    None => break,
                    Some(Ok(frame)) => {
                        if let Some(data) = frame.data_ref() {
                            seen.body.extend_from_slice(data);
                        }
                    }
                    Some(Err(_)) => {
                        seen.complete = false;
                        break;
                    }
                }
            }
            let status = if seen.complete {
                StatusCode::OK
            } else {
                StatusCode::BAD_REQUEST
            };
            run.lock().expect("not poisoned").requests.push(seen);
            let mut response = Response::new(ResBody::Local(Some(Bytes::from_static(b"ok"))));
            *response.status_mut() = status;
            response
        })
    }

    fn refuse(&self, status: StatusCode) -> Response<ResBody> {
        self.0.lock().expect("not poisoned").refused = Some(status.as_u16());
        let mut response = Response::new(ResBody::Local(None));
        *response.status_mut() = status;
        response
    }
}

/// `target` as the intermediaries hand it on (`http::Uri`'s form), `None` when it does not parse
/// as one (the server refuses such a head with 400, as hyper did).
pub fn uri_form(target: &[u8]) -> Option<String> {
    http::Uri::try_from(target).ok().map(|uri| uri.to_string())
}
