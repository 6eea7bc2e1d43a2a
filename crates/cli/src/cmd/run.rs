//! `gatebench run [SUITE]`: runs a benchmark suite — the built-in default, or a suite file —
//! into a results directory, with a progress line, and prints the summary table.
//!
//! The plan and its estimated time are printed first (and only, with `--estimate`). Summaries
//! are rewritten after every cell, so an interrupted run still has one. Exit status: 0 every
//! cell ran, 1 a cell failed (a process did not start, a wrong answer), 2 bad input, 99 a
//! scenario's threshold failed (and no cell did), 130 interrupted. With `--history`, each finished cell is also stored in the release history
//! (`cmd::history::LiveHistory`).

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use gatebench_history::store::fingerprint;
use gatebench_loadgen::metrics::{MetricsServer, RemoteWrite};
use gatebench_model::{CellKind, CellRecord, CellStatus};
use gatebench_report::export::Exporter;
use gatebench_report::fmt::rate;
use gatebench_report::summary::{self, Phase as SummaryPhase};
use gatebench_results::CellFiles;
use gatebench_runner::cell::{CellEvent, Phase};
use gatebench_runner::driver::NetDriver;
use gatebench_runner::hosts::{self, HostPlan};
use gatebench_runner::launch::SystemLauncher;
use gatebench_runner::matrix::format_estimate;
use gatebench_runner::pin::Placement;
use gatebench_runner::results::{self, ResultsDir};
use gatebench_runner::settle::{Settling, UntilStable};
use gatebench_runner::suite::{Intensity, Overrides};
use gatebench_runner::suite_metrics::SuiteMetrics;
use gatebench_runner::{Observer, Plan, Progress, RunSettings, RunnerError, Suite};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};

use crate::cmd::history::LiveHistory;
use crate::signal;

