//! Control-frame floods on an HTTP/2 client connection (CVE-2019-9512 "ping flood",
//! CVE-2019-9515 "settings flood"): the h2 crate answers every PING and SETTINGS and offers no
//! hook to limit them, so the frames are counted below it, on the bytes it reads. Rule: the
//! count is a state machine over the byte stream, so how the bytes are split into reads never
//! changes the decision.
//!
//! [`FloodRead`] wraps the connection's IO; [`FrameCounter`] follows HTTP/2 frame boundaries
//! after the 24-byte client preface (RFC 9113 §3.4; §4.1: a 9-byte header, 24-bit length,
//! type, flags, stream) and keeps a credit, after Envoy's ratio limits on inbound frames
//! (`max_inbound_window_update_frames_per_data_frame_sent`) and nginx's and Envoy's answers to
//! the 2019 floods: a connection starts with [`CONTROL_CREDIT`] control frames; each PING or
//! SETTINGS without the ACK flag takes one, each HEADERS or DATA frame (work the client asks
//! for) gives one back, up to the start value. A client that sends more control frames than
//! that has flooded: the reader stops handing bytes to h2 and `h2::server` ends the connection
//! with GOAWAY(ENHANCE_YOUR_CALM). A client pinging once per request, or a few times while
//! idle, never gets near it; the idle timeout closes a connection with no open stream anyway.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

/// Control frames (PING, SETTINGS without ACK) a connection may send beyond the HEADERS and
/// DATA frames it sent; also its credit at the start.
pub(crate) const CONTROL_CREDIT: u32 = 100;

const PREFACE_LEN: usize = 24;
const FRAME_HEADER_LEN: usize = 9;
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const ACK: u8 = 0x1;

/// Where the counter is in the byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Inside the client preface, with this many bytes of it still to come.
    Preface(usize),
    /// Inside a frame header, with this many of its bytes seen.
    Header(usize),
    /// Inside a frame payload, with this many bytes still to come.
    Payload(u32),
}

/// Follows the frames of a client's byte stream and counts control frames against their
/// credit. Feeding the same bytes in any split gives the same decision at the same offset.
#[derive(Debug, Clone)]
pub(crate) struct FrameCounter {
    at: At,
    header: [u8; FRAME_HEADER_LEN],
    credit: u32,
    /// Bytes fed so far.
    offset: u64,
    /// The offset just past the header of the frame that spent more than the credit.
    flooded_at: Option<u64>,
}

impl Default for FrameCounter {
    fn default() -> Self {
        Self {
            at: At::Preface(PREFACE_LEN),
            header: [0; FRAME_HEADER_LEN],
            credit: CONTROL_CREDIT,
            offset: 0,
            flooded_at: None,
        }
    }
}

impl FrameCounter {
    /// Takes the next bytes of the stream; true once the client has flooded (and from then
    /// on).
    pub(crate) fn feed(&mut self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() && self.flooded_at.is_none() {
            match self.at {
                At::Preface(left) => {
                    let n = left.min(bytes.len());
                    self.advance(&mut bytes, n);
                    self.at = if left == n {
                        At::Header(0)
                    } else {
                        At::Preface(left - n)
                    };
                }
                At::Header(seen) => {
                    let n = (FRAME_HEADER_LEN - seen).min(bytes.len());
                    self.header[seen..seen + n].copy_from_slice(&bytes[..n]);
                    self.advance(&mut bytes, n);
                    if seen + n == FRAME_HEADER_LEN {
                        self.frame_header();
                    } else {
                        self.at = At::Header(seen + n);
                    }
                }
                At::Payload(left) => {
                    let n = (left as usize).min(bytes.len());
                    self.advance(&mut bytes, n);
                    self.at = if left as usize == n {
                        At::Header(0)
                    } else {
                        At::Payload(left - n as u32)
                    };
                }
            }
        }
        self.flooded_at.is_some()
    }

    fn advance(&mut self, bytes: &mut &[u8], n: usize) {
        *bytes = &bytes[n..];
        self.offset += n as u64;
    }

    /// A whole frame header was read: count the frame, then skip its payload.
    fn frame_header(&mut self) {
        let [l0, l1, l2, kind, flags, ..] = self.header;
        let len = u32::from_be_bytes([0, l0, l1, l2]);
        match kind {
            PING | SETTINGS if flags & ACK == 0 => match self.credit.checked_sub(1) {
                Some(left) => self.credit = left,
                None => self.flooded_at = Some(self.offset),
            },
            HEADERS | DATA => self.credit = (self.credit + 1).min(CONTROL_CREDIT),
            _ => {}
        }
        self.at = if len == 0 {
            At::Header(0)
        } else {
            At::Payload(len)
        };
    }

    /// Where the flood was found, if it was.
    #[cfg(test)]
    fn flooded_at(&self) -> Option<u64> {
        self.flooded_at
    }
}

/// Raised once by a [`FloodRead`] whose client flooded; `h2::server` waits on it.
#[derive(Debug, Default)]
pub(crate) struct Flooded(Notify);

impl Flooded {
    /// Resolves once the client has flooded.
    pub(crate) async fn wait(&self) {
        self.0.notified().await;
    }
}

