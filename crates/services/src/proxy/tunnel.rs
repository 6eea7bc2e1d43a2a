//! WebSocket (any HTTP/1.1 `Upgrade`) passed through the intermediaries, as nginx does with
//! `proxy_set_header Upgrade`/`Connection` and HAProxy does on its own. Rule: an upgrade request
//! from an HTTP/1.1 client goes to one upstream on a fresh HTTP/1.1 connection of its own (never
//! a pooled one, never HTTP/2), with `Connection: upgrade` and the client's `Upgrade` kept and
//! the other hop-by-hop fields removed as for any request; a `101` from the upstream goes back
//! to the client, after which the two connections are spliced byte for byte until either side
//! closes or both are silent for the upstream read timeout (nginx's `proxy_read_timeout`). Any
//! other answer (a refused handshake) reaches the client as it is, and both connections close.
//!
//! An HTTP/2 client's extended CONNECT (RFC 8441: `:method CONNECT`, `:protocol websocket`)
//! goes the same way: the upstream gets an HTTP/1.1 upgrade request for the `:path`, with
//! `Upgrade` the `:protocol` and, for WebSocket, a `Sec-WebSocket-Key` of the proxy's own (an
//! HTTP/2 client sends none); its 101 reaches the client as a 200 (`h2::server`), after which
//! the stream's DATA and the upstream connection are spliced as above.
//!
//! What is not done: an upgrade over an HTTP/2 upstream; `h2c` upgrades (`Upgrade: h2c`) are
//! not asked of upstreams either.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http::header::{
    HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING, UPGRADE,
};
use http::{HeaderMap, Request, Response, StatusCode, Version};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tracing::debug;

use super::forward::error_response;
use super::{headers, Shared};
use crate::failure::{log_failure, Failure};
use crate::protocol::body::{ClientBody, ResBody};
use crate::protocol::upgrade::{Io, TakeOver};
use crate::upstream::UpstreamIo;

/// Most fields in an upstream's answer to an upgrade.
const MAX_FIELDS: usize = 64;
/// Largest body of a refused handshake passed to the client.
const MAX_REFUSAL_BODY: usize = 64 * 1024;
/// Bytes moved per read, each way.
const CHUNK: usize = 16 * 1024;

/// Whether `req` asks to upgrade its HTTP/1.1 connection: `Connection` names `upgrade` and an
/// `Upgrade` field says to what (not `h2c`, which is HTTP/2's own business).
pub(crate) fn wants(req: &Request<ClientBody>) -> bool {
    if extended_connect(req).is_some() {
        return true;
    }
    let h = req.headers();
    req.version() == Version::HTTP_11
        && h.get(UPGRADE)
            .is_some_and(|v| !v.as_bytes().eq_ignore_ascii_case(b"h2c"))
        && h.get_all(CONNECTION).iter().any(|v| {
            v.to_str().is_ok_and(|s| {
                s.split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
            })
        })
}

/// The protocol an HTTP/2 extended CONNECT asks for (RFC 8441's `:protocol`), if `req` is one.
fn extended_connect(req: &Request<ClientBody>) -> Option<HeaderValue> {
    if req.method() != http::Method::CONNECT {
        return None;
    }
    let protocol = req.extensions().get::<h2::ext::Protocol>()?;
    HeaderValue::from_str(protocol.as_str()).ok()
}

/// A `Sec-WebSocket-Key` of the proxy's own: 16 bytes, base64 (RFC 6455 §4.1), for an upstream
/// reached on behalf of an HTTP/2 client, which sends none.
fn websocket_key() -> HeaderValue {
    use base64::Engine as _;
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ NEXT.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..].copy_from_slice(
        &seed
            .rotate_left(29)
            .wrapping_mul(0xBF58_476D_1CE4_E5B9)
            .to_le_bytes(),
    );
    let key = base64::engine::general_purpose::STANDARD.encode(bytes);
    HeaderValue::from_str(&key).expect("base64 is a valid field value")
}

