//! What the topic modules share, written once: the real binary and running it for its output,
//! fresh temporary directories, an echo backend as a child process on a free loopback port,
//! and the lock that keeps timing-sensitive tests from sharing the machine with load.
//!
//! Not here: anything one topic alone uses (it stays in that topic's module).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use rustix::process::{Pid, Signal};

/// The gatebench binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_gatebench");

/// `gatebench serve echo --port 0 --threads 1 EXTRA…` as a child; stopped by SIGTERM (by PID)
/// when dropped, as a user's Ctrl-C would, and it must drain and exit 0.
pub struct EchoChild {
    /// The child process.
    pub child: Child,
    /// Where it listens, as it printed it.
    pub url: String,
}

impl EchoChild {
    /// Starts it and waits for the address it prints.
    pub fn start(extra: &[&str]) -> EchoChild {
        EchoChild::serve("echo", extra)
    }

    /// Starts `gatebench serve SERVICE` (an echo, a proxy, …) the same way.
    pub fn serve(service: &str, extra: &[&str]) -> EchoChild {
        let mut child = Command::new(BIN)
            .args(["serve", service, "--port", "0", "--threads", "1"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn gatebench serve");
        let stdout = child.stdout.take().unwrap();
        let mut url = String::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            if let Some(i) = line.find("listening on ") {
                url = line[i + "listening on ".len()..]
                    .split_whitespace()
                    .next()
                    .unwrap()
                    // An intermediary goes on: `…/, forwarding to …`.
                    .trim_end_matches(',')
                    .to_owned();
                break;
            }
        }
        assert!(
            !url.is_empty(),
            "gatebench serve {service} printed its address"
        );
        EchoChild { child, url }
    }
}

impl Drop for EchoChild {
    fn drop(&mut self) {
        kill(&self.child, Signal::TERM);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "echo exited with {status} on SIGTERM");
    }
}

/// Sends `sig` to a child of this test, by its PID.
pub fn kill(child: &Child, sig: Signal) {
    let pid = Pid::from_raw(child.id() as i32).expect("a child's pid is positive");
    rustix::process::kill_process(pid, sig).expect("signalling our own child");
}

/// Runs gatebench with `args` to completion.
pub fn gatebench(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run gatebench")
}

/// Runs gatebench with `args` to completion in the directory `cwd` (the test process's own
/// current directory is shared by every test, so it is never changed).
pub fn gatebench_in(args: &[&str], cwd: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run gatebench")
}

/// A run's stderr as text.
pub fn stderr(o: &Output) -> String {
    text(&o.stderr)
}

/// Bytes as text, invalid UTF-8 replaced.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A fresh, empty directory under the system's temporary directory, its path containing
/// `name`. Every call gets its own (the tests of all topics share one process, and so one
/// process ID): two tests asking for the same name do not share or delete each other's.
pub fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "gatebench-cli-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The tests share the machine (one process, run in parallel); a test whose assertions depend on timing (a
/// capacity search, an intermediary's cost) runs alone, and a test that runs an unthrottled
/// load holds the machine shared, so it cannot starve a timing test's generator.
static MACHINE: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// The machine to this test alone, until the guard drops.
pub fn alone() -> std::sync::RwLockWriteGuard<'static, ()> {
    MACHINE.write().unwrap_or_else(|e| e.into_inner())
}

/// The machine shared with the other load tests, until the guard drops.
pub fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    MACHINE.read().unwrap_or_else(|e| e.into_inner())
}

/// Writes `suite` as `DIR/suite.toml` and runs `gatebench run` on it with `extra`.
pub fn run_suite(dir: &Path, suite: &str, extra: &[&str]) -> Output {
    let file = dir.join("suite.toml");
    std::fs::write(&file, suite).unwrap();
    let mut args = vec!["run", file.to_str().unwrap()];
    args.extend(extra);
    gatebench(&args)
}

/// A JSON file of a results directory, parsed; panics naming the file.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
