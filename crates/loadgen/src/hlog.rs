//! HdrHistogram interval logs (`.hlog`): one compressed histogram per second, in the format
//! HdrHistogram's own tools read (`HistogramLogProcessor`, `hdr-plot`, the Rust crate's
//! `IntervalLogIterator`).
//!
//! Values are nanoseconds, the unit those tools assume by default. The untagged histograms are
//! the run's latency (corrected for coordinated omission in the open model); in the open model
//! a second histogram per interval carries the tag `uncorrected`.
//!
//! The layout is that of HdrHistogram's Java `HistogramLogWriter` (log format 1.3): comment and
//! header lines, the legend, then one line per interval,
//! `[Tag=T,]StartTimestamp,Interval_Length,Interval_Max,Interval_Compressed_Histogram`.
//! Timestamps are seconds since the header's BaseTime (the start of the warm-up).
//! `Interval_Max` is the interval's largest value divided by the header's `MaxValueDivisor`, so
//! milliseconds here; readers take the histogram from the compressed column and the Java reader
//! skips `Interval_Max` altogether, so the divisor only changes what a person sees in the file.
//! This module does not read logs.

use std::io::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;

use crate::stats::LatencyHistogram;

/// The header's `MaxValueDivisor`: `Interval_Max` is written in milliseconds (values are
/// nanoseconds), the ratio Java's `HistogramLogWriter` uses by default.
pub const MAX_VALUE_DIVISOR: f64 = 1_000_000.0;

/// Writes the standard header lines: the comment, format version, start and base time, the
/// max value divisor and the legend.
pub fn write_header(out: &mut dyn Write, start: SystemTime, comment: &str) -> io::Result<()> {
    let secs = start
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    writeln!(out, "#{comment}")?;
    writeln!(out, "#[Histogram log format version 1.3]")?;
    writeln!(out, "#[StartTime: {secs:.3} (seconds since epoch)]")?;
    writeln!(out, "#[BaseTime: {secs:.3} (seconds since epoch)]")?;
    writeln!(out, "#[MaxValueDivisor: {MAX_VALUE_DIVISOR:.3}]")?;
    writeln!(
        out,
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
    )
}

/// Appends the target rate of the interval that starts at `start` (relative to BaseTime), as a
/// comment line `#[TargetRate: START_S REQ_PER_S]` written before the interval: runs with an
/// arrival program carry the rate they asked for beside the latency they got. HdrHistogram's
/// readers (Java's `HistogramLogReader`, the Rust crate's iterator) skip `#` lines they do not
/// know.
pub fn write_target_rate(out: &mut dyn Write, start: Duration, rate: f64) -> io::Result<()> {
    writeln!(out, "#[TargetRate: {:.3} {rate:.3}]", start.as_secs_f64())
}

