//! The WebSocket opening handshake, client side (RFC 6455 §4.1). Rule: the request is built
//! and the answer checked here, nothing else: `101`, `Upgrade: websocket`, `Connection:
//! Upgrade` and the `Sec-WebSocket-Accept` that the key calls for; anything else is a refusal
//! and says why in one line.

use base64::Engine as _;

/// RFC 6455 §1.3: appended to the key before hashing.
const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// A new random `Sec-WebSocket-Key` (16 random bytes, base64).
pub fn new_key() -> String {
    let mut raw = [0u8; 16];
    for (i, chunk) in raw.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&super::random_u64(i as u64).to_le_bytes());
    }
    base64::engine::general_purpose::STANDARD.encode(raw)
}

/// The `Sec-WebSocket-Accept` value that `key` calls for.
pub fn accept_for(key: &str) -> String {
    let mut input = key.as_bytes().to_vec();
    input.extend_from_slice(GUID);
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &input);
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

/// The upgrade request for `path` on `authority` with `key`.
pub fn request(authority: &str, path: &str, key: &str) -> Vec<u8> {
    format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nUser-Agent: gatebench\r\n\r\n"
    )
    .into_bytes()
}

/// What the answer to the upgrade request was.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// Not whole yet.
    Partial,
    /// A valid 101; the head's length (bytes after it are frames).
    Accepted(usize),
    /// Refused, with why in words.
    Refused(String),
}

/// Checks the answer at the front of `buf` against `key`.
pub fn check(buf: &[u8], key: &str) -> Answer {
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut fields);
    let len = match response.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Answer::Partial,
        Err(e) => return Answer::Refused(format!("the answer is not HTTP/1.1 ({e})")),
    };
    let status = response.code.unwrap_or(0);
    if status != 101 {
        return Answer::Refused(format!(
            "status {status} instead of 101 Switching Protocols"
        ));
    }
    let field = |name: &str| {
        response
            .headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).into_owned())
            .collect::<Vec<_>>()
            .join(",")
    };
    let has = |name: &str, token: &str| {
        field(name)
            .split(',')
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    if !has("upgrade", "websocket") || !has("connection", "upgrade") {
        return Answer::Refused("the 101 lacks Upgrade: websocket or Connection: Upgrade".into());
    }
    if field("sec-websocket-accept").trim() != accept_for(key) {
        return Answer::Refused("wrong Sec-WebSocket-Accept".into());
    }
    Answer::Accepted(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accept_key_is_rfc_6455s_example() {
        assert_eq!(
            accept_for("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
        assert_eq!(new_key().len(), 24);
    }

    #[test]
    fn answers_are_checked() {
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        let ok =
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                   Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n\x81";
        assert_eq!(check(ok, key), Answer::Accepted(ok.len() - 1));
        assert_eq!(check(&ok[..20], key), Answer::Partial);
        let wrong = String::from_utf8_lossy(ok).replace("s3pP", "AAAA");
        assert!(
            matches!(check(wrong.as_bytes(), key), Answer::Refused(why) if why.contains("Accept"))
        );
        let plain = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        assert!(matches!(check(plain, key), Answer::Refused(why) if why.contains("200")));
    }
}
