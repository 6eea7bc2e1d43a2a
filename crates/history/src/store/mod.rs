//! The store of release history: where every run of every suite is kept, with its version,
//! its environment, every repeat's figures and its full latency histogram (docs/history.md).
//!
//! By default an embedded SQLite file (created on first use); a `postgres://` URL selects a
//! PostgreSQL server with the same schema. The schema is versioned and migrated by gatebench
//! ([`schema`]). Writes are transactions: a run added from a results directory is one
//! transaction ([`Store::add_run`]), so writers adding runs at once queue rather than mix, and
//! a writer killed half-way leaves the database as it was. A run stored while it runs
//! (`gatebench run --history`) is a run row made at its start ([`Store::begin_run`]) and one
//! transaction per finished cell ([`Store::add_cell`]); it is marked complete at the end
//! ([`Store::finish_run`]), and an interrupted one stays marked incomplete.
//!
//! Reads ([`Store::series`], [`Store::runs`], [`Store::histograms`]) give the analyses what
//! they work on; they never see SQL.
//!
//! # Version order
//! A suite's versions are ordered by their run's date (`--date`, by default when the run
//! started), and runs of the same date by the order they were added. So runs added in the order
//! they were made keep that order, backfilled directories fall into place by when they ran,
//! and `--date` puts a version anywhere.
//!
//! Not here: the analyses (change points, gates, the trend site) and the command line.

pub mod cells;
pub(crate) mod db;
pub mod fingerprint;
pub mod schema;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gatebench_model::histogram::{self, LatencyHistogram};
use gatebench_model::{CellRecord, Environment};
use serde::Serialize;

use crate::error::HistoryError;
use crate::series::{Metric, Point, Series};
use crate::site::{CellInfo, SummaryRow};
use crate::store::db::{Db, Kind, Value};
pub use crate::store::fingerprint::SuiteIdentity;

/// The environment variable naming the history (a path or a `postgres://` URL) when
/// `--history` does not.
pub const HISTORY_ENV: &str = "GATEBENCH_HISTORY";

/// Where a history is kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// An SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL database, by its URL (`postgres://user:password@host:port/db`, or a unix
    /// socket directory as `host=/path` or a percent-encoded host).
    Postgres(String),
}

impl Location {
    /// A path, or a URL starting `postgres://` or `postgresql://`.
    pub fn parse(text: &str) -> Result<Location, HistoryError> {
        let t = text.trim();
        if t.is_empty() {
            return Err(HistoryError::Location {
                location: text.to_owned(),
                problem: "empty; give a file path or a postgres:// URL".into(),
            });
        }
        if t.starts_with("postgres://") || t.starts_with("postgresql://") {
            t.parse::<postgres::Config>()
                .map_err(|e| HistoryError::Location {
                    location: redact(t),
                    problem: format!("not a PostgreSQL URL ({e})"),
                })?;
            return Ok(Location::Postgres(t.to_owned()));
        }
        if let Some((scheme, _)) = t.split_once("://") {
            return Err(HistoryError::Location {
                location: t.to_owned(),
                problem: format!(
                    "`{scheme}://` is not supported; give a file path (SQLite) or a \
                     postgres:// URL"
                ),
            });
        }
        Ok(Location::Sqlite(PathBuf::from(t)))
    }

    /// The location to use: `given` (`--history`), else [`HISTORY_ENV`], else
    /// [`Location::default_path`].
    pub fn resolve(given: Option<&str>) -> Result<Location, HistoryError> {
        if let Some(g) = given {
            return Location::parse(g);
        }
        match std::env::var(HISTORY_ENV) {
            Ok(v) if !v.trim().is_empty() => Location::parse(&v),
            _ => Ok(Location::Sqlite(Location::default_path()?)),
        }
    }

    /// `$XDG_DATA_HOME/gatebench/history.sqlite`, or `~/.local/share/gatebench/history.sqlite`
    /// without `XDG_DATA_HOME` (the XDG base directory specification's default).
    pub fn default_path() -> Result<PathBuf, HistoryError> {
        let data = match std::env::var_os("XDG_DATA_HOME") {
            Some(d) if Path::new(&d).is_absolute() => PathBuf::from(d),
            _ => match std::env::var_os("HOME") {
                Some(h) if !h.is_empty() => PathBuf::from(h).join(".local/share"),
                _ => {
                    return Err(HistoryError::Location {
                        location: "default".into(),
                        problem: "neither XDG_DATA_HOME nor HOME is set; give --history PATH"
                            .into(),
                    })
                }
            },
        };
        Ok(data.join("gatebench").join("history.sqlite"))
    }
}

impl std::fmt::Display for Location {
    /// The file, or the URL with its password hidden.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(u) => f.write_str(&redact(u)),
        }
    }
}

/// `url` with the password of its user info replaced by `***`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{scheme}://{name}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

/// A stored run's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunId(pub i64);

/// The release a run measured: its version, source commit, and date in the version order.
#[derive(Clone, Copy, Debug)]
pub struct Release<'a> {
    /// The version's name (`--version`).
    pub version: &'a str,
    /// The source commit (`--commit`).
    pub commit: Option<&'a str>,
    /// The version's date for the version order (`--date`); the run's start without one.
    pub date_unix_ms: Option<i64>,
}

