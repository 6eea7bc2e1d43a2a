//! Stream mode (`--stream`): a response read as a stream of events, each timed as it arrives.
//!
//! Per 2xx response it measures, all from the request's start — the intended send time under
//! the open model, the send under the closed one (`worker::Shared::start_of`), so a target that
//! holds requests back shows in the time to first token exactly as in the latency (wrk2's
//! coordinated-omission correction):
//! - the time to the response's first byte (the read that brought its head);
//! - the time to its first event: in `sse` mode the first event dispatched, in `llm` mode the
//!   first chunk that carries a token (`llm::is_token`), in `chunks` mode the first read that
//!   brought body bytes;
//! - the gap between each event and the previous one of the same stream (inter-token latency);
//!   events that arrive in one read share its instant, so their gaps are zero, as the client
//!   saw them;
//! - at a complete end, the stream's duration and its rate: events after the first over the
//!   time from the first to the last;
//! - for an event that carries its sender's clock (a `: sent <ns>` comment, `sse`), the time
//!   from that stamp to the read that brought it: the event's one-way delay, what an
//!   intermediary adds to each event when measured through it and beside it. The read's
//!   instant is put on the wall clock when a stamped event arrives.
//!
//! Gaps and first events are recorded as they happen, for every stream, also one that later
//! stalls or breaks: they were seen. Durations and rates are of complete streams only.
//!
//! How a stream ends, beside the HTTP classes (`worker` counts each request once):
//! - no event for the stall time after the head, or after the last event → `stream_stalled`
//!   (the read is abandoned and the connection closed: an endless event or a server that went
//!   quiet cannot hold the generator);
//! - the body ended, framed right, inside an event or (LLM) without `data: [DONE]` →
//!   `stream_incomplete`;
//! - a 2xx that is not `text/event-stream` (`sse`, `llm`), or an event past the parser's limit
//!   (`MAX_EVENT`) → `not_event_stream`.
//!
//! Only the HTTP/1.1 client reads streams for now (`--stream` with `--http2` is refused).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gatebench_model::{LatencySummary, Outcome, RateSummary, StreamReport};
use hdrhistogram::Histogram;

use crate::llm::{self, DONE};
use crate::sse::SseParser;
use crate::stats::{add, new_histogram, new_sparse_histogram, record, summarize, LatencyHistogram};

/// The most data one event may carry (256 KiB); a larger one is `not_event_stream`. A
/// connection's parser holds at most this much, whatever a server sends. Hard-coded: a
/// chat-completion chunk is a few hundred bytes, and an SSE feed's events rarely pass kilobytes.
pub(crate) const MAX_EVENT: usize = 256 * 1024;

/// Highest rate a histogram keeps, milli-events per second (a billion events a second).
const MAX_RATE_MILLI: u64 = 1_000_000_000_000;

/// How a response is read as a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamMode {
    /// A `text/event-stream`: events as the WHATWG format dispatches them.
    Sse,
    /// OpenAI-style chat completions streamed as events: tokens are chunks with content, and
    /// the stream must end with `data: [DONE]`.
    Llm,
    /// Any body (chunked, by length or until close): each read that brings body bytes is one
    /// event.
    Chunks,
}

impl StreamMode {
    /// The name in records and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            StreamMode::Sse => "sse",
            StreamMode::Llm => "llm",
            StreamMode::Chunks => "chunks",
        }
    }

    /// What one event is called.
    pub fn unit(self) -> &'static str {
        match self {
            StreamMode::Sse => "events",
            StreamMode::Llm => "tokens",
            StreamMode::Chunks => "chunks",
        }
    }
}

/// The stream mode and its stall time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamSpec {
    /// How responses are read.
    pub mode: StreamMode,
    /// No event for this long (after the head, or after the last event) is a stall.
    pub stall: Duration,
}

/// The stream figures of one phase, by one worker or merged.
#[derive(Debug, Clone)]
pub(crate) struct StreamStats {
    pub ttfb: LatencyHistogram,
    pub first_event: LatencyHistogram,
    pub inter_event: LatencyHistogram,
    pub duration: LatencyHistogram,
    /// Stamped events: from the sender's stamp to their arrival.
    pub event_delay: LatencyHistogram,
    /// Completed streams' rates, milli-events per second.
    pub rate: Histogram<u64>,
    pub events: u64,
    pub completed: u64,
}

impl Default for StreamStats {
    fn default() -> Self {
        let mut rate = Histogram::new_with_bounds(1, 2, 3).expect("constant bounds are valid");
        rate.auto(true);
        StreamStats {
            ttfb: new_histogram(),
            first_event: new_histogram(),
            inter_event: new_histogram(),
            duration: new_sparse_histogram(),
            event_delay: new_histogram(),
            rate,
            events: 0,
            completed: 0,
        }
    }
}

