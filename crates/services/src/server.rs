//! Listening and connection handling shared by every reference service: the accept loop (with
//! back-off when file descriptors run out), TLS handshakes, the choice between HTTP/1.1 and
//! HTTP/2 per connection, graceful drain on shutdown, and the two ways of running on threads.
//!
//! What a service answers is not decided here: a service hands in a handler per connection
//! ([`Handler`]) and this module only moves connections to it. HTTP/1.x connections are served
//! by `h1::server`, HTTP/2 connections by `h2::server`; on a cleartext port that serves both, the
//! connection preface tells the two apart first. Limits that are hard-coded below (drain
//! timeout, TLS handshake deadline, accept back-off) follow docs/behaviour.md and the anchors
//! it names; they are constants rather than options because no benchmark has needed to change
//! them.
//! The cap on concurrent client connections is an option (`max_connections`): past it, the
//! accept loops stop accepting until a connection ends, so new clients wait in the kernel's
//! accept queue (HAProxy's `maxconn`) rather than take descriptors the served ones need.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;
use tracing::{debug, info, warn};

use crate::error::ServicesError;
use crate::memory::{self, HighWater};
use crate::protocol::drain::{draining, Drain};
use crate::protocol::h1::check::H1Limits;
use crate::protocol::h1::server::{self as h1server, H1Handler};
use crate::protocol::h2::server::{self as h2server, H2Handler, H2Limits};

/// How long in-flight requests get to finish once shutdown starts.
pub(crate) const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// Most serving threads a service takes (as the load generator's `-t`): a thread each, with
/// its own runtime, is real memory.
pub(crate) const MAX_THREADS: usize = 1024;

/// Checks a service's `threads`: 1 to [`MAX_THREADS`].
pub(crate) fn check_threads(threads: usize) -> Result<(), ServicesError> {
    if threads == 0 {
        return Err(ServicesError::invalid("threads", "must be at least 1"));
    }
    if threads > MAX_THREADS {
        return Err(ServicesError::invalid(
            "threads",
            format!("must be at most {MAX_THREADS}, got {threads}"),
        ));
    }
    Ok(())
}

/// Deadline for a whole TLS handshake, so a silent client cannot hold a connection forever.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause after the accept queue fails for lack of descriptors or memory (nginx disables accept
/// for 500 ms in the same situation: retrying at once would spin a core at 100 %).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(500);
/// How long a rejected plain-HTTP client gets to read the 400 before the socket closes.
const REJECT_LINGER: Duration = Duration::from_secs(1);
/// The first byte of every TLS connection: a handshake record (RFC 8446 §5.1).
const TLS_HANDSHAKE_RECORD: u8 = 0x16;
/// What a client that speaks plain HTTP to the TLS port is told before the close.
const PLAIN_HTTP_ON_TLS_PORT: &[u8] = b"HTTP/1.1 400 Bad Request\r\n\
content-type: text/plain\r\n\
content-length: 46\r\n\
connection: close\r\n\r\n\
this port speaks TLS: plain HTTP was sent to it";

/// A service this module runs, as one connection's handler of both protocols: `h1::server`
/// serves its HTTP/1.x connections and `h2::server` its HTTP/2 ones.
pub(crate) trait Handler: H1Handler + H2Handler {
    /// Told once, when the connection's protocol is settled (after its TLS handshake and
    /// ALPN, or the h2c preface sniff), before its first request: what the echo's origin
    /// statistics count. A connection whose TLS handshake fails is never told.
    fn opened(&self, _how: Opened) {}
}

/// How a served connection came to be: its protocol and, over TLS, its handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Opened {
    /// HTTP/2 (ALPN h2 or h2c by prior knowledge); otherwise HTTP/1.x.
    pub h2: bool,
    /// `None` on cleartext; over TLS, whether the handshake resumed an earlier session.
    pub tls_resumed: Option<bool>,
}

/// Protocol options of one listener.
#[derive(Debug, Clone)]
pub(crate) struct ListenOptions {
    /// Offer HTTP/2: by ALPN over TLS, by prior knowledge on cleartext.
    pub http2: bool,
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced on HTTP/2 connections.
    pub h2_max_streams: u32,
    /// TLS configuration; `None` serves cleartext.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Most client connections served at once by the whole listener (every thread); further
    /// connections wait in the kernel's accept queue until one ends.
    pub max_connections: usize,
}

