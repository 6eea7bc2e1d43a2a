//! Scripted HTTP/2 servers (h2c, prior knowledge) for the HTTP/2 error classes: refused
//! streams, reset streams, GOAWAY, and a small stream limit whose concurrency the server
//! measures itself.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use h2::Reason;
use http::Response;

/// What the HTTP/2 server does with each stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum H2Behavior {
    /// Answers 200 `ok`.
    Ok,
    /// Resets every stream with REFUSED_STREAM.
    RefuseStreams,
    /// Resets every stream with INTERNAL_ERROR.
    ResetStreams,
    /// Answers `n` streams per connection, then sends GOAWAY (graceful: streams already
    /// accepted are answered) and the connection ends.
    GoAwayAfter(u64),
    /// Written frame by frame (not with h2): answers the client's SETTINGS and PINGs, and on
    /// the first request sends GOAWAY with last-stream-id 0, so that stream was never
    /// processed, then closes the connection once the client has read it.
    GoAwayRefusing,
    /// Announces SETTINGS_MAX_CONCURRENT_STREAMS = `max` and holds every answer 20 ms, so a
    /// client with more streams than that would exceed the limit if it ignored it.
    MaxStreams(u32),
}

#[derive(Debug, Default)]
struct Counters {
    streams: AtomicU64,
    /// Streams whose request carried `x-check: yes` and the server's own `:authority`.
    checked: AtomicU64,
    open: AtomicU64,
    max_open: AtomicU64,
}

/// An h2c server on 127.0.0.1:0 on its own thread; stops when dropped.
#[derive(Debug)]
pub struct H2TestServer {
    addr: SocketAddr,
    counters: Arc<Counters>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl H2TestServer {
    /// Starts the server; it is listening when this returns.
    pub fn start(behavior: H2Behavior) -> H2TestServer {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        std_listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let addr = std_listener.local_addr().expect("local addr");
        let counters = Arc::new(Counters::default());
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        let c = counters.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(std_listener).expect("listener");
                loop {
                    tokio::select! {
                        _ = &mut rx => break,
                        accepted = listener.accept() => {
                            let Ok((sock, _)) = accepted else { continue };
                            let _ = sock.set_nodelay(true);
                            tokio::spawn(connection(sock, behavior, c.clone()));
                        }
                    }
                }
            });
            rt.shutdown_timeout(Duration::from_millis(100));
        });
        H2TestServer {
            addr,
            counters,
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Streams the server received.
    pub fn streams_seen(&self) -> u64 {
        self.counters.streams.load(Ordering::SeqCst)
    }

    /// Streams whose request carried the header `x-check: yes` and this server's address as
    /// `:authority`: a client that encodes its header block wrongly after the first request
    /// falls short of [`H2TestServer::streams_seen`].
    pub fn checked_streams(&self) -> u64 {
        self.counters.checked.load(Ordering::SeqCst)
    }

    /// The most streams that were open at once on the server (one connection or several).
    pub fn max_concurrent_streams_seen(&self) -> u64 {
        self.counters.max_open.load(Ordering::SeqCst)
    }
}

impl Drop for H2TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn connection(sock: tokio::net::TcpStream, behavior: H2Behavior, c: Arc<Counters>) {
    if behavior == H2Behavior::GoAwayRefusing {
        let _ = raw_goaway(sock, &c).await;
        return;
    }
    let sock_addr = sock.local_addr().map(|a| a.to_string()).unwrap_or_default();
    let mut builder = h2::server::Builder::new();
    if let H2Behavior::MaxStreams(max) = behavior {
        builder.max_concurrent_streams(max);
    }
    let Ok(mut conn) = builder.handshake::<_, Bytes>(sock).await else {
        return;
    };
    let mut answered = 0u64;
    while let Some(next) = conn.accept().await {
        let Ok((req, mut respond)) = next else { return };
        c.streams.fetch_add(1, Ordering::SeqCst);
        if req.headers().get("x-check").is_some_and(|v| v == "yes")
            && req
                .uri()
                .authority()
                .is_some_and(|a| a.as_str() == sock_addr)
        {
            c.checked.fetch_add(1, Ordering::SeqCst);
        }
        match behavior {
            H2Behavior::RefuseStreams => respond.send_reset(Reason::REFUSED_STREAM),
            H2Behavior::ResetStreams => respond.send_reset(Reason::INTERNAL_ERROR),
            _ => {
                answered += 1;
                if let H2Behavior::GoAwayAfter(n) = behavior {
                    if answered == n {
                        // GOAWAY: streams already accepted are answered, new ones are not.
                        conn.graceful_shutdown();
                    }
                }
                let hold = matches!(behavior, H2Behavior::MaxStreams(_));
                let c = c.clone();
                tokio::spawn(async move {
                    let open = c.open.fetch_add(1, Ordering::SeqCst) + 1;
                    c.max_open.fetch_max(open, Ordering::SeqCst);
                    let mut body = req.into_body();
                    while let Some(Ok(chunk)) = body.data().await {
                        let _ = body.flow_control().release_capacity(chunk.len());
                    }
                    if hold {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    c.open.fetch_sub(1, Ordering::SeqCst);
                    let resp = Response::builder()
                        .status(200)
                        .body(())
                        .expect("static response");
                    if let Ok(mut send) = respond.send_response(resp, false) {
                        let _ = send.send_data(Bytes::from_static(b"ok"), true);
                    }
                });
            }
        }
    }
}

/// The raw HTTP/2 server of [`H2Behavior::GoAwayRefusing`] (RFC 9113 §4.1 frame layout).
async fn raw_goaway(mut sock: tokio::net::TcpStream, c: &Counters) -> std::io::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const SETTINGS: u8 = 0x4;
    const PING: u8 = 0x6;
    const HEADERS: u8 = 0x1;
    const GOAWAY: u8 = 0x7;
    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }
    let mut preface = [0u8; 24];
    sock.read_exact(&mut preface).await?;
    sock.write_all(&frame(SETTINGS, 0, 0, &[])).await?;
    loop {
        let mut head = [0u8; 9];
        sock.read_exact(&mut head).await?;
        let len = (usize::from(head[0]) << 16) | (usize::from(head[1]) << 8) | usize::from(head[2]);
        let (kind, flags) = (head[3], head[4]);
        let mut payload = vec![0u8; len];
        sock.read_exact(&mut payload).await?;
        match kind {
            SETTINGS if flags & 0x1 == 0 => sock.write_all(&frame(SETTINGS, 0x1, 0, &[])).await?,
            PING if flags & 0x1 == 0 => sock.write_all(&frame(PING, 0x1, 0, &payload)).await?,
            HEADERS => {
                c.streams.fetch_add(1, Ordering::SeqCst);
                // last-stream-id 0, NO_ERROR: nothing the client sent was processed.
                sock.write_all(&frame(GOAWAY, 0, 0, &[0; 8])).await?;
                sock.flush().await?;
                // Let the client read it before the connection goes.
                let mut rest = [0u8; 4096];
                let _ = tokio::time::timeout(Duration::from_millis(200), async {
                    while sock.read(&mut rest).await.is_ok_and(|n| n > 0) {}
                })
                .await;
                return Ok(());
            }
            _ => {}
        }
    }
}