/// What is stored about a run besides its cells.
#[derive(Clone, Debug)]
pub struct RunInput {
    /// The suite.
    pub suite: SuiteIdentity,
    /// The version, as the user names it.
    pub version: String,
    /// The source commit of the version, when given.
    pub commit: Option<String>,
    /// The run's date for the version order, Unix milliseconds: `--date`, else the start.
    pub date_unix_ms: i64,
    /// When the run started (`run.json`), Unix milliseconds.
    pub started_at_unix_ms: i64,
    /// The cells the run planned.
    pub planned_cells: usize,
    /// The environment's fingerprint ([`fingerprint::environment_fingerprint`]).
    pub env_fingerprint: String,
    /// The environment's canonical JSON (what the fingerprint is taken of).
    pub environment: String,
    /// The gatebench version that made the run.
    pub gatebench_version: String,
    /// The raw results directory, absolute.
    pub results_dir: PathBuf,
    /// The release gates of the run's suite file (`[suite] gates`), as written; each parses
    /// with [`crate::gate::parse_all`].
    pub gates: Vec<String>,
}

impl RunInput {
    /// The run of the results directory `dir` as version `version`, with its records. An
    /// incomplete directory (planned cells without a record), one of another schema version, or
    /// one without `suite.toml` or `environment.json` is refused.
    pub fn from_results_dir(
        dir: &Path,
        version: &str,
        commit: Option<&str>,
        date_unix_ms: Option<i64>,
    ) -> Result<(RunInput, Vec<CellRecord>), HistoryError> {
        let unstorable = |problem: String| HistoryError::Unstorable {
            path: dir.to_path_buf(),
            problem,
        };
        let results = gatebench_results::read(dir)?;
        if !results.missing.is_empty() {
            return Err(unstorable(format!(
                "incomplete: {} of {} planned cells have no record (first missing: {}); only \
                 a finished run is added",
                results.missing.len(),
                results.manifest.planned_cells.len(),
                results.missing[0]
            )));
        }
        if let Some((id, why)) = results.damaged.first() {
            return Err(unstorable(format!(
                "{} damaged record(s), first cell {id}: {why}; only a run whose every record \
                 reads is added",
                results.damaged.len()
            )));
        }
        let suite_toml = std::fs::read_to_string(dir.join(gatebench_results::paths::SUITE_TOML))
            .map_err(|e| unstorable(format!("no readable suite.toml ({e})")))?;
        let env = gatebench_results::read_environment(dir)?
            .ok_or_else(|| unstorable("no environment.json".into()))?;
        let abs = std::path::absolute(dir).map_err(|source| HistoryError::Io {
            action: "resolve",
            path: dir.to_path_buf(),
            source,
        })?;
        let release = Release {
            version,
            commit,
            date_unix_ms,
        };
        let run = RunInput::new(
            &suite_toml,
            &env,
            &release,
            results.manifest.started_at_unix_ms as i64,
            results.manifest.planned_cells.len(),
            abs,
        )
        .map_err(|e| match e {
            HistoryError::Invalid { what, problem } if what == "suite.toml" => unstorable(problem),
            e => e,
        })?;
        Ok((run, results.records))
    }

    /// A run from its parts: the resolved suite's TOML, the environment, the version.
    pub fn new(
        suite_toml: &str,
        env: &Environment,
        release: &Release<'_>,
        started_at_unix_ms: i64,
        planned_cells: usize,
        results_dir: PathBuf,
    ) -> Result<RunInput, HistoryError> {
        let Release {
            version,
            commit,
            date_unix_ms,
        } = *release;
        let version = check_name("--version", version)?;
        let commit = commit.map(|c| check_name("--commit", c)).transpose()?;
        let suite =
            fingerprint::suite_identity(suite_toml).map_err(|problem| HistoryError::Invalid {
                what: "suite.toml".into(),
                problem,
            })?;
        let (env_fingerprint, environment) =
            fingerprint::environment_fingerprint(env, fingerprint::suite_pins(suite_toml));
        let gates =
            fingerprint::suite_gates(suite_toml).map_err(|problem| HistoryError::Invalid {
                what: "suite.toml".into(),
                problem,
            })?;
        Ok(RunInput {
            suite,
            version,
            commit,
            date_unix_ms: date_unix_ms.unwrap_or(started_at_unix_ms),
            started_at_unix_ms,
            planned_cells,
            env_fingerprint,
            environment,
            gatebench_version: env.gatebench_version.clone(),
            results_dir,
            gates,
        })
    }
}

/// A version or commit name: not empty, no control characters, at most 200 bytes.
fn check_name(what: &str, v: &str) -> Result<String, HistoryError> {
    let t = v.trim();
    let problem = if t.is_empty() {
        "is empty"
    } else if t.len() > 200 {
        "is longer than 200 bytes"
    } else if t.chars().any(char::is_control) {
        "has control characters"
    } else {
        return Ok(t.to_owned());
    };
    Err(HistoryError::Invalid {
        what: what.into(),
        problem: format!("`{}` {problem}", v.escape_debug()),
    })
}

/// What [`Store::add_run`] stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Added {
    /// The run's id.
    pub run: RunId,
    /// The suite's name.
    pub suite: String,
    /// The version.
    pub version: String,
    /// Cells stored.
    pub cells: usize,
    /// Whether a run of the same version was replaced (`--replace`).
    pub replaced: bool,
    /// Whether the suite was new to the history.
    pub new_suite: bool,
}

