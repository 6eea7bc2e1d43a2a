//! The protobuf exposition: a stream of `io.prometheus.client.MetricFamily` messages, each
//! prefixed by its length as a varint (`Content-Type: application/vnd.google.protobuf;
//! proto=io.prometheus.client.MetricFamily; encoding=delimited`). Prometheus asks for it when
//! native histograms are on (`--enable-feature=native-histograms` up to 2.x); it is the one
//! scrape format that carries them. The latency histogram goes out with both its classic
//! buckets and its native ones ([`super::native`]); which of the two a Prometheus keeps is its
//! choice (2.42 keeps the native one only; later versions keep both with
//! `scrape_classic_histograms` / `always_scrape_classic_histograms`).
//!
//! The messages, from `prometheus/client_model`'s `io/prometheus/client/metrics.proto`
//! (proto2), with the field numbers used below:
//!
//! ```text
//! MetricFamily { string name = 1; string help = 2; MetricType type = 3; repeated Metric metric = 4; }
//! MetricType   { COUNTER = 0; GAUGE = 1; SUMMARY = 2; UNTYPED = 3; HISTOGRAM = 4; }
//! Metric       { repeated LabelPair label = 1; Gauge gauge = 2; Counter counter = 3; Histogram histogram = 7; }
//! LabelPair    { string name = 1; string value = 2; }
//! Gauge, Counter { double value = 1; }
//! Histogram    { uint64 sample_count = 1; double sample_sum = 2; repeated Bucket bucket = 3;
//!                sint32 schema = 5; double zero_threshold = 6; uint64 zero_count = 7;
//!                repeated BucketSpan positive_span = 12; repeated sint64 positive_delta = 13; }
//! Bucket       { uint64 cumulative_count = 1; double upper_bound = 2; }
//! BucketSpan   { sint32 offset = 1; uint32 length = 2; }
//! ```
//!
//! The classic `+Inf` bucket is left out (it is optional there: the sample count is it).
//! A native histogram with no value yet still carries a zero threshold and an empty span, so
//! that every Prometheus version takes it for a native one.

use super::native::{SCHEMA, ZERO_THRESHOLD};
use super::proto::{unzigzag, Field, Reader, Writer};
use super::{Kind, Snapshot, Value};

/// The media type of the delimited protobuf exposition, as the response's Content-Type.
pub const CONTENT_TYPE: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

/// The delimited protobuf exposition of `snap`.
pub fn encode(snap: &Snapshot) -> Vec<u8> {
    let mut out = Writer::new();
    for f in &snap.families {
        out.delimited(|w| {
            w.bytes(1, f.name.as_bytes());
            w.bytes(2, f.help.as_bytes());
            w.uint(
                3,
                match f.kind {
                    Kind::Counter => 0,
                    Kind::Gauge => 1,
                    Kind::Histogram => 4,
                },
            );
            for s in &f.series {
                w.message(4, |m| {
                    let pairs = snap
                        .labels
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.as_str()))
                        .chain(s.labels.iter().copied());
                    for (k, v) in pairs {
                        m.message(1, |l| {
                            l.bytes(1, k.as_bytes());
                            l.bytes(2, v.as_bytes());
                        });
                    }
                    let field = match f.kind {
                        Kind::Counter => 3,
                        Kind::Gauge => 2,
                        Kind::Histogram => 7,
                    };
                    match &s.value {
                        Value::Int(v) => m.message(field, |c| c.double(1, *v as f64)),
                        Value::Float(v) => m.message(field, |c| c.double(1, *v)),
                        Value::Histogram(h) => m.message(7, |w| {
                            w.uint(1, h.count);
                            w.double(2, h.sum_s);
                            for (le, n) in h.cumulative().filter(|(le, _)| le.is_finite()) {
                                w.message(3, |b| {
                                    b.uint(1, n);
                                    b.double(2, le);
                                });
                            }
                            w.sint(5, i64::from(SCHEMA));
                            w.double(6, ZERO_THRESHOLD);
                            w.uint(7, h.native.zero_count);
                            let (spans, deltas) = h.native.spans_and_deltas();
                            if spans.is_empty() {
                                w.message(12, |s| {
                                    s.sint(1, 0);
                                    s.uint(2, 0);
                                });
                            }
                            for (offset, length) in spans {
                                w.message(12, |s| {
                                    s.sint(1, i64::from(offset));
                                    s.uint(2, u64::from(length));
                                });
                            }
                            for d in deltas {
                                w.sint(13, d);
                            }
                        }),
                    }
                });
            }
        });
    }
    out.into_bytes()
}

