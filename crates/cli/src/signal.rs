//! Ctrl-C and SIGTERM: as a flag the load generator polls (an interrupted load still reports what
//! it measured) and as a future services await for a graceful shutdown. Both go through
//! signal-hook's registry (tokio's signals use it as well), so they never undo each other.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::flag;

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Installs handlers for SIGINT and SIGTERM that set the returned flag. A second Ctrl-C after the
/// first still interrupts at once: the signal's default action runs when the flag is already set.
pub fn interrupt_flag() -> Arc<AtomicBool> {
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        for sig in [SIGINT, SIGTERM] {
            // Registered first, so it sees the flag as the previous signal left it: a no-op the
            // first time, the default action (termination by that signal) the second.
            flag::register_conditional_default(sig, Arc::clone(&flag))
                .expect("SIGINT and SIGTERM have handlers that can be registered");
            flag::register(sig, Arc::clone(&flag))
                .expect("SIGINT and SIGTERM have handlers that can be registered");
        }
        flag
    })
    .clone()
}

/// Resolves on the first SIGINT or SIGTERM. Needs a tokio runtime with signals enabled.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("installing a SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("installing a SIGINT handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