/// A stored run, as [`Store::runs`] lists it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunInfo {
    /// The run's id.
    #[serde(skip)]
    pub id: RunId,
    /// The version.
    pub version: String,
    /// The run's date (version order), Unix milliseconds.
    pub date_unix_ms: i64,
    /// The source commit, when given.
    pub commit: Option<String>,
    /// The environment's fingerprint.
    pub env_fingerprint: String,
    /// The environment it is taken of (canonical JSON).
    pub environment: String,
    /// The raw results directory.
    pub results_dir: String,
    /// The gatebench version that made the run.
    pub gatebench_version: String,
    /// Whether every planned cell is stored (false for an interrupted `run --history`).
    pub complete: bool,
    /// Cells the run planned.
    pub planned_cells: i64,
    /// Cells stored.
    pub cells: i64,
    /// When it was added, Unix milliseconds.
    pub added_at_unix_ms: i64,
    /// The release gates of the run's suite file (`[suite] gates`), as written.
    pub gates: Vec<String>,
}

/// A suite, as [`Store::suites`] lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SuiteInfo {
    /// The name.
    pub name: String,
    /// The fingerprint.
    pub fingerprint: String,
    /// Runs stored (one per version).
    pub runs: i64,
    /// Of which incomplete.
    pub incomplete_runs: i64,
    /// Cells stored, every repeat of every run.
    pub cells: i64,
    /// Distinct cell keys.
    pub cell_keys: i64,
}

/// One version's latency histograms of one cell, every repeat added together.
#[derive(Clone, Debug)]
pub struct VersionHistograms {
    /// The version.
    pub version: String,
    /// Repeats with a histogram that went into it.
    pub repeats: u32,
    /// The measurement's latency: answered and censored requests (what the percentiles of
    /// the series are taken from).
    pub latency: LatencyHistogram,
    /// The answered requests alone.
    pub answered: LatencyHistogram,
}

/// One version's row of seed 004's summary table per cell ([`Store::summaries`]).
#[derive(Clone, Debug, PartialEq)]
pub struct VersionSummary {
    /// The version.
    pub version: String,
    /// Per cell (by key, in key order), the medians of its repeats.
    pub rows: Vec<(String, SummaryRow)>,
}

/// One figure of one repeat of one cell of one version: a tidy row of `history export`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExportRow {
    /// The suite.
    pub suite: String,
    /// The version.
    pub version: String,
    /// The run's date, RFC 3339.
    pub date: String,
    /// The commit, when given.
    pub commit: Option<String>,
    /// The cell's key.
    pub cell: String,
    /// The scenario.
    pub scenario: String,
    /// Concurrent users.
    pub users: i64,
    /// Open model: the target rate.
    pub rate: Option<f64>,
    /// Message size, bytes.
    pub size_bytes: i64,
    /// Back-end delay, ms.
    pub delay_ms: f64,
    /// Protocol.
    pub protocol: String,
    /// The repeat number.
    pub repeat: i64,
    /// The metric's name.
    pub metric: String,
    /// Its value.
    pub value: f64,
    /// Its unit.
    pub unit: String,
}

/// The figures `history export` writes besides [`Metric::ALL`]: (column, name, unit).
const EXTRA_FIGURES: &[(&str, &str, &str)] = &[
    ("mean_ms", "mean", "ms"),
    ("sut_cpu_mean_percent", "sut_cpu_percent", "%"),
    ("sut_rss_mean_mib", "sut_memory_mean", "MiB"),
    ("gc_throughput_percent", "gc_throughput", "%"),
    ("gc_pause_p99_ms", "gc_pause_p99", "ms"),
    ("gc_heap_after_full_gc_mib", "gc_heap_after_full_gc", "MiB"),
];

/// The `cells` column holding `m`.
fn metric_column(m: Metric) -> &'static str {
    match m {
        Metric::Throughput => "throughput_rps",
        Metric::P50 => "p50_ms",
        Metric::P99 => "p99_ms",
        Metric::P999 => "p999_ms",
        Metric::ErrorPct => "error_percent",
        Metric::SutCpuPerRequest => "sut_cpu_us_per_request",
        Metric::SutMemory => "sut_rss_max_mib",
    }
}

/// The join every read of a suite's cells starts from; `$1` is the suite's name. Only complete
/// runs, and only load cells that ran and whose generator kept up (a generator-bound repeat's
/// figures describe the generator, not the target).
const SUITE_CELLS: &str = "FROM cells c JOIN runs r ON c.run_id = r.id \
     JOIN suites s ON r.suite_id = s.id \
     WHERE s.name = $1 AND r.complete = 1 AND c.status = 'ok' AND c.kind = 'load' \
     AND c.generator_bound = 0";

/// An open history.
#[derive(Debug)]
pub struct Store {
    db: RefCell<Db>,
    location: Location,
    created: bool,
}

