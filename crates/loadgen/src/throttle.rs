//! The generator's own CPU quota: how long the kernel kept it from running because its cgroup
//! (or one above it) had used its CPU quota (`cpu.max` in cgroup v2, `cpu.cfs_quota_us` in v1).
//!
//! The self-check's CPU figure compares the workers' CPU time with the wall time, and a quota
//! holds that ratio at the quota: a generator allowed 30 % of a core and using all of it reads
//! 30 % busy and looks idle. The cgroup's own count says otherwise: `cpu.stat` has the time its
//! threads waited for the next quota period (`throttled_usec` in v2, `throttled_time` in
//! nanoseconds in v1). The run reads it at its start and end, for its own cgroup and every one
//! above it (a quota on a parent stops the children too), and the largest increase is the time
//! the generator was held back.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Throttling counters of one `cpu.stat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Stat {
    /// Quota periods in which the group was throttled.
    periods: u64,
    /// Total time throttled.
    throttled: Duration,
}

/// How long the generator was held back by a CPU quota over a stretch of time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Throttled {
    /// Time throttled (the largest of the cgroup chain's increases).
    pub time: Duration,
    /// Quota periods in which it was throttled (of the same cgroup).
    pub periods: u64,
}

/// The counters at the start of a run, for each cgroup of the chain that has them.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    start: Vec<(PathBuf, Stat)>,
}

impl Snapshot {
    /// Reads the calling process's cgroup chain now. Empty where there are no cgroups, no CPU
    /// controller, or nothing readable.
    pub(crate) fn take() -> Self {
        let Ok(own) = std::fs::read_to_string("/proc/self/cgroup") else {
            return Snapshot::default();
        };
        let start = stat_files(&own, Path::new("/sys/fs/cgroup"))
            .into_iter()
            .filter_map(|f| read(&f).map(|s| (f, s)))
            .collect();
        Snapshot { start }
    }

    /// The throttling since [`Snapshot::take`]; `None` when nothing was readable.
    pub(crate) fn since(&self) -> Option<Throttled> {
        self.start
            .iter()
            .filter_map(|(f, before)| {
                let now = read(f)?;
                Some(Throttled {
                    time: now.throttled.saturating_sub(before.throttled),
                    periods: now.periods.saturating_sub(before.periods),
                })
            })
            .max_by_key(|t| t.time)
    }
}

fn read(file: &Path) -> Option<Stat> {
    parse(&std::fs::read_to_string(file).ok()?)
}

/// The `cpu.stat` files of the process's cgroup and of every one above it, from the text of
/// `/proc/self/cgroup`, under `root` (normally `/sys/fs/cgroup`): cgroup v2 (the `0::` line;
/// the unified tree at `root`, or at `root/unified` on a hybrid system) and v1 (the line whose
/// controllers include `cpu`, its tree at `root/<controllers>` or `root/cpu`).
fn stat_files(proc_cgroup: &str, root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let trees: Vec<PathBuf> = if controllers.is_empty() {
            vec![root.to_path_buf(), root.join("unified")]
        } else if controllers.split(',').any(|c| c == "cpu") {
            vec![root.join(controllers), root.join("cpu")]
        } else {
            continue;
        };
        for tree in trees {
            let mut dir = tree.join(path.trim_start_matches('/'));
            loop {
                let f = dir.join("cpu.stat");
                if f.is_file() && !out.contains(&f) {
                    out.push(f);
                }
                if dir == tree || !dir.pop() {
                    break;
                }
            }
        }
    }
    out
}

/// Parses `cpu.stat`: v2's `nr_throttled` and `throttled_usec`, or v1's `nr_throttled` and
/// `throttled_time` (nanoseconds). `None` without a throttled time (a v2 group without the CPU
/// controller has only usage lines).
fn parse(text: &str) -> Option<Stat> {
    let mut periods = None;
    let mut throttled = None;
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(key), Some(value)) = (it.next(), it.next()) else {
            continue;
        };
        let Ok(v) = value.parse::<u64>() else {
            continue;
        };
        match key {
            "nr_throttled" => periods = Some(v),
            "throttled_usec" => throttled = Some(Duration::from_micros(v)),
            "throttled_time" => throttled = Some(Duration::from_nanos(v)),
            _ => {}
        }
    }
    Some(Stat {
        periods: periods.unwrap_or(0),
        throttled: throttled?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_cgroup_versions_parse() {
        let v2 = "usage_usec 8812000\nuser_usec 6000000\nsystem_usec 2812000\n\
                  nr_periods 120\nnr_throttled 37\nthrottled_usec 2450000\n\
                  nr_bursts 0\nburst_usec 0\n";
        assert_eq!(
            parse(v2),
            Some(Stat {
                periods: 37,
                throttled: Duration::from_millis(2450)
            })
        );
        let v1 = "nr_periods 50\nnr_throttled 12\nthrottled_time 1500000000\n";
        assert_eq!(
            parse(v1),
            Some(Stat {
                periods: 12,
                throttled: Duration::from_millis(1500)
            })
        );
        // A v2 group without the CPU controller: usage only, nothing to say.
        assert_eq!(parse("usage_usec 10\nuser_usec 5\nsystem_usec 5\n"), None);
    }

    #[test]
    fn the_chain_runs_from_the_own_cgroup_to_the_root_in_both_versions() {
        let root = std::env::temp_dir().join(format!("gatebench-throttle-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let touch = |p: &Path| {
            std::fs::create_dir_all(p).unwrap();
            std::fs::write(p.join("cpu.stat"), "nr_throttled 0\nthrottled_time 0\n").unwrap();
        };
        touch(&root.join("cpu,cpuacct/bench/gen1"));
        touch(&root.join("cpu,cpuacct/bench"));
        touch(&root.join("cpu,cpuacct"));
        touch(&root.join("unified/svc"));
        let own = "12:memory:/x\n4:cpu,cpuacct:/bench/gen1\n0::/svc\n";
        let files = stat_files(own, &root);
        assert_eq!(
            files,
            [
                root.join("cpu,cpuacct/bench/gen1/cpu.stat"),
                root.join("cpu,cpuacct/bench/cpu.stat"),
                root.join("cpu,cpuacct/cpu.stat"),
                root.join("unified/svc/cpu.stat"),
            ]
        );
        // The largest increase along the chain is the time held back.
        let snap = Snapshot {
            start: files
                .iter()
                .map(|f| (f.clone(), read(f).unwrap()))
                .collect(),
        };
        std::fs::write(&files[1], "nr_throttled 9\nthrottled_time 900000000\n").unwrap();
        std::fs::write(&files[0], "nr_throttled 2\nthrottled_time 5000000\n").unwrap();
        assert_eq!(
            snap.since(),
            Some(Throttled {
                time: Duration::from_millis(900),
                periods: 9
            })
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