/// One metric as decoded from the protobuf exposition (for tests and checks of it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DecodedMetric {
    /// Label pairs, in order.
    pub labels: Vec<(String, String)>,
    /// A counter's or gauge's value.
    pub value: Option<f64>,
    /// A histogram's sample count.
    pub count: u64,
    /// A histogram's sample sum.
    pub sum: f64,
    /// Classic buckets: (upper bound, cumulative count).
    pub buckets: Vec<(f64, u64)>,
    /// Native schema, when present.
    pub schema: Option<i32>,
    /// Native zero bucket's threshold.
    pub zero_threshold: f64,
    /// Native zero bucket's count.
    pub zero_count: u64,
    /// Native positive buckets, decoded from spans and deltas: (index, count).
    pub native: Vec<(i32, u64)>,
}

/// One metric family as decoded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DecodedFamily {
    /// Its name.
    pub name: String,
    /// Its type number (0 counter, 1 gauge, 4 histogram).
    pub kind: u64,
    /// Its metrics.
    pub metrics: Vec<DecodedMetric>,
}

/// Decodes a delimited stream of `MetricFamily` messages: what [`encode`] writes, read back by
/// the protobuf wire format alone.
pub fn decode(bytes: &[u8]) -> Result<Vec<DecodedFamily>, &'static str> {
    let mut r = Reader::new(bytes);
    let mut out = Vec::new();
    while !r.is_empty() {
        let n = usize::try_from(r.varint()?).map_err(|_| "length out of range")?;
        let mut fam = DecodedFamily::default();
        for f in Reader::new(r.take(n)?).fields()? {
            match f {
                Field::Bytes(1, b) => fam.name = String::from_utf8_lossy(b).into_owned(),
                Field::Varint(3, v) => fam.kind = v,
                Field::Bytes(4, b) => fam.metrics.push(metric(b)?),
                _ => {}
            }
        }
        out.push(fam);
    }
    Ok(out)
}

