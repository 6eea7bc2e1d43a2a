//! The upstream side of the intermediaries: where an upstream is, how a connection to it is
//! made (TCP, TLS with ALPN, the HTTP/1.1 or HTTP/2 handshake), and the per-upstream pools of
//! keep-alive connections.
//!
//! Pools are hand-rolled rather than hyper-util's legacy `Client`: the forwarding loop must know
//! whether a request left the proxy at all (a stale pooled connection is retried transparently,
//! a POST that reached a hanging upstream never is), which connection a response came on (a
//! malformed one is closed, never pooled), and which failures were connect failures; and the
//! pool is sharded per thread, so that with thread-per-core serving a connection is checked out
//! on the thread whose runtime drives it. HTTP/1.1 connections are spoken to by
//! [`crate::protocol::h1::client`] (an idle one is just its socket); HTTP/2 ones by the h2 crate's client
//! (not hyper's, which drops interim 1xx responses), one shared connection per upstream and
//! thread.
//!
//! Upstream addresses are resolved once, at start-up. HTTPS upstreams are verified against the
//! system's roots (plus `--upstream-cacert`) unless verification is explicitly turned off
//! (docs/behaviour.md, "TLS"); ALPN offers `h2` and `http/1.1`, and the upstream's choice decides the
//! protocol of that connection. Cleartext upstreams are spoken to in HTTP/1.1, or in HTTP/2 by
//! prior knowledge when their URL says `h2c://` (gRPC back-ends, which need HTTP/2 end to end
//! for their trailers).

use std::collections::VecDeque;
use std::future::Future;
use std::io::{self, IoSlice};
use std::mem::MaybeUninit;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use http::header::HeaderValue;
use http::uri::{Authority, Scheme};
use http::Uri;
use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;
use tokio_rustls::TlsConnector;
use tracing::{debug, warn};

use crate::error::ServicesError;

/// How the intermediaries treat HTTPS upstreams.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamTls {
    /// Accept any upstream certificate (self-signed test backends). Off by default: upstream
    /// certificates are verified.
    pub insecure: bool,
    /// Also trust the CA certificates in this PEM file.
    pub ca_file: Option<PathBuf>,
    /// Offer only `http/1.1` in ALPN, never `h2`.
    pub http1_only: bool,
}

/// One upstream, parsed and resolved.
#[derive(Debug)]
pub(crate) struct Target {
    /// The URL as given, for logs.
    pub url: String,
    pub scheme: Scheme,
    pub https: bool,
    /// `h2c://`: cleartext HTTP/2 by prior knowledge (gRPC back-ends), `:scheme` http.
    pub h2c: bool,
    /// `host:port` as written in the URL: the Host sent when the client sent none.
    pub authority: Authority,
    pub host_header: HeaderValue,
    pub server_name: ServerName<'static>,
    /// Every address the host resolved to at start-up, tried in order.
    pub addrs: Vec<SocketAddr>,
}

impl Target {
    /// Parses `http://host[:port][/]`, `https://…` or `h2c://…` (HTTP/2 over cleartext by
    /// prior knowledge) and resolves the host.
    pub(crate) fn parse(url: &str) -> Result<Self, ServicesError> {
        let invalid = |why: &str| ServicesError::InvalidConfig {
            reason: format!("upstream `{url}`: {why}"),
        };
        let uri: Uri = url.parse().map_err(|_| invalid("not a valid URL"))?;
        let (https, h2c) = match uri.scheme_str() {
            Some("http") => (false, false),
            Some("https") => (true, false),
            Some("h2c") => (false, true),
            _ => return Err(invalid("the scheme must be http, https or h2c")),
        };
        let authority = uri
            .authority()
            .cloned()
            .ok_or_else(|| invalid("the host is missing"))?;
        if authority.as_str().contains('@') {
            return Err(invalid("user information is not supported"));
        }
        if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
            return Err(invalid(
                "a path is not supported: requests are forwarded with their own path",
            ));
        }
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let addrs: Vec<SocketAddr> = (host, port)
            .to_socket_addrs()
            .map_err(|e| invalid(&format!("cannot resolve the host: {e}")))?
            .collect();
        if addrs.is_empty() {
            return Err(invalid("the host resolved to no address"));
        }
        let server_name = ServerName::try_from(host.to_owned())
            .map_err(|_| invalid("the host is not a valid TLS server name"))?;
        Ok(Self {
            url: url.to_owned(),
            scheme: if https { Scheme::HTTPS } else { Scheme::HTTP },
            https,
            h2c,
            host_header: HeaderValue::from_str(authority.as_str())
                .map_err(|_| invalid("the host is not a valid Host value"))?,
            authority,
            server_name,
            addrs,
        })
    }
}

