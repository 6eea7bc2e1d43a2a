//! The echo's WebSocket echo (RFC 6455) at [`PATH`], over HTTP/1.1 or HTTP/2 (RFC 8441). Rule:
//! the server side only, as small as it can be correct: a `GET` with `Upgrade: websocket`,
//! `Connection: Upgrade`, `Sec-WebSocket-Version: 13` and a key gets `101` with
//! `Sec-WebSocket-Accept`, an HTTP/2 `CONNECT` with `:protocol websocket` and the version gets
//! `200`, and the connection (or stream) is taken over (`protocol::upgrade`); anything else at
//! the path gets 400 (426 for a wrong version). On the connection: every text or binary message is echoed whole as one
//! frame of its kind (fragmented ones reassembled first), a ping is answered with a pong of its
//! payload, a close is answered with a close of the same code and the connection ends. A
//! message larger than the echo's `max_body` gets close 1009, an unmasked or malformed frame
//! close 1002, text that is not UTF-8 close 1007.
//!
//! It does not measure anything; it reads and writes through one buffer each.

use std::time::Duration;

use base64::Engine as _;
use bytes::{Buf, BytesMut};
use http::header::{
    CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_VERSION, UPGRADE,
};
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::protocol::body::ResBody;
use crate::protocol::upgrade::{Io, TakeOver};

/// Where the WebSocket echo answers.
pub const PATH: &str = "/ws";
/// RFC 6455 §1.3: appended to the key before hashing.
const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// A connection silent this long is closed (1001).
const IDLE: Duration = Duration::from_secs(60);

const CONTINUATION: u8 = 0x0;
const TEXT: u8 = 0x1;
const BINARY: u8 = 0x2;
const CLOSE: u8 = 0x8;
const PING: u8 = 0x9;
const PONG: u8 = 0xA;

/// `Sec-WebSocket-Accept` for `key` (RFC 6455 §4.2.2).
pub fn accept_key(key: &[u8]) -> String {
    let mut input = key.to_vec();
    input.extend_from_slice(GUID);
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &input);
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

/// True when the request is for the WebSocket echo.
pub(crate) fn wants(method: &Method, path: &str) -> bool {
    method == Method::GET && path == PATH
}

fn has_token(headers: &HeaderMap, name: http::header::HeaderName, token: &str) -> bool {
    headers.get_all(name).iter().any(|v| {
        v.as_bytes()
            .split(|&b| b == b',')
            .any(|t| gatebench_h1::trim_ows(t).eq_ignore_ascii_case(token.as_bytes()))
    })
}

/// Why a handshake is refused, by its status: 400 for one that is not a WebSocket handshake
/// (`asks` false), 426 for a version other than 13; `None` when it may go on.
fn refusal(asks: bool, headers: &HeaderMap) -> Option<StatusCode> {
    if !asks {
        Some(StatusCode::BAD_REQUEST)
    } else if headers
        .get(SEC_WEBSOCKET_VERSION)
        .map(HeaderValue::as_bytes)
        != Some(b"13")
    {
        Some(StatusCode::UPGRADE_REQUIRED)
    } else {
        None
    }
}