/// The default cap on concurrent client connections of one service: nginx's
/// `worker_connections` order of magnitude, and no more than half the open-files limit, so that
/// upstream connections (one per client connection at most, for the intermediaries) and the
/// listener still get descriptors.
pub(crate) fn default_max_connections() -> usize {
    const CAP: usize = 10_000;
    let mut limit = open_files_limit();
    if limit == 0 {
        limit = 2 * CAP as u64;
    }
    CAP.min((limit / 2).max(1) as usize)
}

/// The soft open-files limit, or 0 when unknown (read from `/proc/self/limits`, so that no FFI
/// is needed).
fn open_files_limit() -> u64 {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| {
            limits
                .lines()
                .find(|line| line.starts_with("Max open files"))
                .and_then(|line| line.split_whitespace().nth(3))
                .and_then(|soft| soft.parse().ok())
        })
        .unwrap_or(0)
}

/// Checks a service's `max_connections`: at least 1.
pub(crate) fn check_max_connections(max: usize) -> Result<(), ServicesError> {
    if max == 0 {
        return Err(ServicesError::invalid(
            "max_connections",
            "must be at least 1",
        ));
    }
    Ok(())
}

/// What a service learns about the connection it is built for.
#[derive(Debug, Clone)]
pub(crate) struct ConnInfo {
    /// The client's address.
    pub peer: SocketAddr,
}

/// What every connection of one listener shares.
pub(crate) struct Protocols {
    http2: bool,
    h2_max_streams: u32,
    tls: Option<TlsAcceptor>,
    /// How long a connection may stay silent before its first request (and between
    /// requests; HTTP/2: with no open stream).
    idle_timeout: Duration,
    /// The HTTP/1.x request rules and the body and send timeouts of both protocols.
    limits: Arc<H1Limits>,
    /// One permit per client connection being served, shared by every thread's accept loop.
    connections: Arc<tokio::sync::Semaphore>,
    /// How many permits `connections` started with.
    max_connections: usize,
    /// The most connections open at once lately, for [`memory`].
    high_water: HighWater,
}

impl Protocols {
    /// The listener's protocols: `options`, HTTP/1.x requests checked against `limits`, and
    /// connections with nothing in progress closed after `idle_timeout`.
    pub(crate) fn new(options: &ListenOptions, limits: H1Limits, idle_timeout: Duration) -> Self {
        let max_connections = options
            .max_connections
            .min(tokio::sync::Semaphore::MAX_PERMITS);
        Self {
            http2: options.http2,
            h2_max_streams: options.h2_max_streams,
            tls: options.tls.clone().map(TlsAcceptor::from),
            idle_timeout,
            limits: Arc::new(limits),
            connections: Arc::new(tokio::sync::Semaphore::new(max_connections)),
            max_connections,
            high_water: HighWater::default(),
        }
    }

    /// Client connections being served now, on every thread.
    fn open_connections(&self) -> usize {
        self.max_connections - self.connections.available_permits()
    }

    /// Gives memory back after each surge of connections, until dropped ([`memory`]).
    async fn give_back_memory(self: Arc<Self>) {
        memory::give_back_after_surges(&self.high_water, || self.open_connections()).await;
    }

    /// The timers of this listener's HTTP/2 connections served by [`h2server`].
    fn h2_limits(&self) -> H2Limits {
        H2Limits {
            max_streams: self.h2_max_streams,
            idle_timeout: self.idle_timeout,
            body_timeout: self.limits.body_timeout,
            send_timeout: self.limits.send_timeout,
        }
    }

