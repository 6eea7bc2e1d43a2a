//! Establishing connections to the target: TCP with a connect timeout and `TCP_NODELAY`, then
//! TLS where the URL says `https`, and the classification of every way that can fail.
//!
//! The transport is a value ([`Transport`]); the HTTP code is generic over the resulting
//! [`Stream`], so HTTP/1.1 and HTTP/2 run unchanged over TCP or TLS.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use gatebench_model::Outcome;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::tls::TlsClient;

/// How bytes reach the target.
#[derive(Debug, Clone)]
pub(crate) enum Transport {
    /// Plain TCP.
    Tcp,
    /// TLS over TCP.
    Tls(TlsClient),
}

/// An established byte stream: TCP, or TLS over it.
pub(crate) type Stream = gatebench_tls::MaybeTls;

/// What establishing the connection took.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Established {
    /// TLS only: whether the session was resumed, and how long the handshake took.
    pub tls: Option<(bool, Duration)>,
    /// TLS only: the protocol the server chose by ALPN.
    pub alpn_h2: bool,
}

/// Opens one connection, TCP connect and TLS handshake each within `timeout`.
pub(crate) async fn connect(
    addr: SocketAddr,
    transport: &Transport,
    timeout: Duration,
) -> Result<(Stream, Established), Outcome> {
    let tcp = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
        Err(_) => return Err(Outcome::ConnectTimeout),
        Ok(Err(e)) => return Err(classify_connect(&e)),
        Ok(Ok(s)) => s,
    };
    // Latency of small requests must not wait for Nagle's algorithm.
    tcp.set_nodelay(true).map_err(|e| classify_connect(&e))?;
    match transport {
        Transport::Tcp => Ok((
            Stream::Plain(tcp),
            Established {
                tls: None,
                alpn_h2: false,
            },
        )),
        Transport::Tls(client) => {
            let t0 = Instant::now();
            let connector = TlsConnector::from(client.config.clone());
            let tls = match tokio::time::timeout(
                timeout,
                connector.connect(client.server_name.clone(), tcp),
            )
            .await
            {
                // A handshake that never completes (plain HTTP server, stalled peer) is a TLS
                // failure, not a connect timeout: the TCP connection was established.
                Err(_) => return Err(Outcome::TlsError),
                Ok(Err(_)) => return Err(Outcome::TlsError),
                Ok(Ok(s)) => s,
            };
            let (_, conn) = tls.get_ref();
            let resumed = matches!(conn.handshake_kind(), Some(rustls::HandshakeKind::Resumed));
            let alpn_h2 = conn.alpn_protocol() == Some(b"h2");
            Ok((
                Stream::Tls(Box::new(tls)),
                Established {
                    tls: Some((resumed, t0.elapsed())),
                    alpn_h2,
                },
            ))
        }
    }
}

/// Maps a connect error to its class.
pub(crate) fn classify_connect(e: &io::Error) -> Outcome {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => Outcome::ConnectRefused,
        io::ErrorKind::TimedOut => Outcome::ConnectTimeout,
        _ => Outcome::ConnectError,
    }
}
