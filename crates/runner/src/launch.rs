//! Starting and stopping the processes of a cell.
//!
//! [`Launcher`] is the seam between the cell lifecycle and the operating system: the real one,
//! [`SystemLauncher`], starts each process in its own process group (so a shell command's
//! children are found and stopped with it), optionally pinned to CPUs; tests use a fake that
//! records calls. [`Guard`] owns the running processes and stops them when dropped — after a
//! failed probe, a panic, or Ctrl-C — so no cell leaves a process behind.
//!
//! Stopping is by process id only (never by name): SIGTERM to the group, up to
//! [`STOP_GRACE`] for the leader to exit, then SIGKILL to the group, then reaping.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{
    kill_process_group, set_parent_process_death_signal, waitid, Pid, Signal, WaitId, WaitIdOptions,
};
use rustix::thread::sched_setaffinity;

use crate::error::RunnerError;
use crate::hosts::SshHost;

/// How long a process may take to exit after SIGTERM before it is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// A process to start, fully resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessSpec {
    /// `backend-1`, …, or `sut`.
    pub name: String,
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Working directory.
    pub workdir: Option<PathBuf>,
    /// Where its stdout and stderr go (appended); `None` discards them.
    pub log: Option<PathBuf>,
    /// CPUs to pin it to; `None` leaves its affinity alone.
    pub cpus: Option<Vec<usize>>,
    /// The remote host it runs on, and its directory there; `None` = this machine.
    pub remote: Option<RemoteAt>,
}

/// Where on a remote host a process runs.
#[derive(Clone, Debug)]
pub struct RemoteAt {
    /// The host, ready (gatebench copied there).
    pub host: std::sync::Arc<SshHost>,
    /// The working directory there (the cell's directory on that host).
    pub dir: String,
}

impl PartialEq for RemoteAt {
    fn eq(&self, other: &Self) -> bool {
        self.host.url == other.host.url && self.dir == other.dir
    }
}

impl Eq for RemoteAt {}

impl ProcessSpec {
    /// The command line as a list, for records.
    pub fn command_line(&self) -> Vec<String> {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .collect()
    }
}

/// Starts processes.
pub trait Launcher: Send {
    /// Starts `spec`. The error's message and causes are for a person (`cannot start nginx:
    /// No such file or directory`, see [`RunnerError::chain`]).
    fn launch(&mut self, spec: &ProcessSpec) -> Result<Box<dyn Running>, RunnerError>;

    /// Runs a scenario's setup command (`sh -c`) in `workdir` to completion, its output
    /// appended to `log`. The error says how it failed and quotes the log's last line.
    fn setup(&mut self, command: &str, workdir: &Path, log: &Path) -> Result<(), RunnerError>;
}

/// A started process.
pub trait Running: Send {
    /// Its process id.
    fn pid(&self) -> u32;
    /// `Some(how)` when it has exited by itself (it is not reaped, so its group can still be
    /// cleaned up by [`Running::stop`]).
    fn exited(&mut self) -> Option<String>;
    /// Stops it and everything in its process group; says how it ended.
    fn stop(&mut self) -> String;
    /// Kills it and everything in its process group at once (SIGKILL, no grace), then reaps
    /// it; says how it ended. By default as [`Running::stop`].
    fn kill(&mut self) -> String {
        self.stop()
    }
}

/// The real launcher: `std::process::Command`, own process group, optional CPU pinning.
#[derive(Debug, Default)]
pub struct SystemLauncher;

