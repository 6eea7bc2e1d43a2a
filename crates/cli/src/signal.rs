//! Ctrl-C and SIGTERM: as a flag the load generator polls (an interrupted load still reports what
//! it measured) and as a future services await for a graceful shutdown.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    if let Some(f) = FLAG.get() {
        f.store(true, Ordering::Relaxed);
    }
}

/// Installs handlers for SIGINT and SIGTERM that set the returned flag. A second Ctrl-C after the
/// first still interrupts at once (the default action is restored after the first).
pub fn interrupt_flag() -> Arc<AtomicBool> {
    let flag = FLAG
        .get_or_init(|| Arc::new(AtomicBool::new(false)))
        .clone();
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: installing a handler that only performs an atomic store; SA_RESETHAND restores
        // the default so a second signal terminates.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_RESETHAND;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
    flag
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
