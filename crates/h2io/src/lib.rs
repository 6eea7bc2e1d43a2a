//! An HTTP/2 stream as a byte stream: what runs on a stream opened with an extended CONNECT
//! (RFC 8441: WebSocket over HTTP/2) after its `200`, on either side — the proxy's end of a
//! client's tunnel, the load generator's WebSocket over HTTP/2. Rule: reads are the stream's DATA, each
//! frame's bytes handed on in order and their flow-control window given back as they are read
//! (so a reader that stops reading stops the peer); writes are DATA frames sent as the peer's
//! window allows; shutting the write side down ends the stream (END_STREAM). A reset from the
//! peer is an error on either side.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes};
use h2::{RecvStream, SendStream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// One HTTP/2 stream read and written as bytes.
#[derive(Debug)]
pub struct H2Io {
    send: SendStream<Bytes>,
    recv: RecvStream,
    /// What is left of the last DATA frame read.
    buf: Bytes,
    /// The peer ended its side of the stream.
    eof: bool,
}

impl H2Io {
    /// The stream written through `send` and read from `recv` (a server: its response's
    /// `SendStream` and its request's body; a client: its request's and its response's).
    pub fn new(send: SendStream<Bytes>, recv: RecvStream) -> H2Io {
        H2Io {
            send,
            recv,
            buf: Bytes::new(),
            eof: false,
        }
    }
}

fn broken(e: h2::Error) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionReset, e)
}

impl AsyncRead for H2Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // An empty DATA frame is no end: wait for bytes or the stream's end.
        while this.buf.is_empty() && !this.eof {
            match ready!(this.recv.poll_data(cx)) {
                Some(Ok(data)) => {
                    let _ = this.recv.flow_control().release_capacity(data.len());
                    this.buf = data;
                }
                Some(Err(e)) => return Poll::Ready(Err(broken(e))),
                None => this.eof = true,
            }
        }
        let n = this.buf.len().min(out.remaining());
        out.put_slice(&this.buf[..n]);
        this.buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for H2Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if data.is_empty() {
            return Poll::Ready(Ok(0));
        }
        this.send.reserve_capacity(data.len());
        loop {
            match ready!(this.send.poll_capacity(cx)) {
                None => return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
                Some(Err(e)) => return Poll::Ready(Err(broken(e))),
                Some(Ok(0)) => continue,
                Some(Ok(room)) => {
                    let n = room.min(data.len());
                    this.send
                        .send_data(Bytes::copy_from_slice(&data[..n]), false)
                        .map_err(broken)?;
                    return Poll::Ready(Ok(n));
                }
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // h2 writes what it holds as the connection goes.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // END_STREAM; a stream already gone has nothing to end.
        let _ = self.get_mut().send.send_data(Bytes::new(), true);
        Poll::Ready(Ok(()))
    }
}
