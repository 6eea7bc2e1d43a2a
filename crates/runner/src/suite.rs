//! A validated suite: what runs, over which matrix, for how long.
//!
//! Three stages (as in ripgrep's LowArgs → HiArgs): [`raw`] mirrors the TOML and rejects unknown
//! keys; [`Suite::from_toml_with`] turns it, with the command line's [`Overrides`], into real
//! types ([`Duration`], [`Protocol`], checked commands; the checks live in `suite/validate.rs`)
//! or one clear error naming the key, once; effects (ports, processes) come later, in
//! [`crate::cell`]. The format is documented in `docs/suite-format.md`.

mod events;
mod extra;
mod overrides;
pub mod raw;
mod validate;

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gatebench_loadgen::arrival::{ArrivalProgram, RateProgram, Spacing};
use gatebench_loadgen::bounds::parse_duration;
use gatebench_loadgen::threshold::{Limit, Threshold};
use gatebench_loadgen::Arrival;

use crate::error::RunnerError;
use crate::gc::GcFormat;
use crate::hosts::{HostSpec, Hosts};
pub use events::{firings, BackendAction, EventAction, EventSpec, DEFAULT_WINDOW};
pub use extra::{CapacitySettings, CostSettings, DEFAULT_COST_RATE, MAX_STEPS};
pub use overrides::Overrides;
use raw::{RawHosts, RawLoad, RawMatrix, RawQuick, RawScenario, RawSettings, RawSuite};
use validate::{
    names, raw_process, split_intensities, toml_error, validate_load, validate_matrix,
    validate_scenario,
};

/// The built-in default suite (`gatebench run` without a file).
const DEFAULT_SUITE: &str = include_str!("default-suite.toml");

/// Most cells a suite may expand to, repeats included: at a second each at the very least, a
/// bigger matrix would run for more than a day, and expanding it would only use memory.
pub const MAX_CELLS: u64 = 100_000;

/// Requests/s assumed for a closed-model cell with a request count when the suite gives no
/// `expected_rate`: an estimate only, of the order a built-in service reaches on a small machine.
pub const DEFAULT_EXPECTED_RATE: f64 = 10_000.0;

/// Most requests one cell's measurement may take: 10¹² is beyond any real run (ab's own counter
/// is an int) and keeps a typo from a run of geological length.
pub const MAX_REQUESTS: u64 = 1_000_000_000_000;

/// `--quick`'s warm-up when `[quick]` gives none.
pub const QUICK_WARMUP: Duration = Duration::from_millis(500);

/// `--quick`'s measurement (its bound, with a request count) when `[quick]` gives none.
pub const QUICK_DURATION: Duration = Duration::from_secs(2);

/// Most steps of a capacity search in the short form.
pub const QUICK_MAX_STEPS: u32 = 8;

/// The coarsest precision of a capacity search in the short form, percent.
pub const QUICK_PRECISION_PERCENT: f64 = 10.0;

/// Runs of each path of a cost measurement in the short form: the fewest that give an interval.
pub const QUICK_COST_REPEATS: u32 = 2;

fn check_requests(n: u64) -> Result<(), String> {
    if n == 0 || n > MAX_REQUESTS {
        return Err(format!("must be from 1 to {MAX_REQUESTS}, got {n}"));
    }
    Ok(())
}

/// Most back-ends one scenario may start (each is a process with its own port).
pub const MAX_BACKENDS: u32 = 256;

/// A protocol between a client and a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// HTTP/1.1 over cleartext TCP.
    H1c,
    /// HTTP/1.1 over TLS.
    H1,
    /// HTTP/2 over TLS (ALPN).
    H2,
    /// HTTP/2 over cleartext TCP (prior knowledge).
    H2c,
}

impl Protocol {
    /// Every protocol, in the order names are listed.
    pub const ALL: [Protocol; 4] = [Protocol::H1c, Protocol::H1, Protocol::H2, Protocol::H2c];

    /// The name used in suite files and cell ids.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::H1c => "h1c",
            Protocol::H1 => "h1",
            Protocol::H2 => "h2",
            Protocol::H2c => "h2c",
        }
    }

    /// Parses a name (`h1c`, `h1`, `h2`, `h2c`).
    pub fn parse(s: &str) -> Option<Protocol> {
        Protocol::ALL.into_iter().find(|p| p.name() == s)
    }

    /// Whether it runs over TLS.
    pub fn tls(self) -> bool {
        matches!(self, Protocol::H1 | Protocol::H2)
    }

    /// `http` or `https`.
    pub fn scheme(self) -> &'static str {
        if self.tls() {
            "https"
        } else {
            "http"
        }
    }

    /// The flags a built-in service needs to listen with this protocol.
    pub fn serve_flags(self) -> &'static str {
        match self {
            Protocol::H1c => "",
            Protocol::H1 => "--tls",
            Protocol::H2 => "--tls --http2",
            Protocol::H2c => "--http2",
        }
    }
}

/// In which order cells run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// For each point of the matrix, every scenario in turn, the first one rotating, so that a
    /// drift of the machine (thermal, other tenants) does not favour one scenario.
    Interleaved,
    /// Every cell of a scenario, then the next scenario.
    Sequential,
}

impl Order {
    /// The name used in suite files.
    pub fn name(self) -> &'static str {
        match self {
            Order::Interleaved => "interleaved",
            Order::Sequential => "sequential",
        }
    }
}

