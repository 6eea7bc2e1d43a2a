//! Gateways under change, as a user runs them: echo back-ends that say who answered
//! (`--id`) and count what they see (`--stats`, `--stats-file`), and the proxy and the balancer
//! reloading their `--upstreams-file` on SIGHUP under steady traffic.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::process::Signal;

use crate::support::{kill, temp_dir, EchoChild, BIN};

/// One HTTP/1.1 exchange on a kept connection: the status and the `x-gatebench-backend` value.
fn exchange(stream: &mut TcpStream, path: &str) -> std::io::Result<(u16, Option<String>, String)> {
    write!(stream, "GET {path} HTTP/1.1\r\nHost: t\r\n\r\n")?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status line: {line:?}")))?;
    let (mut len, mut backend) = (0usize, None);
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (name, value) = l.split_once(':').unwrap_or((l, ""));
        match name.to_ascii_lowercase().as_str() {
            "content-length" => len = value.trim().parse().unwrap_or(0),
            "x-gatebench-backend" => backend = Some(value.trim().to_owned()),
            _ => {}
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;
    // Nothing was read ahead: responses are not pipelined.
    assert!(reader.buffer().is_empty());
    Ok((status, backend, String::from_utf8_lossy(&body).into_owned()))
}

fn connect(url: &str) -> TcpStream {
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// The echo's origin statistics, read on a connection of their own.
fn origin(echo: &EchoChild) -> serde_json::Value {
    let (status, _, body) = exchange(&mut connect(&echo.url), "/__gatebench/origin").unwrap();
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

fn count(v: &serde_json::Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v}"))
}

#[test]
fn the_echo_names_itself_and_counts_what_it_sees_without_its_readings() {
    let dir = temp_dir("origin");
    let file = dir.join("origin.json");
    let echo = EchoChild::start(&["--id", "a", "--stats-file", file.to_str().unwrap()]);
    let mut c = connect(&echo.url);
    for _ in 0..5 {
        let (status, backend, body) = exchange(&mut c, "/").unwrap();
        assert_eq!(
            (status, backend.as_deref(), body.as_str()),
            (200, Some("a"), "Hello, world!")
        );
    }
    let (_, backend, _) = exchange(&mut connect(&echo.url), "/health").unwrap();
    assert_eq!(backend.as_deref(), Some("a"));
    // Two readings: neither's connection nor request is counted.
    let first = origin(&echo);
    let second = origin(&echo);
    assert_eq!(first, second);
    assert_eq!(count(&second, "connections_opened"), 2, "{second}");
    assert_eq!(count(&second, "connections_h1"), 2);
    assert_eq!(count(&second, "requests"), 6);
    assert_eq!(second["requests_per_connection"], 3.0);
    assert_eq!(second["id"], "a");
    drop(c);
    drop(echo);
    let on_exit: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(count(&on_exit, "requests"), 6);
    assert_eq!(count(&on_exit, "connections_closed"), 2, "{on_exit}");
    // Without --id and --stats: no header, no statistics (the path is a plain GET).
    let plain = EchoChild::start(&[]);
    let (status, backend, body) =
        exchange(&mut connect(&plain.url), "/__gatebench/origin").unwrap();
    assert_eq!(
        (status, backend, body.as_str()),
        (200, None, "Hello, world!")
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// An intermediary (`proxy` or `balance`) over an upstreams file, its log in `log`.
struct Intermediary {
    child: Child,
    url: String,
}

impl Intermediary {
    fn start(service: &str, file: &Path, log: &Path, extra: &[&str]) -> Intermediary {
        let mut child = Command::new(BIN)
            .args(["serve", service, "--port", "0", "--threads", "2"])
            .arg("--upstreams-file")
            .arg(file)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let line = BufReader::new(stdout).lines().next().unwrap().unwrap();
        let url = line
            .split("listening on ")
            .nth(1)
            .and_then(|r| r.split([',', ' ']).next())
            .unwrap()
            .to_owned();
        Intermediary { child, url }
    }
}

impl Drop for Intermediary {
    fn drop(&mut self) {
        kill(&self.child, Signal::TERM);
        let _ = self.child.wait();
    }
}

/// Steady traffic: `clients` keep-alive connections sending GETs back to back until stopped;
/// every answer that is not a 200, and every broken exchange, is an error.
struct Traffic {
    stop: Arc<AtomicBool>,
    errors: Arc<AtomicU64>,
    ok: Arc<AtomicU64>,
    /// The back-end of the latest answer of any client.
    last: Arc<Mutex<Option<String>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Traffic {
    fn start(url: &str, clients: usize) -> Traffic {
        let stop = Arc::new(AtomicBool::new(false));
        let errors = Arc::new(AtomicU64::new(0));
        let ok = Arc::new(AtomicU64::new(0));
        let last = Arc::new(Mutex::new(None));
        let threads = (0..clients)
            .map(|_| {
                let (stop, errors, ok, last) =
                    (stop.clone(), errors.clone(), ok.clone(), last.clone());
                let mut c = connect(url);
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        match exchange(&mut c, "/") {
                            Ok((200, backend, _)) => {
                                ok.fetch_add(1, Ordering::Relaxed);
                                *last.lock().unwrap() = backend;
                            }
                            other => {
                                eprintln!("error: {other:?}");
                                errors.fetch_add(1, Ordering::Relaxed);
                                std::thread::sleep(Duration::from_millis(20));
                            }
                        }
                    }
                })
            })
            .collect();
        Traffic {
            stop,
            errors,
            ok,
            last,
            threads,
        }
    }

    fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// Waits until the latest answers come from `backend` (at most 5 s), and a few more.
    fn wait_for(&self, backend: &str) -> Duration {
        let start = Instant::now();
        while self.last.lock().unwrap().as_deref() != Some(backend) {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "no answer from {backend}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let took = start.elapsed();
        let ok = self.ok.load(Ordering::Relaxed);
        while self.ok.load(Ordering::Relaxed) < ok + 50 {
            assert!(start.elapsed() < Duration::from_secs(10), "traffic stalled");
            std::thread::sleep(Duration::from_millis(5));
        }
        took
    }

    fn stop(self) -> u64 {
        let Traffic {
            stop,
            errors,
            threads,
            ..
        } = self;
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            t.join().unwrap();
        }
        errors.load(Ordering::Relaxed)
    }
}

fn write_file(path: &Path, urls: &[&str]) {
    let text = format!("# upstreams\n\n{}\n", urls.join("\n"));
    std::fs::write(path, text).unwrap();
}

#[test]
fn the_proxy_reloads_its_upstream_under_load_without_an_error() {
    let _machine = crate::support::shared();
    let dir = temp_dir("proxy-reload");
    let (file, log) = (dir.join("upstreams"), dir.join("proxy.log"));
    let a = EchoChild::start(&["--id", "a", "--stats"]);
    let b = EchoChild::start(&["--id", "b", "--stats"]);
    write_file(&file, &[a.url.trim_end_matches('/')]);
    let proxy = Intermediary::start("proxy", &file, &log, &[]);
    let traffic = Traffic::start(&proxy.url, 4);
    traffic.wait_for("a");
    let before = origin(&a);
    // SIGHUP every 200 ms with the same file: nothing dropped, nothing reconnected.
    for _ in 0..10 {
        kill(&proxy.child, Signal::HUP);
        std::thread::sleep(Duration::from_millis(200));
    }
    traffic.wait_for("a");
    let after = origin(&a);
    assert_eq!(traffic.errors(), 0);
    assert_eq!(
        count(&after, "connections_opened"),
        count(&before, "connections_opened"),
        "an unchanged reload opened new upstream connections: {before} → {after}"
    );
    assert!(count(&after, "requests") > count(&before, "requests"));
    // A → B: new requests go to B, A's pooled connections are closed.
    write_file(&file, &[b.url.trim_end_matches('/')]);
    kill(&proxy.child, Signal::HUP);
    traffic.wait_for("b");
    let start = Instant::now();
    let drained = loop {
        let s = origin(&a);
        if count(&s, "connections_closed") == count(&s, "connections_opened") {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "A's connections stay open: {s}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        count(&origin(&a), "requests"),
        count(&drained, "requests"),
        "A still gets requests"
    );
    // A broken file: refused, logged, B still serves.
    std::fs::write(&file, "http://127.0.0.1:1 http://127.0.0.1:2\n").unwrap();
    kill(&proxy.child, Signal::HUP);
    std::thread::sleep(Duration::from_millis(300));
    traffic.wait_for("b");
    assert_eq!(traffic.stop(), 0, "failed requests across the reloads");
    drop(proxy);
    let log = std::fs::read_to_string(&log).unwrap();
    assert_eq!(log.matches("reload refused").count(), 1, "{log}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_balancer_takes_and_drops_members_and_checks_the_new_set() {
    let _machine = crate::support::shared();
    let dir = temp_dir("balance-reload");
    let (file, log) = (dir.join("upstreams"), dir.join("balance.log"));
    let a = EchoChild::start(&["--id", "a"]);
    let mut b = EchoChild::start(&["--id", "b"]);
    let (ua, ub) = (
        a.url.trim_end_matches('/'),
        b.url.trim_end_matches('/').to_owned(),
    );
    write_file(&file, &[ua]);
    let checks = [
        "--health-interval",
        "100ms",
        "--health-timeout",
        "100ms",
        "--health-fall",
        "2",
    ];
    let balance = Intermediary::start("balance", &file, &log, &checks);
    let traffic = Traffic::start(&balance.url, 4);
    traffic.wait_for("a");
    write_file(&file, &[ua, &ub]);
    kill(&balance.child, Signal::HUP);
    traffic.wait_for("b");
    traffic.wait_for("a");
    let health = |c: &mut TcpStream| exchange(c, "/__gatebench/health").unwrap();
    let mut c = connect(&balance.url);
    assert_eq!(health(&mut c).2, "2 of 2 upstreams eligible\n");
    // The health checks watch the new member: B stopped is found down.
    kill(&b.child, Signal::TERM);
    b.child.wait().unwrap();
    let start = Instant::now();
    while health(&mut c).2 != "1 of 2 upstreams eligible\n" {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "B never found down"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    traffic.wait_for("a");
    // B leaves the set.
    write_file(&file, &[ua]);
    kill(&balance.child, Signal::HUP);
    let start = Instant::now();
    while health(&mut c).2 != "1 of 1 upstreams eligible\n" {
        assert!(start.elapsed() < Duration::from_secs(5), "B never left");
        std::thread::sleep(Duration::from_millis(20));
    }
    let errors = traffic.stop();
    // Requests in flight on B when it stopped may fail (then retried on A); none after.
    assert!(errors <= 4, "{errors} failed requests");
    // B was already stopped: let its guard not signal a reaped process.
    b.url.clear();
    std::mem::forget(b);
    drop(balance);
    let _ = std::fs::remove_dir_all(dir);
}