/// Appends one interval line. `start` is relative to the log's BaseTime.
pub fn write_interval(
    out: &mut dyn Write,
    h: &LatencyHistogram,
    start: Duration,
    length: Duration,
    tag: Option<&str>,
) -> io::Result<()> {
    // The crate's writer formats the line as Java's does, dividing the max by the divisor it is
    // built with. Built with MAX_VALUE_DIVISOR, it also writes its own `#[MaxValueDivisor]` line
    // first: a fresh writer per line keeps borrows local, so the line is written to a buffer and
    // that repeated header (already in write_header) is left out.
    // An invalid tag (a comma, space or line break in it) would end up an untagged line, mixed
    // into the main latency: refuse it instead.
    let tag = tag
        .map(|t| {
            Tag::new(t).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("invalid hlog tag `{t}`"),
                )
            })
        })
        .transpose()?;
    let mut ser = V2DeflateSerializer::new();
    let mut buf = Vec::new();
    IntervalLogWriterBuilder::new()
        .with_max_value_divisor(MAX_VALUE_DIVISOR)
        .begin_log_with(&mut buf, &mut ser)?
        .write_histogram(h, start, length, tag)
        .map_err(|e| io::Error::other(format!("{e:?}")))?;
    let mut line = buf.as_slice();
    while line.first() == Some(&b'#') {
        let eol = line
            .iter()
            .position(|b| *b == b'\n')
            .map_or(line.len(), |i| i + 1);
        line = &line[eol..];
    }
    out.write_all(line)
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
        // A run with an arrival program puts its target rate before each interval.
        write_target_rate(&mut out, Duration::ZERO, 1500.0).unwrap();
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
        assert!(text.contains("\n#[TargetRate: 0.000 1500.000]\n"), "{text}");
        let mut intervals = 0;
        let mut tags = Vec::new();
        for entry in IntervalLogIterator::new(&out) {
            if let LogEntry::Interval(i) = entry.unwrap() {
                intervals += 1;
                tags.push(i.tag().map(|t| t.as_str().to_owned()));
                let decoded: LatencyHistogram = hdrhistogram::serialization::Deserializer::new()
                    .deserialize(&mut base64_decode(i.encoded_histogram()).as_slice())
                    .unwrap();
                assert_eq!(decoded, h);
            }
        }
        assert_eq!(intervals, 2);
        assert_eq!(tags, vec![None, Some("uncorrected".to_owned())]);
    }

    #[test]
    fn header_is_the_java_writers_with_the_divisor_before_the_legend() {
        let start = UNIX_EPOCH + Duration::from_millis(1_700_000_000_250);
        let mut out = Vec::new();
        write_header(&mut out, start, "[a comment]").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "#[a comment]\n\
             #[Histogram log format version 1.3]\n\
             #[StartTime: 1700000000.250 (seconds since epoch)]\n\
             #[BaseTime: 1700000000.250 (seconds since epoch)]\n\
             #[MaxValueDivisor: 1000000.000]\n\
             \"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
        );
    }

    /// The divisor the header states, read back as a reader would.
    fn header_divisor(text: &str) -> f64 {
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("#[MaxValueDivisor: "))
            .expect("a MaxValueDivisor header");
        line.trim_end_matches(']').parse().unwrap()
    }

    #[test]
    fn interval_max_is_the_max_divided_by_the_headers_divisor() {
        let mut out = Vec::new();
        write_header(&mut out, SystemTime::now(), "test").unwrap();
        // 1 ms: Interval_Max reads 1.000 (milliseconds), not 1000447.000 (nanoseconds, the top
        // of 1 ms's bucket). Then maxima from microseconds to seconds, and a tagged line whose
        // max, 1234 ms, reads as the top of its bucket (buckets are 2^19 ns wide up there).
        let maxima = [
            Duration::from_millis(1),
            Duration::from_micros(37),
            Duration::from_micros(2_500),
            Duration::from_millis(1_234),
        ];
        let mut hs = Vec::new();
        for (i, max) in maxima.iter().enumerate() {
            let mut h = new_histogram();
            record(&mut h, Duration::from_micros(20));
            record(&mut h, *max);
            let tag = (i == 3).then_some("uncorrected");
            let length = Duration::from_millis(if i == 3 { 250 } else { 1000 });
            write_interval(&mut out, &h, Duration::from_secs(i as u64), length, tag).unwrap();
            hs.push(h);
        }
        let text = String::from_utf8(out).unwrap();
        let divisor = header_divisor(&text);
        assert_eq!(divisor, MAX_VALUE_DIVISOR);
        assert_eq!(text.matches("MaxValueDivisor").count(), 1, "{text}");
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines.len(),
            1 + maxima.len(),
            "legend and one line each:\n{text}"
        );
        let fields = |l: &str| -> Vec<String> { l.split(',').map(str::to_owned).collect() };
        assert_eq!(fields(lines[1])[..3], ["0.000", "1.000", "1.000"]);
        assert_eq!(
            fields(lines[4])[..4],
            ["Tag=uncorrected", "3.000", "0.250", "1234.174"]
        );
        for (line, h) in lines[1..].iter().zip(&hs) {
            let f = fields(line.strip_prefix("Tag=uncorrected,").unwrap_or(line));
            assert_eq!(f.len(), 4, "{line}");
            assert_eq!(f[2], format!("{:.3}", h.max() as f64 / divisor), "{line}");
            assert!(f[3].starts_with("HISTF"), "V2 deflate, base64: {line}");
        }
    }

    #[test]
    fn an_invalid_tag_is_refused_rather_than_written_untagged() {
        let mut out = Vec::new();
        let h = new_histogram();
        let err = write_interval(&mut out, &h, Duration::ZERO, Duration::ZERO, Some("a,b"));
        assert_eq!(err.unwrap_err().kind(), io::ErrorKind::InvalidInput);
        assert!(out.is_empty());
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
