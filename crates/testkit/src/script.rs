//! What each [`Behavior`] does with one accepted connection, from the first byte read to the
//! close.
//!
//! Each connection is its own task. A task ends on its own when the client goes away or sends
//! something unparseable (there is nobody to report that to), or is dropped with the runtime when
//! the server stops. Where a behaviour closes on purpose with a FIN, it first shuts down its
//! write side and then discards what the client still sends: closing a socket with unread bytes
//! makes the kernel send a RST instead, which would turn an `Incomplete` test into a `Reset` one
//! by accident.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::request::{Head, RequestReader};
use crate::{Behavior, SeenRequest};

/// Counters shared between the server thread and the [`crate::TestServer`] handle.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) requests_seen: AtomicU64,
    pub(crate) connections_accepted: AtomicU64,
    /// Every request head read, in order.
    pub(crate) log: Mutex<Vec<SeenRequest>>,
}

/// How long a connection closed on purpose keeps discarding what the client sends after our FIN.
/// Clients close on EOF, so this only bounds one that does not.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// Answered by [`Behavior::Echo`] to a request without a body.
const ECHO_DEFAULT: &[u8] = b"hello";

/// Sent by [`Behavior::Garbage`] instead of a status line.
const GARBAGE: &[u8] = b"garbage\r\n\r\n";

/// Everything a connection task needs, shared by all connections of one server.
#[derive(Debug)]
pub(crate) struct Script {
    behavior: Behavior,
    /// When the server started; [`Behavior::StallWindow`] counts from here.
    started: Instant,
    stats: Arc<Stats>,
}

impl Script {
    pub(crate) fn new(behavior: Behavior, started: Instant, stats: Arc<Stats>) -> Script {
        Script {
            behavior,
            started,
            stats,
        }
    }

    pub(crate) fn stats(&self) -> &Stats {
        &self.stats
    }
}

/// Plays the server's behaviour on one accepted connection.
pub(crate) async fn serve(stream: TcpStream, script: Arc<Script>) {
    // An error only means the client went away or sent something unparseable: the connection is
    // over either way, and a test sees that from the client side.
    let _ = play(stream, &script).await;
}

async fn play(stream: TcpStream, script: &Script) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut conn = Conn {
        stream,
        reader: RequestReader::default(),
        stats: &script.stats,
    };
    match &script.behavior {
        Behavior::Respond { status, body } => {
            let response = response(*status, "", body);
            while conn.next_request().await?.is_some() {
                conn.send(&response).await?;
            }
        }
        Behavior::Echo => {
            while let Some(body) = conn.next_request().await? {
                conn.send(&response(200, "", echo(&body))).await?;
            }
        }
        Behavior::WrongBody => {
            while let Some(body) = conn.next_request().await? {
                conn.send(&response(200, "", &garble(echo(&body)))).await?;
            }
        }
        Behavior::ResetAfterRequest => {
            if conn.next_head().await?.is_some() {
                // SO_LINGER 0: the close below (dropping `conn`) sends a RST, not a FIN.
                conn.stream.set_zero_linger()?;
            }
        }
        Behavior::CloseMidBody => {
            if conn.next_request().await?.is_some() {
                let mut truncated = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".to_vec();
                truncated.extend_from_slice(&[b'x'; 10]);
                conn.send(&truncated).await?;
                conn.close().await?;
            }
        }
        Behavior::Garbage => {
            if conn.next_request().await?.is_some() {
                conn.send(GARBAGE).await?;
                // Keep the socket open (and the kernel from resetting it) until the client goes.
                conn.drain().await?;
            }
        }
        Behavior::Hang => while conn.next_request().await?.is_some() {},
        Behavior::CloseOnAccept => conn.close().await?,
        Behavior::StallWindow { from, length } => {
            let stall_from = script.started + *from;
            let stall_until = stall_from + *length;
            let ok = response(200, "", b"ok");
            while conn.next_request().await?.is_some() {
                // Checked just before writing, so a response due inside the window is held to
                // its end whenever its request arrived.
                let now = Instant::now();
                if now >= stall_from && now < stall_until {
                    tokio::time::sleep_until(stall_until.into()).await;
                }
                conn.send(&ok).await?;
            }
        }
        Behavior::Chunked { chunks, chunk_size } => {
            let response = chunked(*chunks, *chunk_size);
            while conn.next_request().await?.is_some() {
                conn.send(&response).await?;
            }
        }
        Behavior::CloseAfterEach => {
            if conn.next_request().await?.is_some() {
                conn.send(&response(200, "Connection: close\r\n", b"ok"))
                    .await?;
                conn.close().await?;
            }
        }
        Behavior::Silent => std::future::pending::<()>().await,
        Behavior::Paced { pieces, hang } => {
            while conn.next_request().await?.is_some() {
                for (pause, bytes) in pieces {
                    tokio::time::sleep(*pause).await;
                    conn.send(bytes).await?;
                }
                if *hang {
                    conn.drain().await?;
                    break;
                }
            }
        }
        Behavior::Endless { head, piece, every } => {
            if conn.next_request().await?.is_some() {
                conn.send(head).await?;
                loop {
                    tokio::time::sleep(*every).await;
                    conn.send(piece).await?;
                }
            }
        }
    }
    Ok(())
}