/// A ready-to-use upstream connection.
pub(crate) enum Sender {
    /// HTTP/1.1, spoken by [`crate::protocol::h1::client`].
    H1(H1Conn),
    /// HTTP/2, spoken by h2's client (its connection runs as a task of its own).
    H2(H2Upstream),
}

/// hyper's HTTP/2 client defaults, kept from when hyper's client spoke to HTTP/2 upstreams: 2 MiB
/// stream and 5 MiB connection windows, 16 KiB frames, 1 MiB buffered per stream, 100 streams
/// before the upstream's SETTINGS arrive.
const H2_STREAM_WINDOW: u32 = 2 * 1024 * 1024;
const H2_CONN_WINDOW: u32 = 5 * 1024 * 1024;
const H2_MAX_FRAME_SIZE: u32 = 16 * 1024;
const H2_MAX_SEND_BUFFER: usize = 1024 * 1024;
const H2_INITIAL_MAX_SEND_STREAMS: usize = 100;

/// One HTTP/2 upstream connection; clones share it (streams multiplex on it).
#[derive(Debug, Clone)]
pub(crate) struct H2Upstream {
    pub send: h2::client::SendRequest<bytes::Bytes>,
    /// Set when the connection's task ended, or a request found it unusable.
    closed: Arc<AtomicBool>,
}

impl H2Upstream {
    /// The connection cannot take new streams.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Marks the connection unusable, so the pool drops it.
    pub(crate) fn mark_closed(&self) {
        self.closed.store(true, Ordering::Release);
    }
}

/// Why a connection could not be made.
#[derive(Debug)]
pub(crate) enum ConnectError {
    /// Every address refused the connection.
    Refused(io::Error),
    /// The connect timeout (TCP, TLS and HTTP handshakes together) passed.
    Timeout,
    /// The TLS handshake failed (certificate, protocol).
    Tls(io::Error),
    /// Any other I/O or handshake failure.
    Other(String),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::Refused(e) => write!(f, "connection refused ({e})"),
            ConnectError::Timeout => f.write_str("connect timed out"),
            ConnectError::Tls(e) => write!(f, "TLS handshake failed ({e})"),
            ConnectError::Other(e) => write!(f, "connect failed ({e})"),
        }
    }
}

/// Makes upstream connections: TCP, optional TLS, then the HTTP handshake; the connection's
/// task is spawned on the current runtime.
pub(crate) struct Connector {
    /// ALPN `h2` and `http/1.1` (or `http/1.1` only).
    tls: Option<TlsConnector>,
    /// ALPN `http/1.1` only, for health checks.
    tls_h1: Option<TlsConnector>,
    connect_timeout: Duration,
    h2: h2::client::Builder,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("tls", &self.tls.is_some())
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

impl Connector {
    /// Whether it can reach `https://` upstreams.
    pub(crate) fn has_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Builds the connector; TLS is prepared only when some upstream needs it.
    pub(crate) fn new(
        settings: &UpstreamTls,
        need_tls: bool,
        connect_timeout: Duration,
        max_response_head: usize,
    ) -> Result<Self, ServicesError> {
        let max_response_head = u32::try_from(max_response_head).unwrap_or(u32::MAX);
        let (tls, tls_h1) = if need_tls {
            let alpn: &[&[u8]] = if settings.http1_only {
                &[b"http/1.1"]
            } else {
                &[b"h2", b"http/1.1"]
            };
            (
                Some(TlsConnector::from(client_config(settings, alpn)?)),
                Some(TlsConnector::from(client_config(settings, &[b"http/1.1"])?)),
            )
        } else {
            (None, None)
        };
        let mut h2 = h2::client::Builder::new();
        h2.initial_window_size(H2_STREAM_WINDOW)
            .initial_connection_window_size(H2_CONN_WINDOW)
            .max_frame_size(H2_MAX_FRAME_SIZE)
            .max_send_buffer_size(H2_MAX_SEND_BUFFER)
            .initial_max_send_streams(H2_INITIAL_MAX_SEND_STREAMS)
            .enable_push(false)
            .max_header_list_size(max_response_head);
        Ok(Self {
            tls,
            tls_h1,
            connect_timeout,
            h2,
        })
    }

