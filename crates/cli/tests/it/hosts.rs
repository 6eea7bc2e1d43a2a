//! Suites across hosts, on the testbed of `scripts/testbed.sh` (network namespaces joined by a
//! bridge, each with its own sshd): a run with the SUT and the back-end on their own hosts, a
//! failed cell and an interrupted run that leave no process behind on any host (listed there
//! over ssh), and each kind of bad host input as one line naming the host, exit 2, and no
//! results directory.
//!
//! Needs root and network namespaces. It uses a testbed that is already up, or brings one up
//! and takes it down at the end. Where that is impossible it says why and skips, except under
//! `CI=true` as root, where it fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::support::{self, temp_dir, text};

const STATE: &str = "/run/gatebench-testbed";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The testbed, up; `Some(true)` when this test brought it up (and takes it down).
fn testbed() -> Option<bool> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let skip = |why: &str| {
        eprintln!("SKIPPED: hosts tests: {why}");
        None
    };
    if !rustix::process::geteuid().is_root() {
        return skip("not root (the testbed needs network namespaces and sshd)");
    }
    let script = repo().join("scripts/testbed.sh");
    let status = Command::new(&script).arg("status").output().unwrap();
    if status.status.success() {
        return Some(false);
    }
    let up = Command::new(&script).arg("up").output().unwrap();
    if !up.status.success() {
        let why = format!("scripts/testbed.sh up failed: {}", text(&up.stderr).trim());
        assert!(!ci, "under CI=true as root the testbed must come up: {why}");
        return skip(&why);
    }
    Some(true)
}

