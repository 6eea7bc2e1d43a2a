//! The passthrough reverse proxy (seed 004's passthrough scenarios: h1c→h1c, h1→h1, h2→h2,
//! h2→h1, h2→h1c and the downgrade), and the request path the balancer and the transform share.
//!
//! One request goes: the client's connection served by `h1::server` (HTTP/1.x, heads and body
//! framing checked by `h1::check`'s rules) or `h2::server` (HTTP/2, framing checked by h2) → the
//! proxy's own answers (health endpoint, refused heads, loops) → hop-by-hop fields removed, `Via` and `X-Forwarded-For` added
//! (`headers`, RFC 9110 §7.6) → upstream chosen, connection taken from the pool or made, request
//! sent, retried where docs/behaviour.md allows (`forward`) → response checked, stripped, streamed
//! back (`body`). Bodies stream in both directions; nothing is buffered whole except by the
//! transform.
//!
//! The proxy answers `GET /__gatebench/health` itself (200 `ok`; the balancer says how many
//! upstreams are eligible and answers 503 when none is). Every other path is forwarded.
//!
//! Interim (1xx) responses of the upstream reach the client before the final response (RFC
//! 9110 §15.2): an HTTP/1.1 client through its connection's `interim::Interim` queue, which
//! `h1::server` writes between responses, an HTTP/2 client as 1xx HEADERS on the request's stream
//! (`h2::server`); hyper's servers cannot send them. They are read
//! from HTTP/1.1 upstreams by `h1::client` and from HTTP/2 upstreams by h2's client (`forward`),
//! which, unlike hyper's, surfaces them. `Expect: 100-continue` from an HTTP/1.1 client is
//! answered by the proxy itself (`h1::server`, as the body is first read) and not forwarded.
//!
//! An HTTP/1.1 `Upgrade` request (WebSocket) is passed to an upstream on a connection of its
//! own and, on its `101`, the two connections are spliced (`tunnel`); the transform does not.
//! `h2c://` upstreams are spoken to in HTTP/2 by prior knowledge (gRPC passes end to end).
//!
//! What it does not do: caching, header rewriting beyond the intermediary rules, CONNECT
//! (405) or RFC 8441's extended CONNECT from HTTP/2 clients, retries of requests with a body
//! once any of it was sent.

pub(crate) mod forward;
pub(crate) mod headers;
pub mod reload;
mod to_xml;
mod tunnel;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CONNECTION, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode, Version};
use hyper::body::Body;
use tokio::net::TcpListener;
use tracing::info;

use crate::balancer::{Balancer, EjectionConfig, HealthConfig, Members};
use crate::error::ServicesError;
use crate::failure::{log_failure, Failure};
use crate::json_xml::JsonXmlLimits;
use crate::protocol::body::{ClientBody, ResBody, UpBody};
use crate::protocol::h1::check::H1Limits;
use crate::protocol::h1::server::H1Handler;
use crate::protocol::h2::server::H2Handler;
use crate::protocol::interim::{H2Interim, Interim, InterimTarget};
use crate::protocol::Answer;
use crate::proxy::forward::{error_response, Outgoing};
use crate::proxy::headers::Via;
use crate::server::{self, ConnInfo, ListenOptions, Protocols};
use crate::tls::{self, TlsSettings};
use crate::upstream::{Connector, Pool, Target};

pub use crate::upstream::UpstreamTls;

/// The path the intermediaries answer themselves.
pub const HEALTH_PATH: &str = "/__gatebench/health";
/// RFC 9209's response field naming the proxy and the error type of its own error answers.
pub(crate) const PROXY_STATUS: HeaderName = HeaderName::from_static("proxy-status");

