//! Slow and hostile clients (docs/proxy.md, "Timers and limits"; issue 23): HTTP/2 connections
//! that never send their preface or go idle, the connection cap, stalled HTTP/2 bodies, clients
//! that stop reading (HTTP/1.1 and HTTP/2), rapid reset (CVE-2023-44487), repeated
//! Content-Length from an HTTP/2 client, and userinfo in a request target's authority.
//!
//! Timers are set short (300–500 ms) so the module stays fast; lower bounds are tight, upper
//! bounds generous (a loaded 2-core machine).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gatebench_services::{ProxyConfig, Timeouts};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

use crate::h2raw::{Outcome, RawH2, GOAWAY, PROTOCOL_ERROR, RST_STREAM};
use crate::support::{
    cert, contains, proxy_config, timeouts, tls_connect, Capture, Reply, Running, GET, PATIENCE,
};

const DATA: u8 = 0x0;
const END_STREAM: u8 = 0x1;
const NO_ERROR: u32 = 0x0;
const CANCEL: u32 = 0x8;
const ENHANCE_YOUR_CALM: u32 = 0xb;
/// The short timer each test sets for the behaviour it checks.
const SHORT: Duration = Duration::from_millis(400);

fn h2_proxy(upstream: String, timeouts: Timeouts) -> ProxyConfig {
    ProxyConfig {
        http2: true,
        timeouts,
        ..proxy_config(upstream)
    }
}

/// Reads until EOF (or a reset); true when it comes within `patience`. Frames and bytes the
/// server sends before are skipped; the last GOAWAY's error code, if any, is returned too.
async fn h2_closed_within<S: AsyncRead + Unpin>(
    stream: &mut S,
    patience: Duration,
) -> (bool, Option<u32>) {
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    let closed = loop {
        match tokio::time::timeout(patience, stream.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break true,
            Ok(Ok(n)) => seen.extend_from_slice(&chunk[..n]),
            Err(_) => break false,
        }
    };
    // Walk the frames: 9-byte headers, the payload after.
    let mut goaway = None;
    let mut at = 0;
    while at + 9 <= seen.len() {
        let len = u32::from_be_bytes([0, seen[at], seen[at + 1], seen[at + 2]]) as usize;
        if seen[at + 3] == GOAWAY && at + 9 + 8 <= seen.len() {
            goaway = Some(u32::from_be_bytes(
                seen[at + 13..at + 17].try_into().unwrap(),
            ));
        }
        at += 9 + len;
    }
    (closed, goaway)
}

#[tokio::test]
async fn h2c_preface_without_settings_is_closed_after_the_idle_timeout() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(h2_proxy(
        upstream.url(),
        Timeouts {
            client_idle: SHORT,
            ..timeouts()
        },
    ))
    .await;
    let mut stream = TcpStream::connect(proxy.addr).await.unwrap();
    let started = Instant::now();
    // The preface alone: the server's SETTINGS come back, the client's never go out.
    stream
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    let (closed, goaway) = h2_closed_within(&mut stream, PATIENCE).await;
    let took = started.elapsed();
    assert!(closed, "still open after {PATIENCE:?}");
    assert!(took >= SHORT && took < Duration::from_secs(5), "{took:?}");
    assert_eq!(goaway, Some(NO_ERROR));
    proxy.stop().await;
}