fn ssh(host: &str, cmd: &str) -> Output {
    Command::new("ssh")
        .args([
            "-F",
            &format!("{STATE}/ssh_config"),
            "-o",
            "BatchMode=yes",
            host,
            cmd,
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// gatebench's processes on `host` (anything run from the testbed's copies of gatebench, and
/// the test's marker commands), listed on that host.
fn remote_leftovers(host: &str, marker: &str) -> Vec<String> {
    let out = ssh(host, "ps -eo pid,args");
    assert!(out.status.success(), "ps on {host}: {}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .filter(|l| {
            (l.contains(&format!("{STATE}/")) && l.contains("/gatebench ")) || l.contains(marker)
        })
        .filter(|l| !l.contains("ps -eo"))
        .map(str::to_owned)
        .collect()
}

fn assert_nothing_left(marker: &str, when: &str) {
    // Stopping is synchronous, but give the kernel a moment to reap.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<String> = ["sut", "backend", "gen1", "gen2"]
            .iter()
            .flat_map(|h| remote_leftovers(h, marker))
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{when}: processes left on the hosts: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn gatebench() -> Command {
    let mut c = Command::new(binary());
    c.stdin(Stdio::null());
    c
}

/// The binary under test without its debug information, when `strip` is there to take it off:
/// the same code, a seventh of the size (about 29 MB of a 197 MB debug build). A suite across
/// hosts hashes "this gatebench build" on each run and on each host, and copies it to every
/// host once; with the debug build that was most of this test's minutes.
fn binary() -> &'static Path {
    static STRIPPED: OnceLock<PathBuf> = OnceLock::new();
    STRIPPED.get_or_init(|| {
        let full = PathBuf::from(env!("CARGO_BIN_EXE_gatebench"));
        // In cargo's temporary directory for integration tests (under target/), replaced by
        // each run: a fresh temporary directory per run left 30 MB behind every time.
        let stripped = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("gatebench-stripped");
        match Command::new("strip")
            .arg("--strip-debug")
            .arg("-o")
            .arg(&stripped)
            .arg(&full)
            .status()
        {
            Ok(st) if st.success() => stripped,
            other => {
                eprintln!("hosts tests: no stripped copy ({other:?}); the debug build it is");
                full
            }
        }
    })
}

fn suite(dir: &Path, name: &str, hosts: &str, scenarios: &str, duration: &str) -> PathBuf {
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(
        &p,
        format!(
            "[suite]\nwarmup = \"300ms\"\nduration = \"{duration}\"\nready_timeout = \"2s\"\n\
             [hosts]\n{hosts}\n[matrix]\nusers = [4]\nsizes = [100]\n{scenarios}"
        ),
    )
    .unwrap();
    p
}

const PASSTHROUGH: &str = r#"
[[scenario]]
name = "passthrough"
backend = { serve = "echo --port {port}" }
sut = { serve = "proxy --port {port} --upstream {upstream}" }
"#;

/// An sshd of the test's own in the SUT's namespace on `port`, its sessions' commands run by
/// `force` (a `ForceCommand`): a host that lacks tools or claims another system. Stopped by
/// its PID.
struct ExtraSshd {
    pid: u32,
}

impl ExtraSshd {
    fn start(dir: &Path, port: u16, force: &str) -> ExtraSshd {
        let cfg = dir.join(format!("sshd-{port}.conf"));
        let pidfile = dir.join(format!("sshd-{port}.pid"));
        std::fs::write(
            &cfg,
            format!(
                "ListenAddress 10.77.0.20:{port}\nHostKey {STATE}/sut/ssh_host_ed25519_key\n\
                 PidFile {}\nAuthorizedKeysFile {STATE}/authorized_keys\n\
                 PermitRootLogin prohibit-password\nPasswordAuthentication no\nUsePAM no\n\
                 StrictModes no\nLogLevel ERROR\nForceCommand {force}\n",
                pidfile.display()
            ),
        )
        .unwrap();
        let st = Command::new("ip")
            .args(["netns", "exec", "gbtb-sut", "/usr/sbin/sshd", "-f"])
            .arg(&cfg)
            .status()
            .unwrap();
        assert!(st.success(), "the test's sshd on port {port} did not start");
        // sshd creates its pid file before it writes the PID: wait for a whole number.
        let deadline = Instant::now() + Duration::from_secs(5);
        let pid = loop {
            let read = std::fs::read_to_string(&pidfile).unwrap_or_default();
            if let Ok(pid) = read.trim().parse() {
                break pid;
            }
            assert!(
                Instant::now() < deadline,
                "no pid in sshd {port}'s pid file"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        ExtraSshd { pid }
    }
}

impl Drop for ExtraSshd {
    fn drop(&mut self) {
        // A signal to the sshd this test started, by its recorded PID.
        if let Some(pid) = rustix::process::Pid::from_raw(self.pid as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
    }
}

/// Runs a suite that must be refused before any cell: exit 2, one line on stderr naming
/// `host` and containing `want`, no results directory.
fn refused(dir: &Path, name: &str, hosts: &str, scenarios: &str, host: &str, want: &str) {
    let s = suite(dir, name, hosts, scenarios, "1s");
    let out_dir = dir.join(format!("out-{name}"));
    let started = Instant::now();
    let out = gatebench()
        .arg("run")
        .arg(&s)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{name}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{name}: one line, got {err:?}");
    assert!(
        lines[0].starts_with(&format!("gatebench: {host}")) && lines[0].contains(want),
        "{name}: {}",
        lines[0]
    );
    assert!(!out_dir.exists(), "{name}: a results directory was left");
    assert!(!text(&out.stdout).contains("[1/"), "{name}: a cell started");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{name}: took {:?}",
        started.elapsed()
    );
}

#[test]
fn suites_run_across_the_testbed_hosts_and_leave_nothing_behind() {
    let Some(brought_up) = testbed() else {
        return;
    };
    let dir = temp_dir("run");
    let hosts = format!(
        "sut = \"ssh://sut\"\nbackend = \"ssh://backend\"\nssh_config = \"{STATE}/ssh_config\""
    );

    // 1. A cell with the SUT and the back-end each on its host; the scenario's setup runs on
    //    the SUT's host (its eth0 has the SUT's address).
    let with_setup = PASSTHROUGH.replace(
        "name = \"passthrough\"",
        "name = \"passthrough\"\nsetup = \"ip -4 -o addr show dev eth0\"",
    );
    let s = suite(&dir, "ok", &hosts, &with_setup, "2s");
    // Steps 1, 3 and 4 run load: the machine shared, never while a timing test has it alone.
    let load = support::shared();
    let out_dir = dir.join("out-ok");
    //    Before it, the host holds no copy of this build, and two older ones: one another run
    //    holds a lease on, one nobody uses. The copy removes only the second.
    let cache = "\"${XDG_CACHE_HOME:-$HOME/.cache}/gatebench\"";
    let prepared = ssh(
        "sut",
        &format!(
            "c={cache}; for o in \"$c\"/*; do case \"${{o##*/}}\" in cells) ;; *) rm -rf \"$o\" ;; esac; done; \
             mkdir -p \"$c/0ld0leased\" \"$c/0ld0free\" && touch \"$c/0ld0leased/gatebench\" \
             \"$c/0ld0free/gatebench\" \"$c/0ld0leased/.in-use.elsewhere-1-0\" && echo ready"
        ),
    );
    assert_eq!(
        text(&prepared.stdout).trim(),
        "ready",
        "{}",
        text(&prepared.stderr)
    );
    let out = gatebench()
        .arg("run")
        .arg(&s)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        stdout.contains("Hosts: ssh://sut: address 10.77.0.20, clock offset"),
        "{stdout}"
    );
    let cell = out_dir.join("cells/passthrough_u4_s100_d0_r1");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cell.join("record.json")).unwrap()).unwrap();
    assert_eq!(record["status"], "ok", "{record}");
    assert!(
        record.to_string().contains("\"http://10.77.0.20:"),
        "the target is the SUT host's address: {record}"
    );
    // The SUT's figures were sampled on its host and cut to the measurement.
    let m = &record["sut_measurement"];
    assert!(m["samples"].as_u64().unwrap_or(0) >= 1, "{record}");
    assert!(m["cpu_mean_percent"].as_f64().unwrap() > 0.0, "{record}");
    assert!(m["rss_max_mib"].as_f64().unwrap() > 1.0, "{record}");
    // The proxy's log came back from its host, with the back-end's address.
    let sut_log = std::fs::read_to_string(cell.join("sut.log")).unwrap();
    assert!(
        sut_log.contains("forwarding to http://10.77.0.30:"),
        "{sut_log}"
    );
    let setup_log = std::fs::read_to_string(out_dir.join("setup-passthrough.log")).unwrap();
    assert!(setup_log.contains("inet 10.77.0.20/24"), "{setup_log}");
    let hosts_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("hosts.json")).unwrap())
            .unwrap();
    assert_eq!(hosts_json[0]["address"], "10.77.0.20", "{hosts_json}");
    // Namespaces share one clock: the offset is within its uncertainty plus a millisecond.
    let off = hosts_json[0]["clock_offset_s"].as_f64().unwrap().abs();
    assert!(
        off < 1e-3 + hosts_json[0]["clock_uncertainty_s"].as_f64().unwrap(),
        "{hosts_json}"
    );
    // The binary copy: present now, so a second preflight says so.
    assert!(
        stdout.contains("Hosts: ssh://sut: has this gatebench build")
            || stdout.contains("Hosts: ssh://sut: copied gatebench"),
        "{stdout}"
    );
    drop(load);
    assert_nothing_left("sleep 31.5", "after a run");
    let builds = ssh("sut", &format!("ls {cache}"));
    let builds = text(&builds.stdout);
    assert!(
        builds.contains("0ld0leased") && !builds.contains("0ld0free"),
        "{builds}"
    );
    let leases = ssh("sut", &format!("ls -a {cache}/*/ | grep -c in-use"));
    assert_eq!(
        text(&leases.stdout).trim(),
        "1",
        "only the other run's lease is left"
    );
    let _ = ssh("sut", &format!("rm -rf {cache}/0ld0leased"));
    // The cell's directories on the hosts went with the cell.
    for h in ["sut", "backend"] {
        let left = ssh(
            h,
            "ls \"${XDG_CACHE_HOME:-$HOME/.cache}/gatebench/cells\" 2>/dev/null; true",
        );
        assert_eq!(
            text(&left.stdout).trim(),
            "",
            "cell directories left on {h}"
        );
    }

    // 2. A failed cell (the SUT never becomes ready) leaves nothing on any host.
    let failing = r#"
