//! The intermediary's own cost: what going through it adds to latency, per percentile, with a
//! confidence interval, and the CPU it spends per request — computed from interleaved runs
//! direct and through it, and rendered as text.

use std::fmt::Write;

use gatebench_model::{AddedLatency, CostReport, CostRun, SCHEMA_VERSION};

use crate::fmt::{duration_ms, rate};
use crate::stats::{hodges_lehmann, median};

pub use gatebench_model::COST_PERCENTILES;

/// The added latency at each of [`COST_PERCENTILES`]: the Hodges-Lehmann shift between the
/// runs through the intermediary and the direct ones, with Moses's 95 % interval (or the
/// highest level the repeats allow). Runs are compared as samples, not pooled: each run's
/// percentile is one observation, so the interval reflects the run-to-run noise of the
/// machine as well as the intermediary.
pub fn added_latency(runs: &[CostRun]) -> Vec<AddedLatency> {
    COST_PERCENTILES
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let of = |path: &str| -> Vec<f64> {
                runs.iter()
                    .filter(|r| r.path == path)
                    .filter_map(|r| r.percentiles_ms.get(i).copied())
                    .filter(|v| v.is_finite())
                    .collect()
            };
            let (direct, via) = (of("direct"), of("via"));
            let shift = hodges_lehmann(&direct, &via, 0.95)?;
            Some(AddedLatency {
                p: *p,
                direct_ms: median(&direct)?,
                via_ms: median(&via)?,
                added_ms: shift.estimate,
                low_ms: shift.low,
                high_ms: shift.high,
                level: shift.level,
            })
        })
        .collect()
}

/// The intermediary's CPU per response through it, µs, and its CPU use in percent of one core,
/// each the median over the runs through it that carry a CPU reading.
pub fn intermediary_cpu(runs: &[CostRun], duration_s: f64) -> (Option<f64>, Option<f64>) {
    let via: Vec<&CostRun> = runs
        .iter()
        .filter(|r| r.path == "via" && r.intermediary_cpu_s.is_some() && r.responses > 0)
        .collect();
    let per_request: Vec<f64> = via
        .iter()
        .map(|r| r.intermediary_cpu_s.unwrap_or(0.0) / r.responses as f64 * 1e6)
        .collect();
    let percent: Vec<f64> = via
        .iter()
        .map(|r| r.intermediary_cpu_s.unwrap_or(0.0) / duration_s.max(1e-9) * 100.0)
        .collect();
    (median(&per_request), median(&percent))
}

/// What every run of a measurement shared.
#[derive(Clone, Debug, PartialEq)]
pub struct CostSetup {
    /// The back-end, reached directly.
    pub direct_url: String,
    /// The same back-end through the intermediary.
    pub via_url: String,
    /// The open-model rate, requests/s.
    pub rate: f64,
    /// Connections.
    pub connections: u32,
    /// Measurement length of a run, seconds.
    pub duration_s: f64,
    /// Repeats of each path.
    pub repeats: u32,
}

/// The whole record from the runs: the added latency per percentile ([`added_latency`]), the
/// intermediary's CPU ([`intermediary_cpu`]) and what could make the figures mislead (runs
/// with errors, runs the generator's self-check flagged).
pub fn report(setup: CostSetup, runs: Vec<CostRun>) -> CostReport {
    let mut warnings = Vec::new();
    let errored: Vec<String> = runs
        .iter()
        .filter(|r| r.error_percent > 0.0)
        .map(|r| format!("{} {} ({:.3}%)", r.path, r.repeat, r.error_percent))
        .collect();
    if !errored.is_empty() {
        warnings.push(format!(
            "runs with errors: {}; their latency includes censored values",
            errored.join(", ")
        ));
    }
    if runs.iter().any(|r| !r.valid) {
        warnings.push(
            "the generator's self-check flagged some runs: it may have been the bottleneck".into(),
        );
    }
    let (cpu_us, cpu_pct) = intermediary_cpu(&runs, setup.duration_s);
    CostReport {
        schema_version: SCHEMA_VERSION,
        direct_url: setup.direct_url,
        via_url: setup.via_url,
        rate: setup.rate,
        connections: setup.connections,
        duration_s: setup.duration_s,
        repeats: setup.repeats,
        added: added_latency(&runs),
        runs,
        intermediary_cpu_us_per_request: cpu_us,
        intermediary_cpu_percent: cpu_pct,
        warnings,
    }
}