impl Store {
    /// Opens the history at `location`, creating an SQLite file (and its directory) on first
    /// use, and migrates its schema to this build's. A database of a newer schema is refused.
    pub fn open(location: &Location) -> Result<Store, HistoryError> {
        let (mut db, created) = match location {
            Location::Sqlite(path) => {
                let created = !path.exists();
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|source| HistoryError::Io {
                        action: "create",
                        path: parent.to_path_buf(),
                        source,
                    })?;
                }
                (Db::open_sqlite(path.clone())?, created)
            }
            Location::Postgres(url) => (Db::open_postgres(url, redact(url))?, false),
        };
        let fresh = schema::migrate(&mut db)?;
        Ok(Store {
            db: RefCell::new(db),
            location: location.clone(),
            created: created || fresh,
        })
    }

    /// Where the history is.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Whether opening it created it (a new SQLite file, or a database without the schema).
    pub fn created(&self) -> bool {
        self.created
    }

    /// The schema version of the database.
    pub fn schema_version(&self) -> Result<i64, HistoryError> {
        schema::current_version(&mut self.db.borrow_mut())
    }

    /// Checks, without writing, that a run of `suite` as `version` could be added: the suite
    /// matches the stored one of the same name, and the version is not stored yet unless
    /// `replace`. `gatebench run --history` checks before it runs anything.
    pub fn check(
        &self,
        suite: &SuiteIdentity,
        version: &str,
        replace: bool,
    ) -> Result<(), HistoryError> {
        let mut db = self.db.borrow_mut();
        if let Some((id, stored)) = find_suite(&mut db, &suite.name)? {
            if stored != suite.fingerprint {
                return Err(mismatch(suite, stored));
            }
            if !replace && find_run(&mut db, id, version)?.is_some() {
                return Err(HistoryError::VersionExists {
                    suite: suite.name.clone(),
                    version: version.to_owned(),
                });
            }
        }
        Ok(())
    }

    /// Adds a finished run and its cells in one transaction: all of it or, on any error or if
    /// the process dies, nothing. A version already stored for the suite is refused unless
    /// `replace`, which replaces it in the same transaction. `on_cell` is called after each
    /// cell is written (inside the transaction), for progress.
    pub fn add_run(
        &mut self,
        run: &RunInput,
        records: &[CellRecord],
        replace: bool,
        on_cell: &mut dyn FnMut(&CellRecord),
    ) -> Result<Added, HistoryError> {
        let insert_cell = insert_cell_sql();
        let result = self.db.get_mut().transaction(|db| {
            let (run_id, replaced, new_suite) = create_run(db, run, replace, true)?;
            for r in records {
                write_cell(db, &insert_cell, run_id, r)?;
                on_cell(r);
            }
            Ok(Added {
                run: run_id,
                suite: run.suite.name.clone(),
                version: run.version.clone(),
                cells: records.len(),
                replaced,
                new_suite,
            })
        });
        result.map_err(|e| version_race(e, run))
    }

    /// Starts storing a run as it runs: the run row, marked incomplete, in its own transaction
    /// (the same checks as [`Store::add_run`]). Add its cells with [`Store::add_cell`] and
    /// mark it complete with [`Store::finish_run`].
    pub fn begin_run(&mut self, run: &RunInput, replace: bool) -> Result<Added, HistoryError> {
        let result = self.db.get_mut().transaction(|db| {
            let (run_id, replaced, new_suite) = create_run(db, run, replace, false)?;
            Ok(Added {
                run: run_id,
                suite: run.suite.name.clone(),
                version: run.version.clone(),
                cells: 0,
                replaced,
                new_suite,
            })
        });
        result.map_err(|e| version_race(e, run))
    }

    /// Stores one finished cell of a run begun with [`Store::begin_run`], in one transaction.
    pub fn add_cell(&mut self, run: RunId, record: &CellRecord) -> Result<(), HistoryError> {
        let sql = insert_cell_sql();
        self.db
            .get_mut()
            .transaction(|db| write_cell(db, &sql, run, record))
    }

    /// Marks a run begun with [`Store::begin_run`] complete.
    pub fn finish_run(&mut self, run: RunId) -> Result<(), HistoryError> {
        self.db.get_mut().execute(
            "UPDATE runs SET complete = 1 WHERE id = $1",
            &[Value::int(run.0)],
            "mark a run complete",
        )?;
        Ok(())
    }

    /// Every suite, by name, with its counts.
    pub fn suites(&self) -> Result<Vec<SuiteInfo>, HistoryError> {
        let rows = self.db.borrow_mut().query(
            "SELECT s.name, s.fingerprint, \
             (SELECT COUNT(*) FROM runs r WHERE r.suite_id = s.id), \
             (SELECT COUNT(*) FROM runs r WHERE r.suite_id = s.id AND r.complete = 0), \
             (SELECT COUNT(*) FROM cells c JOIN runs r ON c.run_id = r.id \
              WHERE r.suite_id = s.id), \
             (SELECT COUNT(DISTINCT c.cell_key) FROM cells c JOIN runs r ON c.run_id = r.id \
              WHERE r.suite_id = s.id) \
             FROM suites s ORDER BY s.name",
            &[],
            &[
                Kind::Text,
                Kind::Text,
                Kind::Int,
                Kind::Int,
                Kind::Int,
                Kind::Int,
            ],
            "list suites",
        )?;
        Ok(rows
            .into_iter()
            .map(|r| SuiteInfo {
                name: r[0].text_or_empty(),
                fingerprint: r[1].text_or_empty(),
                runs: r[2].as_int().unwrap_or(0),
                incomplete_runs: r[3].as_int().unwrap_or(0),
                cells: r[4].as_int().unwrap_or(0),
                cell_keys: r[5].as_int().unwrap_or(0),
            })
            .collect())
    }

    /// The suite's runs in version order (see the module's "Version order"), complete or not.
    pub fn runs(&self, suite: &str) -> Result<Vec<RunInfo>, HistoryError> {
        let mut db = self.db.borrow_mut();
        if find_suite(&mut db, suite)?.is_none() {
            return Err(HistoryError::UnknownSuite {
                suite: suite.to_owned(),
            });
        }
        let rows = db.query(
            "SELECT r.id, r.version, r.date_unix_ms, r.commit_sha, r.env_fingerprint, \
             r.environment, r.results_dir, r.gatebench_version, r.complete, r.planned_cells, \
             (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.id), r.added_at_unix_ms, r.gates \
             FROM runs r JOIN suites s ON r.suite_id = s.id WHERE s.name = $1 \
             ORDER BY r.date_unix_ms, r.id",
            &[Value::text(suite)],
            &[
                Kind::Int,
                Kind::Text,
                Kind::Int,
                Kind::Text,
                Kind::Text,
                Kind::Text,
                Kind::Text,
                Kind::Text,
                Kind::Int,
                Kind::Int,
                Kind::Int,
                Kind::Int,
                Kind::Text,
            ],
            "list runs",
        )?;
        Ok(rows
            .into_iter()
            .map(|r| RunInfo {
                id: RunId(r[0].as_int().unwrap_or(0)),
                version: r[1].text_or_empty(),
                date_unix_ms: r[2].as_int().unwrap_or(0),
                commit: r[3].as_text().map(str::to_owned),
                env_fingerprint: r[4].text_or_empty(),
                environment: r[5].text_or_empty(),
                results_dir: r[6].text_or_empty(),
                gatebench_version: r[7].text_or_empty(),
                complete: r[8].as_int() == Some(1),
                planned_cells: r[9].as_int().unwrap_or(0),
                cells: r[10].as_int().unwrap_or(0),
                added_at_unix_ms: r[11].as_int().unwrap_or(0),
                gates: serde_json::from_str(&r[12].text_or_empty()).unwrap_or_default(),
            })
            .collect())
    }

    /// One [`Series`] per cell × metric of the suite, cells by key, metrics in the order
    /// given; each series has one point per version in version order (see the module's
    /// "Version order") holding every repeat's value in repeat order. Only complete runs, and
    /// load cells that ran and whose generator kept up; a version without a value for the cell
    /// and metric has no point. The latency percentiles were computed from each repeat's
    /// stored histogram when it was added ([`cells`]).
    pub fn series(&self, suite: &str, metrics: &[Metric]) -> Result<Vec<Series>, HistoryError> {
        let mut db = self.db.borrow_mut();
        if find_suite(&mut db, suite)?.is_none() {
            return Err(HistoryError::UnknownSuite {
                suite: suite.to_owned(),
            });
        }
        let cols: Vec<&str> = metrics.iter().map(|m| metric_column(*m)).collect();
        let mut sql = String::from("SELECT c.cell_key, r.version");
        for c in &cols {
            sql.push_str(", c.");
            sql.push_str(c);
        }
        sql.push(' ');
        sql.push_str(SUITE_CELLS);
        sql.push_str(" ORDER BY c.cell_key, r.date_unix_ms, r.id, c.repeat_number");
        let mut kinds = vec![Kind::Text, Kind::Text];
        kinds.extend(cols.iter().map(|_| Kind::Real));
        let rows = db.query(&sql, &[Value::text(suite)], &kinds, "read a series")?;
        // cell key -> per metric, the points in version order.
        let mut by_cell: BTreeMap<String, Vec<Vec<Point>>> = BTreeMap::new();
        for row in rows {
            let key = row[0].text_or_empty();
            let version = row[1].text_or_empty();
            let per_metric = by_cell
                .entry(key)
                .or_insert_with(|| vec![Vec::new(); metrics.len()]);
            for (i, points) in per_metric.iter_mut().enumerate() {
                let Some(v) = row[2 + i].as_real() else {
                    continue;
                };
                match points.last_mut() {
                    Some(p) if p.version == version => p.samples.push(v),
                    _ => points.push(Point {
                        version: version.clone(),
                        samples: vec![v],
                    }),
                }
            }
        }
        let mut out = Vec::new();
        for (cell, per_metric) in by_cell {
            for (m, points) in metrics.iter().zip(per_metric) {
                if points.is_empty() {
                    continue;
                }
                out.push(Series {
                    suite: suite.to_owned(),
                    cell: cell.clone(),
                    metric: *m,
                    points,
                });
            }
        }
        Ok(out)
    }

    /// The cell's latency histograms per version, in version order: every repeat's added
    /// together (HdrHistograms add exactly). Only what [`Store::series`] reads (complete runs,
    /// cells that ran, generator kept up) and repeats that have a histogram.
    pub fn histograms(
        &self,
        suite: &str,
        cell: &str,
    ) -> Result<Vec<VersionHistograms>, HistoryError> {
        let location = self.location.to_string();
        let mut db = self.db.borrow_mut();
        if find_suite(&mut db, suite)?.is_none() {
            return Err(HistoryError::UnknownSuite {
                suite: suite.to_owned(),
            });
        }
        let sql = format!(
            "SELECT r.version, c.hist_answered, c.hist_censored {SUITE_CELLS} \
             AND c.cell_key = $2 AND c.hist_answered IS NOT NULL \
             ORDER BY r.date_unix_ms, r.id, c.repeat_number"
        );
        let rows = db.query(
            &sql,
            &[Value::text(suite), Value::text(cell)],
            &[Kind::Text, Kind::Blob, Kind::Blob],
            "read histograms",
        )?;
        let corrupt = |e: String| HistoryError::Corrupt {
            location: location.clone(),
            problem: format!("a stored histogram of cell {cell} does not decode ({e})"),
        };
        let mut out: Vec<VersionHistograms> = Vec::new();
        for row in rows {
            let mut row = row.into_iter();
            let version = row.next().map(|v| v.text_or_empty()).unwrap_or_default();
            let answered = row.next().and_then(Value::into_blob).unwrap_or_default();
            let answered = cells::decode_stored(&answered).map_err(corrupt)?;
            let censored = match row.next().and_then(Value::into_blob) {
                Some(b) => Some(cells::decode_stored(&b).map_err(corrupt)?),
                None => None,
            };
            if out.last().is_none_or(|v| v.version != version) {
                out.push(VersionHistograms {
                    version,
                    repeats: 0,
                    latency: histogram::new_histogram(),
                    answered: histogram::new_histogram(),
                });
            }
            let v = out.last_mut().expect("pushed above");
            v.repeats += 1;
            histogram::add(&mut v.answered, &answered);
            histogram::add(&mut v.latency, &answered);
            if let Some(c) = &censored {
                histogram::add(&mut v.latency, c);
            }
        }
        Ok(out)
    }

    /// Seed 004's summary table of every complete version of the suite, in version order, and
    /// the suite's cells (by key) with where they sit in the matrix: per version and cell the
    /// median over the repeats of each column (error %, throughput, mean, standard deviation,
    /// p99, SUT CPU %, SUT peak memory). Same selection as [`Store::series`].
    pub fn summaries(
        &self,
        suite: &str,
    ) -> Result<(Vec<CellInfo>, Vec<VersionSummary>), HistoryError> {
        let mut db = self.db.borrow_mut();
        if find_suite(&mut db, suite)?.is_none() {
            return Err(HistoryError::UnknownSuite {
                suite: suite.to_owned(),
            });
        }
        let sql = format!(
            "SELECT r.version, c.cell_key, c.scenario, c.title, c.users, c.size_bytes, \
             c.delay_ms, c.protocol, c.error_percent, c.throughput_rps, c.mean_ms, c.stdev_ms, \
             c.p99_ms, c.sut_cpu_mean_percent, c.sut_rss_max_mib {SUITE_CELLS} \
             ORDER BY r.date_unix_ms, r.id, c.cell_key, c.repeat_number"
        );
        let mut kinds = vec![
            Kind::Text,
            Kind::Text,
            Kind::Text,
            Kind::Text,
            Kind::Int,
            Kind::Int,
            Kind::Real,
            Kind::Text,
        ];
        kinds.extend([Kind::Real; 7]);
        let rows = db.query(&sql, &[Value::text(suite)], &kinds, "read the summaries")?;
        let mut cells: BTreeMap<String, CellInfo> = BTreeMap::new();
        // (version, key) -> the repeats' figures, in version order then key order.
        /// Each repeat's seven figures, in the columns' order.
        type Figures = [Option<f64>; 7];
        let mut groups: Vec<(String, String, Vec<Figures>)> = Vec::new();
        for r in rows {
            let version = r[0].text_or_empty();
            let key = r[1].text_or_empty();
            cells.entry(key.clone()).or_insert_with(|| CellInfo {
                key: key.clone(),
                scenario: r[2].text_or_empty(),
                title: r[3].text_or_empty(),
                users: u32::try_from(r[4].as_int().unwrap_or(0)).unwrap_or(0),
                size_bytes: u64::try_from(r[5].as_int().unwrap_or(0)).unwrap_or(0),
                delay_ms: r[6].as_real().unwrap_or(0.0),
                protocol: r[7].text_or_empty(),
            });
            let figures: [Option<f64>; 7] = std::array::from_fn(|i| r[8 + i].as_real());
            match groups.last_mut() {
                Some((v, k, reps)) if *v == version && *k == key => reps.push(figures),
                _ => groups.push((version, key, vec![figures])),
            }
        }
        let median = |reps: &[[Option<f64>; 7]], i: usize| {
            let v: Vec<f64> = reps
                .iter()
                .filter_map(|f| f[i])
                .filter(|x| x.is_finite())
                .collect();
            gatebench_report::stats::median(&v)
        };
        let mut out: Vec<VersionSummary> = Vec::new();
        for (version, key, reps) in groups {
            let c = &cells[&key];
            let row = SummaryRow {
                scenario: c.title.clone(),
                users: c.users,
                size_bytes: c.size_bytes,
                delay_ms: c.delay_ms,
                error_pct: median(&reps, 0).unwrap_or(f64::NAN),
                throughput: median(&reps, 1).unwrap_or(f64::NAN),
                mean_ms: median(&reps, 2).unwrap_or(f64::NAN),
                stddev_ms: median(&reps, 3).unwrap_or(f64::NAN),
                p99_ms: median(&reps, 4).unwrap_or(f64::NAN),
                sut_cpu_pct: median(&reps, 5),
                sut_memory_mib: median(&reps, 6),
            };
            match out.last_mut() {
                Some(v) if v.version == version => v.rows.push((key, row)),
                _ => out.push(VersionSummary {
                    version,
                    rows: vec![(key, row)],
                }),
            }
        }
        Ok((cells.into_values().collect(), out))
    }

    /// Every figure of every repeat of every cell of every complete run (of `suite`, or of
    /// every suite), in tidy form: one row per version × cell × repeat × metric, suites by
    /// name, versions in version order. Figures a cell does not have are left out.
    pub fn export(&self, suite: Option<&str>) -> Result<Vec<ExportRow>, HistoryError> {
        let names: Vec<String> = match suite {
            Some(s) => {
                if find_suite(&mut self.db.borrow_mut(), s)?.is_none() {
                    return Err(HistoryError::UnknownSuite {
                        suite: s.to_owned(),
                    });
                }
                vec![s.to_owned()]
            }
            None => self.suites()?.into_iter().map(|s| s.name).collect(),
        };
        let mut figures: Vec<(&str, String, &str)> = Metric::ALL
            .iter()
            .map(|m| (metric_column(*m), m.name().to_owned(), m.unit()))
            .collect();
        figures.extend(
            EXTRA_FIGURES
                .iter()
                .map(|(c, n, u)| (*c, (*n).to_owned(), *u)),
        );
        let mut sql = String::from(
            "SELECT r.version, r.date_unix_ms, r.commit_sha, c.cell_key, c.scenario, c.users, \
             c.rate, c.size_bytes, c.delay_ms, c.protocol, c.repeat_number",
        );
        for (col, _, _) in &figures {
            sql.push_str(", c.");
            sql.push_str(col);
        }
        sql.push(' ');
        sql.push_str(SUITE_CELLS);
        sql.push_str(" ORDER BY r.date_unix_ms, r.id, c.cell_key, c.repeat_number");
        let mut kinds = vec![
            Kind::Text,
            Kind::Int,
            Kind::Text,
            Kind::Text,
            Kind::Text,
            Kind::Int,
            Kind::Real,
            Kind::Int,
            Kind::Real,
            Kind::Text,
            Kind::Int,
        ];
        kinds.extend(figures.iter().map(|_| Kind::Real));
        let mut out = Vec::new();
        let mut db = self.db.borrow_mut();
        for name in names {
            let rows = db.query(&sql, &[Value::text(&name)], &kinds, "export")?;
            for r in rows {
                let date = rfc3339(r[1].as_int().unwrap_or(0));
                for (i, (_, metric, unit)) in figures.iter().enumerate() {
                    let Some(value) = r[11 + i].as_real() else {
                        continue;
                    };
                    out.push(ExportRow {
                        suite: name.clone(),
                        version: r[0].text_or_empty(),
                        date: date.clone(),
                        commit: r[2].as_text().map(str::to_owned),
                        cell: r[3].text_or_empty(),
                        scenario: r[4].text_or_empty(),
                        users: r[5].as_int().unwrap_or(0),
                        rate: r[6].as_real(),
                        size_bytes: r[7].as_int().unwrap_or(0),
                        delay_ms: r[8].as_real().unwrap_or(0.0),
                        protocol: r[9].text_or_empty(),
                        repeat: r[10].as_int().unwrap_or(0),
                        metric: metric.clone(),
                        value,
                        unit: (*unit).to_owned(),
                    });
                }
            }
        }
        Ok(out)
    }
}

