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

/// Runs `f` with no other load of this test binary running, for tests whose scripted server
/// keeps time from its start (a stall window): the server must start once the machine is ours,
/// not before waiting for it.
pub fn alone<T>(f: impl FnOnce() -> T) -> T {
    let _alone = MACHINE.write().unwrap_or_else(|e| e.into_inner());
    f()
}

/// Validates and runs `spec` at once; inside [`alone`].
pub fn run_now(spec: LoadSpec) -> RunOutput {
    let config = LoadConfig::try_new(spec).expect("valid spec");
    gatebench_loadgen::run(config, RunOptions::default()).expect("run")
}

/// Requests the generator says reached the wire, by class: answered ones, and every failure
/// or cut-off that comes after the request was written.
pub fn written_by_class(out: &RunOutput) -> u64 {
    use gatebench_model::Outcome::*;
    [&out.report.warmup, &Some(out.report.measurement.clone())]
        .into_iter()
        .flatten()
        .map(|p| {
            let o = &p.outcomes;
            o.responses()
                + [
                    Reset,
                    Incomplete,
                    IoError,
                    Timeout,
                    Unanswered,
                    ProtocolError,
                    InFlight,
                ]
                .iter()
                .map(|c| o.get(*c))
                .sum::<u64>()
        })
        .sum()
}

/// Checks the generator's classes against the server's own count of the requests it read:
/// every answered request was read, nothing was read that the generator did not account for,
/// and the only requests the server may not have read yet are those still unanswered.
pub fn assert_server_agrees(out: &RunOutput, seen: u64) {
    let m = &out.report.measurement;
    let w = out.report.warmup.as_ref();
    let answered = m.outcomes.responses() + w.map_or(0, |w| w.outcomes.responses());
    let pending = [
        gatebench_model::Outcome::InFlight,
        gatebench_model::Outcome::Unanswered,
        gatebench_model::Outcome::Timeout,
    ]
    .iter()
    .map(|c| m.outcomes.get(*c) + w.map_or(0, |w| w.outcomes.get(*c)))
    .sum::<u64>();
    let written = written_by_class(out);
    assert!(
        seen >= answered && seen <= written && written - seen <= pending,
        "the server read {seen} requests; the generator's classes say {written} were written \
         ({answered} answered, {pending} unanswered): {:?}",
        m.outcomes
    );
}

/// Checks the open model's schedule arithmetic: at `rate` req/s over the warm-up and the
/// measurement, exactly rate × (warm-up + duration) requests were scheduled, each in one class.
pub fn assert_schedule_kept(out: &RunOutput, rate: f64, secs: f64) {
    let want = (rate * secs).round() as u64;
    let got =
        out.report.measurement.requests + out.report.warmup.as_ref().map_or(0, |w| w.requests);
    assert_eq!(
        got, want,
        "{rate} req/s for {secs} s schedules exactly {want} requests: {:?}",
        out.report.measurement.outcomes
    );
}

/// Checks the HTTP/2 classes against the server's count of the streams it saw: every answered
/// stream was seen, and every stream seen was answered, refused, reset, cut by GOAWAY or left
/// unanswered.
pub fn assert_h2_server_agrees(out: &RunOutput, streams_seen: u64) {
    use gatebench_model::Outcome::*;
    let m = &out.report.measurement;
    let w = out.report.warmup.as_ref();
    let count = |c: &[gatebench_model::Outcome]| {
        c.iter()
            .map(|c| m.outcomes.get(*c) + w.map_or(0, |w| w.outcomes.get(*c)))
            .sum::<u64>()
    };
    let answered = m.outcomes.responses() + w.map_or(0, |w| w.outcomes.responses());
    let other = count(&[
        InFlight,
        Unanswered,
        Timeout,
        RefusedStream,
        StreamReset,
        GoAway,
    ]);
    assert!(
        streams_seen >= answered && streams_seen <= answered + other,
        "the server saw {streams_seen} streams; the generator: {answered} answered, {other} \
         refused, reset or unanswered: {:?}",
        m.outcomes
    );
}

/// Checks that every answered request's latency was recorded once (the histogram and the
/// outcome counters are kept apart), and that unanswered ones are the censored values.
pub fn assert_each_answer_recorded(out: &RunOutput) {
    let m = &out.report.measurement;
    assert_eq!(
        out.measurement.latency.len(),
        m.outcomes.responses(),
        "answered latencies vs responses: {:?}",
        m.outcomes
    );
    assert_eq!(m.latency.count, m.outcomes.responses() + m.latency.censored);
}
