//! Test support: the services on the test's runtime, a raw HTTP/1 client, a capturing raw TCP
//! upstream (the oracle for what an upstream actually received), TLS and HTTP/2 helpers.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use gatebench_services::echo::{self, EchoConfig};
use gatebench_services::{
    balance, proxy, transform, BalanceConfig, ProxyConfig, ServicesError, Timeouts, TlsSettings,
    TransformConfig,
};
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// Upper bound for anything that should be quick; reached only when something hangs.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// A service running on the test's runtime.
pub struct Running {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), ServicesError>>,
}

type Stopped = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

impl Running {
    async fn spawn<F, Fut>(serve: F) -> Self
    where
        F: FnOnce(TcpListener, Stopped) -> Fut,
        Fut: Future<Output = Result<(), ServicesError>> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(
            listener,
            Box::pin(async {
                let _ = stopped.await;
            }),
        ));
        Running {
            addr,
            stop: Some(stop),
            task,
        }
    }

    pub async fn echo(config: EchoConfig) -> Self {
        Self::spawn(|l, s| echo::serve(l, config, s)).await
    }

    pub async fn echo_with(config: EchoConfig, limits: echo::EchoLimits) -> Self {
        Self::spawn(|l, s| echo::serve_with(l, config, limits, s)).await
    }

    pub async fn proxy(config: ProxyConfig) -> Self {
        Self::spawn(|l, s| proxy::serve(l, config, s)).await
    }

    pub async fn balance(config: BalanceConfig) -> Self {
        Self::spawn(|l, s| balance::serve(l, config, s)).await
    }

    pub async fn transform(config: TransformConfig) -> Self {
        Self::spawn(|l, s| transform::serve(l, config, s)).await
    }

    pub fn url(&self, https: bool) -> String {
        format!("{}://{}", if https { "https" } else { "http" }, self.addr)
    }

    pub fn signal_stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    pub async fn stop(mut self) {
        self.signal_stop();
        tokio::time::timeout(PATIENCE, self.task)
            .await
            .expect("serve returned after shutdown")
            .unwrap()
            .unwrap();
    }

    pub async fn connect(&self) -> Conn<TcpStream> {
        Conn::new(TcpStream::connect(self.addr).await.unwrap())
    }
}

pub fn echo_config() -> EchoConfig {
    EchoConfig {
        threads: 1,
        ..EchoConfig::default()
    }
}

/// Short timeouts, so that fault tests finish quickly.
pub fn timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(2),
        response: Duration::from_millis(800),
        upstream_read: Duration::from_millis(800),
        client_header: Duration::from_millis(800),
        client_body: Duration::from_millis(800),
        client_idle: Duration::from_secs(5),
        client_send: Duration::from_secs(5),
    }
}

pub fn proxy_config(upstream: String) -> ProxyConfig {
    ProxyConfig {
        threads: 1,
        timeouts: timeouts(),
        ..ProxyConfig::new(vec![upstream])
    }
}

/// One parsed HTTP/1 response.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// False when the connection ended before the body did (a truncated message).
    pub complete: bool,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn has(&self, name: &str) -> bool {
        self.header(name).is_some()
    }
}

