//! The classes a scheduled request ends in.
//!
//! Every request the generator schedules ends in exactly one [`Outcome`]; the counts add up to
//! the number scheduled. The set is fixed and small so the hot path can count outcomes in a
//! plain array indexed by the enum (no allocation per failure, no string per error).

use std::fmt;

use serde::{Deserialize, Serialize};

/// How one scheduled request ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A complete 2xx response (and, when verification is on, the expected body).
    Ok,
    /// A complete response with a 1xx final status or a status outside 100..=599.
    StatusOther,
    /// A complete 3xx response.
    Status3xx,
    /// A complete 4xx response.
    Status4xx,
    /// A complete 5xx response.
    Status5xx,
    /// The target refused the TCP connection (ECONNREFUSED).
    ConnectRefused,
    /// The TCP connection was not established within the connect timeout.
    ConnectTimeout,
    /// Any other failure to establish the connection (unreachable, address errors).
    ConnectError,
    /// The TLS handshake failed (bad certificate, protocol mismatch, plain HTTP on a TLS port).
    TlsError,
    /// The peer reset the connection (ECONNRESET, EPIPE) while the request was outstanding.
    Reset,
    /// The peer closed the connection before the response was complete (truncated head or body).
    Incomplete,
    /// Another read or write error on an established connection.
    IoError,
    /// No complete response within the per-request timeout.
    Timeout,
    /// Sent, and still unanswered when the run ended, after waiting longer than every answered
    /// request of the run and at least a second (or the request timeout, if shorter), or in a
    /// run where nothing was answered: the target stalled. An error (unlike
    /// [`Outcome::InFlight`]).
    Unanswered,
    /// The response could not be parsed as HTTP (bad status line, bad framing), or (HTTP/1.1)
    /// the server sent bytes while no request was outstanding: after a complete response (that
    /// exchange's error), or before the next request on a kept connection was written (that
    /// request's error; it is not sent).
    ProtocolError,
    /// A 2xx response whose body differed from the expected one (verification on).
    BodyMismatch,
    /// HTTP/2: the server refused the stream (REFUSED_STREAM) before processing it.
    RefusedStream,
    /// HTTP/2: the stream was reset (RST_STREAM) with another code.
    StreamReset,
    /// HTTP/2: the connection went away (GOAWAY) with this stream unanswered.
    GoAway,
    /// Stream mode (`--stream`): a 2xx response whose stream went silent — no event (no chunk
    /// in `chunks` mode) for the stall time — before it ended. Counted once, when the stall
    /// timer fires; the connection is closed.
    StreamStalled,
    /// Stream mode: a 2xx response whose body ended, framed correctly, but whose stream did
    /// not: cut inside an event, or (LLM mode) without its `data: [DONE]`. A body cut off by the
    /// connection's close before its framing says it ended is `incomplete`, as without streams.
    StreamIncomplete,
    /// Stream mode (`sse`, `llm`): a 2xx response that is not an event stream (its
    /// Content-Type is not `text/event-stream`), or an event stream that cannot be read on (an
    /// event larger than the parser's limit).
    NotEventStream,
    /// Sent, and still outstanding when the run ended, but not long enough to call it a stall
    /// (see [`Outcome::Unanswered`]): it may well have been answered in time. Neither success
    /// nor failure.
    InFlight,
    /// Open model: its due time passed within the run, but no connection or HTTP/2 stream was
    /// free to send it before the run ended (the backlog). Counts as an error: the target did
    /// not keep up with the asked rate on the connections it was given.
    NeverSent,
}

impl Outcome {
    /// Every outcome, in report order.
    pub const ALL: [Outcome; 24] = [
        Outcome::Ok,
        Outcome::StatusOther,
        Outcome::Status3xx,
        Outcome::Status4xx,
        Outcome::Status5xx,
        Outcome::ConnectRefused,
        Outcome::ConnectTimeout,
        Outcome::ConnectError,
        Outcome::TlsError,
        Outcome::Reset,
        Outcome::Incomplete,
        Outcome::IoError,
        Outcome::Timeout,
        Outcome::Unanswered,
        Outcome::ProtocolError,
        Outcome::BodyMismatch,
        Outcome::RefusedStream,
        Outcome::StreamReset,
        Outcome::GoAway,
        Outcome::StreamStalled,
        Outcome::StreamIncomplete,
        Outcome::NotEventStream,
        Outcome::InFlight,
        Outcome::NeverSent,
    ];

