//! WebSocket (HTTP/1.1 `Upgrade`) through the proxy, against a scripted upstream that answers
//! the upgrade: the request keeps `Upgrade` and `Connection: upgrade` and gets `Via`; bytes
//! sent right behind either side's head are not lost; bytes then move both ways; the tunnel
//! stays open while either direction moves and closes once both are silent for the upstream
//! read timeout (800 ms here).

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support::{contains, find, proxy_config, Running};

/// Reads from `s` until `needle` has arrived (within 5 s); everything read.
async fn read_until(s: &mut TcpStream, got: &mut Vec<u8>, needle: &[u8]) {
    let mut buf = [0u8; 4096];
    while !contains(got, needle) {
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "no {:?} in {:?}",
                    String::from_utf8_lossy(needle),
                    String::from_utf8_lossy(got)
                )
            })
            .unwrap();
        assert!(
            n > 0,
            "closed before {:?}: {:?}",
            String::from_utf8_lossy(needle),
            String::from_utf8_lossy(got)
        );
        got.extend_from_slice(&buf[..n]);
    }
}

/// An upstream that takes one upgrade: answers 101 with `early-from-upstream` right behind its
/// head, then pushes `push` bytes one every 200 ms (if any) and echoes what it reads (the
/// client's bytes sent behind its request head first). Sends back the request head it got
/// through the returned channel.
async fn upstream(push: usize) -> (String, tokio::sync::oneshot::Receiver<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut got = Vec::new();
        read_until(&mut s, &mut got, b"\r\n\r\n").await;
        s.write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x-test\r\nConnection: Upgrade\r\n\r\nearly-from-upstream")
            .await
            .unwrap();
        let _ = tx.send(got);
        let (mut r, mut w) = s.into_split();
        tokio::spawn(async move {
            for _ in 0..push {
                tokio::time::sleep(Duration::from_millis(200)).await;
                if w.write_all(b"+").await.is_err() {
                    return;
                }
            }
            let mut buf = [0u8; 1024];
            loop {
                match r.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if w.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                }
            }
        });
    });
    (url, rx)
}

const UPGRADE: &[u8] = b"GET /chat?x=1 HTTP/1.1\r\nHost: t\r\nUpgrade: x-test\r\nConnection: keep-alive, Upgrade, X-Gone\r\nX-Gone: 1\r\n\r\nearly-from-client";

#[tokio::test]
async fn an_upgrade_is_passed_and_the_connections_spliced_until_both_are_idle() {
    let (url, request) = upstream(0).await;
    let proxy = Running::proxy(proxy_config(url)).await;
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    c.write_all(UPGRADE).await.unwrap();
    let mut got = Vec::new();
    read_until(&mut c, &mut got, b"early-from-upstream").await;
    let head_end = find(&got, b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&got[..head_end]).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(
        head.contains("upgrade: x-test") && head.contains("connection: upgrade"),
        "{head}"
    );
    let sent = String::from_utf8(request.await.unwrap()).unwrap();
    let lower = sent.to_ascii_lowercase();
    assert!(sent.starts_with("GET /chat?x=1 HTTP/1.1\r\n"), "{sent}");
    assert!(lower.contains("\r\nupgrade: x-test\r\n"), "{sent}");
    assert!(lower.contains("\r\nconnection: upgrade\r\n"), "{sent}");
    assert!(lower.contains("\r\nvia: "), "{sent}");
    assert!(
        !lower.contains("keep-alive") && !lower.contains("x-gone"),
        "hop-by-hop fields go: {sent}"
    );
    // The bytes the client sent behind its request reached the upstream after the 101 (its
    // echo brings them back).
    read_until(&mut c, &mut got, b"early-from-client").await;
    // Both ways, in order.
    c.write_all(b"ping-1").await.unwrap();
    read_until(&mut c, &mut got, b"ping-1").await;
    c.write_all(b"ping-2").await.unwrap();
    read_until(&mut c, &mut got, b"ping-2").await;
    // Silent both ways: closed after the upstream read timeout (800 ms), not before.
    let quiet = Instant::now();
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(Duration::from_secs(10), c.read(&mut buf))
        .await
        .expect("an idle tunnel is closed")
        .unwrap_or(0);
    assert_eq!(n, 0, "nothing more came: {:?}", &buf[..n]);
    let waited = quiet.elapsed();
    assert!(
        waited >= Duration::from_millis(700),
        "closed after {waited:?}"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn a_tunnel_that_moves_one_way_only_stays_open() {
    // The upstream pushes a byte every 200 ms for 2 s; the client says nothing after its
    // upgrade: busy one way is not idle.
    let (url, _request) = upstream(10).await;
    let proxy = Running::proxy(proxy_config(url)).await;
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    c.write_all(UPGRADE).await.unwrap();
    let mut got = Vec::new();
    read_until(&mut c, &mut got, b"early-from-upstream").await;
    read_until(&mut c, &mut got, b"++++++++++").await;
    // And the client is still heard once it speaks.
    c.write_all(b"late").await.unwrap();
    read_until(&mut c, &mut got, b"late").await;
    proxy.stop().await;
}

#[tokio::test]
async fn a_refused_upgrade_reaches_the_client_as_answered() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut got = Vec::new();
        read_until(&mut s, &mut got, b"\r\n\r\n").await;
        s.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 7\r\nX-Why: policy\r\n\r\nno, sir")
            .await
            .unwrap();
    });
    let proxy = Running::proxy(proxy_config(url)).await;
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    c.write_all(&UPGRADE[..UPGRADE.len() - b"early-from-client".len()])
        .await
        .unwrap();
    let mut got = Vec::new();
    read_until(&mut c, &mut got, b"no, sir").await;
    let text = String::from_utf8_lossy(&got).to_ascii_lowercase();
    assert!(text.starts_with("http/1.1 403"), "{text}");
    assert!(
        text.contains("x-why: policy") && text.contains("content-length: 7"),
        "{text}"
    );
    proxy.stop().await;
}

