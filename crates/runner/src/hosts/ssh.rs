//! The ssh plumbing of a remote host: the `ssh` command line every remote action uses, the
//! connection they share ([`Master`]), running a script there to completion, writing and
//! reading a file there, quoting for the remote shell, and the [`SshHost`] these belong to.

use std::io::Write;
use std::net::IpAddr;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{set_parent_process_death_signal, Signal};

use super::HostReport;
use crate::error::RunnerError;

/// How long ssh may take to connect (`ConnectTimeout`): an unreachable host fails in seconds.
pub const CONNECT_TIMEOUT_S: u32 = 5;

/// A remote host ready for cells: reached, checked, with gatebench on it.
#[derive(Debug)]
pub struct SshHost {
    /// The URL, as written (`ssh://sut`).
    pub url: String,
    pub(super) destination: String,
    pub(super) port: Option<u16>,
    pub(super) ssh_config: Option<PathBuf>,
    /// The address the runner reaches it by (ssh's `HostName`, resolved): targets, readiness
    /// and the verification probe use it.
    pub address: IpAddr,
    /// gatebench on the host.
    pub exe: String,
    /// The host's cache directory for gatebench (cells' files of remote processes go under it).
    pub cache: String,
    /// What preflight found and did, for the results directory.
    pub report: HostReport,
    /// This run's lease on the build it uses there (a file beside the binary): while it is
    /// fresh, no other run's clean-up removes that build. Removed when the host is dropped.
    pub(super) lease: Option<String>,
    /// The connection every ssh command to this host goes over, while it is up.
    pub(super) master: Option<Master>,
}

impl Drop for SshHost {
    fn drop(&mut self) {
        if let Some(lease) = self.lease.take() {
            self.remove(&lease);
        }
    }
}

impl SshHost {
    /// `ssh [-F config] [-p port] -o BatchMode=yes -o ConnectTimeout=5 destination`: BatchMode
    /// so that a refused key fails at once instead of asking for a password. Over the host's
    /// shared connection (`Master`) while it is up (`ControlMaster=no`, its `ControlPath`), else a
    /// connection of its own.
    pub fn ssh(&self) -> Command {
        let mut c = self.ssh_base();
        // Without one, the user's own ControlMaster setting is theirs to keep.
        if let Some(m) = &self.master {
            c.arg("-o").arg("ControlMaster=no");
            c.arg("-o")
                .arg(format!("ControlPath={}", m.socket.display()));
        }
        c.arg("-T").arg(&self.destination).arg("--");
        // Its own process group: Ctrl-C at the terminal reaches the runner, which stops the
        // remote processes by PID over a fresh connection; the ssh clients must not die first.
        c.process_group(0);
        c
    }

    /// `ssh`, the options every connection to this host takes, without a destination.
    fn ssh_base(&self) -> Command {
        let mut c = Command::new("ssh");
        if let Some(f) = &self.ssh_config {
            c.arg("-F").arg(f);
        }
        if let Some(p) = self.port {
            c.arg("-p").arg(p.to_string());
        }
        c.args([
            "-o",
            "BatchMode=yes",
            "-o",
            &format!("ConnectTimeout={CONNECT_TIMEOUT_S}"),
            "-o",
            "LogLevel=ERROR",
        ]);
        c
    }

    /// Opens the [`Master`] connection; without one (no socket path fits, or it did not come
    /// up in time), every command connects by itself. `Err`: ssh's reason it could not
    /// connect.
    pub(super) fn open_master(&mut self) -> Result<(), String> {
        self.master = Master::open(self)?;
        Ok(())
    }

    /// Runs `script` on the host (by its login shell) with `stdin`, to completion. `Err` only
    /// when ssh itself cannot be run.
    pub fn run(
        &self,
        script: &str,
        stdin: Option<&[u8]>,
    ) -> Result<std::process::Output, RunnerError> {
        let mut c = self.ssh();
        c.arg(script)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().map_err(|error| RunnerError::SshClient {
            what: "cannot run ssh",
            error,
        })?;
        let feeder = stdin.map(|data| {
            let mut pipe = child.stdin.take().expect("stdin is piped");
            let data = data.to_vec();
            std::thread::spawn(move || {
                let _ = pipe.write_all(&data);
            })
        });
        let out = child
            .wait_with_output()
            .map_err(|error| RunnerError::SshClient {
                what: "ssh failed",
                error,
            })?;
        if let Some(f) = feeder {
            let _ = f.join();
        }
        Ok(out)
    }

    /// Writes `data` to `path` on the host.
    pub fn put(&self, path: &str, data: &[u8]) -> Result<(), RunnerError> {
        let out = self.run(&format!("cat > {}", sh_quote(path)), Some(data))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(RunnerError::Remote {
                reason: ssh_failure(&out),
            })
        }
    }

    /// Writes `data` to a new file `path` on the host that only its owner may read (a
    /// credential: request headers).
    pub fn put_private(&self, path: &str, data: &[u8]) -> Result<(), RunnerError> {
        let out = self.run(
            &format!("umask 077 && cat > {}", sh_quote(path)),
            Some(data),
        )?;
        if out.status.success() {
            Ok(())
        } else {
            Err(RunnerError::Remote {
                reason: ssh_failure(&out),
            })
        }
    }

    /// Removes `path` on the host, if it is there; failures are not reported (a cleanup).
    pub fn remove(&self, path: &str) {
        let _ = self.run(&format!("rm -f {}", sh_quote(path)), None);
    }

    /// Reads `path` on the host.
    pub fn get(&self, path: &str) -> Result<Vec<u8>, RunnerError> {
        let out = self.run(&format!("cat {}", sh_quote(path)), None)?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(RunnerError::Remote {
                reason: ssh_failure(&out),
            })
        }
    }
}

