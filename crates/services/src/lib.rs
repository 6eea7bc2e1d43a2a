//! gatebench's reference services: the backends and intermediaries a benchmark runs against when
//! the user brings none, so that every seed scenario works out of the box.
//!
//! Each service exposes `serve(listener, config, shutdown)` over an already-bound listener (the
//! caller binds, so tests use `127.0.0.1:0` and the runner can pass sockets down) and a blocking
//! `run_blocking` that builds its own runtime. Services know nothing of measuring: the load
//! generator and the runner do that from outside. HTTP/1.1 framing rules come from
//! `gatebench-h1`, shared with the load generator. Every configuration type has a `validate()`
//! that the service calls before serving and a front end may call before it binds.
//!
//! # Layout
//! - [`echo`]: the echo backend (seed 004's Netty echo, made correct): echoes request bodies,
//!   serves fixed bytes to GET, optional delay, HTTP/1.1, TLS and HTTP/2.
//! - [`proxy`]: the passthrough reverse proxy (every seed-004 protocol pair), and the request
//!   path the balancer and the transform share: intermediary header rules, forwarding,
//!   retries, 502/503/504, the transform's body conversion.
//! - [`balance`]: the round-robin balancer (seed 001): its configuration and entry points.
//! - [`transform`]: JSON request bodies forwarded as XML (seed 004), over [`json_xml`].
//! - [`json_xml`]: the JSON → XML converter.
//! - `balancer` (private): upstream selection for every intermediary: round robin, active
//!   health checks, passive ejection.
//! - `failure` (private): what can fail on the request path, its status and side, the
//!   rate-limited failure log; below everything that forwards.
//! - `upstream` (private): upstream targets, TLS client configuration, connections and pools.
//! - `h1client` (private): the lean HTTP/1.1 client of upstream connections.
//! - `h1check` (private): strict HTTP/1.1 request framing (request smuggling, limits, the
//!   slowloris deadline): the rules of the intermediaries' server, and a front to hyper's for
//!   the echo.
//! - `h1server` (private): the intermediaries' HTTP/1.x server: one parse per head, bodies
//!   streamed, keep-alive, pipelining, interim responses; `h1conn` (private) is its connection
//!   (reads, writes, the request body's reader).
//! - `interim` (private): interim (1xx) responses on their way to the client's connection.
//! - `h2server` (private): HTTP/2 client connections of the intermediaries, served with the h2
//!   crate so that interim (1xx) responses reach HTTP/2 clients.
//! - `deadline` (private): the one re-armable timer of the hand-written readers; `drain`
//!   (private): the graceful drain every server shares.
//! - [`tls`]: TLS settings shared by every service: certificate loading, self-signed generation.
//! - [`error`]: [`ServicesError`], the one error type of this crate.
//! - `server` (private): the accept loop, per-connection protocol selection and graceful drain
//!   that every service shares.

pub mod balance;
mod balancer;
mod deadline;
mod drain;
pub mod echo;
pub mod error;
mod failure;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz;
// `StrictH1`, the stream wrapper that put these rules in front of hyper, and its synthetic
// rejection request serve no connection any more (every HTTP/1.x connection is `h1server`'s);
// they stay, unused outside the `h1check` fuzz target, until the head-scanning work in flight
// on this file lands, and then go with that target's move onto `parse_head`.
#[allow(dead_code)]
mod h1check;
mod h1client;
mod h1conn;
mod h1server;
mod h2flood;
mod h2server;
mod interim;
pub mod json_xml;
pub mod proxy;
mod server;
pub mod tls;
pub mod transform;
mod upstream;

pub use balance::{BalanceConfig, EjectionConfig, HealthConfig};
pub use echo::EchoConfig;
pub use error::ServicesError;
pub use proxy::{ProxyConfig, Timeouts, UpstreamTls};
pub use tls::{SelfSignedCert, TlsSettings};
pub use transform::TransformConfig;
