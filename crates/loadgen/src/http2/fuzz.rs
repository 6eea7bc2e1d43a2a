//! Entry points for the fuzz targets under `fuzz/` (feature `fuzzing`, never in production
//! builds): the connection state machine driven by arbitrary server bytes and client actions,
//! and the HPACK and Huffman decoders on their own.
//!
//! [`conn`] also asserts what the generator relies on, so that a unit test can replay an input:
//! no panic, output bounded by what the server sent and what the client asked to send, and
//! every stream answered once the connection has ended (a stream still waiting then would be a
//! request that hangs until its timeout).

use std::task::{Context, Waker};

use super::conn::State;
use super::frame::{self, FrameHead, Reason};
use crate::config::Target;
use crate::hpack::Decoder;
use crate::huffman;
use crate::request::{RequestBody, RequestTemplate};

/// Drives one connection: `data` is a sequence of operations, each an opcode byte and its
/// arguments. Opcodes (the low three bits) 0–3: the next byte is a length `n`, the `n` bytes
/// after it arrive from the server (handled as the driver does: whole frames, a frame over
/// the maximum size or a rejected frame ends the connection); 4: open a GET (HEAD when bit 3
/// is set); 5: open a POST whose body length is the next byte × 300 (verified when bit 3 is
/// set); 6: cancel the open stream the next byte picks; 7: poll every open stream and take
/// the queued output (bit 3 set: the byte stream then ends).
///
/// # Panics
/// When an invariant breaks (that is the point).
pub fn conn(data: &[u8]) {
    let target = Target::parse("http://127.0.0.1:8080/echo").expect("a valid URL");
    let template = |method: &str, body: usize| {
        let body = if body == 0 {
            RequestBody::None
        } else {
            RequestBody::Inline(vec![b'x'; body])
        };
        RequestTemplate::encode(&target, method, &["x-fuzz: 1".into()], body, true)
            .expect("a valid request")
    };
    let get = template("GET", 0);
    let head = template("HEAD", 0);
    let mut cx = Context::from_waker(Waker::noop());
    let mut st = State::new();
    // Output allowed so far: what the client queues itself, plus a few times what the server
    // sent (an answer to a PING or a SETTINGS is as long as the frame that asked for it).
    let mut budget = st.out.len() + 1024;
    let mut written = 0usize;
    let mut rbuf: Vec<u8> = Vec::new();
    let mut open: Vec<u32> = Vec::new();
    let mut ended = false;
    let mut i = 0;
    while i < data.len() {
        let op = data[i];
        i += 1;
        let arg = data.get(i).copied().unwrap_or(0);
        match op & 7 {
            0..=3 => {
                i += 1;
                let end = (i + usize::from(arg)).min(data.len());
                let chunk = &data[i.min(end)..end];
                i = end;
                budget += 4 * chunk.len();
                if !ended {
                    rbuf.extend_from_slice(chunk);
                    ended = feed(&mut st, &mut rbuf);
                }
            }
            4 | 5 => {
                let limit = (st.peer_max_streams() as usize).max(1);
                if st.no_new_streams() || open.len() >= limit {
                    continue;
                }
                let (req, verify) = if op & 7 == 5 {
                    i += 1;
                    (template("POST", usize::from(arg) * 300), op & 8 != 0)
                } else if op & 8 != 0 {
                    (head.clone(), false)
                } else {
                    (get.clone(), false)
                };
                let body = req.body_len();
                budget += 9 + req.h2_head().first.len() + 64 + body + 9 * (body / 16_384 + 1);
                match st.open(&req, verify) {
                    Ok(id) => open.push(id),
                    Err(_) => assert!(st.no_new_streams(), "open refused on a live connection"),
                }
            }
            6 => {
                i += 1;
                if !open.is_empty() {
                    let id = open.remove(usize::from(arg) % open.len());
                    st.cancel(id);
                    budget += 13;
                }
            }
            _ => {
                open.retain(|&id| st.poll_stream(id, &mut cx).is_pending());
                written += std::mem::take(&mut st.out).len();
                assert!(
                    written <= budget,
                    "{written} bytes written for a budget of {budget}"
                );
                if op & 8 != 0 && !ended {
                    st.eof();
                    ended = true;
                }
            }
        }
    }
    written += std::mem::take(&mut st.out).len();
    assert!(
        written <= budget,
        "{written} bytes written for a budget of {budget}"
    );
    // The connection ends: every request must get its answer now.
    if !ended {
        st.eof();
    }
    assert!(st.finished(), "the driver would keep running after the end");
    assert!(st.no_new_streams());
    for id in open {
        assert!(
            st.poll_stream(id, &mut cx).is_ready(),
            "stream {id} still waits after the connection ended"
        );
    }
}

/// Handles every complete frame in `rbuf` as the driver does; `true` when the connection
/// ended with an error.
fn feed(st: &mut State, rbuf: &mut Vec<u8>) -> bool {
    let mut pos = 0;
    while rbuf.len() - pos >= frame::HEADER_LEN {
        let h = FrameHead::parse(&rbuf[pos..]);
        if h.len > frame::DEFAULT_MAX_FRAME {
            st.connection_error(Reason::FrameSizeError);
            return true;
        }
        let end = pos + frame::HEADER_LEN + h.len;
        if end > rbuf.len() {
            break;
        }
        let result = st.on_frame(h, &rbuf[pos + frame::HEADER_LEN..end]);
        pos = end;
        if let Err(reason) = result {
            st.connection_error(reason);
            return true;
        }
    }
    rbuf.drain(..pos);
    false
}

/// What a response header block says, as the generator's decoder reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HpackHead {
    /// `:status`, when present and three digits.
    pub status: Option<u16>,
    /// `content-length`, when present and a number.
    pub content_length: Option<u64>,
    /// The block breaks HTTP/2's rules for a response head.
    pub malformed: bool,
    /// Pseudo-header fields seen.
    pub pseudo: u32,
}

/// The generator's HPACK decoder for one connection.
#[derive(Debug, Default)]
pub struct HpackDecoder(Decoder);

impl HpackDecoder {
    /// Decodes one header block; `None` is a COMPRESSION_ERROR.
    pub fn decode(&mut self, block: &[u8]) -> Option<HpackHead> {
        let h = self.0.decode(block).ok()?;
        Some(HpackHead {
            status: h.status,
            content_length: h.content_length,
            malformed: h.malformed,
            pseudo: h.pseudo,
        })
    }

    /// The dynamic table, newest first.
    pub fn table(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.0
            .entries()
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect()
    }

    /// The dynamic table's size in RFC 7541 §4.1 terms.
    pub fn table_size(&self) -> usize {
        self.0.size()
    }
}

/// The generator's Huffman decoder; `None` for an invalid string.
pub fn huffman_decode(src: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    huffman::decode(src, &mut out).ok()?;
    Some(out)
}
