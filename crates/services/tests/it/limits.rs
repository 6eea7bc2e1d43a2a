//! Limits and deadlines on the client side: slowloris heads, stalled bodies, oversized heads
//! and bodies, idle connections; and a graceful drain.

use std::time::{Duration, Instant};

use gatebench_services::{EchoConfig, ProxyConfig};
use tokio::net::TcpStream;

use crate::support::*;

#[tokio::test]
async fn slowloris_head_gets_408_at_the_deadline_even_while_bytes_trickle() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let (mut read, mut write) = TcpStream::connect(proxy.addr).await.unwrap().into_split();
    let started = Instant::now();
    // One byte every 20 ms until the proxy answers: the socket is never silent for long and the
    // head never ends, so only a total deadline (not an inactivity timer) can answer it.
    let trickle = tokio::spawn(async move {
        let head = b"GET / HTTP/1.1\r\nHost: a\r\nX-Slow: ";
        for &b in head.iter().chain(std::iter::repeat(&b'a')) {
            if write.write_all(&[b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let mut answer = Vec::new();
    let mut chunk = [0u8; 1024];
    let closed = loop {
        match tokio::time::timeout(PATIENCE, read.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break true,
            Ok(Ok(n)) => answer.extend_from_slice(&chunk[..n]),
            Err(_) => break false,
        }
    };
    let took = started.elapsed();
    trickle.abort();
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 408 "), "{text:?} after {took:?}");
    assert!(closed, "the connection closes after the 408");
    // The 800 ms deadline counts from the first byte; the slack is for a loaded machine.
    assert!(
        took >= Duration::from_millis(750) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert_eq!(upstream.all_bytes(), b"");
    proxy.stop().await;
}

#[tokio::test]
async fn silent_partial_head_gets_408() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let mut conn = proxy.connect().await;
    let started = Instant::now();
    conn.send(b"GET / HTTP/1.1\r\nHost: a\r\n").await;
    let answer = conn.answer(false).await;
    assert_eq!(answer.status, 408);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(750) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert!(conn.closed().await);
    proxy.stop().await;
}

#[tokio::test]
async fn idle_keep_alive_connections_close_quietly() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(ProxyConfig {
        timeouts: gatebench_services::Timeouts {
            client_idle: Duration::from_millis(600),
            ..timeouts()
        },
        ..proxy_config(upstream.url())
    })
    .await;
    let mut conn = proxy.connect().await;
    assert_eq!(conn.request(GET).await.status, 200);
    let mut rest = Vec::new();
    let started = Instant::now();
    let mut chunk = [0u8; 256];
    loop {
        match tokio::time::timeout(
            PATIENCE,
            tokio::io::AsyncReadExt::read(&mut conn.stream, &mut chunk),
        )
        .await
        {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => rest.extend_from_slice(&chunk[..n]),
            Err(_) => panic!("idle connection never closed"),
        }
    }
    assert!(rest.is_empty(), "no 408 for an idle connection: {rest:?}");
    assert!(started.elapsed() >= Duration::from_millis(500));
    proxy.stop().await;
}

#[tokio::test]
async fn oversized_heads_get_431_and_long_lines_414() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let long_line = format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "a".repeat(9000));
    let big_field = format!(
        "GET / HTTP/1.1\r\nHost: a\r\nX-Big: {}\r\n\r\n",
        "b".repeat(17_000)
    );
    let mut many = String::from("GET / HTTP/1.1\r\nHost: a\r\n");
    for i in 0..120 {
        many.push_str(&format!("X-{i}: a\r\n"));
    }
    many.push_str("\r\n");
    for (raw, status) in [(long_line, 414), (big_field, 431), (many, 431)] {
        let mut conn = proxy.connect().await;
        let answer = conn.request(raw.as_bytes()).await;
        assert_eq!(answer.status, status);
        assert!(conn.closed().await);
    }
    // A head that never ends is refused once it passes the limit, not buffered forever.
    let mut conn = proxy.connect().await;
    conn.send(b"GET / HTTP/1.1\r\nHost: a\r\n").await;
    for _ in 0..40 {
        conn.send(format!("X-Pad: {}\r\n", "c".repeat(500)).as_bytes())
            .await;
    }
    assert_eq!(conn.answer(false).await.status, 431);
    assert_eq!(upstream.all_bytes(), b"");
    proxy.stop().await;
}

#[tokio::test]
async fn bodies_over_the_limit_get_413_as_soon_as_known() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(ProxyConfig {
        max_body: 1000,
        ..proxy_config(upstream.url())
    })
    .await;
    // Declared: refused before a byte of the body is sent.
    let mut conn = proxy.connect().await;
    conn.send(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1001\r\n\r\n")
        .await;
    let answer = conn.answer(false).await;
    assert_eq!(answer.status, 413);
    assert!(conn.closed().await);
    assert_eq!(upstream.all_bytes(), b"");
    // At the limit: forwarded.
    let mut conn = proxy.connect().await;
    assert_eq!(conn.request(&post("/", &[b'x'; 1000])).await.status, 200);
    // Chunked: refused mid-body once the running total passes the limit.
    let mut conn = proxy.connect().await;
    conn.send(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
        .await;
    for _ in 0..3 {
        conn.send(format!("190\r\n{}\r\n", "y".repeat(400)).as_bytes())
            .await;
    }
    let answer = conn.answer(false).await;
    assert_eq!(answer.status, 413);
    assert!(conn.closed().await);
    assert_eq!(
        upstream.requests(),
        1,
        "only the request at the limit was completed upstream"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn a_stalled_request_body_fails_after_the_body_timeout() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let mut conn = proxy.connect().await;
    let started = Instant::now();
    conn.send(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc")
        .await;
    // The proxy answers 408 (or just closes) after the stall; it never waits forever.
    let mut got = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        match tokio::time::timeout(
            PATIENCE,
            tokio::io::AsyncReadExt::read(&mut conn.stream, &mut chunk),
        )
        .await
        {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => got.extend_from_slice(&chunk[..n]),
            Err(_) => panic!("stalled body held the connection"),
        }
    }
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(750) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert!(
        got.is_empty() || got.starts_with(b"HTTP/1.1 408"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    assert_eq!(upstream.requests(), 0);
    proxy.stop().await;
}

#[tokio::test]
async fn http2_body_limit_refuses_the_stream_not_the_connection() {
    let echo = Running::echo(echo_config()).await;
    let proxy = Running::proxy(ProxyConfig {
        http2: true,
        max_body: 100,
        ..proxy_config(echo.url(false))
    })
    .await;
    let mut h2 = H2::handshake(TcpStream::connect(proxy.addr).await.unwrap()).await;
    assert_eq!(h2.request("POST", "/", &[1; 101]).await.status, 413);
    let answer = h2.request("POST", "/", &[1; 100]).await;
    assert_eq!((answer.status, answer.body.unwrap().len()), (200, 100));
    proxy.stop().await;
    echo.stop().await;
}

#[tokio::test]
async fn shutdown_lets_an_in_flight_request_finish() {
    // The upstream holds the answer 1 s; shutdown starts 400 ms after the request left, time
    // enough on a loaded machine for it to have reached the upstream, and well inside the
    // delay, so the request is in flight when the drain begins.
    let echo = Running::echo(EchoConfig {
        delay: Duration::from_secs(1),
        ..echo_config()
    })
    .await;
    let mut proxy = Running::proxy(ProxyConfig {
        timeouts: gatebench_services::Timeouts {
            response: Duration::from_secs(5),
            ..timeouts()
        },
        ..proxy_config(echo.url(false))
    })
    .await;
    let mut conn = proxy.connect().await;
    conn.send(&post("/", b"last one")).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    proxy.signal_stop();
    let answer = conn.answer(false).await;
    assert_eq!(
        (answer.status, answer.body.as_slice()),
        (200, &b"last one"[..])
    );
    proxy.stop().await;
    echo.stop().await;
}

/// The same over HTTP/2 (h2c): the drain sends GOAWAY, the stream in flight still gets its
/// whole answer, and serving returns once it has.
#[tokio::test]
async fn shutdown_lets_an_in_flight_h2_stream_finish() {
    let echo = Running::echo(EchoConfig {
        delay: Duration::from_secs(1),
        ..echo_config()
    })
    .await;
    let mut proxy = Running::proxy(ProxyConfig {
        http2: true,
        timeouts: gatebench_services::Timeouts {
            response: Duration::from_secs(5),
            ..timeouts()
        },
        ..proxy_config(echo.url(false))
    })
    .await;
    let mut h2 = H2::handshake(TcpStream::connect(proxy.addr).await.unwrap()).await;
    let in_flight = tokio::spawn(async move { h2.request("POST", "/", b"last one").await });
    tokio::time::sleep(Duration::from_millis(400)).await;
    proxy.signal_stop();
    let answer = in_flight.await.unwrap();
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body.unwrap(), b"last one");
    proxy.stop().await;
    echo.stop().await;
}

#[tokio::test]
async fn invalid_configuration_is_refused_before_serving() {
    use gatebench_services::proxy;
    for (config, needle) in [
        (ProxyConfig::new(vec![]), "at least one upstream"),
        (ProxyConfig::new(vec!["ftp://x".into()]), "scheme"),
        (
            ProxyConfig::new(vec!["http://a:1".into(), "http://b:1".into()]),
            "balance",
        ),
        (
            ProxyConfig {
                tries: 0,
                ..ProxyConfig::new(vec!["http://127.0.0.1:1".into()])
            },
            "tries",
        ),
    ] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let err = proxy::serve(listener, config, std::future::pending())
            .await
            .unwrap_err();
        assert!(err.to_string().contains(needle), "{err}");
    }
}

/// The idle timeout counts from the last request, not the first: a connection used again
/// shortly before its first idle deadline stays open past it.
#[tokio::test]
async fn the_idle_timeout_restarts_with_each_request() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(ProxyConfig {
        timeouts: gatebench_services::Timeouts {
            client_idle: Duration::from_millis(800),
            ..timeouts()
        },
        ..proxy_config(upstream.url())
    })
    .await;
    let mut conn = proxy.connect().await;
    assert_eq!(conn.request(GET).await.status, 200);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(conn.request(GET).await.status, 200);
    let second = Instant::now();
    let mut chunk = [0u8; 256];
    let closed = tokio::time::timeout(
        PATIENCE,
        tokio::io::AsyncReadExt::read(&mut conn.stream, &mut chunk),
    )
    .await
    .expect("the idle connection closes");
    assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
    // Counted from the first request it would have closed about 300 ms after the second.
    assert!(
        second.elapsed() >= Duration::from_millis(650),
        "closed {:?} after the second request",
        second.elapsed()
    );
    proxy.stop().await;
}