/// Timeouts of both sides. Defaults follow nginx's and HAProxy's usual settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeouts {
    /// New upstream connection: TCP, TLS and HTTP handshakes together (504 beyond).
    pub connect: Duration,
    /// From sending a request to the upstream's response head (504 beyond).
    pub response: Duration,
    /// Longest silence inside an upstream response body (the client's message is then cut).
    pub upstream_read: Duration,
    /// Total time for a client's request head, from its first byte (408 beyond: slowloris).
    pub client_header: Duration,
    /// Longest silence inside a client's request body (then the request fails, 408).
    pub client_body: Duration,
    /// A client connection with no request in progress is closed quietly after this (HTTP/2:
    /// after GOAWAY), counted from its start too: a client that never sends its first request
    /// (or its HTTP/2 preface) is closed as one that goes idle.
    pub client_idle: Duration,
    /// Longest wait for a client to take the next response bytes (HTTP/1.x: one write;
    /// HTTP/2: one piece of the body, as its window allows); then its connection (HTTP/2: its
    /// stream) is cut and the upstream connection is let go.
    pub client_send: Duration,
}

impl Default for Timeouts {
    /// Connect 5 s; response 60 s and upstream read 60 s (nginx `proxy_read_timeout`); client
    /// head 10 s (HAProxy `timeout http-request`); client body 60 s (nginx
    /// `client_body_timeout`); idle keep-alive 60 s; send 60 s (nginx `send_timeout`).
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(5),
            response: Duration::from_secs(60),
            upstream_read: Duration::from_secs(60),
            client_header: Duration::from_secs(10),
            client_body: Duration::from_secs(60),
            client_idle: Duration::from_secs(60),
            client_send: Duration::from_secs(60),
        }
    }
}

/// Configuration shared by the proxy, the balancer and the transform.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Upstream URLs (`http://host:port` or `https://…`, no path); the proxy and the
    /// transform take exactly one.
    pub upstreams: Vec<String>,
    /// The file the upstreams were read from ([`reload::read_upstreams`]): read again on
    /// SIGHUP, and its new set served from then on ([`reload`]). `None`: no reloads.
    pub upstreams_file: Option<PathBuf>,
    /// Worker threads used by `run_blocking` (at least 1); ignored by `serve`.
    pub threads: usize,
    /// Serve TLS instead of cleartext.
    pub tls: Option<TlsSettings>,
    /// Also serve HTTP/2 (ALPN over TLS, prior knowledge on cleartext).
    pub http2: bool,
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced to HTTP/2 clients (at least 1).
    pub h2_max_streams: u32,
    /// How HTTPS upstreams are verified and which protocols are offered to them.
    pub upstream_tls: UpstreamTls,
    /// Timeouts of both sides.
    pub timeouts: Timeouts,
    /// Largest request body (413 beyond, as soon as known, also mid-chunked).
    pub max_body: u64,
    /// Largest request head and trailer section (431 beyond); also the largest upstream
    /// response head (502 beyond).
    pub max_head: usize,
    /// Longest request line (414 beyond).
    pub max_request_line: usize,
    /// Upstreams one request may try (1..=16).
    pub tries: usize,
    /// Pooled upstream connections idle longer than this are closed.
    pub pool_idle_timeout: Duration,
    /// Idle connections kept per upstream and thread.
    pub pool_max_idle: usize,
    /// A fixed wait before each request is forwarded (`serve --delay`): the cost of a slower
    /// build emulated, so that a series of versions with a known change can be made (0 by
    /// default; the health endpoint never waits). Timers tick in milliseconds.
    pub added_delay: Duration,
    /// CPU spent on each request before it is forwarded, in a busy loop (`serve --work`): a
    /// slower build's per-request work emulated, below the timer's millisecond (0 by default).
    pub added_work: Duration,
    /// Most client connections served at once (at least 1); further clients wait in the
    /// accept queue until one ends.
    pub max_connections: usize,
}

impl ProxyConfig {
    /// Defaults around `upstreams`: one thread per core, cleartext HTTP/1.1, verified HTTPS
    /// upstreams, the default [`Timeouts`], 16 MiB bodies, 16 KiB heads, 8 KiB request lines,
    /// 3 tries, pooled connections kept 30 s idle, at most 1024 per upstream and thread, at
    /// most 10,000 client connections (or half the open-files limit, if lower).
    pub fn new(upstreams: Vec<String>) -> Self {
        Self {
            upstreams,
            upstreams_file: None,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            tls: None,
            http2: false,
            h2_max_streams: 256,
            upstream_tls: UpstreamTls::default(),
            timeouts: Timeouts::default(),
            max_body: 16 * 1024 * 1024,
            max_head: 16 * 1024,
            max_request_line: 8 * 1024,
            tries: 3,
            pool_idle_timeout: Duration::from_secs(30),
            pool_max_idle: 1024,
            added_delay: Duration::ZERO,
            added_work: Duration::ZERO,
            max_connections: server::default_max_connections(),
        }
    }
}

