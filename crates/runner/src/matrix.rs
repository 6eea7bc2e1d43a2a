//! Matrix expansion: scenario × users (or rates) × size × delay × protocol × repeat → cells,
//! in run order, filtered by include/exclude globs, with an estimate of the run's length.
//!
//! Pure functions of a [`Suite`]; nothing here starts anything.

use std::time::Duration;

use gatebench_model::CellKind;

use crate::error::RunnerError;
use crate::suite::{Intensity, Order, Protocol, Suite};

/// What a cell costs besides its warm-up and measurement: picking ports, starting and probing
/// the processes, stopping them, writing the record. Measured at 0.3–0.8 s for built-in
/// services on a 2-core machine; external programs (nginx) may take longer. Used for estimates
/// only.
pub const CELL_OVERHEAD: Duration = Duration::from_secs(1);

/// One point of the matrix for one scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// Stable, filesystem-safe id: `<scenario>_u<users>_s<size>_d<delay ms>_r<repeat>`, with
    /// `R<rate>` instead of `u<users>` for rate cells (`R<program>` for a program, e.g.
    /// `Rramp-1000-20000-30s`) and `_<protocol>` before the repeat when the scenario runs over
    /// several protocols.
    pub id: String,
    /// Index of the scenario in the suite.
    pub scenario: usize,
    /// Users or rate.
    pub intensity: Intensity,
    /// Payload size, bytes.
    pub size: u64,
    /// Back-end delay.
    pub delay: Duration,
    /// The protocol the generator speaks to the target.
    pub protocol: Protocol,
    /// Repeat number, 1-based.
    pub repeat: u32,
    /// What the cell measures: one load, or (once per scenario and size × delay × protocol,
    /// after every load cell) the capacity search or the intermediary's cost. Their ids are
    /// `<scenario>_capacity_s<size>_d<delay ms>[_<protocol>]` and `…_cost_…`.
    pub kind: CellKind,
}

/// The cells to run, in order, and what they will cost.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Cells in run order.
    pub cells: Vec<Cell>,
    /// Cells before include/exclude filters.
    pub expanded: usize,
    /// Estimated length of the whole run.
    pub estimate: Duration,
}

impl Plan {
    /// Expands `suite`, orders the cells and applies the suite's filters plus `include` /
    /// `exclude` (from the command line).
    pub fn new(suite: &Suite, include: &[String], exclude: &[String]) -> Result<Plan, RunnerError> {
        // Checked again here: `--repeats` and `--variant` change the suite after validation.
        suite
            .check_size()
            .map_err(|e| RunnerError::suite(&suite.source, e.to_string()))?;
        let all = expand(suite);
        let expanded = all.len();
        let inc: Vec<&str> = suite
            .include
            .iter()
            .chain(include)
            .map(String::as_str)
            .collect();
        let exc: Vec<&str> = suite
            .exclude
            .iter()
            .chain(exclude)
            .map(String::as_str)
            .collect();
        let cells: Vec<Cell> = all
            .into_iter()
            .filter(|c| {
                let name = suite.scenarios[c.scenario].name.as_str();
                let hit = |g: &&str| glob(g, &c.id) || glob(g, name);
                (inc.is_empty() || inc.iter().any(hit)) && !exc.iter().any(hit)
            })
            .collect();
        if cells.is_empty() {
            return Err(RunnerError::NothingToRun { planned: expanded });
        }
        let estimate = cells.iter().map(|c| cell_time(suite, c)).sum();
        Ok(Plan {
            cells,
            expanded,
            estimate,
        })
    }
}

/// The estimated length of `cells` closed-model cells of `suite` (a request count taken at
/// [`Suite::expected_rate`]).
pub fn estimate(suite: &Suite, cells: usize) -> Duration {
    let intensity = suite
        .matrix
        .intensities
        .first()
        .cloned()
        .unwrap_or(Intensity::Users(1));
    // Saturating: the suite's bounds keep it far from overflow, but an estimate must never
    // be the reason a plan cannot be printed.
    per_cell(suite, &intensity).saturating_mul(u32::try_from(cells).unwrap_or(u32::MAX))
}

