//! Change points along the version order: the versions where a cell's metric moved to a new
//! level, each with the size of the shift, its confidence interval and its significance.
//!
//! The method is E-divisive means (Matteson & James 2014, "A Nonparametric Approach for
//! Multiple Change Point Analysis of Multivariate Data", JASA 109(505)), as MongoDB runs it on
//! its performance tests (Daly et al. 2020, "Change Point Detection in Software Performance
//! Testing", ICPE) and as Apache Otava (formerly Hunter) does: bisect the series where the
//! energy-distance statistic
//!
//! ```text
//! Q(τ) = τ·m/(τ+m) · ( 2/(τ·m)·Σ|Xi−Yj| − 1/τ²·Σ|Xi−Xk| − 1/m²·Σ|Yj−Yl| )
//! ```
//!
//! (X the τ observations before the split, Y the m after, exponent α = 1) is largest, accept the
//! split when a permutation test finds it significant, and repeat inside the segments between
//! accepted splits. The permutation test shuffles the observations inside every current segment
//! and takes the largest statistic over all segments, R times; the p-value is
//! `(1 + #{permuted ≥ observed}) / (R + 1)`.
//!
//! The statistic is MongoDB's form (within-sample sums divided by n², a V-statistic, which is
//! never negative), and is checked value for value against MongoDB's
//! `signal-processing-algorithms` package in the tests
//! (`scripts/changepoint-reference.py` writes the fixture). Three deliberate differences:
//! - the observations are every repeat of every version, in version order, and a split may
//!   only fall between versions (never between two repeats of one version);
//! - a minimum segment length, in versions ([`Options::min_segment`]);
//! - the p-value counts the observed arrangement among the permutations (`1 +` above; the
//!   reference divides the count alone by R + 1, which can give p = 0), and the shuffles come
//!   from a seeded SplitMix64, so a run is reproducible.
//!
//! The size of each shift is the Hodges-Lehmann estimate between the segment before and the
//! segment after, with Moses's interval, from `gatebench-report`'s statistics (the same the
//! `compare` command uses).
//!
//! What it does not do: read the store, judge releases (that is [`crate::gate`]), or look at
//! more than one metric at once (E-divisive can; one metric at a time says which one moved).
//! Non-finite values are left out; a version without a finite value is skipped.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use gatebench_report::stats;
use serde::{Deserialize, Serialize};

use crate::series::Series;

/// Up to this many observations on both sides together the shift's interval is read off the
/// exact distribution; beyond, the normal approximation (the exact one costs a second at 100
/// against 100, and segments of a long series are that long).
pub const SHIFT_EXACT_LIMIT: usize = 40;

/// How change points are searched for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// A split is accepted when its permutation p-value is at most this.
    pub alpha: f64,
    /// Permutations per significance test. The smallest p-value possible is `1 / (R + 1)`, so
    /// it must be at least `1 / alpha − 1` for anything to be found.
    pub permutations: usize,
    /// The fewest versions a segment may have (at least 1).
    pub min_segment: usize,
    /// Seed of the shuffles: the same series, options and seed give the same change points.
    pub seed: u64,
    /// Confidence level of the shift's interval (e.g. 0.95).
    pub confidence: f64,
}

impl Default for Options {
    /// α = 0.01, 199 permutations, segments of one version or more, 95 % intervals.
    ///
    /// α is 0.01 rather than the customary 0.05 because every series is tested on its own and
    /// a suite has hundreds (40 cells × 7 metrics): at 0.05 a stable series shows a false change
    /// once in twenty, at 0.01 about once in a hundred (the rates are measured in the tests).
    /// With 199 permutations the smallest p-value is 0.005, so a clear shift still passes.
    fn default() -> Options {
        Options {
            alpha: 0.01,
            permutations: 199,
            min_segment: 1,
            seed: 0x6761_7465_6265_6e63,
            confidence: 0.95,
        }
    }
}

