//! Header rules checked against what the upstream actually received: `TE: trailers` re-sent to
//! HTTP/2 upstreams only (RFC 9113 §8.2.2, RFC 9110 §10.1.4), and `Connection` unable to remove
//! Host or Content-Length (RFC 9110 §7.6.1: they describe this very message).

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use gatebench_services::{ProxyConfig, UpstreamTls};
use http::HeaderMap;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::support::*;

/// An HTTP/2 upstream over TLS (ALPN `h2`) that records every request head it gets and answers
/// `200 ok`.
struct H2Capture {
    addr: std::net::SocketAddr,
    heads: Arc<Mutex<Vec<(http::request::Parts, Bytes)>>>,
    task: JoinHandle<()>,
}

impl Drop for H2Capture {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl H2Capture {
    async fn start(cert: &Cert) -> Self {
        let acceptor = cert.h2_acceptor();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = heads.clone();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, seen) = (acceptor.clone(), seen.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let Ok(mut conn) = h2::server::handshake(tls).await else {
                        return;
                    };
                    while let Some(Ok((request, mut respond))) = conn.accept().await {
                        let seen = seen.clone();
                        tokio::spawn(async move {
                            let (parts, mut body) = request.into_parts();
                            let mut data = Vec::new();
                            while let Some(Ok(chunk)) = body.data().await {
                                let _ = body.flow_control().release_capacity(chunk.len());
                                data.extend_from_slice(&chunk);
                            }
                            seen.lock().unwrap().push((parts, Bytes::from(data)));
                            let response = http::Response::new(());
                            if let Ok(mut send) = respond.send_response(response, false) {
                                let _ = send.send_data(Bytes::from_static(b"ok"), true);
                            }
                        });
                    }
                });
            }
        });
        H2Capture { addr, heads, task }
    }

    fn url(&self) -> String {
        format!("https://localhost:{}", self.addr.port())
    }

    fn versions(&self) -> Vec<http::Version> {
        self.heads
            .lock()
            .unwrap()
            .iter()
            .map(|(p, _)| p.version)
            .collect()
    }

    /// The headers of the only request received so far.
    fn only_headers(&self) -> HeaderMap {
        let heads = self.heads.lock().unwrap();
        assert_eq!(heads.len(), 1, "one request reached the upstream");
        heads[0].0.headers.clone()
    }
}

fn to_h2_upstream(url: String) -> ProxyConfig {
    ProxyConfig {
        upstream_tls: UpstreamTls {
            insecure: true,
            ..UpstreamTls::default()
        },
        ..proxy_config(url)
    }
}

/// `TE: trailers` from an HTTP/1.1 client reaches an HTTP/2 upstream (the one place it is
/// allowed in HTTP/2); any other TE value does not.
#[tokio::test]
async fn te_trailers_is_resent_to_an_http2_upstream() {
    let cert = cert("te-h2-upstream");
    for (te, forwarded) in [
        ("trailers", true),
        ("trailers, deflate", false),
        ("gzip", false),
    ] {
        let upstream = H2Capture::start(&cert).await;
        let proxy = Running::proxy(to_h2_upstream(upstream.url())).await;
        let mut conn = proxy.connect().await;
        let request = format!("GET /te HTTP/1.1\r\nHost: localhost\r\nTE: {te}\r\n\r\n");
        let answer = conn.request(request.as_bytes()).await;
        assert_eq!((answer.status, answer.body.as_slice()), (200, &b"ok"[..]));
        assert_eq!(upstream.versions(), [http::Version::HTTP_2]);
        let headers = upstream.only_headers();
        let te_seen: Vec<_> = headers.get_all("te").iter().collect();
        if forwarded {
            assert_eq!(te_seen, ["trailers"], "TE: {te}");
        } else {
            assert!(te_seen.is_empty(), "TE: {te} reached the upstream");
        }
        proxy.stop().await;
    }
}

