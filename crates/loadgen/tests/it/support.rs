//! Shared helpers: an in-process echo backend and a quick way to run a load.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::RwLock;
use std::time::Duration;

use gatebench_loadgen::{Arrival, LoadConfig, LoadSpec, RunOptions, RunOutput, StopRule};
use gatebench_services::echo::EchoConfig;

/// The echo backend on 127.0.0.1:0 in its own thread; stops (gracefully) when dropped.
pub struct Echo {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Echo {
    pub fn start(delay: Duration) -> Echo {
        Echo::start_with(EchoConfig {
            delay,
            threads: 1,
            ..EchoConfig::default()
        })
    }

    pub fn start_with(config: EchoConfig) -> Echo {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            gatebench_services::echo::run_blocking(listener, config, async move {
                let _ = rx.await;
            })
            .unwrap();
        });
        Echo {
            addr,
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    pub fn https_url(&self) -> String {
        format!("https://{}/", self.addr)
    }
}

/// A self-signed certificate for localhost written to a fresh temp directory:
/// (directory, cert path, key path).
pub fn self_signed_files() -> (PathBuf, PathBuf, PathBuf) {
    static N: AtomicU32 = AtomicU32::new(0);
    let cert = gatebench_services::tls::generate_self_signed().unwrap();
    let dir = std::env::temp_dir().join(format!(
        "gatebench-it-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join("cert.pem");
    let k = dir.join("key.pem");
    std::fs::write(&c, cert.cert_pem).unwrap();
    std::fs::write(&k, cert.key_pem).unwrap();
    (dir, c, k)
}

impl Drop for Echo {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A spec for `url`: closed model, `c` connections, one thread, `d` long.
pub fn spec(url: &str, c: u32, d: Duration) -> LoadSpec {
    let mut s = LoadSpec::new(url);
    s.connections = c;
    s.threads = Some(1);
    s.stop = StopRule {
        duration: Some(d),
        requests: None,
    };
    s.arrival = Arrival::Closed;
    s
}

/// Tests share the machine; tests whose assertions depend on timing (rate, calibrated latency,
/// a stall) run alone, so a neighbour saturating both cores cannot bend their figures. Ordinary
/// runs hold the lock shared, timing runs exclusively.
static MACHINE: RwLock<()> = RwLock::new(());

/// Validates and runs `spec` with no outputs, sharing the machine with other tests.
pub fn run(spec: LoadSpec) -> RunOutput {
    let _shared = MACHINE.read().unwrap_or_else(|e| e.into_inner());
    run_now(spec)
}

/// Like [`run`], with no other load of this test binary running at the same time.
pub fn run_alone(spec: LoadSpec) -> RunOutput {
    let _alone = MACHINE.write().unwrap_or_else(|e| e.into_inner());
    run_now(spec)
}

fn run_now(spec: LoadSpec) -> RunOutput {
    let config = LoadConfig::try_new(spec).expect("valid spec");
    gatebench_loadgen::run(config, RunOptions::default()).expect("run")
}

/// Asserts that every scheduled request ended in exactly one class.
pub fn assert_counts_add_up(out: &RunOutput) {
    let m = &out.report.measurement;
    let sum: u64 = gatebench_model::Outcome::ALL
        .iter()
        .map(|o| m.outcomes.get(*o))
        .sum();
    assert_eq!(
        sum, m.requests,
        "classes must add up to the requests scheduled"
    );
    assert_eq!(out.measurement.outcomes.total(), m.requests);
}