/// RFC 8441: an HTTP/2 client's extended CONNECT (`:protocol websocket`) reaches the upstream
/// as an HTTP/1.1 WebSocket upgrade of the `:path` (with a key of the proxy's own), the 101
/// comes back as a 200, and the stream's DATA and the upstream's bytes are spliced both ways.
#[tokio::test]
async fn an_http2_extended_connect_is_passed_as_an_http1_upgrade() {
    let (url, request) = upstream(0).await;
    let proxy = Running::proxy(gatebench_services::ProxyConfig {
        http2: true,
        ..proxy_config(url)
    })
    .await;
    let tcp = TcpStream::connect(proxy.addr).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(conn);
    let mut client = client.ready().await.unwrap();
    // The server's SETTINGS announce extended CONNECT once they have arrived.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !client.is_extended_connect_protocol_enabled() {
        assert!(
            Instant::now() < deadline,
            "no SETTINGS_ENABLE_CONNECT_PROTOCOL"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
        client = client.ready().await.unwrap();
    }
    let mut req = http::Request::builder()
        .method(http::Method::CONNECT)
        .uri(format!("http://{}/chat?x=1", proxy.addr))
        .header("sec-websocket-version", "13")
        .body(())
        .unwrap();
    req.extensions_mut()
        .insert(h2::ext::Protocol::from_static("websocket"));
    let (response, mut send) = client.send_request(req, false).unwrap();
    let response = tokio::time::timeout(Duration::from_secs(5), response)
        .await
        .expect("an answer to the CONNECT")
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut recv = response.into_body();
    let sent = String::from_utf8(request.await.unwrap()).unwrap();
    let lower = sent.to_ascii_lowercase();
    assert!(sent.starts_with("GET /chat?x=1 HTTP/1.1\r\n"), "{sent}");
    assert!(lower.contains("\r\nupgrade: websocket\r\n"), "{sent}");
    assert!(lower.contains("\r\nconnection: upgrade\r\n"), "{sent}");
    assert!(lower.contains("\r\nsec-websocket-key: "), "{sent}");
    assert!(
        lower.contains("\r\nsec-websocket-version: 13\r\n"),
        "{sent}"
    );
    // The upstream's first bytes, then our bytes echoed back, in order.
    let mut got = Vec::new();
    let mut read_until = async |got: &mut Vec<u8>, needle: &[u8]| {
        while !contains(got, needle) {
            let data = tokio::time::timeout(Duration::from_secs(5), recv.data())
                .await
                .expect("bytes through the tunnel")
                .expect("the stream is open")
                .unwrap();
            let _ = recv.flow_control().release_capacity(data.len());
            got.extend_from_slice(&data);
        }
    };
    read_until(&mut got, b"early-from-upstream").await;
    send.send_data(bytes::Bytes::from_static(b"ping-1"), false)
        .unwrap();
    read_until(&mut got, b"ping-1").await;
    send.send_data(bytes::Bytes::from_static(b"ping-2"), false)
        .unwrap();
    read_until(&mut got, b"ping-2").await;
    drop(send);
    proxy.stop().await;
}