/// One change point of a series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChangePoint {
    /// Index in the series' points of the first version on the new level.
    pub index: usize,
    /// That version.
    pub version: String,
    /// The E-divisive statistic `Q` at the split, in the segment it was found in.
    pub statistic: f64,
    /// The permutation test's p-value.
    pub p_value: f64,
    /// Median of the segment before (from the previous change point or the start).
    pub before_median: f64,
    /// Median of the segment after (up to the next change point or the end).
    pub after_median: f64,
    /// Observations (repeats) in the segment before.
    pub before_n: usize,
    /// Observations (repeats) in the segment after.
    pub after_n: usize,
    /// The shift, after − before: the Hodges-Lehmann estimate, in the metric's unit.
    pub shift: f64,
    /// Lower end of the shift's interval.
    pub shift_low: f64,
    /// Upper end of the shift's interval.
    pub shift_high: f64,
    /// The interval's actual confidence level.
    pub confidence: f64,
    /// The shift as a percentage of the before median; `None` when that median is 0.
    pub shift_pct: Option<f64>,
    /// The interval's ends as percentages of the before median.
    pub shift_pct_interval: Option<(f64, f64)>,
    /// Whether the shift is for the worse given the metric's direction (lower throughput,
    /// higher latency, errors, CPU or memory).
    pub regression: bool,
}

/// A split found on raw observations ([`e_divisive`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Split {
    /// Index of the first observation after the split.
    pub at: usize,
    /// The statistic `Q` at the split.
    pub statistic: f64,
    /// The permutation p-value.
    pub p_value: f64,
}

/// SplitMix64 (Steele, Lea & Flood 2014; Vigna's reference constants): a tiny, fast,
/// well-mixed generator, enough for shuffles and synthetic test series. Not cryptographic.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..n` (Lemire's multiply-shift; the bias, below n / 2^64, does not
    /// matter here). `n` must be positive.
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// A uniform float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A standard normal deviate (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit();
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// Shuffles `v` in place (Fisher-Yates).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

/// The statistic `Q(τ)` for every split `τ` in `0..values.len()` (τ = 0 gives 0), exactly as
/// MongoDB's `_calculate_t_stats` defines it: the tests compare the two value for value.
pub fn statistics(values: &[f64]) -> Vec<f64> {
    let mut scratch = Scratch::default();
    scratch.sums(values);
    (0..values.len())
        .map(|tau| scratch.q(tau, values.len()))
        .collect()
}

/// Scratch space for the statistic: per observation, the sum of its distances to the
/// observations before it and after it, as running prefix sums.
#[derive(Default)]
struct Scratch {
    /// `left[k]` = Σ_{i<k} |w_k − w_i|, as a prefix sum over k (len L + 1).
    left: Vec<f64>,
    /// `right[k]` = Σ_{j>k} |w_k − w_j|, as a prefix sum over k (len L + 1).
    right: Vec<f64>,
    /// Shuffled copy of a window.
    buf: Vec<f64>,
}

/// Σ |x − w| over `s`, with four accumulators so the compiler can vectorise it.
fn dist_sum(s: &[f64], w: f64) -> f64 {
    let mut acc = [0.0f64; 4];
    let chunks = s.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        acc[0] += (c[0] - w).abs();
        acc[1] += (c[1] - w).abs();
        acc[2] += (c[2] - w).abs();
        acc[3] += (c[3] - w).abs();
    }
    let mut sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for x in rest {
        sum += (x - w).abs();
    }
    sum
}

impl Scratch {
    /// Fills the prefix sums for `w`: O(L²) distance evaluations, no matrix.
    fn sums(&mut self, w: &[f64]) {
        let l = w.len();
        self.left.clear();
        self.right.clear();
        self.left.push(0.0);
        self.right.push(0.0);
        let (mut pl, mut pr) = (0.0, 0.0);
        for (k, &x) in w.iter().enumerate() {
            pl += dist_sum(&w[..k], x);
            pr += dist_sum(&w[k + 1..l], x);
            self.left.push(pl);
            self.right.push(pr);
        }
    }

    /// Q at split `tau` of a window of `l` observations whose sums are filled.
    fn q(&self, tau: usize, l: usize) -> f64 {
        let m = l - tau;
        if tau == 0 || m == 0 {
            return 0.0;
        }
        let total = self.left[l];
        // Pairs within X, within Y, and across.
        let x = self.left[tau];
        let y = total - self.right[tau];
        let cross = self.right[tau] - self.left[tau];
        let (t, m) = (tau as f64, m as f64);
        let e = 2.0 * cross / (t * m) - 2.0 * x / (t * t) - 2.0 * y / (m * m);
        t * m / (t + m) * e
    }

