//! Entry point for the fuzz target `h1client` (feature `fuzzing`, never in production builds):
//! a response read by [`read_head`] and [`H1Body`] exactly as the proxy reads one, from an
//! upstream that sends scripted reads and closes.
//!
//! The upstream is a stream socket pair, as a TCP connection is a stream: nothing the upstream
//! sends is ever lost, and a read smaller than what is waiting takes part of it and leaves the
//! rest for the next read. So that the fuzzer still controls where reads split, the upstream
//! writes one piece and waits until the reader has taken all of it (nothing left queued on the
//! socket) before writing the next; when the reader stops reading, the harness ends the
//! upstream. The reading end goes into a `TcpStream` because that is what an upstream
//! connection holds (only `read`, `write` and `shutdown` are used on it, which a Unix socket
//! supports alike).

use std::future::poll_fn;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use hyper::body::Body;

use super::{read_head, ExchangeLimits, H1Body, H1Conn, Home};
use crate::upstream::Pool;

/// Largest piece of a script.
pub const MAX_PIECE: usize = 4096;
/// Most pieces in a script.
pub const MAX_PIECES: usize = 128;

/// What the proxy made of one upstream response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H1ClientResponse {
    /// The final status (1xx interim responses are dropped).
    pub status: u16,
    /// The response said HTTP/1.0.
    pub http10: bool,
    /// The fields forwarded (hop-by-hop ones removed), lower-case names, in order.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body bytes forwarded.
    pub body: Vec<u8>,
    /// The body ended cleanly (not cut short or broken).
    pub complete: bool,
    /// The connection went back to the pool.
    pub pooled: bool,
}

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
}

/// Reads one response from an upstream that sends `pieces` (non-empty, at most [`MAX_PIECE`]
/// bytes each, at most [`MAX_PIECES`] of them), each read as one piece unless the reader takes
/// less, and closes. `Err` carries the head's error.
///
/// # Panics
/// When the exchange does not end within ten seconds (the upstream has closed: it would hang).
pub fn response(
    pieces: &[&[u8]],
    head_request: bool,
    max_head: usize,
) -> Result<H1ClientResponse, String> {
    RUNTIME.with(|rt| {
        rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(10), run(pieces, head_request, max_head))
                .await
                .expect("the response is read to its end within ten seconds")
        })
    })
}

async fn run(
    pieces: &[&[u8]],
    head_request: bool,
    max_head: usize,
) -> Result<H1ClientResponse, String> {
    assert!(pieces.len() <= MAX_PIECES);
    assert!(pieces.iter().all(|p| !p.is_empty() && p.len() <= MAX_PIECE));
    let (reader, writer) = UnixStream::pair().expect("a socket pair");
    // Ended (and joined) however `run` returns, before the reading end closes.
    let _upstream = Upstream::start(writer, pieces);
    let reader = std::net::TcpStream::from(OwnedFd::from(reader));
    reader.set_nonblocking(true).expect("non-blocking");
    let io = tokio::net::TcpStream::from_std(reader).expect("registered");
    let mut conn = H1Conn::new(gatebench_tls::MaybeTls::Plain(io));
    let response = read_head(&mut conn.io, max_head, None, false)
        .await
        .map_err(|e| format!("{e:?}"))?;
    let pool = Arc::new(Pool::new(1, Duration::from_secs(3600), 4));
    let home = Home {
        pool: pool.clone(),
        shard: 0,
        label: Arc::from("fuzz"),
    };
    let limits = ExchangeLimits {
        response_timeout: Duration::from_secs(3600),
        read_timeout: Duration::from_secs(3600),
        max_head,
        raw_head: false,
    };
    let (parts, mut body) = H1Body::new(conn, response, head_request, true, limits, home);
    let mut data = Vec::new();
    let complete = loop {
        match poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            None => break true,
            Some(Ok(frame)) => {
                if let Ok(d) = frame.into_data() {
                    data.extend_from_slice(&d);
                }
            }
            Some(Err(_)) => break false,
        }
    };
    drop(body);
    Ok(H1ClientResponse {
        status: parts.status.as_u16(),
        http10: parts.version == http::Version::HTTP_10,
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec()))
            .collect(),
        body: data,
        complete,
        pooled: format!("{pool:?}").contains("h1_idle: 1"),
    })
}

/// The upstream's end of the socket: a thread that writes the script piece by piece.
struct Upstream {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Upstream {
    fn start(mut writer: UnixStream, pieces: &[&[u8]]) -> Upstream {
        let pieces: Vec<Vec<u8>> = pieces.iter().map(|p| p.to_vec()).collect();
        let done = Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        let thread = std::thread::spawn(move || {
            for piece in &pieces {
                if writer.write_all(piece).is_err() {
                    return; // the reader closed
                }
                // The next piece only once this one is read, so each read sees one piece.
                while unread(&writer) > 0 {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    std::thread::yield_now();
                }
            }
        });
        Upstream {
            done,
            thread: Some(thread),
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Bytes written on `s` that its peer has not read yet: 0 once everything was
/// read (`SIOCOUTQ`, the same request as `TIOCOUTQ`). An error reads as 0 (the peer is gone).
#[allow(unsafe_code)]
fn unread(s: &UnixStream) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: TIOCOUTQ (SIOCOUTQ on a socket) writes one int into `n`, which we own, for a socket we hold open.
    let rc = unsafe { libc::ioctl(s.as_raw_fd(), libc::TIOCOUTQ, &mut n) };
    if rc == 0 {
        usize::try_from(n).unwrap_or(0)
    } else {
        0
    }
}