/// A Unix-milliseconds instant as RFC 3339 UTC, milliseconds shown when not zero.
pub fn rfc3339(unix_ms: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(unix_ms.max(0) as u64);
    if unix_ms % 1000 == 0 {
        humantime::format_rfc3339_seconds(t).to_string()
    } else {
        humantime::format_rfc3339_millis(t).to_string()
    }
}

/// The suite called `name`: its id and fingerprint.
fn find_suite(db: &mut Db, name: &str) -> Result<Option<(i64, String)>, HistoryError> {
    let rows = db.query(
        "SELECT id, fingerprint FROM suites WHERE name = $1",
        &[Value::text(name)],
        &[Kind::Int, Kind::Text],
        "read suites",
    )?;
    Ok(rows
        .first()
        .map(|r| (r[0].as_int().unwrap_or(0), r[1].text_or_empty())))
}

/// The run of `version` of suite `suite_id`.
fn find_run(db: &mut Db, suite_id: i64, version: &str) -> Result<Option<i64>, HistoryError> {
    let rows = db.query(
        "SELECT id FROM runs WHERE suite_id = $1 AND version = $2",
        &[Value::int(suite_id), Value::text(version)],
        &[Kind::Int],
        "read runs",
    )?;
    Ok(rows.first().and_then(|r| r[0].as_int()))
}

