//! gatebench's reference services: the backends and intermediaries a benchmark runs against when
//! the user brings none, so that every seed scenario works out of the box.
//!
//! Each service exposes `serve(listener, config, shutdown)` over an already-bound listener (the
//! caller binds, so tests use `127.0.0.1:0` and the runner can pass sockets down) and a blocking
//! `run_blocking` that builds its own runtime. Services know nothing of measuring: the load
//! generator and the runner do that from outside.
//!
//! # Layout
//! - [`echo`]: the echo backend (seed 004's Netty echo, made correct): echoes request bodies,
//!   serves fixed bytes to GET, optional delay, HTTP/1.1, TLS and HTTP/2.
//! - [`tls`]: TLS settings shared by every service: certificate loading, self-signed generation.
//! - [`error`]: [`ServicesError`], the one error type of this crate.
//! - `server` (private): the accept loop, per-connection protocol selection and graceful drain
//!   that every service shares.

pub mod echo;
pub mod error;
mod server;
pub mod tls;

pub use echo::EchoConfig;
pub use error::ServicesError;
pub use tls::{SelfSignedCert, TlsSettings};
