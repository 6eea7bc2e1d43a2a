//! The runner's side of the results directory: the machine and build a run ran on
//! (`environment.json`, with the kernel and cgroup settings a benchmark depends on) and the
//! default directory name. The format itself — file names, row
//! types, atomic writes, reading back — is `gatebench-results`'s, re-exported here.

use std::path::{Path, PathBuf};
use std::process::Command;

use gatebench_model::{Environment, SystemSettings, SCHEMA_VERSION};
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
        system: system_settings(&|p: &Path| std::fs::read_to_string(p).ok()),
    }
}

/// The kernel, cgroup and limit settings seed 002 standardises, read through `read` (the real
/// filesystem, or a fake one in tests). Values are trimmed as the kernel prints them.
pub fn system_settings(read: &dyn Fn(&Path) -> Option<String>) -> SystemSettings {
    let get = |p: &str| {
        read(Path::new(p))
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    let (cgroup_cpu_max, cgroup_memory_max) = get("/proc/self/cgroup")
        .map(|c| cgroup_limits(&c, read))
        .unwrap_or_default();
    SystemSettings {
        cpu_governor: get("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        numa_balancing: get("/proc/sys/kernel/numa_balancing"),
        somaxconn: get("/proc/sys/net/core/somaxconn"),
        tcp_congestion_control: get("/proc/sys/net/ipv4/tcp_congestion_control"),
        swappiness: get("/proc/sys/vm/swappiness"),
        cgroup_cpu_max,
        cgroup_memory_max,
        open_files_limit: Some(open_files_limit()),
    }
}

/// The CPU and memory limits of this process's cgroup, from `/proc/self/cgroup`'s text: cgroup
/// v2 (`0::PATH`, `cpu.max` and `memory.max` under `/sys/fs/cgroup/PATH`) or v1 (the `cpu` and
/// `memory` hierarchies' quota/period and `memory.limit_in_bytes`). The CPU limit is given in
/// v2's form either way (`max 100000`, `200000 100000`); v1's "no limit" (a number near 2⁶³)
/// reads `max`. A process in a container sees its own cgroup as the root, so the hierarchy's
/// root is tried after the path.
pub fn cgroup_limits(
    proc_self_cgroup: &str,
    read: &dyn Fn(&Path) -> Option<String>,
) -> (Option<String>, Option<String>) {
    let root = Path::new("/sys/fs/cgroup");
    let mut v1: Vec<(Vec<&str>, &str)> = Vec::new();
    let mut v2: Option<&str> = None;
    for line in proc_self_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if controllers.is_empty() {
            v2 = Some(path);
        } else {
            v1.push((controllers.split(',').collect(), path));
        }
    }
    // The first of `dir/PATH/file`, `dir/file` that reads.
    let first = |dir: &Path, path: &str, file: &str| {
        let own = dir.join(path.trim_start_matches('/')).join(file);
        read(&own)
            .or_else(|| read(&dir.join(file)))
            .map(|s| s.trim().to_owned())
    };
    let v1_dir = |controller: &str| {
        v1.iter()
            .find(|(c, _)| c.contains(&controller))
            .map(|(c, path)| (root.join(c.join(",")), *path))
    };
    let unlimited = |v: String| match v.parse::<u64>() {
        Ok(n) if n >= 1 << 62 => "max".to_owned(),
        _ => v,
    };
    let cpu = v1_dir("cpu")
        .and_then(|(dir, path)| {
            let quota = first(&dir, path, "cpu.cfs_quota_us")?;
            let period = first(&dir, path, "cpu.cfs_period_us")?;
            Some(if quota.starts_with('-') {
                format!("max {period}")
            } else {
                format!("{quota} {period}")
            })
        })
        .or_else(|| v2.and_then(|p| first(root, p, "cpu.max")));
    let memory = v1_dir("memory")
        .and_then(|(dir, path)| first(&dir, path, "memory.limit_in_bytes"))
        .or_else(|| v2.and_then(|p| first(root, p, "memory.max")))
        .map(unlimited);
    (cpu, memory)
}

/// This process's open-files limit as `soft/hard` (`unlimited` for RLIM_INFINITY): what the
/// processes it starts inherit.
pub fn open_files_limit() -> String {
    let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let show = |v: Option<u64>| v.map_or_else(|| "unlimited".to_owned(), |n| n.to_string());
    format!("{}/{}", show(lim.current), show(lim.maximum))
}

/// Raises this process's open-files limit before anything is started, so that the systems under
/// test and back-ends inherit it: a balancer at 12000 users holds 12000 client and as many
/// upstream connections. The soft limit goes to the hard one; with the privilege to (root), the
/// hard limit first goes up to `fs.nr_open` (at most 2²⁰). Failures are not errors: the load
/// generator checks its own need before each cell and says what is missing.
pub fn raise_open_files_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    const WANTED: u64 = 1 << 20;
    let lim = getrlimit(Resource::Nofile);
    let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(WANTED)
        .min(WANTED);
    if lim.maximum.is_some_and(|h| h < nr_open) {
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(nr_open),
                maximum: Some(nr_open),
            },
        );
    }
    let lim = getrlimit(Resource::Nofile);
    if lim.current != lim.maximum {
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: lim.maximum,
                maximum: lim.maximum,
            },
        );
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

    /// A fake filesystem of `(path, contents)`.
    fn fs(files: &'static [(&'static str, &'static str)]) -> impl Fn(&Path) -> Option<String> {
        move |p: &Path| {
            files
                .iter()
                .find(|(f, _)| Path::new(f) == p)
                .map(|(_, c)| (*c).to_owned())
        }
    }

    #[test]
    fn cgroup_v1_limits_read_in_v2_form_and_no_limit_reads_max() {
        let read = fs(&[
            ("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n"),
            ("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n"),
            (
                "/sys/fs/cgroup/memory/job/7/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
        ]);
        let text = "9:cpu,cpuacct:/job/7\n4:memory:/job/7\n0::/\n";
        assert_eq!(
            cgroup_limits(text, &read),
            (Some("max 100000".to_owned()), Some("max".to_owned()))
        );
        let read = fs(&[
            ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "150000"),
            ("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000"),
            ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "2147483648"),
        ]);
        assert_eq!(
            cgroup_limits("3:cpu:/\n2:memory:/\n", &read),
            (
                Some("150000 100000".to_owned()),
                Some("2147483648".to_owned())
            )
        );
    }

    #[test]
    fn cgroup_v2_limits_are_read_from_the_process_cgroup() {
        let read = fs(&[
            ("/sys/fs/cgroup/bench.slice/cpu.max", "200000 100000\n"),
            ("/sys/fs/cgroup/bench.slice/memory.max", "max\n"),
        ]);
        assert_eq!(
            cgroup_limits("0::/bench.slice\n", &read),
            (Some("200000 100000".to_owned()), Some("max".to_owned()))
        );
        assert_eq!(cgroup_limits("0::/elsewhere\n", &read), (None, None));
    }

    #[test]
    fn system_settings_are_the_kernels_values_trimmed() {
        let read = fs(&[
            (
                "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
                "performance\n",
            ),
            ("/proc/sys/kernel/numa_balancing", "0\n"),
            ("/proc/sys/net/core/somaxconn", "4096\n"),
            ("/proc/sys/net/ipv4/tcp_congestion_control", "bbr\n"),
            ("/proc/sys/vm/swappiness", "60\n"),
            ("/proc/self/cgroup", "0::/b\n"),
            ("/sys/fs/cgroup/b/cpu.max", "max 100000\n"),
            ("/sys/fs/cgroup/b/memory.max", "1073741824\n"),
        ]);
        let s = system_settings(&read);
        assert_eq!(s.cpu_governor.as_deref(), Some("performance"));
        assert_eq!(s.numa_balancing.as_deref(), Some("0"));
        assert_eq!(s.somaxconn.as_deref(), Some("4096"));
        assert_eq!(s.tcp_congestion_control.as_deref(), Some("bbr"));
        assert_eq!(s.swappiness.as_deref(), Some("60"));
        assert_eq!(s.cgroup_cpu_max.as_deref(), Some("max 100000"));
        assert_eq!(s.cgroup_memory_max.as_deref(), Some("1073741824"));
        // Not from the fake filesystem: this process's own limit, `soft/hard`.
        let limit = s.open_files_limit.unwrap();
        assert_eq!(limit.split('/').count(), 2, "{limit}");
        let empty = system_settings(&|_: &Path| None);
        assert_eq!(empty.cpu_governor, None);
        assert_eq!(empty.cgroup_cpu_max, None);
    }

    #[test]
    fn the_open_files_limit_is_raised_to_the_hard_limit() {
        raise_open_files_limit();
        let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        assert_eq!(lim.current, lim.maximum);
        let (soft, hard) = open_files_limit()
            .split_once('/')
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
            .unwrap();
        assert_eq!(soft, hard);
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