/// A raw HTTP/1 client connection: writes literal bytes, parses answers of every framing.
pub struct Conn<S> {
    pub stream: S,
    buf: Vec<u8>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Conn<S> {
    pub fn new(stream: S) -> Self {
        Conn {
            stream,
            buf: Vec::new(),
        }
    }

    pub async fn send(&mut self, raw: &[u8]) {
        self.stream.write_all(raw).await.unwrap();
    }

    /// Reads more bytes into the buffer; false on EOF or reset.
    async fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 16 * 1024];
        let n = tokio::time::timeout(PATIENCE, self.stream.read(&mut chunk))
            .await
            .expect("the server answered in time")
            .unwrap_or(0);
        self.buf.extend_from_slice(&chunk[..n]);
        n > 0
    }

    /// Reads one response (`head`: it answers a HEAD request).
    pub async fn answer(&mut self, head: bool) -> Answer {
        let head_end = loop {
            if let Some(pos) = find(&self.buf, b"\r\n\r\n") {
                break pos;
            }
            assert!(
                self.fill().await,
                "connection closed before a response head (got {:?})",
                String::from_utf8_lossy(&self.buf)
            );
        };
        let text = String::from_utf8(self.buf[..head_end].to_vec()).unwrap();
        self.buf.drain(..head_end + 4);
        let mut lines = text.split("\r\n");
        let status = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers: Vec<(String, String)> = lines
            .map(|line| {
                let (name, value) = line.split_once(':').unwrap();
                (name.to_owned(), value.trim().to_owned())
            })
            .collect();
        let mut answer = Answer {
            status,
            headers,
            body: Vec::new(),
            complete: true,
        };
        if head || status == 204 || status == 304 {
            return answer;
        }
        if answer
            .header("transfer-encoding")
            .is_some_and(|te| te.eq_ignore_ascii_case("chunked"))
        {
            loop {
                let line_end = loop {
                    if let Some(pos) = find(&self.buf, b"\r\n") {
                        break pos;
                    }
                    if !self.fill().await {
                        answer.complete = false;
                        return answer;
                    }
                };
                let line = String::from_utf8_lossy(&self.buf[..line_end]).to_string();
                let size = usize::from_str_radix(line.split(';').next().unwrap(), 16).unwrap();
                self.buf.drain(..line_end + 2);
                while self.buf.len() < size + 2 {
                    if !self.fill().await {
                        answer.body.extend_from_slice(&self.buf);
                        answer.complete = false;
                        return answer;
                    }
                }
                answer.body.extend_from_slice(&self.buf[..size]);
                self.buf.drain(..size + 2);
                if size == 0 {
                    // No trailers are expected here.
                    return answer;
                }
            }
        }
        match answer.header("content-length") {
            Some(len) => {
                let len: usize = len.parse().unwrap();
                while self.buf.len() < len {
                    if !self.fill().await {
                        answer.body = std::mem::take(&mut self.buf);
                        answer.complete = false;
                        return answer;
                    }
                }
                answer.body = self.buf.drain(..len).collect();
            }
            None => {
                while self.fill().await {}
                answer.body = std::mem::take(&mut self.buf);
            }
        }
        answer
    }

    pub async fn request(&mut self, raw: &[u8]) -> Answer {
        self.send(raw).await;
        self.answer(raw.starts_with(b"HEAD ")).await
    }

    /// True when the server closes the connection (EOF or reset) within [`PATIENCE`].
    pub async fn closed(&mut self) -> bool {
        self.closed_within(PATIENCE).await
    }

    pub async fn closed_within(&mut self, patience: Duration) -> bool {
        let mut chunk = [0u8; 1024];
        loop {
            match tokio::time::timeout(patience, self.stream.read(&mut chunk)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => continue,
                Err(_) => return false,
            }
        }
    }
}

/// A URL whose port refuses connections while the socket returned with it lives: bound, never
/// listening, so no other test's server can take the port meanwhile.
pub fn refused_url() -> (String, socket2::Socket) {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    s.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    let addr = s.local_addr().unwrap().as_socket().unwrap();
    (format!("http://{addr}"), s)
}

pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    find(haystack, needle).is_some()
}

pub fn post(path: &str, body: &[u8]) -> Vec<u8> {
    let mut raw = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(body);
    raw
}

pub const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";

/// What a capturing upstream does after each request it reads.
#[derive(Clone, Debug)]
pub enum Reply {
    /// `200` with body `ok`, keep-alive.
    Ok,
    /// These bytes, keep the connection.
    Raw(Vec<u8>),
    /// These bytes, then close.
    RawThenClose(Vec<u8>),
    /// These bytes, then hold the connection open without sending more.
    RawThenHang(Vec<u8>),
    /// Read requests, never answer.
    Hang,
    /// Reset (RST) after the request.
    Reset,
    /// `200 ok` without `Connection: close`, then close: the next pooled use finds it stale.
    OkThenClose,
    /// `/health` answers the status in the cell, everything else `200 ok`.
    Health(Arc<AtomicU16>),
    /// As soon as a request head is in, these bytes, then close without reading the body.
    EarlyThenClose(Vec<u8>),
}

