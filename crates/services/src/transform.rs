//! The JSON → XML transform (seed 004's "JSON to XML transformation" scenario): the proxy's
//! request path with one step added (`proxy::to_xml`): the JSON request body is read whole (it
//! must be, to be parsed), converted by [`crate::json_xml::json_to_xml`] and forwarded with
//! `Content-Type: application/xml` and the new `Content-Length`. Responses stream back as the
//! proxy's do.
//!
//! - A body over the limit (the smaller of `max_body` and the converter's `max_input`) → 413, as
//!   soon as its declared length or running total says so.
//! - Invalid JSON, or nesting deeper than the converter's limit → 400 (never a stack overflow:
//!   the converter keeps its nesting on the heap).
//! - A Content-Type that is not JSON (`application/json` or `*/*+json`), or a Content-Encoding
//!   other than `identity` → 415. No Content-Type is taken as JSON.
//! - A request without a body and without a Content-Type (a GET) is forwarded as it is.
//! - `Cache-Control: no-transform` → forwarded untouched, streamed (RFC 9110 §7.7).

use std::future::Future;

use tokio::net::TcpListener;

use crate::error::ServicesError;
use crate::json_xml::JsonXmlLimits;
use crate::proxy::{self, Intermediary, ProxyConfig};

/// Configuration of the transform.
#[derive(Debug, Clone)]
pub struct TransformConfig {
    /// Listener, the one upstream, timeouts and limits, as for the proxy.
    pub proxy: ProxyConfig,
    /// Limits of the converter (depth, input size).
    pub json: JsonXmlLimits,
}

impl TransformConfig {
    /// The transform in front of `upstream`, with default limits.
    pub fn new(upstream: String) -> Self {
        Self {
            proxy: ProxyConfig::new(vec![upstream]),
            json: JsonXmlLimits::default(),
        }
    }

    /// Checks the configuration (the proxy's fields, the number of upstreams, exactly one upstream); the
    /// service checks again before it serves.
    pub fn validate(&self) -> Result<(), ServicesError> {
        self.proxy.validate_for(&self.kind())
    }

    fn kind(&self) -> Intermediary {
        Intermediary::Transform { limits: self.json }
    }
}

/// Serves the transform on `listener`, on the caller's runtime, until `shutdown` resolves; then
/// drains (at most 5 s) and returns.
pub async fn serve(
    listener: TcpListener,
    config: TransformConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServicesError> {
    proxy::serve_kind(listener, &config.proxy, config.kind(), shutdown).await
}

/// Blocking form of [`serve`]: thread per core (`config.proxy.threads`).
pub fn run_blocking(
    listener: std::net::TcpListener,
    config: TransformConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServicesError> {
    proxy::run_blocking_kind(listener, &config.proxy, config.kind(), shutdown)
}