fn mismatch(suite: &SuiteIdentity, stored: String) -> HistoryError {
    HistoryError::SuiteMismatch {
        suite: suite.name.clone(),
        stored,
        found: suite.fingerprint.clone(),
    }
}

/// Another writer stored the same version between our check and our insert: the same refusal.
fn version_race(e: HistoryError, run: &RunInput) -> HistoryError {
    if db::is_unique_violation(&e) {
        HistoryError::VersionExists {
            suite: run.suite.name.clone(),
            version: run.version.clone(),
        }
    } else {
        e
    }
}

/// Inside a transaction: the suite (made when new, else checked), the version (refused when
/// stored, or its run deleted when `replace`), and the run row. Returns the run's id, whether a
/// run was replaced and whether the suite is new.
fn create_run(
    db: &mut Db,
    run: &RunInput,
    replace: bool,
    complete: bool,
) -> Result<(RunId, bool, bool), HistoryError> {
    let s = &run.suite;
    let made = db.execute(
        "INSERT INTO suites (name, fingerprint, definition, created_at_unix_ms) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING",
        &[
            Value::text(&s.name),
            Value::text(&s.fingerprint),
            Value::text(&s.definition),
            Value::int(schema::now_unix_ms()),
        ],
        "add a suite",
    )?;
    let (suite_id, stored) = find_suite(db, &s.name)?.ok_or_else(|| HistoryError::Corrupt {
        location: db.location(),
        problem: format!("suite \"{}\" vanished while a run was added", s.name),
    })?;
    if stored != s.fingerprint {
        return Err(mismatch(s, stored));
    }
    let mut replaced = false;
    if let Some(old) = find_run(db, suite_id, &run.version)? {
        if !replace {
            return Err(HistoryError::VersionExists {
                suite: s.name.clone(),
                version: run.version.clone(),
            });
        }
        db.execute(
            "DELETE FROM cells WHERE run_id = $1",
            &[Value::int(old)],
            "replace a run",
        )?;
        db.execute(
            "DELETE FROM runs WHERE id = $1",
            &[Value::int(old)],
            "replace a run",
        )?;
        replaced = true;
    }
    let rows = db.query(
        "INSERT INTO runs (suite_id, version, commit_sha, date_unix_ms, started_at_unix_ms, \
         added_at_unix_ms, complete, planned_cells, env_fingerprint, environment, \
         gatebench_version, results_dir, gates) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id",
        &[
            Value::int(suite_id),
            Value::text(&run.version),
            Value::Text(run.commit.clone()),
            Value::int(run.date_unix_ms),
            Value::int(run.started_at_unix_ms),
            Value::int(schema::now_unix_ms()),
            Value::int(i64::from(complete)),
            Value::int(run.planned_cells as i64),
            Value::text(&run.env_fingerprint),
            Value::text(&run.environment),
            Value::text(&run.gatebench_version),
            Value::text(run.results_dir.display().to_string()),
            Value::text(serde_json::to_string(&run.gates).expect("strings serialize")),
        ],
        &[Kind::Int],
        "add a run",
    )?;
    let id = rows
        .first()
        .and_then(|r| r[0].as_int())
        .ok_or_else(|| HistoryError::Corrupt {
            location: db.location(),
            problem: "inserting a run returned no id".into(),
        })?;
    Ok((RunId(id), replaced, made == 1))
}