/// The estimated length of one cell: warm-up, the measurement (for a request count, at the
/// cell's rate or the suite's `expected_rate`: [`Suite::measurement_estimate`]) and
/// [`CELL_OVERHEAD`]. A capacity cell counts its search's longest
/// ([`crate::suite::CapacitySettings::longest`]: every one of its `max_steps` steps at its
/// longest, an upper bound), a cost cell its `2 × repeats` runs.
pub fn cell_time(suite: &Suite, cell: &Cell) -> Duration {
    let search = match cell.kind {
        CellKind::Load => return per_cell(suite, &cell.intensity),
        CellKind::Capacity => suite.capacity.as_ref().map(|c| c.longest()),
        CellKind::Cost => suite.cost.as_ref().map(|c| c.length()),
    };
    search.unwrap_or_default().saturating_add(CELL_OVERHEAD)
}

fn per_cell(suite: &Suite, intensity: &Intensity) -> Duration {
    suite
        .warmup
        .saturating_add(suite.measurement_estimate(intensity))
        .saturating_add(CELL_OVERHEAD)
}

/// Every cell of `suite`, in run order.
pub fn expand(suite: &Suite) -> Vec<Cell> {
    let m = &suite.matrix;
    // A point is everything but the scenario and its protocols; repeats outermost, so repeats
    // are spread over the whole run rather than back to back.
    let mut points: Vec<Point> = Vec::new();
    for repeat in 1..=suite.repeats.get() {
        for intensity in &m.intensities {
            for &size in &m.sizes {
                for &delay in &m.delays {
                    points.push((intensity.clone(), size, delay, repeat));
                }
            }
        }
    }
    let make = |s: usize, protocol: Protocol, (intensity, size, delay, repeat): Point| {
        let sc = &suite.scenarios[s];
        let shown = (sc.protocols.len() > 1).then_some(protocol);
        Cell {
            id: cell_id(&sc.name, &intensity, size, delay, shown, repeat),
            scenario: s,
            intensity,
            size,
            delay,
            protocol,
            repeat,
            kind: CellKind::Load,
        }
    };
    let n = suite.scenarios.len();
    let mut out = Vec::new();
    match suite.order {
        Order::Interleaved => {
            for (k, p) in points.iter().enumerate() {
                for j in 0..n {
                    let s = (k + j) % n;
                    for &protocol in &suite.scenarios[s].protocols {
                        out.push(make(s, protocol, p.clone()));
                    }
                }
            }
        }
        Order::Sequential => {
            // Within a scenario: protocol, then the point, repeats last (back to back).
            let mut by_repeat = points.clone();
            by_repeat.sort_by_key(|p| {
                let first = points
                    .iter()
                    .position(|q| q.0 == p.0 && q.1 == p.1 && q.2 == p.2)
                    .expect("the point is in the list");
                (first, p.3)
            });
            for s in 0..n {
                for &protocol in &suite.scenarios[s].protocols {
                    for p in &by_repeat {
                        out.push(make(s, protocol, p.clone()));
                    }
                }
            }
        }
    }
    out.extend(searches(suite));
    out
}

/// The capacity and cost cells: one of each kind per scenario that asks for it, size, delay
/// and protocol (not per intensity, which the search or `[cost] rate` replaces, nor per
/// repeat: a search checks its answer, a cost measurement repeats its runs), point by point,
/// every scenario in turn.
fn searches(suite: &Suite) -> Vec<Cell> {
    let mut out = Vec::new();
    let m = &suite.matrix;
    for &size in &m.sizes {
        for &delay in &m.delays {
            for (s, sc) in suite.scenarios.iter().enumerate() {
                let shown = |p: Protocol| (sc.protocols.len() > 1).then_some(p);
                let kinds = [
                    (sc.capacity, CellKind::Capacity, "capacity"),
                    (sc.cost, CellKind::Cost, "cost"),
                ];
                for &protocol in &sc.protocols {
                    for (wanted, kind, word) in kinds {
                        if !wanted {
                            continue;
                        }
                        let intensity = match kind {
                            // The cell's load: `[load] connections`, closed (the probe that
                            // picks the first step) or at the cost rate.
                            CellKind::Cost => {
                                Intensity::Rate(suite.cost.as_ref().map_or(1.0, |c| c.rate))
                            }
                            _ => Intensity::Users(suite.load.connections),
                        };
                        let delay_ms = number(delay.as_secs_f64() * 1e3);
                        let proto = shown(protocol)
                            .map(|p| format!("_{}", p.name()))
                            .unwrap_or_default();
                        out.push(Cell {
                            id: format!("{}_{word}_s{size}_d{delay_ms}{proto}", sc.name),
                            scenario: s,
                            intensity,
                            size,
                            delay,
                            protocol,
                            repeat: 1,
                            kind,
                        });
                    }
                }
            }
        }
    }
    out
}

