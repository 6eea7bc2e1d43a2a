//! Upstream faults: refused, hanging, resetting, misframing, truncating and stalling upstreams,
//! and stale pooled connections.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use gatebench_services::{EchoConfig, ProxyConfig, UpstreamTls};
use tokio::net::TcpStream;

use crate::support::*;

fn proxy_status(answer: &Answer) -> &str {
    answer.header("proxy-status").unwrap_or_default()
}

#[tokio::test]
async fn refused_upstream_is_502_at_once() {
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let proxy = Running::proxy(proxy_config(format!("http://{dead}"))).await;
    let mut conn = proxy.connect().await;
    let started = Instant::now();
    let answer = conn.request(&post("/", b"x")).await;
    assert_eq!(answer.status, 502);
    assert!(
        proxy_status(&answer).contains("error=connection_refused"),
        "{answer:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    // An upstream error does not cost the client its connection.
    assert_eq!(conn.request(GET).await.status, 502);
    proxy.stop().await;
}

#[tokio::test]
async fn hanging_upstream_is_504_and_the_post_was_sent_once() {
    let upstream = Capture::start(Reply::Hang).await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let mut conn = proxy.connect().await;
    let started = Instant::now();
    let answer = conn.request(&post("/", b"pay-once")).await;
    let took = started.elapsed();
    assert_eq!(answer.status, 504);
    assert!(proxy_status(&answer).contains("http_response_timeout"));
    assert!(
        took >= Duration::from_millis(750),
        "answered after {took:?}"
    );
    assert!(took < Duration::from_secs(5), "answered after {took:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(upstream.requests(), 1, "the POST was sent exactly once");
    // The timed-out connection was closed, not pooled: a late answer cannot be mistaken for
    // the next request's.
    assert_eq!(upstream.closed_by_peer.load(Ordering::SeqCst), 1);
    proxy.stop().await;
}

#[tokio::test]
async fn reset_before_the_response_is_502() {
    let upstream = Capture::start(Reply::Reset).await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let mut conn = proxy.connect().await;
    let answer = conn.request(&post("/", b"x")).await;
    assert_eq!(answer.status, 502);
    assert!(
        proxy_status(&answer).contains("connection_terminated"),
        "{answer:?}"
    );
    assert_eq!(
        upstream.requests(),
        1,
        "a POST that reached the upstream is not re-sent"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn malformed_responses_are_502_and_their_connection_is_closed() {
    let cases: &[&[u8]] = &[
        b"garbage\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: evil\r\nConnection: upgrade\r\n\r\n",
    ];
    for raw in cases {
        let what = String::from_utf8_lossy(raw);
        let upstream = Capture::start(Reply::Raw(raw.to_vec())).await;
        let proxy = Running::proxy(ProxyConfig {
            tries: 1,
            ..proxy_config(upstream.url())
        })
        .await;
        let mut conn = proxy.connect().await;
        let answer = conn.request(GET).await;
        assert_eq!(answer.status, 502, "{what}");
        assert!(
            proxy_status(&answer).contains("http_protocol_error"),
            "{what}: {answer:?}"
        );
        let deadline = Instant::now() + PATIENCE;
        while upstream.closed_by_peer.load(Ordering::SeqCst) == 0 {
            assert!(Instant::now() < deadline, "{what}: the connection was kept");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // The next request gets a new connection.
        assert_eq!(conn.request(GET).await.status, 502);
        assert_eq!(upstream.connections.load(Ordering::SeqCst), 2, "{what}");
        proxy.stop().await;
    }
}

#[tokio::test]
async fn response_head_over_the_limit_is_502() {
    let mut raw = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..2000 {
        raw.extend_from_slice(format!("X-Filler-{i}: {}\r\n", "y".repeat(40)).as_bytes());
    }
    raw.extend_from_slice(b"Content-Length: 0\r\n\r\n");
    let upstream = Capture::start(Reply::Raw(raw)).await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let answer = proxy.connect().await.request(GET).await;
    assert_eq!(answer.status, 502);
    assert!(
        proxy_status(&answer).contains("http_response_header_section_size")
            || proxy_status(&answer).contains("http_protocol_error"),
        "{answer:?}"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn a_close_delimited_response_with_a_large_head_arrives_whole() {
    // A head of several times the upstream client's first read buffer (2 KiB), then a body
    // delimited by the close (HTTP/1.1 without framing fields, RFC 9112 §6.3 point 8).
    let mut raw = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..80 {
        raw.extend_from_slice(format!("X-Large-{i:02}: {}\r\n", "v".repeat(90)).as_bytes());
    }
    raw.extend_from_slice(b"\r\n");
    assert!(raw.len() > 8 * 1024);
    let body: Vec<u8> = (0..20_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    raw.extend_from_slice(&body);
    let upstream = Capture::start(Reply::RawThenClose(raw)).await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let answer = proxy.connect().await.request(GET).await;
    assert_eq!(answer.status, 200);
    assert!(answer.complete, "{answer:?}");
    assert_eq!(answer.body.len(), body.len());
    assert!(answer.body == body);
    proxy.stop().await;
}

#[tokio::test]
async fn failure_after_the_head_truncates_the_client_message() {
    // HTTP/1: Content-Length 100, 10 bytes, FIN: the client gets a short message and a close.
    let upstream = Capture::start(Reply::RawThenClose(
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789".to_vec(),
    ))
    .await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let mut conn = proxy.connect().await;
    let answer = conn.request(GET).await;
    assert_eq!(answer.status, 200);
    assert!(!answer.complete, "a truncated body must not look complete");
    // Every byte the upstream sent reaches the client, and nothing more.
    assert_eq!(answer.body, b"0123456789");
    // Chunked: no terminating chunk is invented.
    let upstream = Capture::start(Reply::RawThenClose(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n".to_vec(),
    ))
    .await;
    let proxy2 = Running::proxy(proxy_config(upstream.url())).await;
    let answer = proxy2.connect().await.request(GET).await;
    assert_eq!(answer.status, 200);
    assert!(!answer.complete, "{answer:?}");
    assert_eq!(answer.body, b"hello", "the chunk that came is forwarded");
    proxy2.stop().await;

    // A stall mid-body: cut after the upstream read timeout.
    let upstream = Capture::start(Reply::RawThenHang(
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789".to_vec(),
    ))
    .await;
    let proxy3 = Running::proxy(proxy_config(upstream.url())).await;
    let started = Instant::now();
    let answer = proxy3.connect().await.request(GET).await;
    assert!(!answer.complete);
    assert!(started.elapsed() >= Duration::from_millis(750));
    proxy3.stop().await;

    // HTTP/2: the stream is reset rather than ended.
    let front = cert("truncate-h2");
    let upstream = Capture::start(Reply::RawThenClose(
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789".to_vec(),
    ))
    .await;
    let proxy4 = Running::proxy(ProxyConfig {
        tls: Some(front.settings.clone()),
        http2: true,
        ..proxy_config(upstream.url())
    })
    .await;
    let mut h2 = H2::handshake(tls_connect(proxy4.addr, &front.pem, &[b"h2"]).await).await;
    let answer = h2.request("GET", "/", b"").await;
    assert_eq!(answer.status, 200);
    assert!(
        answer.body.is_err(),
        "HTTP/2 body ended cleanly: {answer:?}"
    );
    proxy4.stop().await;
    proxy.stop().await;
}

#[tokio::test]
async fn stale_pooled_connections_are_retried_transparently() {
    // The upstream closes every connection after its answer, without saying so.
    let upstream = Capture::start(Reply::OkThenClose).await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let mut conn = proxy.connect().await;
    // Back to back: a GET may find its pooled connection closing under it; it is retried.
    for _ in 0..20 {
        assert_eq!(conn.request(GET).await.status, 200);
    }
    // POSTs with a pause: the closed connection is noticed before it is reused (100 ms lets the
    // upstream's close arrive even on a loaded machine; without the check every POST would go
    // out on a closed connection, since the upstream closes after every answer).
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(conn.request(&post("/", b"p")).await.status, 200);
    }
    assert_eq!(
        upstream.requests(),
        30,
        "every request reached the upstream once"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn h2_upstream_connection_failure_is_502_and_recovers() {
    let (front, back) = (cert("h2fail-front"), cert("h2fail-back"));
    let mut echo = Running::echo(EchoConfig {
        tls: Some(back.settings.clone()),
        http2: true,
        ..echo_config()
    })
    .await;
    let echo_addr = echo.addr;
    let proxy = Running::proxy(ProxyConfig {
        tls: Some(front.settings.clone()),
        http2: true,
        upstream_tls: UpstreamTls {
            insecure: true,
            ..UpstreamTls::default()
        },
        ..proxy_config(echo.url(true))
    })
    .await;
    let mut h2 = H2::handshake(tls_connect(proxy.addr, &front.pem, &[b"h2"]).await).await;
    assert_eq!(h2.request("POST", "/", b"1").await.status, 200);
    echo.signal_stop();
    echo.stop().await;
    let answer = h2.request("POST", "/", b"2").await;
    assert_eq!(answer.status, 502, "{answer:?}");
    // The client's HTTP/2 connection survives an upstream failure.
    let echo = Running::echo(EchoConfig {
        tls: Some(back.settings.clone()),
        http2: true,
        ..echo_config()
    })
    .await;
    // Same port is not guaranteed; this only checks the proxy keeps serving.
    let _ = (echo_addr, TcpStream::connect(echo.addr).await);
    assert_eq!(
        h2.request("GET", "/__gatebench/health", b"").await.status,
        200
    );
    echo.stop().await;
    proxy.stop().await;
}

#[tokio::test]
async fn an_early_answer_while_the_body_is_still_going_up_is_forwarded() {
    let upstream = Capture::start(Reply::EarlyThenClose(
        b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo big!"
            .to_vec(),
    ))
    .await;
    let proxy = Running::proxy(ProxyConfig {
        max_body: 64 * 1024 * 1024,
        ..proxy_config(upstream.url())
    })
    .await;
    let body = vec![b'z'; 16 * 1024 * 1024];
    let mut conn = proxy.connect().await;
    let (mut reader, mut writer) = tokio::io::split(&mut conn.stream);
    let head = format!(
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let send = async {
        use tokio::io::AsyncWriteExt;
        let _ = writer.write_all(head.as_bytes()).await;
        let _ = writer.write_all(&body).await;
    };
    let receive = async {
        use tokio::io::AsyncReadExt;
        let mut got = Vec::new();
        let mut chunk = [0u8; 4096];
        while !contains(&got, b"too big!") {
            match tokio::time::timeout(PATIENCE, reader.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => got.extend_from_slice(&chunk[..n]),
                _ => break,
            }
        }
        got
    };
    let ((), got) = tokio::join!(
        async {
            let _ = tokio::time::timeout(PATIENCE, send).await;
        },
        receive
    );
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.ends_with("too big!"), "{text}");
    proxy.stop().await;
}

/// A client that leaves while its request waits on the upstream cancels the request: the
/// proxy closes the upstream exchange then, not when its response timeout (here 30 s) ends.
#[tokio::test]
async fn a_client_that_leaves_cancels_its_request_upstream() {
    let upstream = Capture::start(Reply::Hang).await;
    let mut config = proxy_config(upstream.url());
    config.timeouts.response = Duration::from_secs(30);
    let proxy = Running::proxy(config).await;
    let mut conn = proxy.connect().await;
    conn.send(GET).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while upstream.requests.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "the request never reached the upstream"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(conn);
    let left = Instant::now();
    while upstream.closed_by_peer.load(Ordering::SeqCst) == 0 {
        assert!(
            left.elapsed() < Duration::from_secs(10),
            "the upstream exchange outlived its client by 10 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    proxy.stop().await;
}