    /// Serves one accepted connection to the end (or until the drain ends it).
    async fn serve<H: Handler>(
        self: Arc<Self>,
        stream: TcpStream,
        handler: Arc<H>,
        mut drain: watch::Receiver<bool>,
    ) {
        let Some(acceptor) = &self.tls else {
            if self.http2 {
                // Told its protocol once the preface is sniffed.
                // HTTP/1.1 or h2c by prior knowledge, told apart by the connection preface.
                Box::pin(self.serve_h2c_or_h1(stream, handler, drain)).await;
            } else {
                handler.opened(Opened {
                    h2: false,
                    tls_resumed: None,
                });
                Box::pin(self.serve_h1(stream, handler, &mut drain)).await;
            }
            return;
        };
        let tls = tokio::select! {
            biased;
            tls = Box::pin(tls_handshake(acceptor, stream)) => match tls {
                Some(tls) => tls,
                None => return,
            },
            () = draining(&mut drain) => return,
        };
        let session = tls.get_ref().1;
        let h2 = session.alpn_protocol() == Some(b"h2");
        handler.opened(Opened {
            h2,
            tls_resumed: Some(session.handshake_kind() == Some(rustls::HandshakeKind::Resumed)),
        });
        if h2 {
            Box::pin(h2server::serve(tls, self.h2_limits(), handler, &mut drain)).await;
        } else {
            Box::pin(self.serve_h1(tls, handler, &mut drain)).await;
        }
    }

    /// Serves one HTTP/1.x connection with [`h1server`].
    async fn serve_h1<S, H>(&self, io: S, handler: Arc<H>, drain: &mut watch::Receiver<bool>)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
        H: Handler,
    {
        h1server::serve(io, self.limits.clone(), self.idle_timeout, handler, drain).await;
    }

    /// A cleartext port serving both HTTP/1.1 and h2c by prior knowledge: the first bytes tell
    /// which (the connection preface, RFC 9113 §3.4), and are then replayed to whichever side
    /// takes the connection.
    async fn serve_h2c_or_h1<H: Handler>(
        &self,
        mut stream: TcpStream,
        handler: Arc<H>,
        mut drain: watch::Receiver<bool>,
    ) {
        let sniffed = tokio::select! {
            biased;
            sniffed = tokio::time::timeout(self.idle_timeout, sniff_preface(&mut stream)) => {
                match sniffed {
                    Ok(Ok(sniffed)) => sniffed,
                    // Silent past the idle timeout, or gone: closed quietly.
                    Ok(Err(_)) | Err(_) => return,
                }
            }
            () = draining(&mut drain) => return,
        };
        let (first, h2) = sniffed;
        handler.opened(Opened {
            h2,
            tls_resumed: None,
        });
        let io = Rewind::new(first, stream);
        if h2 {
            Box::pin(h2server::serve(io, self.h2_limits(), handler, &mut drain)).await;
        } else {
            self.serve_h1(io, handler, &mut drain).await;
        }
    }
}

/// Reads until the first bytes either are the whole HTTP/2 connection preface (`true`) or
/// cannot be (`false`, decided at the first byte that differs: `PRI` is no HTTP/1.1 method a
/// client sends, so a request line differs within three bytes). Returns what was read.
async fn sniff_preface(stream: &mut TcpStream) -> io::Result<(Bytes, bool)> {
    let mut buf = BytesMut::with_capacity(H2_PREFACE.len());
    loop {
        let n = stream.read_buf(&mut buf).await?;
        let seen = buf.len().min(H2_PREFACE.len());
        if buf[..seen] != H2_PREFACE[..seen] {
            return Ok((buf.freeze(), false));
        }
        if seen == H2_PREFACE.len() {
            return Ok((buf.freeze(), true));
        }
        if n == 0 {
            // Closed mid-preface (or before a byte): HTTP/1 sees the end and closes.
            return Ok((buf.freeze(), false));
        }
    }
}

/// The HTTP/2 client connection preface (RFC 9113 §3.4).
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// A stream whose first bytes were already read: reads return those first.
#[derive(Debug)]
struct Rewind<T> {
    first: Bytes,
    inner: T,
}

