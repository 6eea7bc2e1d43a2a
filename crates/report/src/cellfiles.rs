//! A cell's side files, read into the series the HTML report plots: `samples.csv` (the SUT's
//! CPU and memory each second), `timeline.csv` (the load's one-second intervals: responses,
//! errors, p99) and `latency.hlog` (the HdrHistogram interval log: the full latency spectrum,
//! corrected and, in the open model, uncorrected).
//!
//! Pure functions of the files' contents; the caller reads them. Results directories written
//! before `timeline.csv` existed still plot: throughput and p99 per second then come from the
//! interval log, without error counts. Lines that do not parse are skipped, not fatal: a plot
//! with a gap is better than no report. The CSV files are read into their row types, which
//! `gatebench-results` owns (by column position after the header line, so a column added at
//! the end, as `samples.csv` gained `threads`, `fds`, …, changes nothing here).

use gatebench_results::rows::{read_rows, SampleRow, TimelineRow};
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

/// One second of the SUT's resource use (`samples.csv`).
#[derive(Clone, Debug, PartialEq)]
pub struct ResourcePoint {
    /// End of the interval, seconds since the cell started.
    pub t_s: f64,
    /// `before`, `warmup`, `measurement` or `after`.
    pub window: String,
    /// CPU, percent of one core.
    pub cpu_percent: f64,
    /// Resident memory, MiB.
    pub rss_mib: f64,
}

/// One second of the load (`timeline.csv`, or the interval log).
#[derive(Clone, Debug, PartialEq)]
pub struct IntervalPoint {
    /// End of the interval, seconds since the cell started (`timeline.csv`) or since the load
    /// started (interval log).
    pub t_s: f64,
    /// `warmup` or `measurement`.
    pub window: String,
    /// Complete responses per second.
    pub rps: f64,
    /// p99 latency of the interval, ms.
    pub p99_ms: f64,
    /// Errors in the interval; `None` when the source does not record them (interval log).
    pub errors: Option<u64>,
    /// Complete responses in the interval (`None` when the line does not say).
    pub responses: Option<u64>,
    /// The interval's true length, seconds: one, or less for the load's last, partial second.
    /// The interval log records it; `timeline.csv` only through `responses / rps`, so it is
    /// `None` there for an interval without responses.
    pub length_s: Option<f64>,
    /// The arrival program's rate over the interval, requests/s, for a cell that ran one
    /// (`timeline.csv`'s `target_rate`); `None` otherwise.
    pub target_rate: Option<f64>,
}

/// A latency spectrum: (percentile 0–100, latency ms) points, HdrHistogram style.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spectrum {
    /// Points in increasing percentile.
    pub points: Vec<(f64, f64)>,
    /// Values in the histogram.
    pub count: u64,
}

/// What the interval log gives.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HlogData {
    /// The load's seconds (untagged histograms), times since the load started.
    pub intervals: Vec<IntervalPoint>,
    /// The measurement's spectrum (corrected for coordinated omission in the open model).
    pub corrected: Option<Spectrum>,
    /// The measurement's uncorrected spectrum (open model only: the `uncorrected` tag).
    pub uncorrected: Option<Spectrum>,
}

/// Reads `samples.csv`.
pub fn parse_samples(text: &str) -> Vec<ResourcePoint> {
    read_rows(text)
        .into_iter()
        .map(|r: SampleRow| ResourcePoint {
            t_s: r.t_s,
            window: r.window,
            cpu_percent: r.cpu_percent,
            rss_mib: r.rss_mib,
        })
        .collect()
}

/// Reads `timeline.csv` (`t_s,window,responses,errors,rps,p99_ms`, and `target_rate` for a
/// cell with an arrival program).
pub fn parse_timeline(text: &str) -> Vec<IntervalPoint> {
    read_rows(text)
        .into_iter()
        .map(|r: TimelineRow| {
            // rps is responses over the interval's true length (the generator divides by it),
            // so the length comes back from the two; to within the 0.1 rounding of rps.
            let length_s = match r.responses {
                Some(n) if n > 0 && r.rps > 0.0 => Some((n as f64 / r.rps).min(1.0)),
                _ => None,
            };
            IntervalPoint {
                t_s: r.t_s,
                window: r.window,
                errors: r.errors,
                rps: r.rps,
                p99_ms: r.p99_ms,
                responses: r.responses,
                length_s,
                target_rate: r.target_rate,
            }
        })
        .collect()
}

/// Reads an interval log whose first `warmup_s` seconds are the warm-up.
pub fn read_hlog(bytes: &[u8], warmup_s: f64) -> Result<HlogData, String> {
    let mut out = HlogData::default();
    let mut corrected: Option<Histogram<u64>> = None;
    let mut uncorrected: Option<Histogram<u64>> = None;
    let mut de = Deserializer::new();
    for entry in IntervalLogIterator::new(bytes) {
        let entry = entry.map_err(|e| format!("unreadable interval log ({e:?})"))?;
        let LogEntry::Interval(i) = entry else {
            continue;
        };
        let raw = base64_decode(i.encoded_histogram())
            .ok_or_else(|| "an interval's histogram is not base64".to_owned())?;
        let h: Histogram<u64> = de
            .deserialize(&mut raw.as_slice())
            .map_err(|e| format!("an interval's histogram does not decode ({e:?})"))?;
        let start = i.start_timestamp().as_secs_f64();
        let len = i.duration().as_secs_f64();
        // An interval belongs to the window holding its middle (as samples.csv does).
        let warm = start + len / 2.0 < warmup_s;
        let tag = i.tag().map(|t| t.as_str().to_owned());
        let target = match tag.as_deref() {
            None => {
                out.intervals.push(IntervalPoint {
                    t_s: start + len,
                    window: if warm { "warmup" } else { "measurement" }.to_owned(),
                    rps: if len > 0.0 { h.len() as f64 / len } else { 0.0 },
                    p99_ms: h.value_at_quantile(0.99) as f64 / 1e6,
                    errors: None,
                    responses: Some(h.len()),
                    length_s: Some(len),
                    target_rate: None,
                });
                &mut corrected
            }
            Some("uncorrected") => &mut uncorrected,
            Some(_) => continue,
        };
        if warm {
            continue;
        }
        match target {
            Some(acc) => acc
                .add(&h)
                .map_err(|e| format!("intervals do not merge ({e:?})"))?,
            None => *target = Some(h),
        }
    }
    out.corrected = corrected.as_ref().map(spectrum);
    out.uncorrected = uncorrected.as_ref().map(spectrum);
    Ok(out)
}