impl ProxyConfig {
    /// Checks the configuration as the passthrough proxy's (exactly one upstream). The
    /// balancer's and the transform's are checked by `BalanceConfig::validate` and
    /// `TransformConfig::validate`. Every service checks again before it serves; a front end
    /// calls this to refuse bad options before it binds anything.
    pub fn validate(&self) -> Result<(), ServicesError> {
        self.validate_for(&Intermediary::Proxy)
    }

    /// Checks the configuration as `kind`'s: its fields, the number of upstreams the kind
    /// takes, and the kind's own settings (health checks, ejection).
    pub(crate) fn validate_for(&self, kind: &Intermediary) -> Result<(), ServicesError> {
        if self.upstreams.is_empty() {
            return Err(ServicesError::invalid(
                "upstreams",
                "is missing: at least one upstream URL is needed",
            ));
        }
        if !matches!(kind, Intermediary::Balance { .. }) && self.upstreams.len() > 1 {
            return Err(ServicesError::invalid(
                "upstreams",
                format!(
                    "takes one URL for the {} (use balance for several)",
                    kind.name()
                ),
            ));
        }
        server::check_threads(self.threads)?;
        server::check_max_connections(self.max_connections)?;
        if self.h2_max_streams == 0 {
            return Err(ServicesError::invalid(
                "h2_max_streams",
                "must be at least 1",
            ));
        }
        if !(1..=forward::MAX_TRIES).contains(&self.tries) {
            return Err(ServicesError::invalid(
                "tries",
                format!("must be 1 to {}", forward::MAX_TRIES),
            ));
        }
        if self.max_head < 1024 {
            return Err(ServicesError::invalid(
                "max_head",
                "must be at least 1024 bytes",
            ));
        }
        if self.max_request_line < 64 {
            return Err(ServicesError::invalid(
                "max_request_line",
                "must be at least 64 bytes",
            ));
        }
        if self.timeouts.client_header.is_zero() {
            return Err(ServicesError::invalid(
                "timeouts.client_header",
                "must be above zero",
            ));
        }
        // Zero would cut every client whose first write has to wait.
        if self.timeouts.client_send.is_zero() {
            return Err(ServicesError::invalid(
                "timeouts.client_send",
                "must be above zero",
            ));
        }
        if let Intermediary::Balance { health, ejection } = kind {
            if let Some(health) = health {
                health.validate()?;
            }
            if let Some(ejection) = ejection {
                ejection.validate()?;
            }
        }
        Ok(())
    }
}

/// Which intermediary serves, with what distinguishes it from the other two.
#[derive(Debug, Clone)]
pub(crate) enum Intermediary {
    /// The passthrough proxy: one upstream.
    Proxy,
    /// The balancer: any number of upstreams, optional active health checks and passive
    /// ejection; its health endpoint reports the upstreams.
    Balance {
        /// Active health checks, if on.
        health: Option<HealthConfig>,
        /// Passive ejection, if on.
        ejection: Option<EjectionConfig>,
    },
    /// The JSON → XML transform: one upstream, request bodies converted (`to_xml`).
    Transform {
        /// The converter's limits.
        limits: JsonXmlLimits,
    },
}

impl Intermediary {
    /// The service's name, as logs and errors say it.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Intermediary::Proxy => "proxy",
            Intermediary::Balance { .. } => "balance",
            Intermediary::Transform { .. } => "transform",
        }
    }

    /// Passive ejection, if on (the balancer's).
    fn ejection(&self) -> Option<EjectionConfig> {
        match self {
            Intermediary::Balance { ejection, .. } => ejection.clone(),
            _ => None,
        }
    }

    fn health(&self) -> Option<HealthConfig> {
        match self {
            Intermediary::Balance { health, .. } => health.clone(),
            _ => None,
        }
    }
}

