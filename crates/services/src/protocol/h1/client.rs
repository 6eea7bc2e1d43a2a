//! A lean HTTP/1.1 client for upstream connections, driven inside the request's own task.
//!
//! hyper's client runs every connection as a task of its own and talks to it through channels
//! (request in, response head out, body chunks out): three hand-offs and a second task wake-up
//! per exchange, and 16 KiB of buffers held by every idle pooled connection. Profiles of the
//! proxy put that machinery at about a quarter of its user-space time. Here the exchange is a
//! plain future in the request's task: the head and the first body chunk leave in one
//! `writev`, the response head is read into a buffer allocated for the exchange, and the body
//! is read by [`H1Body`], which the client connection's server polls directly — the upstream socket wakes the
//! client connection's task, nobody else. An idle pooled connection is just its socket.
//!
//! It is strict the way docs/behaviour.md wants an intermediary to be about what comes back (the
//! framing rules are `gatebench-h1`'s, shared with the load generator): responses are parsed
//! with httparse without its leniencies, bare LF line ends are refused, a
//! head over the limit, ambiguous framing (Content-Length with Transfer-Encoding, repeated
//! Content-Length, a coding other than one `chunked`) or a 101 is a protocol error (502), chunk
//! sizes are strict hex with overflow checks (RFC 9112 §7.1), and a connection is reused only
//! after a complete HTTP/1.1 keep-alive response with nothing left over. 1xx interim responses
//! (100 Continue, 103 Early Hints, …) are handed, stripped of hop-by-hop fields and with Via
//! added, to the client's connection when the client speaks HTTP/1.1 or HTTP/2 ([`InterimSink`]),
//! and dropped otherwise (HTTP/1.0). Trailers of chunked responses are checked and dropped.
//!
//! The exchange is here; reading the response head and the interim responses is `head`,
//! the body `body`, the errors `error`.
//!
//! What it does not do: pipelining (one exchange at a time per connection), request trailers,
//! `Expect: 100-continue` towards the upstream (the proxy removes Expect).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderValue, CONTENT_LENGTH};
use http::{HeaderMap, Method, StatusCode};
use hyper::body::Body;
use tokio::io::AsyncWriteExt;

pub(crate) use self::body::H1Body;
pub(crate) use self::error::H1Error;
pub(crate) use self::head::RawHead;
use self::head::{read_head, ResponseHead};
use crate::failure::{BodyError, Failure};
use crate::protocol::interim::InterimSink;
use crate::protocol::scratch::Scratch;
use crate::upstream::{H1Conn, Pool};

mod body;
mod error;
#[cfg(feature = "fuzzing")]
pub(crate) mod fuzz;
mod head;

/// A first body piece up to this size is copied behind the request head: both leave in one
/// write.
const COALESCE: usize = 16 * 1024;

/// A request head buffer that grew past this is not kept for the next exchange.
const KEEP_OUT: usize = 4096;

thread_local! {
    /// The thread's spare request head buffer ([`Scratch`], as `h1::server`'s response buffer):
    /// an exchange whose head goes out at once reuses it, not a fresh allocation per request.
    static SPARE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The parts of a request the exchange writes.
#[derive(Debug)]
pub(crate) struct RequestHead<'a> {
    pub method: &'a Method,
    /// Origin-form (or `*`) request target.
    pub target: &'a str,
    pub headers: &'a HeaderMap,
}

/// Limits and timeouts of one exchange.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ExchangeLimits {
    pub response_timeout: Duration,
    pub read_timeout: Duration,
    pub max_head: usize,
    /// The client speaks HTTP/1.x: the final response head may be kept as read
    /// (`head::RawHead`, carried by the [`H1Body`]) rather than parsed into a header map.
    pub raw_head: bool,
}

/// Where a finished connection goes back to.
#[derive(Debug, Clone)]
pub(crate) struct Home {
    pub pool: Arc<Pool>,
    pub shard: usize,
    pub label: Arc<str>,
}

