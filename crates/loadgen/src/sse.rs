//! The server-sent event stream format, read as it arrives: bytes in, events out (WHATWG HTML
//! Living Standard, §9.2.6 "Interpreting an event stream").
//!
//! The rules followed:
//! - lines end in CRLF, LF or CR, and a CRLF split between two reads is one line end;
//! - a UTF-8 byte order mark at the very start of the stream is skipped;
//! - an empty line dispatches the event; a line starting with `:` is a comment; otherwise the
//!   field name runs to the first `:` (the whole line when there is none) and the value follows
//!   it, one leading space removed;
//! - `data` appends its value and a LF to the data buffer, `event` sets the type, `id` sets the
//!   last event id (unless the value holds NUL), `retry` and unknown fields are ignored (we do
//!   not reconnect);
//! - an event is dispatched only when its data buffer is not empty, with its last LF removed;
//!   the type and data are reset at every empty line.
//!
//! One addition of gatebench's, which every other reader ignores as the comment it is: a
//! comment line `: sent <digits>` (one space after the colon optional, nothing after the
//! digits, at most [`MAX_NAME`] bytes) is the sender's clock when it wrote the event, in
//! nanoseconds since the Unix epoch ([`Event::sent`]): `serve echo --chat-stamp` writes it, and
//! `stream` times each stamped event from it to its arrival. Like the type, it belongs to the
//! event being read and is reset at every empty line; the last one before the event wins.
//!
//! What it refuses, because a load generator must outlive a hostile server: an event whose
//! data grows past the parser's limit ([`SseError::EventTooLarge`]) — the parser holds at most
//! that much, however long a line or an event runs. The type and id are cut at
//! [`MAX_NAME`] bytes (they are only looked at, never echoed). It works on bytes and does not
//! decode UTF-8: the fields it looks at are ASCII, and the data is the caller's to read.
//!
//! It has no I/O and no clock: whether a stream stalled, and when each event came, is the
//! caller's business (`stream`).

use memchr::memchr2;

/// Longest event type and last event id kept; longer ones are cut (see the module note).
pub(crate) const MAX_NAME: usize = 64;

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// An event stream that cannot be read on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SseError {
    /// An event's data passed the parser's limit before the event ended.
    EventTooLarge,
}

/// One dispatched event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Event<'a> {
    /// Its type; empty for the default `message`.
    pub kind: &'a [u8],
    /// Its data, lines joined by LF, without the last LF.
    pub data: &'a [u8],
    /// The last event id seen so far in the stream (it persists across events).
    pub id: &'a [u8],
    /// The sender's stamp, nanoseconds since the Unix epoch: a `: sent <digits>` comment line
    /// read since the last empty line (see the module note).
    pub sent: Option<u64>,
}

/// Which field the line being read sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Data,
    Event,
    Id,
    /// `retry` and unknown fields: read and dropped.
    Other,
}

/// Where in a line the parser is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// At the start of a line.
    LineStart,
    /// In a field name: its first bytes kept in `name`.
    Name,
    /// Right after the `:`: a single space here is dropped.
    ValueStart(Field),
    /// In a field's value.
    Value(Field),
    /// In a comment line.
    Comment,
}

/// An event stream parser. One per connection, reused from response to response
/// ([`SseParser::reset`]): its buffers keep their room.
#[derive(Debug)]
pub(crate) struct SseParser {
    state: State,
    /// The previous byte ended a line with CR: a LF now is that line end's second half.
    after_cr: bool,
    /// Bytes of the stream seen so far, up to the length of the byte order mark.
    bom_seen: usize,
    /// The field name read so far (enough of it to tell the known names apart).
    name: [u8; 6],
    name_len: usize,
    data: Vec<u8>,
    kind: Vec<u8>,
    /// A value for `id` being read (set as the last event id when its line ends).
    id_pending: Vec<u8>,
    /// The `id` value being read holds NUL (anywhere, also past the part kept).
    id_nul: bool,
    id: Vec<u8>,
    /// The comment line being read, its first [`MAX_NAME`] bytes, and whether it ran longer.
    comment: Vec<u8>,
    comment_long: bool,
    /// The stamp of the event being read (a `: sent <digits>` comment).
    sent: Option<u64>,
    /// A field line was read since the last empty line: the stream is inside an event.
    in_event: bool,
    /// The longest data buffer allowed.
    max_data: usize,
}