impl Launcher for SystemLauncher {
    #[allow(unsafe_code)] // `pre_exec`, see the SAFETY comment below
    fn launch(&mut self, spec: &ProcessSpec) -> Result<Box<dyn Running>, RunnerError> {
        if let Some(r) = &spec.remote {
            // On its host, over ssh; stopped there by PID (crate::hosts).
            let p = r
                .host
                .spawn(&spec.command_line(), &r.dir, spec.log.as_deref())?;
            return Ok(Box::new(p));
        }
        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.args).stdin(Stdio::null());
        if let Some(dir) = &spec.workdir {
            cmd.current_dir(dir);
        }
        match &spec.log {
            Some(path) => {
                let f = File::options()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| RunnerError::io("create", path, e))?;
                let f2 = f
                    .try_clone()
                    .map_err(|e| RunnerError::io("create", path, e))?;
                cmd.stdout(f).stderr(f2);
            }
            None => {
                cmd.stdout(Stdio::null()).stderr(Stdio::null());
            }
        }
        // Its own process group: a shell command's children (nginx workers) are stopped with it.
        cmd.process_group(0);
        let set = spec.cpus.as_deref().map(crate::pin::cpu_set);
        // SAFETY: `pre_exec` is unsafe because the closure runs between fork and exec, where
        // only async-signal-safe work is allowed. It makes two raw system calls through rustix
        // (prctl, sched_setaffinity) on data prepared before the fork; nothing allocates or
        // takes a lock.
        unsafe {
            cmd.pre_exec(move || {
                // If the runner dies without stopping us (SIGKILL), do not outlive it.
                let _ = set_parent_process_death_signal(Some(Signal::TERM));
                if let Some(set) = &set {
                    sched_setaffinity(None, set)?;
                }
                Ok(())
            });
        }
        let child = spawn_kept(cmd).map_err(|source| RunnerError::Start {
            program: spec.program.clone(),
            source,
        })?;
        Ok(Box::new(SystemProcess {
            child,
            reaped: None,
        }))
    }

    fn setup(&mut self, command: &str, workdir: &Path, log: &Path) -> Result<(), RunnerError> {
        let f = File::options()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| RunnerError::io("create", log, e))?;
        let f2 = f
            .try_clone()
            .map_err(|e| RunnerError::io("create", log, e))?;
        let status = Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(workdir)
            .stdin(Stdio::null())
            .stdout(f)
            .stderr(f2)
            .status()
            .map_err(|source| RunnerError::RunShell { source })?;
        if status.success() {
            return Ok(());
        }
        let last_line = std::fs::read_to_string(log).ok().and_then(|t| {
            t.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(|l| l.trim().to_owned())
        });
        let name = log
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Err(RunnerError::SetupCommand {
            command: command.to_owned(),
            status,
            log: name,
            last_line,
        })
    }
}

/// A command and where its spawn's result goes.
type SpawnRequest = (Command, std::sync::mpsc::Sender<std::io::Result<Child>>);