/// Sends `head` and `body` on `conn` and reads the response head. `stash` holds a body chunk
/// taken from `body` but not yet written (a retry after [`H1Error::Unsent`] sends it first).
/// `body` is the proxy's request body (`proxy::body::UpBody`): any body whose errors are
/// [`BodyError`]s.
pub(crate) async fn exchange<B>(
    mut conn: H1Conn,
    head: RequestHead<'_>,
    body: &mut B,
    stash: &mut Option<Bytes>,
    limits: ExchangeLimits,
    home: Home,
    interim: Option<InterimSink<'_>>,
) -> Result<(http::response::Parts, H1Body), H1Error>
where
    B: Body<Data = Bytes, Error = BodyError> + Unpin,
{
    let mut scratch = Scratch::take(&SPARE, 256, KEEP_OUT);
    let out = &mut *scratch;
    let framing = write_head(out, &head, body, stash.as_ref());
    // The first chunk rides with the head when the client already sent it (nearly always).
    if stash.is_none() {
        match std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *body).poll_frame(cx))).await {
            Poll::Ready(Some(Ok(frame))) => *stash = frame.into_data().ok(),
            Poll::Ready(Some(Err(e))) => return Err(downstream(e)),
            Poll::Ready(None) | Poll::Pending => {}
        }
    }
    let ended = body.is_end_stream();
    let mut sent = 0u64;
    {
        let first = stash.as_deref().unwrap_or_default();
        sent += first.len() as u64;
        let mut size_line = [0u8; 20];
        let parts: [&[u8]; 4] = match framing {
            BodyFraming::Chunked if !first.is_empty() => [
                &out[..],
                chunk_line(&mut size_line, first.len()),
                first,
                if ended { b"\r\n0\r\n\r\n" } else { b"\r\n" },
            ],
            BodyFraming::Chunked if ended => [&out[..], b"0\r\n\r\n", &[], &[]],
            // A small first piece is copied behind the head: one `send`, not a `writev`.
            _ if first.len() <= COALESCE => {
                out.extend_from_slice(first);
                [&out[..], &[], &[], &[]]
            }
            _ => [&out[..], first, &[], &[]],
        };
        if let Err(e) = conn.write_all(&parts, limits.read_timeout).await {
            return Err(H1Error::Unsent(e));
        }
    }
    *stash = None;
    // Not held while the response is awaited.
    drop(scratch);
    let mut terminated = ended;
    // The rest of the body, as the client sends it.
    if !ended {
        loop {
            let frame = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await;
            let data = match frame {
                None => break,
                Some(Err(e)) => return Err(downstream(e)),
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => data,
                    Err(_) => continue, // trailers are not forwarded
                },
            };
            sent += data.len() as u64;
            let last = body.is_end_stream();
            let mut size_line = [0u8; 20];
            let parts: [&[u8]; 3] = match framing {
                BodyFraming::Chunked if data.is_empty() && last => [b"0\r\n\r\n", &[], &[]],
                BodyFraming::Chunked if data.is_empty() => [&[], &[], &[]],
                BodyFraming::Chunked => [
                    chunk_line(&mut size_line, data.len()),
                    &data,
                    if last { b"\r\n0\r\n\r\n" } else { b"\r\n" },
                ],
                _ => [&data, &[], &[]],
            };
            if let Err(error) = conn.write_all(&parts, limits.read_timeout).await {
                // Boxed: rare, and its future would otherwise enlarge every exchange's.
                return Box::pin(early_answer(conn, error, &head, limits, home)).await;
            }
            if last {
                terminated = true;
                break;
            }
        }
        if framing == BodyFraming::Chunked && !terminated {
            // The stream ended without saying so in advance: close the chunked body now.
            conn.write_all(&[b"0\r\n\r\n"], limits.read_timeout)
                .await
                .map_err(upstream_write)?;
        }
    }
    if let BodyFraming::Length(n) = framing {
        if sent != n {
            return Err(H1Error::Downstream(
                Failure::RequestBodyInvalid,
                format!("request body has {sent} bytes, Content-Length says {n}"),
            ));
        }
    }
    conn.io.flush().await.map_err(upstream_write)?;
    // The response timeout counts from here: a slow upload is the client body timeout's.
    conn.arm(limits.response_timeout);
    let response: ResponseHead = tokio::select! {
        biased;
        response = read_head(&mut conn.io, limits.max_head, interim, limits.raw_head) => response?,
        () = conn.timer.as_mut() => {
            return Err(H1Error::Upstream {
                failure: Failure::ResponseTimeout,
                error: format!("no response head within {:?}", limits.response_timeout),
                nothing_received: false,
            })
        }
    };
    let head_request = *head.method == Method::HEAD;
    Ok(H1Body::new(
        conn,
        response,
        head_request,
        true,
        limits,
        home,
    ))
}