#[tokio::test]
async fn h2_over_tls_without_a_preface_is_closed_after_the_idle_timeout() {
    let upstream = Capture::start(Reply::Ok).await;
    let front = cert("hostile-tls-silent");
    let proxy = Running::proxy(ProxyConfig {
        tls: Some(front.settings.clone()),
        ..h2_proxy(
            upstream.url(),
            Timeouts {
                client_idle: SHORT,
                ..timeouts()
            },
        )
    })
    .await;
    let mut tls = tls_connect(proxy.addr, &front.pem, &[b"h2"]).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let started = Instant::now();
    let (closed, _) = h2_closed_within(&mut tls, PATIENCE).await;
    let took = started.elapsed();
    assert!(closed, "still open after {PATIENCE:?}");
    assert!(
        took >= SHORT / 2 && took < Duration::from_secs(5),
        "{took:?}"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn idle_h2_connection_gets_goaway_after_the_idle_timeout() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(h2_proxy(
        upstream.url(),
        Timeouts {
            client_idle: SHORT,
            ..timeouts()
        },
    ))
    .await;
    let mut h2 = RawH2::start(TcpStream::connect(proxy.addr).await.unwrap()).await;
    let get = [
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "localhost"),
    ];
    h2.headers(1, &get, true).await;
    assert_eq!(h2.outcome(1).await, Outcome::Status(200));
    let answered = Instant::now();
    // Read on until the GOAWAY (skipping the response's DATA), then the close.
    let goaway = loop {
        let frame = h2.read_frame().await.expect("a GOAWAY before the close");
        if frame.kind == GOAWAY {
            break u32::from_be_bytes(frame.payload[4..8].try_into().unwrap());
        }
    };
    let took = answered.elapsed();
    assert_eq!(goaway, NO_ERROR);
    assert!(
        took >= SHORT / 2 && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert!(h2.read_frame().await.is_none(), "closed after the GOAWAY");
    proxy.stop().await;
}

#[tokio::test]
async fn connections_past_the_cap_wait_until_one_ends() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(ProxyConfig {
        max_connections: 2,
        ..proxy_config(upstream.url())
    })
    .await;
    let mut first = proxy.connect().await;
    assert_eq!(first.request(GET).await.status, 200);
    let mut second = proxy.connect().await;
    assert_eq!(second.request(GET).await.status, 200);
    // The third is in the accept queue: connected, not served.
    let mut third = proxy.connect().await;
    third.send(GET).await;
    assert!(
        !third.closed_within(Duration::from_millis(500)).await,
        "the third connection was closed instead of waiting"
    );
    assert_eq!(
        upstream.requests(),
        2,
        "the third request was served past the cap"
    );
    drop(first);
    // Room again: the waiting connection is served.
    let answer = tokio::time::timeout(PATIENCE, third.answer(false))
        .await
        .expect("served once a connection ended");
    assert_eq!(answer.status, 200);
    assert_eq!(second.request(GET).await.status, 200);
    proxy.stop().await;
}

#[tokio::test]
async fn stalled_h2_request_body_gets_408_and_frees_its_upstream_connection() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(h2_proxy(
        upstream.url(),
        Timeouts {
            client_body: SHORT,
            response: Duration::from_secs(10),
            upstream_read: Duration::from_secs(10),
            ..timeouts()
        },
    ))
    .await;
    let mut h2 = RawH2::start(TcpStream::connect(proxy.addr).await.unwrap()).await;
    let post = [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "localhost"),
        ("content-length", "10"),
    ];
    h2.headers(1, &post, false).await;
    h2.frame(DATA, 0, 1, b"hello").await;
    let started = Instant::now();
    let outcome = h2.outcome(1).await;
    let took = started.elapsed();
    assert_eq!(outcome, Outcome::Status(408));
    assert!(
        took >= SHORT - Duration::from_millis(50) && took < Duration::from_secs(5),
        "{took:?}"
    );
    // The upstream saw half a body and then its connection closed: not pooled, not held.
    let deadline = Instant::now() + PATIENCE;
    while upstream.closed_by_peer.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(upstream.closed_by_peer.load(Ordering::SeqCst), 1);
    assert_eq!(
        upstream.requests(),
        0,
        "the upstream never got a whole request"
    );
    proxy.stop().await;
}