    /// Number of outcome classes (the length of a counting array).
    pub const COUNT: usize = Outcome::ALL.len();

    /// Position in [`Outcome::ALL`], for counting arrays.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The stable machine name used in JSON and CSV (`connect_refused`, `status_5xx`, …).
    pub const fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::StatusOther => "status_other",
            Outcome::Status3xx => "status_3xx",
            Outcome::Status4xx => "status_4xx",
            Outcome::Status5xx => "status_5xx",
            Outcome::ConnectRefused => "connect_refused",
            Outcome::ConnectTimeout => "connect_timeout",
            Outcome::ConnectError => "connect_error",
            Outcome::TlsError => "tls_error",
            Outcome::Reset => "reset",
            Outcome::Incomplete => "incomplete",
            Outcome::IoError => "io_error",
            Outcome::Timeout => "timeout",
            Outcome::Unanswered => "unanswered",
            Outcome::ProtocolError => "protocol_error",
            Outcome::BodyMismatch => "body_mismatch",
            Outcome::RefusedStream => "refused_stream",
            Outcome::StreamReset => "stream_reset",
            Outcome::GoAway => "goaway",
            Outcome::StreamStalled => "stream_stalled",
            Outcome::StreamIncomplete => "stream_incomplete",
            Outcome::NotEventStream => "not_event_stream",
            Outcome::InFlight => "in_flight",
            Outcome::NeverSent => "never_sent",
        }
    }

    /// What a person reads in the text report.
    pub const fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::StatusOther => "other status",
            Outcome::Status3xx => "3xx responses",
            Outcome::Status4xx => "4xx responses",
            Outcome::Status5xx => "5xx responses",
            Outcome::ConnectRefused => "connect refused",
            Outcome::ConnectTimeout => "connect timeout",
            Outcome::ConnectError => "connect error",
            Outcome::TlsError => "TLS error",
            Outcome::Reset => "reset by peer",
            Outcome::Incomplete => "incomplete response",
            Outcome::IoError => "read/write error",
            Outcome::Timeout => "request timeout",
            Outcome::Unanswered => "unanswered at end (stalled)",
            Outcome::ProtocolError => "protocol error",
            Outcome::BodyMismatch => "body mismatch",
            Outcome::RefusedStream => "refused stream",
            Outcome::StreamReset => "stream reset",
            Outcome::GoAway => "GOAWAY",
            Outcome::StreamStalled => "stream stalled",
            Outcome::StreamIncomplete => "stream incomplete",
            Outcome::NotEventStream => "not an event stream",
            Outcome::InFlight => "in flight at end",
            Outcome::NeverSent => "never sent (backlog)",
        }
    }

    /// Whether the outcome counts as an error in Error %. `InFlight` is neither success nor
    /// error (the run ended first) and is left out of the denominator as well.
    pub const fn is_error(self) -> bool {
        !matches!(self, Outcome::Ok | Outcome::InFlight)
    }

    /// Whether a complete HTTP response was received (these are the requests with a latency).
    pub const fn has_response(self) -> bool {
        matches!(
            self,
            Outcome::Ok
                | Outcome::StatusOther
                | Outcome::Status3xx
                | Outcome::Status4xx
                | Outcome::Status5xx
                | Outcome::BodyMismatch
        )
    }

    /// The class of a complete response with this status code.
    pub const fn from_status(status: u16) -> Outcome {
        match status {
            200..=299 => Outcome::Ok,
            300..=399 => Outcome::Status3xx,
            400..=499 => Outcome::Status4xx,
            500..=599 => Outcome::Status5xx,
            _ => Outcome::StatusOther,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Counts per [`Outcome`]. Serialized as an object with every class present, so a reader never
/// has to guess whether a missing key means zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutcomeCounts {
    counts: [u64; Outcome::COUNT],
}

impl OutcomeCounts {
    /// Adds `n` requests to class `o`.
    #[inline]
    pub fn add(&mut self, o: Outcome, n: u64) {
        self.counts[o.index()] += n;
    }

    /// Removes `n` requests from class `o` (saturating at zero), as when a request is found to
    /// belong to another class once the whole run is known.
    #[inline]
    pub fn sub(&mut self, o: Outcome, n: u64) {
        let c = &mut self.counts[o.index()];
        *c = c.saturating_sub(n);
    }

    /// The count of class `o`.
    pub fn get(&self, o: Outcome) -> u64 {
        self.counts[o.index()]
    }

    /// Adds every count of `other` to `self` (merging workers, shards or phases).
    pub fn merge(&mut self, other: &OutcomeCounts) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
    }

    /// All requests scheduled: the sum of every class.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// [`OutcomeCounts::total`], or `None` when the sum does not fit in 64 bits (a record read
    /// from outside gatebench may say anything).
    pub fn checked_total(&self) -> Option<u64> {
        self.counts.iter().try_fold(0u64, |a, b| a.checked_add(*b))
    }

    /// Requests that ended in an error class.
    pub fn errors(&self) -> u64 {
        Outcome::ALL
            .iter()
            .filter(|o| o.is_error())
            .map(|o| self.get(*o))
            .sum()
    }

    /// Requests that received a complete response, whatever its status.
    pub fn responses(&self) -> u64 {
        Outcome::ALL
            .iter()
            .filter(|o| o.has_response())
            .map(|o| self.get(*o))
            .sum()
    }

    /// Error % as the seed reports define it: errors over requests that finished (in-flight
    /// requests at the end are neither). 0 when nothing finished.
    pub fn error_percent(&self) -> f64 {
        let finished = self.total() - self.get(Outcome::InFlight);
        if finished == 0 {
            0.0
        } else {
            100.0 * self.errors() as f64 / finished as f64
        }
    }

    /// Non-zero classes, in report order.
    pub fn nonzero(&self) -> impl Iterator<Item = (Outcome, u64)> + '_ {
        Outcome::ALL
            .iter()
            .map(|o| (*o, self.get(*o)))
            .filter(|(_, n)| *n > 0)
    }
}