impl StreamStats {
    /// Adds `other` in: exact, bucket by bucket.
    pub(crate) fn merge(&mut self, other: &StreamStats) {
        add(&mut self.ttfb, &other.ttfb);
        add(&mut self.first_event, &other.first_event);
        add(&mut self.inter_event, &other.inter_event);
        add(&mut self.duration, &other.duration);
        add(&mut self.event_delay, &other.event_delay);
        self.rate
            .add(&other.rate)
            .expect("an auto-resizing histogram takes any value");
        self.events += other.events;
        self.completed += other.completed;
    }

    /// The record's section, over a measurement of `seconds`.
    pub(crate) fn report(&self, spec: StreamSpec, seconds: f64) -> StreamReport {
        let s = |h: &LatencyHistogram| -> LatencySummary { summarize(h) };
        StreamReport {
            mode: spec.mode.name().into(),
            unit: spec.mode.unit().into(),
            stall_ms: spec.stall.as_secs_f64() * 1e3,
            completed: self.completed,
            events: self.events,
            events_per_s: if seconds > 0.0 {
                self.events as f64 / seconds
            } else {
                0.0
            },
            time_to_first_byte: s(&self.ttfb),
            time_to_first_event: s(&self.first_event),
            inter_event: s(&self.inter_event),
            duration: s(&self.duration),
            event_delay: (!self.event_delay.is_empty()).then(|| s(&self.event_delay)),
            events_per_s_per_stream: RateSummary::of(&self.rate),
        }
    }
}

/// The two phases' stream figures of one worker, shared by its connections (one thread).
pub(crate) type StreamBook = Rc<RefCell<[StreamStats; 2]>>;

/// One connection's reading of its streams: the parser, kept from response to response, and
/// the timing of the stream under way.
#[derive(Debug)]
pub(crate) struct StreamWatch {
    spec: StreamSpec,
    parser: SseParser,
    book: StreamBook,
    phase: usize,
    /// The request's start: its intended send time (open model) or its send.
    start: Instant,
    /// When the head arrived, or the last event did: the stall time runs from here.
    last: Instant,
    first_event: Option<Instant>,
    /// The last token (LLM) or event: where the next gap starts.
    last_event: Option<Instant>,
    events: u64,
    /// LLM: `data: [DONE]` came.
    done: bool,
    /// Chunks: the instant of the read whose bytes were last counted (one event per read).
    last_read: Option<Instant>,
    /// The stamps of the events of the read being looked at (kept for its room).
    stamps: Vec<u64>,
}

impl StreamWatch {
    /// A watch recording into `book`.
    pub(crate) fn new(spec: StreamSpec, book: StreamBook) -> StreamWatch {
        let now = Instant::now();
        StreamWatch {
            spec,
            parser: SseParser::new(MAX_EVENT),
            book,
            phase: 1,
            start: now,
            last: now,
            first_event: None,
            last_event: None,
            events: 0,
            done: false,
            last_read: None,
            stamps: Vec::new(),
        }
    }

    /// A new request of phase `phase` (0 warm-up, 1 measurement), started at `start`.
    pub(crate) fn begin(&mut self, phase: usize, start: Instant) {
        self.parser.reset();
        self.phase = phase;
        self.start = start;
        self.first_event = None;
        self.last_event = None;
        self.events = 0;
        self.done = false;
        self.last_read = None;
    }

    /// A 2xx head arrived at `at`, a `text/event-stream` or not: the stream starts, or it is
    /// not one.
    pub(crate) fn head(&mut self, at: Instant, event_stream: bool) -> Result<(), Outcome> {
        self.last = at;
        record(
            &mut self.book.borrow_mut()[self.phase].ttfb,
            at.saturating_duration_since(self.start),
        );
        match self.spec.mode {
            StreamMode::Chunks => Ok(()),
            StreamMode::Sse | StreamMode::Llm => {
                if event_stream {
                    Ok(())
                } else {
                    Err(Outcome::NotEventStream)
                }
            }
        }
    }

    /// When the stream counts as stalled if nothing more comes.
    pub(crate) fn stall_at(&self) -> Instant {
        self.last + self.spec.stall
    }