/// `INSERT INTO cells (run_id, …) VALUES ($1, …)`.
fn insert_cell_sql() -> String {
    let cols = cells::CELL_COLUMNS.join(", ");
    let params: Vec<String> = (1..=cells::CELL_COLUMNS.len() + 1)
        .map(|i| format!("${i}"))
        .collect();
    format!(
        "INSERT INTO cells (run_id, {cols}) VALUES ({})",
        params.join(", ")
    )
}

/// Writes one cell's row.
fn write_cell(db: &mut Db, sql: &str, run: RunId, r: &CellRecord) -> Result<(), HistoryError> {
    let mut values = vec![Value::int(run.0)];
    values.extend(
        cells::cell_values(r).map_err(|problem| HistoryError::Invalid {
            what: format!("cell {}", r.cell.id),
            problem,
        })?,
    );
    db.execute(sql, &values, "add a cell")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations() {
        assert_eq!(
            Location::parse("/tmp/h.sqlite").unwrap(),
            Location::Sqlite("/tmp/h.sqlite".into())
        );
        let pg = Location::parse("postgres://me:secret@db:5432/hist").unwrap();
        assert_eq!(pg.to_string(), "postgres://me:***@db:5432/hist");
        assert!(matches!(pg, Location::Postgres(_)));
        // A unix socket directory, as a query parameter or a percent-encoded host.
        for url in [
            "postgres://me@/hist?host=/var/run/postgresql",
            "postgresql://me@%2Fvar%2Frun%2Fpostgresql:5432/hist",
        ] {
            assert!(matches!(Location::parse(url), Ok(Location::Postgres(_))));
            let cfg: postgres::Config = url.parse().unwrap();
            assert_eq!(
                cfg.get_hosts(),
                [postgres::config::Host::Unix("/var/run/postgresql".into())]
            );
        }
        assert!(Location::parse("mysql://x").is_err());
        assert!(Location::parse(" ").is_err());
        assert_eq!(rfc3339(1_795_622_400_000), "2026-11-25T16:00:00Z");
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(check_name("--version", " 1.2 ").unwrap(), "1.2");
        assert!(check_name("--version", "").is_err());
        assert!(check_name("--version", "a\nb").is_err());
    }
}
