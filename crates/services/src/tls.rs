//! TLS for the reference services: where the certificate comes from, how the rustls server
//! configuration is built, and self-signed certificate generation for tests and defaults.
//!
//! Fixed choices (docs/behaviour.md, "TLS"): rustls with the ring provider, TLS 1.2 and 1.3 only, ALPN
//! `h2` (only when HTTP/2 is on) and `http/1.1`. Client certificates are not supported: no seed
//! scenario uses mutual TLS. The handshake deadline and the answer to plain HTTP on the TLS port
//! live with the connection handling in `server`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::crypto::ring::{cipher_suite, default_provider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;

use crate::error::ServicesError;

/// The names a generated certificate is valid for: what a local benchmark connects to.
const SELF_SIGNED_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Where a service's TLS certificate and private key come from.
///
/// Both paths set: the PEM files are loaded (the certificate file may hold a chain, leaf first).
/// Both unset: a self-signed certificate for `localhost`, `127.0.0.1` and `::1` is generated in
/// memory at start-up and its fingerprint logged; callers that need the certificate itself (to
/// give it to a client) should call [`generate_self_signed`], write the PEMs out and pass the
/// paths. Exactly one set is a configuration error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// PEM file with the certificate chain, leaf first.
    pub cert_pem_path: Option<PathBuf>,
    /// PEM file with the private key (PKCS#8, PKCS#1 or SEC1).
    pub key_pem_path: Option<PathBuf>,
}

/// A freshly generated self-signed certificate and its key, both PEM-encoded.
#[derive(Clone)]
pub struct SelfSignedCert {
    /// The certificate, PEM-encoded.
    pub cert_pem: String,
    /// The private key (PKCS#8), PEM-encoded. Kept out of `Debug` output.
    pub key_pem: String,
    /// SHA-256 of the certificate's DER encoding, upper-case hex pairs joined by `:`, the form
    /// `openssl x509 -fingerprint -sha256` prints.
    pub sha256_fingerprint: String,
}

impl fmt::Debug for SelfSignedCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SelfSignedCert")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"<redacted>")
            .field("sha256_fingerprint", &self.sha256_fingerprint)
            .finish()
    }
}

/// Generates a self-signed certificate (ECDSA P-256, via rcgen) valid for `localhost`,
/// `127.0.0.1` and `::1`.
pub fn generate_self_signed() -> Result<SelfSignedCert, ServicesError> {
    let names: Vec<String> = SELF_SIGNED_NAMES.iter().map(|s| s.to_string()).collect();
    let certified = rcgen::generate_simple_self_signed(names)
        .map_err(|source| ServicesError::CertGen { source })?;
    Ok(SelfSignedCert {
        cert_pem: certified.cert.pem(),
        key_pem: certified.key_pair.serialize_pem(),
        sha256_fingerprint: sha256_fingerprint(certified.cert.der()),
    })
}

/// SHA-256 fingerprint of a DER-encoded certificate, as upper-case hex pairs joined by `:`.
pub fn sha256_fingerprint(cert_der: &[u8]) -> String {
    // rustls exposes its provider's hashes only through the cipher suites; borrowing SHA-256
    // from a TLS 1.3 suite saves a direct dependency on `ring` for one digest.
    let hash = cipher_suite::TLS13_AES_128_GCM_SHA256
        .tls13()
        .expect("TLS13_AES_128_GCM_SHA256 is a TLS 1.3 suite")
        .common
        .hash_provider;
    let digest = hash.hash(cert_der);
    let mut out = String::with_capacity(digest.as_ref().len() * 3);
    for (i, byte) in digest.as_ref().iter().enumerate() {
        if i > 0 {
            out.push(':');
        }
        out.push_str(&format!("{byte:02X}"));
    }
    out
}

/// Builds the rustls server configuration for `settings`; `http2` decides whether `h2` is
/// offered in ALPN.
pub(crate) fn server_config(
    settings: &TlsSettings,
    http2: bool,
) -> Result<Arc<ServerConfig>, ServicesError> {
    let (certs, key) = match (&settings.cert_pem_path, &settings.key_pem_path) {
        (Some(cert), Some(key)) => (load_certs(cert)?, load_key(key)?),
        (None, None) => {
            let generated = generate_self_signed()?;
            tracing::info!(
                sha256 = %generated.sha256_fingerprint,
                "no certificate given: serving a generated self-signed certificate",
            );
            let certs = vec![
                CertificateDer::from_pem_slice(generated.cert_pem.as_bytes())
                    .expect("rcgen produced a valid certificate PEM"),
            ];
            let key = PrivateKeyDer::from_pem_slice(generated.key_pem.as_bytes())
                .expect("rcgen produced a valid key PEM");
            (certs, key)
        }
        _ => {
            return Err(ServicesError::InvalidConfig {
                reason: "a TLS certificate and key must be given together (or neither, for a \
                         generated self-signed certificate)"
                    .to_owned(),
            })
        }
    };
    let mut config = ServerConfig::builder_with_provider(Arc::new(default_provider()))
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|source| ServicesError::Tls { source })?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|source| ServicesError::Tls { source })?;
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(Arc::new(config))
}

fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, ServicesError> {
    let pem_err = |source| ServicesError::Pem {
        path: path.to_owned(),
        source,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(pem_err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem_err)?;
    if certs.is_empty() {
        return Err(ServicesError::NoCertificate {
            path: path.to_owned(),
        });
    }
    Ok(certs)
}

fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, ServicesError> {
    PrivateKeyDer::from_pem_file(path).map_err(|source| ServicesError::Pem {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_certificate_loads_and_fingerprint_is_sha256_shaped() {
        let cert = generate_self_signed().expect("generation works");
        assert!(cert.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(cert.key_pem.contains("PRIVATE KEY"));
        // 32 bytes: 64 hex digits and 31 separators.
        assert_eq!(cert.sha256_fingerprint.len(), 95);
        assert!(!format!("{cert:?}").contains(&cert.key_pem));
        let dir = std::env::temp_dir().join(format!("gatebench-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (c, k) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&c, &cert.cert_pem).unwrap();
        std::fs::write(&k, &cert.key_pem).unwrap();
        let settings = TlsSettings {
            cert_pem_path: Some(c),
            key_pem_path: Some(k),
        };
        let config = server_config(&settings, true).expect("generated PEMs load");
        assert_eq!(config.alpn_protocols[0], b"h2");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn known_fingerprint() {
        // SHA-256("abc"), FIPS 180-2 appendix B.1.
        assert!(sha256_fingerprint(b"abc").starts_with("BA:78:16:BF:8F:01:CF:EA"));
    }

    #[test]
    fn half_given_paths_are_refused() {
        let settings = TlsSettings {
            cert_pem_path: Some("cert.pem".into()),
            key_pem_path: None,
        };
        let err = server_config(&settings, false).unwrap_err();
        assert!(err.to_string().contains("together"), "{err}");
    }
}
