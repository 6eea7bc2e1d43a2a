//! Passthrough: every seed-004 protocol pair, connection pooling, streaming both ways, and the
//! intermediary header rules as the upstream and the client see them.

use std::time::{Duration, Instant};

use gatebench_services::{EchoConfig, ProxyConfig, UpstreamTls};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::h2raw::{Outcome, RawH2, PROTOCOL_ERROR};
use crate::support::*;

fn via_token(answer_via: &str) -> &str {
    answer_via.split(' ').nth(1).unwrap()
}

#[tokio::test]
async fn h1c_to_h1c_echoes_through_the_proxy() {
    let echo = Running::echo(echo_config()).await;
    let proxy = Running::proxy(proxy_config(echo.url(false))).await;
    let mut conn = proxy.connect().await;
    let answer = conn.request(&post("/x", b"hello proxy")).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body, b"hello proxy");
    assert_eq!(
        answer.header("content-type"),
        Some("application/octet-stream")
    );
    assert!(answer.header("via").unwrap().starts_with("1.1 gatebench-"));
    // Keep-alive: a second request on the same client connection.
    let answer = conn.request(GET).await;
    assert_eq!(answer.body, b"Hello, world!");
    // HEAD keeps the length and sends no body.
    let answer = conn.request(b"HEAD / HTTP/1.1\r\nHost: a\r\n\r\n").await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("content-length"), Some("13"));
    assert_eq!(conn.request(GET).await.status, 200);
    // The proxy's own health endpoint.
    let answer = conn
        .request(b"GET /__gatebench/health HTTP/1.1\r\nHost: a\r\n\r\n")
        .await;
    assert_eq!((answer.status, answer.body.as_slice()), (200, &b"ok\n"[..]));
    proxy.stop().await;
    echo.stop().await;
}

/// `serve --delay` and `--work` on an intermediary: each request costs at least what was asked
/// (a wait, or CPU), and the health endpoint none of it.
#[tokio::test]
async fn an_added_delay_or_work_slows_every_forwarded_request() {
    let echo = Running::echo(echo_config()).await;
    for (delay, work) in [
        (Duration::from_millis(200), Duration::ZERO),
        (Duration::ZERO, Duration::from_millis(200)),
    ] {
        let proxy = Running::proxy(ProxyConfig {
            added_delay: delay,
            added_work: work,
            ..proxy_config(echo.url(false))
        })
        .await;
        let mut conn = proxy.connect().await;
        for _ in 0..3 {
            let t = Instant::now();
            let answer = conn.request(GET).await;
            assert_eq!(answer.status, 200);
            assert!(
                t.elapsed() >= Duration::from_millis(40),
                "{:?}",
                t.elapsed()
            );
        }
        let t = Instant::now();
        let answer = conn
            .request(b"GET /__gatebench/health HTTP/1.1\r\nHost: a\r\n\r\n")
            .await;
        assert_eq!(answer.status, 200);
        assert!(
            t.elapsed() < Duration::from_millis(200),
            "{:?}",
            t.elapsed()
        );
        proxy.stop().await;
    }
    echo.stop().await;
}