fn metric(b: &[u8]) -> Result<DecodedMetric, &'static str> {
    let mut m = DecodedMetric::default();
    let mut spans = Vec::new();
    let mut deltas = Vec::new();
    for f in Reader::new(b).fields()? {
        match f {
            Field::Bytes(1, l) => {
                let (mut k, mut v) = (String::new(), String::new());
                for f in Reader::new(l).fields()? {
                    match f {
                        Field::Bytes(1, b) => k = String::from_utf8_lossy(b).into_owned(),
                        Field::Bytes(2, b) => v = String::from_utf8_lossy(b).into_owned(),
                        _ => {}
                    }
                }
                m.labels.push((k, v));
            }
            Field::Bytes(2 | 3, c) => {
                for f in Reader::new(c).fields()? {
                    if let Field::Fixed64(1, v) = f {
                        m.value = Some(f64::from_bits(v));
                    }
                }
            }
            Field::Bytes(7, h) => {
                for f in Reader::new(h).fields()? {
                    match f {
                        Field::Varint(1, v) => m.count = v,
                        Field::Fixed64(2, v) => m.sum = f64::from_bits(v),
                        Field::Bytes(3, b) => {
                            let (mut n, mut le) = (0, 0.0);
                            for f in Reader::new(b).fields()? {
                                match f {
                                    Field::Varint(1, v) => n = v,
                                    Field::Fixed64(2, v) => le = f64::from_bits(v),
                                    _ => {}
                                }
                            }
                            m.buckets.push((le, n));
                        }
                        Field::Varint(5, v) => m.schema = Some(unzigzag(v) as i32),
                        Field::Fixed64(6, v) => m.zero_threshold = f64::from_bits(v),
                        Field::Varint(7, v) => m.zero_count = v,
                        Field::Bytes(12, b) => {
                            let (mut off, mut len) = (0i32, 0u32);
                            for f in Reader::new(b).fields()? {
                                match f {
                                    Field::Varint(1, v) => off = unzigzag(v) as i32,
                                    Field::Varint(2, v) => len = v as u32,
                                    _ => {}
                                }
                            }
                            spans.push((off, len));
                        }
                        Field::Varint(13, v) => deltas.push(unzigzag(v)),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    let mut deltas = deltas.into_iter();
    let (mut index, mut count) = (0i32, 0i64);
    for (i, (off, len)) in spans.into_iter().enumerate() {
        index = if i == 0 { off } else { index + off };
        for _ in 0..len {
            count += deltas.next().ok_or("fewer deltas than the spans say")?;
            m.native.push((index, count.max(0) as u64));
            index += 1;
        }
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::native::{index, upper_bound};
    use crate::metrics::LiveMetrics;
    use gatebench_model::histogram::new_histogram;
    use gatebench_model::{Outcome, OutcomeCounts};
    use std::time::Duration;

    /// What a protobuf scrape carries decodes to the same figures as the text: counters,
    /// labels, the classic buckets, and native buckets whose counts add up to the histogram's
    /// count and lie where the values do.
    #[test]
    fn the_protobuf_exposition_decodes_to_the_figures() {
        let m = LiveMetrics::new(&[("scenario".into(), "echo".into())]);
        let mut h = new_histogram();
        h.record_n(2_000_000, 90).unwrap(); // 2 ms
        h.record_n(300_000_000, 10).unwrap(); // 300 ms
        let mut o = OutcomeCounts::default();
        o.add(Outcome::Ok, 100);
        m.second(false, 100, &o, &h, Duration::from_secs(1), Some(100.0));
        let fams = decode(&encode(&m.snapshot())).unwrap();
        let names: Vec<&str> = fams.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "gatebench_requests_sent_total",
                "gatebench_requests_total",
                "gatebench_request_duration_seconds",
                "gatebench_target_rate",
                "gatebench_achieved_rate",
                "gatebench_in_flight_requests",
                "gatebench_phase",
                "gatebench_connections_opened_total",
                "gatebench_generator_cpu_seconds_total"
            ]
        );
        let req = &fams[1];
        assert_eq!(req.kind, 0);
        let ok = req
            .metrics
            .iter()
            .find(|m| {
                m.labels
                    == [
                        ("scenario".to_owned(), "echo".to_owned()),
                        ("phase".to_owned(), "measurement".to_owned()),
                        ("outcome".to_owned(), "ok".to_owned()),
                    ]
            })
            .unwrap();
        assert_eq!(ok.value, Some(100.0));
        let lat = &fams[2];
        assert_eq!(lat.kind, 4);
        let meas = &lat.metrics[1];
        assert_eq!(meas.count, 100);
        assert!((meas.sum - (90.0 * 0.002 + 10.0 * 0.3)).abs() < 0.01);
        assert_eq!(meas.buckets.len(), 14);
        assert_eq!(meas.buckets[2], (0.0025, 90));
        assert_eq!(meas.schema, Some(3));
        assert!(meas.zero_threshold > 0.0);
        assert_eq!(meas.native.iter().map(|b| b.1).sum::<u64>(), 100);
        assert_eq!(meas.native, [(index(0.002), 90), (index(0.3), 10)]);
        assert!(upper_bound(meas.native[1].0 - 1) < 0.3 && 0.3 <= upper_bound(meas.native[1].0));
        // The warm-up saw nothing: an empty native histogram, still marked native.
        let warm = &lat.metrics[0];
        assert_eq!((warm.count, warm.native.len()), (0, 0));
        assert_eq!(warm.schema, Some(3));
        assert_eq!(fams[6].metrics[0].value, Some(1.0), "phase");
    }
}