/// `gatebench run [SUITE]`.
#[derive(Debug, Args)]
#[command(
    group(clap::ArgGroup::new("live").args(["metrics", "remote_write"]).multiple(true)),
    disable_version_flag = true,
    after_help = "Without SUITE, runs the built-in default suite: seed 004's eight \
scenarios, a round-robin balancer over five echo back-ends and the echo back-end alone, on the \
built-in services, in about two minutes. Suite files are described in docs/suite-format.md; \
examples/ has seed 004's published parameters and nginx/HAProxy side by side.\n\nWith --history \
and --version, the run is stored in the release history as that version of the suite, each cell \
as it finishes (docs/history.md); the history is checked before anything runs.\n\nExit status: 0 \
every cell ran, 1 a cell failed, 2 bad input or another error, 99 a scenario's threshold failed \
(and no cell did), 130 interrupted."
)]
pub struct RunArgs {
    /// Suite file (TOML). Without it, the built-in default suite.
    pub suite: Option<PathBuf>,
    /// Results directory [default: results/<YYYYmmdd-HHMMSS>].
    // The doc comment is clap's help text, plain text rather than rustdoc's HTML.
    #[allow(rustdoc::invalid_html_tags)]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the plan and its estimated time, run nothing.
    #[arg(long)]
    pub estimate: bool,
    /// Only cells whose id or scenario name matches GLOB (repeatable; `*` and `?`).
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// No cell whose id or scenario name matches GLOB (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Run every cell N times (instead of the suite's `repeats`): the samples `gatebench
    /// compare` tests; 5 or more lets it call a change significant. A run has at most 100000
    /// cells.
    #[arg(long, value_name = "N")]
    pub repeats: Option<std::num::NonZeroU32>,
    /// Repeat each load cell, right after itself, until the 95 % confidence interval of its
    /// median throughput is within ±BOUND of the median (at least 6 repeats: fewer cannot
    /// bound a median at 95 %), or --max-repeats is reached; the end of the run names the
    /// cells that never settled. Replaces the suite's repeats [default BOUND: 2%].
    #[arg(long, value_name = "BOUND", num_args = 0..=1, default_missing_value = "2%", value_parser = parse_bound, conflicts_with = "repeats")]
    pub until_stable: Option<f64>,
    /// With --until-stable, the most repeats a cell gets (6 to 1000).
    #[arg(long, value_name = "N", default_value_t = 20, requires = "until_stable", value_parser = clap::value_parser!(u32).range(6..=1000))]
    pub max_repeats: u32,
    /// Warm-up of every cell, instead of the suite's (e.g. `0.5s` for a quick smoke run; at
    /// most 100 days).
    #[arg(long, value_name = "DURATION", value_parser = gatebench_loadgen::bounds::parse_duration, allow_hyphen_values = true)]
    pub warmup: Option<std::time::Duration>,
    /// Measurement of every cell, instead of the suite's (at most 100 days); with a request
    /// count (`[suite] requests`), the longest it may take.
    #[arg(long, value_name = "DURATION", value_parser = gatebench_loadgen::bounds::parse_duration, allow_hyphen_values = true)]
    pub duration: Option<std::time::Duration>,
    /// The suite's short form: its `[quick]` table's values (users, sizes, requests, warm-up,
    /// duration, repeats) replace the suite's; without one, every cell gets a 0.5 s warm-up and
    /// at most 2 s of measurement. Capacity searches and cost runs shrink to match (short steps,
    /// at most 8 of them; 2 runs a path). `--warmup`, `--duration` and `--repeats` still apply
    /// after it.
    #[arg(long)]
    pub quick: bool,
    /// Extra arguments for every built-in system under test (proxy, transform, balancer), e.g.
    /// `--sut-args "--threads 1"`: two runs that differ in one setting, for `gatebench compare`.
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub sut_args: Option<String>,
    /// `NAME=ARGS`: also run every scenario with a built-in SUT as `SCENARIO+NAME`, its SUT
    /// given ARGS, interleaved with the original so drift affects both alike; then
    /// `gatebench compare DIR --variant NAME`. E.g. `--variant t1="--threads 1"`.
    #[arg(long, value_name = "NAME=ARGS", allow_hyphen_values = true)]
    pub variant: Option<String>,
    /// Store the run in the release history as --version, each cell as it finishes: an SQLite
    /// file or a postgres:// URL; without a value, $GATEBENCH_HISTORY or the default file
    /// ($XDG_DATA_HOME/gatebench/history.sqlite or ~/.local/share/gatebench/history.sqlite).
    #[arg(
        long,
        value_name = "PATH_OR_URL",
        num_args = 0..=1,
        default_missing_value = "",
        requires = "version",
        help_heading = "Release history"
    )]
    pub history: Option<String>,
    /// The version this run measures, for --history (e.g. 2201.12.4).
    #[arg(
        long,
        value_name = "VERSION",
        requires = "history",
        help_heading = "Release history"
    )]
    pub version: Option<String>,
    /// The version's source commit, for --history.
    #[arg(
        long,
        value_name = "SHA",
        requires = "history",
        help_heading = "Release history"
    )]
    pub commit: Option<String>,
    /// The version's date for the history's version order, RFC 3339 [default: the run's
    /// start].
    #[arg(long, value_name = "RFC3339", value_parser = crate::cmd::history::parse_date, requires = "history", help_heading = "Release history")]
    pub date: Option<i64>,
    /// Replace the version when the history already has it.
    #[arg(long, requires = "history", help_heading = "Release history")]
    pub replace: bool,
    /// Serve the suite's live figures for Prometheus at ADDRESS (`127.0.0.1:9464`;
    /// `127.0.0.1:0` picks a free port, printed): the load cell in progress as `gatebench load
    /// --metrics` serves a run, its series labelled with the suite, the cell and its matrix
    /// values, and `gatebench_suite_cells{state}` (docs/metrics.md).
    #[arg(long, value_name = "ADDRESS", help_heading = "Live metrics")]
    pub metrics: Option<std::net::SocketAddr>,
    /// A label every series of --metrics and --remote-write carries, NAME=VALUE (repeatable).
    #[arg(long = "metrics-label", value_name = "NAME=VALUE", value_parser = crate::cmd::load::parse_label, requires = "live", help_heading = "Live metrics")]
    pub metrics_labels: Vec<(String, String)>,
    /// Push the same figures by Prometheus remote write 1.0 to URL (an http:// endpoint, e.g.
    /// http://127.0.0.1:9090/api/v1/write; no TLS) every --remote-write-interval and once at
    /// the end, from a thread of its own: an endpoint that is down or refuses is said once and
    /// counted, and the suite goes on.
    #[arg(long, value_name = "URL", value_parser = crate::cmd::load::parse_remote_write, help_heading = "Live metrics")]
    pub remote_write: Option<gatebench_loadgen::metrics::RemoteWriteUrl>,
    /// How often --remote-write pushes (at least 1s).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = crate::cmd::load::parse_remote_write_interval, requires = "remote_write", help_heading = "Live metrics")]
    pub remote_write_interval: std::time::Duration,
}