#[tokio::test]
async fn upstream_connections_are_pooled_and_kept_alive() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    for _ in 0..3 {
        // A new client connection each time: the upstream connection is still reused.
        let mut conn = proxy.connect().await;
        for _ in 0..5 {
            assert_eq!(conn.request(&post("/", b"abc")).await.status, 200);
        }
    }
    assert_eq!(upstream.requests(), 15);
    assert_eq!(
        upstream
            .connections
            .load(std::sync::atomic::Ordering::SeqCst),
        1,
        "one pooled upstream connection serves sequential requests"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn upstream_sees_hop_by_hop_fields_removed_and_via_and_forwarded_for_added() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let mut conn = proxy.connect().await;
    let answer = conn
        .request(
            b"GET /path?q=1 HTTP/1.1\r\nHost: example.test:8080\r\n\
Connection: keep-alive, X-Secret\r\nX-Secret: s3cret\r\nKeep-Alive: timeout=5\r\n\
Proxy-Connection: keep-alive\r\nUpgrade: websocket\r\nTE: trailers, deflate\r\n\
Via: 1.0 someone-else\r\nX-Forwarded-For: 192.0.2.7\r\nX-Kept: yes\r\n\r\n",
        )
        .await;
    assert_eq!(answer.status, 200);
    let seen = String::from_utf8(upstream.all_bytes())
        .unwrap()
        .to_ascii_lowercase();
    assert!(seen.starts_with("get /path?q=1 http/1.1\r\n"), "{seen}");
    assert!(
        seen.contains("host: example.test:8080\r\n"),
        "Host is preserved: {seen}"
    );
    for gone in [
        "x-secret",
        "keep-alive",
        "proxy-connection",
        "upgrade",
        "te:",
        "connection",
    ] {
        assert!(!seen.contains(gone), "{gone} reached the upstream: {seen}");
    }
    assert!(seen.contains("x-kept: yes\r\n"));
    assert!(seen.contains("via: 1.0 someone-else\r\n"));
    assert!(seen.contains("via: 1.1 gatebench-"), "{seen}");
    assert!(
        seen.contains("x-forwarded-for: 192.0.2.7, 127.0.0.1\r\n"),
        "{seen}"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn client_never_sees_the_upstream_hop_by_hop_fields() {
    let upstream = Capture::start(Reply::Raw(
        b"HTTP/1.1 200 OK\r\nConnection: X-Internal\r\nX-Internal: 1\r\nKeep-Alive: timeout=9\r\n\
Upgrade: h2c\r\nX-Kept: 1\r\nContent-Length: 2\r\n\r\nok"
            .to_vec(),
    ))
    .await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let mut conn = proxy.connect().await;
    let answer = conn.request(GET).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body, b"ok");
    for gone in ["x-internal", "keep-alive", "upgrade"] {
        assert!(
            !answer.has(gone),
            "{gone} reached the client: {:?}",
            answer.headers
        );
    }
    assert_eq!(answer.header("connection"), None);
    assert_eq!(answer.header("x-kept"), Some("1"));
    assert!(answer.header("via").unwrap().starts_with("1.1 gatebench-"));
    proxy.stop().await;
}

#[tokio::test]
async fn a_request_that_comes_back_is_a_loop() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let mut conn = proxy.connect().await;
    let via = conn.request(GET).await.header("via").unwrap().to_owned();
    let looped = format!("GET / HTTP/1.1\r\nHost: a\r\nVia: 1.0 x, {via}\r\n\r\n");
    let answer = conn.request(looped.as_bytes()).await;
    assert_eq!(answer.status, 508);
    assert!(answer
        .header("proxy-status")
        .unwrap()
        .contains("proxy_loop_detected"));
    assert_eq!(
        upstream.requests(),
        1,
        "the looping request was not forwarded"
    );
    // Another gatebench instance's token is not a loop.
    let other = format!(
        "GET / HTTP/1.1\r\nHost: a\r\nVia: 1.1 gatebench-00000000{}\r\n\r\n",
        ""
    );
    assert_ne!(via_token(&via), "gatebench-00000000");
    assert_eq!(conn.request(other.as_bytes()).await.status, 200);
    proxy.stop().await;
}

#[tokio::test]
async fn large_bodies_stream_byte_exact_both_ways() {
    let echo = Running::echo(echo_config()).await;
    let proxy = Running::proxy(proxy_config(echo.url(false))).await;
    let body: Vec<u8> = (0..4 * 1024 * 1024u32)
        .map(|i| (i * 7 % 251) as u8)
        .collect();
    let mut conn = proxy.connect().await;
    let answer = conn.request(&post("/", &body)).await;
    assert_eq!(answer.status, 200);
    assert!(answer.body == body, "4 MiB echoed byte for byte");
    // Chunked request bodies are forwarded chunked.
    let mut chunked = b"PUT / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    chunked.extend_from_slice(b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n");
    let answer = conn.request(&chunked).await;
    assert_eq!(answer.body, b"hello world");
    proxy.stop().await;
    echo.stop().await;
}