/// How hard the generator pushes: concurrent users (closed model), a target rate or an
/// arrival program (open model).
#[derive(Clone, Debug, PartialEq)]
pub enum Intensity {
    /// N connections, each sending when the previous answer arrived.
    Users(u32),
    /// Requests/s, over `[load] connections` connections.
    Rate(f64),
    /// A rate that follows a program (`ramp:1k..20k/30s`, `steps:…`, `sine:…`), over
    /// `[load] connections` connections. The suite's measurement length rules: a program
    /// shorter than it holds its last rate (a sine keeps cycling).
    Program(RateProgram),
}

impl Intensity {
    /// The mean target rate over a measurement of `length` (requests/s); `None` for users.
    /// A constant rate is itself; a program's is its expected requests over `length` divided
    /// by `length` (its own length when `length` is zero).
    pub fn mean_rate(&self, length: Duration) -> Option<f64> {
        match self {
            Intensity::Users(_) => None,
            Intensity::Rate(r) => Some(*r),
            Intensity::Program(p) => {
                let t = if length.is_zero() {
                    p.natural_length().unwrap_or(Duration::from_secs(1))
                } else {
                    length
                };
                let t = t.as_secs_f64();
                Some(p.cumulative(t) / t)
            }
        }
    }
}

/// How a process is started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Program {
    /// A built-in service: `gatebench serve <args>` (the runner's own executable).
    Serve(String),
    /// A shell command line (`sh -c`).
    Command(String),
}

/// A backend or the system under test, before its placeholders are filled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessTemplate {
    /// What to start.
    pub program: Program,
    /// How many (backends; always 1 for the SUT).
    pub count: u32,
    /// The protocol it listens with; `None` = the cell's.
    pub protocol: Option<Protocol>,
    /// URL that answers 2xx once it is ready; `None` = its port accepts connections.
    pub ready: Option<String>,
    /// A fixed port (the first of `count` for back-ends); `None` = a free one per cell.
    pub port: Option<u16>,
}

/// One system under test and its backends.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Short, filesystem-safe name (part of cell ids).
    pub name: String,
    /// The name printed in summaries.
    pub title: String,
    /// Protocols the generator speaks to the target.
    pub protocols: Vec<Protocol>,
    /// Check that every response body equals the request body (an echo path).
    pub verify: bool,
    /// Request path.
    pub path: String,
    /// HTTP method (`[load] method` unless the scenario gives its own).
    pub method: String,
    /// A status the target is declared to answer (an error endpoint's 500): the probe accepts
    /// it and the load counts it as a correct answer, besides 2xx.
    pub expect_status: Option<u16>,
    /// Keep connections alive between requests (`[load] keepalive` unless the scenario gives
    /// its own; seed 001 runs ab with and without `-k`).
    pub keepalive: bool,
    /// Shell command run once before the suite (e.g. install nginx when missing).
    pub setup: Option<String>,
    /// Where commands run and templates are read from.
    pub workdir: PathBuf,
    /// Template files rendered into each cell's directory.
    pub templates: Vec<PathBuf>,
    /// The backends; `None` when the SUT needs none.
    pub backend: Option<ProcessTemplate>,
    /// The system under test; `None` when the backend alone is measured (a baseline).
    pub sut: Option<ProcessTemplate>,
    /// The SUT's GC log, read after every cell; `None` when the scenario names none.
    pub gc: Option<GcLog>,
    /// Whether the suite's capacity search runs for this scenario (a capacity cell per
    /// point).
    pub capacity: bool,
    /// Whether the SUT's own cost is measured (a cost cell per point): it is an
    /// intermediary in front of the back-end.
    pub cost: bool,
    /// Pass/fail conditions on each of its load cells (its own, or `[load]`'s), judged as
    /// `gatebench load --threshold` judges them; a cell that breaches one still counts as run.
    pub thresholds: Vec<Threshold>,
    /// Each response read as a stream of events (`stream = "sse" | "llm" | "chunks"`): the
    /// cell's record gets the stream figures, the summary its Streams table.
    pub stream: Option<gatebench_loadgen::StreamMode>,
    /// A gRPC scenario: its cells make calls of this kind instead of HTTP requests.
    pub grpc: Option<GrpcScenario>,
    /// A WebSocket scenario: its cells open WebSocket connections and send messages instead of
    /// HTTP requests.
    pub websocket: Option<WebSocketScenario>,
    /// What happens during each of its load cells' measurement (`[[scenario.event]]`).
    pub events: Vec<EventSpec>,
}

/// Where a scenario's system under test writes its garbage-collection log, and in which format
/// (see [`crate::gc`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GcLog {
    /// The format.
    pub format: GcFormat,
    /// The path, with placeholders (`{cell_dir}/gc.log`), relative to the scenario's workdir;
    /// `None` = the SUT's own log (`{cell_dir}/sut.log`, where its stdout and stderr go, so
    /// Go's gctrace on stderr and `-Xlog:gc` on stdout land there).
    pub path: Option<String>,
}

impl Scenario {
    /// Whether every process is a built-in service.
    pub fn is_builtin(&self) -> bool {
        [&self.backend, &self.sut]
            .into_iter()
            .flatten()
            .all(|p| matches!(p.program, Program::Serve(_)))
    }
}