/// One accepted connection and the request framing state on it.
struct Conn<'a> {
    stream: TcpStream,
    reader: RequestReader,
    stats: &'a Stats,
}

impl Conn<'_> {
    /// Reads the next request head and counts it; `None` at a clean end of stream.
    async fn next_head(&mut self) -> io::Result<Option<Head>> {
        let head = self.reader.read_head(&mut self.stream).await?;
        if let Some(h) = &head {
            self.stats.requests_seen.fetch_add(1, Ordering::Relaxed);
            self.stats
                .log
                .lock()
                .expect("no test server task panics while holding the log")
                .push(SeenRequest {
                    method: h.method.clone(),
                    target: h.target.clone(),
                    at: Instant::now(),
                });
        }
        Ok(head)
    }

    /// Reads the next whole request and returns its body; `None` at a clean end of stream.
    async fn next_request(&mut self) -> io::Result<Option<Vec<u8>>> {
        match self.next_head().await? {
            Some(head) => self
                .reader
                .read_body(&mut self.stream, head.content_length)
                .await
                .map(Some),
            None => Ok(None),
        }
    }

    async fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes).await
    }

    /// Sends a FIN, then discards input for a while so the close stays a FIN (see the module doc).
    async fn close(&mut self) -> io::Result<()> {
        self.stream.shutdown().await?;
        // Hitting the limit just means the client kept the socket open; close anyway.
        let _ = tokio::time::timeout(DRAIN_LIMIT, self.drain()).await;
        Ok(())
    }

    /// Reads and discards until the client closes.
    async fn drain(&mut self) -> io::Result<()> {
        let mut scratch = [0u8; 4096];
        while self.stream.read(&mut scratch).await? > 0 {}
        Ok(())
    }
}

/// A complete response with `Content-Length`; `extra_headers` is zero or more `Name: value\r\n`.
fn response(status: u16, extra_headers: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\nContent-Length: {}\r\n{extra_headers}\r\n",
        reason(status),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// A reason phrase for the status line. Clients must ignore it (RFC 9112 §4), so unknown codes
/// get their class name rather than a lookup table of every code.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => match status / 100 {
            1 => "Informational",
            2 => "Success",
            3 => "Redirection",
            4 => "Client Error",
            5 => "Server Error",
            _ => "Unknown",
        },
    }
}

/// What [`Behavior::Echo`] answers to a request with this body.
fn echo(body: &[u8]) -> &[u8] {
    if body.is_empty() {
        ECHO_DEFAULT
    } else {
        body
    }
}