    /// The best split of `w` among `candidates` (offsets into `w`): the first largest `Q`.
    fn best(&mut self, w: &[f64], candidates: &[usize]) -> Option<(usize, f64)> {
        if candidates.is_empty() {
            return None;
        }
        self.sums(w);
        let mut best: Option<(usize, f64)> = None;
        for &c in candidates {
            let q = self.q(c, w.len());
            if best.is_none_or(|(_, b)| q > b) {
                best = Some((c, q));
            }
        }
        best
    }
}

/// E-divisive on raw observations. `cuts` are the observation indices where a split may fall,
/// ascending, starting with 0 and ending with `obs.len()` (the version boundaries); a segment
/// keeps at least `opts.min_segment` of the gaps between cuts. Returns the accepted splits in
/// the order they were found.
pub fn e_divisive(obs: &[f64], cuts: &[usize], opts: &Options) -> Vec<Split> {
    let mut rng = SplitMix64::new(opts.seed);
    let mut scratch = Scratch::default();
    let min = opts.min_segment.max(1);
    if cuts.len() < 2 || opts.permutations == 0 {
        return Vec::new();
    }
    // Accepted splits, as indices into `cuts`.
    let mut accepted: Vec<usize> = Vec::new();
    let mut found = Vec::new();
    let mut memo: HashMap<(usize, usize), Option<(usize, f64)>> = HashMap::new();
    loop {
        let mut bounds = accepted.clone();
        bounds.push(0);
        bounds.push(cuts.len() - 1);
        bounds.sort_unstable();
        let windows: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
        // Candidate offsets inside each window.
        let candidates: Vec<Vec<usize>> = windows
            .iter()
            .map(|&(a, b)| {
                if b < a + 2 * min {
                    return Vec::new();
                }
                (a + min..=b - min).map(|k| cuts[k] - cuts[a]).collect()
            })
            .collect();
        let mut best: Option<(usize, f64)> = None;
        for (&(a, b), cand) in windows.iter().zip(&candidates) {
            let local = *memo
                .entry((a, b))
                .or_insert_with(|| scratch.best(&obs[cuts[a]..cuts[b]], cand));
            if let Some((off, q)) = local {
                if best.is_none_or(|(_, bq)| q > bq) {
                    best = Some((cuts[a] + off, q));
                }
            }
        }
        let Some((at, q)) = best else {
            break;
        };
        let mut at_least_as_large = 0usize;
        for _ in 0..opts.permutations {
            let mut top = f64::NEG_INFINITY;
            for (&(a, b), cand) in windows.iter().zip(&candidates) {
                if cand.is_empty() {
                    continue;
                }
                let mut buf = std::mem::take(&mut scratch.buf);
                buf.clear();
                buf.extend_from_slice(&obs[cuts[a]..cuts[b]]);
                rng.shuffle(&mut buf);
                if let Some((_, pq)) = scratch.best(&buf, cand) {
                    top = top.max(pq);
                }
                scratch.buf = buf;
            }
            if top >= q {
                at_least_as_large += 1;
            }
        }
        let p_value = (1 + at_least_as_large) as f64 / (opts.permutations + 1) as f64;
        if p_value > opts.alpha {
            break;
        }
        let k = cuts.binary_search(&at).expect("splits fall on cuts");
        accepted.push(k);
        found.push(Split {
            at,
            statistic: q,
            p_value,
        });
    }
    found
}

/// The change points of one series.
pub fn detect(series: &Series, opts: &Options) -> Vec<ChangePoint> {
    // Observations in version order; `point_of[k]` is the point starting at `cuts[k]`.
    let mut obs = Vec::new();
    let mut cuts = vec![0];
    let mut point_of = Vec::new();
    for (i, p) in series.points.iter().enumerate() {
        let before = obs.len();
        obs.extend(p.samples.iter().copied().filter(|v| v.is_finite()));
        if obs.len() > before {
            point_of.push(i);
            cuts.push(obs.len());
        }
    }
    let mut splits = e_divisive(&obs, &cuts, opts);
    splits.sort_by_key(|s| s.at);
    let edges: Vec<usize> = std::iter::once(0)
        .chain(splits.iter().map(|s| s.at))
        .chain(std::iter::once(obs.len()))
        .collect();
    splits
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let before = &obs[edges[i]..edges[i + 1]];
            let after = &obs[edges[i + 1]..edges[i + 2]];
            let k = cuts.binary_search(&s.at).expect("splits fall on cuts");
            let index = point_of[k];
            let shift =
                stats::hodges_lehmann_within(before, after, opts.confidence, SHIFT_EXACT_LIMIT)
                    .expect("segments are never empty");
            let before_median = stats::median(before).expect("non-empty");
            let pct = |v: f64| (before_median != 0.0).then(|| v / before_median.abs() * 100.0);
            ChangePoint {
                index,
                version: series.points[index].version.clone(),
                statistic: s.statistic,
                p_value: s.p_value,
                before_median,
                after_median: stats::median(after).expect("non-empty"),
                before_n: before.len(),
                after_n: after.len(),
                shift: shift.estimate,
                shift_low: shift.low,
                shift_high: shift.high,
                confidence: shift.level,
                shift_pct: pct(shift.estimate),
                shift_pct_interval: pct(shift.low).zip(pct(shift.high)),
                regression: if series.metric.higher_is_better() {
                    shift.estimate < 0.0
                } else {
                    shift.estimate > 0.0
                },
            }
        })
        .collect()
}

