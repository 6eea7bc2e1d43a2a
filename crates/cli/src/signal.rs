//! Ctrl-C and SIGTERM: as a flag the load generator polls (an interrupted load still reports what
//! it measured) and as a future services await for a graceful shutdown. Both go through
//! signal-hook's registry (tokio's signals use it as well), so they never undo each other.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use signal_hook::consts::{SIGINT, SIGTERM};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Installs handlers for SIGINT and SIGTERM that set the returned flag. A second Ctrl-C after the
/// first still interrupts at once (the signal's default action), except while processes on
/// other hosts are being stopped ([`gatebench_runner::hosts::stopping_remote`]): ending then
/// would leave them running there, so that signal only counts as one more request to stop.
pub fn interrupt_flag() -> Arc<AtomicBool> {
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        for sig in [SIGINT, SIGTERM] {
            let seen = Arc::clone(&flag);
            let handler = move || {
                let again = seen.swap(true, Ordering::SeqCst);
                if again && !gatebench_runner::hosts::stopping_remote() {
                    let _ = signal_hook::low_level::emulate_default_handler(sig);
                }
            };
            register(sig, handler);
        }
        flag
    })
    .clone()
}

/// Keeps a SIGHUP from ending the process (its default action) until a service listens for
/// it: an intermediary that reloads on SIGHUP, from before it prints that it listens.
pub fn hold_sighup() {
    register(signal_hook::consts::SIGHUP, || {});
}

/// Registers `handler` for `sig` in signal-hook's registry.
#[allow(unsafe_code)]
fn register(sig: i32, handler: impl Fn() + Sync + Send + 'static) {
    // SAFETY: the handler does nothing, or only atomic loads and stores and calls signal-hook's
    // `emulate_default_handler`, all of which are async-signal-safe; it allocates nothing,
    // takes no lock and touches no thread-local.
    unsafe { signal_hook::low_level::register(sig, handler) }
        .expect("SIGINT, SIGTERM and SIGHUP have handlers that can be registered");
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