/// Serves the passthrough proxy on `listener`, on the caller's runtime, until `shutdown`
/// resolves; then stops accepting, lets in-flight requests finish (at most 5 s) and returns.
/// Fails only before serving starts (invalid configuration, unreadable certificate).
pub async fn serve(
    listener: TcpListener,
    config: ProxyConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServicesError> {
    serve_kind(listener, &config, Intermediary::Proxy, shutdown).await
}

/// Blocking form of [`serve`]: serves on the already-bound `listener` with `config.threads`
/// threads (thread per core, as the echo backend) until `shutdown` resolves, then drains.
pub fn run_blocking(
    listener: std::net::TcpListener,
    config: ProxyConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServicesError> {
    run_blocking_kind(listener, &config, Intermediary::Proxy, shutdown)
}

pub(crate) async fn serve_kind(
    listener: TcpListener,
    config: &ProxyConfig,
    kind: Intermediary,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServicesError> {
    let health = kind.health();
    let (protocols, shared) = prepare(config, kind, 1)?;
    log_start(config, &shared, listener.local_addr().ok(), None);
    let checks = health.map(|health| {
        tokio::spawn(
            shared
                .members
                .clone()
                .run_health_checks(shared.connector.clone(), health),
        )
    });
    let reloads = reload::on_sighup(&shared, config)?.map(tokio::spawn);
    let make = move |conn: ConnInfo| Arc::new(Proxy::new(shared.clone(), conn));
    server::serve(listener, protocols, make, shutdown).await;
    for task in [checks, reloads].into_iter().flatten() {
        task.abort();
    }
    Ok(())
}

pub(crate) fn run_blocking_kind(
    listener: std::net::TcpListener,
    config: &ProxyConfig,
    kind: Intermediary,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServicesError> {
    let health = kind.health();
    let (protocols, shared) = prepare(config, kind, config.threads)?;
    log_start(
        config,
        &shared,
        listener.local_addr().ok(),
        Some(config.threads),
    );
    let checks = health.map(|health| {
        shared
            .members
            .clone()
            .run_health_checks(shared.connector.clone(), health)
    });
    let reloads = reload::on_sighup(&shared, config)?;
    // Health checks and reloads run on the calling thread's runtime, beside the shutdown
    // signal (the SIGHUP stream is made on it too).
    let shutdown = async move {
        let checks = async move {
            match checks {
                Some(checks) => checks.await,
                None => std::future::pending().await,
            }
        };
        let reloads = async move {
            match reloads {
                Some(reloads) => reloads.await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = shutdown => {}
            () = checks => {}
            () = reloads => {}
        }
    };
    let make = move |conn: ConnInfo| Arc::new(Proxy::new(shared.clone(), conn));
    server::run_blocking(listener, config.threads, protocols, make, shutdown)
}

fn log_start(
    config: &ProxyConfig,
    shared: &Shared,
    addr: Option<std::net::SocketAddr>,
    threads: Option<usize>,
) {
    info!(
        service = shared.kind.name(),
        addr = ?addr,
        threads = ?threads,
        upstreams = ?config.upstreams,
        tls = config.tls.is_some(),
        http2 = config.http2,
        via = %shared.via.token,
        "{} listening", shared.kind.name(),
    );
}

/// What every connection of one intermediary shares.
#[derive(Debug)]
pub(crate) struct Shared {
    /// Which intermediary this is.
    pub kind: Intermediary,
    /// The current upstreams; replaced by a reload.
    pub members: Arc<Members>,
    /// Makes the pool of an upstream a reload adds.
    pub new_pool: PoolShape,
    pub connector: Arc<Connector>,
    pub timeouts: Timeouts,
    pub max_body: u64,
    /// Largest upstream response head (502 beyond).
    pub max_response_head: usize,
    pub tries: usize,
    pub via: Via,
    /// `Proxy-Status` values, one per [`Failure`], built once.
    pub proxy_status: Box<[HeaderValue]>,
    /// [`ProxyConfig::added_delay`].
    pub added_delay: Duration,
    /// [`ProxyConfig::added_work`].
    pub added_work: Duration,
}

/// The shape of every upstream's connection pool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PoolShape {
    shards: usize,
    idle: Duration,
    max_idle: usize,
}

impl PoolShape {
    pub(crate) fn pool(&self) -> Pool {
        Pool::new(self.shards, self.idle, self.max_idle)
    }
}

/// Validates `config` and builds what serving needs; nothing is bound or spawned.
fn prepare(
    config: &ProxyConfig,
    kind: Intermediary,
    shards: usize,
) -> Result<(Arc<Protocols>, Arc<Shared>), ServicesError> {
    config.validate_for(&kind)?;
    let targets = config
        .upstreams
        .iter()
        .map(|url| Target::parse(url))
        .collect::<Result<Vec<_>, _>>()?;
    let need_tls = targets.iter().any(|t| t.https);
    let connector = |need_tls| {
        Connector::new(
            &config.upstream_tls,
            need_tls,
            config.timeouts.connect,
            config.max_head.max(64 * 1024),
        )
    };
    // A service that reloads gets TLS ready for an https:// upstream a reload may add, when
    // it can be (trust roots found).
    let connector = match (need_tls, config.upstreams_file.is_some()) {
        (false, true) => connector(true).or_else(|_| connector(false))?,
        _ => connector(need_tls)?,
    };
    let new_pool = PoolShape {
        shards,
        idle: config.pool_idle_timeout,
        max_idle: config.pool_max_idle,
    };
    let balancer = Balancer::new(targets, || new_pool.pool(), kind.ejection());
    let tls = match &config.tls {
        Some(settings) => Some(tls::server_config(settings, config.http2)?),
        None => None,
    };
    let protocols = Protocols::new(
        &ListenOptions {
            http2: config.http2,
            h2_max_streams: config.h2_max_streams,
            tls,
            max_connections: config.max_connections,
        },
        H1Limits {
            max_request_line: config.max_request_line,
            max_head: config.max_head,
            max_body: config.max_body,
            head_timeout: config.timeouts.client_header,
            body_timeout: config.timeouts.client_body,
            send_timeout: config.timeouts.client_send,
        },
        config.timeouts.client_idle,
    );
    let via = Via::new();
    let proxy_status = Failure::ALL
        .iter()
        .map(|f| {
            HeaderValue::from_str(&format!("{}; error={}", via.token, f.proxy_error()))
                .expect("ASCII Proxy-Status value")
        })
        .collect();
    let shared = Shared {
        members: Arc::new(Members::new(balancer)),
        new_pool,
        connector: Arc::new(connector),
        timeouts: config.timeouts.clone(),
        max_body: config.max_body,
        max_response_head: config.max_head.max(64 * 1024),
        tries: config.tries,
        via,
        proxy_status,
        added_delay: config.added_delay,
        added_work: config.added_work,
        kind,
    };
    Ok((Arc::new(protocols), Arc::new(shared)))
}

/// The intermediary as its connections' handler, built per connection (it knows the client's
/// address).
#[derive(Debug, Clone)]
pub(crate) struct Proxy {
    shared: Arc<Shared>,
    /// The client's IP as an X-Forwarded-For entry, formatted once per connection.
    client: HeaderValue,
}

impl Proxy {
    fn new(shared: Arc<Shared>, conn: ConnInfo) -> Self {
        let client = HeaderValue::from_str(&conn.peer.ip().to_string())
            .expect("an IP address is a valid header value");
        Self { shared, client }
    }
}

impl H1Handler for Proxy {
    fn call_h1(&self, req: Request<ClientBody>, interim: Option<Interim>) -> Answer {
        let (shared, client) = (self.shared.clone(), self.client.clone());
        let interim = interim.map(InterimTarget::H1);
        Answer::boxed(async move { handle(&shared, &client, req, interim.as_ref()).await })
    }

    fn refuse(&self, status: StatusCode) -> Response<ResBody> {
        refusal(status)
    }
}

impl server::Handler for Proxy {}

impl H2Handler for Proxy {
    fn call_h2(&self, req: Request<ClientBody>, interim: H2Interim) -> Answer {
        let (shared, client) = (self.shared.clone(), self.client.clone());
        let interim = InterimTarget::H2(interim);
        Answer::boxed(async move { handle(&shared, &client, req, Some(&interim)).await })
    }

    /// WebSocket from HTTP/2 clients (RFC 8441) reaches an HTTP/1.1 upstream as an upgrade
    /// (`tunnel`); the transform answers by itself and takes none.
    fn extended_connect(&self) -> bool {
        !matches!(self.shared.kind, Intermediary::Transform { .. })
    }
}

const TEXT_PLAIN: HeaderValue = HeaderValue::from_static("text/plain; charset=utf-8");
const CLOSE: HeaderValue = HeaderValue::from_static("close");

/// One request, start to end.
async fn handle(
    shared: &Shared,
    client: &HeaderValue,
    req: Request<ClientBody>,
    interim: Option<&InterimTarget>,
) -> Response<ResBody> {
    let http1 = req.version() <= Version::HTTP_11;
    if req.uri().path() == HEALTH_PATH && matches!(*req.method(), Method::GET | Method::HEAD) {
        return health(shared, *req.method() == Method::HEAD);
    }
    if !shared.added_work.is_zero() {
        // On purpose on the serving thread: this is the request's own CPU cost.
        let end = std::time::Instant::now() + shared.added_work;
        while std::time::Instant::now() < end {
            std::hint::spin_loop();
        }
    }
    if !shared.added_delay.is_zero() {
        tokio::time::sleep(shared.added_delay).await;
    }
    if shared.via.seen_in(req.headers()) {
        let failure = Failure::LoopDetected;
        log_failure(failure, None, &"our own Via token came back");
        return error_response(shared, failure, http1);
    }
    if tunnel::wants(&req) && !matches!(shared.kind, Intermediary::Transform { .. }) {
        return tunnel::tunnel(shared, client, req).await;
    }
    // HTTP/1 bodies over the limit were refused by `h1::check` already; HTTP/2 ones declare it here.
    if req.body().size_hint().lower() > shared.max_body {
        return error_response(shared, Failure::RequestTooLarge, http1);
    }
    let (parts, incoming) = req.into_parts();
    let mut headers = parts.headers;
    let body = match &shared.kind {
        Intermediary::Transform { limits } => {
            // Boxed: the passthrough path need not carry the transform's state.
            match Box::pin(to_xml::to_xml(
                &mut headers,
                incoming,
                limits,
                shared.max_body,
            ))
            .await
            {
                Ok(body) => body,
                Err(failure) => {
                    log_failure(failure, None, &"transform refused the request body");
                    return error_response(shared, failure, http1);
                }
            }
        }
        _ => UpBody::stream(incoming, shared.max_body),
    };
    // RFC 9110 §7.6.1: connection-specific fields stop here. hyper answered any
    // `Expect: 100-continue` itself when the body was first read.
    let te_trailers = headers::strip_hop_by_hop(&mut headers);
    headers.remove(http::header::EXPECT);
    headers.append(http::header::VIA, shared.via.value(parts.version).clone());
    headers::add_forwarded_for(&mut headers, client);
    let out = Outgoing {
        method: parts.method,
        uri: parts.uri,
        headers,
        te_trailers,
        body,
    };
    forward::forward(shared, out, http1, interim).await
}

/// The answer for a head `h1::check` refused: the status, and the connection closes.
fn refusal(status: StatusCode) -> Response<ResBody> {
    let reason = status.canonical_reason().unwrap_or("refused");
    let mut response = Response::new(ResBody::local(Bytes::from_static(reason.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, TEXT_PLAIN);
    response.headers_mut().insert(CONNECTION, CLOSE);
    response
}

/// `GET /__gatebench/health`.
fn health(shared: &Shared, head: bool) -> Response<ResBody> {
    let (status, text) = if matches!(shared.kind, Intermediary::Balance { .. }) {
        let balancer = shared.members.current();
        let eligible = balancer.eligible_count();
        let total = balancer.upstreams.len();
        let status = if eligible == 0 {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::OK
        };
        (
            status,
            format!("{eligible} of {total} upstreams eligible\n"),
        )
    } else {
        (StatusCode::OK, "ok\n".to_owned())
    };
    let len = text.len();
    let mut response = Response::new(if head {
        ResBody::Local(None)
    } else {
        ResBody::local(text)
    });
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, TEXT_PLAIN);
    if head {
        response
            .headers_mut()
            .insert(http::header::CONTENT_LENGTH, HeaderValue::from(len));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BalanceConfig, TransformConfig};

    /// The field a refused configuration names, and the whole message.
    fn refused(result: Result<(), ServicesError>) -> (&'static str, String) {
        match result {
            Err(error @ ServicesError::InvalidValue { field, .. }) => (field, error.to_string()),
            other => panic!("not refused by field: {other:?}"),
        }
    }

    fn one() -> ProxyConfig {
        ProxyConfig::new(vec!["http://127.0.0.1:1".to_owned()])
    }

    #[test]
    fn each_service_takes_its_number_of_upstreams() {
        assert!(one().validate().is_ok());
        let two = ProxyConfig::new(vec!["http://a:1".into(), "http://b:1".into()]);
        let (field, message) = refused(two.validate());
        assert_eq!(field, "upstreams");
        assert!(message.contains("for the proxy (use balance"), "{message}");
        let transform = TransformConfig {
            proxy: two.clone(),
            ..TransformConfig::new(String::new())
        };
        assert!(refused(transform.validate())
            .1
            .contains("for the transform"));
        assert!(BalanceConfig::new(two.upstreams).validate().is_ok());
        assert_eq!(
            refused(ProxyConfig::new(Vec::new()).validate()).0,
            "upstreams"
        );
    }

    #[test]
    fn out_of_range_values_are_named_by_their_field() {
        let cases: [(ProxyConfig, &str); 7] = [
            (
                ProxyConfig {
                    threads: 0,
                    ..one()
                },
                "threads",
            ),
            (
                ProxyConfig {
                    threads: 1025,
                    ..one()
                },
                "threads",
            ),
            (
                ProxyConfig {
                    h2_max_streams: 0,
                    ..one()
                },
                "h2_max_streams",
            ),
            (ProxyConfig { tries: 17, ..one() }, "tries"),
            (
                ProxyConfig {
                    max_head: 1023,
                    ..one()
                },
                "max_head",
            ),
            (
                ProxyConfig {
                    max_request_line: 63,
                    ..one()
                },
                "max_request_line",
            ),
            (
                ProxyConfig {
                    timeouts: Timeouts {
                        client_header: Duration::ZERO,
                        ..Timeouts::default()
                    },
                    ..one()
                },
                "timeouts.client_header",
            ),
        ];
        for (config, want) in cases {
            assert_eq!(refused(config.validate()).0, want);
        }
        assert_eq!(
            refused(ProxyConfig { tries: 0, ..one() }.validate()).1,
            "invalid configuration: tries must be 1 to 16"
        );
    }

    #[test]
    fn the_balancer_checks_its_health_checks_and_ejection() {
        let base = BalanceConfig::new(vec!["http://a:1".into(), "http://b:1".into()]);
        let health = |f: fn(&mut HealthConfig)| {
            let mut config = base.clone();
            f(config.health.as_mut().expect("on by default"));
            refused(config.validate()).0
        };
        assert_eq!(health(|h| h.interval = Duration::ZERO), "health.interval");
        assert_eq!(health(|h| h.timeout = Duration::ZERO), "health.timeout");
        assert_eq!(health(|h| h.fall = 0), "health.fall");
        assert_eq!(health(|h| h.rise = 0), "health.rise");
        assert_eq!(health(|h| h.path = "health".into()), "health.path");
        let mut config = base.clone();
        config.ejection.as_mut().expect("on by default").after = 0;
        assert_eq!(refused(config.validate()).0, "ejection.after");
        config.ejection = None;
        config.health = None;
        assert!(config.validate().is_ok(), "both off: nothing to check");
    }
}