/// One ssh connection to a host that the host's other ssh commands share (OpenSSH's
/// connection sharing: `ControlMaster=yes`, `-N`): each command then opens a session over it
/// instead of a connection of its own (TCP, key exchange, authentication), which is most of a
/// short command's time — on a LAN about 0.3 s of the 0.4 s of `ssh host true` here, and a
/// suite across hosts runs dozens of them per cell. A command that cannot use it (the socket
/// is gone, or the host's sshd refused one more session: `MaxSessions`, 10 by default)
/// connects by itself, which OpenSSH does on its own. The master runs in its own process
/// group (Ctrl-C at the terminal is the runner's to handle), dies with the runner, and is
/// stopped by its PID when the host is dropped, after the host's last command.
#[derive(Debug)]
pub(super) struct Master {
    child: Child,
    socket: PathBuf,
}

/// Tells the runner's masters' socket directories apart.
static MASTERS: AtomicU32 = AtomicU32::new(0);

impl Master {
    /// Starts the master for `host` and waits until its socket is there (it has connected
    /// and authenticated), at most ssh's connect timeout and a second. `Ok(None)` when there
    /// is none to share (no socket path short enough for a Unix socket, ssh cannot be run, or
    /// the time ran out): each command then connects by itself. `Err` with ssh's own last
    /// line when ssh gave up connecting (exit status 255): the host cannot be reached, and
    /// trying again per command would only take as long once more.
    fn open(host: &SshHost) -> Result<Option<Master>, String> {
        let dir = std::env::temp_dir().join(format!(
            "gatebench-ssh-{}-{}",
            std::process::id(),
            MASTERS.fetch_add(1, Ordering::Relaxed)
        ));
        let socket = dir.join("m");
        // sun_path holds 108 bytes with its NUL; OpenSSH also adds a suffix while binding.
        if socket.as_os_str().len() > 80 {
            return Ok(None);
        }
        {
            use std::os::unix::fs::DirBuilderExt;
            if std::fs::DirBuilder::new().mode(0o700).create(&dir).is_err() {
                return Ok(None);
            }
        }
        let errors = dir.join("err");
        let Ok(stderr) = std::fs::File::create(&errors) else {
            let _ = std::fs::remove_dir(&dir);
            return Ok(None);
        };
        let mut c = host.ssh_base();
        c.args(["-o", "ControlMaster=yes", "-o", "ControlPersist=no", "-o"])
            .arg(format!("ControlPath={}", socket.display()))
            .args(["-N", "-T"])
            .arg(&host.destination)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .process_group(0);
        die_with_parent(&mut c);
        let Ok(child) = c.spawn() else {
            let _ = std::fs::remove_file(&errors);
            let _ = std::fs::remove_dir(&dir);
            return Ok(None);
        };
        let mut master = Master { child, socket };
        let deadline = Instant::now() + Duration::from_secs(u64::from(CONNECT_TIMEOUT_S) + 1);
        loop {
            if master.socket.exists() {
                return Ok(Some(master));
            }
            match master.child.try_wait() {
                Ok(None) if Instant::now() <= deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Ok(Some(status)) if status.code() == Some(255) => {
                    let text = std::fs::read_to_string(&errors).unwrap_or_default();
                    master.stop();
                    let reason = text.lines().map(str::trim).rev().find(|l| !l.is_empty());
                    return Err(reason.unwrap_or("ssh exited with status 255").to_owned());
                }
                _ => {
                    master.stop();
                    return Ok(None);
                }
            }
        }
    }

    /// Stops it by its PID (SIGTERM: it closes the connection) and removes its directory.
    fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let pid = rustix::process::Pid::from_child(&self.child);
            let _ = rustix::process::kill_process(pid, Signal::TERM);
            let _ = self.child.wait();
        }
        if let Some(dir) = self.socket.parent() {
            let _ = std::fs::remove_file(&self.socket);
            let _ = std::fs::remove_file(dir.join("err"));
            let _ = std::fs::remove_dir(dir);
        }
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The last line ssh printed on stderr (its own error, or the remote command's), else the
/// exit status.
pub(super) fn ssh_failure(out: &std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    match err.lines().map(str::trim).rev().find(|l| !l.is_empty()) {
        Some(l) => l.to_owned(),
        None => format!("ssh {}", out.status),
    }
}

/// Quotes `s` for a POSIX shell.
pub fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
    {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Makes the child of `c` receive SIGTERM when this process dies: an ssh client must not
/// outlive the runner.
#[allow(unsafe_code)] // `pre_exec`, see the SAFETY comment below
pub(super) fn die_with_parent(c: &mut Command) {
    // SAFETY: between fork and exec the closure only calls prctl(PR_SET_PDEATHSIG), which is
    // async-signal-safe, and allocates nothing.
    unsafe {
        c.pre_exec(|| {
            let _ = set_parent_process_death_signal(Some(Signal::TERM));
            Ok(())
        });
    }
}
