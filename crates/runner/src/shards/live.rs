//! The shards' seconds merged while the load runs: one live line per second for the whole
//! run, thresholds judged on the merged seconds (so an `abort` stops every shard), and at the
//! end a check that the live merge equals the exact merge of the shards' records.
//!
//! Rule: a second is merged once every shard has given it, or has ended without it; its
//! counts are summed and its histograms added exactly as `gatebench_model::merge` adds the
//! records' seconds (the same [`SecondSum`]), so the live figures are the final ones, only
//! earlier. Each shard streams its seconds on stdout (`gatebench load --live-seconds`), one
//! line each, in order.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use gatebench_loadgen::metrics::LiveMetrics;
use gatebench_loadgen::threshold::{Threshold, Watch};
use gatebench_loadgen::IntervalView;
use gatebench_model::merge::SecondSum;
use gatebench_model::{LiveMergeCheck, LiveSecond, LoadReport, OutcomeCounts, SecondRecord};

/// The live merge of one sharded load.
#[derive(Debug)]
pub(crate) struct LiveMerge {
    /// Each shard's seconds not merged yet, in order.
    pending: Vec<VecDeque<LiveSecond>>,
    /// Shards that have ended: no more seconds come from them.
    ended: Vec<bool>,
    /// The merged seconds so far.
    merged: Vec<SecondRecord>,
    /// When the load's warm-up started (the shards' agreed start), Unix seconds here.
    start_unix_s: f64,
    warmup_s: f64,
    max_lag_s: f64,
    total_responses: u64,
    total_errors: u64,
    watch: Watch,
    /// Fed each merged second (`gatebench run --metrics`).
    metrics: Option<Arc<LiveMetrics>>,
}

impl LiveMerge {
    /// For `shards` shards that start their warm-up of `warmup` at `start_unix_s`, judging
    /// `thresholds`.
    pub(crate) fn new(
        shards: usize,
        start_unix_s: f64,
        warmup: Duration,
        thresholds: &[Threshold],
        metrics: Option<Arc<LiveMetrics>>,
    ) -> LiveMerge {
        LiveMerge {
            pending: vec![VecDeque::new(); shards],
            ended: vec![false; shards],
            merged: Vec::new(),
            start_unix_s,
            warmup_s: warmup.as_secs_f64(),
            max_lag_s: 0.0,
            total_responses: 0,
            total_errors: 0,
            watch: Watch::new(thresholds.to_vec()),
            metrics,
        }
    }

    /// Takes one second streamed by `shard` (the JSON after the line's prefix).
    pub(crate) fn push(&mut self, shard: usize, json: &str) -> Result<(), String> {
        let s: LiveSecond = serde_json::from_str(json)
            .map_err(|e| format!("shard {shard} streamed a second that does not parse: {e}"))?;
        self.pending[shard].push_back(s);
        Ok(())
    }

    /// Notes that `shard` has ended: the seconds it did not give will not come.
    pub(crate) fn end(&mut self, shard: usize) {
        self.ended[shard] = true;
    }

