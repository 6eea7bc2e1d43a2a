//! The figures of a streamed run (`gatebench load --stream`): server-sent event streams, an
//! LLM gateway's chat completions, or chunked bodies, timed event by event.
//!
//! What it holds: the time to the first byte and to the first event (token) of each stream,
//! from the request's intended send time under the open model as every latency is; the gaps
//! between consecutive events (inter-token latency); each completed stream's duration and its
//! rate of events; and the totals. The outcome classes of the streams (`stream_stalled`,
//! `stream_incomplete`, `not_event_stream`) are with every other class, in the phase's
//! `outcomes`.
//!
//! What it does not hold (yet): the histograms behind the summaries, so `gatebench merge`
//! leaves the section out of a merged record rather than average percentiles.

use serde::{Deserialize, Serialize};

use crate::latency::LatencySummary;

/// The measurement's stream figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamReport {
    /// `sse` (events of a `text/event-stream`), `llm` (OpenAI-style chat completions streamed
    /// as events), or `chunks` (each read of a body's bytes).
    pub mode: String,
    /// What one event is called in this mode: `events`, `tokens` or `chunks`.
    pub unit: String,
    /// A stream with no event for this long is `stream_stalled`, ms.
    pub stall_ms: f64,
    /// Streams that ended complete (`ok`).
    pub completed: u64,
    /// Events received in the measurement, over every stream (complete or not).
    pub events: u64,
    /// `events` over the measurement's duration.
    pub events_per_s: f64,
    /// From the intended send time (open model; the send, closed) to the response's first byte,
    /// every 2xx stream.
    pub time_to_first_byte: LatencySummary,
    /// From the intended send time to the first event (LLM mode: the first chunk with content,
    /// the first token), every stream that had one.
    pub time_to_first_event: LatencySummary,
    /// The gap between each event and the one before it in its stream (inter-token latency),
    /// every stream.
    pub inter_event: LatencySummary,
    /// From the intended send time to the stream's end, completed streams.
    pub duration: LatencySummary,
    /// Events that carried their sender's clock (a `: sent <ns>` comment, as
    /// `serve echo --chat-stamp` writes): from that stamp to the read that brought the event,
    /// one-way. Only when some did; across hosts the clocks' offset is in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_delay: Option<LatencySummary>,
    /// Each completed stream's rate: the events after its first over the time from its first
    /// event to its last (LLM: decode tokens per second). Streams of fewer than two events have
    /// none.
    pub events_per_s_per_stream: RateSummary,
}

/// A distribution of rates (events per second), from an HdrHistogram of milli-events per
/// second (three significant digits).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RateSummary {
    /// Streams with a rate.
    pub count: u64,
    /// Lowest, events/s.
    pub min: f64,
    /// Mean, events/s.
    pub mean: f64,
    /// Median, events/s.
    pub p50: f64,
    /// 90th percentile, events/s.
    pub p90: f64,
    /// 99th percentile, events/s.
    pub p99: f64,
    /// Highest, events/s.
    pub max: f64,
}

impl RateSummary {
    /// The summary of `h`, whose values are milli-events per second.
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> RateSummary {
        if h.is_empty() {
            return RateSummary::default();
        }
        let r = |v: u64| v as f64 / 1e3;
        RateSummary {
            count: h.len(),
            min: r(h.min()),
            mean: h.mean() / 1e3,
            p50: r(h.value_at_quantile(0.5)),
            p90: r(h.value_at_quantile(0.9)),
            p99: r(h.value_at_quantile(0.99)),
            max: r(h.max()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_summarised_in_events_per_second() {
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 1 << 40, 3).unwrap();
        for milli in [40_000u64, 50_000, 50_000, 60_000] {
            h.record(milli).unwrap();
        }
        let s = RateSummary::of(&h);
        assert_eq!(s.count, 4);
        assert!((s.p50 - 50.0).abs() < 0.1, "{s:?}");
        assert!(
            (s.min - 40.0).abs() < 0.1 && (s.max - 60.0).abs() < 0.1,
            "{s:?}"
        );
        assert_eq!(
            RateSummary::of(&hdrhistogram::Histogram::new(3).unwrap()).count,
            0
        );
    }
}
