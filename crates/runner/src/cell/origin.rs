//! A load cell's origin statistics: what its echo back-ends saw of the intermediary in front
//! of them. The runner starts every built-in echo back-end (`serve = "echo …"`) with `--stats`,
//! reads `GET /__gatebench/origin` from each when the measurement starts (at the warm-up's
//! planned end, on a thread of its own, as the CPU marks are taken) and again when the load
//! has ended, before the back-ends stop, and records the difference, so the warm-up's
//! connections do not count. The echo leaves the reading's own connection out of its counts.
//!
//! The rule: a figure is recorded only when both readings of every back-end succeeded; a
//! reading that fails is warned about and the cell keeps its other figures (no origin
//! section), never a partial or estimated one.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use gatebench_model::{OriginBackend, OriginReport};

use crate::launch::ProcessSpec;

/// The reserved path of the echo's statistics.
const PATH: &str = "/__gatebench/origin";
/// How long one reading may take.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// An echo back-end whose statistics are read.
#[derive(Clone, Debug)]
pub(super) struct OriginSource {
    /// `backend-N`.
    pub(super) name: String,
    pub(super) addr: SocketAddr,
    /// It listens with TLS.
    pub(super) tls: bool,
}

/// Makes `spec` count its origin statistics when it is a built-in echo (`serve echo …`);
/// returns where to read them.
pub(super) fn count_if_echo(
    spec: &mut ProcessSpec,
    serve: bool,
    addr: SocketAddr,
    tls: bool,
) -> Option<OriginSource> {
    if !serve || spec.args.get(1).map(String::as_str) != Some("echo") {
        return None;
    }
    if !spec.args.iter().any(|a| a == "--stats") {
        spec.args.push("--stats".to_owned());
    }
    Some(OriginSource {
        name: spec.name.clone(),
        addr,
        tls,
    })
}

/// The readings at the measurement's start, under way.
pub(super) struct OriginMarks {
    sources: Vec<OriginSource>,
    start: JoinHandle<Vec<Result<OriginBackend, String>>>,
}

impl OriginMarks {
    /// Reads every source at `at` (the warm-up's end) on a thread of its own; `None` without a
    /// source.
    pub(super) fn spawn(sources: Vec<OriginSource>, at: Instant) -> Option<OriginMarks> {
        if sources.is_empty() {
            return None;
        }
        let read = sources.clone();
        let start = std::thread::spawn(move || {
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
            read.iter().map(reading).collect()
        });
        Some(OriginMarks { sources, start })
    }

    /// Reads every source again and returns the differences; `None` (warned) when a reading
    /// failed.
    pub(super) fn finish(self, cell: &str) -> Option<OriginReport> {
        let start = self.start.join().ok()?;
        let mut backends = Vec::with_capacity(self.sources.len());
        for (source, first) in self.sources.iter().zip(start) {
            let last = reading(source);
            match (first, last) {
                (Ok(first), Ok(last)) => backends.push(difference(&first, last)),
                (Err(e), _) | (_, Err(e)) => {
                    tracing::warn!("{cell}: no origin statistics from {}: {e}", source.name);
                    return None;
                }
            }
        }
        Some(OriginReport { backends })
    }
}

/// What was counted between `first` and `last`.
fn difference(first: &OriginBackend, last: OriginBackend) -> OriginBackend {
    let d = |a: u64, b: u64| b.saturating_sub(a);
    OriginBackend {
        connections_opened: d(first.connections_opened, last.connections_opened),
        connections_h1: d(first.connections_h1, last.connections_h1),
        connections_h2: d(first.connections_h2, last.connections_h2),
        connections_closed: d(first.connections_closed, last.connections_closed),
        requests: d(first.requests, last.requests),
        h2_streams: d(first.h2_streams, last.h2_streams),
        tls_handshakes_full: d(first.tls_handshakes_full, last.tls_handshakes_full),
        tls_handshakes_resumed: d(first.tls_handshakes_resumed, last.tls_handshakes_resumed),
        ..last
    }
}