impl Serialize for OutcomeCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(Outcome::COUNT))?;
        for o in Outcome::ALL {
            m.serialize_entry(o.name(), &self.get(o))?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for OutcomeCounts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = std::collections::BTreeMap::<String, u64>::deserialize(d)?;
        let mut out = OutcomeCounts::default();
        for (k, v) in map {
            let o = Outcome::ALL
                .iter()
                .find(|o| o.name() == k)
                .ok_or_else(|| serde::de::Error::custom(format!("unknown outcome class `{k}`")))?;
            out.add(*o, v);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_matches_position_in_all() {
        for (i, o) in Outcome::ALL.iter().enumerate() {
            assert_eq!(o.index(), i, "{o:?}");
        }
    }

    #[test]
    fn status_classes() {
        assert_eq!(Outcome::from_status(204), Outcome::Ok);
        assert_eq!(Outcome::from_status(301), Outcome::Status3xx);
        assert_eq!(Outcome::from_status(404), Outcome::Status4xx);
        assert_eq!(Outcome::from_status(503), Outcome::Status5xx);
        assert_eq!(Outcome::from_status(101), Outcome::StatusOther);
        assert_eq!(Outcome::from_status(600), Outcome::StatusOther);
    }

    #[test]
    fn error_percent_leaves_in_flight_out() {
        let mut c = OutcomeCounts::default();
        c.add(Outcome::Ok, 90);
        c.add(Outcome::Status5xx, 10);
        c.add(Outcome::InFlight, 50);
        assert_eq!(c.total(), 150);
        assert_eq!(c.errors(), 10);
        assert!((c.error_percent() - 10.0).abs() < 1e-9);
    }

    #[test]
    fn counts_round_trip_through_json_with_every_class() {
        let mut c = OutcomeCounts::default();
        c.add(Outcome::Timeout, 3);
        let j = serde_json::to_value(c).unwrap();
        assert_eq!(j.as_object().unwrap().len(), Outcome::COUNT);
        assert_eq!(j["timeout"], 3);
        let back: OutcomeCounts = serde_json::from_value(j).unwrap();
        assert_eq!(back, c);
        let bad = serde_json::json!({"ok": 1, "teapot": 2});
        assert!(serde_json::from_value::<OutcomeCounts>(bad).is_err());
    }
}
