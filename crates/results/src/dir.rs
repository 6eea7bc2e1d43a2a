//! A results directory on disk: created empty, written file by file and atomically (to a
//! temporary name, then renamed), so Ctrl-C or a crash loses at most the cell in progress and
//! never leaves a half-written file; read back ([`read`]) refusing a directory that is not a
//! results directory or is of another schema version, and saying which planned cells have no
//! record.

use std::path::{Path, PathBuf};

use gatebench_model::{CellRecord, Environment, RunManifest, SCHEMA_VERSION};
use serde::Serialize;

use crate::error::ResultsError;
use crate::paths;

/// A results directory being written or read.
#[derive(Clone, Debug)]
pub struct ResultsDir {
    root: PathBuf,
}

impl ResultsDir {
    /// Creates `root` (and `cells/`). Refuses a directory that exists and is not empty, so
    /// two runs never mix.
    pub fn create(root: &Path) -> Result<ResultsDir, ResultsError> {
        if root.exists() {
            let nonempty = std::fs::read_dir(root)
                .map_err(|e| ResultsError::io("read", root, e))?
                .next()
                .is_some();
            if nonempty {
                return Err(ResultsError::Results {
                    path: root.to_path_buf(),
                    message: "exists and is not empty; choose another --out directory".into(),
                });
            }
        }
        let cells = root.join(paths::CELLS_DIR);
        std::fs::create_dir_all(&cells).map_err(|e| ResultsError::io("create", &cells, e))?;
        Ok(ResultsDir {
            root: absolute(root),
        })
    }

    /// Opens an existing directory for rewriting its summaries (no checks; see [`read`]).
    pub fn open(root: &Path) -> ResultsDir {
        ResultsDir {
            root: absolute(root),
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The absolute path of `rel` (a name from [`paths`]).
    pub fn join(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// The directory of cell `id` (created when missing).
    pub fn cell_dir(&self, id: &str) -> Result<PathBuf, ResultsError> {
        let d = self.root.join(paths::cell_dir(id));
        std::fs::create_dir_all(&d).map_err(|e| ResultsError::io("create", &d, e))?;
        Ok(d)
    }

    /// Creates the subdirectory `rel` (such as [`paths::PLOTS_DIR`]) when missing.
    pub fn create_dir(&self, rel: &str) -> Result<PathBuf, ResultsError> {
        let d = self.root.join(rel);
        std::fs::create_dir_all(&d).map_err(|e| ResultsError::io("create", &d, e))?;
        Ok(d)
    }

    /// Writes `rel` (relative to the directory) atomically.
    pub fn write(&self, rel: &str, data: &[u8]) -> Result<(), ResultsError> {
        write_atomic(&self.root.join(rel), data)
    }

    /// Writes a value as pretty JSON with a final newline, atomically: how every JSON file of
    /// the directory is written (`run.json`, `environment.json`, `record.json`).
    pub fn write_json<T: Serialize>(&self, rel: &str, v: &T) -> Result<(), ResultsError> {
        let mut s = serde_json::to_string_pretty(v).expect("records always serialize");
        s.push('\n');
        self.write(rel, s.as_bytes())
    }
}

/// `path` made absolute against the current directory. Every path handed out by a
/// [`ResultsDir`] is absolute: the processes of a cell run in their scenario's `workdir`, where a
/// relative `{cell_dir}` would name another place (or nothing).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Writes `path` through a temporary file in the same directory and a rename, and makes it
/// durable before it counts as written: the file's data is synced before the rename, the
/// directory's entry after it, so a crash or a power cut leaves the old file or the new one,
/// never an empty or partial one. The temporary name is unique per process and per call, so
/// two writers of the same file (two threads, two processes) never write into each other's.
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<(), ResultsError> {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(data)?;
            f.sync_all()
        });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(ResultsError::io("write", &tmp, e));
    }
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(ResultsError::io("write", path, e));
    }
    sync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// Syncs a directory's entries (a rename or a new file in it) to disk.
fn sync_dir(dir: &Path) -> Result<(), ResultsError> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| ResultsError::io("sync", dir, e))
}

