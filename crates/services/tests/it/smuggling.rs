//! Hostile request framing: each one is refused with the status docs/behaviour.md names and a close,
//! and the upstream — the oracle — never sees a byte of it.

use std::time::Duration;

use crate::support::*;

/// Sends `raw`; returns the status and whether the proxy then closed.
async fn refused(proxy: &Running, raw: &[u8]) -> (u16, bool) {
    let mut conn = proxy.connect().await;
    let answer = conn.request(raw).await;
    (answer.status, conn.closed().await)
}

#[tokio::test]
async fn ambiguous_framing_and_bad_fields_never_reach_the_upstream() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let cases: &[(&[u8], u16)] = &[
        // CL.TE and TE.CL in both orders, and with an empty body claim.
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nX", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n1\r\nZ\r\nQ\r\n0\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        // Content-Length: differing, repeated, listed, signed, hex, overflowing, empty.
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\nhello", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5 5\r\n\r\nhello", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 18446744073709551616\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", 400),
        // Transfer-Encoding: not a single final chunked, obfuscated, unknown, in HTTP/1.0.
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", 501),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", 501),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\x0bchunked\r\n\r\n0\r\n\r\n", 400),
        (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 400),
        // Line ends and field values.
        (b"GET / HTTP/1.1\nHost: a\n\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n  folded\r\n\r\n", 400),
        // Host.
        (b"GET / HTTP/1.1\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: evil@a\r\n\r\n", 400),
        // Request line.
        (b"GET foo bar\r\n\r\n", 400),
        (b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        (b"GET / HTTP/1.2\r\nHost: a\r\n\r\n", 400),
        (b"GET relative HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        (b"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", 405),
    ];
    for (raw, status) in cases {
        let what = String::from_utf8_lossy(raw);
        assert_eq!(refused(&proxy, raw).await, (*status, true), "{what}");
    }
    assert_eq!(
        upstream.all_bytes(),
        b"",
        "the upstream saw a refused request"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn a_refused_request_in_a_pipeline_is_answered_in_order() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let mut conn = proxy.connect().await;
    // A good request, then a smuggling attempt, then one that would be the smuggled request.
    conn.send(
        b"GET /first HTTP/1.1\r\nHost: a\r\n\r\n\
POST /second HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n\
GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
    )
    .await;
    let first = conn.answer(false).await;
    assert_eq!((first.status, first.body.as_slice()), (200, &b"ok"[..]));
    let second = conn.answer(false).await;
    assert_eq!(second.status, 400);
    assert_eq!(second.header("connection"), Some("close"));
    assert!(conn.closed().await);
    let seen = upstream.all_bytes();
    assert!(contains(&seen, b"GET /first "));
    assert!(
        !contains(&seen, b"/second"),
        "{}",
        String::from_utf8_lossy(&seen)
    );
    assert!(!contains(&seen, b"/smuggled"));
    proxy.stop().await;
}

#[tokio::test]
async fn bad_chunk_framing_cuts_the_upstream_request_and_smuggles_nothing() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let bodies: &[&[u8]] = &[
        b"5\r\nhelloGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
        b"0x5\r\nhello\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
        b"5 \r\nhello\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
        b"+5\r\nhello\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
        b"fffffffffffffffff5\r\nhello\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
        b"5\nhello\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
        b"5\r\nhello\r\n0\r\nX: a\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n\r\n",
    ];
    for body in bodies {
        let mut raw =
            b"POST /chunked HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        raw.extend_from_slice(body);
        let mut conn = proxy.connect().await;
        conn.send(&raw).await;
        // The client gets a 400 (when no answer had started) and the connection closes; what
        // matters most is that nothing after the broken chunk reaches the upstream.
        let mut answered = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            match tokio::time::timeout(
                PATIENCE,
                tokio::io::AsyncReadExt::read(&mut conn.stream, &mut chunk),
            )
            .await
            {
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(n)) => answered.extend_from_slice(&chunk[..n]),
                Err(_) => panic!("the proxy neither answered nor closed"),
            }
        }
        let what = String::from_utf8_lossy(body);
        assert!(
            answered.is_empty() || answered.starts_with(b"HTTP/1.1 400"),
            "{what}: {}",
            String::from_utf8_lossy(&answered)
        );
        assert!(!contains(&answered, b"HTTP/1.1 200"), "{what}");
    }
    // Give a request the proxy might have forwarded time to be recorded, even on a loaded
    // machine, before concluding that none was.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let seen = upstream.all_bytes();
    assert!(
        !contains(&seen, b"/smuggled"),
        "{}",
        String::from_utf8_lossy(&seen)
    );
    assert_eq!(
        upstream.requests(),
        0,
        "no complete request reached the upstream"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn valid_pipelines_and_chunked_bodies_are_forwarded_as_separate_requests() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let mut conn = proxy.connect().await;
    conn.send(
        b"POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n\
POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\ndef\
\r\n\r\nGET /c HTTP/1.1\r\nHost: a\r\n\r\n",
    )
    .await;
    for _ in 0..3 {
        assert_eq!(conn.answer(false).await.status, 200);
    }
    assert_eq!(upstream.requests(), 3);
    let seen = String::from_utf8(upstream.all_bytes()).unwrap();
    let a = seen.find("POST /a ").unwrap();
    let b = seen.find("POST /b ").unwrap();
    let c = seen.find("GET /c ").unwrap();
    assert!(a < b && b < c, "{seen}");
    assert!(
        seen[a..b].contains("abc") && seen[b..c].ends_with("def"),
        "{seen}"
    );
    proxy.stop().await;
}
