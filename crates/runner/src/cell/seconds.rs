//! A load cell's seconds: its `timeline.csv` rows and `latency.hlog`, from the load record's own
//! per-second timeline (counts and a latency histogram each second). The rule: one source for
//! every cell, here or sharded across generator hosts; the live view the generator gives while
//! it runs is for the display only, and nothing is joined by matching times.
//!
//! The record's seconds run from the load's start; the generator reports one more, nearly
//! empty second that starts where the load ended (a few milliseconds while its workers stop).
//! It is part of neither window and is left out (drawn, it made every plot end in zero
//! throughput and zero p99); a partial last second inside the load stays, its rate over its
//! true length.

use std::time::Duration;

use gatebench_model::{histogram, LoadReport};
use gatebench_results::rows::TimelineRow;

/// The cell's `timeline.csv` rows and `latency.hlog` from `report`'s seconds (`load_start_s`:
/// when the load started, seconds since the cell did). Empty when the record has no seconds
/// with histograms (shards of an older gatebench).
pub(super) fn seconds(report: &LoadReport, load_start_s: f64) -> (Vec<TimelineRow>, Vec<u8>) {
    let Some(seconds) = report.timeline.as_deref() else {
        return (Vec::new(), Vec::new());
    };
    let warmup_s = report.warmup.as_ref().map_or(0.0, |w| w.duration_s);
    let load_len = warmup_s + report.measurement.duration_s;
    let program = report.config.arrival.is_some();
    let mut rows = Vec::with_capacity(seconds.len());
    let mut hlog = Vec::new();
    let start = std::time::UNIX_EPOCH + Duration::from_micros(report.started_at_unix_us);
    let merged = report.merged.as_ref().map(|m| m.count);
    let comment = format!(
        "[gatebench {} load {} -c {}{}; values in nanoseconds]",
        env!("CARGO_PKG_VERSION"),
        report.config.url,
        report.config.connections,
        merged.map_or_else(String::new, |n| format!(", {n} shards merged"))
    );
    // Writing into a Vec cannot fail.
    let _ = gatebench_loadgen::hlog::write_header(&mut hlog, start, &comment);
    for s in seconds {
        let from_load_start = warmup_s + s.t_s;
        if from_load_start >= load_len - 1e-3 {
            continue;
        }
        let Some(h) = s.latency.as_deref().and_then(|t| histogram::decode(t).ok()) else {
            return (Vec::new(), Vec::new());
        };
        rows.push(TimelineRow {
            t_s: load_start_s + from_load_start + s.length_s,
            window: if s.t_s < 0.0 { "warmup" } else { "measurement" }.to_owned(),
            responses: Some(s.responses),
            errors: Some(s.errors),
            rps: s.responses as f64 / s.length_s.max(1e-3),
            p99_ms: if h.is_empty() {
                0.0
            } else {
                h.value_at_quantile(0.99) as f64 / 1e6
            },
            target_rate: program.then_some(s.target_rate),
        });
        let at = Duration::from_secs_f64(from_load_start.max(0.0));
        if program {
            let _ = gatebench_loadgen::hlog::write_target_rate(&mut hlog, at, s.target_rate);
        }
        let _ = gatebench_loadgen::hlog::write_interval(
            &mut hlog,
            &h,
            at,
            Duration::from_secs_f64(s.length_s),
            None,
        );
    }
    (rows, hlog)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatebench_model::{
        ConnectionStats, LatencySummary, OutcomeCounts, PhaseReport, SecondRecord,
    };

    fn phase(duration_s: f64) -> PhaseReport {
        PhaseReport {
            duration_s,
            outcomes: OutcomeCounts::default(),
            requests: 0,
            throughput_rps: 0.0,
            ok_rps: 0.0,
            error_percent: 0.0,
            target_rps: None,
            sent_rps: 0.0,
            bytes_read: 0,
            bytes_written: 0,
            latency: LatencySummary::default(),
            latency_answered: None,
            latency_uncorrected: None,
            concurrency: 0.0,
            connections: ConnectionStats::default(),
            histograms: None,
        }
    }

    fn second(t_s: f64, length_s: f64, responses: u64, values_ms: &[u64]) -> SecondRecord {
        let mut h = histogram::new_histogram();
        for v in values_ms {
            h.record(v * 1_000_000).unwrap();
        }
        SecondRecord {
            t_s,
            length_s,
            target_rate: 0.0,
            sent: responses,
            responses,
            errors: 0,
            latency: Some(histogram::encode(&h)),
            detail: Default::default(),
        }
    }

    #[test]
    fn a_sharded_cell_gets_its_seconds_from_the_merged_record() {
        let mut r =
            gatebench_testkit::records::load_report(4, 100, Some(phase(1.0)), phase(2.0), true);
        r.started_at_unix_us = 1_700_000_000_250_000;
        r.timeline = Some(vec![
            second(-1.0, 1.0, 10, &[1, 2]),
            second(0.0, 1.0, 300, &[3; 100]),
            second(1.0, 0.5, 100, &[40]),
        ]);
        // The load started 2.5 s into the cell.
        let (rows, hlog) = seconds(&r, 2.5);
        let got: Vec<(f64, &str, Option<u64>, f64)> = rows
            .iter()
            .map(|row| (row.t_s, row.window.as_str(), row.responses, row.rps))
            .collect();
        assert_eq!(
            got,
            [
                (3.5, "warmup", Some(10), 10.0),
                (4.5, "measurement", Some(300), 300.0),
                (5.0, "measurement", Some(100), 200.0),
            ]
        );
        assert!((rows[1].p99_ms - 3.0).abs() < 0.01, "{}", rows[1].p99_ms);
        assert!((rows[2].p99_ms - 40.0).abs() < 0.1, "{}", rows[2].p99_ms);
        // No program: no target column.
        assert!(rows.iter().all(|row| row.target_rate.is_none()));
        let hlog = String::from_utf8(hlog).unwrap();
        assert!(hlog.contains("#[StartTime: 1700000000.250"), "{hlog}");
        let lines: Vec<&str> = hlog
            .lines()
            .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
            .collect();
        assert_eq!(lines.len(), 3, "{hlog}");
        assert!(lines[0].starts_with("0.000,1.000,"), "{}", lines[0]);
        assert!(lines[2].starts_with("2.000,0.500,"), "{}", lines[2]);
    }

    /// The second the generator reports as its workers stop starts where the load ended: it is
    /// no part of either window. A request-count load's end is its measured length.
    #[test]
    fn the_second_after_the_loads_end_is_left_out() {
        let mut r =
            gatebench_testkit::records::load_report(4, 100, Some(phase(1.0)), phase(1.3), true);
        r.timeline = Some(vec![
            second(-1.0, 1.0, 10, &[1]),
            second(0.0, 1.0, 10, &[1]),
            second(1.0, 0.3, 3, &[1]),
            second(1.3, 0.002, 0, &[]),
        ]);
        let (rows, hlog) = seconds(&r, 0.0);
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows[2].rps, 10.0,
            "the partial second's rate is over its length"
        );
        let intervals = String::from_utf8(hlog)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
            .count();
        assert_eq!(intervals, 3);
    }

    #[test]
    fn records_without_second_histograms_give_no_timeline() {
        let mut r = gatebench_testkit::records::load_report(4, 100, None, phase(2.0), true);
        let mut s = second(0.0, 1.0, 5, &[1]);
        s.latency = None;
        r.timeline = Some(vec![s]);
        let (rows, hlog) = seconds(&r, 0.0);
        assert!(rows.is_empty() && hlog.is_empty());
    }
}
