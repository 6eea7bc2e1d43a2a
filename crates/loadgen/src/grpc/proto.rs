//! Request messages written as JSON and encoded through a protobuf descriptor set (a
//! `FileDescriptorSet`, as `protoc --include_imports -o FILE` or `buf build -o FILE` write
//! it), or through `.proto` files, compiled here into such a set ([`compile_proto`], with
//! protox, a protobuf compiler written in Rust: no `protoc` needed). Rule: everything is
//! checked before any load: the set parses (the files compile), it has the URL's method, the
//! JSON is that method's input type in protobuf's JSON mapping (unknown fields refused), and the
//! call kind is the method's own (`stream` on its request, its response, or both).

use std::path::{Path, PathBuf};

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

/// Compiles `file` and what it imports into a descriptor set (its encoded bytes, as
/// [`encode_json`] takes them). Imports are looked up in `imports`, in order, then in the
/// file's own directory; the file itself is named relative to the first of them that holds it
/// (as protoc's `-I`), so that files importing one another agree on its name. A file that does
/// not compile is one line: where, and why.
pub fn compile_proto(file: &Path, imports: &[PathBuf]) -> Result<Vec<u8>, LoadgenError> {
    let mut includes = imports.to_vec();
    let own = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    includes.push(own.to_path_buf());
    let set = protox::compile([file], includes).map_err(|e| {
        let why = e.to_string();
        let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
        LoadgenError::config(format!("--grpc-proto {}: {why}", file.display()))
    })?;
    Ok(set.encode_to_vec())
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
    fn proto_files_compile_to_the_same_set_as_the_committed_one() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
        let file = root.join("gatebench/echo/v1/echo.proto");
        // With the import root, and with the file's own directory only.
        for imports in [vec![root.clone()], vec![]] {
            let set = compile_proto(&file, &imports).unwrap();
            let e = encode_json(&set, "echo.proto", "/gatebench.echo.v1.Echo/Bidi", "{}").unwrap();
            assert_eq!(e.kind, CallKind::Bidi);
            let e = encode_json(
                &set,
                "echo.proto",
                "/gatebench.echo.v1.Echo/Unary",
                r#"{"body":"aGk="}"#,
            )
            .unwrap();
            assert_eq!(&e.message[..], b"\x0a\x02hi");
        }
        // One that does not compile, or is not there: one line naming it.
        let dir = std::env::temp_dir().join(format!("gatebench-proto-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("bad.proto");
        std::fs::write(&bad, "syntax = \"proto3\";\nmessage M { int32 x = ; }\n").unwrap();
        for f in [bad.clone(), dir.join("missing.proto")] {
            let e = compile_proto(&f, &[]).unwrap_err().to_string();
            assert!(
                e.starts_with("--grpc-proto ") && e.contains(".proto"),
                "{e}"
            );
            assert_eq!(e.lines().count(), 1, "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
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