/// A body write failed: the upstream may have answered early (a 413, say) and stopped reading.
/// If its answer is there, it is the response (and the connection is not reused); otherwise the
/// write error stands.
async fn early_answer(
    mut conn: H1Conn,
    error: io::Error,
    head: &RequestHead<'_>,
    limits: ExchangeLimits,
    home: Home,
) -> Result<(http::response::Parts, H1Body), H1Error> {
    conn.arm(limits.response_timeout.min(Duration::from_secs(1)));
    let response = tokio::select! {
        biased;
        response = read_head(&mut conn.io, limits.max_head, None, limits.raw_head) => response,
        () = conn.timer.as_mut() => return Err(upstream_write(error)),
    };
    match response {
        Ok(response) => {
            // The request was cut short: whatever the response says, the connection is done.
            let head_request = *head.method == Method::HEAD;
            Ok(H1Body::new(
                conn,
                response,
                head_request,
                false,
                limits,
                home,
            ))
        }
        Err(_) => Err(upstream_write(error)),
    }
}

fn downstream(error: BodyError) -> H1Error {
    H1Error::Downstream(error.downstream_failure(), error.to_string())
}

fn upstream_write(error: io::Error) -> H1Error {
    H1Error::Upstream {
        failure: if error.kind() == io::ErrorKind::TimedOut {
            Failure::ResponseTimeout
        } else {
            Failure::UpstreamClosed
        },
        error: error.to_string(),
        nothing_received: true,
    }
}

/// How the request body is framed upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyFraming {
    None,
    Length(u64),
    Chunked,
}