/// `[[scenario]] grpc = {…}`, validated: what each call of the scenario's cells is.
#[derive(Debug, Clone, PartialEq)]
pub struct GrpcScenario {
    /// `/package.Service/Method`.
    pub method: String,
    /// The kind of call.
    pub kind: gatebench_loadgen::grpc::CallKind,
    /// Messages per call (sent, or asked of gatebench's echo for server streams).
    pub messages: u64,
    /// Messages per second within a stream.
    pub message_rate: Option<f64>,
    /// Each call's deadline.
    pub deadline: Option<Duration>,
    /// HTTP/2 connections the cell's users share; users ÷ connections calls are in flight on
    /// each.
    pub connections: u32,
}

/// `[[scenario]] websocket = {…}`, validated: the connections and messages of the scenario's
/// cells. Users are connections held for the measurement; a rate is connection opens per
/// second (each handshake timed from when it was due), at most `[load] connections` open at
/// once, as an HTTP rate cell's connections. With `messages`, each connection closes after that
/// many. The matrix size is each message's.
#[derive(Debug, Clone, PartialEq)]
pub struct WebSocketScenario {
    /// The upgrade request's path (and query).
    pub path: String,
    /// Binary messages (text otherwise).
    pub binary: bool,
    /// Messages per second on each connection (open model); `None`: one in flight at a time.
    pub message_rate: Option<f64>,
    /// Messages each connection sends before it closes; `None`: until the measurement ends.
    pub messages: Option<u64>,
}

/// What the load generator sends.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadSettings {
    /// HTTP method.
    pub method: String,
    /// Request path (a scenario may override it).
    pub path: String,
    /// Extra header lines.
    pub headers: Vec<String>,
    /// Pass/fail conditions on every scenario's load that gives none of its own.
    pub thresholds: Vec<Threshold>,
    /// Connections for rate cells.
    pub connections: u32,
    /// Worker threads; `None` = the cores the generator may use.
    pub threads: Option<u32>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Keep connections alive.
    pub keepalive: bool,
    /// How open-model requests are spaced around their rate: evenly (the default) or as a
    /// seeded Poisson process (`[load] arrival = "poisson"`). Closed-model cells ignore it.
    pub spacing: Spacing,
}

/// The matrix axes.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    /// Users or rates.
    pub intensities: Vec<Intensity>,
    /// Payload sizes, bytes.
    pub sizes: Vec<u64>,
    /// Back-end delays.
    pub delays: Vec<Duration>,
    /// Protocols, for scenarios that give none of their own.
    pub protocols: Vec<Protocol>,
}

/// A validated suite.
#[derive(Clone, Debug, PartialEq)]
pub struct Suite {
    /// Where it came from, for messages (`suite.toml`, `built-in suite`).
    pub source: String,
    /// Directory relative paths are resolved against.
    pub base_dir: PathBuf,
    /// Name printed in summaries.
    pub name: String,
    /// Warm-up per cell, reported apart.
    pub warmup: Duration,
    /// Measurement per cell; with [`Suite::requests`], the longest it may take when
    /// [`Suite::duration_bound`].
    pub duration: Duration,
    /// Requests per cell's measurement (ab's `-n`): it ends once this many are sent.
    pub requests: Option<u64>,
    /// Whether `duration` ends the measurement (always without `requests`; with it, only when
    /// the suite gave a duration too: the first reached wins).
    pub duration_bound: bool,
    /// Requests/s assumed for closed-model cells with a request count, for estimates only.
    pub expected_rate: f64,
    /// `[quick]`: what `gatebench run --quick` changes.
    pub quick: Option<RawQuick>,
    /// Repeats of every cell.
    pub repeats: NonZeroU32,
    /// Run order.
    pub order: Order,
    /// `compare`: scenarios whose comparison (the baseline first) report.html draws; empty
    /// for none.
    pub compare: Vec<String>,
    /// Pin the SUT and the generator to separate cores.
    pub pin: bool,
    /// How long a process may take to become ready.
    pub ready_timeout: Duration,
    /// Include globs (cell id or scenario name); empty = everything.
    pub include: Vec<String>,
    /// Exclude globs.
    pub exclude: Vec<String>,
    /// Print the plan, run nothing.
    pub estimate_only: bool,
    /// `gates`: release gates for `gatebench history gate`, as written (each one parses with
    /// `gatebench_history::gate::parse_all`); not part of what a cell measures.
    pub gates: Vec<String>,
    /// What the generator sends.
    pub load: LoadSettings,
    /// The axes.
    pub matrix: Matrix,
    /// The scenarios, in summary order.
    pub scenarios: Vec<Scenario>,
    /// Where the processes run (`[hosts]`).
    pub hosts: Hosts,
    /// `[capacity]`: the capacity search of scenarios with `capacity`.
    pub capacity: Option<CapacitySettings>,
    /// `[cost]`: the cost measurement of scenarios with `cost` (present when one has).
    pub cost: Option<CostSettings>,
}

impl Suite {
    /// The suite a run uses: the file at `path` (the built-in suite without one) with the
    /// command line's `overrides`, validated once, after every input is known.
    pub fn resolve(path: Option<&Path>, overrides: &Overrides) -> Result<Suite, RunnerError> {
        match path {
            Some(path) => Suite::load_with(path, overrides),
            None => {
                let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
                Suite::from_toml_with("built-in suite", &cwd, DEFAULT_SUITE, overrides)
            }
        }
    }

    /// The built-in default suite: the seed-004 scenarios, the seed-001 balancer and a
    /// backend-alone baseline, short enough to finish in minutes.
    pub fn builtin() -> Suite {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Suite::from_toml("built-in suite", &cwd, DEFAULT_SUITE)
            .expect("the built-in suite is valid (checked by a unit test)")
    }

