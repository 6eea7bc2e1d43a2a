//! The target: the URL given, parsed and resolved once, and the HTTP token syntax (RFC 9110
//! §5.6.2) that both the configuration and the request template check fields against. It sits
//! below both so neither reaches into the other.

use std::net::{SocketAddr, ToSocketAddrs};

use crate::error::LoadgenError;

/// The target, parsed and resolved once.
#[derive(Clone, Debug)]
pub struct Target {
    /// The URL as given.
    pub url: String,
    /// Host as written in the URL (no brackets for IPv6).
    pub host: String,
    /// Port (explicit or the scheme's default).
    pub port: u16,
    /// The `Host` header value (authority without user info).
    pub authority: String,
    /// Path and query sent on the request line.
    pub path_and_query: String,
    /// The resolved address connections go to.
    pub addr: SocketAddr,
    /// Whether the URL is `https://`.
    pub tls: bool,
}

impl Target {
    /// Parses and resolves an `http://` URL.
    pub fn parse(url: &str) -> Result<Target, LoadgenError> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| LoadgenError::config(format!("invalid URL `{url}`: {e}")))?;
        let scheme = uri.scheme_str().ok_or_else(|| {
            LoadgenError::config(format!(
                "invalid URL `{url}`: no scheme (write http://{url})"
            ))
        })?;
        let default_port = match scheme {
            "http" => 80,
            "https" => 443,
            other => {
                return Err(LoadgenError::config(format!(
                    "invalid URL `{url}`: unsupported scheme `{other}` (use http:// or https://)"
                )))
            }
        };
        let authority = uri
            .authority()
            .ok_or_else(|| LoadgenError::config(format!("invalid URL `{url}`: no host")))?;
        if authority.as_str().contains('@') {
            return Err(LoadgenError::config(format!(
                "invalid URL `{url}`: user info is not supported (send an Authorization header with -H)"
            )));
        }
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        if host.is_empty() {
            return Err(LoadgenError::config(format!(
                "invalid URL `{url}`: no host"
            )));
        }
        let port = authority.port_u16().unwrap_or(default_port);
        let path_and_query = uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "/".to_owned());
        let addr = (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|source| LoadgenError::Resolve {
                host: host.clone(),
                source,
            })?
            .next()
            .ok_or_else(|| LoadgenError::Resolve {
                host: host.clone(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no address"),
            })?;
        Ok(Target {
            url: url.to_owned(),
            host,
            port,
            authority: authority.as_str().to_owned(),
            path_and_query,
            addr,
            tls: scheme == "https",
        })
    }
}

/// RFC 9110 §5.6.2 token characters.
pub(crate) fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Where a stream load's URL (`ws://`, `grpc://`, …) points: its address (the host resolved
/// once), `host[:port]` as written, and the bare host name (TLS's server name).
pub(crate) struct Endpoint {
    pub addr: SocketAddr,
    pub authority: String,
    pub host: String,
}

/// Resolves `uri`'s authority (no user info), the port defaulting to 443 with `tls`, else 80;
/// `bad` words a refusal of the URL.
pub(crate) fn endpoint(
    uri: &http::Uri,
    tls: bool,
    bad: impl Fn(&str) -> LoadgenError,
) -> Result<Endpoint, LoadgenError> {
    let authority = uri.authority().ok_or_else(|| bad("no host"))?;
    if authority.as_str().contains('@') {
        return Err(bad("user info is not supported"));
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = authority.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|source| LoadgenError::Resolve {
            host: host.to_owned(),
            source,
        })?
        .next()
        .ok_or_else(|| bad("the host has no address"))?;
    Ok(Endpoint {
        addr,
        authority: authority.as_str().to_owned(),
        host: host.to_owned(),
    })
}