/// A raw TCP upstream that records every byte it receives and answers by script.
pub struct Capture {
    pub addr: SocketAddr,
    /// Every connection's received bytes, in accept order.
    pub received: Arc<Mutex<Vec<Vec<u8>>>>,
    /// Requests read that were not health checks.
    pub requests: Arc<AtomicUsize>,
    /// Health-check requests read.
    pub health_checks: Arc<AtomicUsize>,
    pub connections: Arc<AtomicUsize>,
    /// Connections the proxy closed.
    pub closed_by_peer: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Capture {
    pub async fn start(reply: Reply) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let requests = Arc::new(AtomicUsize::new(0));
        let health_checks = Arc::new(AtomicUsize::new(0));
        let connections = Arc::new(AtomicUsize::new(0));
        let closed_by_peer = Arc::new(AtomicUsize::new(0));
        let state = (
            received.clone(),
            requests.clone(),
            health_checks.clone(),
            connections.clone(),
            closed_by_peer.clone(),
        );
        let task = tokio::spawn(async move {
            let mut tasks = tokio::task::JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let index = {
                    let mut all = state.0.lock().unwrap();
                    all.push(Vec::new());
                    all.len() - 1
                };
                state.3.fetch_add(1, Ordering::SeqCst);
                let state = state.clone();
                let reply = reply.clone();
                tasks.spawn(async move {
                    capture_connection(stream, index, reply, state).await;
                });
            }
        });
        Capture {
            addr,
            received,
            requests,
            health_checks,
            connections,
            closed_by_peer,
            task,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Everything received, all connections concatenated.
    pub fn all_bytes(&self) -> Vec<u8> {
        self.received.lock().unwrap().concat()
    }

    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

type CaptureState = (
    Arc<Mutex<Vec<Vec<u8>>>>,
    Arc<AtomicUsize>,
    Arc<AtomicUsize>,
    Arc<AtomicUsize>,
    Arc<AtomicUsize>,
);

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

async fn capture_connection(
    mut stream: TcpStream,
    index: usize,
    reply: Reply,
    state: CaptureState,
) {
    let mut buf = Vec::new();
    if let Reply::EarlyThenClose(bytes) = &reply {
        let mut chunk = [0u8; 16 * 1024];
        while find(&buf, b"\r\n\r\n").is_none() {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        state.0.lock().unwrap()[index].extend_from_slice(&buf);
        state.1.fetch_add(1, Ordering::SeqCst);
        let _ = stream.write_all(bytes).await;
        return;
    }
    loop {
        let Some((request_len, head)) = read_request(&mut stream, &mut buf, index, &state).await
        else {
            state.4.fetch_add(1, Ordering::SeqCst);
            return;
        };
        buf.drain(..request_len);
        let health = head.starts_with("GET /health ");
        if health {
            state.2.fetch_add(1, Ordering::SeqCst);
        } else {
            state.1.fetch_add(1, Ordering::SeqCst);
        }
        let write = |bytes: Vec<u8>| bytes;
        match &reply {
            Reply::Ok => {
                if stream.write_all(OK).await.is_err() {
                    return;
                }
            }
            Reply::Raw(bytes) => {
                if stream.write_all(&write(bytes.clone())).await.is_err() {
                    return;
                }
            }
            Reply::RawThenClose(bytes) => {
                let _ = stream.write_all(bytes).await;
                return;
            }
            Reply::RawThenHang(bytes) => {
                let _ = stream.write_all(bytes).await;
                let mut sink = [0u8; 1024];
                while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
                return;
            }
            Reply::Hang => {}
            Reply::Reset => {
                let _ = stream.set_zero_linger();
                return;
            }
            Reply::OkThenClose => {
                let _ = stream.write_all(OK).await;
                return;
            }
            Reply::EarlyThenClose(_) => unreachable!("handled before the loop"),
            Reply::Health(status) => {
                let bytes = if health {
                    let code = status.load(Ordering::SeqCst);
                    format!("HTTP/1.1 {code} X\r\nContent-Length: 0\r\n\r\n").into_bytes()
                } else {
                    OK.to_vec()
                };
                if stream.write_all(&bytes).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Reads one request (head, then a Content-Length or chunked body); returns its length in
/// `buf` and its head, or `None` at EOF.
async fn read_request(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    index: usize,
    state: &CaptureState,
) -> Option<(usize, String)> {
    let mut fill = async |buf: &mut Vec<u8>| -> bool {
        let mut chunk = [0u8; 16 * 1024];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                state.0.lock().unwrap()[index].extend_from_slice(&chunk[..n]);
                true
            }
        }
    };
    let head_end = loop {
        if let Some(pos) = find(buf, b"\r\n\r\n") {
            break pos + 4;
        }
        if !fill(buf).await {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let lower = head.to_ascii_lowercase();
    if lower.contains("transfer-encoding: chunked") {
        let mut pos = head_end;
        loop {
            let line_end = loop {
                if let Some(p) = find(&buf[pos..], b"\r\n") {
                    break pos + p;
                }
                if !fill(buf).await {
                    return None;
                }
            };
            let line = String::from_utf8_lossy(&buf[pos..line_end]).to_string();
            let size = usize::from_str_radix(line.split(';').next().unwrap_or("x"), 16).ok()?;
            pos = line_end + 2;
            if size == 0 {
                loop {
                    if let Some(p) = find(&buf[pos - 2..], b"\r\n\r\n") {
                        return Some((pos - 2 + p + 4, head));
                    }
                    if !fill(buf).await {
                        return None;
                    }
                }
            }
            while buf.len() < pos + size + 2 {
                if !fill(buf).await {
                    return None;
                }
            }
            pos += size + 2;
        }
    }
    let len = lower
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse::<usize>().unwrap());
    while buf.len() < head_end + len {
        if !fill(buf).await {
            return None;
        }
    }
    Some((head_end + len, head))
}

/// A certificate and key written to a temp dir, with the PEM for clients to trust.
pub struct Cert {
    pub settings: TlsSettings,
    pub pem: String,
    pub dir: PathBuf,
}

pub fn cert(tag: &str) -> Cert {
    let cert = gatebench_services::tls::generate_self_signed().unwrap();
    let dir = std::env::temp_dir().join(format!(
        "gatebench-intermediaries-{}-{tag}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cert.pem"), &cert.cert_pem).unwrap();
    std::fs::write(dir.join("key.pem"), &cert.key_pem).unwrap();
    Cert {
        settings: TlsSettings {
            cert_pem_path: Some(dir.join("cert.pem")),
            key_pem_path: Some(dir.join("key.pem")),
        },
        pem: cert.cert_pem,
        dir,
    }
}

impl Cert {
    /// A TLS acceptor serving this certificate that offers only `h2` by ALPN: a test's own
    /// HTTP/2 upstream.
    pub fn h2_acceptor(&self) -> tokio_rustls::TlsAcceptor {
        let certs = vec![CertificateDer::from_pem_slice(self.pem.as_bytes()).unwrap()];
        let key =
            rustls::pki_types::PrivateKeyDer::from_pem_file(self.dir.join("key.pem")).unwrap();
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
        config.alpn_protocols = vec![b"h2".to_vec()];
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    }
}

/// A TLS handshake trusting only `cert_pem`, offering `alpn`.
pub async fn tls_connect(addr: SocketAddr, cert_pem: &str, alpn: &[&[u8]]) -> TlsStream<TcpStream> {
    try_tls_connect(addr, Some(cert_pem), alpn)
        .await
        .expect("TLS handshake")
}

/// A TLS handshake trusting only `cert_pem` (nothing at all when `None`), offering `alpn`; the
/// handshake's error is the caller's to check.
pub async fn try_tls_connect(
    addr: SocketAddr,
    cert_pem: Option<&str>,
    alpn: &[&[u8]],
) -> std::io::Result<TlsStream<TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(cert_pem) = cert_pem {
        roots
            .add(CertificateDer::from_pem_slice(cert_pem.as_bytes()).unwrap())
            .unwrap();
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = TcpStream::connect(addr).await.unwrap();
    TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
}

/// An HTTP/2 client over any stream.
pub struct H2 {
    pub send: hyper::client::conn::http2::SendRequest<Full<Bytes>>,
}

/// One HTTP/2 answer; `body` is `Err` when the stream was reset mid-body.
#[derive(Debug)]
pub struct H2Answer {
    pub status: u16,
    pub version: http::Version,
    pub headers: http::HeaderMap,
    pub body: Result<Vec<u8>, String>,
}

impl H2 {
    pub async fn handshake<S>(stream: S) -> Self
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (send, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await
                .expect("HTTP/2 handshake");
        tokio::spawn(conn);
        H2 { send }
    }

    pub async fn request(&mut self, method: &str, path: &str, body: &[u8]) -> H2Answer {
        let req = Request::builder()
            .method(method)
            .uri(format!("https://localhost{path}"))
            .header("content-type", "application/octet-stream")
            .body(Full::new(Bytes::copy_from_slice(body)))
            .unwrap();
        self.send_request(req).await
    }

    pub async fn send_request(&mut self, req: Request<Full<Bytes>>) -> H2Answer {
        let response = tokio::time::timeout(PATIENCE, self.send.send_request(req))
            .await
            .expect("HTTP/2 answer in time")
            .expect("HTTP/2 answer");
        let (parts, body) = response.into_parts();
        let body = tokio::time::timeout(PATIENCE, body.collect())
            .await
            .expect("HTTP/2 body in time")
            .map(|b| b.to_bytes().to_vec())
            .map_err(|e| format!("{e:?}"));
        H2Answer {
            status: parts.status.as_u16(),
            version: parts.version,
            headers: parts.headers,
            body,
        }
    }
}
