//! The drain at shutdown: connections are told that it has begun, finish what they are doing,
//! and the service waits for them, up to a deadline. Shared by the accept loops (`server`) and
//! the servers of the services' connections (`h1::server`, `h2::server`).

use std::time::Duration;

use tokio::sync::watch;
use tracing::warn;

/// Resolves once the drain has started (or its sender is gone, which means the same).
pub(crate) async fn draining(drain: &mut watch::Receiver<bool>) {
    let _ = drain.wait_for(|draining| *draining).await;
}

/// Tells connections that shutdown has begun and waits for them to finish.
///
/// Every accept loop and connection holds a receiver; the sender's `closed()` resolves when the
/// last one is dropped, so no separate counter is needed.
#[derive(Debug)]
pub(crate) struct Drain {
    tx: watch::Sender<bool>,
}

impl Drain {
    pub(crate) fn new() -> Self {
        Self {
            tx: watch::Sender::new(false),
        }
    }

    /// A receiver that turns `true` when the drain starts.
    pub(crate) fn watcher(&self) -> watch::Receiver<bool> {
        self.tx.subscribe()
    }

    /// Starts the drain and waits up to `timeout` for every holder of a watcher to finish.
    pub(crate) async fn drain(&self, timeout: Duration) {
        self.tx.send_replace(true);
        if tokio::time::timeout(timeout, self.tx.closed())
            .await
            .is_err()
        {
            warn!(
                remaining = self.tx.receiver_count(),
                timeout_s = timeout.as_secs_f64(),
                "drain timed out: abandoning the connections still open",
            );
        }
    }
}
