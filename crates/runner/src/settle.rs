//! `run --until-stable`: a load cell is repeated until the median of its throughput is known
//! closely enough, or a cap is reached. After each repeat the distribution-free confidence
//! interval of the median (order statistics of the binomial(n, ½) distribution, as in
//! Conover, *Practical Nonparametric Statistics*, §3.2) is compared with the bound; the cell
//! has settled when the interval's half-width, relative to the median, is within it.
//!
//! Pure functions of the repeats' figures; the run loop ([`crate::run`]) decides what runs.

use gatebench_model::{CellRecord, CellStatus};

/// How to repeat.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UntilStable {
    /// The largest relative half-width of the median's interval that counts as settled, e.g.
    /// 0.02 for ±2 %.
    pub bound: f64,
    /// The confidence level of the interval (0.95).
    pub confidence: f64,
    /// The most repeats a cell gets.
    pub max_repeats: u32,
}

impl UntilStable {
    /// The fewest repeats whose extreme values bound the median at the confidence level: no
    /// interval exists below it (6 at 95 %: 1 − 2 × 0.5⁶ = 0.969).
    pub fn min_repeats(&self) -> u32 {
        (1..=64)
            .find(|&n| 1.0 - 2.0 * 0.5f64.powi(n as i32) >= self.confidence)
            .unwrap_or(64)
    }
}

/// Where a cell stands after its repeats so far.
#[derive(Clone, Debug, PartialEq)]
pub struct Settling {
    /// Usable repeats (finished, not generator-bound).
    pub n: usize,
    /// Their median throughput, req/s.
    pub median: f64,
    /// The interval's half-width relative to the median; `None` below the fewest repeats.
    pub half_width: Option<f64>,
    /// Whether it is within the bound.
    pub settled: bool,
}

/// The throughput of every usable repeat among `records`.
pub fn throughputs<'a>(records: impl Iterator<Item = &'a CellRecord>) -> Vec<f64> {
    records
        .filter(|r| r.status == CellStatus::Ok)
        .filter_map(|r| r.load.as_ref())
        .filter(|l| l.valid)
        .map(|l| l.measurement.throughput_rps)
        .collect()
}

/// The median's distribution-free interval of `values` at `confidence`: the `k`-th smallest
/// and `k`-th largest value for the largest `k` whose coverage, 1 − 2·P(Bin(n, ½) < k), is at
/// least `confidence`. `None` when no such `k` exists (too few values).
pub fn median_interval(values: &[f64], confidence: f64) -> Option<(f64, f64)> {
    let n = values.len();
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    // P(Bin(n, ½) ≤ j) for j = 0, 1, …
    let mut cdf = Vec::with_capacity(n + 1);
    let (mut term, mut sum) = (0.5f64.powi(n as i32), 0.0);
    for j in 0..=n {
        sum += term;
        cdf.push(sum);
        term *= (n - j) as f64 / (j + 1) as f64;
    }
    // Coverage with the k-th order statistics (1-based) is 1 − 2·P(X ≤ k − 1).
    let k = (1..=n / 2)
        .take_while(|&k| 1.0 - 2.0 * cdf[k - 1] >= confidence)
        .last()?;
    Some((sorted[k - 1], sorted[n - k]))
}

/// Where the repeats `values` of one cell stand against `how`.
pub fn settling(values: &[f64], how: &UntilStable) -> Settling {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = match n {
        0 => 0.0,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    };
    let half_width = (n as u32 >= how.min_repeats())
        .then(|| median_interval(&sorted, how.confidence))
        .flatten()
        .filter(|_| median > 0.0)
        .map(|(lo, hi)| (hi - lo) / 2.0 / median);
    Settling {
        n,
        median,
        half_width,
        settled: half_width.is_some_and(|h| h <= how.bound),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOW: UntilStable = UntilStable {
        bound: 0.02,
        confidence: 0.95,
        max_repeats: 20,
    };

    #[test]
    fn the_median_interval_is_the_order_statistics_of_the_binomial() {
        assert_eq!(HOW.min_repeats(), 6);
        // Five values can never bound the median at 95 % (1 − 2/32 = 0.9375).
        assert_eq!(median_interval(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95), None);
        let six = [6.0, 1.0, 5.0, 2.0, 4.0, 3.0];
        assert_eq!(median_interval(&six, 0.95), Some((1.0, 6.0)));
        // n = 20: P(Bin(20, ½) ≤ 5) = 0.0207, so k = 6 (coverage 0.959), k = 7 falls short.
        let twenty: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(median_interval(&twenty, 0.95), Some((6.0, 15.0)));
    }

    #[test]
    fn tight_repeats_settle_and_spread_ones_do_not() {
        let tight = [100.0, 100.5, 99.8, 100.2, 99.9, 100.1];
        let s = settling(&tight, &HOW);
        assert!(s.settled && s.half_width.unwrap() < 0.004, "{s:?}");
        let spread = [100.0, 110.0, 90.0, 105.0, 95.0, 100.0];
        let s = settling(&spread, &HOW);
        assert!(
            !s.settled && (s.half_width.unwrap() - 0.1).abs() < 1e-9,
            "{s:?}"
        );
        // Below the fewest repeats nothing settles, however tight.
        let s = settling(&tight[..5], &HOW);
        assert_eq!((s.settled, s.half_width), (false, None));
    }
}
