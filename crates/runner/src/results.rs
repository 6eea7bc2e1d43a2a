//! The results directory: one per run, written cell by cell, every file atomically (written to
//! a temporary name, then renamed), so Ctrl-C or a crash loses at most the cell in progress and
//! never leaves a half-written file. The layout is documented in `docs/results-format.md`:
//!
//! ```text
//! run.json  environment.json  suite.toml  summary.{md,csv,json}  warmup.csv
//! cells/<id>/record.json  cells/<id>/latency.hlog  cells/<id>/samples.csv  cells/<id>/timeline.csv
//! cells/<id>/*.log
//! ```
//!
//! Reading a directory back ([`read`]) refuses one that is not a results directory or is of
//! another schema version, and says how many planned cells have no record.

use std::path::{Path, PathBuf};
use std::process::Command;

use gatebench_model::{CellRecord, Environment, RunManifest, SCHEMA_VERSION};

use crate::error::RunnerError;

/// A results directory being written or read.
#[derive(Clone, Debug)]
pub struct ResultsDir {
    root: PathBuf,
}

impl ResultsDir {
    /// Creates `root` (and `cells/`). Refuses a directory that exists and is not empty, so
    /// two runs never mix.
    pub fn create(root: &Path) -> Result<ResultsDir, RunnerError> {
        if root.exists() {
            let nonempty = std::fs::read_dir(root)
                .map_err(|e| RunnerError::io("read", root, e))?
                .next()
                .is_some();
            if nonempty {
                return Err(RunnerError::Results {
                    path: root.to_path_buf(),
                    message: "exists and is not empty; choose another --out directory".into(),
                });
            }
        }
        let cells = root.join("cells");
        std::fs::create_dir_all(&cells).map_err(|e| RunnerError::io("create", &cells, e))?;
        Ok(ResultsDir {
            root: root.to_path_buf(),
        })
    }

    /// Opens an existing directory for rewriting its summaries (no checks; see [`read`]).
    pub fn open(root: &Path) -> ResultsDir {
        ResultsDir {
            root: root.to_path_buf(),
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The directory of cell `id` (created when missing).
    pub fn cell_dir(&self, id: &str) -> Result<PathBuf, RunnerError> {
        let d = self.root.join("cells").join(id);
        std::fs::create_dir_all(&d).map_err(|e| RunnerError::io("create", &d, e))?;
        Ok(d)
    }

    /// Writes `rel` (relative to the directory) atomically.
    pub fn write(&self, rel: &str, data: &[u8]) -> Result<(), RunnerError> {
        write_atomic(&self.root.join(rel), data)
    }

    /// Writes a value as pretty JSON, atomically.
    pub fn write_json<T: serde::Serialize>(&self, rel: &str, v: &T) -> Result<(), RunnerError> {
        let mut s = serde_json::to_string_pretty(v).expect("records always serialize");
        s.push('\n');
        self.write(rel, s.as_bytes())
    }
}

/// Writes `path` through a temporary file in the same directory and a rename.
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<(), RunnerError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    std::fs::write(&tmp, data).map_err(|e| RunnerError::io("write", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| RunnerError::io("write", path, e))
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
}

/// Reads a results directory, refusing one that is not a results directory or is of another
/// schema version.
pub fn read(root: &Path) -> Result<RunResults, RunnerError> {
    let bad = |message: String| RunnerError::Results {
        path: root.to_path_buf(),
        message,
    };
    if !root.is_dir() {
        return Err(bad("no such directory".into()));
    }
    let manifest_path = root.join("run.json");
    let text = std::fs::read_to_string(&manifest_path).map_err(|_| {
        bad("not a gatebench results directory (no run.json; `gatebench run` writes one)".into())
    })?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| bad(format!("run.json is not valid JSON ({e})")))?;
    if value.get("kind").and_then(|k| k.as_str()) != Some(RunManifest::KIND) {
        return Err(bad(
            "not a gatebench results directory (run.json is of another kind)".into(),
        ));
    }
    check_version(&value, "run.json").map_err(|e| bad(e.to_string()))?;
    let manifest: RunManifest =
        serde_json::from_value(value).map_err(|e| bad(format!("run.json: {e}")))?;
    let mut records = Vec::new();
    let mut missing = Vec::new();
    for id in &manifest.planned_cells {
        let p = root.join("cells").join(id).join("record.json");
        let Ok(text) = std::fs::read_to_string(&p) else {
            missing.push(id.clone());
            continue;
        };
        let rel = format!("cells/{id}/record.json");
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| bad(format!("{rel} is not valid JSON ({e})")))?;
        check_version(&value, &rel).map_err(|e| bad(e.to_string()))?;
        let r: CellRecord =
            serde_json::from_value(value).map_err(|e| bad(format!("{rel}: {e}")))?;
        records.push(r);
    }
    Ok(RunResults {
        manifest,
        records,
        missing,
    })
}