/// The same from an HTTP/2 client: `te: trailers` passes h2 → h2.
#[tokio::test]
async fn te_trailers_passes_from_an_http2_client_to_an_http2_upstream() {
    let cert = cert("te-h2-h2");
    let upstream = H2Capture::start(&cert).await;
    let proxy = Running::proxy(ProxyConfig {
        tls: Some(cert.settings.clone()),
        http2: true,
        ..to_h2_upstream(upstream.url())
    })
    .await;
    let mut h2 = H2::handshake(tls_connect(proxy.addr, &cert.pem, &[b"h2"]).await).await;
    let request = http::Request::get("https://localhost/te")
        .header("te", "trailers")
        .body(http_body_util::Full::new(Bytes::new()))
        .unwrap();
    let answer = h2.send_request(request).await;
    assert_eq!(answer.status, 200);
    assert_eq!(upstream.only_headers()["te"], "trailers");
    proxy.stop().await;
}

/// An HTTP/1.1 upstream never gets TE, `trailers` or not: it is hop-by-hop there, and the proxy
/// does not forward trailers.
#[tokio::test]
async fn te_trailers_is_not_sent_to_an_http1_upstream() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let mut conn = proxy.connect().await;
    let answer = conn
        .request(b"GET / HTTP/1.1\r\nHost: localhost\r\nTE: trailers\r\n\r\n")
        .await;
    assert_eq!(answer.status, 200);
    let seen = String::from_utf8_lossy(&upstream.all_bytes()).to_ascii_lowercase();
    assert!(seen.starts_with("get / http/1.1\r\n"), "{seen}");
    assert!(!seen.contains("\r\nte:"), "{seen}");
    proxy.stop().await;
}

/// `Connection: host, content-length` cannot remove Host or Content-Length: the upstream gets
/// the client's Host (not its own authority) and the body framed by the client's length, while
/// another field named there is removed.
#[tokio::test]
async fn connection_cannot_remove_host_or_content_length() {
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(proxy_config(upstream.url())).await;
    let mut conn = proxy.connect().await;
    let answer = conn
        .request(
            b"POST /named HTTP/1.1\r\nHost: example.test\r\nConnection: host, content-length, \
X-Gone\r\nX-Gone: 1\r\nContent-Length: 5\r\n\r\nhello",
        )
        .await;
    assert_eq!(answer.status, 200);
    let seen = String::from_utf8_lossy(&upstream.all_bytes()).to_ascii_lowercase();
    assert!(seen.contains("\r\nhost: example.test\r\n"), "{seen}");
    assert!(seen.contains("\r\ncontent-length: 5\r\n"), "{seen}");
    assert!(!seen.contains("transfer-encoding"), "{seen}");
    assert!(
        !seen.contains("x-gone") && !seen.contains("connection:"),
        "{seen}"
    );
    assert!(seen.ends_with("\r\n\r\nhello"), "{seen}");
    proxy.stop().await;
}

/// The same towards an HTTP/2 upstream: Host becomes `:authority` and the body keeps its
/// declared length.
#[tokio::test]
async fn connection_cannot_remove_host_or_content_length_towards_http2() {
    let cert = cert("connection-h2-upstream");
    let upstream = H2Capture::start(&cert).await;
    let proxy = Running::proxy(to_h2_upstream(upstream.url())).await;
    let mut conn = proxy.connect().await;
    let answer = conn
        .request(
            b"POST /named HTTP/1.1\r\nHost: example.test\r\nConnection: host, content-length\r\n\
Content-Length: 5\r\n\r\nhello",
        )
        .await;
    assert_eq!(answer.status, 200);
    {
        let heads = upstream.heads.lock().unwrap();
        let (parts, body) = &heads[0];
        assert_eq!(parts.uri.authority().unwrap().as_str(), "example.test");
        assert_eq!(parts.headers["content-length"], "5");
        assert_eq!(body.as_ref(), b"hello");
    }
    proxy.stop().await;
}