/// A refused handshake: `status`, the version the echo speaks, a line of text.
fn refused(status: StatusCode) -> Response<ResBody> {
    let mut refused = Response::new(ResBody::local("not a WebSocket handshake\n"));
    *refused.status_mut() = status;
    refused
        .headers_mut()
        .insert(SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
    refused
}

/// The answer to a request at [`PATH`]: 101 with the echo attached, or a refusal.
pub(crate) fn upgrade(headers: &HeaderMap, max_message: usize) -> Response<ResBody> {
    let asks =
        has_token(headers, UPGRADE, "websocket") && has_token(headers, CONNECTION, "upgrade");
    let status = refusal(asks, headers);
    let key = headers.get(SEC_WEBSOCKET_KEY).map(HeaderValue::as_bytes);
    let (Some(key), None) = (key, status) else {
        return refused(status.unwrap_or(StatusCode::BAD_REQUEST));
    };
    taken(Some(&accept_key(key)), max_message)
}

/// The answer to an HTTP/2 extended CONNECT for [`PATH`] (RFC 8441: `:protocol websocket`,
/// `sec-websocket-version: 13`, no key): the stream taken over by the echo (the HTTP/2 server
/// sends it as a 200), or a refusal.
pub(crate) fn connect(
    protocol: &str,
    headers: &HeaderMap,
    max_message: usize,
) -> Response<ResBody> {
    match refusal(protocol.eq_ignore_ascii_case("websocket"), headers) {
        Some(status) => refused(status),
        None => taken(None, max_message),
    }
}

/// A 101 with the echo attached to the connection or stream it takes over; `accept` the
/// HTTP/1.1 handshake's `Sec-WebSocket-Accept`.
fn taken(accept: Option<&str>, max_message: usize) -> Response<ResBody> {
    let mut response = Response::new(ResBody::Local(None));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Some(value) = accept.and_then(|a| HeaderValue::from_str(a).ok()) {
        headers.insert(SEC_WEBSOCKET_ACCEPT, value);
    }
    TakeOver::attach(&mut response, move |io, rest| {
        Box::pin(async move {
            let mut io = io;
            let code = echo(&mut io, rest, max_message).await;
            if let Some(code) = code {
                let mut out = Vec::new();
                frame(&mut out, CLOSE, &code.to_be_bytes());
                let _ = tokio::time::timeout(IDLE, io.write_all(&out)).await;
            }
            let _ = tokio::time::timeout(Duration::from_secs(1), io.shutdown()).await;
        })
    });
    response
}

/// Appends an unmasked server frame.
fn frame(out: &mut Vec<u8>, opcode: u8, payload: &[u8]) {
    out.push(0x80 | opcode);
    match payload.len() {
        n if n < 126 => out.push(n as u8),
        n if n <= 0xFFFF => {
            out.push(126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
}

/// One client frame parsed from the front of `buf` (consumed, payload unmasked); `Ok(None)`
/// when it is not whole yet; `Err(code)` for a frame to close on.
fn parse(buf: &mut BytesMut, max: usize) -> Result<Option<(bool, u8, BytesMut)>, u16> {
    if buf.len() < 2 {
        return Ok(None);
    }
    let (b0, b1) = (buf[0], buf[1]);
    if b0 & 0x70 != 0 || b1 & 0x80 == 0 {
        return Err(1002);
    }
    let (len, at) = match b1 & 0x7F {
        126 if buf.len() >= 4 => (u64::from(u16::from_be_bytes([buf[2], buf[3]])), 4),
        127 if buf.len() >= 10 => (
            u64::from_be_bytes(buf[2..10].try_into().unwrap_or_default()),
            10,
        ),
        126 | 127 => return Ok(None),
        n => (u64::from(n), 2),
    };
    let opcode = b0 & 0x0F;
    if opcode >= 0x8 && (len > 125 || b0 & 0x80 == 0) {
        return Err(1002);
    }
    if len > max as u64 {
        return Err(1009);
    }
    let len = len as usize;
    if buf.len() < at + 4 + len {
        buf.reserve(at + 4 + len - buf.len());
        return Ok(None);
    }
    let mask = [buf[at], buf[at + 1], buf[at + 2], buf[at + 3]];
    buf.advance(at + 4);
    let mut payload = buf.split_to(len);
    for (i, b) in payload.iter_mut().enumerate() {
        *b ^= mask[i & 3];
    }
    Ok(Some((b0 & 0x80 != 0, opcode, payload)))
}

/// Echoes until the client closes (`None`: answered already) or a close is due (its code).
async fn echo(io: &mut Box<dyn Io>, mut buf: BytesMut, max: usize) -> Option<u16> {
    let mut message: Option<(u8, BytesMut)> = None;
    let mut out = Vec::new();
    loop {
        loop {
            let (fin, opcode, payload) = match parse(&mut buf, max) {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(code) => return Some(code),
            };
            match opcode {
                PING => frame(&mut out, PONG, &payload),
                PONG => {}
                CLOSE => {
                    let code = payload.get(..2).map_or(&[][..], |c| c);
                    frame(&mut out, CLOSE, code);
                    let _ = io.write_all(&out).await;
                    return None;
                }
                TEXT | BINARY if message.is_none() => message = Some((opcode, payload)),
                CONTINUATION if message.is_some() => {
                    let (_, whole) = message.as_mut()?;
                    if whole.len() + payload.len() > max {
                        return Some(1009);
                    }
                    whole.extend_from_slice(&payload);
                }
                _ => return Some(1002),
            }
            if fin && opcode < 0x8 {
                let (kind, whole) = message.take()?;
                if kind == TEXT && std::str::from_utf8(&whole).is_err() {
                    return Some(1007);
                }
                frame(&mut out, kind, &whole);
            }
        }
        if !out.is_empty() {
            if io.write_all(&out).await.is_err() {
                return None;
            }
            out.clear();
        }
        buf.reserve(4096);
        match tokio::time::timeout(IDLE, io.read_buf(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return None,
            Ok(Ok(_)) => {}
            Err(_) => return Some(1001),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_key_is_rfc_6455s_example() {
        assert_eq!(
            accept_key(b"dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn a_masked_frame_parses_and_an_unmasked_one_closes_1002() {
        let mut buf = BytesMut::from(
            &[
                0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58,
            ][..],
        );
        let (fin, opcode, payload) = parse(&mut buf, 100).unwrap().unwrap();
        assert!(fin && opcode == TEXT && &payload[..] == b"Hello" && buf.is_empty());
        let mut unmasked = BytesMut::from(&[0x81, 0x05, b'H', b'e', b'l', b'l', b'o'][..]);
        assert_eq!(parse(&mut unmasked, 100), Err(1002));
        let mut big = BytesMut::from(&[0x82, 0xFE, 0x01, 0x00][..]);
        assert_eq!(parse(&mut big, 255), Err(1009));
    }
}