#[tokio::test]
async fn request_and_response_bodies_are_streamed_not_buffered() {
    // Response: the first chunk reaches the client while the upstream still holds the rest.
    let upstream = Capture::start(Reply::RawThenHang(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n".to_vec(),
    ))
    .await;
    // A proxy that buffered the response would answer 504 after this read timeout, without
    // the chunk; the stop below waits for it (the upstream never ends the response), so it is
    // short.
    let proxy = Running::proxy(ProxyConfig {
        timeouts: gatebench_services::Timeouts {
            upstream_read: Duration::from_secs(1),
            ..timeouts()
        },
        ..proxy_config(upstream.url())
    })
    .await;
    let mut client = TcpStream::connect(proxy.addr).await.unwrap();
    client.write_all(GET).await.unwrap();
    let mut got = Vec::new();
    let started = Instant::now();
    while !contains(&got, b"first") {
        let mut chunk = [0u8; 1024];
        let n = tokio::time::timeout(
            PATIENCE,
            tokio::io::AsyncReadExt::read(&mut client, &mut chunk),
        )
        .await
        .unwrap()
        .unwrap();
        assert!(n > 0, "closed before the first chunk");
        got.extend_from_slice(&chunk[..n]);
    }
    assert!(started.elapsed() < Duration::from_secs(3));
    drop(client);
    proxy.stop().await;

    // Request: the upstream reads the first half while the client still holds the second.
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(ProxyConfig {
        timeouts: gatebench_services::Timeouts {
            client_body: Duration::from_secs(5),
            ..timeouts()
        },
        ..proxy_config(upstream.url())
    })
    .await;
    let mut conn = proxy.connect().await;
    conn.send(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 20\r\n\r\nfirst-half")
        .await;
    let deadline = Instant::now() + PATIENCE;
    while !contains(&upstream.all_bytes(), b"first-half") {
        assert!(
            Instant::now() < deadline,
            "the first half never reached the upstream"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    conn.send(b"secondhalf").await;
    assert_eq!(conn.answer(false).await.status, 200);
    proxy.stop().await;
}

#[tokio::test]
async fn h1_to_h1_over_tls_on_both_sides_and_verification_by_default() {
    let (front, back) = (cert("tls-front"), cert("tls-back"));
    let echo = Running::echo(EchoConfig {
        tls: Some(back.settings.clone()),
        ..echo_config()
    })
    .await;
    let proxy = Running::proxy(ProxyConfig {
        tls: Some(front.settings.clone()),
        upstream_tls: UpstreamTls {
            insecure: true,
            ..UpstreamTls::default()
        },
        ..proxy_config(echo.url(true))
    })
    .await;
    let tls = tls_connect(proxy.addr, &front.pem, &[b"http/1.1"]).await;
    let mut conn = Conn::new(tls);
    let answer = conn.request(&post("/", b"over tls")).await;
    assert_eq!(
        (answer.status, answer.body.as_slice()),
        (200, &b"over tls"[..])
    );
    proxy.stop().await;

    // Without --insecure-upstream the self-signed upstream is refused: 502, TLS error.
    let strict = Running::proxy(proxy_config(echo.url(true))).await;
    let answer = strict.connect().await.request(GET).await;
    assert_eq!(answer.status, 502);
    assert!(answer
        .header("proxy-status")
        .unwrap()
        .contains("tls_protocol_error"));
    strict.stop().await;

    // Trusting the upstream's certificate explicitly works.
    let trusted = Running::proxy(ProxyConfig {
        upstream_tls: UpstreamTls {
            ca_file: back.settings.cert_pem_path.clone(),
            ..UpstreamTls::default()
        },
        ..proxy_config(format!("https://localhost:{}", echo.addr.port()))
    })
    .await;
    assert_eq!(trusted.connect().await.request(GET).await.status, 200);
    trusted.stop().await;
    echo.stop().await;
    std::fs::remove_dir_all(front.dir).ok();
    std::fs::remove_dir_all(back.dir).ok();
}

/// A TLS proxy with HTTP/2 in front of `upstream_url`; the upstream's certificate is accepted.
async fn h2_proxy(front: &Cert, upstream_url: String) -> Running {
    Running::proxy(ProxyConfig {
        tls: Some(front.settings.clone()),
        http2: true,
        upstream_tls: UpstreamTls {
            insecure: true,
            ..UpstreamTls::default()
        },
        ..proxy_config(upstream_url)
    })
    .await
}

#[tokio::test]
async fn h2_to_h2_uses_http2_upstream_by_alpn() {
    let (front, back) = (cert("h2h2-front"), cert("h2h2-back"));
    let echo = Running::echo(EchoConfig {
        tls: Some(back.settings.clone()),
        http2: true,
        ..echo_config()
    })
    .await;
    let proxy = h2_proxy(&front, echo.url(true)).await;
    let mut h2 = H2::handshake(tls_connect(proxy.addr, &front.pem, &[b"h2"]).await).await;
    for i in 0..3u8 {
        let answer = h2.request("POST", "/", &[i; 100]).await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.version, http::Version::HTTP_2);
        assert_eq!(answer.body.unwrap(), [i; 100]);
        // The Via on the response names the protocol the upstream answered in.
        let via = answer.headers["via"].to_str().unwrap();
        assert!(via.starts_with("2 gatebench-"), "{via}");
    }
    // An HTTP/1.1 client of the same proxy is served too, forwarded over HTTP/2.
    let mut conn = Conn::new(tls_connect(proxy.addr, &front.pem, &[b"http/1.1"]).await);
    let answer = conn.request(&post("/", b"h1 client")).await;
    assert_eq!(answer.body, b"h1 client");
    assert!(answer.header("via").unwrap().starts_with("2 gatebench-"));
    proxy.stop().await;
    echo.stop().await;
}

#[tokio::test]
async fn h2_to_h1_takes_host_from_authority() {
    let front = cert("h2h1c-front");
    // h2 → h1c against the capture, to see what the upstream got.
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = h2_proxy(&front, upstream.url()).await;
    let mut h2 = H2::handshake(tls_connect(proxy.addr, &front.pem, &[b"h2"]).await).await;
    let req = http::Request::post("https://example.test:9443/p?q")
        .header("te", "trailers")
        .body(http_body_util::Full::new(bytes::Bytes::from_static(
            b"body",
        )))
        .unwrap();
    let answer = h2.send_request(req).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body.unwrap(), b"ok");
    let seen = String::from_utf8(upstream.all_bytes())
        .unwrap()
        .to_ascii_lowercase();
    assert!(seen.starts_with("post /p?q http/1.1\r\n"), "{seen}");
    assert!(seen.contains("host: example.test:9443\r\n"), "{seen}");
    assert!(seen.contains("via: 2 gatebench-"), "{seen}");
    assert!(
        !seen.contains("\r\nte:"),
        "TE is not sent to HTTP/1.1: {seen}"
    );
    assert!(seen.ends_with("\r\n\r\nbody"), "{seen}");
    proxy.stop().await;

    // h2 → h1 over TLS against the echo.
    let back = cert("h2h1-back");
    let echo = Running::echo(EchoConfig {
        tls: Some(back.settings.clone()),
        ..echo_config()
    })
    .await;
    let proxy = h2_proxy(&front, echo.url(true)).await;
    let mut h2 = H2::handshake(tls_connect(proxy.addr, &front.pem, &[b"h2"]).await).await;
    let answer = h2.request("POST", "/", b"h2 to h1").await;
    assert_eq!(answer.version, http::Version::HTTP_2);
    assert_eq!(answer.body.unwrap(), b"h2 to h1");
    assert!(answer.headers["via"]
        .to_str()
        .unwrap()
        .starts_with("1.1 gatebench-"));
    proxy.stop().await;
    echo.stop().await;
}

#[tokio::test]
async fn downgrade_h1_client_to_h2_capable_proxy_to_h1_tls_backend() {
    let (front, back) = (cert("down-front"), cert("down-back"));
    let echo = Running::echo(EchoConfig {
        tls: Some(back.settings.clone()),
        ..echo_config()
    })
    .await;
    let proxy = h2_proxy(&front, echo.url(true)).await;
    let tls = tls_connect(proxy.addr, &front.pem, &[b"http/1.1"]).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let mut conn = Conn::new(tls);
    let answer = conn.request(&post("/", b"downgraded")).await;
    assert_eq!(answer.body, b"downgraded");
    assert!(answer.header("via").unwrap().starts_with("1.1 gatebench-"));
    proxy.stop().await;
    echo.stop().await;
}

#[tokio::test]
async fn h2c_prior_knowledge_and_http1_share_the_cleartext_port() {
    let echo = Running::echo(echo_config()).await;
    let proxy = Running::proxy(ProxyConfig {
        http2: true,
        ..proxy_config(echo.url(false))
    })
    .await;
    let mut h2 = H2::handshake(TcpStream::connect(proxy.addr).await.unwrap()).await;
    let answer = h2.request("POST", "/", b"h2c").await;
    assert_eq!(
        (answer.status, answer.version),
        (200, http::Version::HTTP_2)
    );
    assert_eq!(answer.body.unwrap(), b"h2c");
    let mut conn = proxy.connect().await;
    assert_eq!(conn.request(&post("/", b"h1")).await.body, b"h1");
    proxy.stop().await;
    echo.stop().await;
}

/// RFC 9113 §8.2.2: an HTTP/2 request carrying a connection-specific field is malformed; the
/// proxy answers it with a stream error (RST_STREAM PROTOCOL_ERROR) or a 400, and the upstream
/// never sees it. The request is written as raw frames, so it reaches the proxy as written (a
/// client library refuses to send it); a well-formed request on the same connection shows that
/// the frames are understood and that a forwarded request would be seen.
async fn connection_field_over_h2_is_refused<S>(stream: S, capture: &Capture)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut raw = RawH2::start(stream).await;
    let request = |path: &'static str| {
        [
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "localhost"),
            (":path", path),
        ]
    };
    let mut malformed = request("/malformed").to_vec();
    malformed.push(("connection", "keep-alive"));
    raw.headers(1, &malformed, true).await;
    let outcome = raw.outcome(1).await;
    assert!(
        matches!(
            outcome,
            Outcome::Reset(PROTOCOL_ERROR) | Outcome::Status(400)
        ),
        "{outcome:?}"
    );
    raw.headers(3, &request("/fine"), true).await;
    assert_eq!(raw.outcome(3).await, Outcome::Status(200));
    let seen = String::from_utf8_lossy(&capture.all_bytes()).to_string();
    assert_eq!(capture.requests(), 1, "{seen}");
    assert!(seen.starts_with("GET /fine HTTP/1.1\r\n"), "{seen}");
    assert!(!seen.contains("/malformed"), "{seen}");
}