/// Passes the upgrade request `req` to an upstream: its answer, a 101 carrying the splice.
pub(crate) async fn tunnel(
    shared: &Shared,
    client: &HeaderValue,
    req: Request<ClientBody>,
) -> Response<ResBody> {
    let balancer = shared.members.current();
    let Some(index) = balancer.pick(&[]) else {
        return error_response(shared, Failure::NoUpstream, true);
    };
    let upstream = &balancer.upstreams[index];
    let mut conn = match shared.connector.connect_h1(&upstream.target).await {
        Ok(conn) => conn,
        Err(error) => {
            let failure = super::forward::connect_failure(&error);
            log_failure(failure, Some(&upstream.label), &error);
            balancer.failed(index);
            return error_response(shared, failure, true);
        }
    };
    let h2_protocol = extended_connect(&req);
    let (parts, _) = req.into_parts();
    let upgrade = h2_protocol
        .clone()
        .or_else(|| parts.headers.get(UPGRADE).cloned());
    let mut fields = parts.headers;
    headers::strip_hop_by_hop(&mut fields);
    if let Some(upgrade) = upgrade {
        fields.insert(UPGRADE, upgrade);
    }
    if h2_protocol.is_some_and(|p| p.as_bytes().eq_ignore_ascii_case(b"websocket"))
        && !fields.contains_key(http::header::SEC_WEBSOCKET_KEY)
    {
        fields.insert(http::header::SEC_WEBSOCKET_KEY, websocket_key());
    }
    fields.insert(CONNECTION, HeaderValue::from_static("upgrade"));
    fields.append(http::header::VIA, shared.via.value(parts.version).clone());
    headers::add_forwarded_for(&mut fields, client);
    let target = parts
        .uri
        .path_and_query()
        .map_or("/", http::uri::PathAndQuery::as_str);
    let mut head = Vec::with_capacity(512);
    head.extend_from_slice(b"GET ");
    head.extend_from_slice(target.as_bytes());
    head.extend_from_slice(b" HTTP/1.1\r\n");
    if !fields.contains_key(http::header::HOST) {
        head.extend_from_slice(b"host: ");
        head.extend_from_slice(upstream.target.host_header.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    for (name, value) in &fields {
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    let io = &mut conn.io;
    let answer = tokio::time::timeout(shared.timeouts.response, async {
        io.write_all(&head).await.map_err(|e| e.to_string())?;
        io.flush().await.map_err(|e| e.to_string())?;
        read_answer(io, shared.max_response_head).await
    })
    .await;
    let answer = match answer {
        Err(_) => {
            log_failure(
                Failure::ResponseTimeout,
                Some(&upstream.label),
                &"no answer to an upgrade",
            );
            return error_response(shared, Failure::ResponseTimeout, true);
        }
        Ok(Err(why)) => {
            log_failure(Failure::UpstreamProtocol, Some(&upstream.label), &why);
            return error_response(shared, Failure::UpstreamProtocol, true);
        }
        Ok(Ok(answer)) => answer,
    };
    let mut response = Response::new(ResBody::Local(None));
    *response.status_mut() = answer.status;
    *response.headers_mut() = answer.fields;
    response.headers_mut().append(
        http::header::VIA,
        shared.via.value(Version::HTTP_11).clone(),
    );
    if answer.status != StatusCode::SWITCHING_PROTOCOLS {
        // A refused handshake: its body as read, and both connections end.
        let mut body = answer.rest;
        if let Some(len) = answer.length {
            let _ = tokio::time::timeout(
                shared.timeouts.upstream_read,
                read_to(&mut conn.io, &mut body, len),
            )
            .await;
            body.truncate(len);
        }
        response.headers_mut().remove(TRANSFER_ENCODING);
        response
            .headers_mut()
            .insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
        *response.body_mut() = ResBody::local(body.freeze());
        return response;
    }
    let idle = shared.timeouts.upstream_read;
    let upstream_io = conn.io;
    let from_upstream = answer.rest.freeze();
    TakeOver::attach(&mut response, move |client_io, from_client| {
        Box::pin(splice(
            client_io,
            from_client.freeze(),
            upstream_io,
            from_upstream,
            idle,
        ))
    });
    response
}

/// An upstream's answer to an upgrade: its status and fields, the bytes read past its head,
/// and its body's length when it declared one.
struct Answer {
    status: StatusCode,
    fields: HeaderMap,
    rest: BytesMut,
    length: Option<usize>,
}

/// Reads the answer's head (at most `max` bytes; a 1xx other than 101 is not expected here).
async fn read_answer(io: &mut UpstreamIo, max: usize) -> Result<Answer, String> {
    let mut buf = BytesMut::with_capacity(4096);
    loop {
        if io.read_buf(&mut buf).await.map_err(|e| e.to_string())? == 0 {
            return Err("the upstream closed before answering the upgrade".to_owned());
        }
        let mut slots = [httparse::EMPTY_HEADER; MAX_FIELDS];
        let mut parsed = httparse::Response::new(&mut slots);
        match parsed.parse(&buf) {
            Ok(httparse::Status::Partial) if buf.len() < max => continue,
            Ok(httparse::Status::Partial) => {
                return Err(format!("an answer head over {max} bytes"))
            }
            Err(e) => return Err(format!("a malformed answer to an upgrade: {e}")),
            Ok(httparse::Status::Complete(len)) => {
                let status = StatusCode::from_u16(parsed.code.unwrap_or(0))
                    .map_err(|_| "an invalid status".to_owned())?;
                let mut fields = HeaderMap::new();
                let mut length = None;
                for f in parsed.headers.iter() {
                    let name = HeaderName::from_bytes(f.name.as_bytes())
                        .map_err(|_| format!("an invalid field name {:?}", f.name))?;
                    let value = HeaderValue::from_bytes(f.value)
                        .map_err(|_| format!("an invalid value of {name}"))?;
                    if name == CONTENT_LENGTH {
                        length = std::str::from_utf8(f.value)
                            .ok()
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .filter(|n| *n <= MAX_REFUSAL_BODY);
                        continue;
                    }
                    fields.append(name, value);
                }
                let rest = buf.split_off(len);
                return Ok(Answer {
                    status,
                    fields,
                    rest,
                    length,
                });
            }
        }
    }
}

async fn read_to(io: &mut UpstreamIo, body: &mut BytesMut, len: usize) {
    while body.len() < len {
        match io.read_buf(body).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Moves bytes both ways until either side closes (the other is then shut down for writing and
/// drained) or nothing moves for `idle`.
async fn splice(
    client: Box<dyn Io>,
    from_client: Bytes,
    upstream: UpstreamIo,
    from_upstream: Bytes,
    idle: Duration,
) {
    let (mut client_r, mut client_w) = tokio::io::split(client);
    let (mut up_r, mut up_w) = tokio::io::split(upstream);
    let early = async {
        if !from_client.is_empty() {
            up_w.write_all(&from_client).await?;
        }
        if !from_upstream.is_empty() {
            client_w.write_all(&from_upstream).await?;
        }
        std::io::Result::Ok(())
    };
    if tokio::time::timeout(idle, early)
        .await
        .map_or(true, |r| r.is_err())
    {
        return;
    }
    let activity = Activity::new();
    let up = pump(&mut client_r, &mut up_w, idle, &activity);
    let down = pump(&mut up_r, &mut client_w, idle, &activity);
    let (a, b) = tokio::join!(up, down);
    debug!(
        client_to_upstream = a,
        upstream_to_client = b,
        "tunnel ended"
    );
}

/// When bytes last moved either way, for the idle rule: a tunnel ends when *both* directions
/// have been silent for the idle period, not when one has (a server that only pushes is busy).
struct Activity {
    base: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Activity {
            base: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }

    fn moved(&self) {
        let ms = self.base.elapsed().as_millis() as u64;
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// Time left before the tunnel counts as idle (zero once it does).
    fn left(&self, idle: Duration) -> Duration {
        let last = self.base + Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        (last + idle).saturating_duration_since(Instant::now())
    }
}

/// Copies `from` to `to` until `from` ends (then shuts `to` down) or the tunnel is idle; the
/// bytes moved.
async fn pump<R, W>(from: &mut R, to: &mut W, idle: Duration, activity: &Activity) -> u64
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; CHUNK];
    let mut moved = 0u64;
    loop {
        let n = match tokio::time::timeout(activity.left(idle), from.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => n,
            // Silent this way: wait on while the other way is busy.
            Err(_) if !activity.left(idle).is_zero() => continue,
            // Closed, failed or idle both ways: the other side hears the end.
            _ => break,
        };
        activity.moved();
        match tokio::time::timeout(idle, to.write_all(&buf[..n])).await {
            Ok(Ok(())) => moved += n as u64,
            _ => return moved,
        }
        activity.moved();
    }
    let _ = tokio::time::timeout(idle, to.shutdown()).await;
    moved
}
