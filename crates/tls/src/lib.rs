//! TLS client plumbing shared by gatebench's load generator and its proxy's upstream client.
//!
//! Both talk TLS to servers they did not start: they need the same trust rules (the system's
//! roots, or a PEM file, or — behind an explicit flag, for self-signed test targets — any
//! certificate with the handshake signatures still checked) and one stream type that is either
//! cleartext or TLS. This crate holds exactly that and nothing about HTTP.
//!
//! # Layout
//! - [`roots`]: building a root store from the system or a PEM file.
//! - [`AcceptAnyCertificate`]: the verifier for `--insecure` / `--insecure-upstream`.
//! - [`MaybeTls`]: a TCP stream, or TLS over one, behind one `AsyncRead + AsyncWrite`.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// Why a root store could not be built from a PEM file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RootsError {
    /// The file could not be read or is not PEM.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// The file holds no certificate.
    #[error("{} holds no certificate", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// A certificate in the file was refused.
    #[error("{}: {source}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: rustls::Error,
    },
}

/// Trust roots: the certificates of `ca_file` when given, else the system's. Returns the store
/// and how many certificates it holds (0 means every verification will fail). Unreadable
/// individual system certificates are skipped, as every client does.
pub fn roots(ca_file: Option<&Path>) -> Result<(RootCertStore, usize), RootsError> {
    let mut store = RootCertStore::empty();
    let Some(path) = ca_file else {
        let (added, _) =
            store.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        return Ok((store, added));
    };
    let read = |source| RootsError::Read {
        path: path.to_owned(),
        source,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(read)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(read)?;
    if certs.is_empty() {
        return Err(RootsError::Empty {
            path: path.to_owned(),
        });
    }
    let n = certs.len();
    for c in certs {
        store.add(c).map_err(|source| RootsError::Invalid {
            path: path.to_owned(),
            source,
        })?;
    }
    Ok((store, n))
}

/// Accepts any server certificate, but still checks the handshake signatures with the
/// provider's algorithms, so the cryptographic work matches a verifying client. Only for
/// self-signed test targets, behind an explicit flag.
#[derive(Debug)]
pub struct AcceptAnyCertificate(pub Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A client byte stream: cleartext TCP, or TLS over TCP.
#[derive(Debug)]
pub enum MaybeTls {
    /// Cleartext.
    Plain(TcpStream),
    /// TLS (boxed: the TLS state is large and the plain case is the hot one).
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for MaybeTls {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            MaybeTls::Plain(s) => Pin::new(s).poll_read(cx, buf),
            MaybeTls::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for MaybeTls {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            MaybeTls::Plain(s) => Pin::new(s).poll_write(cx, buf),
            MaybeTls::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            MaybeTls::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            MaybeTls::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            MaybeTls::Plain(s) => s.is_write_vectored(),
            MaybeTls::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            MaybeTls::Plain(s) => Pin::new(s).poll_flush(cx),
            MaybeTls::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            MaybeTls::Plain(s) => Pin::new(s).poll_shutdown(cx),
            MaybeTls::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_empty_ca_file_is_refused_with_its_path() {
        let missing = Path::new("/nonexistent/gatebench/ca.pem");
        let e = roots(Some(missing)).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/gatebench/ca.pem"), "{e}");
        let empty =
            std::env::temp_dir().join(format!("gatebench-tls-empty-{}.pem", std::process::id()));
        std::fs::write(&empty, "no certificate here\n").unwrap();
        let e = roots(Some(&empty)).unwrap_err();
        assert!(matches!(e, RootsError::Empty { .. }), "{e}");
        std::fs::remove_file(&empty).unwrap();
    }
}
