//! The ssh plumbing of a remote host: the `ssh` command line every remote action uses, running
//! a script there to completion, writing and reading a file there, quoting for the remote
//! shell, and the [`SshHost`] these belong to.

use std::io::Write;
use std::net::IpAddr;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

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
    /// so that a refused key fails at once instead of asking for a password.
    pub fn ssh(&self) -> Command {
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
            "-T",
        ])
        .arg(&self.destination)
        .arg("--");
        // Its own process group: Ctrl-C at the terminal reaches the runner, which stops the
        // remote processes by PID over a fresh connection; the ssh clients must not die first.
        c.process_group(0);
        c
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