    /// Opens a new connection to `target` within the connect timeout.
    pub(crate) async fn connect(&self, target: &Target) -> Result<Sender, ConnectError> {
        match tokio::time::timeout(self.connect_timeout, self.connect_inner(target, false)).await {
            Ok(result) => result,
            Err(_) => Err(ConnectError::Timeout),
        }
    }

    async fn connect_inner(&self, target: &Target, h1_only: bool) -> Result<Sender, ConnectError> {
        let (io, h2) = self.stream(target, h1_only).await?;
        if !h2 {
            return Ok(Sender::H1(H1Conn::new(io)));
        }
        let (send, conn) = self
            .h2
            .handshake::<_, bytes::Bytes>(io)
            .await
            .map_err(|e| ConnectError::Other(e.to_string()))?;
        let closed = Arc::new(AtomicBool::new(false));
        let ended = closed.clone();
        tokio::spawn(async move {
            if let Err(error) = conn.await {
                debug!(side = "upstream", %error, "HTTP/2 upstream connection ended");
            }
            ended.store(true, Ordering::Release);
        });
        Ok(Sender::H2(H2Upstream { send, closed }))
    }

    /// TCP (every resolved address in turn) and TLS; true when ALPN chose h2.
    async fn stream(
        &self,
        target: &Target,
        h1_only: bool,
    ) -> Result<(UpstreamIo, bool), ConnectError> {
        let mut last = None;
        let mut tcp = None;
        for addr in &target.addrs {
            match TcpStream::connect(addr).await {
                Ok(stream) => {
                    tcp = Some(stream);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let tcp = match (tcp, last) {
            (Some(tcp), _) => tcp,
            (None, Some(e)) if e.kind() == io::ErrorKind::ConnectionRefused => {
                return Err(ConnectError::Refused(e))
            }
            (None, Some(e)) => return Err(ConnectError::Other(e.to_string())),
            (None, None) => return Err(ConnectError::Other("no address".to_owned())),
        };
        // Small requests must leave at once, not wait for Nagle.
        let _ = tcp.set_nodelay(true);
        if !target.https {
            // Health checks speak HTTP/1.1 whatever the upstream's scheme.
            return Ok((gatebench_tls::MaybeTls::Plain(tcp), target.h2c && !h1_only));
        }
        let connector = if h1_only { &self.tls_h1 } else { &self.tls };
        let connector = connector
            .as_ref()
            .expect("TLS is prepared whenever an upstream is https");
        let tls = connector
            .connect(target.server_name.clone(), tcp)
            .await
            .map_err(ConnectError::Tls)?;
        let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
        Ok((gatebench_tls::MaybeTls::Tls(Box::new(tls)), h2))
    }

    /// A fresh HTTP/1.1 connection (ALPN `http/1.1` only) within the connect timeout: what an
    /// upgrade (a WebSocket tunnel) needs, never pooled.
    pub(crate) async fn connect_h1(&self, target: &Target) -> Result<H1Conn, ConnectError> {
        match tokio::time::timeout(self.connect_timeout, self.connect_inner(target, true)).await {
            Err(_) => Err(ConnectError::Timeout),
            Ok(Err(e)) => Err(e),
            Ok(Ok(Sender::H1(conn))) => Ok(conn),
            Ok(Ok(Sender::H2(_))) => {
                Err(ConnectError::Other("the upstream chose HTTP/2".to_owned()))
            }
        }
    }

    /// A fresh HTTP/1.1 connection for an active health check (never a pooled one, so checks
    /// do not count as, or interfere with, client traffic); an error says why there is none.
    pub(crate) async fn connect_for_check(&self, target: &Target) -> Result<H1Conn, String> {
        match self.connect_inner(target, true).await {
            Ok(Sender::H1(conn)) => Ok(conn),
            Ok(Sender::H2(_)) => Err("upstream chose HTTP/2 for a health check".to_owned()),
            Err(error) => Err(error.to_string()),
        }
    }
}

/// Builds a rustls client configuration offering `alpn`.
fn client_config(
    settings: &UpstreamTls,
    alpn: &[&[u8]],
) -> Result<Arc<ClientConfig>, ServicesError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|source| ServicesError::Tls { source })?;
    let mut config = if settings.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(gatebench_tls::AcceptAnyCertificate(
                provider,
            )))
            .with_no_client_auth()
    } else {
        let (roots, found) =
            gatebench_tls::roots(settings.ca_file.as_deref()).map_err(|e| match e {
                gatebench_tls::RootsError::Empty { path } => ServicesError::NoCertificate { path },
                gatebench_tls::RootsError::Invalid { source, .. } => ServicesError::Tls { source },
                gatebench_tls::RootsError::Read { path, source } => {
                    ServicesError::Pem { path, source }
                }
                other => ServicesError::InvalidConfig {
                    reason: other.to_string(),
                },
            })?;
        if found == 0 {
            warn!(
                "no system CA certificates found: HTTPS upstreams will fail verification \
                 (give --upstream-cacert, or --insecure-upstream for self-signed test backends)"
            );
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// An upstream byte stream: cleartext or TLS.
pub(crate) type UpstreamIo = gatebench_tls::MaybeTls;

/// An upstream HTTP/1.1 connection, idle between exchanges.
#[derive(Debug)]
pub(crate) struct H1Conn {
    pub(crate) io: UpstreamIo,
    /// Exchanges completed on it: 0 for a fresh connection.
    pub(crate) uses: u32,
    /// The one timer of the connection (response, write stall and body read deadlines). Kept
    /// for the connection's life: re-arming a registered tokio timer to a later deadline only
    /// updates it in place, where a new timeout per exchange costs a timer-wheel insertion and
    /// removal (about 1.5 % of the proxy's CPU on the 1 KiB benchmark).
    pub(crate) timer: Pin<Box<Sleep>>,
}

impl H1Conn {
    /// A fresh connection over `io`.
    pub(crate) fn new(io: UpstreamIo) -> Self {
        Self {
            io,
            uses: 0,
            timer: Box::pin(tokio::time::sleep(Duration::from_secs(3600))),
        }
    }

    /// True when the connection served an exchange before (so a failure may be staleness).
    pub(crate) fn reused(&self) -> bool {
        self.uses > 0
    }

    /// Checks an idle connection without blocking: the upstream must not have closed it or
    /// sent anything. Costs no system call unless the socket became readable since its last
    /// exchange (tokio only reads when the reactor said so).
    pub(crate) fn alive(&mut self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        let mut probe = [MaybeUninit::<u8>::uninit(); 64];
        let mut buf = ReadBuf::uninit(&mut probe);
        matches!(
            Pin::new(&mut self.io).poll_read(&mut cx, &mut buf),
            Poll::Pending
        )
    }

    /// Sets the connection's timer to `after` from now.
    pub(crate) fn arm(&mut self, after: Duration) {
        self.timer
            .as_mut()
            .reset(tokio::time::Instant::now() + after);
    }

    /// Writes every slice, with `writev` where the stream supports it and there are several; a write that makes no
    /// progress for `stall` fails with `TimedOut` (an upstream that stopped reading). The timer
    /// is armed only when a write has to wait.
    pub(crate) async fn write_all(&mut self, parts: &[&[u8]], stall: Duration) -> io::Result<()> {
        let mut slices: [&[u8]; 4] = [&[]; 4];
        let count = parts.len().min(4);
        slices[..count].copy_from_slice(&parts[..count]);
        let mut index = 0;
        loop {
            while index < count && slices[index].is_empty() {
                index += 1;
            }
            if index == count {
                return Ok(());
            }
            let iov: [IoSlice<'_>; 4] = std::array::from_fn(|i| {
                IoSlice::new(if index + i < count {
                    slices[index + i]
                } else {
                    &[]
                })
            });
            // One piece goes with a plain `send`: cheaper in the kernel than a `writev`.
            let live = slices[index..count]
                .iter()
                .filter(|s| !s.is_empty())
                .count();
            let mut armed = false;
            let mut written = std::future::poll_fn(|cx| {
                let write = if live == 1 {
                    Pin::new(&mut self.io).poll_write(cx, slices[index])
                } else {
                    Pin::new(&mut self.io).poll_write_vectored(cx, &iov[..count - index])
                };
                match write {
                    Poll::Ready(result) => Poll::Ready(result),
                    Poll::Pending => {
                        if !armed {
                            self.timer
                                .as_mut()
                                .reset(tokio::time::Instant::now() + stall);
                            armed = true;
                        }
                        match self.timer.as_mut().poll(cx) {
                            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                                io::ErrorKind::TimedOut,
                                "upstream stopped reading",
                            ))),
                            Poll::Pending => Poll::Pending,
                        }
                    }
                }
            })
            .await?;
            if written == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            while written > 0 {
                let take = written.min(slices[index].len());
                slices[index] = &slices[index][take..];
                written -= take;
                if slices[index].is_empty() {
                    index += 1;
                }
            }
        }
    }
}