/// The change points of many series, on every core (`std::thread::available_parallelism`);
/// the result is in the order of `series` and the same as calling [`detect`] on each.
pub fn detect_all(series: &[Series], opts: &Options) -> Vec<Vec<ChangePoint>> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(series.len().max(1));
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<Vec<ChangePoint>>>> = Mutex::new(vec![None; series.len()]);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(one) = series.get(i) else {
                    break;
                };
                let found = detect(one, opts);
                out.lock().expect("a detector panicked")[i] = Some(found);
            });
        }
    });
    out.into_inner()
        .expect("a detector panicked")
        .into_iter()
        .map(|c| c.expect("every series was analysed"))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;
    use crate::series::{Metric, Point};

    /// A series of `versions` × `repeats` values around `level`, relative noise `cv`, with the
    /// level multiplied by `1 + shift` from version `at` on.
    pub(crate) fn synthetic(
        rng: &mut SplitMix64,
        versions: usize,
        repeats: usize,
        cv: f64,
        shift: Option<(usize, f64)>,
    ) -> Series {
        let level = 20_000.0;
        Series {
            suite: "synthetic".into(),
            cell: "proxy_u100_s50_d0".into(),
            metric: Metric::Throughput,
            points: (0..versions)
                .map(|v| {
                    let mean = match shift {
                        Some((at, s)) if v >= at => level * (1.0 + s),
                        _ => level,
                    };
                    Point {
                        version: format!("1.{v}.0"),
                        samples: (0..repeats)
                            .map(|_| mean * (1.0 + cv * rng.normal()))
                            .collect(),
                    }
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::synthetic;
    use super::*;
    use crate::series::{Metric, Point};

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // Vigna's splitmix64.c with seed 1234567: the first outputs.
        let mut r = SplitMix64::new(1_234_567);
        assert_eq!(r.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(r.next_u64(), 3_203_168_211_198_807_973);
        let mut r = SplitMix64::new(7);
        let mut v: Vec<usize> = (0..10).collect();
        r.shuffle(&mut v);
        let mut sorted = v.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..10).collect::<Vec<_>>());
        assert_ne!(v, sorted, "a shuffle of ten moves something");
    }

    #[test]
    fn the_statistic_peaks_at_the_shift() {
        let mut v = vec![10.0; 20];
        v.extend([20.0; 10]);
        let q = statistics(&v);
        let arg = (0..q.len()).max_by(|a, b| q[*a].total_cmp(&q[*b])).unwrap();
        assert_eq!(arg, 20);
        // Constant series: zero everywhere.
        assert!(statistics(&[3.0; 12]).iter().all(|q| *q == 0.0));
    }

    #[test]
    fn a_clear_shift_is_found_with_its_size() {
        let mut rng = SplitMix64::new(11);
        let s = synthetic(&mut rng, 20, 5, 0.01, Some((12, -0.10)));
        let cps = detect(&s, &Options::default());
        assert_eq!(cps.len(), 1, "{cps:?}");
        let c = &cps[0];
        assert_eq!((c.index, c.version.as_str()), (12, "1.12.0"));
        let pct = c.shift_pct.unwrap();
        assert!((pct + 10.0).abs() < 1.5, "{c:?}");
        let (lo, hi) = c.shift_pct_interval.unwrap();
        assert!(lo < pct && pct < hi && hi < 0.0, "{c:?}");
        assert!(c.regression, "lower throughput is a regression");
        assert!(c.p_value <= 0.01);
        assert_eq!((c.before_n, c.after_n), (60, 40));
    }

    #[test]
    fn splits_fall_only_between_versions_and_respect_the_minimum_segment() {
        // A shift in the middle of version 3's repeats can only be reported at 3 or 4.
        let mut s = Series {
            suite: "s".into(),
            cell: "c".into(),
            metric: Metric::P99,
            points: (0..8)
                .map(|v| Point {
                    version: v.to_string(),
                    samples: vec![if v < 3 { 10.0 } else { 20.0 }; 5],
                })
                .collect(),
        };
        s.points[3].samples = vec![10.0, 10.0, 20.0, 20.0, 20.0];
        for c in detect(&s, &Options::default()) {
            assert!(c.index == 3 || c.index == 4, "{c:?}");
        }
        // A shift at the last version, with segments of at least two versions: not allowed.
        let mut s2 = s.clone();
        for (v, p) in s2.points.iter_mut().enumerate() {
            p.samples = vec![if v < 7 { 10.0 } else { 20.0 }; 5];
        }
        let cps = detect(&s2, &Options::default());
        assert_eq!(cps.iter().map(|c| c.index).collect::<Vec<_>>(), vec![7]);
        let opts = Options {
            min_segment: 2,
            ..Options::default()
        };
        assert!(detect(&s2, &opts).iter().all(|c| c.index != 7));
    }

    #[test]
    fn results_are_reproducible_and_the_seed_matters_only_for_the_p_value() {
        let mut rng = SplitMix64::new(5);
        let s = synthetic(&mut rng, 30, 5, 0.02, Some((9, 0.06)));
        let a = detect(&s, &Options::default());
        let b = detect(&s, &Options::default());
        assert_eq!(a, b);
        let all = detect_all(&[s.clone(), s.clone()], &Options::default());
        assert_eq!(all, vec![a.clone(), a.clone()]);
        // Another seed shuffles differently: the same change, the p-value may differ.
        let other = detect(
            &s,
            &Options {
                seed: 99,
                ..Options::default()
            },
        );
        assert_eq!(
            other.iter().map(|c| c.index).collect::<Vec<_>>(),
            a.iter().map(|c| c.index).collect::<Vec<_>>()
        );
        assert_eq!(a.len(), 1);
        assert_eq!(other[0].shift, a[0].shift);
    }

    #[test]
    fn constant_and_non_finite_values_give_nothing_and_do_not_panic() {
        let s = Series {
            suite: "s".into(),
            cell: "c".into(),
            metric: Metric::ErrorPct,
            points: (0..10)
                .map(|v| Point {
                    version: v.to_string(),
                    samples: if v == 4 { vec![f64::NAN] } else { vec![0.0; 3] },
                })
                .collect(),
        };
        assert!(detect(&s, &Options::default()).is_empty());
        let empty = Series {
            points: Vec::new(),
            ..s
        };
        assert!(detect(&empty, &Options::default()).is_empty());
    }

    /// The reference's fixture: series generated and analysed by MongoDB's
    /// `signal-processing-algorithms` (scripts/changepoint-reference.py).
    #[derive(serde::Deserialize)]
    struct Reference {
        permutations: usize,
        pvalue: f64,
        series: Vec<RefSeries>,
    }

    #[derive(serde::Deserialize)]
    struct RefSeries {
        name: String,
        repeats: usize,
        values: Vec<f64>,
        statistics: Vec<f64>,
        change_points: Vec<usize>,
    }

    #[test]
    fn agrees_with_mongodb_signal_processing_algorithms() {
        let r: Reference =
            serde_json::from_str(include_str!("../tests/fixtures/changepoint-reference.json"))
                .expect("the fixture parses");
        assert!(r.series.len() >= 5);
        for s in &r.series {
            // The statistic, value for value (sums in another order: relative 1e-9).
            let ours = statistics(&s.values);
            assert_eq!(ours.len(), s.statistics.len(), "{}", s.name);
            for (tau, (a, b)) in ours.iter().zip(&s.statistics).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                    "{}: Q({tau}) = {a}, reference {b}",
                    s.name
                );
            }
            // The change points, splitting between versions only as the reference happened to.
            let cuts: Vec<usize> = (0..=s.values.len() / s.repeats)
                .map(|v| v * s.repeats)
                .collect();
            let opts = Options {
                alpha: r.pvalue,
                permutations: r.permutations.max(199),
                ..Options::default()
            };
            let mut ours: Vec<usize> = e_divisive(&s.values, &cuts, &opts)
                .iter()
                .map(|x| x.at)
                .collect();
            ours.sort_unstable();
            let mut theirs = s.change_points.clone();
            theirs.sort_unstable();
            assert_eq!(ours, theirs, "{}", s.name);
        }
    }

    /// Runs `n` synthetic series per case and counts what is found.
    pub(super) fn rates(n: usize, opts: &Options) -> (usize, usize, usize) {
        let mut rng = SplitMix64::new(2026);
        let mut shifted = Vec::new();
        let mut truth = Vec::new();
        let mut stable = Vec::new();
        for i in 0..n {
            let versions = 20 + rng.below(31);
            let at = 1 + rng.below(versions - 1);
            let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
            shifted.push(synthetic(
                &mut rng,
                versions,
                5,
                0.02,
                Some((at, 0.05 * sign)),
            ));
            truth.push(at);
            let versions = 20 + rng.below(31);
            stable.push(synthetic(&mut rng, versions, 5, 0.02, None));
        }
        let found = detect_all(&shifted, opts);
        let right = found
            .iter()
            .zip(&truth)
            .filter(|(cps, at)| cps.len() == 1 && cps[0].index == **at)
            .count();
        let extra: usize = found
            .iter()
            .zip(&truth)
            .map(|(cps, at)| cps.iter().filter(|c| c.index != *at).count())
            .sum();
        let false_changes: usize = detect_all(&stable, opts).iter().map(Vec::len).sum();
        eprintln!(
            "{n} shifted series: {right} found exactly at the shift, {extra} extra change points; \
             {n} stable series: {false_changes} false changes"
        );
        (right, extra, false_changes)
    }

    /// The issue's figures: a 5 % shift in repeats varying by 2 % found at the right version in
    /// at least 95 % of series; at most 1 false change per 100 stable series.
    #[test]
    fn detection_rates_on_synthetic_series() {
        let n = 200;
        let (right, _, false_changes) = rates(n, &Options::default());
        assert!(
            right * 100 >= 95 * n,
            "found at the right version in {right} of {n}"
        );
        assert!(
            false_changes * 100 <= n,
            "{false_changes} false changes in {n} stable series"
        );
    }
}

