//! The transform's step of the request path (`transform`): the JSON request body read whole
//! (it must be, to be parsed), converted by [`json_to_xml`] and forwarded with
//! `Content-Type: application/xml` and the new `Content-Length`; the refusals the transform's
//! module docs list (413, 400, 415) are [`Failure`]s here.

use bytes::Bytes;
use http::header::{
    HeaderValue, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, TRANSFER_ENCODING,
};
use http::HeaderMap;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Body;

use crate::failure::{BodyError, Failure};
use crate::json_xml::{json_to_xml, JsonXmlError, JsonXmlLimits};
use crate::protocol::body::{ClientBody, UpBody};

const APPLICATION_XML: HeaderValue = HeaderValue::from_static("application/xml");

/// Turns the JSON request body into the XML body to forward, adjusting `headers`.
pub(crate) async fn to_xml(
    headers: &mut HeaderMap,
    body: ClientBody,
    limits: &JsonXmlLimits,
    max_body: u64,
) -> Result<UpBody, Failure> {
    if no_transform(headers) {
        return Ok(UpBody::stream(body, max_body));
    }
    let content_type = headers.get(CONTENT_TYPE);
    if body.is_end_stream() && content_type.is_none() {
        return Ok(UpBody::Empty);
    }
    if content_type.is_some_and(|ct| !is_json(ct.as_bytes())) {
        return Err(Failure::UnsupportedMediaType);
    }
    if headers
        .get(CONTENT_ENCODING)
        .is_some_and(|ce| !ce.as_bytes().eq_ignore_ascii_case(b"identity"))
    {
        return Err(Failure::UnsupportedMediaType);
    }
    let limit = limits
        .max_input
        .min(usize::try_from(max_body).unwrap_or(usize::MAX));
    if body.size_hint().lower() > limit as u64 {
        return Err(Failure::RequestTooLarge);
    }
    let json = match Limited::new(body, limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) if error.is::<LengthLimitError>() => return Err(Failure::RequestTooLarge),
        Err(error) => {
            return Err(match error.downcast_ref::<BodyError>() {
                Some(error) => error.downstream_failure(),
                None => Failure::RequestBodyInvalid,
            });
        }
    };
    let xml = json_to_xml(&json, limits).map_err(|error| match error {
        JsonXmlError::TooLarge { .. } => Failure::RequestTooLarge,
        _ => Failure::InvalidJson,
    })?;
    headers.insert(CONTENT_TYPE, APPLICATION_XML);
    headers.insert(CONTENT_LENGTH, HeaderValue::from(xml.len()));
    headers.remove(TRANSFER_ENCODING);
    Ok(UpBody::Full(Some(Bytes::from(xml))))
}

/// `Cache-Control: no-transform` among the directives (RFC 9111 §5.2.1.6, RFC 9110 §7.7).
fn no_transform(headers: &HeaderMap) -> bool {
    headers.get_all(CACHE_CONTROL).iter().any(|v| {
        v.as_bytes()
            .split(|&b| b == b',')
            .any(|d| trim(d).eq_ignore_ascii_case(b"no-transform"))
    })
}

/// `application/json` or a `+json` suffix (RFC 6839), parameters ignored.
fn is_json(content_type: &[u8]) -> bool {
    let media = trim(
        content_type
            .split(|&b| b == b';')
            .next()
            .unwrap_or_default(),
    );
    media.eq_ignore_ascii_case(b"application/json")
        || (media.len() > 5 && media[media.len() - 5..].eq_ignore_ascii_case(b"+json"))
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

    #[test]
    fn json_media_types() {
        assert!(is_json(b"application/json"));
        assert!(is_json(b"Application/JSON; charset=utf-8"));
        assert!(is_json(b"application/problem+json"));
        assert!(!is_json(b"text/plain"));
        assert!(!is_json(b"application/jsonx"));
        assert!(!is_json(b"+json"));
    }

    #[test]
    fn no_transform_directive() {
        let mut h = HeaderMap::new();
        assert!(!no_transform(&h));
        h.insert(
            CACHE_CONTROL,
            HeaderValue::from_static("max-age=0, No-Transform"),
        );
        assert!(no_transform(&h));
        h.insert(CACHE_CONTROL, HeaderValue::from_static("no-transformer"));
        assert!(!no_transform(&h));
    }
}