/// An upstream that answers every request with a `len`-byte body, written at once; counts the
/// connections whose peer (the proxy) closed them while the body was still being written.
struct BigUpstream {
    addr: SocketAddr,
    cut: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for BigUpstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl BigUpstream {
    async fn start(len: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let cut = Arc::new(AtomicUsize::new(0));
        let counted = cut.clone();
        let task = tokio::spawn(async move {
            let mut response =
                format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n").into_bytes();
            response.resize(response.len() + len, b'x');
            let response = Arc::new(response);
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let (response, counted) = (response.clone(), counted.clone());
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !contains(&head, b"\r\n\r\n") {
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&chunk[..n]),
                        }
                    }
                    if stream.write_all(&response).await.is_err() {
                        counted.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        });
        BigUpstream { addr, cut, task }
    }

    /// Waits (at most [`PATIENCE`]) for the proxy to cut one upstream connection.
    async fn wait_cut(&self) -> usize {
        let deadline = Instant::now() + PATIENCE;
        while self.cut.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.cut.load(Ordering::SeqCst)
    }
}

/// More than every socket buffer between the upstream and a client that does not read.
const BIG: usize = 64 * 1024 * 1024;

#[tokio::test]
async fn h1_client_that_stops_reading_is_cut_after_the_send_timeout() {
    let upstream = BigUpstream::start(BIG).await;
    let proxy = Running::proxy(ProxyConfig {
        timeouts: Timeouts {
            client_send: SHORT,
            ..timeouts()
        },
        ..proxy_config(format!("http://{}", upstream.addr))
    })
    .await;
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(proxy.addr).await.unwrap();
    stream.write_all(GET).await.unwrap();
    // Never read: the proxy must give up on this client and let the upstream go.
    assert_eq!(
        upstream.wait_cut().await,
        1,
        "the upstream connection was never let go"
    );
    drop(stream);
    proxy.stop().await;
}

#[tokio::test]
async fn h2_client_that_never_opens_its_window_gets_rst_stream_after_the_send_timeout() {
    let upstream = BigUpstream::start(BIG).await;
    let proxy = Running::proxy(h2_proxy(
        format!("http://{}", upstream.addr),
        Timeouts {
            client_send: SHORT,
            ..timeouts()
        },
    ))
    .await;
    let mut h2 = RawH2::start(TcpStream::connect(proxy.addr).await.unwrap()).await;
    let get = [
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "localhost"),
    ];
    h2.headers(1, &get, true).await;
    assert_eq!(h2.outcome(1).await, Outcome::Status(200));
    // The default window (65,535 bytes) comes in DATA; no WINDOW_UPDATE ever goes back.
    let mut data = 0usize;
    let reset = loop {
        let frame = h2
            .read_frame()
            .await
            .expect("a RST_STREAM before the close");
        match frame.kind {
            DATA => data += frame.payload.len(),
            RST_STREAM if frame.stream == 1 => {
                break u32::from_be_bytes(frame.payload[..4].try_into().unwrap())
            }
            _ => {}
        }
    };
    assert_eq!(reset, CANCEL);
    assert_eq!(data, 65_535, "the whole initial window was sent first");
    assert_eq!(
        upstream.wait_cut().await,
        1,
        "the upstream connection was never let go"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn rapid_reset_gets_goaway_before_a_hundred_upstream_requests() {
    let upstream = Capture::start(Reply::Hang).await;
    let proxy = Running::proxy(h2_proxy(upstream.url(), timeouts())).await;
    let mut h2 = RawH2::start(TcpStream::connect(proxy.addr).await.unwrap()).await;
    let get = [
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "localhost"),
    ];
    let mut sent = 0;
    for i in 0..300u32 {
        let stream = 2 * i + 1;
        h2.headers(stream, &get, true).await;
        // Reset only once the request went upstream: the stream was accepted and cost work.
        let deadline = Instant::now() + Duration::from_secs(2);
        while upstream.requests() <= i as usize && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if upstream.requests() <= i as usize {
            break;
        }
        h2.frame(RST_STREAM, 0, stream, &CANCEL.to_be_bytes()).await;
        sent += 1;
    }
    let goaway = loop {
        let frame = h2.read_frame().await.expect("a GOAWAY before the close");
        if frame.kind == GOAWAY {
            break u32::from_be_bytes(frame.payload[4..8].try_into().unwrap());
        }
    };
    assert_eq!(goaway, ENHANCE_YOUR_CALM);
    let requests = upstream.requests();
    assert!(
        requests <= 52,
        "{requests} upstream requests ({sent} resets) before the GOAWAY"
    );
    assert_eq!(requests, sent, "every reset stream had gone upstream");
    proxy.stop().await;
}