/// Users or rate, size, delay, repeat.
type Point = (Intensity, u64, Duration, u32);

/// `<scenario>_u<users>_s<size>_d<delay ms>[_<protocol>]_r<repeat>`.
pub fn cell_id(
    scenario: &str,
    intensity: &Intensity,
    size: u64,
    delay: Duration,
    protocol: Option<Protocol>,
    repeat: u32,
) -> String {
    let load = match intensity {
        Intensity::Users(u) => format!("u{u}"),
        Intensity::Rate(r) => format!("R{}", number(*r)),
        Intensity::Program(p) => format!("R{}", program_label(&p.to_string())),
    };
    let delay_ms = number(delay.as_secs_f64() * 1e3);
    let proto = protocol
        .map(|p| format!("_{}", p.name()))
        .unwrap_or_default();
    format!("{scenario}_{load}_s{size}_d{delay_ms}{proto}_r{repeat}")
}

/// A program's text made filesystem-safe and free of `_` (the id's separator): every run of
/// characters other than letters, digits and `.` becomes one `-`, so `ramp:1000..20000/30s`
/// is `ramp-1000-20000-30s` and `sine:10000±5000/1m 30s` is `sine-10000-5000-1m-30s`.
fn program_label(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last_dot = false;
    for c in text.chars() {
        // `..` (a ramp's range) is a separator too; a single `.` is a decimal point.
        if c.is_ascii_alphanumeric() || (c == '.' && !last_dot) {
            out.push(c);
        } else if c == '.' {
            out.pop();
            if !out.ends_with('-') {
                out.push('-');
            }
        } else if !out.ends_with('-') {
            out.push('-');
        }
        last_dot = c == '.';
    }
    out.trim_end_matches('-').to_owned()
}

/// A number without a trailing `.0`, and never in exponent form (ids must be stable).
fn number(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').to_owned()
    }
}

/// Shell-style glob: `*` any run of characters, `?` one character; the whole text must match.
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// `4m 0s`-style rendering of an estimate, rounded to the second.
pub fn format_estimate(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    let (h, m, s) = (s / 3600, (s % 3600) / 60, s % 60);
    if h > 0 {
        format!("{h}h {m:02}m")
    } else if m > 0 {
        format!("{m}m {s:02}s")
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob("*", "anything"));
        assert!(glob("passthrough-*", "passthrough-h1c-h1c"));
        assert!(glob("*_u100_*", "x_u100_s50_d0_r1"));
        assert!(!glob("*_u100_*", "x_u1000_s50_d0_r1"));
        assert!(glob("a?c", "abc"));
        assert!(!glob("a?c", "abbc"));
        assert!(glob("*a*b", "xxaxxb"));
        assert!(!glob("abc", "abcd"));
    }

    #[test]
    fn ids_are_stable_and_filesystem_safe() {
        let id = cell_id(
            "passthrough-h1c-h1c",
            &Intensity::Users(100),
            50,
            Duration::ZERO,
            None,
            1,
        );
        assert_eq!(id, "passthrough-h1c-h1c_u100_s50_d0_r1");
        let id = cell_id(
            "x",
            &Intensity::Rate(2500.0),
            1024,
            Duration::from_micros(500),
            Some(Protocol::H2),
            3,
        );
        assert_eq!(id, "x_R2500_s1024_d0.5_h2_r3");
        let program = |text: &str| {
            let p = text.parse().expect("a program");
            cell_id("x", &Intensity::Program(p), 50, Duration::ZERO, None, 1)
        };
        assert_eq!(
            program("ramp:1k..20k/30s"),
            "x_Rramp-1000-20000-30s_s50_d0_r1"
        );
        assert_eq!(program("ramp:0.5..2/90s"), "x_Rramp-0.5-2-1m-30s_s50_d0_r1");
        assert_eq!(
            program("steps:1k,2k,4k/10s"),
            "x_Rsteps-1000-2000-4000-10s_s50_d0_r1"
        );
        assert_eq!(program("sine:10k±5k/1m"), "x_Rsine-10000-5000-1m_s50_d0_r1");
    }

    #[test]
    fn estimates_read_well() {
        assert_eq!(format_estimate(Duration::from_secs(240)), "4m 00s");
        assert_eq!(format_estimate(Duration::from_secs(45)), "45s");
        assert_eq!(format_estimate(Duration::from_secs(43200)), "12h 00m");
    }
}
