//! Server-sent event streams: the echo's emulated model (`POST /v1/chat/completions` with
//! `"stream": true`) sends each event as it is produced, and the proxy forwards each as it
//! arrives, never holding one back for the next.
//!
//! The oracle is the client's clock: a stream whose tokens are 300 ms apart must show its first
//! token well before the stream ends (≥ 1.2 s after it starts). A server or proxy that buffered
//! the body would deliver the first token with the last one. The bound on the first token (600
//! ms, for a token due at once) is loose for a loaded 2-core machine and still catches that.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{contains, echo_config, proxy_config, Running};

/// A chat-completions request asking for `tokens` tokens, the first at once, `gap_ms` apart.
fn chat_request(tokens: u32, gap_ms: u32) -> Vec<u8> {
    let body = br#"{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}"#;
    let mut r = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nx-gatebench-first-token-ms: 0\r\nx-gatebench-token-interval-ms: {gap_ms}\r\n\
         x-gatebench-tokens: {tokens}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

/// Sends a chat request to `addr` and reads the stream to `[DONE]`: when the first token came,
/// when the stream ended, and the bytes.
async fn stream_through(
    addr: std::net::SocketAddr,
    tokens: u32,
    gap_ms: u32,
) -> (Duration, Duration, Vec<u8>) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let t0 = Instant::now();
    s.write_all(&chat_request(tokens, gap_ms)).await.unwrap();
    let mut got = Vec::new();
    let mut first = None;
    let mut buf = [0u8; 4096];
    let end = loop {
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf))
            .await
            .expect("the stream went on")
            .unwrap();
        assert!(
            n > 0,
            "closed before [DONE]: {}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
        if first.is_none() && contains(&got, b"\"content\":\" lorem\"") {
            first = Some(t0.elapsed());
        }
        // The chunked body's last chunk follows [DONE].
        if contains(&got, b"data: [DONE]\n\n\r\n0\r\n\r\n") {
            break t0.elapsed();
        }
    };
    (first.expect("a first token"), end, got)
}

#[tokio::test]
async fn the_echo_sends_each_token_as_it_is_produced() {
    let echo = Running::echo(echo_config()).await;
    let (first, end, got) = stream_through(echo.addr, 5, 300).await;
    assert!(
        contains(&got, b"Content-Type: text/event-stream")
            || contains(&got, b"content-type: text/event-stream")
    );
    assert!(
        contains(&got, b"Transfer-Encoding: chunked")
            || contains(&got, b"transfer-encoding: chunked")
    );
    assert!(end >= Duration::from_millis(1200), "{end:?}");
    assert!(
        first < Duration::from_millis(600),
        "first token at {first:?}, end at {end:?}"
    );
    echo.stop().await;
}

#[tokio::test]
async fn the_proxy_forwards_each_event_as_it_arrives() {
    let echo = Running::echo(echo_config()).await;
    let mut config = proxy_config(echo.url(false));
    // The gaps are longer than nothing, shorter than the upstream read timeout.
    config.timeouts.upstream_read = Duration::from_secs(5);
    config.timeouts.response = Duration::from_secs(5);
    let proxy = Running::proxy(config).await;
    let (first, end, got) = stream_through(proxy.addr, 5, 300).await;
    assert!(end >= Duration::from_millis(1200), "{end:?}");
    assert!(
        first < Duration::from_millis(600),
        "first token at {first:?}, end at {end:?}"
    );
    // Every event arrived, in order.
    let text = String::from_utf8_lossy(&got);
    let order: Vec<usize> = [" lorem", " ipsum", " dolor", " sit", " amet"]
        .iter()
        .map(|w| text.find(&format!("\"content\":\"{w}\"")).expect(w))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    proxy.stop().await;
    echo.stop().await;
}