#[tokio::test]
async fn repeated_equal_content_length_from_h2_reaches_an_h1_upstream_once() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(h2_proxy(upstream.url(), timeouts())).await;
    let mut h2 = RawH2::start(TcpStream::connect(proxy.addr).await.unwrap()).await;
    let post = |length2: &'static str| {
        [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", "/"),
            (":authority", "localhost"),
            ("content-length", "5"),
            ("content-length", length2),
        ]
    };
    h2.headers(1, &post("5"), false).await;
    h2.frame(DATA, END_STREAM, 1, b"hello").await;
    assert_eq!(h2.outcome(1).await, Outcome::Status(200));
    let received = String::from_utf8_lossy(&upstream.all_bytes()).to_ascii_lowercase();
    assert_eq!(received.matches("content-length:").count(), 1, "{received}");
    assert!(received.ends_with("\r\n\r\nhello"), "{received}");
    // Different values: malformed (RFC 9113 §8.1.1; h2 resets the stream), never forwarded.
    h2.headers(3, &post("6"), false).await;
    h2.frame(DATA, END_STREAM, 3, b"hello").await;
    assert_eq!(h2.outcome(3).await, Outcome::Reset(PROTOCOL_ERROR));
    assert_eq!(upstream.requests(), 1);
    proxy.stop().await;
}

#[tokio::test]
async fn userinfo_in_an_absolute_form_target_is_refused() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(ProxyConfig {
        http2: true,
        ..proxy_config(upstream.url())
    })
    .await;
    let answer = proxy
        .connect()
        .await
        .request(b"GET http://user:secret@localhost/ HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await;
    assert_eq!(answer.status, 400);
    let mut h2 = RawH2::start(TcpStream::connect(proxy.addr).await.unwrap()).await;
    let get = [
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "user@localhost"),
    ];
    h2.headers(1, &get, true).await;
    assert_eq!(h2.outcome(1).await, Outcome::Status(400));
    assert_eq!(upstream.requests(), 0, "nothing went upstream");
    // The same target without userinfo is served.
    let answer = proxy
        .connect()
        .await
        .request(b"GET http://localhost/ HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await;
    assert_eq!(answer.status, 200);
    // Shutdown with the HTTP/2 client still connected, idle, never answering the graceful
    // shutdown's PING: its connection is closed after the half-second grace, not held for
    // the whole 5 s drain.
    let stopping = std::time::Instant::now();
    proxy.stop().await;
    let took = stopping.elapsed();
    assert!(took < Duration::from_secs(3), "the drain took {took:?}");
    drop(h2);
}