impl SseParser {
    /// A parser that holds at most `max_data` bytes of an event's data.
    pub(crate) fn new(max_data: usize) -> SseParser {
        SseParser {
            state: State::LineStart,
            after_cr: false,
            bom_seen: 0,
            name: [0; 6],
            name_len: 0,
            data: Vec::new(),
            kind: Vec::new(),
            id_pending: Vec::new(),
            id_nul: false,
            id: Vec::new(),
            comment: Vec::new(),
            comment_long: false,
            sent: None,
            in_event: false,
            max_data,
        }
    }

    /// Ready for a new stream; the buffers keep their room.
    pub(crate) fn reset(&mut self) {
        self.state = State::LineStart;
        self.after_cr = false;
        self.bom_seen = 0;
        self.name_len = 0;
        self.data.clear();
        self.kind.clear();
        self.id_pending.clear();
        self.id.clear();
        self.comment.clear();
        self.comment_long = false;
        self.sent = None;
        self.in_event = false;
    }

    /// Whether the stream, were it to end now, would end inside an event: a line not ended, or
    /// fields read since the last empty line (such an event is never dispatched).
    pub(crate) fn mid_event(&self) -> bool {
        // A part of what may be a byte order mark is a line begun.
        self.in_event || self.state != State::LineStart || (1..BOM.len()).contains(&self.bom_seen)
    }