/// A cell's side files as they were written (or are about to be): its per-second resource
/// samples (`samples.csv`), its per-second load figures (`timeline.csv`) and its interval log
/// (`latency.hlog`). Any may be missing.
#[derive(Clone, Copy, Debug, Default)]
pub struct CellFiles<'a> {
    /// `samples.csv`.
    pub samples_csv: Option<&'a str>,
    /// `timeline.csv`.
    pub timeline_csv: Option<&'a str>,
    /// `latency.hlog`.
    pub hlog: Option<&'a [u8]>,
}

/// A results directory read back.
#[derive(Debug)]
pub struct RunResults {
    /// `run.json`.
    pub manifest: RunManifest,
    /// The cells that have a record, in run order.
    pub records: Vec<CellRecord>,
    /// Planned cells without a record (the run was interrupted or is still going).
    pub missing: Vec<String>,
    /// Planned cells whose record is there but does not read (truncated, edited, of another
    /// schema version): the cell's id and what is wrong, one line. The other cells are read.
    pub damaged: Vec<(String, String)>,
}

impl RunResults {
    /// One line per damaged record, for a warning.
    pub fn damaged_lines(&self) -> Vec<String> {
        self.damaged
            .iter()
            .map(|(id, why)| format!("cell {id}: {why}"))
            .collect()
    }
}

/// Reads a results directory (`run.json` and every planned cell's `record.json`), refusing
/// one that is not a results directory or is of another schema version. A cell whose record
/// does not read is listed in [`RunResults::damaged`], and the rest are read: one damaged
/// file never hides every other cell of a run.
pub fn read(root: &Path) -> Result<RunResults, ResultsError> {
    let bad = |message: String| ResultsError::Results {
        path: root.to_path_buf(),
        message,
    };
    if !root.is_dir() {
        return Err(bad("no such directory".into()));
    }
    let text = std::fs::read_to_string(root.join(paths::RUN_JSON)).map_err(|_| {
        bad("not a gatebench results directory (no run.json; `gatebench run` writes one)".into())
    })?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| bad(format!("run.json is not valid JSON ({e})")))?;
    if value.get("kind").and_then(|k| k.as_str()) != Some(RunManifest::KIND) {
        return Err(bad(
            "not a gatebench results directory (run.json is of another kind)".into(),
        ));
    }
    check_version(&value, paths::RUN_JSON).map_err(|e| bad(e.to_string()))?;
    let manifest: RunManifest =
        serde_json::from_value(value).map_err(|e| bad(format!("run.json: {e}")))?;
    let mut records = Vec::new();
    let mut missing = Vec::new();
    let mut damaged = Vec::new();
    for id in &manifest.planned_cells {
        let rel = paths::cell_file(id, paths::RECORD_JSON);
        let text = match std::fs::read(root.join(&rel)) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                missing.push(id.clone());
                continue;
            }
            Err(e) => {
                damaged.push((id.clone(), format!("{rel} does not read ({e})")));
                continue;
            }
        };
        match read_record(&text, &rel) {
            Ok(r) => records.push(r),
            Err(why) => damaged.push((id.clone(), why)),
        }
    }
    Ok(RunResults {
        manifest,
        records,
        missing,
        damaged,
    })
}

/// One cell's record from its bytes; what is wrong with it, one line, when it does not read.
fn read_record(bytes: &[u8], rel: &str) -> Result<CellRecord, String> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("{rel} is not valid JSON ({e})"))?;
    check_version(&value, rel).map_err(|e| e.to_string())?;
    serde_json::from_value(value).map_err(|e| format!("{rel}: {e}"))
}

/// Reads `environment.json`: `Ok(None)` when the directory has none (it is optional for a
/// reader), an error when it is there and does not read.
pub fn read_environment(root: &Path) -> Result<Option<Environment>, ResultsError> {
    let path = root.join(paths::ENVIRONMENT_JSON);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ResultsError::io("read", path, e)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| ResultsError::Results {
            path: root.to_path_buf(),
            message: format!("{}: {e}", paths::ENVIRONMENT_JSON),
        })
}

/// Checks that a results file has this build's schema version.
fn check_version(v: &serde_json::Value, file: &str) -> Result<(), ResultsError> {
    match v.get("schema_version").and_then(|s| s.as_u64()) {
        Some(n) if n == u64::from(SCHEMA_VERSION) => Ok(()),
        Some(found) => Err(ResultsError::SchemaVersion {
            file: file.to_owned(),
            found,
        }),
        None => Err(ResultsError::NoSchemaVersion {
            file: file.to_owned(),
        }),
    }
}