    /// Body bytes that arrived at `at` (the read that brought them).
    pub(crate) fn body(&mut self, bytes: &[u8], at: Instant) -> Result<(), Outcome> {
        if bytes.is_empty() {
            return Ok(());
        }
        if self.spec.mode == StreamMode::Chunks {
            if self.last_read != Some(at) {
                self.last_read = Some(at);
                self.event(at);
            }
            return Ok(());
        }
        let llm_mode = self.spec.mode == StreamMode::Llm;
        let mut tokens = 0u32;
        let mut others = 0u32;
        let mut done = self.done;
        let stamps = &mut self.stamps;
        stamps.clear();
        let parsed = self.parser.feed(bytes, |e| {
            if let Some(sent) = e.sent {
                stamps.push(sent);
            }
            if !llm_mode || (!done && llm::is_token(e.data)) {
                tokens += 1;
            } else {
                if e.data == DONE {
                    done = true;
                }
                others += 1;
            }
        });
        self.done = done;
        // Every event of one read arrived at its instant.
        for _ in 0..tokens {
            self.event(at);
        }
        if others > 0 {
            // Not a token, but the stream is alive.
            self.last = at;
        }
        if !self.stamps.is_empty() {
            let arrived = unix_ns_at(at);
            let delay = &mut self.book.borrow_mut()[self.phase].event_delay;
            for &sent in &self.stamps {
                record(delay, Duration::from_nanos(arrived.saturating_sub(sent)));
            }
        }
        parsed.map_err(|_| Outcome::NotEventStream)
    }

    /// One event (token) at `at`.
    fn event(&mut self, at: Instant) {
        let mut book = self.book.borrow_mut();
        let st = &mut book[self.phase];
        match self.last_event {
            None => {
                record(
                    &mut st.first_event,
                    at.saturating_duration_since(self.start),
                );
                self.first_event = Some(at);
            }
            Some(prev) => record(&mut st.inter_event, at.saturating_duration_since(prev)),
        }
        st.events += 1;
        self.events += 1;
        self.last_event = Some(at);
        self.last = at;
    }

    /// The body ended at `at`, framed right: the stream is complete, or it is not.
    pub(crate) fn end(&mut self, at: Instant) -> Result<(), Outcome> {
        let complete = match self.spec.mode {
            StreamMode::Chunks => true,
            StreamMode::Sse => !self.parser.mid_event(),
            StreamMode::Llm => !self.parser.mid_event() && self.done,
        };
        if !complete {
            return Err(Outcome::StreamIncomplete);
        }
        let mut book = self.book.borrow_mut();
        let st = &mut book[self.phase];
        st.completed += 1;
        record(&mut st.duration, at.saturating_duration_since(self.start));
        if let (Some(first), Some(last)) = (self.first_event, self.last_event) {
            let span = last.saturating_duration_since(first).as_secs_f64();
            if self.events >= 2 && span > 0.0 {
                let milli = ((self.events - 1) as f64 / span * 1e3).round() as u64;
                st.rate
                    .record(milli.clamp(1, MAX_RATE_MILLI))
                    .expect("an auto-resizing histogram takes any value");
            }
        }
        Ok(())
    }
}

/// `at` on the wall clock, nanoseconds since the Unix epoch: now, less the time since `at`.
fn unix_ns_at(at: Instant) -> u64 {
    let (now, wall) = (Instant::now(), SystemTime::now());
    let since_epoch = wall.duration_since(UNIX_EPOCH).unwrap_or_default();
    since_epoch
        .saturating_sub(now.saturating_duration_since(at))
        .as_nanos()
        .try_into()
        .unwrap_or(u64::MAX)
}