/// A connection's IO whose reads go through a [`FrameCounter`]: once the client floods, the
/// bytes of that read still go on but later reads wait forever (h2 is given nothing more to
/// answer), and [`Flooded`] is raised for the server to send GOAWAY and close.
#[derive(Debug)]
pub(crate) struct FloodRead<T> {
    inner: T,
    counter: FrameCounter,
    flooded: Arc<Flooded>,
    raised: bool,
}

impl<T> FloodRead<T> {
    pub(crate) fn new(inner: T) -> (Self, Arc<Flooded>) {
        let flooded = Arc::new(Flooded::default());
        let read = Self {
            inner,
            counter: FrameCounter::default(),
            flooded: flooded.clone(),
            raised: false,
        };
        (read, flooded)
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for FloodRead<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.raised {
            // The server is closing the connection; it will not read again.
            return Poll::Pending;
        }
        let before = buf.filled().len();
        std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        if this.counter.feed(&buf.filled()[before..]) {
            this.raised = true;
            this.flooded.0.notify_one();
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for FloodRead<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        let len = payload.len() as u32;
        out.extend_from_slice(&len.to_be_bytes()[1..]);
        out.extend_from_slice(&[kind, flags]);
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
    }

    /// The preface, SETTINGS, then `pings` PINGs, each `work` HEADERS+DATA apart.
    fn stream(pings: usize, work_every: Option<usize>) -> Vec<u8> {
        let mut out = PREFACE.to_vec();
        frame(&mut out, SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]);
        frame(&mut out, SETTINGS, ACK, 0, &[]);
        let mut id = 1;
        for i in 0..pings {
            frame(&mut out, PING, 0, 0, &[7; 8]);
            frame(&mut out, PING, ACK, 0, &[7; 8]);
            if work_every.is_some_and(|every| i % every == 0) {
                frame(&mut out, HEADERS, 0x4, id, &[0x82; 3]);
                frame(&mut out, DATA, 0x1, id, &[b'x'; 40_000 % 16_384]);
                id += 2;
            }
        }
        out
    }

    /// Feeds `bytes` cut into pieces of the sizes `cuts` cycles through.
    fn fed(bytes: &[u8], cuts: &[usize]) -> FrameCounter {
        let mut counter = FrameCounter::default();
        let mut at = 0;
        for &cut in cuts.iter().cycle() {
            if at >= bytes.len() {
                break;
            }
            let end = (at + cut).min(bytes.len());
            counter.feed(&bytes[at..end]);
            at = end;
        }
        counter
    }

    const SPLITS: &[&[usize]] = &[
        &[usize::MAX],
        &[1],
        &[2],
        &[9],
        &[17],
        &[23, 1, 9, 8],
        &[4096],
        &[5, 100, 3, 1, 7],
    ];

    #[test]
    fn the_credit_is_spent_by_the_101st_control_frame_in_any_split() {
        // SETTINGS takes one, so the 100th PING is the 101st control frame.
        let bytes = stream(100, None);
        let whole = fed(&bytes, &[usize::MAX]).flooded_at();
        let at = whole.expect("101 control frames flood");
        // Just past the 100th PING's header: preface, SETTINGS (9 + 6), its ACK (9), 99 PINGs
        // and their ACKs (34 bytes each), then 9.
        assert_eq!(at, (24 + 15 + 9 + 99 * 34 + 9) as u64);
        for cuts in SPLITS {
            assert_eq!(fed(&bytes, cuts).flooded_at(), whole, "{cuts:?}");
        }
        let below = stream(99, None);
        for cuts in SPLITS {
            assert_eq!(fed(&below, cuts).flooded_at(), None, "{cuts:?}");
        }
    }

    #[test]
    fn requests_give_credit_back_and_acks_cost_nothing() {
        // A PING per request, forever: never a flood.
        let bytes = stream(1000, Some(1));
        for cuts in SPLITS {
            assert_eq!(fed(&bytes, cuts).flooded_at(), None, "{cuts:?}");
        }
        // One request per ten PINGs: the credit runs out, at the same byte in every split.
        let bytes = stream(1000, Some(10));
        let whole = fed(&bytes, &[usize::MAX]).flooded_at();
        assert!(whole.is_some());
        for cuts in SPLITS {
            assert_eq!(fed(&bytes, cuts).flooded_at(), whole, "{cuts:?}");
        }
    }

    #[test]
    fn credit_does_not_pile_up_past_its_start_value() {
        let mut bytes = stream(0, None);
        for id in 0..500u32 {
            frame(&mut bytes, HEADERS, 0x5, 2 * id + 1, &[0x82]);
        }
        // 500 requests gave back only up to the start value: 100 PINGs, not 599.
        for _ in 0..100 {
            frame(&mut bytes, PING, 0, 0, &[0; 8]);
        }
        assert_eq!(fed(&bytes, &[usize::MAX]).flooded_at(), None);
        frame(&mut bytes, PING, 0, 0, &[0; 8]);
        assert!(fed(&bytes, &[usize::MAX]).flooded_at().is_some());
    }
}
