//! Interim (1xx) responses through the proxy (RFC 9110 §15.2) and `Expect: 100-continue`
//! (RFC 9110 §10.1.1), against a scripted raw upstream.
//!
//! The upstream sends `103 Early Hints` and then waits until the test has seen that 103 at the
//! client, so a proxy that held interim responses back until the final one (or dropped them)
//! fails; then it sends `100 Continue`, a second 103 and the final 200.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use gatebench_services::{ProxyConfig, UpstreamTls};
use http::{Request, Response};
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
    interim_in_order_via(conn, &up.release, "1.1 gatebench-").await;
}

/// [`interim_in_order`] against any upstream released through `release`, whose responses
/// carry the proxy's Via starting with `via` (the upstream's protocol, RFC 9110 §7.6.3).
async fn interim_in_order_via<S: AsyncRead + AsyncWrite + Unpin>(
    conn: &mut Conn<S>,
    release: &Semaphore,
    via: &str,
) {
    for round in 0..2 {
        conn.send(GET_PAGE).await;
        let first = conn.answer(true).await;
        assert_eq!(first.status, 103, "round {round}");
        assert_eq!(first.header("link"), Some("</style.css>; rel=preload"));
        assert!(first.header("via").unwrap().starts_with(via), "{first:?}");
        assert!(!first.has("x-hop") && !first.has("connection"), "{first:?}");
        release.add_permits(1);
        let statuses = [conn.answer(true).await, conn.answer(true).await];
        assert_eq!([statuses[0].status, statuses[1].status], [100, 103]);
        assert_eq!(statuses[1].header("link"), Some("</app.js>; rel=preload"));
        let last = conn.answer(false).await;
        assert_eq!((last.status, last.body.as_slice()), (200, &b"ok"[..]));
        assert!(last.header("via").unwrap().starts_with(via), "{last:?}");
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

/// The next interim response on `response`'s stream, `None` once the final one is next. The
/// deadline turns a proxy that holds interim responses back (until the upstream, waiting for
/// the test, sends the rest) into a failure rather than a hang.
async fn next_interim(response: &mut h2::client::ResponseFuture) -> Option<Response<()>> {
    let next = std::future::poll_fn(|cx| response.poll_informational(cx));
    tokio::time::timeout(Duration::from_secs(10), next)
        .await
        .expect("an interim or the final response within 10 s")
        .map(|interim| interim.expect("a well-formed interim response"))
}

/// An HTTP/2 client (the h2 crate's, which surfaces 1xx HEADERS) gets the same sequence as an
/// HTTP/1.1 one, as 1xx HEADERS on the request's stream (RFC 9113 §8.1): the first 103 while
/// the upstream still holds the rest, then 100, the second 103 and the 200 with its body; each
/// interim response stripped of hop-by-hop fields and carrying the proxy's Via. Two streams in
/// turn on one connection.
async fn interim_in_order_h2<S>(io: S, scheme: &str, release: &Semaphore, via_prefix: &str)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (client, connection) = h2::client::handshake(io).await.expect("h2 handshake");
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    for round in 0..2 {
        let mut client = client.clone().ready().await.expect("stream capacity");
        let request = Request::get(format!("{scheme}://localhost/page"))
            .body(())
            .unwrap();
        let (mut response, _) = client.send_request(request, true).expect("request sent");
        let first = next_interim(&mut response)
            .await
            .unwrap_or_else(|| panic!("round {round}: no 103 before the final response"));
        assert_eq!(first.status(), 103, "round {round}");
        assert_eq!(first.headers()["link"], "</style.css>; rel=preload");
        let via = first.headers()["via"].to_str().unwrap();
        assert!(via.starts_with(via_prefix), "{via}");
        assert!(
            !first.headers().contains_key("x-hop") && !first.headers().contains_key("connection"),
            "{first:?}"
        );
        release.add_permits(1);
        let second = next_interim(&mut response).await.expect("the 100");
        let third = next_interim(&mut response).await.expect("the second 103");
        assert_eq!([second.status(), third.status()], [100, 103]);
        assert_eq!(third.headers()["link"], "</app.js>; rel=preload");
        assert!(
            next_interim(&mut response).await.is_none(),
            "a fourth interim"
        );
        let last = response.await.expect("the final response");
        assert_eq!(last.status(), 200);
        let via = last.headers()["via"].to_str().unwrap();
        assert!(via.starts_with(via_prefix), "{via}");
        let mut body = last.into_body();
        let mut data = Vec::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.expect("body data");
            let _ = body.flow_control().release_capacity(chunk.len());
            data.extend_from_slice(&chunk);
        }
        assert_eq!(data, b"ok");
    }
    driver.abort();
}

