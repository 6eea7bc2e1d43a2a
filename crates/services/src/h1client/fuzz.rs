//! Entry point for the fuzz target `h1client` (feature `fuzzing`, never in production builds):
//! a response read by [`read_head`] and [`H1Body`] exactly as the proxy reads one, from an
//! upstream that sends scripted reads and closes.
//!
//! The upstream is a `SOCK_SEQPACKET` socket pair, one packet per scripted read, so the fuzzer
//! controls where reads split; the reading end goes into a `TcpStream` because that is what an
//! upstream connection holds (only `read`, `write` and `shutdown` are used on it, which a Unix
//! socket supports alike).

use std::future::poll_fn;
use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Body;

use super::{read_head, ExchangeLimits, H1Body, H1Conn, Home};
use crate::upstream::Pool;

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

/// Reads one response from an upstream that sends `pieces` (non-empty, at most 1 KiB each, at
/// most 64 of them) and closes. `Err` carries the head's error.
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
    let (reader, writer) = seqpacket_pair();
    let mut writer = UnixStream::from(writer);
    for piece in pieces {
        assert!(!piece.is_empty() && piece.len() <= 1024 && pieces.len() <= 64);
        writer
            .write_all(piece)
            .expect("the socket buffer holds the script");
    }
    drop(writer);
    let reader = std::net::TcpStream::from(reader);
    reader.set_nonblocking(true).expect("non-blocking");
    let io = tokio::net::TcpStream::from_std(reader).expect("registered");
    let mut conn = H1Conn::new(gatebench_tls::MaybeTls::Plain(io));
    let response = read_head(&mut conn.io, max_head, None)
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

/// A connected `SOCK_SEQPACKET` pair: (reader, writer). std has no way to make one.
#[allow(unsafe_code)]
fn seqpacket_pair() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors socketpair writes.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    assert_eq!(rc, 0, "socketpair: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just created and are owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}