    /// Merges every second that is complete, at `now_unix_s`; calls `show` with each merged
    /// second's view. Returns the reason to stop the load when an `abort` threshold breached
    /// (once).
    pub(crate) fn merge_ready(
        &mut self,
        now_unix_s: f64,
        show: &mut dyn FnMut(&IntervalView),
    ) -> Result<Option<String>, String> {
        let mut stop = None;
        loop {
            // The earliest second any shard has waiting.
            let Some(t) = self
                .pending
                .iter()
                .filter_map(|q| q.front().map(|s| s.second.t_s))
                .min_by(f64::total_cmp)
            else {
                return Ok(stop);
            };
            let same = |s: &LiveSecond| (s.second.t_s - t).abs() < 0.5;
            // Each shard has given it, gone past it (a later second first: it had none), or
            // ended.
            let complete =
                (0..self.pending.len()).all(|i| self.ended[i] || !self.pending[i].is_empty());
            if !complete {
                return Ok(stop);
            }
            let mut sum: Option<SecondSum> = None;
            let mut outcomes = OutcomeCounts::default();
            let mut censored_min: Option<u64> = None;
            for (i, q) in self.pending.iter_mut().enumerate() {
                if !q.front().is_some_and(same) {
                    continue;
                }
                let s = q.pop_front().expect("front just seen");
                match sum.as_mut() {
                    Some(sum) => sum.add(&s.second, i as u32),
                    None => SecondSum::new(&s.second, i as u32).map(|n| sum = Some(n)),
                }
                .map_err(|e| e.to_string())?;
                outcomes.merge(&s.outcomes);
                censored_min = match (censored_min, s.censored_min_ns) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            let sum = sum.expect("the earliest second came from some shard");
            if let Some(why) = self.second(&sum, outcomes, censored_min, now_unix_s, show) {
                stop = Some(why);
            }
            self.merged.push(sum.finish());
        }
    }

    /// One merged second: the lag, the live view, the thresholds.
    fn second(
        &mut self,
        sum: &SecondSum,
        outcomes: OutcomeCounts,
        censored_min_ns: Option<u64>,
        now_unix_s: f64,
        show: &mut dyn FnMut(&IntervalView),
    ) -> Option<String> {
        // `finish` would encode the histogram; the view needs only its figures.
        let s = sum_second(sum);
        let start = s.t_s + self.warmup_s;
        let end_unix_s = self.start_unix_s + start + s.length_s;
        self.max_lag_s = self.max_lag_s.max(now_unix_s - end_unix_s);
        self.total_responses += s.responses;
        self.total_errors += s.errors;
        let length = Duration::from_secs_f64(s.length_s.max(0.0));
        let p99_ms = sum
            .latency()
            .filter(|h| !h.is_empty())
            .map_or(0.0, |h| h.value_at_quantile(0.99) as f64 / 1e6);
        show(&IntervalView {
            index: start.max(0.0).round() as u64,
            elapsed: Duration::from_secs_f64((start + s.length_s).max(0.0)),
            warmup: s.t_s < -0.5,
            responses: s.responses,
            errors: s.errors,
            rps: s.responses as f64 / s.length_s.max(1e-3),
            length,
            p99_ms,
            total_responses: self.total_responses,
            total_errors: self.total_errors,
            ..IntervalView::default()
        });
        let latency = sum
            .latency()
            .cloned()
            .unwrap_or_else(gatebench_model::histogram::new_histogram);
        let target = (s.target_rate > 0.0).then_some(s.target_rate);
        if let Some(m) = &self.metrics {
            m.second(s.t_s < -0.5, s.sent, &outcomes, &latency, length, target);
        }
        if s.t_s < -0.5 || self.watch.is_empty() {
            return None;
        }
        self.watch
            .second(latency, censored_min_ns, outcomes, length, target)
    }

    /// Compares the live merge with `report` (the exact merge of the shards' records), says
    /// so in its `merged.live`, and judges the thresholds on it.
    pub(crate) fn finish(mut self, report: &mut LoadReport, now_unix_s: f64) -> Result<(), String> {
        self.ended.iter_mut().for_each(|e| *e = true);
        self.merge_ready(now_unix_s, &mut |_| {})?;
        let equal = report.timeline.as_deref() == Some(self.merged.as_slice());
        if let Some(m) = report.merged.as_mut() {
            m.live = Some(LiveMergeCheck {
                seconds: self.merged.len() as u64,
                equal_to_final: equal,
                max_lag_s: self.max_lag_s.max(0.0),
            });
        }
        if !self.watch.is_empty() {
            report.thresholds = self.watch.finish(report);
        }
        Ok(())
    }
}

/// The merged second's counts, without encoding its histogram.
fn sum_second(sum: &SecondSum) -> SecondRecord {
    SecondRecord {
        latency: None,
        ..sum.counts().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatebench_model::histogram;
    use gatebench_model::Outcome;

    /// A second of one shard at `t_s` with `n` answers of `us` microseconds each.
    fn second(t_s: f64, n: u64, us: u64) -> String {
        let mut h = histogram::new_histogram();
        h.record_n(us * 1000, n).unwrap();
        let mut outcomes = OutcomeCounts::default();
        outcomes.add(Outcome::Ok, n);
        serde_json::to_string(&LiveSecond {
            second: SecondRecord {
                t_s,
                length_s: 1.0,
                target_rate: 0.0,
                sent: n,
                responses: n,
                errors: 0,
                latency: Some(histogram::encode(&h)),
                detail: Default::default(),
            },
            outcomes,
            censored_min_ns: None,
        })
        .unwrap()
    }

    #[test]
    fn a_second_is_merged_once_every_shard_gave_it_or_ended() {
        let mut live = LiveMerge::new(2, 1000.0, Duration::from_secs(1), &[], None);
        let mut views: Vec<IntervalView> = Vec::new();
        let mut show = |v: &IntervalView| views.push(v.clone());
        live.push(0, &second(-1.0, 10, 100)).unwrap();
        live.push(0, &second(0.0, 10, 100)).unwrap();
        // Shard 1 has given nothing yet: nothing is merged.
        assert_eq!(live.merge_ready(1002.0, &mut show).unwrap(), None);
        live.push(1, &second(-1.0, 5, 300)).unwrap();
        live.merge_ready(1002.5, &mut show).unwrap();
        live.push(1, &second(0.0, 5, 300)).unwrap();
        live.push(0, &second(1.0, 4, 100)).unwrap();
        // Shard 1 ends without second 1: it is merged from shard 0 alone, at the end.
        live.merge_ready(1003.0, &mut show).unwrap();
        live.end(1);
        live.merge_ready(1004.25, &mut show).unwrap();
        let got: Vec<(bool, u64, u64)> = views
            .iter()
            .map(|v| (v.warmup, v.responses, v.total_responses))
            .collect();
        assert_eq!(got, [(true, 15, 15), (false, 15, 30), (false, 4, 34)]);
        // The p99 of the first second is of both shards' values: 5 of 15 at 300 µs.
        assert!((views[0].p99_ms - 0.3).abs() < 0.001, "{}", views[0].p99_ms);
        // The warm-up's second ended at 1000 + 1 and was merged at 1002.5 (1.5 s late); second
        // 0 ended at 1002, merged at 1003; second 1 ended at 1003, merged at 1004.25.
        assert!((live.max_lag_s - 1.5).abs() < 1e-9, "{}", live.max_lag_s);
        let sums: Vec<u64> = live.merged.iter().map(|s| s.responses).collect();
        assert_eq!(sums, [15, 15, 4]);
    }

    #[test]
    fn an_abort_threshold_breaches_on_the_merged_seconds_not_one_shards() {
        let t: Threshold = "p99<0.2ms abort".parse().unwrap();
        let mut live = LiveMerge::new(2, 0.0, Duration::ZERO, &[t], None);
        // Shard 0 alone would hold (100 µs); with shard 1's 300 µs the merged p99 breaches.
        live.push(0, &second(0.0, 100, 100)).unwrap();
        assert_eq!(live.merge_ready(1.0, &mut |_| {}).unwrap(), None);
        live.push(1, &second(0.0, 100, 300)).unwrap();
        let why = live
            .merge_ready(1.5, &mut |_| {})
            .unwrap()
            .expect("breached");
        assert!(
            why.starts_with("threshold 'p99<0.2ms abort' breached"),
            "{why}"
        );
    }

    #[test]
    fn a_second_that_does_not_parse_is_named_with_its_shard() {
        let mut live = LiveMerge::new(2, 0.0, Duration::ZERO, &[], None);
        let e = live.push(1, "{\"second\":").unwrap_err();
        assert!(
            e.starts_with("shard 1 streamed a second that does not parse"),
            "{e}"
        );
    }
}
