//! `GET /metrics` for a run (`--metrics ADDRESS`): one small thread accepts, each scrape is
//! answered on a short-lived thread of its own, in the form the scraper's `Accept` header asks
//! for: the delimited protobuf exposition when it asks for
//! `application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited`
//! at a higher weight than text (as Prometheus does with native histograms on), the text format
//! 0.0.4 otherwise. Not here: OpenMetrics text (a scraper asking for it gets 0.0.4 text, which
//! it accepts), compression, keep-alive, authentication.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[cfg(test)]
use super::LiveMetrics;
use super::{scrape, text, Source};

/// Most scrapes answered at once.
const MAX_SCRAPES: usize = 8;

/// The thread serving `GET /metrics` for a run; stopped when dropped.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MetricsServer {
    /// Listens on `addr` (a port in use or an address this machine lacks is an error here,
    /// before the run) and serves `metrics` (a run's [`super::LiveMetrics`], or a suite's).
    pub fn start(
        addr: SocketAddr,
        metrics: Arc<dyn Source + Send + Sync>,
    ) -> io::Result<MetricsServer> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("gatebench-metrics".into())
            .spawn(move || {
                let busy = Arc::new(std::sync::atomic::AtomicUsize::new(0));
                for conn in listener.incoming() {
                    if flag.load(Ordering::Relaxed) {
                        break;
                    }
                    let Ok(c) = conn else { continue };
                    // Each scrape on its own thread, so a client that sends nothing (its 2 s
                    // read timeout) holds up no other; past MAX_SCRAPES at once, dropped.
                    if busy.fetch_add(1, Ordering::AcqRel) >= MAX_SCRAPES {
                        busy.fetch_sub(1, Ordering::AcqRel);
                        continue;
                    }
                    let (metrics, done) = (metrics.clone(), busy.clone());
                    let spawned = std::thread::Builder::new()
                        .name("gatebench-scrape".into())
                        .spawn(move || {
                            let _ = answer(c, &*metrics);
                            done.fetch_sub(1, Ordering::AcqRel);
                        });
                    if spawned.is_err() {
                        busy.fetch_sub(1, Ordering::AcqRel);
                    }
                }
            })?;
        Ok(MetricsServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept with a connection of our own.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads one request head (bounded in size and time) and answers it: the exposition for
/// `GET /metrics`, 404 otherwise; then closes.
fn answer(mut c: TcpStream, metrics: &(dyn Source + Send + Sync)) -> io::Result<()> {
    c.set_read_timeout(Some(Duration::from_secs(2)))?;
    c.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        let n = c.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|b| *b == b'\n').next().unwrap_or(&[]);
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, ctype, body) = if (method == "GET" || method == "HEAD") && path == "/metrics" {
        let snap = metrics.snapshot();
        if wants_protobuf(&head) {
            ("200 OK", scrape::CONTENT_TYPE, scrape::encode(&snap))
        } else {
            (
                "200 OK",
                "text/plain; version=0.0.4; charset=utf-8",
                text::render(&snap).into_bytes(),
            )
        }
    } else {
        (
            "404 Not Found",
            "text/plain; charset=utf-8",
            b"gatebench serves GET /metrics only\n".to_vec(),
        )
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if method != "HEAD" {
        out.extend_from_slice(&body);
    }
    c.write_all(&out)
}

/// Whether a request head's `Accept` asks for the delimited protobuf exposition above the text
/// format: the weight (`q`, default 1) of its best media range for protobuf (with
/// `proto=io.prometheus.client.MetricFamily` and `encoding=delimited`) against that of its best
/// one text gatebench can serve (`text/plain`, `text/*`, `*/*`, or an OpenMetrics text, which
/// the 0.0.4 text stands in for). No `Accept` at all: text.
fn wants_protobuf(head: &[u8]) -> bool {
    let head = String::from_utf8_lossy(head);
    let (mut proto, mut text) = (0.0f64, 0.0f64);
    let mut any = false;
    for line in head.split("\r\n").skip(1) {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if !name.trim().eq_ignore_ascii_case("accept") {
            continue;
        }
        any = true;
        for range in value.split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("").to_ascii_lowercase();
            let (mut q, mut proto_ok, mut delimited) = (1.0f64, false, false);
            for p in parts {
                let Some((k, v)) = p.split_once('=') else {
                    continue;
                };
                let v = v.trim().trim_matches('"');
                match k.trim().to_ascii_lowercase().as_str() {
                    "q" => q = v.parse().unwrap_or(0.0),
                    "proto" => proto_ok = v == "io.prometheus.client.MetricFamily",
                    "encoding" => delimited = v == "delimited",
                    _ => {}
                }
            }
            match media.as_str() {
                "application/vnd.google.protobuf" if proto_ok && delimited => proto = proto.max(q),
                "text/plain" | "text/*" | "*/*" | "application/openmetrics-text" => {
                    text = text.max(q)
                }
                _ => {}
            }
        }
    }
    any && proto > 0.0 && proto > text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Prometheus 2.42 sends with native histograms on, what it sends without, and a
    /// client that asks for text only.
    #[test]
    fn accept_picks_the_form() {
        let head = |accept: &str| format!("GET /metrics HTTP/1.1\r\nAccept: {accept}\r\n\r\n");
        assert!(wants_protobuf(head(
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
        ).as_bytes()));
        assert!(!wants_protobuf(head(
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
        ).as_bytes()));
        assert!(!wants_protobuf(head("text/plain").as_bytes()));
        assert!(!wants_protobuf(head(
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text"
        ).as_bytes()));
        assert!(!wants_protobuf(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
    }

    #[test]
    fn a_protobuf_scrape_gets_protobuf() {
        let m = LiveMetrics::new(&[]);
        let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), m).unwrap();
        let mut c = TcpStream::connect(server.addr()).unwrap();
        write!(
            c,
            "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/vnd.google.protobuf;\
             proto=io.prometheus.client.MetricFamily;encoding=delimited\r\n\r\n"
        )
        .unwrap();
        let mut got = Vec::new();
        c.read_to_end(&mut got).unwrap();
        let split = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let head = String::from_utf8_lossy(&got[..split]);
        assert!(
            head.contains(&format!("Content-Type: {}", scrape::CONTENT_TYPE)),
            "{head}"
        );
        let fams = scrape::decode(&got[split + 4..]).unwrap();
        assert_eq!(fams[0].name, "gatebench_requests_sent_total");
    }

    #[test]
    fn the_server_answers_get_metrics_and_404_elsewhere() {
        let m = LiveMetrics::new(&[]);
        let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), m).unwrap();
        let get = |path: &str| {
            let mut c = TcpStream::connect(server.addr()).unwrap();
            write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            let mut s = String::new();
            c.read_to_string(&mut s).unwrap();
            s
        };
        // A client that connects and sends nothing holds up no scrape (it would for 2 s).
        let _silent = TcpStream::connect(server.addr()).unwrap();
        let t = std::time::Instant::now();
        let ok = get("/metrics");
        assert!(
            t.elapsed() < Duration::from_millis(1500),
            "{:?}",
            t.elapsed()
        );
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(
            ok.contains("\r\n\r\n# HELP gatebench_requests_sent_total"),
            "{ok}"
        );
        assert!(get("/").starts_with("HTTP/1.1 404"));
        drop(server);
    }
}