#[tokio::test]
async fn h2c_request_with_a_connection_field_never_reaches_the_upstream() {
    let capture = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(ProxyConfig {
        http2: true,
        ..proxy_config(capture.url())
    })
    .await;
    let tcp = TcpStream::connect(proxy.addr).await.unwrap();
    connection_field_over_h2_is_refused(tcp, &capture).await;
    proxy.stop().await;
}

#[tokio::test]
async fn h2_request_with_a_connection_field_never_reaches_the_upstream() {
    let cert = cert("h2-connection-field");
    let capture = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(ProxyConfig {
        http2: true,
        tls: Some(cert.settings.clone()),
        ..proxy_config(capture.url())
    })
    .await;
    let tls = tls_connect(proxy.addr, &cert.pem, &[b"h2"]).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    connection_field_over_h2_is_refused(tls, &capture).await;
    proxy.stop().await;
}

/// Bodies larger than every HTTP/2 window (the proxy's 1 MiB towards clients, 2 MiB towards
/// upstreams; the client's 64 KiB) cross the proxy whole in both directions on two streams at
/// once, to an HTTP/1.1 upstream and to an HTTP/2 one: request DATA flow back as WINDOW_UPDATE
/// only as the proxy forwards them, and each response is written as the client's window opens.
/// The response carries Date and the upstream's Content-Length.
#[tokio::test]
async fn h2_bodies_larger_than_the_windows_cross_whole() {
    let (front, back) = (cert("h2-large-front"), cert("h2-large-back"));
    let echo = Running::echo(echo_config()).await;
    let echo_h2 = Running::echo(EchoConfig {
        tls: Some(back.settings.clone()),
        http2: true,
        ..echo_config()
    })
    .await;
    let body = |seed: u8| -> Vec<u8> {
        (0..3 * 1024 * 1024u32)
            .map(|i| (i % 251) as u8 ^ seed)
            .collect()
    };
    for (upstream, via) in [(echo.url(false), "1.1 "), (echo_h2.url(true), "2 ")] {
        let proxy = h2_proxy(&front, upstream).await;
        let h2 = H2::handshake(tls_connect(proxy.addr, &front.pem, &[b"h2"]).await).await;
        let (mut a, mut b) = (
            H2 {
                send: h2.send.clone(),
            },
            h2,
        );
        let (body_a, body_b) = (body(1), body(2));
        let (answer_a, answer_b) = tokio::join!(
            a.request("POST", "/", &body_a),
            b.request("POST", "/", &body_b)
        );
        for (answer, sent) in [(answer_a, body_a), (answer_b, body_b)] {
            assert_eq!(answer.status, 200);
            assert!(answer.headers["via"].to_str().unwrap().starts_with(via));
            assert_eq!(
                answer.headers["content-length"],
                sent.len().to_string().as_str()
            );
            assert!(answer.headers.contains_key("date"));
            assert!(answer.body.unwrap() == sent, "echoed body differs");
        }
        proxy.stop().await;
    }
    echo.stop().await;
    echo_h2.stop().await;
}