/// Hands each thread its own pool shard (thread per core: a connection is then checked out by
/// the thread whose runtime drives it, with no cross-thread wake-ups).
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static SHARD: usize = NEXT_SHARD.fetch_add(1, Ordering::Relaxed);
}

/// Idle keep-alive connections to one upstream.
///
/// Idle connections are closed on their idle timeout even when no request comes to use the
/// pool again: each shard that holds an idle connection has a reaper task on the runtime of
/// the thread that filled it, waking every quarter of the idle timeout (at most every
/// [`REAP_TICK_MAX`]). It drops HTTP/1.1 connections idle longer than the timeout or closed
/// by the upstream (an upstream's close would otherwise leave the proxy's socket in
/// CLOSE_WAIT until the next request, or for ever), and the shared HTTP/2 connection once no
/// request took it for the idle timeout (the h2 client then closes it when its last stream ends and every handle is gone). As
/// nginx's `keepalive_timeout` for upstreams, idle connections do not outlive the timeout by
/// more than a tick. The reaper ends when the shard is empty and is started again by the next
/// connection put back, so an idle proxy has no timer running; requests pay nothing for it
/// beyond a flag read under the shard lock they already take.
#[derive(Debug)]
pub(crate) struct Pool {
    shards: Box<[Arc<Mutex<Shard>>]>,
    idle_timeout: Duration,
    max_idle: usize,
    /// The upstream left the service's set ([`Pool::retire`]): nothing is pooled any more.
    retired: std::sync::atomic::AtomicBool,
}

