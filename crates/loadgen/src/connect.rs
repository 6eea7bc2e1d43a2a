//! Establishing connections to the target: TCP with a connect timeout, `TCP_NODELAY`, and the
//! classification of connect failures.
//!
//! The transport is a value ([`Transport`]) so that TLS slots in here without touching the
//! arrival model or the HTTP code: the HTTP/1.1 connection is generic over the stream.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use gatebench_model::Outcome;
use tokio::net::TcpStream;

/// How bytes reach the target.
#[derive(Debug, Clone)]
pub(crate) enum Transport {
    /// Plain TCP.
    Tcp,
}

/// Opens one connection, within `timeout`.
pub(crate) async fn connect(
    addr: SocketAddr,
    transport: &Transport,
    timeout: Duration,
) -> Result<TcpStream, Outcome> {
    match transport {
        Transport::Tcp => {
            let stream = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
                Err(_) => return Err(Outcome::ConnectTimeout),
                Ok(Err(e)) => return Err(classify_connect(&e)),
                Ok(Ok(s)) => s,
            };
            // Latency of small requests must not wait for Nagle's algorithm.
            stream.set_nodelay(true).map_err(|e| classify_connect(&e))?;
            Ok(stream)
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
