//! The latency as a Prometheus native histogram (sparse buckets on an exponential schema), made
//! from the generator's HdrHistograms.
//!
//! The mapping, stated once (docs/metrics.md repeats it):
//! - **Schema 3**: bucket `i` holds the values in `(2^((i-1)/8), 2^(i/8)]` seconds, each bucket
//!   about 9.05 % wider than the one below it (the resolution client_golang picks with its
//!   usual bucket factor 1.1). 100 µs to 10 s takes at most 133 buckets; a run's latencies
//!   usually fill a few dozen.
//! - **Placement**: each recorded value of an HdrHistogram stands for its sub-bucket, whose
//!   width is at most 1/1024 of the value (3 significant digits); it is placed, with its count,
//!   by the sub-bucket's highest equivalent value — the value gatebench's own percentiles
//!   report, and the one the classic buckets and `_sum` use — into the native bucket that holds
//!   it. An HdrHistogram sub-bucket that straddles a native boundary goes wholly to one side:
//!   a native bucket's count can be off by values within 0.1 % of its edge, never more.
//! - **Zero bucket**: threshold 2^-128 s (client_golang's default); it holds values of exactly 0
//!   (a request answered within the clock's resolution), which HdrHistograms can record.
//! - Only positive buckets: latencies are never negative.
//!
//! What it does not do: change the schema as buckets grow (client_golang's bucket limit); a
//! run's latencies span few enough powers of two that schema 3 stays small.

use std::collections::BTreeMap;

use gatebench_model::histogram::LatencyHistogram;

/// The schema: 2^3 buckets per power of two.
pub const SCHEMA: i32 = 3;

/// The zero bucket's upper bound, seconds (client_golang's `DefNativeHistogramZeroThreshold`).
pub const ZERO_THRESHOLD: f64 = 2.938_735_877_055_719e-39;

/// Native buckets of one phase: counts by bucket index, the zero bucket, the sum and count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Native {
    /// Count per positive bucket index (only buckets with a value).
    pub buckets: BTreeMap<i32, u64>,
    /// Values at or below [`ZERO_THRESHOLD`].
    pub zero_count: u64,
}

/// The upper bound of native bucket `i` in schema [`SCHEMA`], seconds.
pub fn upper_bound(i: i32) -> f64 {
    (f64::from(i) / f64::from(1 << SCHEMA)).exp2()
}

/// The index of the native bucket that holds `v` seconds (`v > 0`): the `i` with
/// `upper_bound(i - 1) < v <= upper_bound(i)`.
pub fn index(v: f64) -> i32 {
    let i = (v.log2() * f64::from(1 << SCHEMA)).ceil() as i32;
    // log2 may be off by an ulp next to a boundary: settle it against the bounds themselves.
    if v > upper_bound(i) {
        i + 1
    } else if v <= upper_bound(i - 1) {
        i - 1
    } else {
        i
    }
}

impl Native {
    /// Adds every value of `h` (nanoseconds), as the module's doc says.
    pub fn add(&mut self, h: &LatencyHistogram) {
        for v in h.iter_recorded() {
            let n = v.count_at_value();
            // For recorded values, the sub-bucket's highest equivalent value.
            let s = v.value_iterated_to() as f64 / 1e9;
            self.add_value(s, n);
        }
    }

    /// Adds `n` values of `s` seconds.
    pub fn add_value(&mut self, s: f64, n: u64) {
        if s <= ZERO_THRESHOLD {
            self.zero_count += n;
        } else {
            *self.buckets.entry(index(s)).or_default() += n;
        }
    }

    /// The buckets as the exposition writes them: spans of consecutive indices
    /// `(offset, length)` — the first offset is the first index, each later one the gap since
    /// the previous span — and each bucket's count as the difference from the bucket before
    /// (the first from 0).
    pub fn spans_and_deltas(&self) -> (Vec<(i32, u32)>, Vec<i64>) {
        let mut spans: Vec<(i32, u32)> = Vec::new();
        let mut deltas = Vec::with_capacity(self.buckets.len());
        let (mut prev_index, mut prev_count) = (None::<i32>, 0i64);
        for (&i, &c) in &self.buckets {
            match prev_index {
                Some(p) if i == p + 1 => spans.last_mut().expect("a span is open").1 += 1,
                Some(p) => spans.push((i - p - 1, 1)),
                None => spans.push((i, 1)),
            }
            let c = c as i64;
            deltas.push(c - prev_count);
            prev_count = c;
            prev_index = Some(i);
        }
        (spans, deltas)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatebench_model::histogram::new_histogram;

    #[test]
    fn buckets_are_upper_inclusive_powers_of_two_to_the_eighth() {
        assert_eq!(index(1.0), 0);
        assert_eq!(index(2.0), 8);
        assert_eq!(index(0.5), -8);
        assert_eq!(index(1.0001), 1);
        assert_eq!(index(upper_bound(-77)), -77);
        assert_eq!(index(upper_bound(-77) * 1.000_001), -76);
        // 3 ms lies in (2^(-68/8), 2^(-67/8)] = (2.762 ms, 3.012 ms].
        assert_eq!(index(0.003), -67);
        for i in -250..100 {
            assert_eq!(index(upper_bound(i)), i, "{i}");
        }
    }

    #[test]
    fn spans_and_deltas_encode_the_counts() {
        let mut n = Native::default();
        n.add_value(1.0, 3); // 0
        n.add_value(1.05, 5); // 1
        n.add_value(2.0, 2); // 8
        n.add_value(0.0, 4);
        let (spans, deltas) = n.spans_and_deltas();
        assert_eq!(spans, [(0, 2), (6, 1)]);
        assert_eq!(deltas, [3, 2, -3]);
        assert_eq!(n.zero_count, 4);
    }

    /// Every value lands in the native bucket of its HdrHistogram-reported value, and the
    /// count is the HdrHistogram's.
    #[test]
    fn an_hdr_histogram_maps_with_its_count() {
        let mut h = new_histogram();
        h.record_n(2_000_000, 90).unwrap(); // 2 ms
        h.record_n(300_000_000, 10).unwrap(); // 300 ms
        let mut n = Native::default();
        n.add(&h);
        assert_eq!(n.buckets.values().sum::<u64>(), 100);
        let p99 = h.value_at_quantile(0.99) as f64 / 1e9;
        assert_eq!(n.buckets[&index(p99)], 10);
        assert_eq!(n.buckets[&index(0.002)], 90);
    }
}
