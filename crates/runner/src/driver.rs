//! The network side of a cell: waiting until a process is ready, verifying the target answers
//! correctly, and running the load. [`Driver`] is the seam tests replace; [`NetDriver`] is the
//! real one, over `gatebench-loadgen`.
//!
//! Readiness is a plain HTTP/1.1 GET over `std::net` (for `ready = "http://…"`), or "the port
//! accepts a TCP connection" (the default, and for `https://` readiness URLs: this crate has no
//! TLS client; the load generator's probe that follows checks the real answer).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gatebench_loadgen::metrics::LiveMetrics;
use gatebench_loadgen::{IntervalView, LoadConfig, LoadSpec, Protocol as LoadProtocol, RunOptions};
use gatebench_model::LoadReport;

use crate::error::RunnerError;
use crate::suite::Protocol;

/// How a process shows it is ready.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadyCheck {
    /// The port accepts a TCP connection.
    Port(SocketAddr),
    /// A GET of this URL answers 2xx.
    Url(String),
}

/// The network operations of a cell.
pub trait Driver {
    /// One attempt: `Ok(())` when ready, `Err(why not)` otherwise. Called repeatedly until it
    /// succeeds, the process exits, or the ready timeout passes.
    fn check_ready(&mut self, check: &ReadyCheck) -> Result<(), RunnerError>;
    /// Sends one request as the load will and checks the answer (2xx, and the echoed body
    /// when verifying); a wrong answer is [`RunnerError::Verification`].
    fn verify(&mut self, config: &LoadConfig) -> Result<(), RunnerError>;
    /// Runs the load; `on_interval` gets the live view once a second (for the display). The
    /// report keeps every second with its latency histogram (`timeline`), which the cell's
    /// `timeline.csv` and `latency.hlog` are made from; `metrics`, when given, gets its live
    /// figures (`gatebench run --metrics`). A failure is [`RunnerError::Load`].
    fn load(
        &mut self,
        config: LoadConfig,
        on_interval: &mut dyn FnMut(&IntervalView),
        stop: Arc<AtomicBool>,
        metrics: Option<Arc<LiveMetrics>>,
    ) -> Result<LoadReport, RunnerError>;
}

/// Makes the load speak protocol `p`: the one place the suite's protocols meet the load
/// generator. The URL already has the protocol's scheme (`https://` for h1 and h2).
///
/// TLS is used with `insecure` (any certificate accepted): the built-in services, and most
/// systems under test on a benchmark machine, present self-signed certificates, and what is
/// measured is the protocol's cost, not the PKI. One user is one connection with one stream,
/// as in JMeter's HTTP/2 sampler; HTTP/2 multiplexing is a separate experiment.
pub fn apply_protocol(spec: &mut LoadSpec, p: Protocol) -> Result<(), RunnerError> {
    let tls = spec.url.starts_with("https://");
    if tls != p.tls() {
        return Err(RunnerError::ProtocolScheme {
            protocol: p.name(),
            tls: p.tls(),
            url: spec.url.clone(),
        });
    }
    spec.protocol = match p {
        Protocol::H1c | Protocol::H1 => LoadProtocol::Http1,
        Protocol::H2 | Protocol::H2c => LoadProtocol::Http2,
    };
    spec.streams = 1;
    spec.tls.insecure = p.tls();
    Ok(())
}

/// The real driver.
#[derive(Debug, Default)]
pub struct NetDriver;

/// Timeout of one readiness attempt.
const READY_ATTEMPT_TIMEOUT: Duration = Duration::from_millis(500);

impl Driver for NetDriver {
    fn check_ready(&mut self, check: &ReadyCheck) -> Result<(), RunnerError> {
        match check {
            ReadyCheck::Port(addr) => TcpStream::connect_timeout(addr, READY_ATTEMPT_TIMEOUT)
                .map(drop)
                .map_err(|error| RunnerError::NotAccepting { addr: *addr, error }),
            ReadyCheck::Url(url) => http_get_status(url).and_then(|status| {
                if (200..300).contains(&status) {
                    Ok(())
                } else {
                    Err(RunnerError::ReadyStatus {
                        url: url.clone(),
                        status,
                    })
                }
            }),
        }
    }

    fn verify(&mut self, config: &LoadConfig) -> Result<(), RunnerError> {
        gatebench_loadgen::probe(config).map_err(|e| RunnerError::Verification {
            reason: e.to_string(),
        })
    }

    fn load(
        &mut self,
        config: LoadConfig,
        on_interval: &mut dyn FnMut(&IntervalView),
        stop: Arc<AtomicBool>,
        metrics: Option<Arc<LiveMetrics>>,
    ) -> Result<LoadReport, RunnerError> {
        gatebench_loadgen::run(
            config,
            RunOptions {
                hlog: None,
                on_interval: Some(on_interval),
                stop: Some(stop),
                anchor: None,
                timeline: true,
                metrics,
                on_second: None,
            },
        )
        .map(|o| o.report)
        .map_err(|e| {
            let mut msg = e.to_string();
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                msg.push_str(&format!(": {s}"));
                src = s.source();
            }
            RunnerError::Load { reason: msg }
        })
    }
}