/// The spectrum of a histogram in nanoseconds: HdrHistogram's percentile distribution (five
/// steps per halving of the distance to 100 %), in milliseconds.
pub fn spectrum(h: &Histogram<u64>) -> Spectrum {
    let mut points: Vec<(f64, f64)> = Vec::new();
    if h.is_empty() {
        return Spectrum::default();
    }
    for v in h.iter_quantiles(5) {
        let q = v.quantile_iterated_to();
        let ms = h.highest_equivalent(v.value_iterated_to()) as f64 / 1e6;
        if q >= 1.0 {
            break;
        }
        points.push((q * 100.0, ms));
    }
    points.push((100.0, h.max() as f64 / 1e6));
    Spectrum {
        points,
        count: h.len(),
    }
}

/// Standard base64 (with or without padding); `None` on a foreign character.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes().filter(|c| *c != b'=' && !c.is_ascii_whitespace()) {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
    use hdrhistogram::serialization::V2DeflateSerializer;
    use std::time::Duration;

    #[test]
    fn samples_and_timeline() {
        let s = parse_samples(
            "t_s,window,cpu_percent,rss_mib,threads,fds,processes,loadavg_1m\n\
             1.058,warmup,87.0,11.71,3,122,1,4.39\n\
             2.058,measurement,102.0,11.71,3,122,1,4.39\nbroken\n",
        );
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].window, "measurement");
        assert_eq!(s[1].cpu_percent, 102.0);
        let t = parse_timeline(
            "t_s,window,responses,errors,rps,p99_ms\n1.500,warmup,100,2,100.0,1.250\n",
        );
        assert_eq!(t[0].errors, Some(2));
        assert_eq!(t[0].p99_ms, 1.25);
    }

    #[test]
    fn base64() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGk").unwrap(), b"hi");
        assert!(base64_decode("a*b").is_none());
    }

    /// An interval log as the load generator writes it (`gatebench-loadgen`'s `hlog.rs`: its
    /// header lines, then one line per histogram): 1 s warm-up of slow values, 2 s of
    /// measurement, an uncorrected histogram beside each.
    fn log() -> Vec<u8> {
        let mut out = b"#gatebench 0.1.0 load http://127.0.0.1:1/ -c 2; values in nanoseconds\n\
            #[Histogram log format version 1.3]\n\
            #[StartTime: 1795245797.442 (seconds since epoch)]\n\
            #[BaseTime: 1795245797.442 (seconds since epoch)]\n\
            #[MaxValueDivisor: 1000000.000]\n\
            \"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
            .to_vec();
        let mut ser = V2DeflateSerializer::new();
        let mut w = IntervalLogWriterBuilder::new()
            .with_max_value_divisor(1.0)
            .begin_log_with(&mut out, &mut ser)
            .unwrap();
        for sec in 0..3u64 {
            let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
            let mut u = h.clone();
            for i in 1..=1000u64 {
                let ns = if sec == 0 { 50_000_000 } else { i * 10_000 };
                h.record(ns).unwrap();
                u.record(ns / 2).unwrap();
            }
            let at = Duration::from_secs(sec);
            w.write_histogram(&h, at, Duration::from_secs(1), None)
                .unwrap();
            w.write_histogram(&u, at, Duration::from_secs(1), Tag::new("uncorrected"))
                .unwrap();
        }
        out
    }

    #[test]
    fn interval_log_gives_seconds_and_spectra_of_the_measurement() {
        let d = read_hlog(&log(), 1.0).unwrap();
        assert_eq!(d.intervals.len(), 3);
        assert_eq!(d.intervals[0].window, "warmup");
        assert_eq!(d.intervals[2].window, "measurement");
        assert!((d.intervals[1].rps - 1000.0).abs() < 1e-9);
        // The warm-up's 50 ms values are cut away: the measurement tops out at 10 ms.
        let c = d.corrected.unwrap();
        assert_eq!(c.count, 2000);
        let max = c.points.last().unwrap();
        assert_eq!(max.0, 100.0);
        assert!((max.1 - 10.0).abs() < 0.02, "{max:?}");
        let p50 = c.points.iter().find(|p| p.0 >= 50.0).unwrap();
        assert!((p50.1 - 5.0).abs() < 0.05, "{p50:?}");
        assert!(c
            .points
            .windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        let u = d.uncorrected.unwrap();
        assert!((u.points.last().unwrap().1 - 5.0).abs() < 0.01);
        assert!(read_hlog(b"not a log\n", 0.0).is_err());
    }
}
