//! The client side of one HTTP/2 connection as a state machine without I/O: frames in
//! ([`State::on_frame`]), frames out (appended to [`State::out`]), streams opened by request
//! tasks and completed here. The driver (`driver.rs`) moves the bytes.
//!
//! What it keeps per connection: the server's settings, both directions' flow-control windows,
//! the HPACK decoder, and a map of open streams. Per stream: where the response is (head, body,
//! done), the byte counts and the body check, the send window and the part of the request body
//! still to send.
//!
//! Errors follow RFC 9113 §5.4: a connection error sends GOAWAY and fails every open stream; a
//! stream error sends RST_STREAM and fails that stream.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::task::{Context, Poll, Waker};

use bytes::{Buf, Bytes};
use gatebench_model::Outcome;

use super::frame::{self, FrameHead, Reason};
use crate::body::BodyCheck;
use crate::exchange::{Answer, Failure};
use crate::hpack::{self, Decoder};
use crate::request::RequestTemplate;

/// Per-stream receive window gatebench announces: large enough that flow control never paces
/// a benchmark.
pub(crate) const STREAM_WINDOW: u32 = 4 * 1024 * 1024;
/// Connection receive window.
pub(crate) const CONNECTION_WINDOW: u32 = 32 * 1024 * 1024;
/// The PING payload of the handshake round trip.
pub(crate) const HANDSHAKE_PING: [u8; 8] = *b"gatebnch";
/// The largest stream identifier (§5.1.1).
const MAX_STREAM_ID: u32 = (1 << 31) - 1;
/// Most PING and SETTINGS acknowledgements queued and not yet written (nghttp2's
/// `max_outbound_ack` default): beyond it the server is flooding control frames without
/// reading, and the connection ends with ENHANCE_YOUR_CALM.
const MAX_UNSENT_ACKS: usize = 1000;
/// The largest header block (HEADERS plus CONTINUATION) accepted; more is a connection error.
const MAX_HEADER_BLOCK: usize = 256 * 1024;

/// Stream identifiers are odd and increasing: multiplying by an odd constant spreads them well
/// enough for a hash map, at a fraction of SipHash's cost.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type StreamMap = HashMap<u32, StreamState, BuildHasherDefault<IdHasher>>;

/// Where a stream's response is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the final response head (1xx heads may come first).
    Head,
    /// The head arrived; DATA and maybe trailers follow.
    Body,
    /// Complete, failed or reset: later frames are ignored.
    Done,
}

#[derive(Debug)]
struct StreamState {
    phase: Phase,
    result: Option<Result<Answer, Failure>>,
    waker: Option<Waker>,
    outcome: Outcome,
    /// HEAD, 204 or 304: no body whatever content-length says.
    no_body: bool,
    head_only: bool,
    /// The status declared a correct answer besides 2xx.
    expect_status: Option<u16>,
    content_length: Option<u64>,
    body_len: u64,
    /// Frame bytes of the response (headers and payloads).
    bytes_read: u64,
    /// The request body, when `--verify` compares the response with it.
    verify: Option<Bytes>,
    check: BodyCheck<Bytes>,
    send_window: i64,
    /// The request body not yet sent.
    pending: Bytes,
    /// END_STREAM was sent.
    local_end: bool,
    recv_window: i64,
    recv_unacked: u32,
}