/// Whether a Content-Type is `text/event-stream` (parameters allowed, case ignored).
pub(crate) fn is_event_stream(value: &[u8]) -> bool {
    let media = value.split(|b| *b == b';').next().unwrap_or_default();
    media
        .trim_ascii()
        .eq_ignore_ascii_case(b"text/event-stream")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(mode: StreamMode) -> (StreamWatch, StreamBook) {
        let book: StreamBook = Rc::default();
        let spec = StreamSpec {
            mode,
            stall: Duration::from_secs(1),
        };
        (StreamWatch::new(spec, book.clone()), book)
    }

    #[test]
    fn content_types() {
        assert!(is_event_stream(b"text/event-stream"));
        assert!(is_event_stream(b"Text/Event-Stream; charset=utf-8"));
        assert!(!is_event_stream(b"text/plain"));
        assert!(!is_event_stream(b"text/event-streamx"));
    }

    #[test]
    fn first_token_gaps_and_rate_from_the_start() {
        let (mut w, book) = watch(StreamMode::Llm);
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        w.begin(1, t0);
        w.head(ms(5), true).unwrap();
        // A role chunk is no token; three tokens, two in one read; then [DONE].
        w.body(
            b"data: {\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}\n\n",
            ms(10),
        )
        .unwrap();
        w.body(b"data: {\"delta\":{\"content\":\"a\"}}\n\n", ms(200))
            .unwrap();
        w.body(
            b"data: {\"delta\":{\"content\":\"b\"}}\n\ndata: {\"delta\":{\"content\":\"c\"}}\n\n",
            ms(220),
        )
        .unwrap();
        w.body(b"data: [DONE]\n\n", ms(221)).unwrap();
        w.end(ms(221)).unwrap();
        let b = book.borrow();
        let st = &b[1];
        assert_eq!(st.events, 3);
        assert_eq!(st.completed, 1);
        let near = |h: &LatencyHistogram, ms: f64| (h.max() as f64 / 1e6 - ms).abs() < 0.5;
        assert!(near(&st.ttfb, 5.0));
        assert!(near(&st.first_event, 200.0) && st.first_event.len() == 1);
        assert_eq!(st.inter_event.len(), 2);
        assert!(near(&st.inter_event, 20.0) && st.inter_event.min() <= 1);
        assert!(near(&st.duration, 221.0));
        // Two tokens after the first, over 20 ms: 100 tokens/s.
        assert!(
            (st.rate.max() as f64 / 1e3 - 100.0).abs() < 0.5,
            "{}",
            st.rate.max()
        );
    }

    #[test]
    fn stamped_events_are_timed_from_their_stamp() {
        let (mut w, book) = watch(StreamMode::Llm);
        let t0 = Instant::now();
        w.begin(1, t0);
        w.head(t0, true).unwrap();
        // Two tokens in one read that arrived 3 ms after t0, stamped 5 and 2 ms before it; an
        // unstamped token; a stamp from the future (another host's clock) counts as zero.
        let at = t0 + Duration::from_millis(3);
        let wall = unix_ns_at(at);
        let stream = format!(
            ": sent {}\ndata: {{\"content\":\"a\"}}\n\n: sent {}\ndata: {{\"content\":\"b\"}}\n\n",
            wall - 5_000_000,
            wall - 2_000_000
        );
        w.body(stream.as_bytes(), at).unwrap();
        w.body(b"data: {\"content\":\"c\"}\n\n", at).unwrap();
        let future = format!(
            ": sent {}\ndata: {{\"content\":\"d\"}}\n\n",
            wall + 60_000_000_000
        );
        w.body(future.as_bytes(), at).unwrap();
        let b = book.borrow();
        let d = &b[1].event_delay;
        assert_eq!(d.len(), 3, "the stamped events only");
        let ms = |v: u64| v as f64 / 1e6;
        assert!((ms(d.max()) - 5.0).abs() < 0.5, "{}", ms(d.max()));
        assert!(ms(d.min()) < 0.01, "{}", ms(d.min()));
        assert_eq!(b[1].events, 4);
        let r = b[1].report(
            StreamSpec {
                mode: StreamMode::Llm,
                stall: Duration::from_secs(1),
            },
            1.0,
        );
        assert_eq!(r.event_delay.map(|s| s.count), Some(3));
        // Without stamps, the record has no such figure.
        let (_, plain) = watch(StreamMode::Llm);
        let r = plain.borrow()[1].report(
            StreamSpec {
                mode: StreamMode::Llm,
                stall: Duration::from_secs(1),
            },
            1.0,
        );
        assert!(r.event_delay.is_none());
    }

    #[test]
    fn incomplete_streams_and_non_streams() {
        let t0 = Instant::now();
        let (mut w, book) = watch(StreamMode::Llm);
        w.begin(1, t0);
        w.head(t0, true).unwrap();
        w.body(b"data: {\"content\":\"a\"}\n\n", t0).unwrap();
        assert_eq!(w.end(t0), Err(Outcome::StreamIncomplete), "no [DONE]");
        w.begin(1, t0);
        w.body(b"data: [DONE]\n\ndata: {\"con", t0).unwrap();
        assert_eq!(w.end(t0), Err(Outcome::StreamIncomplete), "cut mid-event");
        assert_eq!(w.head(t0, false), Err(Outcome::NotEventStream));
        assert_eq!(w.head(t0, false), Err(Outcome::NotEventStream));
        assert_eq!(book.borrow()[1].completed, 0);
        // Chunks: any body, one event per read, and any end is complete.
        let (mut w, book) = watch(StreamMode::Chunks);
        w.begin(0, t0);
        w.head(t0, false).unwrap();
        w.body(b"abc", t0).unwrap();
        w.body(b"def", t0).unwrap();
        w.body(b"g", t0 + Duration::from_millis(3)).unwrap();
        w.end(t0 + Duration::from_millis(3)).unwrap();
        assert_eq!(book.borrow()[0].events, 2);
        assert_eq!(book.borrow()[0].completed, 1);
    }

    #[test]
    fn an_oversized_event_is_not_an_event_stream() {
        let (mut w, _) = watch(StreamMode::Sse);
        let t0 = Instant::now();
        w.begin(1, t0);
        let big = vec![b'x'; 64 * 1024];
        w.body(b"data: ", t0).unwrap();
        let mut r = Ok(());
        for _ in 0..5 {
            r = w.body(&big, t0);
        }
        assert_eq!(r, Err(Outcome::NotEventStream));
    }
}