    /// Reads `bytes`, the next part of the stream, calling `on_event` for each event it
    /// completes, in order.
    pub(crate) fn feed(
        &mut self,
        mut bytes: &[u8],
        mut on_event: impl FnMut(Event<'_>),
    ) -> Result<(), SseError> {
        // The byte order mark, possibly split between reads.
        while self.bom_seen < BOM.len() {
            let Some(&b) = bytes.first() else {
                return Ok(());
            };
            if b != BOM[self.bom_seen] {
                // Not a mark after all: the bytes taken for one are the stream's first.
                let seen = self.bom_seen;
                self.bom_seen = BOM.len();
                self.lines(&BOM[..seen], &mut on_event)?;
                break;
            }
            self.bom_seen += 1;
            bytes = &bytes[1..];
        }
        self.lines(bytes, &mut on_event)
    }

    /// Reads `bytes` past the byte order mark.
    fn lines(
        &mut self,
        mut bytes: &[u8],
        on_event: &mut impl FnMut(Event<'_>),
    ) -> Result<(), SseError> {
        while let Some(&b) = bytes.first() {
            if std::mem::take(&mut self.after_cr) && b == b'\n' {
                bytes = &bytes[1..];
                continue;
            }
            match self.state {
                State::LineStart => {
                    bytes = &bytes[1..];
                    match b {
                        b'\r' | b'\n' => {
                            self.after_cr = b == b'\r';
                            self.dispatch(on_event);
                        }
                        b':' => {
                            self.comment.clear();
                            self.comment_long = false;
                            self.state = State::Comment;
                        }
                        _ => {
                            self.name[0] = b;
                            self.name_len = 1;
                            self.state = State::Name;
                        }
                    }
                }
                State::Name => {
                    bytes = &bytes[1..];
                    match b {
                        b':' => {
                            let f = self.start_value();
                            self.state = State::ValueStart(f);
                        }
                        b'\r' | b'\n' => {
                            self.after_cr = b == b'\r';
                            // A name alone: the field with an empty value.
                            let f = self.start_value();
                            self.end_line(f)?;
                        }
                        _ => {
                            if self.name_len < self.name.len() {
                                self.name[self.name_len] = b;
                            }
                            self.name_len = self.name_len.saturating_add(1);
                        }
                    }
                }
                State::ValueStart(f) => {
                    self.state = State::Value(f);
                    if b == b' ' {
                        bytes = &bytes[1..];
                    }
                }
                State::Value(f) => {
                    let end = memchr2(b'\r', b'\n', bytes).unwrap_or(bytes.len());
                    self.value(f, &bytes[..end])?;
                    bytes = &bytes[end..];
                    if let Some(&e) = bytes.first() {
                        bytes = &bytes[1..];
                        self.after_cr = e == b'\r';
                        self.end_line(f)?;
                    }
                }
                State::Comment => {
                    let end = memchr2(b'\r', b'\n', bytes).unwrap_or(bytes.len());
                    self.comment_long |= self.comment.len() + end > MAX_NAME;
                    keep_cut(&mut self.comment, &bytes[..end]);
                    bytes = &bytes[end..];
                    if let Some(&e) = bytes.first() {
                        bytes = &bytes[1..];
                        self.after_cr = e == b'\r';
                        self.state = State::LineStart;
                        if !self.comment_long {
                            if let Some(sent) = stamp(&self.comment) {
                                self.sent = Some(sent);
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The name has ended: its field, with the value it replaces cleared (`event` and `id`
    /// set, `data` appends).
    fn start_value(&mut self) -> Field {
        let f = self.field();
        match f {
            Field::Event => self.kind.clear(),
            Field::Id => {
                self.id_pending.clear();
                self.id_nul = false;
            }
            Field::Data | Field::Other => {}
        }
        f
    }

    /// The field named by the name read.
    fn field(&self) -> Field {
        match &self.name[..self.name_len.min(self.name.len())] {
            b"data" if self.name_len == 4 => Field::Data,
            b"event" if self.name_len == 5 => Field::Event,
            b"id" if self.name_len == 2 => Field::Id,
            _ => Field::Other,
        }
    }

    /// Part of a field's value.
    fn value(&mut self, f: Field, part: &[u8]) -> Result<(), SseError> {
        match f {
            Field::Data => {
                // Room for the LF that ends the line too.
                if self.data.len() + part.len() + 1 > self.max_data {
                    return Err(SseError::EventTooLarge);
                }
                self.data.extend_from_slice(part);
            }
            Field::Event => keep_cut(&mut self.kind, part),
            Field::Id => {
                self.id_nul |= part.contains(&0);
                keep_cut(&mut self.id_pending, part);
            }
            Field::Other => {}
        }
        Ok(())
    }

    /// A field line ended.
    fn end_line(&mut self, f: Field) -> Result<(), SseError> {
        self.state = State::LineStart;
        self.in_event = true;
        match f {
            Field::Data => {
                if self.data.len() + 1 > self.max_data {
                    return Err(SseError::EventTooLarge);
                }
                self.data.push(b'\n');
            }
            Field::Event => {}
            Field::Id => {
                // An id holding NUL is ignored (the spec's rule).
                if !self.id_nul {
                    std::mem::swap(&mut self.id, &mut self.id_pending);
                }
                self.id_pending.clear();
            }
            Field::Other => {}
        }
        Ok(())
    }

    /// An empty line: the event, if it has data.
    fn dispatch(&mut self, on_event: &mut impl FnMut(Event<'_>)) {
        self.in_event = false;
        if !self.data.is_empty() {
            let data = &self.data[..self.data.len() - 1];
            on_event(Event {
                kind: &self.kind,
                data,
                id: &self.id,
                sent: self.sent,
            });
        }
        self.data.clear();
        self.kind.clear();
        self.sent = None;
    }
}

/// The stamp a comment's text (what follows its `:`) carries: `sent <digits>`, one leading
/// space allowed, digits that fit in a u64 and nothing after them.
pub(crate) fn stamp(comment: &[u8]) -> Option<u64> {
    let text = comment.strip_prefix(b" ").unwrap_or(comment);
    let digits = text.strip_prefix(b"sent ")?;
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// Appends `part` to `buf`, keeping at most [`MAX_NAME`] bytes.
fn keep_cut(buf: &mut Vec<u8>, part: &[u8]) {
    let room = MAX_NAME.saturating_sub(buf.len());
    buf.extend_from_slice(&part[..part.len().min(room)]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events of `stream` as (type, data, id) strings, and whether it ended mid-event.
    fn events(pieces: &[&[u8]]) -> (Vec<(String, String, String)>, bool) {
        let mut p = SseParser::new(1 << 16);
        let mut out = Vec::new();
        for piece in pieces {
            p.feed(piece, |e| {
                let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                out.push((s(e.kind), s(e.data), s(e.id)));
            })
            .unwrap();
        }
        (out, p.mid_event())
    }

    fn ev(kind: &str, data: &str, id: &str) -> (String, String, String) {
        (kind.into(), data.into(), id.into())
    }

    #[test]
    fn fields_comments_and_blank_lines() {
        let (got, mid) =
            events(&[b": hello\n\nevent: add\ndata: 73857293\nid: 7\n\ndata:x\ndata\n\n"]);
        assert_eq!(got, vec![ev("add", "73857293", "7"), ev("", "x\n", "7")]);
        assert!(!mid);
    }

    #[test]
    fn the_spec_examples() {
        // WHATWG §9.2.6: "data:test" and "data: test" are the same; two data lines join with LF.
        let (got, _) = events(&[b"data:test\n\ndata: test\n\ndata: YHOO\ndata: +2\ndata: 10\n\n"]);
        assert_eq!(
            got,
            vec![
                ev("", "test", ""),
                ev("", "test", ""),
                ev("", "YHOO\n+2\n10", "")
            ]
        );
        // Only one leading space is removed; an event without data is not dispatched.
        let (got, _) = events(&[b"data:  two\n\nevent: empty\n\n"]);
        assert_eq!(got, vec![ev("", " two", "")]);
    }

    #[test]
    fn every_line_end_and_a_crlf_split_between_reads() {
        for stream in [
            &b"data: a\r\ndata: b\r\n\r\n"[..],
            b"data: a\rdata: b\r\r",
            b"data: a\ndata: b\n\n",
            b"data: a\r\ndata: b\n\r",
        ] {
            let whole = events(&[stream]);
            assert_eq!(whole.0, vec![ev("", "a\nb", "")], "{stream:?}");
            // Cut at every place, and into single bytes: the same events.
            for at in 0..=stream.len() {
                assert_eq!(
                    events(&[&stream[..at], &stream[at..]]),
                    whole,
                    "{stream:?} at {at}"
                );
            }
            let bytes: Vec<&[u8]> = stream.chunks(1).collect();
            assert_eq!(events(&bytes), whole);
        }
        // CR then LF in the next read is one line end, not an empty line.
        let (got, mid) = events(&[b"data: a\r", b"\ndata: b\r\n", b"\r\n"]);
        assert_eq!(got, vec![ev("", "a\nb", "")]);
        assert!(!mid);
    }

    #[test]
    fn byte_order_mark_and_names_without_values() {
        let (got, _) = events(&[b"\xEF\xBB", b"\xBFdata: x\n\n"]);
        assert_eq!(got, vec![ev("", "x", "")]);
        // A second mark is not skipped: the line's name is then not `data`.
        let (got, _) = events(&[b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n"]);
        assert!(got.is_empty());
        // `data` alone is an empty data line: the event has data "" and is dispatched.
        let (got, _) = events(&[b"data\ndata\n\n"]);
        assert_eq!(got, vec![ev("", "\n", "")]);
        // Unknown fields and retry are ignored; `datax` is not `data`.
        let (got, _) = events(&[b"retry: 10\nfoo: bar\ndatax: no\n\n"]);
        assert!(got.is_empty());
    }

    #[test]
    fn ids_persist_and_nul_ids_are_ignored() {
        let (got, _) =
            events(&[b"id: 1\ndata: a\n\ndata: b\n\nid: x\0y\ndata: c\n\nid\ndata: d\n\n"]);
        assert_eq!(
            got,
            vec![
                ev("", "a", "1"),
                ev("", "b", "1"),
                ev("", "c", "1"),
                ev("", "d", "")
            ]
        );
    }

    #[test]
    fn sent_stamps_belong_to_their_event() {
        let mut p = SseParser::new(1024);
        let mut got = Vec::new();
        let stream: &[u8] = b": sent 1700000000123456789\ndata: a\n\ndata: b\n\n:sent 5\r\n: sent 7\ndata: c\n\n: sent 9\n\ndata: d\n\n: sent 1x\ndata: e\n\n: sent 99999999999999999999999\ndata: f\n\n";
        // Cut into single bytes: a stamp split between reads is read whole.
        for b in stream.chunks(1) {
            p.feed(b, |e| got.push((e.data.to_vec(), e.sent))).unwrap();
        }
        assert_eq!(
            got,
            vec![
                (b"a".to_vec(), Some(1_700_000_000_123_456_789)),
                (b"b".to_vec(), None),
                (b"c".to_vec(), Some(7)),
                // An empty line drops a stamp with no event to carry it.
                (b"d".to_vec(), None),
                (b"e".to_vec(), None),
                // Past u64: not a stamp.
                (b"f".to_vec(), None),
            ]
        );
        // A comment longer than the parser keeps is no stamp, whatever its start.
        let mut p = SseParser::new(1024);
        let long = format!(": sent {}\ndata: g\n\n", "1".repeat(MAX_NAME));
        let mut sent = Some(0);
        p.feed(long.as_bytes(), |e| sent = e.sent).unwrap();
        assert_eq!(sent, None);
    }

    #[test]
    fn a_stream_cut_mid_event_says_so() {
        assert!(events(&[b"data: a\n\ndata: b\n"]).1);
        assert!(events(&[b"data: a"]).1);
        assert!(events(&[b"event: x\n"]).1);
        assert!(events(&[b": comment"]).1);
        assert!(!events(&[b"data: a\n\n: comment\n"]).1);
    }

    #[test]
    fn an_endless_event_is_refused_at_the_limit() {
        let mut p = SseParser::new(100);
        let mut n = 0;
        // A long line in small reads: refused once it passes the limit, never held past it.
        let mut result = Ok(());
        for _ in 0..1000 {
            result = p.feed(b"data: xxxxxxxxxx", |_| n += 1);
            if result.is_err() {
                break;
            }
        }
        assert_eq!(result, Err(SseError::EventTooLarge));
        assert!(p.data.capacity() <= 128, "{}", p.data.capacity());
        // Many data lines of one event too.
        let mut p = SseParser::new(100);
        let line = b"data: 0123456789\n";
        let r = (0..20).try_for_each(|_| p.feed(line, |_| n += 1));
        assert_eq!(r, Err(SseError::EventTooLarge));
        assert_eq!(n, 0);
        // Long comments, types and unknown fields hold nothing.
        let mut p = SseParser::new(100);
        for _ in 0..1000 {
            p.feed(b": xxxxxxxxxxxxxxxxxxxx", |_| {}).unwrap();
        }
        p.feed(b"\nevent: ", |_| {}).unwrap();
        for _ in 0..1000 {
            p.feed(b"yyyyyyyyyy", |_| {}).unwrap();
        }
        p.feed(b"\ndata: z\n\n", |e| assert_eq!(e.kind.len(), MAX_NAME))
            .unwrap();
    }

    #[test]
    fn reset_starts_a_new_stream() {
        let mut p = SseParser::new(1024);
        p.feed(b"id: 9\nevent: e\ndata: half", |_| {}).unwrap();
        p.reset();
        assert!(!p.mid_event());
        let mut got = Vec::new();
        p.feed(b"data: new\n\n", |e| {
            got.push((e.kind.to_vec(), e.data.to_vec(), e.id.to_vec()))
        })
        .unwrap();
        assert_eq!(got, vec![(vec![], b"new".to_vec(), vec![])]);
    }
}
