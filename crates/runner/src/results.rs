//! The runner's side of the results directory: the machine and build a run ran on
//! (`environment.json`) and the default directory name. The format itself — file names, row
//! types, atomic writes, reading back — is `gatebench-results`'s, re-exported here.

use std::path::PathBuf;
use std::process::Command;

use gatebench_model::{Environment, SCHEMA_VERSION};
pub use gatebench_results::{read, write_atomic, ResultsDir, RunResults};

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
    // SAFETY: sysconf has no preconditions; neither rustix nor std reads the count of online
    // CPUs (std's available_parallelism is the affinity mask, kept as `cores_available`).
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let available = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let (kernel, arch) = uname();
    Environment {
        schema_version: SCHEMA_VERSION,
        cpu_model,
        cores: if online > 0 { online as u32 } else { available },
        cores_available: available,
        kernel,
        arch,
        gatebench_version: env!("CARGO_PKG_VERSION").to_owned(),
        git_revision: git_revision(),
    }
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
pub fn default_dir() -> PathBuf {
    // SAFETY: time and localtime_r write into values we own (no safe API turns the time zone
    // database into local time without another crate).
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
    fn default_dir_is_a_timestamp_under_results() {
        let d = default_dir();
        let name = d.file_name().unwrap().to_str().unwrap();
        assert!(d.starts_with("results"));
        assert_eq!(name.len(), 15, "{name}");
        assert_eq!(&name[8..9], "-");
    }
}