impl<T> Rewind<T> {
    fn new(first: Bytes, inner: T) -> Self {
        Self { first, inner }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Rewind<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.first.is_empty() {
            let n = self.first.len().min(buf.remaining());
            let piece = self.first.split_to(n);
            buf.put_slice(&piece);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Rewind<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Completes a TLS handshake within [`TLS_HANDSHAKE_TIMEOUT`]. A client that sends plain HTTP
/// gets a 400 and a close instead (docs/behaviour.md: "never a hang").
async fn tls_handshake(acceptor: &TlsAcceptor, stream: TcpStream) -> Option<TlsStream<TcpStream>> {
    let handshake = async {
        let mut first = [0u8; 1];
        if stream.peek(&mut first).await? == 0 {
            return Ok(None);
        }
        if first[0] != TLS_HANDSHAKE_RECORD {
            reject_plain_http(stream).await;
            return Ok(None);
        }
        acceptor.accept(stream).await.map(Some)
    };
    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, handshake).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(error)) => {
            debug!(%error, "TLS handshake failed");
            None
        }
        Err(_) => {
            debug!("TLS handshake timed out");
            None
        }
    }
}

/// Answers a plain-HTTP client on the TLS port with a 400, then closes. The request is read
/// first and the socket lingers briefly after the FIN, so that the close does not turn into a
/// reset that destroys the answer before the client reads it (Apache's "lingering close").
async fn reject_plain_http(mut stream: TcpStream) {
    debug!("plain HTTP on the TLS port: answering 400 and closing");
    let mut sink = [0u8; 4096];
    let lingering = async {
        let _ = stream.read(&mut sink).await?;
        stream.write_all(PLAIN_HTTP_ON_TLS_PORT).await?;
        stream.shutdown().await?;
        while stream.read(&mut sink).await? > 0 {}
        Ok::<(), io::Error>(())
    };
    let _ = tokio::time::timeout(REJECT_LINGER, lingering).await;
}

/// Accepts connections until the drain starts, spawning one task per connection on the
/// current runtime; `make` builds each connection's service.
pub(crate) async fn accept_loop<M, H>(
    listener: TcpListener,
    protocols: Arc<Protocols>,
    make: M,
    mut drain: watch::Receiver<bool>,
) where
    M: Fn(ConnInfo) -> Arc<H>,
    H: Handler,
{
    let mut backing_off = false;
    let mut full = false;
    loop {
        // At the connection cap, stop accepting until a connection ends: the next clients
        // wait in the kernel's accept queue (HAProxy's `maxconn`) instead of costing
        // descriptors, and are served in order once there is room.
        let permit = match protocols.connections.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                if !full {
                    warn!("at the connection cap: new connections wait until one ends");
                    full = true;
                }
                tokio::select! {
                    biased;
                    () = draining(&mut drain) => break,
                    permit = protocols.connections.clone().acquire_owned() => {
                        permit.expect("the connection semaphore is never closed")
                    }
                }
            }
        };
        let accepted = tokio::select! {
            biased;
            () = draining(&mut drain) => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                protocols.high_water.note(protocols.open_connections());
                full = false;
                backing_off = false;
                // Small responses must leave at once, not wait for Nagle.
                if let Err(error) = stream.set_nodelay(true) {
                    debug!(%error, "failed to set TCP_NODELAY");
                }
                let handler = make(ConnInfo { peer });
                let serving = protocols.clone().serve(stream, handler, drain.clone());
                tokio::spawn(async move {
                    serving.await;
                    drop(permit);
                });
            }
            // The peer gave up before we accepted: nothing to do but take the next one.
            Err(error) if is_connection_error(&error) => {
                debug!(%error, "accept failed for one connection");
            }
            Err(error) => {
                // Out of descriptors (EMFILE/ENFILE), buffers or memory, or something unknown:
                // retrying at once would spin, so pause accepting while the connections already
                // open keep being served. Logged once per episode, not once per attempt.
                if backing_off {
                    debug!(%error, "accept still failing: backing off again");
                } else {
                    warn!(
                        %error,
                        backoff_ms = ACCEPT_BACKOFF.as_millis() as u64,
                        "accept failed: pausing accept, existing connections are still served",
                    );
                    backing_off = true;
                }
                tokio::select! {
                    biased;
                    () = draining(&mut drain) => break,
                    () = tokio::time::sleep(ACCEPT_BACKOFF) => {}
                }
            }
        }
    }
    debug!("stopped accepting");
}

/// Errors that concern only the connection being accepted, after which the next accept can be
/// tried at once (what hyper's and tokio's own examples treat as such).
fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
    )
}

