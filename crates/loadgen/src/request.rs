//! The request a run sends, encoded once into the exact bytes written on every connection.
//!
//! Requests are static for a run (wrk's design): encoding per request would cost CPU on the
//! hot path for nothing. This module also makes the seed-004 payloads: a JSON document
//! `{"size":"50B","payload":"…"}` of exactly N bytes.

use std::path::Path;

use bytes::Bytes;
use gatebench_model::Outcome;

use crate::error::LoadgenError;
use crate::target::{is_token_byte, Target};

/// The body of the request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestBody {
    /// No body.
    None,
    /// These bytes (from `--body` or `--body-file`).
    Inline(Vec<u8>),
    /// A seed-004 JSON payload of exactly this many bytes (`--payload-size`).
    Payload(usize),
}

impl RequestBody {
    /// Reads a body file; the error names the file.
    pub fn from_file(path: &Path) -> Result<RequestBody, LoadgenError> {
        std::fs::read(path).map(RequestBody::Inline).map_err(|e| {
            LoadgenError::config(format!("cannot read body file {}: {e}", path.display()))
        })
    }
}

/// The smallest `--payload-size` possible: the JSON skeleton around an empty payload.
pub fn min_payload_size() -> usize {
    (1..)
        .find(|n| json_payload(*n).is_ok())
        .expect("some size fits the skeleton")
}

fn skeleton(size: usize) -> (String, &'static str) {
    (format!("{{\"size\":\"{size}B\",\"payload\":\""), "\"}")
}

/// A seed-004-style JSON payload of exactly `size` bytes: `{"size":"NB","payload":"abc…"}`.
pub fn json_payload(size: usize) -> Result<Vec<u8>, LoadgenError> {
    let (head, tail) = skeleton(size);
    let fixed = head.len() + tail.len();
    if size < fixed {
        return Err(LoadgenError::config(format!(
            "--payload-size {size} is too small: the JSON skeleton alone takes {fixed} bytes"
        )));
    }
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(head.as_bytes());
    out.extend((0..size - fixed).map(|i| b'a' + (i % 26) as u8));
    out.extend_from_slice(tail.as_bytes());
    debug_assert_eq!(out.len(), size);
    Ok(out)
}

/// The encoded request and what its answer should look like.
#[derive(Clone, Debug)]
pub struct RequestTemplate {
    method: String,
    path: String,
    bytes: Bytes,
    body: Bytes,
    head_only: bool,
    /// A status the target is declared to answer (an error endpoint's 500), counted as a correct
    /// answer besides 2xx; `None` = 2xx only.
    expect_status: Option<u16>,
    /// The same request's HTTP/2 header blocks: pseudo-headers from method and URI, and the
    /// header fields HTTP/2 allows (connection-specific fields are dropped, RFC 9113 §8.2.2;
    /// `Host` becomes `:authority`).
    h2: crate::hpack::RequestHead,
}

impl RequestTemplate {
    /// Encodes the request for `target`. `Host`, `Content-Length` and (without keep-alive)
    /// `Connection: close` are added unless the caller gave them; `User-Agent` likewise.
    pub fn encode(
        target: &Target,
        method: &str,
        headers: &[String],
        body: RequestBody,
        keepalive: bool,
    ) -> Result<RequestTemplate, LoadgenError> {
        Self::encode_to(
            target,
            &target.path_and_query,
            method,
            headers,
            body,
            keepalive,
        )
    }