/// Serializes the request line and fields, adding the framing field the body needs.
fn write_head(
    out: &mut Vec<u8>,
    head: &RequestHead<'_>,
    body: &impl Body,
    stash: Option<&Bytes>,
) -> BodyFraming {
    out.extend_from_slice(head.method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(head.target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let mut length = None;
    for (name, value) in head.headers {
        if name == CONTENT_LENGTH {
            length = std::str::from_utf8(value.as_bytes())
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok());
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let framing = match length {
        Some(n) => BodyFraming::Length(n),
        None => match body.size_hint().exact() {
            Some(0) if stash.is_none() => {
                if matches!(*head.method, Method::POST | Method::PUT | Method::PATCH) {
                    out.extend_from_slice(b"content-length: 0\r\n");
                    BodyFraming::Length(0)
                } else {
                    BodyFraming::None
                }
            }
            Some(n) if stash.is_none() => {
                out.extend_from_slice(b"content-length: ");
                out.extend_from_slice(n.to_string().as_bytes());
                out.extend_from_slice(b"\r\n");
                BodyFraming::Length(n)
            }
            _ => {
                out.extend_from_slice(b"transfer-encoding: chunked\r\n");
                BodyFraming::Chunked
            }
        },
    };
    out.extend_from_slice(b"\r\n");
    framing
}

/// `{size:x}\r\n` in `buf`.
fn chunk_line(buf: &mut [u8; 20], size: usize) -> &[u8] {
    let digits = format_hex(size, &mut buf[..18]);
    let len = digits;
    buf[len] = b'\r';
    buf[len + 1] = b'\n';
    &buf[..len + 2]
}

fn format_hex(mut n: usize, out: &mut [u8]) -> usize {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut tmp = [0u8; 16];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = HEX[n & 15];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    let len = tmp.len() - i;
    out[..len].copy_from_slice(&tmp[i..]);
    len
}

/// One health check on a fresh connection: `GET path` with `Connection: close`; the status.
pub(crate) async fn health_status(
    mut conn: H1Conn,
    host: &HeaderValue,
    path: &str,
) -> Result<StatusCode, String> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(b"GET ");
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(host.as_bytes());
    out.extend_from_slice(b"\r\nconnection: close\r\nuser-agent: gatebench-health-check\r\n\r\n");
    conn.io.write_all(&out).await.map_err(|e| e.to_string())?;
    conn.io.flush().await.map_err(|e| e.to_string())?;
    match read_head(&mut conn.io, 64 * 1024, None, false).await {
        Ok(response) => Ok(response.parts.status),
        Err(H1Error::Upstream { error, .. }) => Err(error),
        Err(other) => Err(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::body::UpBody;

    #[test]
    fn chunk_lines() {
        let mut buf = [0u8; 20];
        assert_eq!(chunk_line(&mut buf, 0), b"0\r\n");
        assert_eq!(chunk_line(&mut buf, 1024), b"400\r\n");
        assert_eq!(chunk_line(&mut buf, usize::MAX), b"ffffffffffffffff\r\n");
    }

    #[test]
    fn request_heads_carry_the_framing_the_body_needs() {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::HOST, HeaderValue::from_static("a"));
        let head = RequestHead {
            method: &Method::POST,
            target: "/x?y",
            headers: &headers,
        };
        let mut out = Vec::new();
        let framing = write_head(&mut out, &head, &UpBody::Empty, None);
        assert_eq!(framing, BodyFraming::Length(0));
        assert_eq!(
            out,
            b"POST /x?y HTTP/1.1\r\nhost: a\r\ncontent-length: 0\r\n\r\n"
        );
        let mut out = Vec::new();
        let body = UpBody::Full(Some(Bytes::from_static(b"abc")));
        assert_eq!(
            write_head(&mut out, &head, &body, None),
            BodyFraming::Length(3)
        );
        assert!(out.ends_with(b"content-length: 3\r\n\r\n"));
        let get = RequestHead {
            method: &Method::GET,
            ..head
        };
        let mut out = Vec::new();
        assert_eq!(
            write_head(&mut out, &get, &UpBody::Empty, None),
            BodyFraming::None
        );
    }

    async fn head_of(raw: &[u8]) -> Result<ResponseHead, H1Error> {
        let mut io = raw;
        read_head(&mut io, 1024, None, false).await
    }

    #[tokio::test]
    async fn response_heads_are_parsed_once_and_stripped() {
        let raw = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: close, X-Hop\r\n\
X-Hop: 1\r\nKeep-Alive: 5\r\nContent-Length: 2\r\nX-A: b\r\n\r\nok";
        let head = head_of(raw).await.unwrap();
        assert_eq!(head.parts.status, 200);
        assert!(head.close);
        assert_eq!(head.framing.content_length, Some(2));
        let mut names: Vec<&str> = head.parts.headers.keys().map(|n| n.as_str()).collect();
        names.sort();
        assert_eq!(names, ["content-length", "x-a"]);
        assert_eq!(&head.rest[..], b"ok");
        for bad in [
            &b"HTTP/1.1 101 Switching\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\nContent-Length: 0\n\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n",
            b"garbage\r\n\r\n",
        ] {
            assert!(
                head_of(bad).await.is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let big = format!("HTTP/1.1 200 OK\r\nX: {}\r\n\r\n", "y".repeat(2000));
        assert!(matches!(
            head_of(big.as_bytes()).await,
            Err(H1Error::Upstream {
                failure: Failure::ResponseHeadTooLarge,
                ..
            })
        ));
    }

    /// Reads the body of `raw` as the proxy does, from an upstream on loopback that sends it
    /// in one write and closes: the body bytes, and whether it ended cleanly.
    async fn body_of(raw: &'static [u8]) -> (Vec<u8>, bool) {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let upstream = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            s.write_all(raw).await.unwrap();
        });
        let io = tokio::net::TcpStream::connect(addr).await.unwrap();
        upstream.await.unwrap();
        let mut conn = H1Conn::new(gatebench_tls::MaybeTls::Plain(io));
        let head = read_head(&mut conn.io, 1024, None, false).await.unwrap();
        let home = Home {
            pool: Arc::new(Pool::new(1, Duration::from_secs(60), 4)),
            shard: 0,
            label: Arc::from("test"),
        };
        let limits = ExchangeLimits {
            response_timeout: Duration::from_secs(60),
            read_timeout: Duration::from_secs(60),
            max_head: 1024,
            raw_head: false,
        };
        let (_, mut body) = H1Body::new(conn, head, false, true, limits, home);
        let mut data = Vec::new();
        loop {
            match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                None => return (data, true),
                Some(Ok(frame)) => data.extend_from_slice(&frame.into_data().unwrap()),
                Some(Err(_)) => return (data, false),
            }
        }
    }

    /// A close-delimited response whose head is longer than the first read buffer, its bytes
    /// arriving in `pieces` reads (a pause between them): the body forwarded, and whether it
    /// ended cleanly.
    async fn split_body_of(pieces: Vec<Vec<u8>>) -> (u16, Vec<u8>, bool) {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let upstream = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            s.set_nodelay(true).unwrap();
            for p in pieces {
                s.write_all(&p).await.unwrap();
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        let io = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut conn = H1Conn::new(gatebench_tls::MaybeTls::Plain(io));
        let head = read_head(&mut conn.io, 64 * 1024, None, false)
            .await
            .unwrap();
        let status = head.parts.status.as_u16();
        let home = Home {
            pool: Arc::new(Pool::new(1, Duration::from_secs(60), 4)),
            shard: 0,
            label: Arc::from("test"),
        };
        let limits = ExchangeLimits {
            response_timeout: Duration::from_secs(60),
            read_timeout: Duration::from_secs(60),
            max_head: 64 * 1024,
            raw_head: false,
        };
        let (_, mut body) = H1Body::new(conn, head, false, true, limits, home);
        let mut data = Vec::new();
        let complete = loop {
            match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                None => break true,
                Some(Ok(frame)) => data.extend_from_slice(&frame.into_data().unwrap()),
                Some(Err(_)) => break false,
            }
        };
        upstream.await.unwrap();
        (status, data, complete)
    }

    #[tokio::test]
    async fn a_head_longer_than_the_first_buffer_then_a_close_delimited_body_arrives_whole() {
        // `regress-head-past-first-buffer`'s shape: a head past the first buffer, fields the
        // proxy drops among the kept ones, the body delimited by the close.
        let fields: String = (0..45)
            .map(|i| {
                format!(
                    "X-Field-{i:02}: {}\r\nConnection: x-field-{i:02}\r\n",
                    "v".repeat(60)
                )
            })
            .collect();
        let head = format!("HTTP/1.1 200 OK\r\n{fields}X-Kept: 1\r\n\r\n");
        assert!(head.len() > 2 * head::READ_CHUNK, "{}", head.len());
        let body: Vec<u8> = (0..5000u32)
            .map(|i| b"abcdefghij"[i as usize % 10])
            .collect();
        let whole = [head.as_bytes(), &body].concat();
        // Split at the first buffer's edge, byte by byte around it, and in one piece.
        let edge = head::READ_CHUNK;
        let splits: [Vec<usize>; 3] = [
            vec![
                edge - 1,
                edge,
                edge + 1,
                edge + 2,
                head.len() - 1,
                head.len() + 1,
            ],
            vec![edge, head.len()],
            vec![],
        ];
        for cuts in splits {
            let mut pieces = Vec::new();
            let mut from = 0;
            for c in cuts.iter().copied().chain([whole.len()]) {
                pieces.push(whole[from..c].to_vec());
                from = c;
            }
            let (status, data, complete) = split_body_of(pieces).await;
            assert_eq!(status, 200);
            assert!(complete, "cut at {cuts:?}");
            assert_eq!(data.len(), body.len(), "cut at {cuts:?}");
            assert!(data == body, "cut at {cuts:?}");
        }
    }

    #[tokio::test]
    async fn chunk_size_lines_over_the_limit_fail_however_they_arrive() {
        let ok: &[u8] =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;e=1\r\nhello\r\n0\r\n\r\n";
        assert_eq!(body_of(ok).await, (b"hello".to_vec(), true));
        // A 4,200-byte extension: refused even when the whole line is in the first read.
        let long: &'static [u8] = Box::leak(
            [
                &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;"[..],
                &[b'e'; 4200],
                b"\r\nhello\r\n0\r\n\r\n",
            ]
            .concat()
            .into_boxed_slice(),
        );
        let (data, complete) = body_of(long).await;
        assert!(
            !complete && data.is_empty(),
            "{} bytes, complete {complete}",
            data.len()
        );
    }

    #[tokio::test]
    async fn heads_break_the_shared_framing_rules_are_protocol_errors() {
        // Rules the proxy took on with gatebench-h1 (the generator applied them before).
        for bad in [
            &b"HTTP/1.1 100 Continue\r\nContent-Length: x\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"[..],
            b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ] {
            assert!(
                matches!(
                    head_of(bad).await,
                    Err(H1Error::Upstream {
                        failure: Failure::UpstreamProtocol,
                        ..
                    })
                ),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
