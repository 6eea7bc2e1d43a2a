//! Idle pooled upstream connections are closed without traffic: on the pool's idle timeout
//! (HTTP/1.1 and HTTP/2 upstreams), and as soon as possible once the upstream closed its side,
//! so that a quiet proxy keeps no socket in CLOSE_WAIT.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use gatebench_services::{EchoConfig, ProxyConfig, UpstreamTls};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::support::*;

/// The upstreams's side of established TCP connections accepted on `addr`, from
/// `/proc/net/tcp` (the test process holds both ends; only this listener's port counts).
fn established_at(addr: SocketAddr) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp is readable");
    let local = format!(":{:04X}", addr.port());
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let mut fields = line.split_whitespace().skip(1);
            let (Some(local_addr), Some(_), Some(state)) =
                (fields.next(), fields.next(), fields.next())
            else {
                return false;
            };
            // 01: ESTABLISHED (include/net/tcp_states.h).
            local_addr.ends_with(&local) && state == "01"
        })
        .count()
}

/// Polls `done` every 50 ms until it holds or `patience` passes; returns the time it took.
async fn within(patience: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() <= patience {
        if done() {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

#[tokio::test]
async fn an_idle_pooled_connection_is_closed_on_the_idle_timeout_without_traffic() {
    // The upstream keeps its connections open: only the proxy's idle timeout can close them.
    let upstream = Capture::start(Reply::Ok).await;
    let proxy = Running::proxy(ProxyConfig {
        pool_idle_timeout: Duration::from_secs(1),
        ..proxy_config(upstream.url())
    })
    .await;
    let mut conn = proxy.connect().await;
    assert_eq!(conn.request(GET).await.status, 200);
    let pooled = Instant::now();
    drop(conn);
    // Not before the timeout (a lower bound a loaded machine cannot break: timers fire late,
    // never early)...
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        upstream.closed_by_peer.load(Ordering::SeqCst),
        0,
        "closed before its idle timeout"
    );
    // ...and without any further request, soon after it.
    let closed = within(PATIENCE, || {
        upstream.closed_by_peer.load(Ordering::SeqCst) == 1
    })
    .await;
    assert!(
        closed.is_some(),
        "the idle pooled connection is still open {:?} after its last use",
        pooled.elapsed()
    );
    assert_eq!(upstream.connections.load(Ordering::SeqCst), 1);
    proxy.stop().await;
}

#[tokio::test]
async fn a_pooled_connection_the_upstream_closed_is_closed_without_traffic() {
    // An upstream that answers with keep-alive, then closes its sending side (as a back-end
    // whose own keep-alive timeout ran out) and waits for the proxy to close the other side.
    // Left alone the proxy's socket would sit in CLOSE_WAIT; the pool's idle timeout (20 s)
    // is far beyond the test's patience, so only noticing the upstream's close passes.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (eof_tx, eof_rx) = oneshot::channel::<Duration>();
    let backend = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        while find(&buf, b"\r\n\r\n").is_none() {
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the proxy closed before sending its request");
            buf.extend_from_slice(&chunk[..n]);
        }
        stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .await
            .unwrap();
        // Give the proxy time to pool the connection, then half-close.
        tokio::time::sleep(Duration::from_millis(200)).await;
        stream.shutdown().await.unwrap();
        let closed_at = Instant::now();
        if let Ok(n) = stream.read(&mut chunk).await {
            assert_eq!(n, 0, "the proxy sent more on a connection it pooled");
        }
        let _ = eof_tx.send(closed_at.elapsed());
    });
    let proxy = Running::proxy(ProxyConfig {
        pool_idle_timeout: Duration::from_secs(20),
        ..proxy_config(format!("http://{addr}"))
    })
    .await;
    let mut conn = proxy.connect().await;
    assert_eq!(conn.request(GET).await.status, 200);
    // The reaper sweeps every 5 s at most with a 20 s idle timeout; 10 s of slack on top.
    let after = tokio::time::timeout(Duration::from_secs(15), eof_rx)
        .await
        .expect("the proxy kept the socket the upstream closed (CLOSE_WAIT) without traffic")
        .expect("the back-end ran to its end");
    assert!(after < Duration::from_secs(15), "{after:?}");
    backend.await.unwrap();
    // The proxy still serves (its client-side idle timeout may have closed `conn` by now).
    drop(conn);
    let mut conn = proxy.connect().await;
    assert_eq!(
        conn.request(b"GET /__gatebench/health HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .status,
        200
    );
    proxy.stop().await;
}

#[tokio::test]
async fn an_idle_http2_upstream_connection_is_closed_on_the_idle_timeout() {
    let back = cert("pool-h2-back");
    let echo = Running::echo(EchoConfig {
        tls: Some(back.settings.clone()),
        http2: true,
        ..echo_config()
    })
    .await;
    let proxy = Running::proxy(ProxyConfig {
        pool_idle_timeout: Duration::from_secs(1),
        upstream_tls: UpstreamTls {
            insecure: true,
            ..UpstreamTls::default()
        },
        ..proxy_config(echo.url(true))
    })
    .await;
    let mut conn = proxy.connect().await;
    for _ in 0..3 {
        assert_eq!(conn.request(GET).await.status, 200);
    }
    drop(conn);
    // One shared HTTP/2 connection to the upstream, kept while it is used...
    assert_eq!(established_at(echo.addr), 1, "one pooled h2 connection");
    // ...and closed once idle for the timeout, with no traffic to notice it.
    let closed = within(PATIENCE, || established_at(echo.addr) == 0).await;
    assert!(
        closed.is_some(),
        "the idle HTTP/2 upstream connection is still open"
    );
    proxy.stop().await;
    echo.stop().await;
}
