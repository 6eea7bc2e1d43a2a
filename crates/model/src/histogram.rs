//! Latency histograms as a record carries them, and the summaries computed from them.
//!
//! A record keeps its histograms losslessly so that records of several load generators (the
//! shards of one run) merge into exactly the figures one generator would have printed:
//! HdrHistograms add bucket by bucket, percentiles never get averaged. The text form is the
//! one HdrHistogram's own interval logs use: the V2 compressed encoding (deflate), base64
//! (the `Interval_Compressed_Histogram` column of a `.hlog` line, readable by
//! `org.HdrHistogram.Histogram.fromString` and the Rust crate's `Deserializer`).
//!
//! The summaries ([`summarize`], [`summarize_censored`]) live here rather than in the load
//! generator for the same reason: a run and a merge of shards must compute them the same way.
//! Values are nanoseconds, with three significant digits, from 1 ns to one hour; larger values
//! saturate at the top rather than being dropped.

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::{LatencySummary, Percentile, PERCENTILES};

/// Highest trackable latency: one hour, in nanoseconds.
pub const HIGHEST_NS: u64 = 3_600_000_000_000;

/// A latency histogram in nanoseconds.
pub type LatencyHistogram = Histogram<u64>;

/// A histogram in a record could not be read back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistogramError {
    /// The text is not base64.
    #[error("a histogram is not base64")]
    Base64,
    /// The bytes are not an HdrHistogram encoding.
    #[error("a histogram does not decode ({0})")]
    Decode(String),
}

/// A new empty latency histogram with gatebench's bounds.
pub fn new_histogram() -> LatencyHistogram {
    Histogram::new_with_bounds(1, HIGHEST_NS, 3).expect("constant bounds are valid")
}

/// `h` in HdrHistogram's V2 compressed encoding, base64: the form a record carries.
pub fn encode(h: &LatencyHistogram) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("serializing a histogram to memory cannot fail");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Reads back what [`encode`] wrote (or any V2 encoding, compressed or not, base64). The
/// histogram grows to hold whatever it is added to, so histograms decoded from several records
/// add without loss.
pub fn decode(text: &str) -> Result<LatencyHistogram, HistogramError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|_| HistogramError::Base64)?;
    let mut h: LatencyHistogram = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| HistogramError::Decode(format!("{e:?}")))?;
    h.auto(true);
    Ok(h)
}

/// Adds `from` into `into` bucket by bucket (exact; `into` grows when it must).
pub fn add(into: &mut LatencyHistogram, from: &LatencyHistogram) {
    if into.add(from).is_err() {
        into.auto(true);
        into.add(from)
            .expect("an auto-resizing histogram of the same precision takes any other");
    }
}

/// Summarises a histogram in milliseconds.
pub fn summarize(h: &LatencyHistogram) -> LatencySummary {
    let ms = |ns: u64| ns as f64 / 1e6;
    if h.is_empty() {
        return LatencySummary {
            count: 0,
            percentiles: PERCENTILES
                .iter()
                .map(|p| Percentile {
                    p: *p,
                    ms: 0.0,
                    lower_bound: false,
                })
                .collect(),
            ..LatencySummary::default()
        };
    }
    LatencySummary {
        count: h.len(),
        censored: 0,
        min_ms: ms(h.min()),
        mean_ms: h.mean() / 1e6,
        stdev_ms: h.stdev() / 1e6,
        max_ms: ms(h.max()),
        percentiles: PERCENTILES
            .iter()
            .map(|p| Percentile {
                p: *p,
                ms: ms(if *p >= 100.0 {
                    h.max()
                } else {
                    h.value_at_quantile(p / 100.0)
                }),
                lower_bound: false,
            })
            .collect(),
    }
}

/// Summarises `answered` latencies together with `censored` ones (requests that never got an
/// answer, at the time they had waited, which is a lower bound of their latency). A percentile
/// is marked as a lower bound when it falls on censored values: when fewer answered values than
/// the percentile's rank lie at or below it, some censored value below it could really be
/// above it, so the true percentile is at least, not exactly, that value.
pub fn summarize_censored(
    answered: &LatencyHistogram,
    censored: &LatencyHistogram,
) -> LatencySummary {
    if censored.is_empty() {
        return summarize(answered);
    }
    let mut all = new_histogram();
    add(&mut all, answered);
    add(&mut all, censored);
    let mut s = summarize(&all);
    s.censored = censored.len();
    let n = all.len();
    for pt in &mut s.percentiles {
        let ns = (pt.ms * 1e6).round() as u64;
        let rank = if pt.p >= 100.0 {
            n
        } else {
            ((pt.p / 100.0) * n as f64).ceil().max(1.0) as u64
        };
        let answered_below = if answered.is_empty() {
            0
        } else {
            answered.count_between(0, ns)
        };
        pt.lower_bound = answered_below < rank;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_is_lossless() {
        let mut h = new_histogram();
        for i in 1..=10_000u64 {
            h.record(i * 7919 % 3_000_000_000 + 1).unwrap();
        }
        let back = decode(&encode(&h)).unwrap();
        assert_eq!(back, h);
        assert_eq!(summarize(&back), summarize(&h));
        assert!(decode("not base64!").is_err());
        assert!(decode("aGVsbG8=").is_err());
    }

    #[test]
    fn a_sparse_histogram_adds_into_a_full_one_and_back() {
        let mut sparse = Histogram::<u64>::new_with_bounds(1, 2, 3).unwrap();
        sparse.auto(true);
        sparse.record(5_000_000_000).unwrap();
        let mut full = decode(&encode(&new_histogram())).unwrap();
        add(&mut full, &decode(&encode(&sparse)).unwrap());
        assert_eq!(full.len(), 1);
        assert!(full.max() >= 4_990_000_000);
    }
}