[[scenario]]
name = "never-ready"
backend = { serve = "echo --port {port}" }
sut = { command = "exec sleep 31.5" }
"#;
    let s = suite(&dir, "fail", &hosts, failing, "1s");
    let out = gatebench()
        .arg("run")
        .arg(&s)
        .arg("--out")
        .arg(dir.join("out-fail"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("not ready after 2s"),
        "{}",
        text(&out.stdout)
    );
    assert_nothing_left("sleep 31.5", "after a failed cell");

    // 3. Ctrl-C during the load leaves nothing on any host.
    let load = support::shared();
    let s = suite(&dir, "interrupt", &hosts, PASSTHROUGH, "30s");
    let mut child: Child = gatebench()
        .arg("run")
        .arg(&s)
        .arg("--out")
        .arg(dir.join("out-int"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let serving = remote_leftovers("sut", "\u{0}")
            .iter()
            .any(|l| l.contains(" serve proxy"));
        if serving {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the SUT never started on its host"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_millis(1500));
    // SIGINT to the gatebench this test started, by its PID (what Ctrl-C sends); then, as an
    // impatient user does, a second one while it stops the processes on the hosts: they are
    // stopped all the same.
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("a child's pid");
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("signalling our child");
    std::thread::sleep(Duration::from_millis(150));
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
    let status = child.wait().unwrap();
    assert!(
        status.code() == Some(130) || status.code().is_none(),
        "{status:?}"
    );
    assert_nothing_left("sleep 31.5", "after Ctrl-C twice");

    // 4. A cell's load split across two generator hosts, merged; then a dead shard (one user
    //    cannot be split in two: shard 1/2 is refused) fails its cell with the shard's own
    //    message and the other shard is stopped on its host.
    //    The suite's credential header reaches the shards in a file, not on their command
    //    lines, is redacted in the record, and its file is gone from the hosts afterwards.
    let gens = format!("{hosts}\ngenerators = [\"ssh://gen1\", \"ssh://gen2\"]");
    let with_token =
        format!("[load]\nheaders = [\"Authorization: Bearer s3cret-t0ken\"]\n{PASSTHROUGH}");
    let s = suite(&dir, "shards", &gens, &with_token, "2s");
    let out_dir = dir.join("out-shards");
    let out = gatebench()
        .arg("run")
        .arg(&s)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("cells/passthrough_u4_s100_d0_r1/record.json"))
            .unwrap(),
    )
    .unwrap();
    let shards = record["load"]["merged"]["shards"].as_array().unwrap();
    assert_eq!(shards.len(), 2, "{record}");
    assert!(!record.to_string().contains("s3cret"), "{record}");
    assert_eq!(
        record["load"]["config"]["headers"][0], "Authorization: <redacted>",
        "{record}"
    );
    for g in ["gen1", "gen2"] {
        let left = ssh(
            g,
            "grep -rl s3cret-t0ken \"${XDG_CACHE_HOME:-$HOME/.cache}/gatebench\" 2>/dev/null; true",
        );
        assert_eq!(text(&left.stdout).trim(), "", "a header file left on {g}");
    }
    assert_eq!(record["load"]["config"]["connections"], 4, "{record}");
    assert!(
        record["load"]["measurement"]["outcomes"]["ok"]
            .as_u64()
            .unwrap_or(0)
            > 0,
        "{record}"
    );
    assert!(
        record["sut_measurement"]["samples"].as_u64().unwrap_or(0) >= 1,
        "{record}"
    );
    // Its per-second view, from the shards' seconds merged: the seconds carry every response
    // of the merged record (warm-up and measurement), and the interval log has their lines.
    let cell_dir = out_dir.join("cells/passthrough_u4_s100_d0_r1");
    let timeline = std::fs::read_to_string(cell_dir.join("timeline.csv")).unwrap();
    let responses: u64 = timeline
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap().parse::<u64>().unwrap())
        .sum();
    let ok = |phase: &str| {
        record["load"][phase]["outcomes"]["ok"]
            .as_u64()
            .unwrap_or(0)
    };
    assert_eq!(responses, ok("warmup") + ok("measurement"), "{timeline}");
    assert!(timeline.contains(",measurement,"), "{timeline}");
    let hlog = std::fs::read_to_string(cell_dir.join("latency.hlog")).unwrap();
    let intervals = hlog
        .lines()
        .filter(|l| l.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .count();
    assert!(intervals >= 2, "{hlog}");
    // The shards' seconds were merged live, and that merge equals the exact one of their
    // records; a second was merged within a few seconds of its end (the sessions' pipes and the
    // 50 ms poll: about a second on a quiet machine).
    let live = &record["load"]["merged"]["live"];
    assert_eq!(live["equal_to_final"], true, "{live}");
    assert_eq!(
        live["seconds"].as_u64(),
        record["load"]["timeline"]
            .as_array()
            .map(|t| t.len() as u64),
        "{live}"
    );
    let lag = live["max_lag_s"].as_f64().unwrap();
    assert!((0.0..5.0).contains(&lag), "{live}");
    assert_nothing_left("sleep 31.5", "after a sharded cell");

    // An abort threshold, judged on the merged seconds, stops both shards early; both records
    // are still merged and the run exits 99.
    let aborting = format!("{PASSTHROUGH}thresholds = [\"p99<0.001ms abort\"]\n");
    let s = suite(&dir, "shards-abort", &gens, &aborting, "6s");
    let abort_dir = dir.join("out-shards-abort");
    let out = gatebench()
        .arg("run")
        .arg(&s)
        .arg("--out")
        .arg(&abort_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(99), "{}", text(&out.stderr));
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(abort_dir.join("cells/passthrough_u4_s100_d0_r1/record.json"))
            .unwrap(),
    )
    .unwrap();
    let t = &record["load"]["thresholds"][0];
    assert_eq!(
        (&t["passed"], &t["aborted"]),
        (&false.into(), &true.into()),
        "{t}"
    );
    assert_eq!(
        record["load"]["merged"]["shards"].as_array().unwrap().len(),
        2
    );
    let measured = record["load"]["measurement"]["duration_s"]
        .as_f64()
        .unwrap();
    assert!(measured < 5.0, "the shards ran {measured} s of 6");
    assert_nothing_left("sleep 31.5", "after an aborted sharded cell");
    let one_user = suite(&dir, "dead-shard", &gens, PASSTHROUGH, "2s");
    let text_suite = std::fs::read_to_string(&one_user)
        .unwrap()
        .replace("users = [4]", "users = [1]");
    std::fs::write(&one_user, text_suite).unwrap();
    let out = gatebench()
        .arg("run")
        .arg(&one_user)
        .arg("--out")
        .arg(dir.join("out-dead"))
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("shard 1/2 on ssh://gen2 exited with status 2"),
        "{stdout}"
    );
    drop(load);
    assert_nothing_left("sleep 31.5", "after a dead shard");

    // 5. Bad hosts: one line naming the host, exit 2, before any cell, no results directory.
    refused(
        &dir,
        "unreachable",
        &format!("sut = \"ssh://root@10.77.0.99\"\nbackend = \"ssh://root@10.77.0.99\"\nssh_config = \"{STATE}/ssh_config\""),
        PASSTHROUGH,
        "ssh://root@10.77.0.99 (sut, backend): cannot connect:",
        "10.77.0.99",
    );
    let key = dir.join("stranger");
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&key)
        .status()
        .unwrap();
    assert!(st.success());
    let cfg = dir.join("ssh_config");
    std::fs::write(
        &cfg,
        format!(
            "Host stranger\n  HostName 10.77.0.20\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  \
             UserKnownHostsFile {STATE}/known_hosts\n\n\
             Host bare\n  HostName 10.77.0.20\n  Port 2222\n  User root\n  IdentityFile {STATE}/id_ed25519\n  \
             IdentitiesOnly yes\n  UserKnownHostsFile {STATE}/known_hosts\n  StrictHostKeyChecking no\n\n\
             Host arm\n  HostName 10.77.0.20\n  Port 2223\n  User root\n  IdentityFile {STATE}/id_ed25519\n  \
             IdentitiesOnly yes\n  UserKnownHostsFile {STATE}/known_hosts\n  StrictHostKeyChecking no\n\n\
             Include {STATE}/ssh_config\n",
            key.display()
        ),
    )
    .unwrap();
    let with_cfg = |sut: &str| {
        format!(
            "sut = \"{sut}\"\nbackend = \"ssh://backend\"\nssh_config = \"{}\"",
            cfg.display()
        )
    };
    refused(
        &dir,
        "refused-key",
        &with_cfg("ssh://stranger"),
        PASSTHROUGH,
        "ssh://stranger (sut): cannot connect:",
        "Permission denied",
    );
    let _bare = ExtraSshd::start(
        &dir,
        2222,
        "env PATH=/nonexistent /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"",
    );
    refused(
        &dir,
        "no-tools",
        &with_cfg("ssh://bare"),
        PASSTHROUGH,
        "ssh://bare (sut): the host lacks",
        "sha256sum",
    );
    let fakebin = dir.join("fakebin");
    std::fs::create_dir_all(&fakebin).unwrap();
    let uname = fakebin.join("uname");
    std::fs::write(&uname, "#!/bin/sh\necho Linux aarch64\n").unwrap();
    let st = Command::new("chmod")
        .arg("755")
        .arg(&uname)
        .status()
        .unwrap();
    assert!(st.success());
    let _arm = ExtraSshd::start(
        &dir,
        2223,
        &format!(
            "env PATH={}:/usr/bin:/bin /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"",
            fakebin.display()
        ),
    );
    refused(
        &dir,
        "other-system",
        &with_cfg("ssh://arm"),
        PASSTHROUGH,
        "ssh://arm (sut): gatebench",
        "cannot run on this host (Linux aarch64)",
    );
    // A port in use on the SUT's host: something listens there on the suite's fixed port.
    let taken = 18080;
    let mut squatter = Command::new("ip")
        .args([
            "netns",
            "exec",
            "gbtb-sut",
            env!("CARGO_BIN_EXE_gatebench"),
            "serve",
            "echo",
            "--host",
            "0.0.0.0",
            "--port",
        ])
        .arg(taken.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("10.77.0.20", taken)).is_err() {
        assert!(Instant::now() < deadline, "the squatter did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    let fixed = r#"
[[scenario]]
name = "fixed"
backend = { serve = "echo --port {port}" }
sut = { serve = "proxy --port {port} --upstream {upstream}", port = 18080 }
"#;
    refused(
        &dir,
        "port-in-use",
        &hosts,
        fixed,
        "ssh://sut: port 18080 is in use on this host",
        "in use",
    );
    let _ = squatter.kill();
    let _ = squatter.wait();

    let _ = std::fs::remove_dir_all(&dir);
    if brought_up {
        let down = Command::new(repo().join("scripts/testbed.sh"))
            .arg("down")
            .output()
            .unwrap();
        assert!(down.status.success(), "{}", text(&down.stderr));
    }
}