/// Serves on the caller's runtime until `shutdown` resolves, then drains; `make` builds each
/// connection's handler.
pub(crate) async fn serve<M, H>(
    listener: TcpListener,
    protocols: Arc<Protocols>,
    make: M,
    shutdown: impl Future<Output = ()>,
) where
    M: Fn(ConnInfo) -> Arc<H> + Send + 'static,
    H: Handler,
{
    let drain = Drain::new();
    let trims = tokio::spawn(protocols.clone().give_back_memory());
    let accept = tokio::spawn(accept_loop(listener, protocols, make, drain.watcher()));
    shutdown.await;
    trims.abort();
    info!("shutting down: stopped accepting, draining in-flight requests");
    drain.drain(DRAIN_TIMEOUT).await;
    // The accept loop stopped when the drain began; it cannot fail, only be cancelled.
    let _ = accept.await;
}

/// Runs a service on `threads` threads until `shutdown` resolves, then drains: thread per core;
/// `make` builds each connection's handler.
///
/// Each thread runs its own current-thread tokio runtime and its own accept loop on a clone of
/// the listening socket, so the kernel hands each new connection to whichever thread gets to
/// `accept` first (a busy thread arrives later, which balances by load), and a connection then
/// lives on one thread with no cross-thread wake-ups. `shutdown` is polled on the calling thread.
///
/// Measured against one multi-threaded runtime (work stealing, one accept loop) with
/// `benches/echo_wrk.rs` on a 2-core machine: as fast or faster in every round, up to 1.5x with
/// two threads; see that file for the numbers.
pub(crate) fn run_blocking<M, H>(
    listener: std::net::TcpListener,
    threads: usize,
    protocols: Arc<Protocols>,
    make: M,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServicesError>
where
    M: Fn(ConnInfo) -> Arc<H> + Clone + Send + 'static,
    H: Handler,
{
    listener
        .set_nonblocking(true)
        .map_err(|source| ServicesError::Listener { source })?;
    let control = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| ServicesError::Runtime { source })?;
    let drain = Drain::new();
    let (stop_tx, stop_rx) = watch::channel(false);
    let (failed_tx, mut failed_rx) = mpsc::unbounded_channel::<ServicesError>();
    let mut workers = Vec::with_capacity(threads);
    for index in 0..threads {
        // Every clone refers to the same listening socket: the kernel hands each connection to
        // whichever thread's accept gets there first.
        let listener = listener
            .try_clone()
            .map_err(|source| ServicesError::Listener { source })?;
        let (protocols, make) = (protocols.clone(), make.clone());
        let (watcher, mut stop_rx) = (drain.watcher(), stop_rx.clone());
        let worker_failed = failed_tx.clone();
        let worker = std::thread::Builder::new()
            .name(format!("gatebench-svc-{index}"))
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(source) => {
                        let _ = worker_failed.send(ServicesError::Runtime { source });
                        return;
                    }
                };
                runtime.block_on(async move {
                    match TcpListener::from_std(listener) {
                        Ok(listener) => accept_loop(listener, protocols, make, watcher).await,
                        Err(source) => {
                            let _ = worker_failed.send(ServicesError::Listener { source });
                            return;
                        }
                    }
                    // Keep this runtime driving its connections until the drain is over.
                    let _ = stop_rx.wait_for(|stop| *stop).await;
                });
            })
            .map_err(|source| ServicesError::Runtime { source });
        match worker {
            Ok(worker) => workers.push(worker),
            Err(error) => {
                let _ = failed_tx.send(error);
                break;
            }
        }
    }
    drop(failed_tx);
    let result = control.block_on(async {
        // Ends with this runtime, after the drain.
        tokio::spawn(protocols.give_back_memory());
        let failure = tokio::select! {
            () = shutdown => None,
            Some(error) = failed_rx.recv() => Some(error),
        };
        info!("shutting down: stopped accepting, draining in-flight requests");
        drain.drain(DRAIN_TIMEOUT).await;
        failure.map_or(Ok(()), Err)
    });
    stop_tx.send_replace(true);
    let mut panicked = false;
    for worker in workers {
        panicked |= worker.join().is_err();
    }
    match result {
        Err(error) => Err(error),
        Ok(()) if panicked => Err(ServicesError::WorkerPanicked),
        Ok(()) => Ok(()),
    }
}