/// The issue's speed figure: 40 cells × 7 metrics × 50 versions × 5 repeats in ≤ 10 s on two
/// cores. Run with `cargo test --release -p gatebench-history -- --ignored --nocapture
/// whole_suite`. Last run, 2026-11-28, 2 cores shared with other builds: 280 series, 275
/// change points, 2.2 s. `rates_at_other_levels` printed, for 200 series each: at α = 0.05
/// 192 found exactly, 11 false changes in stable series; at α = 0.01 196 and 2.
#[cfg(test)]
mod speed {
    use super::tests_support::synthetic;
    use super::*;

    #[test]
    #[ignore = "timing; run in release"]
    fn whole_suite_of_series() {
        let mut rng = SplitMix64::new(1);
        let series: Vec<Series> = (0..40 * 7)
            .map(|i| {
                // A third stable, a third with one 5 % step, a third with two.
                let shift = match i % 3 {
                    0 => None,
                    _ => Some((10 + rng.below(35), if i % 2 == 0 { 0.05 } else { -0.05 })),
                };
                let mut s = synthetic(&mut rng, 50, 5, 0.02, shift);
                if i % 3 == 2 {
                    for p in &mut s.points[40..] {
                        for v in &mut p.samples {
                            *v *= 1.08;
                        }
                    }
                }
                s
            })
            .collect();
        let t = std::time::Instant::now();
        let found = detect_all(&series, &Options::default());
        let took = t.elapsed();
        let n: usize = found.iter().map(Vec::len).sum();
        eprintln!(
            "{} series of 50 versions × 5 repeats on {} threads: {n} change points in {took:?}",
            series.len(),
            std::thread::available_parallelism().map_or(1, |n| n.get())
        );
        assert!(took.as_secs_f64() <= 10.0, "{took:?}");
    }

    #[test]
    #[ignore = "rates at other significance levels; run in release"]
    fn rates_at_other_levels() {
        for alpha in [0.05, 0.01] {
            let opts = Options {
                alpha,
                ..Options::default()
            };
            eprint!("alpha {alpha}: ");
            let _ = super::tests::rates(200, &opts);
        }
    }
}
