//! A generator held back by a cgroup CPU quota is marked invalid. Its CPU figure cannot show it
//! (a quota holds CPU time ÷ wall time at the quota), so the self-check reads the cgroup's own
//! throttled time. The test puts `gatebench load` into a new cgroup allowed 10 % of a core; it
//! needs root and a cgroup CPU controller (v1 `cpu`, or v2 with `cpu` enabled for children) and
//! says SKIPPED otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{stderr, EchoChild, BIN};

/// A cgroup with a CPU quota, removed when dropped.
struct QuotaGroup(PathBuf);

impl QuotaGroup {
    /// 10 ms of CPU per 100 ms period, in whichever cgroup version the machine has.
    fn create() -> Result<Self, String> {
        let name = format!("gatebench-quota-test-{}", std::process::id());
        let v1 = Path::new("/sys/fs/cgroup/cpu");
        let v2 = Path::new("/sys/fs/cgroup");
        let v2_cpu = std::fs::read_to_string(v2.join("cgroup.subtree_control"))
            .is_ok_and(|c| c.split_whitespace().any(|x| x == "cpu"));
        let (dir, files): (PathBuf, Vec<(&str, &str)>) = if v1.join("cpu.cfs_quota_us").exists() {
            (
                v1.join(&name),
                vec![
                    ("cpu.cfs_period_us", "100000"),
                    ("cpu.cfs_quota_us", "10000"),
                ],
            )
        } else if v2_cpu {
            (v2.join(&name), vec![("cpu.max", "10000 100000")])
        } else {
            return Err("no cgroup CPU controller to set a quota with".into());
        };
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let group = QuotaGroup(dir);
        for (f, v) in files {
            std::fs::write(group.0.join(f), v)
                .map_err(|e| format!("cannot write {f} in {}: {e}", group.0.display()))?;
        }
        Ok(group)
    }
}

impl Drop for QuotaGroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn a_generator_held_back_by_a_cpu_quota_is_marked_invalid() {
    let _shared = crate::support::shared();
    let group = match QuotaGroup::create() {
        Ok(g) => g,
        Err(why) => {
            eprintln!("\n*** SKIPPED: {why} (needs root and a cgroup CPU controller). ***\n");
            return;
        }
    };
    let echo = EchoChild::start(&[]);
    // The shell moves itself into the group, then becomes gatebench: the whole load runs there.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "echo $$ > '{}/cgroup.procs' && exec \"$0\" \"$@\"",
            group.0.display()
        ))
        .arg(BIN)
        .args(["load", &echo.url, "-c", "4", "-d", "2s", "--threads", "1"])
        .args(["--json", "-"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a record");
    let check = &record["self_check"];
    assert_eq!(record["valid"], false, "{check}");
    let throttled = check["cpu_throttled_s"].as_f64().expect("throttled time");
    // Allowed 10 % of a core, busy sending and reading: held back for a good part of 2 s.
    assert!(throttled > 0.2, "{throttled}");
    let warnings = check["warnings"].to_string();
    assert!(warnings.contains("cgroup CPU quota"), "{warnings}");
    assert!(
        stderr(&out).contains("cgroup CPU quota"),
        "{}",
        stderr(&out)
    );
}
