//! Interim (1xx) responses through the proxy (RFC 9110 §15.2) and `Expect: 100-continue`
//! (RFC 9110 §10.1.1), against a scripted raw upstream.
//!
//! The upstream sends `103 Early Hints` and then waits until the test has seen that 103 at the
//! client, so a proxy that held interim responses back until the final one (or dropped them)
//! fails; then it sends `100 Continue`, a second 103 and the final 200.

use std::sync::Arc;

use gatebench_services::ProxyConfig;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::support::*;

/// Sent as soon as a request is in; the Connection field names a field that must not pass.
const FIRST: &[u8] = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\
Connection: X-Hop\r\nX-Hop: secret\r\n\r\n";
/// Sent once the test releases the upstream.
const REST: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n\
HTTP/1.1 103 Early Hints\r\nLink: </app.js>; rel=preload\r\n\r\n\
HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// A raw upstream that answers every request with [`FIRST`], then, once released, [`REST`].
struct Scripted {
    addr: std::net::SocketAddr,
    /// One permit lets one answer go on.
    release: Arc<Semaphore>,
    task: JoinHandle<()>,
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Scripted {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let release = Arc::new(Semaphore::new(0));
        let gate = release.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(script(stream, gate.clone()));
            }
        });
        Scripted {
            addr,
            release,
            task,
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

async fn script(mut stream: TcpStream, release: Arc<Semaphore>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        // Requests here carry no body: a head is a request.
        while find(&buf, b"\r\n\r\n").is_none() {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let end = find(&buf, b"\r\n\r\n").unwrap() + 4;
        buf.drain(..end);
        if stream.write_all(FIRST).await.is_err() {
            return;
        }
        release.acquire().await.unwrap().forget();
        if stream.write_all(REST).await.is_err() {
            return;
        }
    }
}

const GET_PAGE: &[u8] = b"GET /page HTTP/1.1\r\nHost: localhost\r\n\r\n";

/// An HTTP/1.1 client gets the first 103 while the upstream still holds the rest, then 100, the
/// second 103 and the 200, in that order; each interim head is stripped of hop-by-hop fields and
/// carries the proxy's Via. The connection then serves a second exchange the same way.
async fn interim_in_order<S: AsyncRead + AsyncWrite + Unpin>(conn: &mut Conn<S>, up: &Scripted) {
    for round in 0..2 {
        conn.send(GET_PAGE).await;
        let first = conn.answer(true).await;
        assert_eq!(first.status, 103, "round {round}");
        assert_eq!(first.header("link"), Some("</style.css>; rel=preload"));
        assert!(first.header("via").unwrap().starts_with("1.1 gatebench-"));
        assert!(!first.has("x-hop") && !first.has("connection"), "{first:?}");
        up.release.add_permits(1);
        let statuses = [conn.answer(true).await, conn.answer(true).await];
        assert_eq!([statuses[0].status, statuses[1].status], [100, 103]);
        assert_eq!(statuses[1].header("link"), Some("</app.js>; rel=preload"));
        let last = conn.answer(false).await;
        assert_eq!((last.status, last.body.as_slice()), (200, &b"ok"[..]));
        assert!(last.header("via").unwrap().starts_with("1.1 gatebench-"));
    }
}

#[tokio::test]
async fn interim_responses_reach_an_http1_client_before_the_final_one() {
    let up = Scripted::start().await;
    let proxy = Running::proxy(ProxyConfig {
        // Also h2c on the port: the HTTP/1.1 path is the strict one either way.
        http2: true,
        ..proxy_config(up.url())
    })
    .await;
    let mut conn = proxy.connect().await;
    interim_in_order(&mut conn, &up).await;
    proxy.stop().await;
}

#[tokio::test]
async fn interim_responses_reach_an_http1_client_over_tls() {
    let cert = cert("interim-h1-tls");
    let up = Scripted::start().await;
    let proxy = Running::proxy(ProxyConfig {
        tls: Some(cert.settings.clone()),
        http2: true,
        ..proxy_config(up.url())
    })
    .await;
    let tls = tls_connect(proxy.addr, &cert.pem, &[b"http/1.1"]).await;
    let mut conn = Conn::new(tls);
    interim_in_order(&mut conn, &up).await;
    proxy.stop().await;
}

/// Pipelined requests: each exchange's interim responses come after the previous final
/// response and before its own, never mixed across exchanges.
#[tokio::test]
async fn pipelined_requests_keep_their_interim_responses_in_place() {
    let up = Scripted::start().await;
    let proxy = Running::proxy(proxy_config(up.url())).await;
    up.release.add_permits(3);
    let mut conn = proxy.connect().await;
    conn.send(&[GET_PAGE, GET_PAGE, GET_PAGE].concat()).await;
    for round in 0..3 {
        let mut statuses = Vec::new();
        for _ in 0..3 {
            statuses.push(conn.answer(true).await.status);
        }
        let last = conn.answer(false).await;
        statuses.push(last.status);
        assert_eq!(statuses, [103, 100, 103, 200], "exchange {round}");
        assert_eq!(last.body, b"ok");
    }
    proxy.stop().await;
}

/// RFC 9110 §15.2: a server must not send a 1xx to an HTTP/1.0 client.
#[tokio::test]
async fn an_http10_client_gets_only_the_final_response() {
    let up = Scripted::start().await;
    let proxy = Running::proxy(proxy_config(up.url())).await;
    up.release.add_permits(1);
    let mut conn = proxy.connect().await;
    conn.send(b"GET /page HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .await;
    let answer = conn.answer(false).await;
    assert_eq!((answer.status, answer.body.as_slice()), (200, &b"ok"[..]));
    proxy.stop().await;
}

/// HTTP/2 clients get the final response intact; the interim ones are not carried (hyper's
/// HTTP/2 server cannot send them, see docs/proxy.md).
#[tokio::test]
async fn an_http2_client_gets_the_final_response_after_upstream_interims() {
    let cert = cert("interim-h2");
    let up = Scripted::start().await;
    let proxy = Running::proxy(ProxyConfig {
        tls: Some(cert.settings.clone()),
        http2: true,
        ..proxy_config(up.url())
    })
    .await;
    up.release.add_permits(2);
    let mut h2 = H2::handshake(tls_connect(proxy.addr, &cert.pem, &[b"h2"]).await).await;
    let answer = h2.request("GET", "/page", b"").await;
    assert_eq!(
        (answer.status, answer.version),
        (200, http::Version::HTTP_2)
    );
    assert_eq!(answer.body.unwrap(), b"ok");
    let cleartext = Running::proxy(ProxyConfig {
        http2: true,
        ..proxy_config(up.url())
    })
    .await;
    let mut h2c = H2::handshake(TcpStream::connect(cleartext.addr).await.unwrap()).await;
    let answer = h2c.request("GET", "/page", b"").await;
    assert_eq!(answer.body.unwrap(), b"ok");
    cleartext.stop().await;
    proxy.stop().await;
}

/// `Expect: 100-continue` (RFC 9110 §10.1.1): the proxy answers 100 itself once it has an
/// upstream connection and starts forwarding, and does not forward Expect (so the upstream's
/// 100s, which it would otherwise have to forward, are not asked for).
#[tokio::test]
async fn expect_100_continue_is_answered_by_the_proxy_and_not_forwarded() {
    let capture = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(proxy_config(capture.url())).await;
    let mut conn = proxy.connect().await;
    conn.send(
        b"POST /upload HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\n\
Content-Length: 5\r\n\r\n",
    )
    .await;
    // The body is not sent until the 100 arrives: a proxy that waited for it would hang here.
    assert_eq!(conn.answer(true).await.status, 100);
    conn.send(b"hello").await;
    let answer = conn.answer(false).await;
    assert_eq!((answer.status, answer.body.as_slice()), (200, &b"ok"[..]));
    let seen = String::from_utf8_lossy(&capture.all_bytes()).to_ascii_lowercase();
    assert!(seen.starts_with("post /upload http/1.1\r\n"), "{seen}");
    assert!(seen.ends_with("\r\n\r\nhello"), "{seen}");
    assert!(!seen.contains("expect:"), "{seen}");
    proxy.stop().await;
}

/// When no upstream can be reached, the client with `Expect: 100-continue` gets the final error
/// status at once, never a 100 that would make it send a body for nothing.
#[tokio::test]
async fn expect_100_continue_gets_the_error_and_no_100_when_the_upstream_is_down() {
    let refused = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let proxy = Running::proxy(proxy_config(format!("http://{refused}"))).await;
    let mut conn = proxy.connect().await;
    conn.send(
        b"POST /upload HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\n\
Content-Length: 5\r\n\r\n",
    )
    .await;
    let answer = conn.answer(false).await;
    assert_eq!(answer.status, 502, "{answer:?}");
    proxy.stop().await;
}