/// The longest time between two sweeps of a shard's reaper: also bounds how long a socket
/// the upstream closed stays open when the idle timeout is long.
pub(crate) const REAP_TICK_MAX: Duration = Duration::from_secs(5);
/// The shortest time between two sweeps (very short idle timeouts, tests).
const REAP_TICK_MIN: Duration = Duration::from_millis(50);

#[derive(Default)]
struct Shard {
    /// HTTP/1.1 connections, most recently used at the back (taken first: warm connections
    /// stay warm, cold ones age out at the front).
    h1: VecDeque<(H1Conn, Instant)>,
    /// One shared HTTP/2 connection: streams multiplex on it.
    h2: Option<H2Upstream>,
    /// Set by every request that takes the HTTP/2 connection; cleared by the reaper, which
    /// thereby knows since when it has been idle.
    h2_taken: bool,
    /// When the reaper last found the HTTP/2 connection taken (or first saw it).
    h2_idle_since: Option<Instant>,
    /// A reaper task is running for this shard.
    reaper: bool,
}

impl std::fmt::Debug for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shard")
            .field("h1_idle", &self.h1.len())
            .field("h2", &self.h2.is_some())
            .field("reaper", &self.reaper)
            .finish()
    }
}

impl Shard {
    /// Drops what the idle timeout or the upstream closed; false once nothing is left to
    /// watch (the reaper then ends).
    fn reap(&mut self, now: Instant, idle_timeout: Duration) -> bool {
        // Oldest at the front; every one is checked, since any may have been closed by the
        // upstream (`alive` costs no system call unless the socket became readable).
        self.h1.retain_mut(|(conn, since)| {
            now.saturating_duration_since(*since) <= idle_timeout && conn.alive()
        });
        if let Some(h2) = &self.h2 {
            let idle_since = *self.h2_idle_since.get_or_insert(now);
            if h2.is_closed() {
                self.h2 = None;
            } else if std::mem::take(&mut self.h2_taken) {
                self.h2_idle_since = Some(now);
            } else if now.saturating_duration_since(idle_since) >= idle_timeout {
                debug!(
                    side = "upstream",
                    "idle HTTP/2 upstream connection released"
                );
                self.h2 = None;
            }
        }
        if self.h2.is_none() {
            self.h2_taken = false;
            self.h2_idle_since = None;
        }
        !self.h1.is_empty() || self.h2.is_some()
    }
}

