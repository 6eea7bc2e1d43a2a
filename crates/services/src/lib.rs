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
//! Two floors: the services above, the protocol layer below (it imports no service).
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
//! - `server` (private): the accept loop, TLS handshakes, per-connection protocol selection,
//!   the connection cap and graceful drain that every service shares; a service hands it one
//!   handler per connection.
//! - `protocol` (private): the HTTP machinery, cut by version × side, knowing nothing of
//!   what is answered: `h1` (`server`, its connection `conn`, the request rules `check`, the
//!   upstream `client`), `h2` (`server` over the h2 crate, the control-frame `flood` limit),
//!   `body` (the bodies both sides move), `interim` (1xx responses), `deadline` (the one
//!   re-armable timer of the hand-written readers), `drain` (the graceful drain).
//! - `upstream` (private): upstream targets, TLS client configuration, connections and pools.
//! - `failure` (private): what can fail on the request path, its status and side, the
//!   rate-limited failure log; a leaf, below the protocol layer and everything that forwards.
//! - [`tls`]: TLS settings shared by every service: certificate loading, self-signed generation.
//! - [`error`]: [`ServicesError`], the one error type of this crate.

pub mod balance;
mod balancer;
pub mod echo;
pub mod error;
mod failure;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz;
pub mod json_xml;
mod memory;
mod protocol;
pub mod proxy;
mod server;
pub mod tls;
pub mod transform;
mod upstream;

pub use balance::{BalanceConfig, EjectionConfig, HealthConfig};
pub use echo::{EchoConfig, EchoLimits};
pub use error::ServicesError;
pub use proxy::{ProxyConfig, Timeouts, UpstreamTls};
pub use tls::{SelfSignedCert, TlsSettings};
pub use transform::TransformConfig;
