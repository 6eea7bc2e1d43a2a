//! Header rules of an intermediary (RFC 9110 §7.6, RFC 9113 §8.2.2).
//!
//! - Hop-by-hop fields are removed in both directions (RFC 9110 §7.6.1): every field named in
//!   `Connection`, then Connection, Keep-Alive, Proxy-Connection, Upgrade, TE and
//!   Transfer-Encoding. `TE: trailers` is remembered and re-sent only to HTTP/2 upstreams, the
//!   one place it is meaningful and allowed (RFC 9113 §8.2.2). `Connection` cannot remove Host or
//!   Content-Length: those are about this message, and hyper frames it from them.
//! - `Via` (RFC 9110 §7.6.3) and `X-Forwarded-For` are added after the stripping, so a client
//!   cannot have them removed. The Via pseudonym is `gatebench-` and eight random hex digits,
//!   drawn per service instance, so two gatebench hops in a chain tell each other apart while a
//!   request that comes back to the same instance is recognised as a loop.
//! - HTTP/1.1 upstream responses are stripped as their head is parsed (`h1::client`); this module
//!   strips requests and HTTP/2 responses.

use std::hash::{BuildHasher, Hasher};

use http::header::{
    HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH, HOST, TE, TRANSFER_ENCODING, UPGRADE, VIA,
};
use http::{HeaderMap, Version};

const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");
const PROXY_CONNECTION: HeaderName = HeaderName::from_static("proxy-connection");
pub(crate) const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// This instance's Via entries, built once.
#[derive(Debug, Clone)]
pub(crate) struct Via {
    /// The pseudonym searched for in incoming Via fields.
    pub token: Box<str>,
    v10: HeaderValue,
    v11: HeaderValue,
    v2: HeaderValue,
}

impl Via {
    /// A fresh pseudonym for one service instance.
    pub(crate) fn new() -> Self {
        // RandomState is seeded from the OS; no extra dependency for eight hex digits.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        let token = format!("gatebench-{:08x}", hasher.finish() as u32);
        let value = |version: &str| {
            HeaderValue::from_str(&format!("{version} {token}")).expect("ASCII Via value")
        };
        Self {
            v10: value("1.0"),
            v11: value("1.1"),
            v2: value("2"),
            token: token.into_boxed_str(),
        }
    }

    /// The Via entry for a message received with `version`.
    pub(crate) fn value(&self, version: Version) -> &HeaderValue {
        match version {
            Version::HTTP_2 => &self.v2,
            Version::HTTP_10 | Version::HTTP_09 => &self.v10,
            _ => &self.v11,
        }
    }

    /// True when the message already passed through this instance (a forwarding loop).
    pub(crate) fn seen_in(&self, headers: &HeaderMap) -> bool {
        let token = self.token.as_bytes();
        headers
            .get_all(VIA)
            .iter()
            .any(|v| v.as_bytes().windows(token.len()).any(|w| w == token))
    }
}

/// Removes the hop-by-hop fields of RFC 9110 §7.6.1. Returns true when the message carried
/// exactly `TE: trailers`.
pub(crate) fn strip_hop_by_hop(headers: &mut HeaderMap) -> bool {
    if headers.contains_key(CONNECTION) {
        // Collected first: the names borrow from values about to be removed. Rare enough (an
        // HTTP/1.0 keep-alive, a client that names extra fields) to allocate.
        let named: Vec<HeaderName> = headers
            .get_all(CONNECTION)
            .iter()
            .flat_map(|v| v.as_bytes().split(|&b| b == b','))
            .filter_map(|name| HeaderName::from_bytes(trim(name)).ok())
            .filter(|name| *name != HOST && *name != CONTENT_LENGTH)
            .collect();
        for name in named {
            headers.remove(name);
        }
        headers.remove(CONNECTION);
    }
    let trailers = match headers.get(TE) {
        None => false,
        Some(te) => {
            let trailers = headers.get_all(TE).iter().count() == 1
                && trim(te.as_bytes()).eq_ignore_ascii_case(b"trailers");
            headers.remove(TE);
            trailers
        }
    };
    headers.remove(KEEP_ALIVE);
    headers.remove(PROXY_CONNECTION);
    headers.remove(UPGRADE);
    headers.remove(TRANSFER_ENCODING);
    trailers
}

/// Appends the client's address to X-Forwarded-For (one field, comma-joined).
pub(crate) fn add_forwarded_for(headers: &mut HeaderMap, client: &HeaderValue) {
    if !headers.contains_key(X_FORWARDED_FOR) {
        headers.insert(X_FORWARDED_FOR, client.clone());
        return;
    }
    let mut joined = Vec::with_capacity(64);
    for value in headers.get_all(X_FORWARDED_FOR) {
        joined.extend_from_slice(value.as_bytes());
        joined.extend_from_slice(b", ");
    }
    joined.extend_from_slice(client.as_bytes());
    match HeaderValue::from_bytes(&joined) {
        Ok(value) => {
            headers.insert(X_FORWARDED_FOR, value);
        }
        Err(_) => {
            headers.insert(X_FORWARDED_FOR, client.clone());
        }
    }
}

fn trim(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(fields: &[(&str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (n, v) in fields {
            headers.append(
                HeaderName::from_bytes(n.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        headers
    }

    #[test]
    fn hop_by_hop_fields_go_and_named_ones_with_them() {
        let mut h = map(&[
            ("connection", "keep-alive, X-Secret , host"),
            ("connection", "content-length"),
            ("x-secret", "1"),
            ("keep-alive", "timeout=5"),
            ("proxy-connection", "keep-alive"),
            ("upgrade", "websocket"),
            ("te", "trailers, deflate"),
            ("transfer-encoding", "chunked"),
            ("host", "a"),
            ("content-length", "3"),
            ("x-kept", "1"),
        ]);
        assert!(!strip_hop_by_hop(&mut h));
        let left: Vec<&str> = h.keys().map(|k| k.as_str()).collect();
        assert_eq!(left, ["host", "content-length", "x-kept"]);
        let mut h = map(&[("te", "Trailers")]);
        assert!(strip_hop_by_hop(&mut h));
        assert!(h.is_empty());
    }

    #[test]
    fn via_loops_are_recognised_only_for_this_instance() {
        let (a, b) = (Via::new(), Via::new());
        let mut h = map(&[("via", "1.1 other")]);
        assert!(!a.seen_in(&h));
        h.append(VIA, a.value(Version::HTTP_11).clone());
        assert!(a.seen_in(&h));
        assert!(!b.seen_in(&h) || a.token == b.token);
        assert_eq!(
            a.value(Version::HTTP_2).to_str().unwrap(),
            format!("2 {}", a.token)
        );
    }

    #[test]
    fn forwarded_for_is_appended() {
        let ip = HeaderValue::from_static("10.0.0.1");
        let mut h = HeaderMap::new();
        add_forwarded_for(&mut h, &ip);
        assert_eq!(h[X_FORWARDED_FOR], "10.0.0.1");
        let mut h = map(&[
            ("x-forwarded-for", "1.1.1.1"),
            ("x-forwarded-for", "2.2.2.2"),
        ]);
        add_forwarded_for(&mut h, &ip);
        assert_eq!(h[X_FORWARDED_FOR], "1.1.1.1, 2.2.2.2, 10.0.0.1");
    }
}