    /// As [`RequestTemplate::encode`], to `path` (path and query, origin form) on the target's
    /// host rather than the URL's own path.
    pub fn encode_to(
        target: &Target,
        path: &str,
        method: &str,
        headers: &[String],
        body: RequestBody,
        keepalive: bool,
    ) -> Result<RequestTemplate, LoadgenError> {
        let (body, default_type) = match body {
            RequestBody::None => (Vec::new(), None),
            RequestBody::Inline(b) => (b, None),
            RequestBody::Payload(n) => (json_payload(n)?, Some("application/json")),
        };
        let mut parsed = Vec::with_capacity(headers.len());
        for line in headers {
            parsed.push(parse_header(line)?);
        }
        let has = |name: &str| parsed.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        if has("transfer-encoding") {
            return Err(LoadgenError::config(
                "-H Transfer-Encoding is not supported: bodies are sent with Content-Length",
            ));
        }
        let mut head = format!("{method} {path} HTTP/1.1\r\n");
        if !has("host") {
            head.push_str(&format!("Host: {}\r\n", target.authority));
        }
        if !has("user-agent") {
            head.push_str(concat!(
                "User-Agent: gatebench/",
                env!("CARGO_PKG_VERSION"),
                "\r\n"
            ));
        }
        for (n, v) in &parsed {
            if n.eq_ignore_ascii_case("content-length") {
                continue; // always computed from the body, never trusted from the user
            }
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        if let Some(t) = default_type {
            if !has("content-type") {
                head.push_str(&format!("Content-Type: {t}\r\n"));
            }
        }
        let method_implies_body = matches!(method, "POST" | "PUT" | "PATCH");
        if !body.is_empty() || method_implies_body {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        if !keepalive && !has("connection") {
            head.push_str("Connection: close\r\n");
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&body);
        let h2 = h2_parts(target, path, method, &parsed, default_type, body.len())?;
        Ok(RequestTemplate {
            method: method.to_owned(),
            path: path.to_owned(),
            bytes: Bytes::from(bytes),
            body: Bytes::from(body),
            head_only: method == "HEAD",
            expect_status: None,
            h2,
        })
    }

    /// The same request, with `status` declared a correct answer besides 2xx (an error
    /// endpoint's 500): the probe accepts it and the load does not count it as an error.
    pub fn with_expected_status(mut self, status: Option<u16>) -> RequestTemplate {
        self.expect_status = status;
        self
    }

    /// The status declared a correct answer besides 2xx, if any.
    pub fn expected_status(&self) -> Option<u16> {
        self.expect_status
    }

    /// The class of an answer with `status`: [`Outcome::Ok`] for 2xx and for the declared
    /// status, else its status class.
    pub fn outcome_of(&self, status: u16) -> Outcome {
        if self.expect_status == Some(status) {
            Outcome::Ok
        } else {
            Outcome::from_status(status)
        }
    }

    /// The bytes written for every request.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The request body alone (what an echo answers).
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// Body length in bytes.
    pub fn body_len(&self) -> usize {
        self.body.len()
    }

    /// The method.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The request target (path and query).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether responses carry no body whatever their headers say (HEAD).
    pub fn head_only(&self) -> bool {
        self.head_only
    }

    /// Bytes on the wire for one HTTP/2 request after a connection's first: the HEADERS
    /// frame with the indexed block, and the body in DATA frames of the default maximum size.
    /// With `literal` (a run of several requests, whose connections send every header block
    /// as literals), the literal block instead.
    pub(crate) fn h2_wire_len(&self, literal: bool) -> usize {
        const FRAME_HEAD: usize = 9;
        const MAX_FRAME: usize = 16_384;
        let block = if literal {
            self.h2.literal.len()
        } else {
            self.h2.indexed.len()
        };
        FRAME_HEAD + block + self.body.len() + self.body.len().div_ceil(MAX_FRAME) * FRAME_HEAD
    }

    /// The HTTP/2 header blocks (the body is sent apart).
    pub(crate) fn h2_head(&self) -> &crate::hpack::RequestHead {
        &self.h2
    }
}

fn h2_parts(
    target: &Target,
    path: &str,
    method: &str,
    headers: &[(String, String)],
    default_type: Option<&'static str>,
    body_len: usize,
) -> Result<crate::hpack::RequestHead, LoadgenError> {
    let bad = |what: String| LoadgenError::config(what);
    http::Method::from_bytes(method.as_bytes())
        .map_err(|e| bad(format!("invalid method `{method}`: {e}")))?;
    let mut authority = target.authority.clone();
    let mut fields: Vec<(String, String)> = Vec::with_capacity(headers.len() + 7);
    for (n, v) in headers {
        let lower = n.to_ascii_lowercase();
        match lower.as_str() {
            "host" => authority = v.clone(),
            "connection" | "keep-alive" | "proxy-connection" | "transfer-encoding" | "upgrade"
            | "content-length" => {}
            "te" if !v.eq_ignore_ascii_case("trailers") => {}
            _ => fields.push((lower, v.clone())),
        }
    }
    let has = |fields: &[(String, String)], name: &str| fields.iter().any(|(n, _)| n == name);
    if !has(&fields, "user-agent") {
        fields.push((
            "user-agent".into(),
            concat!("gatebench/", env!("CARGO_PKG_VERSION")).into(),
        ));
    }
    if let Some(t) = default_type {
        if !has(&fields, "content-type") {
            fields.push(("content-type".into(), t.into()));
        }
    }
    if body_len > 0 {
        fields.push(("content-length".into(), body_len.to_string()));
    }
    let scheme = if target.tls { "https" } else { "http" };
    // Validates the authority as a URI part would be (the error names it).
    http::Uri::builder()
        .scheme(scheme)
        .authority(authority.as_str())
        .path_and_query(path)
        .build()
        .map_err(|e| bad(format!("cannot build the HTTP/2 request URI: {e}")))?;
    let mut all = vec![
        (":method".to_owned(), method.to_owned()),
        (":scheme".to_owned(), scheme.to_owned()),
        (":authority".to_owned(), authority),
        (":path".to_owned(), path.to_owned()),
    ];
    all.extend(fields);
    Ok(crate::hpack::RequestHead::encode(&all))
}

/// Reads one `Name: value` line (`-H`): the name an HTTP token, the value without CR, LF or NUL.
pub fn parse_header(line: &str) -> Result<(String, String), LoadgenError> {
    let bad = |why: &str| LoadgenError::config(format!("invalid header `{line}`: {why}"));
    let (name, value) = line
        .split_once(':')
        .ok_or_else(|| bad("expected `Name: value`"))?;
    if name.is_empty() || !name.bytes().all(is_token_byte) {
        return Err(bad("the name must be an HTTP token with no spaces"));
    }
    let value = value.trim();
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(bad("the value must not contain CR, LF or NUL"));
    }
    Ok((name.to_owned(), value.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target::parse("http://127.0.0.1:8688/echo").unwrap()
    }

    #[test]
    fn payload_has_exact_size_and_is_json_shaped() {
        for n in [min_payload_size(), 50, 500, 1024, 10_000] {
            let p = json_payload(n).unwrap();
            assert_eq!(p.len(), n);
            let s = String::from_utf8(p).unwrap();
            assert!(
                s.starts_with(&format!("{{\"size\":\"{n}B\",\"payload\":\"")),
                "{s}"
            );
            assert!(s.ends_with("\"}"));
        }
        assert!(json_payload(10).is_err());
    }

    #[test]
    fn get_request_bytes() {
        let r = RequestTemplate::encode(&target(), "GET", &[], RequestBody::None, true).unwrap();
        let s = std::str::from_utf8(r.bytes()).unwrap();
        assert!(
            s.starts_with("GET /echo HTTP/1.1\r\nHost: 127.0.0.1:8688\r\n"),
            "{s}"
        );
        assert!(!s.contains("Content-Length"));
        assert!(s.ends_with("\r\n\r\n"));
    }

    #[test]
    fn post_payload_with_headers_and_close() {
        let r = RequestTemplate::encode(
            &target(),
            "POST",
            &["X-Test: 1".into(), "content-length: 99".into()],
            RequestBody::Payload(50),
            false,
        )
        .unwrap();
        let s = std::str::from_utf8(r.bytes()).unwrap();
        assert!(s.contains("X-Test: 1\r\n"));
        assert!(s.contains("Content-Type: application/json\r\n"));
        assert!(s.contains("Content-Length: 50\r\n"));
        assert!(!s.contains("99"), "user Content-Length must not be sent");
        assert!(s.contains("Connection: close\r\n"));
        assert_eq!(r.body().len(), 50);
        assert!(s.ends_with(std::str::from_utf8(r.body()).unwrap()));
    }

    #[test]
    fn rejects_bad_headers() {
        for h in ["NoColon", "Bad Name: x", ": x", "X: a\rb"] {
            assert!(
                RequestTemplate::encode(&target(), "GET", &[h.into()], RequestBody::None, true)
                    .is_err(),
                "{h}"
            );
        }
    }

    #[test]
    fn a_declared_status_is_a_correct_answer_and_others_keep_their_class() {
        let r = RequestTemplate::encode(&target(), "GET", &[], RequestBody::None, true).unwrap();
        assert_eq!(r.outcome_of(500), Outcome::Status5xx);
        let r = r.with_expected_status(Some(500));
        assert_eq!(r.expected_status(), Some(500));
        assert_eq!(r.outcome_of(500), Outcome::Ok);
        assert_eq!(r.outcome_of(200), Outcome::Ok);
        assert_eq!(r.outcome_of(503), Outcome::Status5xx);
        assert_eq!(r.outcome_of(404), Outcome::Status4xx);
    }
}
