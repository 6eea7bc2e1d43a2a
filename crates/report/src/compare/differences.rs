//! What differs between two runs besides the system under test: the recorded environments
//! (machine, kernel, gatebench version) and the settings a suite gives all its cells (warm-up,
//! measurement, generator threads, method). [`super::compare`] turns these into a warning;
//! this module only finds them and decides nothing.

use gatebench_model::CellRecord;

use super::{Difference, RunInput};

/// The fields of the recorded environments (CPU, cores, kernel, gatebench version, …) that
/// differ; none when either run has no environment recorded.
pub(super) fn environment(base: &RunInput, other: &RunInput) -> Vec<Difference> {
    let (Some(a), Some(b)) = (&base.environment, &other.environment) else {
        return Vec::new();
    };
    let fields: [(&str, String, String); 7] = [
        ("cpu_model", a.cpu_model.clone(), b.cpu_model.clone()),
        ("cores", a.cores.to_string(), b.cores.to_string()),
        (
            "cores_available",
            a.cores_available.to_string(),
            b.cores_available.to_string(),
        ),
        ("kernel", a.kernel.clone(), b.kernel.clone()),
        ("arch", a.arch.clone(), b.arch.clone()),
        (
            "gatebench_version",
            a.gatebench_version.clone(),
            b.gatebench_version.clone(),
        ),
        (
            "git_revision",
            a.git_revision.clone(),
            b.git_revision.clone(),
        ),
    ];
    // The kernel and cgroup settings: one that only one run recorded (an older gatebench) is no
    // evidence of a difference.
    let settings = a
        .system
        .entries()
        .into_iter()
        .zip(b.system.entries())
        .filter_map(|((key, _, x), (_, _, y))| Some((key, x?.to_owned(), y?.to_owned())));
    fields
        .into_iter()
        .chain(settings)
        .filter(|(_, x, y)| x != y)
        .map(|(f, x, y)| Difference {
            run: other.label.clone(),
            field: f.to_owned(),
            baseline: x,
            other: y,
        })
        .collect()
}

/// Settings every cell of a run shares (warm-up, measurement, generator threads,
/// connections of rate cells, pinning by the processes' CPU lists is not recorded per run).
pub(super) fn settings(base: &RunInput, other: &RunInput) -> Vec<Difference> {
    type Get = fn(&CellRecord) -> Option<String>;
    let fields: [(&str, Get); 5] = [
        ("suite warm-up (s)", |r| Some(num(r.cell.warmup_s))),
        ("suite measurement (s)", |r| Some(num(r.cell.duration_s))),
        ("suite requests per cell", |r| {
            Some(
                r.cell
                    .requests
                    .map_or_else(|| "none".to_owned(), |n| n.to_string()),
            )
        }),
        ("suite generator threads", |r| {
            r.load.as_ref().map(|l| l.config.threads.to_string())
        }),
        ("suite method", |r| {
            r.load.as_ref().map(|l| l.config.method.clone())
        }),
    ];
    let values = |records: &[CellRecord], get: Get| {
        let mut v: Vec<String> = records.iter().filter_map(get).collect();
        v.sort();
        v.dedup();
        v.join(", ")
    };
    fields
        .into_iter()
        .filter_map(|(name, get)| {
            let (x, y) = (values(&base.records, get), values(&other.records, get));
            (x != y && !x.is_empty() && !y.is_empty()).then(|| Difference {
                run: other.label.clone(),
                field: name.to_owned(),
                baseline: x,
                other: y,
            })
        })
        .collect()
}

/// A number without a useless `.0` (`30`, `2.5`).
fn num(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}
