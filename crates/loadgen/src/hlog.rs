//! HdrHistogram interval logs (`.hlog`): one compressed histogram per second, in the format
//! HdrHistogram's own tools read (`HistogramLogProcessor`, `hdr-plot`, the Rust crate's
//! `IntervalLogIterator`).
//!
//! Values are nanoseconds, the unit those tools assume by default. The untagged histograms are
//! the run's latency (corrected for coordinated omission in the open model); in the open model
//! a second histogram per interval carries the tag `uncorrected`.

use std::io::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;

use crate::stats::LatencyHistogram;

/// Writes the standard header lines: format version, start and base time, and the legend.
pub fn write_header(out: &mut dyn Write, start: SystemTime, comment: &str) -> io::Result<()> {
    let secs = start
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    writeln!(out, "#{comment}")?;
    writeln!(out, "#[Histogram log format version 1.3]")?;
    writeln!(out, "#[StartTime: {secs:.3} (seconds since epoch)]")?;
    writeln!(out, "#[BaseTime: {secs:.3} (seconds since epoch)]")?;
    writeln!(out, "#[MaxValueDivisor: 1000000.000]")?;
    writeln!(
        out,
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
    )
}

/// Appends one interval line. `start` is relative to the log's StartTime.
pub fn write_interval(
    out: &mut dyn Write,
    h: &LatencyHistogram,
    start: Duration,
    length: Duration,
    tag: Option<&str>,
) -> io::Result<()> {
    // The crate's writer produces exactly one line per histogram once the header is written
    // (above); a fresh writer per line keeps borrows local and writes no extra headers.
    let mut ser = V2DeflateSerializer::new();
    let mut out = out;
    let mut w = IntervalLogWriterBuilder::new()
        .with_max_value_divisor(1.0)
        .begin_log_with(&mut out, &mut ser)?;
    let tag = tag.and_then(Tag::new);
    w.write_histogram(h, start, length, tag)
        .map_err(|e| io::Error::other(format!("{e:?}")))?;
    Ok(())
}

/// Serialized size check used by tests: a histogram round-trips through the V2 deflate format.
#[cfg(test)]
fn round_trip(h: &LatencyHistogram) -> LatencyHistogram {
    use hdrhistogram::serialization::Serializer;
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .expect("serialize");
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut buf.as_slice())
        .expect("deserialize")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{new_histogram, record};
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    #[test]
    fn log_reads_back_with_the_standard_reader() {
        let mut h = new_histogram();
        for i in 1..=1000 {
            record(&mut h, Duration::from_micros(i));
        }
        assert_eq!(round_trip(&h), h);
        let mut out = Vec::new();
        write_header(&mut out, SystemTime::now(), "test").unwrap();
        write_interval(&mut out, &h, Duration::ZERO, Duration::from_secs(1), None).unwrap();
        write_interval(
            &mut out,
            &h,
            Duration::from_secs(1),
            Duration::from_secs(1),
            Some("uncorrected"),
        )
        .unwrap();
        let text = String::from_utf8(out.clone()).unwrap();
        assert_eq!(text.matches("MaxValueDivisor").count(), 1, "{text}");
        let mut intervals = 0;
        let mut tags = Vec::new();
        for entry in IntervalLogIterator::new(&out) {
            if let LogEntry::Interval(i) = entry.unwrap() {
                intervals += 1;
                tags.push(i.tag().map(|t| t.as_str().to_owned()));
                let decoded: LatencyHistogram = hdrhistogram::serialization::Deserializer::new()
                    .deserialize(&mut base64_decode(i.encoded_histogram()).as_slice())
                    .unwrap();
                assert_eq!(decoded.len(), 1000);
            }
        }
        assert_eq!(intervals, 2);
        assert_eq!(tags, vec![None, Some("uncorrected".to_owned())]);
    }

    fn base64_decode(s: &str) -> Vec<u8> {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = Vec::new();
        let mut acc = 0u32;
        let mut bits = 0;
        for c in s.bytes().filter(|c| *c != b'=') {
            let v = A.iter().position(|a| *a == c).unwrap() as u32;
            acc = (acc << 6) | v;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
                acc &= (1 << bits) - 1;
            }
        }
        out
    }
}