/// Same length, every byte different, still printable: `x` for every byte but `x`, which
/// becomes `y`.
fn garble(body: &[u8]) -> Vec<u8> {
    body.iter()
        .map(|&b| if b == b'x' { b'y' } else { b'x' })
        .collect()
}

/// A 200 response with `chunks` chunks of `chunk_size` `x` bytes and the last-chunk
/// (RFC 9112 §7.1). A chunk of size 0 would end the body early, so `chunk_size == 0` gives an
/// empty body (just the last-chunk).
fn chunked(chunks: usize, chunk_size: usize) -> Vec<u8> {
    let mut out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    if chunk_size > 0 {
        let chunk_head = format!("{chunk_size:x}\r\n");
        for _ in 0..chunks {
            out.extend_from_slice(chunk_head.as_bytes());
            out.resize(out.len() + chunk_size, b'x');
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

#[cfg(test)]
mod tests {
    //! Each behaviour seen from a plain blocking `std::net::TcpStream`, the way a client
    //! would see it. Timing bounds are generous: the test machine is small and shared.

    use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
    use std::net::TcpStream;

    use crate::TestServer;

    use super::*;

    /// Longer than any answer should take; a read that waits this long is a hang.
    const PATIENCE: Duration = Duration::from_secs(10);

    /// How long a read waits before we accept that no answer is coming.
    const QUIET: Duration = Duration::from_millis(300);

    fn connect(server: &TestServer) -> BufReader<TcpStream> {
        let stream = TcpStream::connect(server.addr()).expect("connect to the test server");
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        BufReader::new(stream)
    }

    fn send(conn: &mut BufReader<TcpStream>, body: &[u8]) {
        let mut request = format!(
            "POST /path HTTP/1.1\r\nHost: test\r\ncontent-length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(body);
        conn.get_mut().write_all(&request).unwrap();
    }

    /// A status line and lower-cased headers.
    fn read_head(conn: &mut BufReader<TcpStream>) -> (String, Vec<(String, String)>) {
        let mut status = String::new();
        conn.read_line(&mut status).unwrap();
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            conn.read_line(&mut line).unwrap();
            if line == "\r\n" {
                return (status.trim_end().to_owned(), headers);
            }
            let (name, value) = line.split_once(':').expect("a header line");
            headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
        }
    }

    fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A status line and a `Content-Length` body.
    fn read_response(conn: &mut BufReader<TcpStream>) -> (String, Vec<u8>) {
        let (status, headers) = read_head(conn);
        let len: usize = header(&headers, "content-length")
            .expect("a content-length")
            .parse()
            .unwrap();
        let mut body = vec![0; len];
        conn.read_exact(&mut body).unwrap();
        (status, body)
    }

    fn assert_no_answer(conn: &mut BufReader<TcpStream>) {
        conn.get_ref().set_read_timeout(Some(QUIET)).unwrap();
        let err = conn
            .read(&mut [0; 64])
            .expect_err("no bytes and no close expected");
        assert!(
            matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
            "{err:?}"
        );
        conn.get_ref().set_read_timeout(Some(PATIENCE)).unwrap();
    }

    fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
        let deadline = Instant::now() + PATIENCE;
        while !condition() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn respond_answers_every_request_on_a_kept_alive_connection() {
        let server = TestServer::start(Behavior::Respond {
            status: 404,
            body: b"nope".to_vec(),
        });
        let mut conn = connect(&server);
        for _ in 0..2 {
            send(&mut conn, b"some body");
            let (status, body) = read_response(&mut conn);
            assert_eq!(status, "HTTP/1.1 404 Not Found");
            assert_eq!(body, b"nope");
        }
        assert_eq!(server.requests_seen(), 2);
        assert_eq!(server.connections_accepted(), 1);
    }

    #[test]
    fn respond_uses_the_status_given() {
        for (status, line) in [
            (200, "HTTP/1.1 200 OK"),
            (503, "HTTP/1.1 503 Service Unavailable"),
            (302, "HTTP/1.1 302 Found"),
            (599, "HTTP/1.1 599 Server Error"),
        ] {
            let server = TestServer::start(Behavior::Respond {
                status,
                body: Vec::new(),
            });
            let mut conn = connect(&server);
            send(&mut conn, b"");
            assert_eq!(read_response(&mut conn), (line.to_owned(), Vec::new()));
        }
    }

    #[test]
    fn echo_returns_the_body_or_hello() {
        let server = TestServer::start(Behavior::Echo);
        let mut conn = connect(&server);
        send(&mut conn, b"ping\r\n\r\npong");
        assert_eq!(
            read_response(&mut conn),
            ("HTTP/1.1 200 OK".to_owned(), b"ping\r\n\r\npong".to_vec())
        );
        send(&mut conn, b"");
        assert_eq!(
            read_response(&mut conn),
            ("HTTP/1.1 200 OK".to_owned(), b"hello".to_vec())
        );
    }

    #[test]
    fn wrong_body_returns_a_different_body_of_the_same_length() {
        let server = TestServer::start(Behavior::WrongBody);
        let mut conn = connect(&server);
        for sent in [&b"xxxx abc"[..], b""] {
            send(&mut conn, sent);
            let (status, body) = read_response(&mut conn);
            assert_eq!(status, "HTTP/1.1 200 OK");
            let expected = echo(sent);
            assert_eq!(body.len(), expected.len());
            assert!(body.iter().zip(expected).all(|(a, b)| a != b), "{body:?}");
        }
    }

    #[test]
    fn reset_after_request_resets_the_connection() {
        let server = TestServer::start(Behavior::ResetAfterRequest);
        let mut conn = connect(&server);
        send(&mut conn, b"");
        let err = conn
            .read(&mut [0; 64])
            .expect_err("a reset, not a response");
        assert_eq!(err.kind(), ErrorKind::ConnectionReset);
        assert_eq!(server.requests_seen(), 1);
    }

    #[test]
    fn close_mid_body_sends_ten_of_a_hundred_bytes_then_eof() {
        let server = TestServer::start(Behavior::CloseMidBody);
        let mut conn = connect(&server);
        send(&mut conn, b"body");
        let (status, headers) = read_head(&mut conn);
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert_eq!(header(&headers, "content-length"), Some("100"));
        let mut body = Vec::new();
        conn.read_to_end(&mut body)
            .expect("a clean EOF (FIN), not a reset");
        assert_eq!(body, [b'x'; 10]);
    }

    #[test]
    fn garbage_sends_non_http_and_keeps_the_socket_open() {
        let server = TestServer::start(Behavior::Garbage);
        let mut conn = connect(&server);
        send(&mut conn, b"");
        let mut got = [0; GARBAGE.len()];
        conn.read_exact(&mut got).unwrap();
        assert_eq!(got, GARBAGE);
        assert_no_answer(&mut conn);
    }

    #[test]
    fn hang_reads_requests_and_never_answers() {
        let server = TestServer::start(Behavior::Hang);
        let mut conn = connect(&server);
        send(&mut conn, b"one");
        send(&mut conn, b"two");
        wait_for("both requests to be read", || server.requests_seen() == 2);
        assert_no_answer(&mut conn);
    }

    #[test]
    fn close_on_accept_closes_with_a_fin_even_if_a_request_was_sent() {
        let server = TestServer::start(Behavior::CloseOnAccept);
        let mut conn = connect(&server);
        send(&mut conn, b"body");
        let mut got = Vec::new();
        conn.read_to_end(&mut got)
            .expect("a clean EOF (FIN), not a reset");
        assert!(got.is_empty(), "{got:?}");
        assert_eq!(server.connections_accepted(), 1);
        assert_eq!(server.requests_seen(), 0);
    }

    #[test]
    fn stall_window_holds_responses_due_inside_it_until_its_end() {
        let from = Duration::from_millis(500);
        let length = Duration::from_millis(700);
        let before_start = Instant::now();
        let server = TestServer::start(Behavior::StallWindow { from, length });
        let after_start = Instant::now();
        // The earliest the window can end: the server started no earlier than this.
        let window_end = before_start + from + length;
        // Unstalled answers take a few milliseconds; anything near `from` would be a stall (or a
        // very overloaded machine).
        let fast = from;

        let mut conn = connect(&server);
        let sent = Instant::now();
        send(&mut conn, b"");
        assert_eq!(read_response(&mut conn).1, b"ok");
        assert!(
            sent.elapsed() < fast,
            "before the window: {:?}",
            sent.elapsed()
        );

        // Inside the window, on the kept-alive connection and on a new one.
        std::thread::sleep(
            (after_start + from + Duration::from_millis(50))
                .saturating_duration_since(Instant::now()),
        );
        let mut other = connect(&server);
        let sent = Instant::now();
        send(&mut conn, b"");
        send(&mut other, b"");
        for c in [&mut conn, &mut other] {
            assert_eq!(read_response(c).1, b"ok");
            let answered = Instant::now();
            assert!(answered >= window_end, "answered before the window ended");
            let held = answered - sent;
            assert!(
                held >= Duration::from_millis(250) && held < Duration::from_secs(2),
                "held for {held:?}"
            );
        }

        // After the window, fast again.
        let sent = Instant::now();
        send(&mut conn, b"");
        assert_eq!(read_response(&mut conn).1, b"ok");
        assert!(
            sent.elapsed() < fast,
            "after the window: {:?}",
            sent.elapsed()
        );
        assert_eq!(server.requests_seen(), 4);
    }

    #[test]
    fn chunked_sends_a_correctly_terminated_chunked_body() {
        let server = TestServer::start(Behavior::Chunked {
            chunks: 3,
            chunk_size: 20,
        });
        let mut conn = connect(&server);
        for _ in 0..2 {
            send(&mut conn, b"");
            let (status, headers) = read_head(&mut conn);
            assert_eq!(status, "HTTP/1.1 200 OK");
            assert_eq!(header(&headers, "transfer-encoding"), Some("chunked"));
            assert_eq!(header(&headers, "content-length"), None);
            let mut sizes = Vec::new();
            loop {
                let mut size_line = String::new();
                conn.read_line(&mut size_line).unwrap();
                let size = usize::from_str_radix(size_line.trim_end(), 16).unwrap();
                let mut data = vec![0; size + 2];
                conn.read_exact(&mut data).unwrap();
                assert!(data.ends_with(b"\r\n"));
                assert!(data[..size].iter().all(|&b| b == b'x'));
                if size == 0 {
                    break;
                }
                sizes.push(size);
            }
            assert_eq!(sizes, [20, 20, 20]);
        }
    }

    #[test]
    fn chunked_with_empty_chunks_sends_just_the_last_chunk() {
        assert_eq!(
            chunked(4, 0),
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        );
    }

    #[test]
    fn close_after_each_answers_once_per_connection() {
        let server = TestServer::start(Behavior::CloseAfterEach);
        for _ in 0..2 {
            let mut conn = connect(&server);
            send(&mut conn, b"");
            let (status, headers) = read_head(&mut conn);
            assert_eq!(status, "HTTP/1.1 200 OK");
            assert_eq!(header(&headers, "connection"), Some("close"));
            let mut body = Vec::new();
            conn.read_to_end(&mut body)
                .expect("a clean EOF (FIN), not a reset");
            assert_eq!(body, b"ok");
        }
        assert_eq!(server.connections_accepted(), 2);
        assert_eq!(server.requests_seen(), 2);
    }

    #[test]
    fn silent_never_reads_nor_answers() {
        let server = TestServer::start(Behavior::Silent);
        let mut conn = connect(&server);
        send(&mut conn, b"body");
        wait_for("the connection to be accepted", || {
            server.connections_accepted() == 1
        });
        assert_no_answer(&mut conn);
        assert_eq!(server.requests_seen(), 0);
    }
}
