//! The statistics of a comparison, for a handful of noisy repeats per side: the Mann-Whitney U
//! test with exact p-values, the Hodges-Lehmann shift with its distribution-free confidence
//! interval, medians and geometric means.
//!
//! Why these: benchmark repeats are few (3–10), not normal, and have outliers (a noisy
//! neighbour, a GC). benchstat compares them with the Mann-Whitney U test at α = 0.05 and
//! reports medians; we do the same, with the exact null distribution (not the normal
//! approximation) so small samples get honest p-values, ties (identical values, e.g. 0 %
//! errors on both sides) handled by midranks. The change is the Hodges-Lehmann estimator (the
//! median of all pairwise differences) and its interval is Moses's, read off the same exact
//! distribution (Hollander & Wolfe, *Nonparametric Statistical Methods*, §4.3), so the test and
//! the interval agree. For ratios the same is done on logarithms.
//!
//! A consequence worth stating: with n and m repeats the smallest two-sided p-value the test can
//! produce is `2 / C(n+m, n)` — 0.100 for 3 against 3, 0.029 for 4 against 4, 0.008 for 5
//! against 5 — so below 4 repeats per side nothing can be significant at 0.05
//! ([`min_p_value`]). Callers say so instead of printing "no change".

/// The result of a Mann-Whitney U test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MannWhitney {
    /// U of the first sample: pairs `(a, b)` with `a > b`, ties counting one half.
    pub u: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// Whether `p_value` is exact (the permutation distribution) rather than the normal
    /// approximation (used only beyond [`EXACT_LIMIT`] values in all).
    pub exact: bool,
}

/// Up to this many values in both samples together the p-value is exact.
pub const EXACT_LIMIT: usize = 200;