/// Checks that a results file has this build's schema version.
fn check_version(v: &serde_json::Value, file: &str) -> Result<(), RunnerError> {
    match v.get("schema_version").and_then(|s| s.as_u64()) {
        Some(n) if n == u64::from(SCHEMA_VERSION) => Ok(()),
        Some(found) => Err(RunnerError::SchemaVersion {
            file: file.to_owned(),
            found,
        }),
        None => Err(RunnerError::NoSchemaVersion {
            file: file.to_owned(),
        }),
    }
}

/// The machine and build this process runs on.
pub fn environment() -> Environment {
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name") || l.starts_with("Model"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned());
    // The online CPUs, as glibc's sysconf(_SC_NPROCESSORS_ONLN) counts them; std's
    // available_parallelism is the affinity mask, kept as `cores_available`.
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| count_cpu_list(&s));
    let available = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let (kernel, arch) = uname();
    Environment {
        schema_version: SCHEMA_VERSION,
        cpu_model,
        cores: online.filter(|&n| n > 0).unwrap_or(available),
        cores_available: available,
        kernel,
        arch,
        gatebench_version: env!("CARGO_PKG_VERSION").to_owned(),
        git_revision: git_revision(),
    }
}

/// The number of CPUs in a kernel CPU list (`0-3,6,8-9` → 7), as in
/// `/sys/devices/system/cpu/online`; `None` when it is not one.
fn count_cpu_list(list: &str) -> Option<u32> {
    let mut n = 0u32;
    for part in list.trim().split(',') {
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (lo.parse::<u32>().ok()?, hi.parse::<u32>().ok()?),
            None => {
                let one = part.parse::<u32>().ok()?;
                (one, one)
            }
        };
        n = n.checked_add(hi.checked_sub(lo)?.checked_add(1)?)?;
    }
    Some(n)
}

/// The kernel (`Linux 6.1.0-…`) and the machine (`x86_64`).
fn uname() -> (String, String) {
    let u = rustix::system::uname();
    let s = |f: &std::ffi::CStr| f.to_string_lossy().into_owned();
    (
        format!("{} {}", s(u.sysname()), s(u.release())),
        s(u.machine()),
    )
}

/// The revision of the source tree this binary was built from, asked of git in that tree
/// (known at build time); `unknown` when the tree or git is not there (an installed binary).
fn git_revision() -> String {
    let dir = env!("CARGO_MANIFEST_DIR");
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    match git(&["rev-parse", "--short", "HEAD"]) {
        Some(rev) if !rev.is_empty() => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{rev}-dirty")
            } else {
                rev
            }
        }
        _ => "unknown".to_owned(),
    }
}

/// `results/<YYYYmmdd-HHMMSS>` in local time.
#[allow(unsafe_code)]
pub fn default_dir() -> PathBuf {
    // SAFETY: time and localtime_r write into values we own, and all-zero bytes are a valid
    // `tm` (integers and a null zone name). No safe API of std or rustix turns the time zone
    // database into local time.
    let stamp = unsafe {
        let t = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&t, &mut tm);
        format!(
            "{:04}{:02}{:02}-{:02}{:02}{:02}",
            tm.tm_year + 1900,
            tm.tm_mon + 1,
            tm.tm_mday,
            tm.tm_hour,
            tm.tm_min,
            tm.tm_sec
        )
    };
    PathBuf::from("results").join(stamp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_is_filled_in() {
        let e = environment();
        assert!(e.cores >= 1 && e.cores_available >= 1);
        assert!(e.kernel.starts_with("Linux"), "{}", e.kernel);
        assert!(!e.git_revision.is_empty());
    }

    #[test]
    fn cpu_lists_are_counted_as_the_kernel_writes_them() {
        assert_eq!(count_cpu_list("0\n"), Some(1));
        assert_eq!(count_cpu_list("0-3\n"), Some(4));
        assert_eq!(count_cpu_list("0-3,6,8-9"), Some(7));
        assert_eq!(count_cpu_list(""), None);
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list("a-b"), None);
        // This machine's count agrees with what the kernel says is online.
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
        assert_eq!(
            count_cpu_list(&online),
            Some(environment().cores),
            "{online}"
        );
    }

    #[test]
    fn default_dir_is_a_timestamp_under_results() {
        let d = default_dir();
        let name = d.file_name().unwrap().to_str().unwrap();
        assert!(d.starts_with("results"));
        assert_eq!(name.len(), 15, "{name}");
        assert_eq!(&name[8..9], "-");
    }
}