/// An HTTP/1.x client's response head is written from the upstream's bytes as read, not from a
/// header map (`h1::client::RawHead`); an HTTP/2 client's still goes through the map. Both must
/// carry the same fields: the upstream's end-to-end ones, duplicates kept with their values in
/// order, values without their surrounding whitespace, hop-by-hop ones (and those Connection
/// names, however many Connection fields there are) removed, Via added once, names lower-cased.
/// The HTTP/1.x head keeps the upstream's order of fields as well.
#[tokio::test]
async fn raw_response_heads_carry_what_the_header_map_carried() {
    // The head, the fields the client gets, whether in that order (the header map path keeps
    // only the order of values of one name).
    type Case<'a> = (&'a [u8], &'a [(&'a str, &'a str)], bool);
    let cases: [Case; 2] = [
        (
            b"HTTP/1.1 200 OK\r\nDate: Sat, 28 Nov 2026 12:00:00 GMT\r\nX-B: 1\r\n\
Set-Cookie: a=1\r\nConnection: keep-alive\r\nX-A:  spaced \t\r\nKeep-Alive: timeout=9\r\n\
Set-Cookie: b=2\r\nProxy-Connection: x\r\nUpgrade: h2c\r\nTE: trailers\r\nX-Empty:\r\n\
VIA: 1.0 origin\r\nContent-Length: 2\r\nx-b: 2\r\n\r\nok",
            &[
                ("date", "Sat, 28 Nov 2026 12:00:00 GMT"),
                ("x-b", "1"),
                ("set-cookie", "a=1"),
                ("x-a", "spaced"),
                ("set-cookie", "b=2"),
                ("x-empty", ""),
                ("via", "1.0 origin"),
                ("content-length", "2"),
                ("x-b", "2"),
            ],
            true,
        ),
        // Connection naming fields: the header map path for every client (rare); each
        // Connection field's names go.
        (
            b"HTTP/1.1 200 OK\r\nDate: Sat, 28 Nov 2026 12:00:00 GMT\r\nConnection: X-One\r\n\
X-One: 1\r\nConnection: x-two, keep-alive\r\nX-Two: 2\r\nX-Kept: 3\r\nContent-Length: 2\r\n\r\nok",
            &[
                ("date", "Sat, 28 Nov 2026 12:00:00 GMT"),
                ("x-kept", "3"),
                ("content-length", "2"),
            ],
            false,
        ),
    ];
    // Sorted by name, values of one name in their order.
    fn grouped<'a>(mut fields: Vec<(&'a str, &'a str)>, ordered: bool) -> Vec<(&'a str, &'a str)> {
        if !ordered {
            fields.sort_by(|a, b| a.0.cmp(b.0));
        }
        fields
    }
    for (raw, want, ordered) in cases {
        let what = String::from_utf8_lossy(raw);
        let upstream = Capture::start(Reply::Raw(raw.to_vec())).await;
        let proxy = Running::proxy(ProxyConfig {
            http2: true,
            ..proxy_config(upstream.url())
        })
        .await;
        let mut conn = proxy.connect().await;
        let answer = conn.request(GET).await;
        assert_eq!(answer.status, 200, "{what}");
        assert_eq!(answer.body, b"ok", "{what}");
        // The last field: this proxy's Via.
        let via = answer.headers.last().unwrap().1.clone();
        assert!(via.starts_with("1.1 gatebench-"), "{what}: {via}");
        let got: Vec<(&str, &str)> = answer
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let mut expected = want.to_vec();
        expected.push(("via", &via));
        assert_eq!(
            grouped(got, ordered),
            grouped(expected.clone(), ordered),
            "{what}"
        );
        // The header map path (an HTTP/2 client): the same fields, values of one name in the
        // same order.
        let mut h2 = H2::handshake(TcpStream::connect(proxy.addr).await.unwrap()).await;
        let mapped = h2.request("GET", "/", b"").await;
        assert_eq!(mapped.status, 200, "{what}");
        let mut names: Vec<&str> = mapped.headers.keys().map(|n| n.as_str()).collect();
        let mut want_names: Vec<&str> = expected.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        want_names.sort_unstable();
        want_names.dedup();
        assert_eq!(names, want_names, "{what}");
        for name in names {
            let values: Vec<&str> = mapped
                .headers
                .get_all(name)
                .iter()
                .map(|v| v.to_str().unwrap())
                .collect();
            let want_values: Vec<&str> = expected
                .iter()
                .filter(|(n, _)| *n == name)
                .map(|(_, v)| *v)
                .collect();
            assert_eq!(values, want_values, "{what}: {name}");
        }
        // An HTTP/1.0 client: the same head, and the connection closes after it.
        let mut conn = proxy.connect().await;
        let answer = conn
            .request(b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
            .await;
        let mut closing = expected.clone();
        closing.push(("connection", "close"));
        let got: Vec<(&str, &str)> = answer
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        assert_eq!(grouped(got, ordered), grouped(closing, ordered), "{what}");
        proxy.stop().await;
    }
}