/// The report as text: the added latency per percentile, then the CPU.
pub fn render(r: &gatebench_model::CostReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Intermediary cost: {} in front of {}",
        r.via_url, r.direct_url
    );
    let _ = writeln!(
        out,
        "  open model at {} req/s, {} connections, {}s per run, {} repeats of each path, interleaved",
        rate(r.rate),
        r.connections,
        r.duration_s,
        r.repeats
    );
    out.push('\n');
    let _ = writeln!(
        out,
        "  percentile     direct        via      added     confidence interval"
    );
    for a in &r.added {
        let _ = writeln!(
            out,
            "  p{:<9} {:>10} {:>10} {:>10}     [{}, {}] ({:.0}%)",
            trim(a.p),
            duration_ms(a.direct_ms),
            duration_ms(a.via_ms),
            signed(a.added_ms),
            signed(a.low_ms),
            signed(a.high_ms),
            a.level * 100.0
        );
    }
    if let (Some(us), Some(pct)) = (
        r.intermediary_cpu_us_per_request,
        r.intermediary_cpu_percent,
    ) {
        let _ = writeln!(
            out,
            "\nIntermediary CPU: {us:.1} µs per request, {pct:.1}% of one core at {} req/s \
             (medians over the runs through it)",
            rate(r.rate)
        );
    }
    for w in &r.warnings {
        let _ = writeln!(out, "WARNING: {w}");
    }
    out
}

fn trim(p: f64) -> String {
    let s = format!("{p}");
    s.trim_end_matches(".0").to_owned()
}

fn signed(ms: f64) -> String {
    if ms < 0.0 {
        format!("−{}", duration_ms(-ms))
    } else {
        format!("+{}", duration_ms(ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(path: &str, repeat: u32, p: [f64; 4], cpu: Option<f64>) -> CostRun {
        CostRun {
            order: 0,
            path: path.into(),
            repeat,
            percentiles_ms: p.to_vec(),
            responses: 10_000,
            throughput_rps: 1000.0,
            error_percent: 0.0,
            intermediary_cpu_s: cpu,
            valid: true,
        }
    }

    /// Five repeats of each: through the intermediary every percentile is 0.1 ms (p50) to
    /// 1 ms (p99.9) higher, give or take run-to-run noise: the shift is found, and with five
    /// against five the interval is at the asked 95 %.
    #[test]
    fn the_added_latency_is_the_shift_between_the_paths() {
        let mut runs = Vec::new();
        for (i, noise) in [0.00, 0.02, -0.01, 0.01, -0.02].iter().enumerate() {
            let base = [0.20 + noise, 0.40 + noise, 1.00 + noise, 2.00 + noise];
            runs.push(run("direct", i as u32 + 1, base, None));
            let via = [base[0] + 0.1, base[1] + 0.2, base[2] + 0.5, base[3] + 1.0];
            runs.push(run("via", i as u32 + 1, via, Some(0.5)));
        }
        let added = added_latency(&runs);
        assert_eq!(added.len(), 4);
        for (a, want) in added.iter().zip([0.1, 0.2, 0.5, 1.0]) {
            assert!((a.added_ms - want).abs() < 1e-9, "p{}: {}", a.p, a.added_ms);
            assert!(a.low_ms <= want && want <= a.high_ms, "{a:?}");
            assert!(a.low_ms > 0.0, "the interval excludes zero: {a:?}");
            assert!((a.level - 0.95).abs() < 0.02, "{a:?}");
        }
        // 0.5 CPU-s for 10,000 responses: 50 µs each; over 10 s, 5 % of a core.
        let (us, pct) = intermediary_cpu(&runs, 10.0);
        assert!((us.unwrap() - 50.0).abs() < 1e-9);
        assert!((pct.unwrap() - 5.0).abs() < 1e-9);
    }

    /// No difference between the paths: the interval straddles zero.
    #[test]
    fn no_cost_reads_as_an_interval_around_zero() {
        let mut runs = Vec::new();
        for (i, noise) in [0.00, 0.03, -0.02, 0.01, -0.01].iter().enumerate() {
            let p = [0.2 + noise, 0.4 + noise, 1.0 + noise, 2.0 + noise];
            runs.push(run("direct", i as u32 + 1, p, None));
            let q = [0.2 - noise, 0.4 - noise, 1.0 - noise, 2.0 - noise];
            runs.push(run("via", i as u32 + 1, q, None));
        }
        for a in added_latency(&runs) {
            assert!(a.low_ms < 0.0 && a.high_ms > 0.0, "{a:?}");
        }
        assert_eq!(intermediary_cpu(&runs, 10.0), (None, None));
    }
}