impl StreamState {
    fn wake(&mut self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    fn fail(&mut self, outcome: Outcome) {
        self.phase = Phase::Done;
        self.pending = Bytes::new();
        self.result = Some(Err(Failure {
            outcome,
            bytes_read: self.bytes_read,
        }));
        self.wake();
    }

    /// Fails the stream and resets it (a stream error, §5.4.2).
    fn reset(&mut self, out: &mut Vec<u8>, id: u32, reason: Reason) {
        frame::put_rst_stream(out, id, reason);
        self.local_end = true;
        self.fail(Outcome::ProtocolError);
    }

    /// The response ended (END_STREAM): checks its length and body, completes the stream.
    fn complete(&mut self, out: &mut Vec<u8>, id: u32) {
        if let Some(cl) = self.content_length {
            if !self.no_body && cl != self.body_len {
                // RFC 9113 §8.1.1: a malformed response.
                self.reset(out, id, Reason::ProtocolError);
                return;
            }
        }
        if !self.local_end {
            // Answered before the request body was all sent: the rest is not needed.
            frame::put_rst_stream(out, id, Reason::Cancel);
            self.local_end = true;
        }
        self.phase = Phase::Done;
        self.pending = Bytes::new();
        let outcome = if self.check.matches() {
            self.outcome
        } else {
            Outcome::BodyMismatch
        };
        self.result = Some(Ok(Answer {
            outcome,
            bytes_read: self.bytes_read,
            reusable: true,
            mark: None,
        }));
        self.wake();
    }

    /// Sends as much of the pending body as the windows allow. `true` when some is left.
    fn send_body(&mut self, out: &mut Vec<u8>, id: u32, conn_window: &mut i64, max: usize) -> bool {
        while !self.pending.is_empty() {
            let n = (self.pending.len() as i64)
                .min(self.send_window)
                .min(*conn_window)
                .min(max as i64);
            if n <= 0 {
                return true;
            }
            let n = n as usize;
            let last = n == self.pending.len();
            frame::put_head(
                out,
                n,
                frame::DATA,
                if last { frame::END_STREAM } else { 0 },
                id,
            );
            out.extend_from_slice(&self.pending[..n]);
            self.pending.advance(n);
            self.send_window -= n as i64;
            *conn_window -= n as i64;
            if last {
                self.local_end = true;
            }
        }
        false
    }
}

/// How request heads are encoded on this connection (see `hpack::RequestHead`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    /// No request sent yet.
    Fresh,
    /// The fields are in the server's table: indices only.
    Indexed,
    /// Literals without indexing.
    Literal,
}

/// A header block continued in CONTINUATION frames.
#[derive(Debug)]
struct Continuation {
    stream: u32,
    end_stream: bool,
    block: Vec<u8>,
    bytes: u64,
}

/// One connection's protocol state.
#[derive(Debug)]
pub(crate) struct State {
    /// Frames waiting to be written.
    pub out: Vec<u8>,
    next_id: u32,
    highest_opened: u32,
    streams: StreamMap,
    /// Streams with request body left, waiting for window.
    blocked: VecDeque<u32>,
    conn_send_window: i64,
    conn_recv_window: i64,
    conn_recv_unacked: u32,
    peer_max_streams: u32,
    peer_initial_window: i64,
    peer_max_frame: usize,
    peer_table_size: usize,
    /// The table size the server's decoder last heard of from gatebench's encoder.
    enc_table_size: usize,
    encoding: Encoding,
    decoder: Decoder,
    got_settings: bool,
    continuation: Option<Continuation>,
    ping_acked: bool,
    /// PING and SETTINGS acknowledgements queued in `out` and not yet handed to the driver.
    acks_queued: usize,
    /// Those the driver took and has not finished writing.
    acks_writing: usize,
    goaway: Option<u32>,
    /// The connection is over; every stream not yet answered got this outcome.
    failed: Option<Outcome>,
    /// The handle was dropped: no stream will be opened again.
    pub closing: bool,
    /// Acquirers waiting for a stream should look again (the limit rose, or the connection
    /// will take no more streams).
    pub recheck_streams: bool,
    driver: Option<Waker>,
    handshake: Option<Waker>,
}

impl State {
    /// A new connection with the client preface, SETTINGS, the connection window and the
    /// handshake PING already queued.
    pub(crate) fn new() -> State {
        let mut out = Vec::with_capacity(16 * 1024);
        out.extend_from_slice(frame::PREFACE);
        frame::put_settings(
            &mut out,
            &[
                (frame::SETTINGS_ENABLE_PUSH, 0),
                (frame::SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW),
            ],
        );
        frame::put_window_update(
            &mut out,
            0,
            CONNECTION_WINDOW - frame::DEFAULT_WINDOW as u32,
        );
        frame::put_ping(&mut out, 0, &HANDSHAKE_PING);
        State {
            out,
            next_id: 1,
            highest_opened: 0,
            streams: StreamMap::default(),
            blocked: VecDeque::new(),
            conn_send_window: frame::DEFAULT_WINDOW,
            conn_recv_window: i64::from(CONNECTION_WINDOW),
            conn_recv_unacked: 0,
            peer_max_streams: u32::MAX,
            peer_initial_window: frame::DEFAULT_WINDOW,
            peer_max_frame: frame::DEFAULT_MAX_FRAME,
            peer_table_size: hpack::DEFAULT_TABLE_SIZE,
            enc_table_size: hpack::DEFAULT_TABLE_SIZE,
            encoding: Encoding::Fresh,
            decoder: Decoder::default(),
            got_settings: false,
            continuation: None,
            ping_acked: false,
            acks_queued: 0,
            acks_writing: 0,
            goaway: None,
            failed: None,
            closing: false,
            recheck_streams: false,
            driver: None,
            handshake: None,
        }
    }

