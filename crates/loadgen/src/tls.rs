//! TLS client configuration: trust (system roots, `--cacert`, or `--insecure`), ALPN for the
//! chosen protocol, SNI, and whether sessions are resumed on new connections.
//!
//! rustls with the ring provider; TLS 1.2 and 1.3 only (the rustls defaults). Certificates are
//! verified by default; `--insecure` keeps signature checks on the handshake but accepts any
//! certificate, for self-signed test targets.

use std::path::PathBuf;
use std::sync::Arc;

use gatebench_tls::AcceptAnyCertificate;
use rustls::client::Resumption;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, RootCertStore};

use crate::error::LoadgenError;

/// What the caller asks of TLS.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// Accept any server certificate (self-signed test targets).
    pub insecure: bool,
    /// Trust the certificates in this PEM file instead of the system's roots.
    pub cacert: Option<PathBuf>,
    /// Server name sent in SNI and verified; default: the URL's host.
    pub sni: Option<String>,
    /// Open every new connection with a full handshake instead of resuming a session (TLS
    /// resumption is on by default, as browsers and most clients do).
    pub no_resume: bool,
}

/// A ready client configuration and the name to present.
#[derive(Debug, Clone)]
pub(crate) struct TlsClient {
    pub config: Arc<ClientConfig>,
    pub server_name: ServerName<'static>,
}

/// Builds the client configuration for `host`, offering `alpn` protocols.
pub(crate) fn client(
    opts: &TlsOptions,
    host: &str,
    alpn: &[&[u8]],
) -> Result<TlsClient, LoadgenError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| LoadgenError::config(format!("TLS setup: {e}")))?;
    let mut config = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
            .with_no_client_auth()
    } else {
        builder
            .with_root_certificates(roots(opts)?)
            .with_no_client_auth()
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    if opts.no_resume {
        config.resumption = Resumption::disabled();
    }
    let name = opts.sni.as_deref().unwrap_or(host);
    let server_name = ServerName::try_from(name.to_owned())
        .map_err(|_| LoadgenError::config(format!("invalid TLS server name `{name}`")))?;
    Ok(TlsClient {
        config: Arc::new(config),
        server_name,
    })
}

fn roots(opts: &TlsOptions) -> Result<RootCertStore, LoadgenError> {
    gatebench_tls::roots(opts.cacert.as_deref())
        .map(|(store, _)| store)
        .map_err(|e| LoadgenError::config(format!("--cacert: {e}")))
}
