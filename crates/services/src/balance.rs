//! The round-robin load balancer (seed 001: five echo backends behind one balancer): the
//! intermediaries' request path over several upstreams, with active health checks and passive
//! ejection. What the selection, the checks and the ejection do is described in `balancer`,
//! which every intermediary uses; this module is the service's configuration and entry points.

use std::future::Future;

use tokio::net::TcpListener;

pub use crate::balancer::{EjectionConfig, HealthConfig};
use crate::error::ServicesError;
use crate::proxy::{self, Intermediary, ProxyConfig};

/// Configuration of the balancer.
#[derive(Debug, Clone)]
pub struct BalanceConfig {
    /// Everything an intermediary has: listener, upstreams (at least one), timeouts, limits.
    pub proxy: ProxyConfig,
    /// Active health checks; `None` turns them off.
    pub health: Option<HealthConfig>,
    /// Passive ejection; `None` turns it off.
    pub ejection: Option<EjectionConfig>,
}

impl BalanceConfig {
    /// Round robin over `upstreams` with the default health checks and ejection.
    pub fn new(upstreams: Vec<String>) -> Self {
        Self {
            proxy: ProxyConfig::new(upstreams),
            health: Some(HealthConfig::default()),
            ejection: Some(EjectionConfig::default()),
        }
    }

    /// Checks the configuration (the proxy's fields, the number of upstreams, health checks and ejection); the
    /// service checks again before it serves.
    pub fn validate(&self) -> Result<(), ServicesError> {
        self.proxy.validate_for(&self.kind())
    }

    fn kind(&self) -> Intermediary {
        Intermediary::Balance {
            health: self.health.clone(),
            ejection: self.ejection.clone(),
        }
    }
}

/// Serves the balancer on `listener`, on the caller's runtime, until `shutdown` resolves; then
/// drains (at most 5 s) and returns. Health checks run as tasks on the same runtime.
pub async fn serve(
    listener: TcpListener,
    config: BalanceConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServicesError> {
    proxy::serve_kind(listener, &config.proxy, config.kind(), shutdown).await
}

/// Blocking form of [`serve`]: thread per core (`config.proxy.threads`), as the echo backend;
/// health checks run on the calling thread's runtime.
pub fn run_blocking(
    listener: std::net::TcpListener,
    config: BalanceConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServicesError> {
    proxy::run_blocking_kind(listener, &config.proxy, config.kind(), shutdown)
}