/// The balancer and the transform serve their clients with the same server as the proxy: an
/// HTTP/2 preface with nothing after it is closed after their idle timeout too, and their
/// connection cap holds.
#[tokio::test]
async fn balancer_and_transform_have_the_idle_deadline_and_the_cap() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = |max_connections| ProxyConfig {
        max_connections,
        ..h2_proxy(
            upstream.url(),
            Timeouts {
                client_idle: SHORT,
                ..timeouts()
            },
        )
    };
    let services = [
        Running::balance(gatebench_services::BalanceConfig {
            proxy: proxy(1),
            health: None,
            ejection: None,
        })
        .await,
        Running::transform(gatebench_services::TransformConfig {
            proxy: proxy(1),
            json: gatebench_services::json_xml::JsonXmlLimits::default(),
        })
        .await,
    ];
    for service in services {
        let mut stream = TcpStream::connect(service.addr).await.unwrap();
        let started = Instant::now();
        stream
            .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .await
            .unwrap();
        // The cap is 1: a second client waits while the first holds its connection.
        let mut second = service.connect().await;
        second.send(GET).await;
        assert!(!second.closed_within(SHORT / 2).await);
        let (closed, goaway) = h2_closed_within(&mut stream, PATIENCE).await;
        let took = started.elapsed();
        assert!(closed, "still open after {PATIENCE:?}");
        assert!(
            took >= SHORT / 2 && took < Duration::from_secs(5),
            "{took:?}"
        );
        assert_eq!(goaway, Some(NO_ERROR));
        // The first is gone: the second is served.
        let answer = tokio::time::timeout(PATIENCE, second.answer(false))
            .await
            .expect("served once the first connection ended");
        assert_eq!(answer.status, 200);
        service.stop().await;
    }
}

/// The echo backend is served by the same HTTP/2 server as the intermediaries, so it has the
/// same timers (set through `EchoLimits`), and a budget for the bodies one connection holds.
mod echo {
    use gatebench_services::echo::EchoLimits;
    use gatebench_services::EchoConfig;

    use super::*;
    use crate::h2raw::HEADERS;
    use crate::support::echo_config;

    const WINDOW_UPDATE: u8 = 0x8;

    fn h2c(limits: EchoLimits, config: EchoConfig) -> (EchoConfig, EchoLimits) {
        (
            EchoConfig {
                http2: true,
                ..config
            },
            limits,
        )
    }