/// Spawns `cmd` from one thread that lives as long as the runner: the parent-death signal
/// (`PR_SET_PDEATHSIG`) follows the thread that forked, not the process, so a back-end a cell's
/// events start from their own thread must not be forked by it (it would get SIGTERM when that
/// thread ends, before the cell stops it).
fn spawn_kept(cmd: Command) -> std::io::Result<Child> {
    use std::sync::mpsc::{channel, Sender};
    use std::sync::{Mutex, OnceLock};
    static KEEPER: OnceLock<Mutex<Sender<SpawnRequest>>> = OnceLock::new();
    let keeper = KEEPER.get_or_init(|| {
        let (tx, rx) = channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("gatebench-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("a thread starts");
        Mutex::new(tx)
    });
    let (reply, answer) = channel();
    let sent = keeper
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((cmd, reply));
    if sent.is_err() {
        return Err(std::io::Error::other("the spawner thread is gone"));
    }
    answer
        .recv()
        .unwrap_or_else(|_| Err(std::io::Error::other("the spawner thread is gone")))
}

/// A child started by [`SystemLauncher`].
#[derive(Debug)]
struct SystemProcess {
    child: Child,
    /// Set once the child has been reaped.
    reaped: Option<String>,
}

impl SystemProcess {
    /// Whether the leader has exited, without reaping it (waitid with WNOWAIT): while the
    /// zombie exists its process group id cannot be reused, so signalling the group is safe.
    fn has_exited(&self) -> Option<String> {
        let status = waitid(
            WaitId::Pid(self.pid_t()?),
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
        )
        .ok()??;
        Some(match status.exit_status() {
            Some(code) => format!("exited with status {code}"),
            // With EXITED alone the only other outcomes are killed or dumped by a signal.
            None => format!(
                "was killed by signal {}",
                status.terminating_signal().unwrap_or_default()
            ),
        })
    }

    /// The child's process id (never 0 for a started child).
    fn pid_t(&self) -> Option<Pid> {
        Pid::from_raw(self.child.id() as i32)
    }

    /// Sends `sig` to the process group we created; its leader is our unreaped child, so the
    /// id still names that group.
    fn signal_group(&self, sig: Signal) {
        if let Some(pid) = self.pid_t() {
            let _ = kill_process_group(pid, sig);
        }
    }
}

impl Running for SystemProcess {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn exited(&mut self) -> Option<String> {
        if let Some(r) = &self.reaped {
            return Some(r.clone());
        }
        self.has_exited()
    }

    fn stop(&mut self) -> String {
        if let Some(r) = &self.reaped {
            return r.clone();
        }
        let how = if let Some(early) = self.has_exited() {
            early
        } else {
            self.signal_group(Signal::TERM);
            let deadline = Instant::now() + STOP_GRACE;
            loop {
                if self.has_exited().is_some() {
                    break "terminated".to_owned();
                }
                if Instant::now() >= deadline {
                    break format!("killed after {}s", STOP_GRACE.as_secs());
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        // Whatever is left of the group (children of a shell, workers) goes too.
        self.signal_group(Signal::KILL);
        let _ = self.child.wait();
        self.reaped = Some(how.clone());
        how
    }

    fn kill(&mut self) -> String {
        if self.reaped.is_none() && self.has_exited().is_none() {
            self.signal_group(Signal::KILL);
            let _ = self.child.wait();
            self.reaped = Some("killed".to_owned());
        }
        self.stop()
    }
}

/// Owns a cell's running processes; stops them in reverse start order when dropped.
pub struct Guard {
    procs: Vec<(String, Box<dyn Running>)>,
    stopped: Vec<(String, u32, String)>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field(
                "running",
                &self
                    .procs
                    .iter()
                    .map(|(n, p)| (n, p.pid()))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Default for Guard {
    fn default() -> Self {
        Guard::new()
    }
}

impl Guard {
    /// An empty guard.
    pub fn new() -> Guard {
        Guard {
            procs: Vec::new(),
            stopped: Vec::new(),
        }
    }

    /// Takes ownership of a started process.
    pub fn push(&mut self, name: &str, p: Box<dyn Running>) {
        self.procs.push((name.to_owned(), p));
    }

    /// The process called `name`, if running.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Box<dyn Running>> {
        self.procs
            .iter_mut()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p)
    }

    /// Stops the process called `name` (killed at once with `kill`), keeping it among the
    /// stopped; says how it ended, `None` when no such process runs.
    pub fn stop_one(&mut self, name: &str, kill: bool) -> Option<String> {
        let i = self.procs.iter().position(|(n, _)| n == name)?;
        let (name, mut p) = self.procs.remove(i);
        let how = if kill { p.kill() } else { p.stop() };
        self.stopped.push((name, p.pid(), how.clone()));
        Some(how)
    }

    /// Processes that exited by themselves: `(name, how)`.
    pub fn exited(&mut self) -> Vec<(String, String)> {
        self.procs
            .iter_mut()
            .filter_map(|(n, p)| p.exited().map(|how| (n.clone(), how)))
            .collect()
    }

    /// Stops everything, last started first; returns `(name, pid, how it ended)` for every
    /// process this guard ever held, in start order.
    pub fn stop_all(&mut self) -> Vec<(String, u32, String)> {
        while let Some((name, mut p)) = self.procs.pop() {
            let how = p.stop();
            self.stopped.push((name, p.pid(), how));
        }
        let mut out = self.stopped.clone();
        out.reverse();
        out
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.stop_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_processes_are_stopped_by_the_guard_with_their_children() {
        let dir = std::env::temp_dir().join(format!("gatebench-launch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spec = ProcessSpec {
            name: "sut".into(),
            program: "sh".into(),
            // A shell with a child that ignores nothing: both must be gone after stop.
            args: vec!["-c".into(), "sleep 30 & echo started; wait".into()],
            workdir: Some(dir.clone()),
            log: Some(dir.join("sut.log")),
            cpus: None,
            remote: None,
        };
        let mut p = SystemLauncher.launch(&spec).unwrap();
        let pid = p.pid();
        assert!(p.exited().is_none());
        let mut g = Guard::new();
        g.push("sut", p);
        // Wait for the shell's child to exist before stopping.
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::fs::read_to_string(dir.join("sut.log"))
            .unwrap_or_default()
            .is_empty()
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        let stopped = g.stop_all();
        assert_eq!(stopped.len(), 1);
        assert_eq!(stopped[0].1, pid);
        // No live process of that group is left (the orphaned `sleep` may linger a moment as
        // a zombie until init reaps it; zombies use nothing).
        let deadline = Instant::now() + Duration::from_secs(5);
        while !live_group_members(pid).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            live_group_members(pid),
            Vec::<u32>::new(),
            "group {pid} has live members"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Pids in process group `pgid` that are not zombies.
    fn live_group_members(pgid: u32) -> Vec<u32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                    return false;
                };
                let f: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..]
                    .split_whitespace()
                    .collect();
                f[0] != "Z" && f[2] == pgid.to_string()
            })
            .collect()
    }

    #[test]
    fn a_missing_program_is_a_clear_error() {
        let spec = ProcessSpec {
            name: "sut".into(),
            program: "/nonexistent/gatebench-nope".into(),
            args: vec![],
            workdir: None,
            log: None,
            cpus: None,
            remote: None,
        };
        let e = SystemLauncher.launch(&spec).err().unwrap().chain();
        assert!(
            e.starts_with("cannot start /nonexistent/gatebench-nope"),
            "{e}"
        );
    }
}