/// Runs the subcommand.
pub fn run(args: RunArgs) -> Result<ExitCode> {
    // Every change the command line makes goes into validation with the file: the suite is
    // checked once, as the run will use it, and never edited after.
    let overrides = Overrides {
        quick: args.quick,
        one_repeat: args.until_stable.is_some(),
        repeats: args.repeats,
        warmup: args.warmup,
        duration: args.duration,
        variant: args.variant.clone(),
        sut_args: args.sut_args.clone(),
    };
    let suite = Suite::resolve(args.suite.as_deref(), &overrides)?;
    let plan = Plan::new(&suite, &args.include, &args.exclude)?;
    print!("{}", plan_text(&suite, &plan, args.suite.is_none()));
    if args.estimate || suite.estimate_only {
        return Ok(ExitCode::SUCCESS);
    }
    let (placement, warning) = Placement::new(suite.pin);
    if let Some(w) = warning {
        eprintln!("gatebench: warning: {w}");
    }
    // The history is checked (reachable, same suite, a new version) before anything runs.
    let mut history = match (&args.history, &args.version) {
        (Some(given), Some(version)) => {
            let identity = fingerprint::suite_identity(&suite.to_toml())
                .map_err(|e| anyhow::anyhow!("the resolved suite: {e}"))?;
            Some(LiveHistory::check(given, &identity, version, args.replace)?)
        }
        _ => None,
    };
    // The metrics address is taken before anything runs: one in use is one line, exit 2.
    if let Some((name, _)) = args
        .metrics_labels
        .iter()
        .find(|(k, _)| SuiteMetrics::CELL_LABELS.contains(&k.as_str()))
    {
        anyhow::bail!(
            "--metrics-label {name}: gatebench sets that label itself ({})",
            SuiteMetrics::CELL_LABELS.join(", ")
        );
    }
    let suite_metrics = (args.metrics.is_some() || args.remote_write.is_some()).then(|| {
        let m = SuiteMetrics::new(&suite, &args.metrics_labels);
        m.planned(plan.cells.len());
        m
    });
    let _metrics_server = match (args.metrics, &suite_metrics) {
        (Some(addr), Some(m)) => {
            let server = MetricsServer::start(addr, m.clone())
                .with_context(|| format!("--metrics: cannot listen on {addr}"))?;
            println!("Metrics: http://{}/metrics", server.addr());
            Some(server)
        }
        _ => None,
    };
    let exe = std::env::current_exe().context("finding the gatebench executable")?;
    // Every remote host is reached, checked and readied before the results directory exists:
    // a host that cannot be used is one line naming it (exit 2), and no directory is left.
    let hosts = if suite.hosts.all_local() {
        HostPlan::default()
    } else {
        let fixed = fixed_ports(&suite, &plan);
        hosts::prepare(&suite.hosts, &exe, &fixed, &mut |line| {
            println!("Hosts: {line}")
        })?
    };
    let out_dir = args.out.clone().unwrap_or_else(results::default_dir);
    let dir = ResultsDir::create(&out_dir)?;
    gatebench_runner::prepare(&suite, &plan, &dir)?;
    let reports = hosts.reports();
    if !reports.is_empty() {
        dir.write_json("hosts.json", &reports)?;
    }
    println!("Results: {}", out_dir.display());
    // Pushes start with the run: an endpoint that is down is found by the first push, said
    // once, and does not stop the suite.
    let remote = match (&args.remote_write, &suite_metrics) {
        (Some(url), Some(m)) => Some(
            RemoteWrite::start_ticking(
                url.clone(),
                args.remote_write_interval,
                m.clone(),
                m.labels(),
            )
            .context("--remote-write: cannot start its thread")?,
        ),
        _ => None,
    };
    if let Some(h) = &mut history {
        h.begin(&out_dir, args.commit.as_deref(), args.date, args.replace)?;
    }
    println!();

    let stop = signal::interrupt_flag();
    let settings = RunSettings {
        exe,
        stop: stop.clone(),
        placement,
        hosts,
        until_stable: args.until_stable.map(|bound| UntilStable {
            bound,
            confidence: 0.95,
            max_repeats: args.max_repeats,
        }),
        metrics: suite_metrics,
    };
    let (exporter, _) = Exporter::open(&out_dir)?;
    let mut observer = Sinks {
        display: Display::new(plan.cells.len()),
        exporter,
        history,
    };
    let run = gatebench_runner::run_suite(
        &suite,
        &plan,
        &dir,
        &settings,
        &mut SystemLauncher,
        &mut NetDriver,
        &mut observer,
    )?;
    observer.display.clear();
    let missing = run.planned.saturating_sub(run.records.len());
    let page = observer.exporter.write(missing)?;
    if let Some(h) = &mut observer.history {
        h.finish(run.planned, &out_dir);
    }
    println!();
    print!(
        "{}",
        summary::table(&run.records, SummaryPhase::Measurement)
    );
    println!(
        "\n{} cells, {} failed. Summaries: {}/summary.md (.csv, .json; warm-up apart). \
         Report: {}",
        run.records.len(),
        run.failed(),
        out_dir.display(),
        page.display()
    );
    if let Some(bound) = args.until_stable {
        print!("{}", settling_text(&run.settling, bound, args.max_repeats));
    }
    if let Some(r) = remote {
        crate::cmd::load::say_remote_write(&r.finish(Duration::from_secs(15)));
    }
    if run.interrupted {
        eprintln!(
            "gatebench: interrupted: {} of {} cells done; re-render later with `gatebench report {}`",
            run.records.len(),
            run.planned,
            out_dir.display()
        );
        return Ok(ExitCode::from(130));
    }
    let breached: Vec<&CellRecord> = run
        .records
        .iter()
        .filter(|r| r.thresholds().iter().any(|t| !t.passed))
        .collect();
    if !breached.is_empty() {
        eprintln!(
            "gatebench: thresholds failed in {} of {} cells: {}",
            breached.len(),
            run.records.len(),
            breached
                .iter()
                .map(|r| format!("{} ({})", r.cell.id, summary::thresholds(r)))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    Ok(if run.failed() > 0 {
        ExitCode::from(1)
    } else if !breached.is_empty() {
        ExitCode::from(crate::cmd::load::THRESHOLD_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

/// `--until-stable 2%` → 0.02: a percentage above 0 and at most 100.
fn parse_bound(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%').trim();
    match t.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 100.0 => Ok(v / 100.0),
        _ => Err(format!(
            "`{s}` is not a bound (write a percentage above 0, e.g. 2%)"
        )),
    }
}

/// The end of an `--until-stable` run: how many cells settled, and each one that did not,
/// with its repeats and how far its median's interval still reached.
fn settling_text(states: &[(String, Settling)], bound: f64, max: u32) -> String {
    let unsettled: Vec<&(String, Settling)> = states.iter().filter(|(_, s)| !s.settled).collect();
    let mut out = format!(
        "\nUntil stable (median throughput within ±{}% at 95%): {} of {} cells settled",
        bound * 100.0,
        states.len() - unsettled.len(),
        states.len()
    );
    if unsettled.is_empty() {
        out.push_str(".\n");
        return out;
    }
    out.push_str(&format!(
        "; never settled within {max} repeats (or stopped by a failure):\n"
    ));
    for (id, s) in unsettled {
        let reach = s
            .half_width
            .map_or("too few usable repeats".to_owned(), |h| {
                format!("±{:.1}%", h * 100.0)
            });
        out.push_str(&format!(
            "  {id}: {} repeats, median {:.1} req/s, {reach}\n",
            s.n, s.median
        ));
    }
    out
}

/// The fixed ports (`port = …` in a process table) of the planned scenarios, by role, that
/// must be free on their host before the run.
fn fixed_ports(suite: &Suite, plan: &Plan) -> Vec<(&'static str, u16)> {
    let mut out = Vec::new();
    for (i, sc) in suite.scenarios.iter().enumerate() {
        if !plan.cells.iter().any(|c| c.scenario == i) {
            continue;
        }
        if let Some(b) = &sc.backend {
            if let Some(p) = b.port {
                out.extend((0..b.count as u16).map(|k| ("backend", p + k)));
            }
        }
        if let Some(p) = sc.sut.as_ref().and_then(|s| s.port) {
            out.push(("sut", p));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The plan: what runs, over which matrix, for how long.
fn plan_text(suite: &Suite, plan: &Plan, builtin: bool) -> String {
    let mut s = String::new();
    let join = |v: Vec<String>| v.join(", ");
    let m = &suite.matrix;
    // `users 100, 300` or `rates 5000 req/s, ramp:…`; a suite with both models lists both.
    let users: Vec<String> = m
        .intensities
        .iter()
        .filter_map(|i| match i {
            Intensity::Users(u) => Some(u.to_string()),
            _ => None,
        })
        .collect();
    let rates: Vec<String> = m
        .intensities
        .iter()
        .filter_map(|i| match i {
            Intensity::Users(_) => None,
            Intensity::Rate(r) => Some(format!("{r} req/s")),
            Intensity::Program(p) => Some(p.to_string()),
        })
        .collect();
    let mut axes = Vec::new();
    if !users.is_empty() || rates.is_empty() {
        axes.push(format!("users {}", join(users)));
    }
    if !rates.is_empty() {
        axes.push(format!("rates {}", join(rates)));
    }
    let load_axes = axes.join(" · ");
    let mut per_scenario: BTreeMap<usize, usize> = BTreeMap::new();
    for c in &plan.cells {
        *per_scenario.entry(c.scenario).or_default() += 1;
    }
    s.push_str(&format!(
        "Suite \"{}\"{}: {} cells in {} scenarios{}\n",
        suite.name,
        if builtin { " (built-in)" } else { "" },
        plan.cells.len(),
        per_scenario.len(),
        if plan.cells.len() < plan.expanded {
            format!(" ({} of {} after filters)", plan.cells.len(), plan.expanded)
        } else {
            String::new()
        }
    ));
    s.push_str(&format!(
        "  {load_axes} · sizes {} B · delays {} · {} repeat(s) · {} order{}\n",
        join(m.sizes.iter().map(u64::to_string).collect()),
        join(
            m.delays
                .iter()
                .map(|d| humantime::format_duration(*d).to_string())
                .collect()
        ),
        suite.repeats,
        suite.order.name(),
        if suite.pin { " · pinned" } else { "" }
    ));
    let measurement = match (suite.requests, suite.duration_bound) {
        (None, _) => format!("{} measurement", humantime::format_duration(suite.duration)),
        (Some(n), false) => format!("a measurement of {n} requests"),
        (Some(n), true) => format!(
            "a measurement of {n} requests or {}, whichever ends first",
            humantime::format_duration(suite.duration)
        ),
    };
    s.push_str(&format!(
        "  each cell: {} warm-up + {measurement}, plus about 1s to start and stop\n",
        humantime::format_duration(suite.warmup),
    ));
    if m.intensities
        .iter()
        .any(|i| matches!(i, Intensity::Program(_)))
    {
        s.push_str(
            "  arrival programs run for the cell's measurement: a shorter one holds its last rate, a longer one is cut\n",
        );
    }
    if let gatebench_loadgen::Spacing::Poisson { seed } = suite.load.spacing {
        s.push_str(&format!(
            "  Poisson arrivals, seed {seed} (plus the repeat number less one)\n"
        ));
    }
    if suite.requests.is_some() {
        let closed = m
            .intensities
            .iter()
            .any(|i| matches!(i, Intensity::Users(_)));
        s.push_str(&if closed {
            format!(
                "  request counts are timed at an assumed {} req/s per cell ([suite] expected_rate): the estimate is only as good as that guess\n",
                rate(suite.expected_rate)
            )
        } else {
            "  request counts are timed at each cell's target rate\n".to_owned()
        });
    }
    s.push_str(&searches_note(suite, plan));
    let width = suite
        .scenarios
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(0);
    for (i, sc) in suite.scenarios.iter().enumerate() {
        let Some(n) = per_scenario.get(&i) else {
            continue;
        };
        let protos = join(sc.protocols.iter().map(|p| p.name().to_owned()).collect());
        s.push_str(&format!(
            "    {:<width$}  {n:>3} cells  {}  ({protos})\n",
            sc.name, sc.title
        ));
    }
    s.push_str(&format!(
        "Estimated time: {}\n",
        format_estimate(plan.estimate)
    ));
    s.push_str(&repeats_note(suite, plan));
    s
}

/// What the capacity and cost cells take: a search is counted at its bound (every one of its
/// `max_steps` steps at its longest), a cost measurement at its `2 × repeats` runs.
fn searches_note(suite: &Suite, plan: &Plan) -> String {
    let count = |k: CellKind| plan.cells.iter().filter(|c| c.kind == k).count();
    let mut s = String::new();
    let fmt = |d: Duration| humantime::format_duration(d).to_string();
    if let (Some(c), n @ 1..) = (&suite.capacity, count(CellKind::Capacity)) {
        s.push_str(&format!(
            "  capacity: {n} searches for the max rate within {} (one per scenario, size, delay \
             and protocol), each at most {} steps of {} warm-up + {}..{}{}: counted at that \
             bound, {} per search\n",
            c.slo.text,
            c.max_steps,
            fmt(c.warmup),
            fmt(c.step),
            fmt(c.max_step),
            if c.start.is_none() {
                ", after a 2.5s closed-model probe"
            } else {
                ""
            },
            format_estimate(c.longest())
        ));
    }
    if let (Some(c), n @ 1..) = (&suite.cost, count(CellKind::Cost)) {
        s.push_str(&format!(
            "  cost: {n} measurements of the intermediary's cost, each {} runs (direct and \
             through it, alternating) of {} warm-up + {} at {} req/s: {} each\n",
            2 * c.repeats,
            fmt(c.warmup),
            fmt(c.duration),
            rate(c.rate),
            format_estimate(c.length())
        ));
    }
    s
}

/// What the repeats allow `gatebench compare` to tell. With n repeats on each side the
/// Mann-Whitney U test's smallest p-value is 2 / C(2n, n): 0.1 for 3, 0.029 for 4, 0.008 for 5.
fn repeats_note(suite: &Suite, plan: &Plan) -> String {
    const ADVISED: u32 = 5;
    let n = suite.repeats.get();
    let reach = if n >= ADVISED {
        "enough for `gatebench compare` to call a change significant"
    } else if n == 4 {
        "`gatebench compare` can call only a clean separation significant"
    } else {
        "too few for `gatebench compare` to call any change significant"
    };
    let mut s = format!(
        "Repeats: {n} per cell ({} runs in all), {reach}",
        plan.cells.len()
    );
    if n < ADVISED {
        // Capacity and cost cells are not repeated: they take what they take either way.
        let loads = plan
            .cells
            .iter()
            .filter(|c| c.kind == CellKind::Load)
            .count();
        let searches: Duration = (plan.cells.iter())
            .filter(|c| c.kind != CellKind::Load)
            .map(|c| gatebench_runner::matrix::cell_time(suite, c))
            .sum();
        let cells = loads / n as usize * ADVISED as usize;
        s.push_str(&format!(
            "; --repeats {ADVISED} takes about {}",
            format_estimate(gatebench_runner::matrix::estimate(suite, cells) + searches)
        ));
    }
    s.push_str(".\n");
    s
}

/// The progress display on stderr: an indicatif bar on a terminal, one line per cell otherwise
/// (logs, CI, pipes: the same lines a person reads, nothing redrawn).
/// Where a run's cells go as they finish: the terminal, the results directory's derived files
/// (the one exporter, `gatebench_report::export`), and the history when `--history` is given.
/// The runner writes each cell's own files before any of these hears of it.
struct Sinks {
    display: Display,
    exporter: Exporter,
    /// `--history`: where each finished cell is stored.
    history: Option<LiveHistory>,
}

impl Observer for Sinks {
    fn setup_started(&mut self, scenario: &str, command: &str) {
        self.display.setup_started(scenario, command);
    }

    fn setup_finished(&mut self, scenario: &str, result: &Result<(), RunnerError>) {
        self.display.setup_finished(scenario, result);
    }

    fn cell_started(&mut self, p: &Progress<'_>) {
        self.display.cell_started(p);
    }

    fn cell_event(&mut self, p: &Progress<'_>, e: &CellEvent<'_>) {
        self.display.cell_event(p, e);
    }

    fn cell_finished(
        &mut self,
        p: &Progress<'_>,
        record: &CellRecord,
        files: &CellFiles<'_>,
        results: &ResultsDir,
        all: &[CellRecord],
    ) -> Result<(), RunnerError> {
        self.display.cell_finished(p, record, files, results, all)?;
        if let Some(warning) = self.history.as_mut().and_then(|h| h.cell(record)) {
            self.display.say(&warning);
        }
        self.exporter.add_cell(record.clone(), files);
        // The summaries after every cell, so Ctrl-C or a crash loses at most the cell in
        // progress; report.html, which renders every cell's plots, at the end.
        let missing = p.total.saturating_sub(all.len());
        Ok(self.exporter.write_summaries(missing)?)
    }
}

/// The terminal's view of a run: a line per cell, and a progress bar on a terminal. It only
/// displays.
struct Display {
    /// The bar over the plan's cells, on a terminal only.
    bar: Option<ProgressBar>,
    phase: Phase,
    rps: f64,
    errors: u64,
}

impl Display {
    fn new(planned: usize) -> Display {
        let bar = std::io::stderr().is_terminal().then(|| {
            let style = ProgressStyle::with_template(
                "{spinner} [{bar:24}] {pos}/{len} · {prefix} left · {wide_msg}",
            )
            .expect("the template is valid")
            .progress_chars("=> ");
            let bar =
                ProgressBar::with_draw_target(Some(planned as u64), ProgressDrawTarget::stderr())
                    .with_style(style)
                    // Cleared when dropped, so an error or the summary table starts on a clean line.
                    .with_finish(ProgressFinish::AndClear);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Display {
            bar,
            phase: Phase::Starting,
            rps: 0.0,
            errors: 0,
        }
    }

    /// Takes the bar off the terminal before the summary is printed.
    fn clear(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    /// Prints a line on stderr, above the bar when there is one.
    fn say(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    fn update(&self, bar: &ProgressBar, p: &Progress<'_>) {
        let live = if matches!(self.phase, Phase::WarmingUp | Phase::Measuring) {
            format!(" · {} req/s · {} errors", rate(self.rps), self.errors)
        } else {
            String::new()
        };
        bar.set_position(p.done as u64);
        bar.set_prefix(format_estimate(p.left));
        bar.set_message(format!("{} · {}{live}", p.cell.id, self.phase.name()));
    }
}

impl Observer for Display {
    fn setup_started(&mut self, scenario: &str, command: &str) {
        self.say(&format!("setup of {scenario}: {command}"));
    }

    fn setup_finished(&mut self, scenario: &str, result: &Result<(), RunnerError>) {
        if let Err(e) = result {
            let e = e.chain();
            self.say(&format!(
                "gatebench: setup of {scenario} failed (its cells will fail): {e}"
            ));
        }
    }

    fn cell_started(&mut self, p: &Progress<'_>) {
        self.phase = Phase::Starting;
        self.rps = 0.0;
        self.errors = 0;
        if let Some(bar) = &self.bar {
            self.update(bar, p);
        } else {
            eprintln!(
                "[{}/{} · {} left] {} ({})",
                p.index,
                p.total,
                format_estimate(p.left),
                p.cell.id,
                p.title
            );
        }
    }

    fn cell_event(&mut self, p: &Progress<'_>, e: &CellEvent<'_>) {
        match e {
            CellEvent::Phase(ph) => self.phase = *ph,
            CellEvent::Interval(v) => {
                self.rps = v.rps;
                self.errors = v.total_errors;
            }
        }
        if let Some(bar) = &self.bar {
            self.update(bar, p);
        }
    }

    fn cell_finished(
        &mut self,
        p: &Progress<'_>,
        record: &CellRecord,
        _files: &CellFiles<'_>,
        _results: &ResultsDir,
        _all: &[CellRecord],
    ) -> Result<(), RunnerError> {
        let outcome = match (&record.status, &record.load) {
            (CellStatus::Ok, Some(l)) => format!(
                "ok · {} req/s · {} errors{}",
                rate(l.measurement.throughput_rps),
                l.measurement.outcomes.errors(),
                if l.valid { "" } else { " · generator-bound" }
            ),
            (CellStatus::Ok, None) => match (&record.capacity, &record.cost) {
                (Some(c), _) => format!(
                    "ok · {} steps · {}",
                    c.steps.len(),
                    gatebench_report::capacity::verdict(c)
                ),
                (_, Some(c)) => format!(
                    "ok · {} runs · added p99 {}",
                    c.runs.len(),
                    c.added
                        .iter()
                        .find(|a| a.p == 99.0)
                        .map_or("-".to_owned(), |a| format!("{:+.3} ms", a.added_ms))
                ),
                _ => "ok".to_owned(),
            },
            _ => format!(
                "FAILED: {}",
                record.reason.as_deref().unwrap_or("no reason recorded")
            ),
        };
        self.say(&format!(
            "[{}/{}] {}: {outcome}",
            p.index, p.total, record.cell.id
        ));
        if let Some(bar) = &self.bar {
            bar.set_length(p.total as u64);
            bar.set_position(p.index as u64);
        }
        Ok(())
    }
}