#[tokio::test]
async fn interim_responses_reach_an_h2_client_before_the_final_one() {
    let cert = cert("interim-h2");
    let up = Scripted::start().await;
    let proxy = Running::proxy(ProxyConfig {
        tls: Some(cert.settings.clone()),
        http2: true,
        ..proxy_config(up.url())
    })
    .await;
    let tls = tls_connect(proxy.addr, &cert.pem, &[b"h2"]).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    interim_in_order_h2(tls, "https", &up.release, "1.1 gatebench-").await;
    proxy.stop().await;
}

#[tokio::test]
async fn interim_responses_reach_an_h2c_client_before_the_final_one() {
    let up = Scripted::start().await;
    let proxy = Running::proxy(ProxyConfig {
        http2: true,
        ..proxy_config(up.url())
    })
    .await;
    let stream = TcpStream::connect(proxy.addr).await.unwrap();
    interim_in_order_h2(stream, "http", &up.release, "1.1 gatebench-").await;
    // The same port still serves HTTP/1.1 with its interim responses.
    let mut conn = proxy.connect().await;
    interim_in_order(&mut conn, &up).await;
    proxy.stop().await;
}

/// An HTTP/2 upstream over TLS (ALPN h2) with the same script as [`Scripted`]: 103 at once,
/// then, once released, 100, 103 and the 200, each as HEADERS on the request's stream.
struct ScriptedH2 {
    addr: std::net::SocketAddr,
    release: Arc<Semaphore>,
    task: JoinHandle<()>,
}

impl Drop for ScriptedH2 {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn informational(status: u16, link: Option<&str>) -> Response<()> {
    let mut response = Response::builder().status(status);
    if let Some(link) = link {
        response = response.header("link", link);
    }
    response.body(()).unwrap()
}

impl ScriptedH2 {
    async fn start(cert: &Cert) -> Self {
        let acceptor = cert.h2_acceptor();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let release = Arc::new(Semaphore::new(0));
        let gate = release.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (acceptor, gate) = (acceptor.clone(), gate.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let Ok(mut conn) = h2::server::handshake(tls).await else {
                        return;
                    };
                    while let Some(Ok((_, respond))) = conn.accept().await {
                        tokio::spawn(script_h2(respond, gate.clone()));
                    }
                });
            }
        });
        ScriptedH2 {
            addr,
            release,
            task,
        }
    }

    fn url(&self) -> String {
        format!("https://{}", self.addr)
    }
}

async fn script_h2(mut respond: h2::server::SendResponse<Bytes>, release: Arc<Semaphore>) {
    let early = informational(103, Some("</style.css>; rel=preload"));
    if respond.send_informational(early).is_err() {
        return;
    }
    release.acquire().await.unwrap().forget();
    let _ = respond.send_informational(informational(100, None));
    let _ = respond.send_informational(informational(103, Some("</app.js>; rel=preload")));
    let last = Response::builder()
        .status(200)
        .header("content-length", "2")
        .body(())
        .unwrap();
    if let Ok(mut body) = respond.send_response(last, false) {
        let _ = body.send_data(Bytes::from_static(b"ok"), true);
    }
}

/// The proxy speaks to HTTP/2 upstreams with h2's client, which surfaces 1xx HEADERS: they reach
/// an HTTP/1.1 client and an HTTP/2 client in order before the final response, with a Via
/// naming HTTP/2 as the protocol they came in.
#[tokio::test]
async fn interim_responses_of_an_h2_upstream_reach_http1_and_h2_clients() {
    let (front, back) = (cert("interim-h2up-front"), cert("interim-h2up-back"));
    let up = ScriptedH2::start(&back).await;
    let proxy = Running::proxy(ProxyConfig {
        tls: Some(front.settings.clone()),
        http2: true,
        upstream_tls: UpstreamTls {
            insecure: true,
            ..UpstreamTls::default()
        },
        ..proxy_config(up.url())
    })
    .await;
    let h1 = tls_connect(proxy.addr, &front.pem, &[b"http/1.1"]).await;
    interim_in_order_via(&mut Conn::new(h1), &up.release, "2 gatebench-").await;
    let h2 = tls_connect(proxy.addr, &front.pem, &[b"h2"]).await;
    interim_in_order_h2(h2, "https", &up.release, "2 gatebench-").await;
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
    let (refused, _held) = refused_url();
    let proxy = Running::proxy(proxy_config(refused)).await;
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