    /// Reads and validates a suite file.
    pub fn load(path: &Path) -> Result<Suite, RunnerError> {
        Suite::load_with(path, &Overrides::default())
    }

    /// Reads a suite file and validates it with the command line's `overrides`.
    pub fn load_with(path: &Path, overrides: &Overrides) -> Result<Suite, RunnerError> {
        let text = std::fs::read_to_string(path).map_err(|e| RunnerError::io("read", path, e))?;
        let base = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let base = base.canonicalize().unwrap_or_else(|_| base.to_path_buf());
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        Suite::from_toml_with(&name, &base, &text, overrides)
    }

    /// Parses and validates suite text. `source` names it in errors; relative paths resolve
    /// against `base_dir`.
    pub fn from_toml(source: &str, base_dir: &Path, text: &str) -> Result<Suite, RunnerError> {
        Suite::from_toml_with(source, base_dir, text, &Overrides::default())
    }

    /// Parses suite text and validates it with the command line's `overrides`.
    pub fn from_toml_with(
        source: &str,
        base_dir: &Path,
        text: &str,
        overrides: &Overrides,
    ) -> Result<Suite, RunnerError> {
        let raw: RawSuite = toml::from_str(text).map_err(|e| toml_error(source, text, &e))?;
        Suite::from_raw_with(source, base_dir, raw, overrides)
    }

    /// Validates the raw structs.
    pub fn from_raw(source: &str, base_dir: &Path, raw: RawSuite) -> Result<Suite, RunnerError> {
        Suite::from_raw_with(source, base_dir, raw, &Overrides::default())
    }