/// One reading of `source`'s statistics.
fn reading(source: &OriginSource) -> Result<OriginBackend, String> {
    let body = get(source).map_err(|e| format!("{}{PATH}: {e}", source.addr))?;
    let v: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| format!("{}{PATH} is not the echo's statistics: {e}", source.addr))?;
    let n = |k: &str| {
        v[k].as_u64()
            .ok_or_else(|| format!("{}{PATH} has no {k} (is it a gatebench echo?)", source.addr))
    };
    Ok(OriginBackend {
        name: source.name.clone(),
        id: v["id"].as_str().map(str::to_owned),
        connections_opened: n("connections_opened")?,
        connections_h1: n("connections_h1")?,
        connections_h2: n("connections_h2")?,
        connections_closed: n("connections_closed")?,
        requests: n("requests")?,
        h2_streams: n("h2_streams")?,
        tls_handshakes_full: n("tls_handshakes_full")?,
        tls_handshakes_resumed: n("tls_handshakes_resumed")?,
    })
}

/// `GET /__gatebench/origin` over HTTP/1.1 (over TLS without verifying the certificate: the
/// runner started this echo itself), `Connection: close`; the body of a 200.
fn get(source: &OriginSource) -> std::io::Result<Vec<u8>> {
    let tcp = TcpStream::connect_timeout(&source.addr, READ_TIMEOUT)?;
    tcp.set_read_timeout(Some(READ_TIMEOUT))?;
    tcp.set_write_timeout(Some(READ_TIMEOUT))?;
    let request = format!(
        "GET {PATH} HTTP/1.1\r\nHost: {}\r\nUser-Agent: gatebench-runner\r\nConnection: close\r\n\r\n",
        source.addr
    );
    let mut answer = Vec::new();
    if source.tls {
        let mut tls = rustls::StreamOwned::new(tls_client(source)?, tcp);
        tls.write_all(request.as_bytes())?;
        read_to_close(&mut tls, &mut answer)?;
    } else {
        let mut tcp = tcp;
        tcp.write_all(request.as_bytes())?;
        read_to_close(&mut tcp, &mut answer)?;
    }
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no complete response head"))?;
    if !answer.starts_with(b"HTTP/1.1 200 ") {
        return Err(std::io::Error::other(format!(
            "answered {:?} (is the echo started with --stats?)",
            String::from_utf8_lossy(&answer[..split.min(40)])
        )));
    }
    Ok(answer.split_off(split + 4))
}

/// Reads until the server closes (a TLS close without close_notify counts as the end).
fn read_to_close(r: &mut impl Read, out: &mut Vec<u8>) -> std::io::Result<()> {
    match r.read_to_end(out) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !out.is_empty() => Ok(()),
        Err(e) => Err(e),
    }
}

/// A TLS client that accepts the echo's (self-signed) certificate.
fn tls_client(source: &OriginSource) -> std::io::Result<rustls::ClientConnection> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(gatebench_tls::AcceptAnyCertificate(provider)))
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::IpAddress(source.addr.ip().into());
    rustls::ClientConnection::new(Arc::new(config), name).map_err(std::io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_difference_leaves_the_warm_up_out_and_keeps_the_names() {
        let first = OriginBackend {
            name: "backend-1".into(),
            connections_opened: 10,
            requests: 100,
            ..OriginBackend::default()
        };
        let last = OriginBackend {
            id: Some("a".into()),
            connections_opened: 12,
            connections_closed: 3,
            requests: 1100,
            ..first.clone()
        };
        let d = difference(&first, last);
        assert_eq!(
            (d.connections_opened, d.connections_closed, d.requests),
            (2, 3, 1000)
        );
        assert_eq!((d.name.as_str(), d.id.as_deref()), ("backend-1", Some("a")));
    }

    #[test]
    fn only_a_built_in_echo_is_made_to_count() {
        let spec = |args: &[&str]| ProcessSpec {
            name: "backend-1".into(),
            program: "gatebench".into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            workdir: None,
            log: None,
            cpus: None,
            remote: None,
        };
        let addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let mut echo = spec(&["serve", "echo", "--port", "9"]);
        assert!(count_if_echo(&mut echo, true, addr, false).is_some());
        assert_eq!(echo.args.last().map(String::as_str), Some("--stats"));
        let mut proxy = spec(&["serve", "proxy", "--port", "9"]);
        assert!(count_if_echo(&mut proxy, true, addr, false).is_none());
        let mut command = spec(&["-c", "echo hi"]);
        assert!(count_if_echo(&mut command, false, addr, false).is_none());
        assert_eq!(command.args.len(), 2);
    }
}