/// GETs `url` and returns the status code. `https://` URLs only check that the port accepts
/// connections (200 when it does).
fn http_get_status(url: &str) -> Result<u16, RunnerError> {
    let failed = |what: &'static str, error: Option<std::io::Error>| RunnerError::ReadyRequest {
        url: url.to_owned(),
        what,
        error,
    };
    let (tls, rest) = if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else {
        return Err(failed("not an http:// URL", None));
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let with_port = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        authority.to_owned()
    } else {
        format!("{authority}:{}", if tls { 443 } else { 80 })
    };
    let addr = with_port
        .to_socket_addrs()
        .map_err(|e| failed("cannot resolve", Some(e)))?
        .next()
        .ok_or_else(|| failed("no address", None))?;
    let mut s = TcpStream::connect_timeout(&addr, READY_ATTEMPT_TIMEOUT)
        .map_err(|e| failed("cannot connect", Some(e)))?;
    if tls {
        return Ok(200);
    }
    s.set_read_timeout(Some(READY_ATTEMPT_TIMEOUT))
        .and_then(|_| s.set_write_timeout(Some(READY_ATTEMPT_TIMEOUT)))
        .map_err(|e| failed("", Some(e)))?;
    // One write: a server that answers after its first read must see the whole request.
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: gatebench-ready\r\nConnection: close\r\n\r\n"
    );
    s.write_all(request.as_bytes())
        .map_err(|e| failed("cannot send", Some(e)))?;
    let mut head = [0u8; 64];
    let mut n = 0;
    while n < 12 {
        match s.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => return Err(failed("no answer", Some(e))),
        }
    }
    let line = String::from_utf8_lossy(&head[..n]);
    line.strip_prefix("HTTP/1.")
        .and_then(|r| r.get(2..5))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| failed("not an HTTP answer", None))
}

/// Polls `check` every 50 ms until it passes, `exited` reports the process gone, or `timeout`
/// passes: [`RunnerError::Exited`], [`RunnerError::Interrupted`] or
/// [`RunnerError::ReadyTimeout`] with the last attempt's answer as its cause.
pub fn wait_ready(
    driver: &mut dyn Driver,
    check: &ReadyCheck,
    timeout: Duration,
    exited: &mut dyn FnMut() -> Option<String>,
    stop: &AtomicBool,
) -> Result<(), RunnerError> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(how) = exited() {
            return Err(RunnerError::Exited { how });
        }
        let last = match driver.check_ready(check) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(RunnerError::Interrupted);
        }
        if Instant::now() >= deadline {
            return Err(RunnerError::ReadyTimeout {
                after: timeout,
                last: Box::new(last),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn every_protocol_maps_to_the_load_generator() {
        for (p, scheme, want, recorded) in [
            (Protocol::H1c, "http", LoadProtocol::Http1, "http/1.1"),
            (Protocol::H1, "https", LoadProtocol::Http1, "http/1.1"),
            (Protocol::H2, "https", LoadProtocol::Http2, "h2"),
            (Protocol::H2c, "http", LoadProtocol::Http2, "h2c"),
        ] {
            let mut spec = LoadSpec::new(format!("{scheme}://127.0.0.1:1/"));
            apply_protocol(&mut spec, p).unwrap();
            assert_eq!(spec.protocol, want, "{p:?}");
            assert_eq!(spec.tls.insecure, p.tls(), "{p:?}");
            let config = LoadConfig::try_new(spec).unwrap();
            assert_eq!(config.record().protocol, recorded, "{p:?}");
        }
        let mut spec = LoadSpec::new("http://127.0.0.1:1/");
        let e = apply_protocol(&mut spec, Protocol::H2)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("protocol h2 needs an https:// URL"), "{e}");
    }

    #[test]
    fn readiness_by_url_reads_the_status() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            for answer in [
                "HTTP/1.1 503 Busy\r\n\r\n",
                "HTTP/1.1 204 No Content\r\n\r\n",
            ] {
                let (mut c, _) = l.accept().unwrap();
                let mut req = Vec::new();
                let mut buf = [0u8; 512];
                while !req.ends_with(b"\r\n\r\n") {
                    let n = c.read(&mut buf).unwrap();
                    assert!(n > 0, "the request ended early");
                    req.extend_from_slice(&buf[..n]);
                }
                assert!(req.starts_with(b"GET /health HTTP/1.1\r\n"));
                c.write_all(answer.as_bytes()).unwrap();
            }
        });
        let url = ReadyCheck::Url(format!("http://{addr}/health"));
        let e = NetDriver.check_ready(&url).unwrap_err().to_string();
        assert!(e.ends_with("answered 503"), "{e}");
        assert!(NetDriver.check_ready(&url).is_ok());
        t.join().unwrap();
    }

    #[test]
    fn waiting_stops_when_the_process_exits() {
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let stop = AtomicBool::new(false);
        let e = wait_ready(
            &mut NetDriver,
            &ReadyCheck::Port(addr),
            Duration::from_secs(30),
            &mut || Some("exited with status 2".into()),
            &stop,
        )
        .unwrap_err();
        assert_eq!(e.chain(), "exited with status 2");
    }

    #[test]
    fn a_timeout_says_what_the_last_attempt_answered() {
        // A port nothing listens on: bound, then closed.
        let addr = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let stop = AtomicBool::new(false);
        let e = wait_ready(
            &mut NetDriver,
            &ReadyCheck::Port(addr),
            Duration::ZERO,
            &mut || None,
            &stop,
        )
        .unwrap_err();
        let want = format!("not ready after 0s: {addr} does not accept connections (");
        assert!(e.chain().starts_with(&want), "{}", e.chain());
        let e = NetDriver
            .check_ready(&ReadyCheck::Url("ftp://x/".into()))
            .unwrap_err();
        assert_eq!(e.chain(), "ftp://x/: not an http:// URL");
    }
}