    /// Validates the raw structs with the command line's `overrides`: the one place a suite
    /// is checked as a whole (names, `compare`, its size), after the overrides are applied, so
    /// that a run's suite is never changed once it is valid.
    pub fn from_raw_with(
        source: &str,
        base_dir: &Path,
        raw: RawSuite,
        overrides: &Overrides,
    ) -> Result<Suite, RunnerError> {
        let err = |m: String| RunnerError::suite(source, m);
        let s = raw.suite;
        let dur = |key: &str, v: &Option<String>, default: Duration| -> Result<Duration, _> {
            v.as_deref()
                .map(|v| parse_duration(v).map_err(|e| err(format!("[suite] {key}: {e}"))))
                .unwrap_or(Ok(default))
        };
        let warmup = dur("warmup", &s.warmup, Duration::from_secs(1))?;
        let duration = dur("duration", &s.duration, Duration::from_secs(4))?;
        if duration.is_zero() {
            return Err(err("[suite] duration: must be more than 0".into()));
        }
        if let Some(n) = s.requests {
            check_requests(n).map_err(|p| err(format!("[suite] requests: {p}")))?;
        }
        let duration_bound = s.requests.is_none() || s.duration.is_some();
        let expected_rate = s.expected_rate.unwrap_or(DEFAULT_EXPECTED_RATE);
        gatebench_loadgen::bounds::check_rate(expected_rate)
            .map_err(|e| err(format!("[suite] expected_rate: {e}")))?;
        let ready_timeout = dur("ready_timeout", &s.ready_timeout, Duration::from_secs(15))?;
        if ready_timeout.is_zero() {
            return Err(err("[suite] ready_timeout: must be more than 0".into()));
        }
        let repeats = NonZeroU32::new(s.repeats.unwrap_or(1))
            .ok_or_else(|| err("[suite] repeats: must be at least 1".into()))?;
        let order = match s.order.as_deref().unwrap_or("interleaved") {
            "interleaved" => Order::Interleaved,
            "sequential" => Order::Sequential,
            other => {
                return Err(err(format!(
                    "[suite] order: \"{other}\" is not an order (use \"interleaved\" or \"sequential\")"
                )))
            }
        };
        let gates = s.gates.unwrap_or_default();
        gatebench_history::gate::parse_all(&gates)
            .map_err(|e| err(format!("[suite] gates: {e}")))?;
        let include = s.include.unwrap_or_default();
        let exclude = s.exclude.unwrap_or_default();
        for g in include.iter().chain(&exclude) {
            if g.is_empty() {
                return Err(err("[suite] include/exclude: a pattern is empty".into()));
            }
        }

        // The validators' errors name the key; the file is named here.
        let in_file = |e: RunnerError| err(e.to_string());
        let hosts = validate_hosts(raw.hosts, base_dir).map_err(in_file)?;
        let load = validate_load(raw.load).map_err(in_file)?;
        let matrix = validate_matrix(raw.matrix).map_err(in_file)?;
        if raw.scenarios.is_empty() {
            return Err(err(
                "no [[scenario]]: a suite needs at least one scenario".into()
            ));
        }
        let capacity = raw
            .capacity
            .as_ref()
            .map(extra::validate_capacity)
            .transpose()
            .map_err(in_file)?;
        let mut scenarios: Vec<Scenario> = Vec::with_capacity(raw.scenarios.len());
        for (i, rs) in raw.scenarios.into_iter().enumerate() {
            let (wants_capacity, wants_cost) = (rs.capacity, rs.cost.unwrap_or(false));
            let mut sc = validate_scenario(i, rs, base_dir, &matrix, &load).map_err(in_file)?;
            // A gRPC or WebSocket scenario's load is a run of its own, not the HTTP worker's.
            let own_load = match (&sc.grpc, &sc.websocket) {
                (Some(_), _) => Some("gRPC"),
                (None, Some(_)) => Some("WebSocket"),
                (None, None) => None,
            };
            if let Some(what) = own_load {
                if wants_capacity == Some(true) || wants_cost {
                    return Err(err(format!(
                        "scenario \"{}\": capacity and cost cannot be used in a {what} scenario yet",
                        sc.name
                    )));
                }
                if !hosts.generators.iter().all(HostSpec::is_local) {
                    return Err(err(format!(
                        "scenario \"{}\": a {what} scenario's load runs on this machine only ([hosts] generators)",
                        sc.name
                    )));
                }
                if sc.websocket.is_some() && s.requests.is_some() {
                    return Err(err(format!(
                        "scenario \"{}\": [suite] requests cannot be used with a WebSocket scenario yet (its cells run for the duration)",
                        sc.name
                    )));
                }
            }
            extra::scenario_flags(
                &mut sc,
                capacity.is_some() && own_load.is_none(),
                wants_capacity,
                wants_cost,
            )
            .map_err(in_file)?;
            if scenarios.iter().any(|o| o.name == sc.name) {
                return Err(err(format!(
                    "scenario \"{}\": the name is used twice",
                    sc.name
                )));
            }
            scenarios.push(sc);
        }
        let compare = s.compare.unwrap_or_default();
        if compare.len() == 1 {
            return Err(err(
                "[suite] compare: name two or more scenarios (the baseline first)".into(),
            ));
        }
        for (i, name) in compare.iter().enumerate() {
            if !scenarios.iter().any(|sc| &sc.name == name) {
                return Err(err(format!(
                    "[suite] compare: no scenario named \"{name}\" (its scenarios: {})",
                    scenarios
                        .iter()
                        .map(|sc| sc.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            if compare[..i].contains(name) {
                return Err(err(format!("[suite] compare: \"{name}\" is named twice")));
            }
        }
        let cost = match (&raw.cost, scenarios.iter().any(|s| s.cost)) {
            (None, false) => None,
            (r, _) => Some(
                extra::validate_cost(&r.clone().unwrap_or_default(), warmup, duration)
                    .map_err(in_file)?,
            ),
        };
        let suite = Suite {
            source: source.to_owned(),
            base_dir: base_dir.to_path_buf(),
            name: s.name.unwrap_or_else(|| source.to_owned()),
            warmup,
            duration,
            requests: s.requests,
            duration_bound,
            expected_rate,
            quick: None,
            repeats,
            order,
            compare,
            pin: s.pin.unwrap_or(false),
            ready_timeout,
            include,
            exclude,
            estimate_only: s.estimate_only.unwrap_or(false),
            gates,
            load,
            matrix,
            scenarios,
            hosts,
            capacity,
            cost,
        };
        let mut suite = suite;
        if let Some(q) = raw.quick {
            if overrides.quick {
                suite.quick = Some(q);
            } else {
                // Checked now, on a copy: a wrong [quick] key is an error before anything
                // runs, with or without --quick.
                let mut probe = suite.clone();
                probe.quick = Some(q.clone());
                overrides::apply_quick(&mut probe)?;
                suite.quick = Some(q);
            }
        }
        overrides.apply(&mut suite)?;
        suite.check_size().map_err(|e| err(e.to_string()))?;
        suite.check_thresholds().map_err(|e| err(e.to_string()))?;
        suite.check_events().map_err(|e| err(e.to_string()))?;
        Ok(suite)
    }

    /// Checks every scenario's thresholds against the cells they will judge, once the command
    /// line's changes are in: a target-relative rate needs open-model cells, and a window must
    /// fit the measurement.
    fn check_thresholds(&self) -> Result<(), RunnerError> {
        let measurement = self.duration_bound.then_some(self.duration);
        let closed = self
            .matrix
            .intensities
            .iter()
            .any(|i| matches!(i, Intensity::Users(_)));
        for sc in &self.scenarios {
            for t in &sc.thresholds {
                let at = |problem: String| RunnerError::SuiteValue {
                    key: format!("scenario \"{}\": thresholds", sc.name),
                    problem,
                };
                if closed && matches!(t.limit, Limit::OfTarget(_)) {
                    return Err(at(format!(
                        "threshold '{}': the matrix has users cells, whose closed model has no \
                         target rate (give the rate as a number)",
                        t.text
                    )));
                }
                t.check_against(true, measurement).map_err(|e| {
                    at(format!(
                        "{e} (each cell measures {})",
                        humantime::format_duration(self.duration)
                    ))
                })?;
            }
        }
        Ok(())
    }

    /// Checks every scenario's events against the cells they fire in, once the command line's
    /// changes are in: each offset within the measurement, which must have a duration, and
    /// every process on this machine (events act by process id).
    fn check_events(&self) -> Result<(), RunnerError> {
        for sc in self.scenarios.iter().filter(|s| !s.events.is_empty()) {
            let at = |event: &str, problem: String| RunnerError::SuiteValue {
                key: format!("scenario \"{}\": event \"{event}\"", sc.name),
                problem,
            };
            let first = &sc.events[0].name;
            if !self.duration_bound {
                return Err(at(
                    first,
                    "events need a measurement of set length ([suite] duration)".into(),
                ));
            }
            if !self.hosts.all_local() {
                return Err(at(first, "events act on processes by id: every process must run on this machine ([hosts])".into()));
            }
            if let Some(e) = sc.events.iter().find(|e| e.at >= self.duration) {
                return Err(at(
                    &e.name,
                    format!(
                        "at {} is not within the measurement of {}",
                        humantime::format_duration(e.at),
                        humantime::format_duration(self.duration)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The longest a cell's measurement may take; zero when a request count alone ends it.
    pub fn measurement_bound(&self) -> Duration {
        if self.duration_bound {
            self.duration
        } else {
            Duration::ZERO
        }
    }

    /// How long one cell's measurement is expected to take: its duration, or with a request
    /// count the time those requests take at the cell's rate (open model) or at
    /// [`Suite::expected_rate`] (closed model), whichever ends first.
    pub fn measurement_estimate(&self, intensity: &Intensity) -> Duration {
        let Some(n) = self.requests else {
            return self.duration;
        };
        let rate = intensity
            .mean_rate(self.measurement_bound())
            .unwrap_or(self.expected_rate);
        let by_count = Duration::try_from_secs_f64(n as f64 / rate).unwrap_or(Duration::MAX);
        if self.duration_bound {
            by_count.min(self.duration)
        } else {
            by_count
        }
    }

    /// The connections and the arrival of a cell's load: `users` connections in the closed
    /// model; `[load] connections` for a rate or a program, spaced as `[load] arrival` says.
    /// Poisson arrivals use the suite's seed plus the repeat number less one, so repeat 1
    /// reproduces `gatebench load --arrival poisson --seed SEED` and every repeat is an
    /// independent sample.
    pub fn arrival(&self, intensity: &Intensity, repeat: u32) -> (u32, Arrival) {
        let spacing = match self.load.spacing {
            Spacing::Even => Spacing::Even,
            Spacing::Poisson { seed } => Spacing::Poisson {
                seed: seed.wrapping_add(u64::from(repeat.saturating_sub(1))),
            },
        };
        let rate = match intensity {
            Intensity::Users(u) => return (*u, Arrival::Closed),
            Intensity::Rate(rate) if spacing == Spacing::Even => {
                return (self.load.connections, Arrival::Open { rate: *rate })
            }
            Intensity::Rate(rate) => RateProgram::Constant(*rate),
            Intensity::Program(p) => p.clone(),
        };
        (
            self.load.connections,
            Arrival::Program(ArrivalProgram { rate, spacing }),
        )
    }

    /// How many cells the matrix expands to (before filters), or `None` when the count does
    /// not fit in a `u64`.
    pub fn cell_count(&self) -> Option<u64> {
        let m = &self.matrix;
        let points = u64::from(self.repeats.get())
            .checked_mul(m.intensities.len() as u64)?
            .checked_mul(m.sizes.len() as u64)?
            .checked_mul(m.delays.len() as u64)?;
        self.scenarios.iter().try_fold(0u64, |sum, sc| {
            sum.checked_add(points.checked_mul(sc.protocols.len() as u64)?)
        })
    }

    /// Refuses a matrix of more than [`MAX_CELLS`] cells before it is expanded in memory.
    pub fn check_size(&self) -> Result<(), RunnerError> {
        match self.cell_count() {
            Some(n) if n <= MAX_CELLS => Ok(()),
            cells => Err(RunnerError::TooManyCells {
                cells,
                max: MAX_CELLS,
            }),
        }
    }

    /// The resolved suite as TOML, every default filled in (written beside the results so a
    /// run can be reproduced with `gatebench run DIR/suite.toml`).
    pub fn to_toml(&self) -> String {
        let fmt = |d: Duration| humantime::format_duration(d).to_string();
        let (users, rates) = split_intensities(&self.matrix.intensities);
        let raw = RawSuite {
            suite: RawSettings {
                name: Some(self.name.clone()),
                warmup: Some(fmt(self.warmup)),
                duration: self.duration_bound.then(|| fmt(self.duration)),
                requests: self.requests,
                expected_rate: self.requests.map(|_| self.expected_rate),
                repeats: Some(self.repeats.get()),
                order: Some(self.order.name().to_owned()),
                compare: (!self.compare.is_empty()).then(|| self.compare.clone()),
                pin: Some(self.pin),
                ready_timeout: Some(fmt(self.ready_timeout)),
                include: Some(self.include.clone()),
                exclude: Some(self.exclude.clone()),
                estimate_only: Some(self.estimate_only),
                gates: (!self.gates.is_empty()).then(|| self.gates.clone()),
            },
            matrix: RawMatrix {
                users,
                rates,
                sizes: Some(self.matrix.sizes.clone()),
                delays: Some(self.matrix.delays.iter().map(|d| fmt(*d)).collect()),
                protocols: Some(names(&self.matrix.protocols)),
            },
            load: RawLoad {
                method: Some(self.load.method.clone()),
                path: Some(self.load.path.clone()),
                headers: Some(self.load.headers.clone()),
                connections: Some(self.load.connections),
                threads: self.load.threads,
                timeout: Some(fmt(self.load.timeout)),
                connect_timeout: Some(fmt(self.load.connect_timeout)),
                keepalive: Some(self.load.keepalive),
                arrival: match self.load.spacing {
                    Spacing::Even => None,
                    Spacing::Poisson { .. } => Some("poisson".to_owned()),
                },
                seed: match self.load.spacing {
                    Spacing::Even => None,
                    Spacing::Poisson { seed } => Some(seed),
                },
                thresholds: texts(&self.load.thresholds),
            },
            hosts: RawHosts {
                sut: (!self.hosts.sut.is_local()).then(|| self.hosts.sut.name().to_owned()),
                backend: (!self.hosts.backend.is_local())
                    .then(|| self.hosts.backend.name().to_owned()),
                generators: (!self.hosts.generators.iter().all(HostSpec::is_local)).then(|| {
                    self.hosts
                        .generators
                        .iter()
                        .map(|g| g.name().to_owned())
                        .collect()
                }),
                ssh_config: self
                    .hosts
                    .ssh_config
                    .as_ref()
                    .map(|p| p.display().to_string()),
            },
            scenarios: self
                .scenarios
                .iter()
                .map(|s| RawScenario {
                    name: Some(s.name.clone()),
                    title: Some(s.title.clone()),
                    protocols: Some(names(&s.protocols)),
                    verify: Some(s.verify),
                    path: Some(s.path.clone()),
                    method: Some(s.method.clone()),
                    expect_status: s.expect_status,
                    keepalive: Some(s.keepalive),
                    setup: s.setup.clone(),
                    workdir: Some(s.workdir.display().to_string()),
                    templates: Some(
                        s.templates
                            .iter()
                            .map(|t| t.display().to_string())
                            .collect(),
                    ),
                    backend: s.backend.as_ref().map(raw_process),
                    sut: s.sut.as_ref().map(raw_process),
                    gc_format: s.gc.as_ref().map(|g| g.format.name().to_owned()),
                    gc_log: s.gc.as_ref().and_then(|g| g.path.clone()),
                    capacity: self.capacity.as_ref().map(|_| s.capacity),
                    cost: s.cost.then_some(true),
                    thresholds: (s.thresholds != self.load.thresholds)
                        .then(|| texts(&s.thresholds).unwrap_or_default()),
                    stream: s.stream.map(|m| m.name().to_owned()),
                    grpc: s.grpc.as_ref().map(|g| raw::RawGrpc {
                        method: g.method.clone(),
                        kind: Some(g.kind.name().replace('_', "-")),
                        messages: Some(g.messages),
                        message_rate: g.message_rate,
                        deadline: g.deadline.map(|d| format!("{}us", d.as_micros())),
                        connections: Some(g.connections),
                    }),
                    websocket: s.websocket.as_ref().map(|w| raw::RawWebSocket {
                        path: Some(w.path.clone()),
                        binary: Some(w.binary),
                        message_rate: w.message_rate,
                        messages: w.messages,
                    }),
                    events: s.events.iter().map(events::raw_event).collect(),
                })
                .collect(),
            quick: self.quick.clone(),
            capacity: self.capacity.as_ref().map(extra::raw_capacity),
            cost: self.cost.as_ref().map(extra::raw_cost),
        };
        let body = toml::to_string(&raw).expect("suite structs always serialize to TOML");
        format!(
            "# The resolved suite of this run (every default filled in). Re-run it with\n\
             # `gatebench run suite.toml`.\n\n{body}"
        )
    }
}

/// Thresholds as written, `None` for none.
fn texts(thresholds: &[Threshold]) -> Option<Vec<String>> {
    (!thresholds.is_empty()).then(|| thresholds.iter().map(|t| t.text.clone()).collect())
}

/// `[hosts]`: `local` (the default) or `ssh://[user@]host[:port]` for each role.
fn validate_hosts(r: RawHosts, base_dir: &Path) -> Result<Hosts, RunnerError> {
    let bad = |key: &str, e: RunnerError| RunnerError::SuiteValue {
        key: format!("[hosts] {key}"),
        problem: e.to_string(),
    };
    let one = |key: &str, v: Option<String>| -> Result<HostSpec, RunnerError> {
        v.map(|v| HostSpec::parse(&v).map_err(|e| bad(key, e)))
            .unwrap_or(Ok(HostSpec::Local))
    };
    let sut = one("sut", r.sut)?;
    let backend = one("backend", r.backend)?;
    let generators = match r.generators {
        None => vec![HostSpec::Local],
        Some(g) if g.is_empty() => {
            return Err(RunnerError::SuiteValue {
                key: "[hosts] generators".into(),
                problem: "the list is empty".into(),
            })
        }
        Some(g) => g
            .iter()
            .map(|g| HostSpec::parse(g).map_err(|e| bad("generators", e)))
            .collect::<Result<_, _>>()?,
    };
    if backend.is_local() && !sut.is_local() {
        return Err(RunnerError::SuiteValue {
            key: "[hosts] backend".into(),
            problem: format!(
                "a system under test on {} cannot reach back-ends on this machine's loopback; \
                 give backend a host too",
                sut.name()
            ),
        });
    }
    let ssh_config = match r.ssh_config {
        Some(c) if c.trim().is_empty() => return Err(RunnerError::EmptySshConfig),
        Some(c) => Some(base_dir.join(c)),
        None => None,
    };
    Ok(Hosts {
        sut,
        backend,
        generators,
        ssh_config,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_default_to_local_and_round_trip() {
        let s = Suite::builtin();
        assert!(s.hosts.all_local());
        assert!(!s.to_toml().contains("[hosts]"));
        let text = r#"
            [hosts]
            sut = "ssh://bench@sut-host"
            backend = "ssh://backend:2222"
            ssh_config = "testbed/ssh_config"
            [[scenario]]
            name = "p"
            backend = { serve = "echo --port {port}", port = 9000 }
            sut = { serve = "proxy --port {port} --upstream {upstream}" }
        "#;
        let s = Suite::from_toml("t.toml", Path::new("/x"), text).unwrap();
        assert_eq!(s.hosts.sut.name(), "ssh://bench@sut-host");
        assert_eq!(
            s.hosts.ssh_config.as_deref(),
            Some(Path::new("/x/testbed/ssh_config"))
        );
        assert_eq!(s.scenarios[0].backend.as_ref().unwrap().port, Some(9000));
        let again = Suite::from_toml("t.toml", Path::new("/x"), &s.to_toml()).unwrap();
        assert_eq!(s, again);
        for (bad, want) in [
            (
                "[hosts]\nsut = \"sut\"",
                "[hosts] sut: \"sut\" is not a host",
            ),
            (
                "[hosts]\nsut = \"ssh://s\"",
                "[hosts] backend: a system under test on ssh://s",
            ),
            (
                "[hosts]\ngenerators = []",
                "[hosts] generators: the list is empty",
            ),
            (
                "[hosts]\nsutt = \"local\"",
                "unknown key \"sutt\" in [hosts]",
            ),
        ] {
            let text = format!("{bad}\n[[scenario]]\nname = \"e\"\nbackend = {{ serve = \"echo --port {{port}}\" }}\n");
            let e = Suite::from_toml("t.toml", Path::new("/x"), &text)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn builtin_suite_is_valid_and_names_every_seed_scenario() {
        let s = Suite::from_toml("built-in suite", Path::new("."), DEFAULT_SUITE).unwrap();
        let names: Vec<&str> = s.scenarios.iter().map(|s| s.name.as_str()).collect();
        for want in [
            "backend-alone",
            "passthrough-h1c-h1c",
            "passthrough-h1-h1",
            "transform-h1c",
            "transform-h1",
            "passthrough-h2-h2",
            "passthrough-h2-h1",
            "passthrough-h2-h1c",
            "downgrade",
            "balance-5",
        ] {
            assert!(names.contains(&want), "missing {want} in {names:?}");
        }
        assert!(s.scenarios.iter().all(Scenario::is_builtin));
    }

    #[test]
    fn variants_follow_their_scenario_with_the_extra_arguments() {
        let mut suite = Suite::builtin();
        let before = suite.scenarios.len();
        let suts = suite.scenarios.iter().filter(|s| s.sut.is_some()).count();
        assert_eq!(
            overrides::add_variant(&mut suite, "t1", "--threads 1").unwrap(),
            suts
        );
        assert_eq!(suite.scenarios.len(), before + suts);
        for pair in suite.scenarios.windows(2) {
            if pair[1].name.ends_with("+t1") {
                assert_eq!(pair[1].name, format!("{}+t1", pair[0].name));
                let Some(ProcessTemplate {
                    program: Program::Serve(a),
                    ..
                }) = &pair[0].sut
                else {
                    panic!("a variant follows a built-in SUT")
                };
                let Some(ProcessTemplate {
                    program: Program::Serve(b),
                    ..
                }) = &pair[1].sut
                else {
                    panic!("the variant has a built-in SUT")
                };
                assert_eq!(b, &format!("{a} --threads 1"));
            }
        }
        assert!(overrides::add_variant(&mut suite, "bad name", "x").is_err());
    }

    #[test]
    fn sut_args_change_every_built_in_sut_and_are_recorded() {
        let mut suite = Suite::builtin();
        let suts = suite.scenarios.iter().filter(|s| s.sut.is_some()).count();
        assert_eq!(
            overrides::append_sut_args(&mut suite, " --threads 1 "),
            suts
        );
        for sc in &suite.scenarios {
            if let Some(ProcessTemplate {
                program: Program::Serve(line),
                ..
            }) = &sc.sut
            {
                assert!(line.ends_with(" --threads 1"), "{line}");
            }
            if let Some(ProcessTemplate {
                program: Program::Serve(line),
                ..
            }) = &sc.backend
            {
                assert!(
                    !line.contains("--threads 1"),
                    "backends keep their settings: {line}"
                );
            }
        }
        assert!(
            suite.to_toml().contains("--threads 1"),
            "the resolved suite records it"
        );
        assert_eq!(overrides::append_sut_args(&mut suite, "  "), 0);
    }

    #[test]
    fn resolved_suite_round_trips() {
        let s = Suite::from_toml("built-in suite", Path::new("/x"), DEFAULT_SUITE).unwrap();
        let again = Suite::from_toml("built-in suite", Path::new("/x"), &s.to_toml()).unwrap();
        assert_eq!(s, again);
    }

    #[test]
    fn gates_are_checked_at_load_and_kept_in_the_resolved_suite() {
        let with = |gates: &str| {
            DEFAULT_SUITE.replacen("[suite]\n", &format!("[suite]\ngates = {gates}\n"), 1)
        };
        let text =
            with(r#"["p99 < 50ms", "throughput >= -5% vs 2201.11.0", "cv(throughput) <= 3%"]"#);
        assert_ne!(text, DEFAULT_SUITE, "the default suite has a [suite] table");
        let s = Suite::from_toml("s.toml", Path::new("/x"), &text).unwrap();
        assert_eq!(s.gates.len(), 3);
        let resolved = s.to_toml();
        assert!(resolved.contains("gates = ["), "{resolved}");
        let again = Suite::from_toml("s.toml", Path::new("/x"), &resolved).unwrap();
        assert_eq!(again.gates, s.gates);
        let e = Suite::from_toml("s.toml", Path::new("/x"), &with(r#"["p99 < 50%"]"#))
            .unwrap_err()
            .to_string();
        assert!(e.contains("[suite] gates: bad gate `p99 < 50%`"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let builtin = Suite::from_toml("s.toml", Path::new("/x"), DEFAULT_SUITE).unwrap();
        assert!(builtin.gates.is_empty());
        assert!(!builtin.to_toml().contains("gates"));
    }
}