impl Pool {
    /// A pool with `shards` shards (the number of serving threads), closing connections idle
    /// for `idle_timeout` and keeping at most `max_idle` per shard.
    pub(crate) fn new(shards: usize, idle_timeout: Duration, max_idle: usize) -> Self {
        Self {
            shards: (0..shards.max(1)).map(|_| Arc::default()).collect(),
            idle_timeout,
            max_idle,
            retired: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The upstream left the service's set (a reload): its idle connections close now, and
    /// those busy with an exchange close when it ends instead of coming back. HTTP/2
    /// connections close once their last stream ends.
    pub(crate) fn retire(&self) {
        self.retired
            .store(true, std::sync::atomic::Ordering::Relaxed);
        for shard in self.shards.iter() {
            let mut s = lock(shard);
            s.h1.clear();
            s.h2 = None;
        }
    }

    fn is_retired(&self) -> bool {
        self.retired.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The current thread's shard.
    pub(crate) fn shard(&self) -> usize {
        SHARD.with(|s| *s) % self.shards.len()
    }

    fn lock(&self, shard: usize) -> MutexGuard<'_, Shard> {
        lock(&self.shards[shard])
    }

    /// A live pooled connection, if there is one. HTTP/1.1 connections are checked without
    /// blocking (see [`H1Conn::alive`]); closed or expired ones are dropped on the way.
    pub(crate) fn take(&self, shard: usize) -> Option<Sender> {
        let mut s = self.lock(shard);
        if let Some(h2) = &s.h2 {
            if !h2.is_closed() {
                let sender = Sender::H2(h2.clone());
                s.h2_taken = true;
                return Some(sender);
            }
            s.h2 = None;
        }
        while let Some((mut conn, since)) = s.h1.pop_back() {
            if since.elapsed() <= self.idle_timeout && conn.alive() {
                return Some(Sender::H1(conn));
            }
        }
        None
    }

    /// Returns an HTTP/1.1 connection whose exchange completed.
    pub(crate) fn put_h1(&self, shard: usize, conn: H1Conn) {
        let now = Instant::now();
        let mut s = self.lock(shard);
        // Read under the lock `retire` takes: a connection put back after it is closed.
        if self.is_retired() {
            return;
        }
        while let Some((_, since)) = s.h1.front() {
            if now.duration_since(*since) <= self.idle_timeout && s.h1.len() < self.max_idle {
                break;
            }
            s.h1.pop_front();
        }
        if self.max_idle > 0 {
            s.h1.push_back((conn, now));
            self.watch(shard, &mut s);
        }
    }

    /// Offers a new HTTP/2 connection for sharing; kept unless a live one is already there.
    pub(crate) fn put_h2(&self, shard: usize, sender: &H2Upstream) {
        let mut s = self.lock(shard);
        if self.is_retired() {
            return;
        }
        if s.h2.as_ref().is_none_or(|h2| h2.is_closed()) {
            s.h2 = Some(sender.clone());
            s.h2_taken = true;
            self.watch(shard, &mut s);
        }
    }

    /// Starts the shard's reaper unless it runs (or no runtime is there to run it: then
    /// connections expire only when the pool is next used).
    fn watch(&self, shard: usize, s: &mut Shard) {
        if s.reaper {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        s.reaper = true;
        let weak = Arc::downgrade(&self.shards[shard]);
        let idle_timeout = self.idle_timeout;
        let tick = (idle_timeout / 4).clamp(REAP_TICK_MIN, REAP_TICK_MAX);
        runtime.spawn(async move {
            loop {
                tokio::time::sleep(tick).await;
                // The pool is gone (the service stopped): nothing left to reap.
                let Some(shard) = weak.upgrade() else { return };
                let mut s = lock(&shard);
                if !s.reap(Instant::now(), idle_timeout) {
                    s.reaper = false;
                    return;
                }
            }
        });
    }
}

fn lock(shard: &Mutex<Shard>) -> MutexGuard<'_, Shard> {
    shard
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_urls() {
        let t = Target::parse("http://127.0.0.1:8688").unwrap();
        assert!(!t.https);
        assert_eq!(t.addrs, vec!["127.0.0.1:8688".parse().unwrap()]);
        assert_eq!(t.host_header, "127.0.0.1:8688");
        let t = Target::parse("https://localhost/").unwrap();
        assert!(t.https && !t.h2c);
        assert!(t.addrs.iter().all(|a| a.port() == 443));
        let t = Target::parse("h2c://127.0.0.1:50051").unwrap();
        assert!(t.h2c && !t.https);
        assert_eq!(t.scheme, Scheme::HTTP);
        for bad in [
            "ftp://a",
            "127.0.0.1:80",
            "http://a/prefix",
            "http://a/?q",
            "http://u@a",
            "nonsense",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }
}
