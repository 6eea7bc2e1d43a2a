//! Request messages written as JSON and encoded through a protobuf descriptor set (a
//! `FileDescriptorSet`, as `protoc --include_imports -o FILE` or `buf build -o FILE` write
//! it). Rule: everything is checked before any load: the set parses, it has the URL's method,
//! the JSON is that method's input type in protobuf's JSON mapping (unknown fields refused), and
//! the call kind is the method's own (`stream` on its request, its response, or both).

use bytes::Bytes;
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage};

use super::CallKind;
use crate::error::LoadgenError;

/// The encoded request message and the method's call kind.
#[derive(Debug)]
pub struct Encoded {
    /// The message's bytes, as sent in each gRPC frame.
    pub message: Bytes,
    /// What the descriptor says the method is.
    pub kind: CallKind,
    /// The method's input type, `package.Message`.
    pub input: String,
}

/// Encodes `json` as the input of the method at `path` (`/package.Service/Method`), described in
/// the descriptor set `set` (the file's bytes; `name` for messages).
pub fn encode_json(
    set: &[u8],
    name: &str,
    path: &str,
    json: &str,
) -> Result<Encoded, LoadgenError> {
    let bad = |why: String| LoadgenError::config(why);
    let pool = DescriptorPool::decode(set).map_err(|e| {
        bad(format!(
            "{name}: not a protobuf descriptor set ({e}); write one with protoc --include_imports -o FILE"
        ))
    })?;
    let (service, method) = path
        .trim_start_matches('/')
        .split_once('/')
        .ok_or_else(|| bad(format!("{path}: not a /package.Service/Method path")))?;
    let service_desc = pool
        .get_service_by_name(service)
        .ok_or_else(|| bad(format!("{name} has no service {service}")))?;
    let method_desc = service_desc
        .methods()
        .find(|m| m.name() == method)
        .ok_or_else(|| bad(format!("{name}: service {service} has no method {method}")))?;
    let input = method_desc.input();
    let mut de = serde_json::Deserializer::from_str(json);
    let message = DynamicMessage::deserialize(input.clone(), &mut de)
        .and_then(|m| de.end().map(|()| m))
        .map_err(|e| bad(format!("--grpc-json is not a {}: {e}", input.full_name())))?;
    let kind = match (
        method_desc.is_client_streaming(),
        method_desc.is_server_streaming(),
    ) {
        (false, false) => CallKind::Unary,
        (false, true) => CallKind::ServerStream,
        (true, false) => CallKind::ClientStream,
        (true, true) => CallKind::Bidi,
    };
    Ok(Encoded {
        message: message.encode_to_vec().into(),
        kind,
        input: input.full_name().to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The echo's own descriptor set, as committed (`scripts/proto-descriptors.sh`).
    const ECHO: &[u8] = include_bytes!("../../../../proto/gatebench/echo/v1/echo.binpb");

    #[test]
    fn json_is_encoded_as_the_methods_input_and_the_kind_comes_from_the_descriptor() {
        let e = encode_json(
            ECHO,
            "echo",
            "/gatebench.echo.v1.Echo/Unary",
            r#"{"body":"aGk="}"#,
        )
        .unwrap();
        // Field 1, length-delimited, the two bytes "hi": what --grpc-size 2 sends as well.
        assert_eq!(&e.message[..], b"\x0a\x02hi");
        assert_eq!(e.kind, CallKind::Unary);
        assert_eq!(e.input, "gatebench.echo.v1.Payload");
        for (method, kind) in [
            ("ServerStream", CallKind::ServerStream),
            ("ClientStream", CallKind::ClientStream),
            ("Bidi", CallKind::Bidi),
        ] {
            let path = format!("/gatebench.echo.v1.Echo/{method}");
            assert_eq!(encode_json(ECHO, "echo", &path, "{}").unwrap().kind, kind);
        }
    }

    #[test]
    fn what_cannot_be_encoded_is_said_in_one_line() {
        let err = |set: &[u8], path: &str, json: &str| {
            encode_json(set, "set.binpb", path, json)
                .unwrap_err()
                .to_string()
        };
        assert!(err(b"\xff\xff", "/a.B/C", "{}").contains("not a protobuf descriptor set"));
        assert!(err(ECHO, "/gatebench.echo.v1.Nope/Unary", "{}")
            .contains("no service gatebench.echo.v1.Nope"));
        assert!(err(ECHO, "/gatebench.echo.v1.Echo/Nope", "{}").contains("has no method Nope"));
        let e = err(ECHO, "/gatebench.echo.v1.Echo/Unary", r#"{"bodyy":"aGk="}"#);
        assert!(e.contains("is not a gatebench.echo.v1.Payload"), "{e}");
        let e = err(
            ECHO,
            "/gatebench.echo.v1.Echo/Unary",
            r#"{"body":"aGk="} trailing"#,
        );
        assert!(e.contains("is not a gatebench.echo.v1.Payload"), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}
