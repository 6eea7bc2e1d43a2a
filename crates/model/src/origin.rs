//! What the back-ends saw of a cell's intermediary: the origin statistics of gatebench's echo
//! back-ends (`serve echo --stats`) over the measurement, read by the runner at its start and
//! its end and subtracted, so the warm-up's connections do not count.
//!
//! The rule: every figure is derived from the counts here, never measured apart, and a figure
//! that has nothing to divide by is `None` (an empty cell of the summary), never 0.

use serde::{Deserialize, Serialize};

/// The origin statistics of a cell's echo back-ends over its measurement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OriginReport {
    /// One entry per back-end read, in back-end order.
    pub backends: Vec<OriginBackend>,
}

/// What one echo back-end counted over the measurement.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OriginBackend {
    /// The cell's name for it: `backend-1`, `backend-2`, …
    pub name: String,
    /// Its `--id`, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Connections opened to it (both protocols).
    pub connections_opened: u64,
    /// HTTP/1.x connections opened.
    pub connections_h1: u64,
    /// HTTP/2 connections opened.
    pub connections_h2: u64,
    /// Connections that ended.
    pub connections_closed: u64,
    /// Requests it answered (HTTP/2 streams included).
    pub requests: u64,
    /// HTTP/2 streams among them.
    pub h2_streams: u64,
    /// TLS handshakes that made a new session.
    pub tls_handshakes_full: u64,
    /// TLS handshakes that resumed one.
    pub tls_handshakes_resumed: u64,
}

impl OriginReport {
    /// Requests over every back-end.
    pub fn requests(&self) -> u64 {
        self.backends.iter().map(|b| b.requests).sum()
    }

    /// Upstream connections opened per 1,000 requests, over every back-end.
    pub fn connections_per_1k_requests(&self) -> Option<f64> {
        let requests = self.requests();
        let opened: u64 = self.backends.iter().map(|b| b.connections_opened).sum();
        (requests > 0).then(|| opened as f64 * 1000.0 / requests as f64)
    }

    /// Resumed TLS handshakes as a percentage of all; `None` without a TLS handshake.
    pub fn tls_resumption_pct(&self) -> Option<f64> {
        let resumed: u64 = self.backends.iter().map(|b| b.tls_handshakes_resumed).sum();
        let full: u64 = self.backends.iter().map(|b| b.tls_handshakes_full).sum();
        (resumed + full > 0).then(|| resumed as f64 * 100.0 / (resumed + full) as f64)
    }

    /// The most-loaded back-end's share of the requests against the even share (1.00 = even,
    /// `n` = one back-end took everything); `None` with fewer than two back-ends or no request.
    pub fn balance_spread(&self) -> Option<f64> {
        let n = self.backends.len();
        let requests = self.requests();
        let most = self.backends.iter().map(|b| b.requests).max()?;
        (n > 1 && requests > 0).then(|| most as f64 * n as f64 / requests as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend(requests: u64, opened: u64, full: u64, resumed: u64) -> OriginBackend {
        OriginBackend {
            name: "backend-1".into(),
            requests,
            connections_opened: opened,
            tls_handshakes_full: full,
            tls_handshakes_resumed: resumed,
            ..OriginBackend::default()
        }
    }

    #[test]
    fn figures_come_from_the_counts_and_are_absent_without_a_divisor() {
        let even = OriginReport {
            backends: vec![backend(500, 2, 1, 1), backend(500, 3, 0, 2)],
        };
        assert_eq!(even.connections_per_1k_requests(), Some(5.0));
        assert_eq!(even.tls_resumption_pct(), Some(75.0));
        assert_eq!(even.balance_spread(), Some(1.0));
        let skewed = OriginReport {
            backends: vec![backend(900, 1, 0, 0), backend(100, 1, 0, 0)],
        };
        assert_eq!(skewed.balance_spread(), Some(1.8));
        assert_eq!(skewed.tls_resumption_pct(), None);
        let one = OriginReport {
            backends: vec![backend(0, 0, 0, 0)],
        };
        assert_eq!(one.balance_spread(), None);
        assert_eq!(one.connections_per_1k_requests(), None);
        assert_eq!(OriginReport::default().balance_spread(), None);
    }
}