    /// The driver took `out` to write it: the acknowledgements in it are being written.
    pub(crate) fn took_out(&mut self) {
        self.acks_writing = std::mem::take(&mut self.acks_queued);
    }

    /// The driver wrote everything it took.
    pub(crate) fn wrote_out(&mut self) {
        self.acks_writing = 0;
    }

    /// Queues one more acknowledgement (of a PING or a SETTINGS), or refuses when the server
    /// has asked for more than [`MAX_UNSENT_ACKS`] of them without reading them: a server that
    /// floods PINGs and never reads would otherwise grow `out` without limit. nghttp2 ends the
    /// connection the same way (`max_outbound_ack`, 1000 by default).
    fn queue_ack(&mut self) -> Result<(), Reason> {
        if self.acks_queued + self.acks_writing >= MAX_UNSENT_ACKS {
            return Err(Reason::EnhanceYourCalm);
        }
        self.acks_queued += 1;
        Ok(())
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (unlimited until it says).
    pub(crate) fn peer_max_streams(&self) -> u32 {
        self.peer_max_streams
    }

    /// Whether no new stream can be opened: the connection failed, the server sent GOAWAY, or
    /// the stream identifiers ran out.
    pub(crate) fn no_new_streams(&self) -> bool {
        self.failed.is_some() || self.goaway.is_some() || self.next_id > MAX_STREAM_ID
    }

    /// Whether the driver has nothing left to do: the connection failed, or no stream awaits
    /// an answer and none will be opened.
    pub(crate) fn finished(&self) -> bool {
        self.failed.is_some()
            || ((self.closing || self.goaway.is_some())
                && self.streams.values().all(|s| s.phase == Phase::Done))
    }

    pub(crate) fn set_driver(&mut self, w: &Waker) {
        if !self.driver.as_ref().is_some_and(|d| d.will_wake(w)) {
            self.driver = Some(w.clone());
        }
    }

    fn wake_driver(&mut self) {
        if let Some(w) = self.driver.take() {
            w.wake();
        }
    }

    /// Tells the driver to look again (new frames, or the handle went away).
    pub(crate) fn nudge(&mut self) {
        self.wake_driver();
    }

    /// The handshake: ready when the server answered the PING (its SETTINGS came first).
    pub(crate) fn poll_handshake(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Outcome>> {
        if let Some(o) = self.failed {
            return Poll::Ready(Err(o));
        }
        if self.ping_acked {
            return Poll::Ready(Ok(()));
        }
        self.handshake = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Sends every header block as literals without indexing, never the indexed form: for a
    /// run of several requests, whose blocks could not all share the dynamic table entries of
    /// the connection's first. Called before the first stream opens.
    pub(crate) fn literal_only(&mut self) {
        self.encoding = Encoding::Literal;
    }

    /// Opens a stream for `req`: queues its HEADERS and as much of its body as the windows
    /// allow. Returns the stream identifier.
    pub(crate) fn open(&mut self, req: &RequestTemplate, verify: bool) -> Result<u32, Outcome> {
        if let Some(o) = self.failed {
            return Err(o);
        }
        if self.no_new_streams() {
            return Err(Outcome::GoAway);
        }
        let id = self.next_id;
        self.next_id += 2;
        self.highest_opened = id;
        let head = req.h2_head();
        let body = req.body();
        let end_stream = body.is_empty();
        // A smaller table on the server must be announced before the block uses it (§4.2).
        let mut prefixed = None;
        if self.peer_table_size < self.enc_table_size {
            self.enc_table_size = self.peer_table_size;
            let mut b = Vec::new();
            hpack::put_size_update(&mut b, self.enc_table_size);
            prefixed = Some(b);
            if self.encoding == Encoding::Indexed && head.table_need > self.enc_table_size {
                self.encoding = Encoding::Literal;
            }
        }
        let block: &[u8] = match self.encoding {
            Encoding::Fresh if head.table_need <= self.enc_table_size => {
                self.encoding = Encoding::Indexed;
                &head.first
            }
            Encoding::Fresh | Encoding::Literal => {
                self.encoding = Encoding::Literal;
                &head.literal
            }
            Encoding::Indexed => &head.indexed,
        };
        match prefixed.as_mut() {
            Some(b) => {
                b.extend_from_slice(block);
                frame::put_headers(&mut self.out, id, b, end_stream, self.peer_max_frame);
            }
            None => frame::put_headers(&mut self.out, id, block, end_stream, self.peer_max_frame),
        }
        let mut st = StreamState {
            phase: Phase::Head,
            result: None,
            waker: None,
            outcome: Outcome::Ok,
            no_body: req.head_only(),
            head_only: req.head_only(),
            expect_status: req.expected_status(),
            content_length: None,
            body_len: 0,
            bytes_read: 0,
            verify: verify.then(|| body.clone()).filter(|b| !b.is_empty()),
            check: BodyCheck::new(None),
            send_window: self.peer_initial_window,
            pending: body.clone(),
            local_end: end_stream,
            recv_window: i64::from(STREAM_WINDOW),
            recv_unacked: 0,
        };
        if st.send_body(
            &mut self.out,
            id,
            &mut self.conn_send_window,
            self.peer_max_frame,
        ) {
            self.blocked.push_back(id);
        }
        self.streams.insert(id, st);
        self.wake_driver();
        Ok(id)
    }

    /// A stream's result, once it has one (the stream is then forgotten).
    pub(crate) fn poll_stream(
        &mut self,
        id: u32,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Answer, Failure>> {
        let Some(st) = self.streams.get_mut(&id) else {
            return Poll::Ready(Err(Failure {
                outcome: self.failed.unwrap_or(Outcome::Incomplete),
                bytes_read: 0,
            }));
        };
        if let Some(r) = st.result.take() {
            self.streams.remove(&id);
            return Poll::Ready(r);
        }
        if !st.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            st.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// The request task gave up on a stream (timeout, the run's end): resets it unless it has
    /// ended already.
    pub(crate) fn cancel(&mut self, id: u32) {
        if let Some(st) = self.streams.remove(&id) {
            if st.phase != Phase::Done && self.failed.is_none() {
                frame::put_rst_stream(&mut self.out, id, Reason::Cancel);
                self.wake_driver();
            }
        }
    }

    /// The connection ended with `outcome` for every stream not yet answered.
    pub(crate) fn fail(&mut self, outcome: Outcome) {
        if self.failed.is_none() {
            self.failed = Some(outcome);
        }
        for st in self.streams.values_mut() {
            if st.phase != Phase::Done {
                st.fail(outcome);
            }
        }
        if let Some(w) = self.handshake.take() {
            w.wake();
        }
        self.recheck_streams = true;
    }

    /// The connection's byte stream ended (EOF): after a GOAWAY that is the GOAWAY's doing.
    pub(crate) fn eof(&mut self) {
        let o = if self.goaway.is_some() {
            Outcome::GoAway
        } else {
            Outcome::Incomplete
        };
        self.fail(o);
    }

    /// A connection error (§5.4.1): GOAWAY with `reason`, every stream fails.
    pub(crate) fn connection_error(&mut self, reason: Reason) {
        if self.failed.is_none() {
            frame::put_goaway(&mut self.out, 0, reason);
        }
        self.fail(Outcome::ProtocolError);
    }

    /// Ends the connection politely (GOAWAY, NO_ERROR) when nothing is left to do.
    pub(crate) fn close(&mut self) {
        if self.failed.is_none() {
            frame::put_goaway(&mut self.out, 0, Reason::NoError);
            self.fail(Outcome::GoAway);
        }
    }

    /// A stream the server may refer to: odd and already opened by gatebench. Frames on any
    /// other (idle or server-initiated) stream are a connection error.
    fn check_stream(&self, id: u32) -> Result<(), Reason> {
        if id == 0 || id % 2 == 0 || id > self.highest_opened {
            Err(Reason::ProtocolError)
        } else {
            Ok(())
        }
    }

    /// Handles one frame from the server.
    pub(crate) fn on_frame(&mut self, h: FrameHead, payload: &[u8]) -> Result<(), Reason> {
        if !self.got_settings && (h.kind != frame::SETTINGS || h.flags & frame::ACK != 0) {
            // The server's preface is a SETTINGS frame (§3.4).
            return Err(Reason::ProtocolError);
        }
        if let Some(c) = &self.continuation {
            if h.kind != frame::CONTINUATION || h.stream != c.stream {
                return Err(Reason::ProtocolError);
            }
        }
        match h.kind {
            frame::DATA => self.on_data(h, payload),
            frame::HEADERS => self.on_headers(h, payload),
            frame::CONTINUATION => self.on_continuation(h, payload),
            frame::RST_STREAM => self.on_rst_stream(h, payload),
            frame::SETTINGS => self.on_settings(h, payload),
            frame::PING => self.on_ping(h, payload),
            frame::GOAWAY => self.on_goaway(h, payload),
            frame::WINDOW_UPDATE => self.on_window_update(h, payload),
            frame::PRIORITY => {
                if h.stream == 0 {
                    return Err(Reason::ProtocolError);
                }
                if payload.len() != 5 {
                    self.stream_error(h.stream, Reason::FrameSizeError);
                }
                Ok(())
            }
            // Push is disabled in gatebench's SETTINGS.
            frame::PUSH_PROMISE => Err(Reason::ProtocolError),
            // Unknown frame types are ignored (§4.1).
            _ => Ok(()),
        }
    }

    fn stream_error(&mut self, id: u32, reason: Reason) {
        match self.streams.get_mut(&id) {
            Some(st) if st.phase != Phase::Done => st.reset(&mut self.out, id, reason),
            _ => frame::put_rst_stream(&mut self.out, id, reason),
        }
    }

    fn on_data(&mut self, h: FrameHead, payload: &[u8]) -> Result<(), Reason> {
        self.check_stream(h.stream)?;
        let len = payload.len() as i64;
        if len > self.conn_recv_window {
            return Err(Reason::FlowControlError);
        }
        self.conn_recv_window -= len;
        self.conn_recv_unacked += payload.len() as u32;
        if self.conn_recv_unacked >= CONNECTION_WINDOW / 2 {
            frame::put_window_update(&mut self.out, 0, self.conn_recv_unacked);
            self.conn_recv_window += i64::from(self.conn_recv_unacked);
            self.conn_recv_unacked = 0;
        }
        let data = frame::unpad(h.flags, payload).ok_or(Reason::ProtocolError)?;
        let Some(st) = self.streams.get_mut(&h.stream) else {
            return Ok(()); // a stream gatebench reset
        };
        match st.phase {
            Phase::Done => return Ok(()),
            Phase::Head => {
                st.reset(&mut self.out, h.stream, Reason::ProtocolError);
                return Ok(());
            }
            Phase::Body => {}
        }
        if len > st.recv_window {
            st.reset(&mut self.out, h.stream, Reason::FlowControlError);
            return Ok(());
        }
        st.recv_window -= len;
        st.bytes_read += (frame::HEADER_LEN + payload.len()) as u64;
        st.body_len += data.len() as u64;
        st.check.feed(data);
        if h.flags & frame::END_STREAM != 0 {
            st.complete(&mut self.out, h.stream);
        } else {
            st.recv_unacked += payload.len() as u32;
            if st.recv_unacked >= STREAM_WINDOW / 2 {
                frame::put_window_update(&mut self.out, h.stream, st.recv_unacked);
                st.recv_window += i64::from(st.recv_unacked);
                st.recv_unacked = 0;
            }
        }
        Ok(())
    }

    fn on_headers(&mut self, h: FrameHead, payload: &[u8]) -> Result<(), Reason> {
        if h.stream == 0 {
            return Err(Reason::ProtocolError);
        }
        let mut block = frame::unpad(h.flags, payload).ok_or(Reason::ProtocolError)?;
        if h.flags & frame::PRIORITY_FLAG != 0 {
            block = block.get(5..).ok_or(Reason::ProtocolError)?;
        }
        let end_stream = h.flags & frame::END_STREAM != 0;
        let bytes = (frame::HEADER_LEN + payload.len()) as u64;
        if h.flags & frame::END_HEADERS != 0 {
            self.on_header_block(h.stream, end_stream, block, bytes)
        } else {
            self.continuation = Some(Continuation {
                stream: h.stream,
                end_stream,
                block: block.to_vec(),
                bytes,
            });
            Ok(())
        }
    }

    fn on_continuation(&mut self, h: FrameHead, payload: &[u8]) -> Result<(), Reason> {
        let Some(mut c) = self.continuation.take() else {
            return Err(Reason::ProtocolError);
        };
        if c.block.len() + payload.len() > MAX_HEADER_BLOCK {
            return Err(Reason::ProtocolError);
        }
        c.block.extend_from_slice(payload);
        c.bytes += (frame::HEADER_LEN + payload.len()) as u64;
        if h.flags & frame::END_HEADERS != 0 {
            self.on_header_block(c.stream, c.end_stream, &c.block, c.bytes)
        } else {
            self.continuation = Some(c);
            Ok(())
        }
    }

    fn on_header_block(
        &mut self,
        id: u32,
        end_stream: bool,
        block: &[u8],
        bytes: u64,
    ) -> Result<(), Reason> {
        // Decoded whatever the stream's fate, to keep the table in step (§4.1 of RFC 7541).
        let head = self
            .decoder
            .decode(block)
            .map_err(|_| Reason::CompressionError)?;
        self.check_stream(id)?;
        let Some(st) = self.streams.get_mut(&id) else {
            return Ok(());
        };
        match st.phase {
            Phase::Done => {}
            Phase::Head => {
                st.bytes_read += bytes;
                let status = match head.status {
                    Some(s) if !head.malformed => s,
                    _ => {
                        st.reset(&mut self.out, id, Reason::ProtocolError);
                        return Ok(());
                    }
                };
                if (100..200).contains(&status) {
                    // Informational: the final head follows. 101 does not exist in HTTP/2,
                    // and an informational head cannot end the stream.
                    if status == 101 || end_stream {
                        st.reset(&mut self.out, id, Reason::ProtocolError);
                    }
                    return Ok(());
                }
                st.outcome = match st.expect_status {
                    Some(s) if s == status => Outcome::Ok,
                    _ => Outcome::from_status(status),
                };
                st.content_length = head.content_length;
                st.no_body = st.head_only || status == 204 || status == 304;
                let expected = if st.outcome == Outcome::Ok && !st.head_only {
                    st.verify.take()
                } else {
                    None
                };
                st.check = BodyCheck::new(expected);
                st.phase = Phase::Body;
                if end_stream {
                    st.complete(&mut self.out, id);
                }
            }
            Phase::Body => {
                // Trailers: they end the stream and carry no pseudo-header (§8.1).
                st.bytes_read += bytes;
                if !end_stream || head.pseudo > 0 {
                    st.reset(&mut self.out, id, Reason::ProtocolError);
                } else {
                    st.complete(&mut self.out, id);
                }
            }
        }
        Ok(())
    }

    fn on_rst_stream(&mut self, h: FrameHead, payload: &[u8]) -> Result<(), Reason> {
        self.check_stream(h.stream)?;
        let code: [u8; 4] = payload.try_into().map_err(|_| Reason::FrameSizeError)?;
        if let Some(st) = self.streams.get_mut(&h.stream) {
            if st.phase != Phase::Done {
                st.local_end = true;
                let outcome = if u32::from_be_bytes(code) == Reason::RefusedStream as u32 {
                    Outcome::RefusedStream
                } else {
                    Outcome::StreamReset
                };
                st.fail(outcome);
            }
        }
        Ok(())
    }

    fn on_settings(&mut self, h: FrameHead, payload: &[u8]) -> Result<(), Reason> {
        if h.stream != 0 {
            return Err(Reason::ProtocolError);
        }
        if h.flags & frame::ACK != 0 {
            return if payload.is_empty() {
                Ok(())
            } else {
                Err(Reason::FrameSizeError)
            };
        }
        if payload.len() % 6 != 0 {
            return Err(Reason::FrameSizeError);
        }
        for s in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([s[0], s[1]]);
            let value = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
            match id {
                frame::SETTINGS_HEADER_TABLE_SIZE => self.peer_table_size = value as usize,
                // A server may not enable push (§6.5.2).
                frame::SETTINGS_ENABLE_PUSH if value != 0 => return Err(Reason::ProtocolError),
                frame::SETTINGS_MAX_CONCURRENT_STREAMS => {
                    self.peer_max_streams = value;
                    self.recheck_streams = true;
                }
                frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                    let value = i64::from(value);
                    if value > frame::MAX_WINDOW {
                        return Err(Reason::FlowControlError);
                    }
                    let delta = value - self.peer_initial_window;
                    self.peer_initial_window = value;
                    for st in self.streams.values_mut() {
                        st.send_window += delta;
                        if st.send_window > frame::MAX_WINDOW {
                            return Err(Reason::FlowControlError);
                        }
                    }
                }
                frame::SETTINGS_MAX_FRAME_SIZE => {
                    let value = value as usize;
                    if !(frame::DEFAULT_MAX_FRAME..(1 << 24)).contains(&value) {
                        return Err(Reason::ProtocolError);
                    }
                    self.peer_max_frame = value;
                }
                _ => {}
            }
        }
        self.got_settings = true;
        self.queue_ack()?;
        frame::put_head(&mut self.out, 0, frame::SETTINGS, frame::ACK, 0);
        self.send_blocked();
        Ok(())
    }

    fn on_ping(&mut self, h: FrameHead, payload: &[u8]) -> Result<(), Reason> {
        if h.stream != 0 {
            return Err(Reason::ProtocolError);
        }
        let data: &[u8; 8] = payload.try_into().map_err(|_| Reason::FrameSizeError)?;
        if h.flags & frame::ACK == 0 {
            self.queue_ack()?;
            frame::put_ping(&mut self.out, frame::ACK, data);
        } else if *data == HANDSHAKE_PING && !self.ping_acked {
            self.ping_acked = true;
            if let Some(w) = self.handshake.take() {
                w.wake();
            }
        }
        Ok(())
    }

    fn on_goaway(&mut self, h: FrameHead, payload: &[u8]) -> Result<(), Reason> {
        if h.stream != 0 {
            return Err(Reason::ProtocolError);
        }
        if payload.len() < 8 {
            return Err(Reason::FrameSizeError);
        }
        let last =
            u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & MAX_STREAM_ID;
        let last = self.goaway.map_or(last, |l| l.min(last));
        self.goaway = Some(last);
        // Streams above `last` were never processed: they end now, and may be retried.
        for (&id, st) in self.streams.iter_mut() {
            if id > last && st.phase != Phase::Done {
                st.local_end = true;
                st.fail(Outcome::GoAway);
            }
        }
        self.recheck_streams = true;
        Ok(())
    }

    fn on_window_update(&mut self, h: FrameHead, payload: &[u8]) -> Result<(), Reason> {
        let b: [u8; 4] = payload.try_into().map_err(|_| Reason::FrameSizeError)?;
        let inc = i64::from(u32::from_be_bytes(b) & 0x7fff_ffff);
        if h.stream == 0 {
            if inc == 0 {
                return Err(Reason::ProtocolError);
            }
            self.conn_send_window += inc;
            if self.conn_send_window > frame::MAX_WINDOW {
                return Err(Reason::FlowControlError);
            }
            self.send_blocked();
            return Ok(());
        }
        self.check_stream(h.stream)?;
        if inc == 0 {
            self.stream_error(h.stream, Reason::ProtocolError);
            return Ok(());
        }
        if let Some(st) = self.streams.get_mut(&h.stream) {
            st.send_window += inc;
            if st.send_window > frame::MAX_WINDOW {
                st.reset(&mut self.out, h.stream, Reason::FlowControlError);
                return Ok(());
            }
            if !st.pending.is_empty() {
                self.send_blocked();
            }
        }
        Ok(())
    }

    /// Sends the bodies that were waiting for window, in the order they started waiting.
    fn send_blocked(&mut self) {
        let mut still = VecDeque::new();
        while let Some(id) = self.blocked.pop_front() {
            let Some(st) = self.streams.get_mut(&id) else {
                continue;
            };
            if st.send_body(
                &mut self.out,
                id,
                &mut self.conn_send_window,
                self.peer_max_frame,
            ) {
                still.push_back(id);
            }
        }
        self.blocked = still;
    }
}

#[cfg(test)]
mod tests;