    fn post(len: usize) -> [(&'static str, String); 5] {
        [
            (":method", "POST".into()),
            (":scheme", "http".into()),
            (":path", "/".into()),
            (":authority", "localhost".into()),
            ("content-length", len.to_string()),
        ]
    }

    async fn headers(h2: &mut RawH2<TcpStream>, stream: u32, fields: &[(&str, String)]) {
        let fields: Vec<(&str, &str)> = fields.iter().map(|(n, v)| (*n, v.as_str())).collect();
        h2.headers(stream, &fields, false).await;
    }

    #[tokio::test]
    async fn h2c_preface_without_settings_is_closed_after_the_idle_timeout() {
        let (config, limits) = h2c(
            EchoLimits {
                idle: SHORT,
                ..EchoLimits::default()
            },
            echo_config(),
        );
        let echo = Running::echo_with(config, limits).await;
        let mut stream = TcpStream::connect(echo.addr).await.unwrap();
        let started = Instant::now();
        stream
            .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .await
            .unwrap();
        let (closed, goaway) = h2_closed_within(&mut stream, PATIENCE).await;
        let took = started.elapsed();
        assert!(closed, "still open after {PATIENCE:?}");
        assert!(took >= SHORT && took < Duration::from_secs(5), "{took:?}");
        assert_eq!(goaway, Some(NO_ERROR));
        echo.stop().await;
    }

    #[tokio::test]
    async fn h2c_connection_that_sends_nothing_is_closed_after_the_idle_timeout() {
        let (config, limits) = h2c(
            EchoLimits {
                idle: SHORT,
                ..EchoLimits::default()
            },
            echo_config(),
        );
        let echo = Running::echo_with(config, limits).await;
        let mut stream = TcpStream::connect(echo.addr).await.unwrap();
        let started = Instant::now();
        let (closed, _) = h2_closed_within(&mut stream, PATIENCE).await;
        let took = started.elapsed();
        assert!(closed, "still open after {PATIENCE:?}");
        assert!(took >= SHORT && took < Duration::from_secs(5), "{took:?}");
        echo.stop().await;
    }

    #[tokio::test]
    async fn h2_client_that_never_opens_its_window_gets_rst_stream_after_the_send_timeout() {
        let (config, limits) = h2c(
            EchoLimits {
                send: SHORT,
                ..EchoLimits::default()
            },
            EchoConfig {
                get_size: 256 * 1024,
                ..echo_config()
            },
        );
        let echo = Running::echo_with(config, limits).await;
        let mut h2 = RawH2::start(TcpStream::connect(echo.addr).await.unwrap()).await;
        h2.headers(1, &GET_H2, true).await;
        assert_eq!(h2.outcome(1).await, Outcome::Status(200));
        let started = Instant::now();
        let mut data = 0usize;
        let reset = loop {
            let frame = h2
                .read_frame()
                .await
                .expect("a RST_STREAM before the close");
            match frame.kind {
                DATA => data += frame.payload.len(),
                RST_STREAM if frame.stream == 1 => {
                    break u32::from_be_bytes(frame.payload[..4].try_into().unwrap())
                }
                _ => {}
            }
        };
        let took = started.elapsed();
        assert_eq!(reset, CANCEL);
        assert_eq!(data, 65_535, "the whole initial window was sent first");
        assert!(
            took >= SHORT / 2 && took < Duration::from_secs(5),
            "{took:?}"
        );
        echo.stop().await;
    }

    #[tokio::test]
    async fn stalled_h2_request_body_gets_408_after_the_body_timeout() {
        let (config, limits) = h2c(
            EchoLimits {
                body: SHORT,
                ..EchoLimits::default()
            },
            echo_config(),
        );
        let echo = Running::echo_with(config, limits).await;
        let mut h2 = RawH2::start(TcpStream::connect(echo.addr).await.unwrap()).await;
        headers(&mut h2, 1, &post(100)).await;
        h2.frame(DATA, 0, 1, &[b'x'; 10]).await;
        let started = Instant::now();
        assert_eq!(h2.outcome(1).await, Outcome::Status(408));
        let took = started.elapsed();
        assert!(took >= SHORT && took < Duration::from_secs(5), "{took:?}");
        echo.stop().await;
    }

    /// Five streams each declaring a body of `max_body` on a connection whose budget is two
    /// bodies: two are taken (and echoed once their bodies come), three get 503 before sending
    /// a byte of body; once the two are echoed, the budget is back for the next stream. Before
    /// the budget, the connection held every body at once (`h2_max_streams` × `max_body`).
    #[tokio::test]
    async fn streams_past_the_connection_s_body_budget_get_503_and_the_budget_comes_back() {
        const BODY: usize = 30_000;
        let (config, limits) = h2c(
            EchoLimits {
                h2_body_budget: 2 * BODY,
                ..EchoLimits::default()
            },
            EchoConfig {
                max_body: BODY,
                ..echo_config()
            },
        );
        let echo = Running::echo_with(config, limits).await;
        let mut h2 = RawH2::start(TcpStream::connect(echo.addr).await.unwrap()).await;
        // Room on the connection for every echo (each stream's own 65,535 is enough).
        h2.frame(WINDOW_UPDATE, 0, 0, &(1u32 << 20).to_be_bytes())
            .await;
        let streams = [1, 3, 5, 7, 9];
        for stream in streams {
            headers(&mut h2, stream, &post(BODY)).await;
            h2.frame(DATA, 0, stream, &[b'a'; 1000]).await;
        }
        // The refused ones are answered at once (503, whose text tells it apart whatever HPACK
        // table the status was coded with); the taken ones wait for their bodies.
        let mut refused = Vec::new();
        while refused.len() < 3 {
            let frame = h2.read_frame().await.expect("three answers");
            if frame.kind == DATA {
                assert_eq!(
                    frame.payload, b"Service Unavailable",
                    "stream {}",
                    frame.stream
                );
                refused.push(frame.stream);
            }
        }
        let taken: Vec<u32> = streams
            .iter()
            .copied()
            .filter(|s| !refused.contains(s))
            .collect();
        assert_eq!(taken.len(), 2, "{refused:?}");
        for &stream in &taken {
            send_body(&mut h2, stream, BODY - 1000).await;
        }
        let echoed = read_echoes(&mut h2, &taken).await;
        assert_eq!(echoed, vec![(200, BODY); 2]);
        // Both echoes sent: the budget is whole again.
        headers(&mut h2, 11, &post(BODY)).await;
        send_body(&mut h2, 11, BODY).await;
        assert_eq!(read_echoes(&mut h2, &[11]).await, vec![(200, BODY)]);
        drop(h2);
        echo.stop().await;
    }

    /// A client that sends its preface and SETTINGS, then a thousand PINGs without reading a
    /// byte, gets GOAWAY(ENHANCE_YOUR_CALM) and a close (within the 1 s the GOAWAY is given to
    /// leave), while a client beside it on the same server is served.
    #[tokio::test]
    async fn ping_flood_gets_goaway_and_a_close_while_a_normal_client_is_served() {
        let (config, limits) = h2c(EchoLimits::default(), echo_config());
        let echo = Running::echo_with(config, limits).await;
        let mut flood = TcpStream::connect(echo.addr).await.unwrap();
        let mut bytes = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        bytes.extend_from_slice(&[0, 0, 0, 0x4, 0, 0, 0, 0, 0]);
        for i in 0..1000u64 {
            bytes.extend_from_slice(&[0, 0, 8, 0x6, 0, 0, 0, 0, 0]);
            bytes.extend_from_slice(&i.to_be_bytes());
        }
        let started = Instant::now();
        flood.write_all(&bytes).await.unwrap();
        let mut normal = RawH2::start(TcpStream::connect(echo.addr).await.unwrap()).await;
        normal.headers(1, &GET_H2, true).await;
        assert_eq!(normal.outcome(1).await, Outcome::Status(200));
        // Only now does the flooding client read: the server's SETTINGS, some PING ACKs, the
        // GOAWAY, then the end.
        let (closed, goaway) = h2_closed_within(&mut flood, PATIENCE).await;
        let took = started.elapsed();
        assert!(closed, "still open after {PATIENCE:?}");
        assert_eq!(goaway, Some(ENHANCE_YOUR_CALM));
        assert!(took < Duration::from_secs(5), "{took:?}");
        normal.headers(3, &GET_H2, true).await;
        assert_eq!(normal.outcome(3).await, Outcome::Status(200));
        drop(normal);
        echo.stop().await;
    }

    /// `len` bytes of body on `stream` in DATA frames of the default largest size, the last
    /// with END_STREAM.
    async fn send_body(h2: &mut RawH2<TcpStream>, stream: u32, mut len: usize) {
        while len > 0 {
            let piece = len.min(16_384);
            len -= piece;
            let flags = if len == 0 { END_STREAM } else { 0 };
            h2.frame(DATA, flags, stream, &vec![b'b'; piece]).await;
        }
    }

    /// The status and the DATA bytes of each of `streams`, read until every one ended.
    async fn read_echoes(h2: &mut RawH2<TcpStream>, streams: &[u32]) -> Vec<(u16, usize)> {
        let mut got = vec![(0u16, 0usize); streams.len()];
        let mut ended = vec![false; streams.len()];
        while ended.contains(&false) {
            let frame = h2.read_frame().await.expect("the echoes");
            let Some(i) = streams.iter().position(|&s| s == frame.stream) else {
                continue;
            };
            match frame.kind {
                HEADERS => got[i].0 = h2_status(&frame.payload),
                DATA => got[i].1 += frame.payload.len(),
                RST_STREAM => panic!("stream {} reset", frame.stream),
                _ => {}
            }
            if frame.flags & END_STREAM != 0 {
                ended[i] = true;
            }
        }
        got
    }

    fn h2_status(block: &[u8]) -> u16 {
        crate::h2raw::status(block)
    }

    const GET_H2: [(&str, &str); 4] = [
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "localhost"),
    ];
}