/// The median (the mean of the middle two for an even count); `None` when empty.
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// The geometric mean of positive values; `None` when empty or when one is not positive.
pub fn geomean(v: &[f64]) -> Option<f64> {
    if v.is_empty() || v.iter().any(|x| !(*x > 0.0 && x.is_finite())) {
        return None;
    }
    Some((v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

/// `C(n, k)` as a float (exact up to 2^53).
pub fn binomial(n: usize, k: usize) -> f64 {
    let k = k.min(n - k.min(n));
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// The smallest two-sided p-value a Mann-Whitney U test of `n` against `m` values can give:
/// both samples perfectly apart, `2 / C(n+m, n)` (at most 1).
pub fn min_p_value(n: usize, m: usize) -> f64 {
    if n == 0 || m == 0 {
        return 1.0;
    }
    (2.0 / binomial(n + m, n)).min(1.0)
}

/// Mann-Whitney U test of `a` against `b`, two-sided; `None` when a sample is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let (n, m) = (a.len(), b.len());
    if n == 0 || m == 0 {
        return None;
    }
    // Doubled midranks are integers, so the permutation distribution of their sum can be
    // counted exactly.
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|x| (*x, true))
        .chain(b.iter().map(|x| (*x, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let total = n + m;
    let mut ranks2 = vec![0u64; total];
    let mut i = 0;
    while i < total {
        let mut j = i;
        while j + 1 < total && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        // Ranks i+1 ..= j+1 share their mean; doubled: i + j + 2.
        for r in &mut ranks2[i..=j] {
            *r = (i + j + 2) as u64;
        }
        i = j + 1;
    }
    let r2_a: u64 = pooled
        .iter()
        .zip(&ranks2)
        .filter(|(p, _)| p.1)
        .map(|(_, r)| *r)
        .sum();
    let n_f = n as f64;
    let u = r2_a as f64 / 2.0 - n_f * (n_f + 1.0) / 2.0;
    // E[2·R_a] = n (N + 1).
    let expected2 = (n * (total + 1)) as f64;
    let observed_dev = (r2_a as f64 - expected2).abs();
    if total <= EXACT_LIMIT {
        let dist = rank_sum_distribution(&ranks2, n);
        let all: f64 = dist.iter().sum();
        // Sums as far from the mean as observed, or farther (a half-unit tolerance on doubled
        // ranks, which are integers).
        let tail: f64 = dist
            .iter()
            .enumerate()
            .filter(|(s, c)| **c > 0.0 && (*s as f64 - expected2).abs() >= observed_dev - 0.25)
            .map(|(_, c)| *c)
            .sum();
        return Some(MannWhitney {
            u,
            p_value: (tail / all).min(1.0),
            exact: true,
        });
    }
    // Normal approximation with the tie correction and a continuity correction.
    let m_f = m as f64;
    let t_f = total as f64;
    let mut ties = 0.0;
    let mut k = 0;
    while k < total {
        let mut j = k;
        while j + 1 < total && ranks2[j + 1] == ranks2[k] {
            j += 1;
        }
        let t = (j - k + 1) as f64;
        ties += t * t * t - t;
        k = j + 1;
    }
    let var = n_f * m_f / 12.0 * ((t_f + 1.0) - ties / (t_f * (t_f - 1.0)));
    let dev = (u - n_f * m_f / 2.0).abs();
    let p = if var <= 0.0 {
        1.0
    } else {
        let z = ((dev - 0.5).max(0.0)) / var.sqrt();
        (2.0 * normal_sf(z)).min(1.0)
    };
    Some(MannWhitney {
        u,
        p_value: p,
        exact: false,
    })
}

/// Counts, for every possible sum `s`, the ways to choose `n` of the (doubled) ranks with that
/// sum: the permutation distribution of the rank-sum under the null hypothesis.
fn rank_sum_distribution(ranks2: &[u64], n: usize) -> Vec<f64> {
    let max_sum: usize = {
        let mut r: Vec<u64> = ranks2.to_vec();
        r.sort_unstable_by(|a, b| b.cmp(a));
        r.iter().take(n).sum::<u64>() as usize
    };
    // ways[k][s]: subsets of size k of the ranks seen so far with sum s.
    let mut ways = vec![vec![0.0f64; max_sum + 1]; n + 1];
    ways[0][0] = 1.0;
    for &r in ranks2 {
        let r = r as usize;
        for k in (1..=n).rev() {
            let (lo, hi) = ways.split_at_mut(k);
            let prev = &lo[k - 1];
            let cur = &mut hi[0];
            for s in (r..=max_sum).rev() {
                if prev[s - r] > 0.0 {
                    cur[s] += prev[s - r];
                }
            }
        }
    }
    ways.swap_remove(n)
}

/// The upper tail of the standard normal distribution, `P(Z > z)` (Abramowitz & Stegun
/// 7.1.26 for erfc, absolute error below 1.5e-7: plenty for a p-value).
fn normal_sf(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-x * x).exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    erfc / 2.0
}

/// A shift between two samples with its confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shift {
    /// The Hodges-Lehmann estimate: the median of every `b - a`.
    pub estimate: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end of the interval.
    pub high: f64,
    /// The interval's actual confidence level: the nominal one when the sample sizes allow it,
    /// else the highest they allow (e.g. 0.90 for 3 against 3 when 0.95 was asked).
    pub level: f64,
}

/// The Hodges-Lehmann shift `b - a` and Moses's distribution-free interval at `confidence`
/// (e.g. 0.95); `None` when a sample is empty. With samples too small for the asked level the
/// interval is the full range of pairwise differences and `level` says what it covers.
pub fn hodges_lehmann(a: &[f64], b: &[f64], confidence: f64) -> Option<Shift> {
    hodges_lehmann_within(a, b, confidence, EXACT_LIMIT)
}

/// [`hodges_lehmann`] with the interval read off the exact distribution only up to
/// `exact_limit` values in both samples together, the normal approximation beyond. The exact
/// distribution costs about `(n+m)·n·(n+m)²` steps — a second at 100 against 100 — so callers
/// that take many shifts between long segments (change points along a release series) lower
/// the limit; at 20 or more values per side the approximation is off by well under one rank.
pub fn hodges_lehmann_within(
    a: &[f64],
    b: &[f64],
    confidence: f64,
    exact_limit: usize,
) -> Option<Shift> {
    let (n, m) = (a.len(), b.len());
    if n == 0 || m == 0 {
        return None;
    }
    let mut d: Vec<f64> = a
        .iter()
        .flat_map(|x| b.iter().map(move |y| y - x))
        .collect();
    d.sort_by(f64::total_cmp);
    let estimate = median(&d).expect("non-empty");
    let nm = d.len();
    // The null distribution of U (no ties) as counts for u = 0 ..= nm; cumulative from 0.
    let ranks2: Vec<u64> = (1..=(n + m) as u64).map(|r| 2 * r).collect();
    let (cdf, all) = if n + m <= exact_limit {
        let dist = rank_sum_distribution(&ranks2, n);
        // Rank sums (doubled) start at n(n+1); U = R - n(n+1)/2.
        let base = n * (n + 1);
        let mut cdf = Vec::with_capacity(nm + 1);
        let mut acc = 0.0;
        for u in 0..=nm {
            acc += dist.get(base + 2 * u).copied().unwrap_or(0.0);
            cdf.push(acc);
        }
        let all = acc;
        (cdf, all)
    } else {
        // Normal approximation of P(U ≤ u).
        let mean = (n * m) as f64 / 2.0;
        let sd = ((n * m * (n + m + 1)) as f64 / 12.0).sqrt();
        let cdf: Vec<f64> = (0..=nm)
            .map(|u| 1.0 - normal_sf((u as f64 + 0.5 - mean) / sd))
            .collect();
        (cdf, 1.0)
    };
    let alpha = 1.0 - confidence;
    // The largest k with 2·P(U ≤ k−1) ≤ α gives [d(k), d(nm−k+1)] (1-based).
    let mut k = 1;
    while k < nm.div_ceil(2) && 2.0 * cdf[k] / all <= alpha {
        k += 1;
    }
    let level = 1.0 - 2.0 * cdf[k - 1] / all;
    Some(Shift {
        estimate,
        low: d[k - 1],
        high: d[nm - k],
        level: level.max(0.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn medians_and_geomeans() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert!(close(geomean(&[1.0, 4.0]).unwrap(), 2.0, 1e-12));
        assert_eq!(geomean(&[1.0, 0.0]), None);
    }

    #[test]
    fn smallest_possible_p_values() {
        assert!(close(min_p_value(3, 3), 0.1, 1e-12));
        assert!(close(min_p_value(4, 4), 2.0 / 70.0, 1e-12));
        assert!(close(min_p_value(5, 5), 2.0 / 252.0, 1e-12));
        assert_eq!(min_p_value(1, 1), 1.0);
        assert_eq!(min_p_value(0, 5), 1.0);
    }

    /// Known cases, checked against R's `wilcox.test(x, y, exact = TRUE)`.
    #[test]
    fn mann_whitney_known_cases() {
        // Perfectly apart, 5 against 5: W = 0, p = 0.007937.
        let r = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert_eq!(r.u, 0.0);
        assert!(close(r.p_value, 0.007_937, 1e-6), "{r:?}");
        assert!(r.exact);
        // Interleaved: W = 10, p = 0.6905.
        let r = mann_whitney(&[1.0, 3.0, 5.0, 7.0, 9.0], &[2.0, 4.0, 6.0, 8.0, 10.0]).unwrap();
        assert_eq!(r.u, 10.0);
        assert!(close(r.p_value, 0.690_5, 1e-4), "{r:?}");
        // 3 against 3 perfectly apart: the smallest p there is, 0.1.
        let r = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!(close(r.p_value, 0.1, 1e-12), "{r:?}");
        // 4 against 6, W = 3, p = 0.06667 (R: wilcox.test(c(1,2,3,7), c(4,5,6,8,9,10))).
        let r = mann_whitney(&[1.0, 2.0, 3.0, 7.0], &[4.0, 5.0, 6.0, 8.0, 9.0, 10.0]).unwrap();
        assert_eq!(r.u, 3.0);
        assert!(close(r.p_value, 0.066_67, 1e-4), "{r:?}");
    }

    #[test]
    fn identical_samples_are_not_significant() {
        let a = [100.0, 101.0, 99.0, 100.5, 100.2];
        let r = mann_whitney(&a, &a).unwrap();
        assert!(r.p_value > 0.9, "{r:?}");
        // All equal (0 % errors everywhere): every value ties, p = 1.
        let z = [0.0; 5];
        let r = mann_whitney(&z, &z).unwrap();
        assert_eq!(r.p_value, 1.0);
        let s = hodges_lehmann(&z, &z, 0.95).unwrap();
        assert_eq!((s.estimate, s.low, s.high), (0.0, 0.0, 0.0));
    }

    #[test]
    fn ties_use_midranks() {
        // Exact conditional p with ties; the permutation distribution is enumerated, so the
        // answer equals a brute-force count over all C(6,3) = 20 splits.
        let a = [1.0, 2.0, 2.0];
        let b = [2.0, 3.0, 4.0];
        let r = mann_whitney(&a, &b).unwrap();
        let pooled = [1.0, 2.0, 2.0, 2.0, 3.0, 4.0];
        let ranks = [1.0, 3.0, 3.0, 3.0, 5.0, 6.0];
        let _ = pooled;
        let obs: f64 = 1.0 + 3.0 + 3.0;
        let mut hits = 0;
        let mut all = 0;
        for i in 0..6 {
            for j in i + 1..6 {
                for k in j + 1..6 {
                    let s: f64 = ranks[i] + ranks[j] + ranks[k];
                    all += 1;
                    if (s - 10.5).abs() >= (obs - 10.5).abs() - 1e-9 {
                        hits += 1;
                    }
                }
            }
        }
        assert!(close(r.p_value, hits as f64 / all as f64, 1e-12), "{r:?}");
        assert_eq!(r.u, 1.0);
    }

    #[test]
    fn shifted_samples_are_significant_with_the_right_sign() {
        let a = [1000.0, 1010.0, 990.0, 1005.0, 995.0];
        let b = [1200.0, 1190.0, 1210.0, 1205.0, 1195.0];
        let r = mann_whitney(&a, &b).unwrap();
        assert!(r.p_value < 0.01, "{r:?}");
        let s = hodges_lehmann(&a, &b, 0.95).unwrap();
        assert!(close(s.estimate, 200.0, 1e-9), "{s:?}");
        assert!(s.low > 0.0 && s.high > s.low, "{s:?}");
        // 5 against 5 allows 95 %: the interval is [d(3), d(23)], covering 1 − 8/252.
        assert!(close(s.level, 1.0 - 8.0 / 252.0, 1e-12), "{s:?}");
        let back = hodges_lehmann(&b, &a, 0.95).unwrap();
        assert!(close(back.estimate, -200.0, 1e-9));
    }

    #[test]
    fn small_samples_get_the_level_they_allow() {
        let s = hodges_lehmann(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], 0.95).unwrap();
        // 3 against 3: at most 90 %, the full range of differences.
        assert!(close(s.level, 0.9, 1e-12), "{s:?}");
        assert_eq!((s.low, s.high), (1.0, 5.0));
        assert_eq!(s.estimate, 3.0);
    }

    #[test]
    fn a_lower_exact_limit_gives_nearly_the_same_interval() {
        let a: Vec<f64> = (0..30).map(|x| f64::from(x) * 1.7 % 23.0).collect();
        let b: Vec<f64> = (0..30).map(|x| f64::from(x) * 2.3 % 29.0 + 4.0).collect();
        let exact = hodges_lehmann(&a, &b, 0.95).unwrap();
        let approx = hodges_lehmann_within(&a, &b, 0.95, 20).unwrap();
        assert_eq!(exact.estimate, approx.estimate);
        assert!(close(exact.low, approx.low, 0.5), "{exact:?} {approx:?}");
        assert!(close(exact.high, approx.high, 0.5), "{exact:?} {approx:?}");
        assert!(
            close(exact.level, approx.level, 0.01),
            "{exact:?} {approx:?}"
        );
    }

    #[test]
    fn large_samples_use_the_normal_approximation() {
        let a: Vec<f64> = (0..150).map(f64::from).collect();
        let b: Vec<f64> = (0..150).map(|x| f64::from(x) + 1000.0).collect();
        let r = mann_whitney(&a, &b).unwrap();
        assert!(!r.exact);
        assert!(r.p_value < 1e-10);
        let same = mann_whitney(&a, &a).unwrap();
        assert!(same.p_value > 0.9, "{same:?}");
    }

    #[test]
    fn normal_tail() {
        assert!(close(normal_sf(0.0), 0.5, 1e-7));
        assert!(close(normal_sf(1.96), 0.025, 1e-4));
        assert!(close(normal_sf(-1.96), 0.975, 1e-4));
    }
}
