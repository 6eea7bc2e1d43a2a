//! Hosts: where a suite's processes run. A host is `local` (this machine) or `ssh://[user@]host[:port]`,
//! reached with the user's own OpenSSH client and configuration (keys, `~/.ssh/config`, jump
//! hosts), or the `ssh_config` file a suite names. There is no agent and no daemon of ours: every
//! remote action is one `ssh` command line, and a host's commands share one connection (an ssh
//! client in `ControlMaster` mode, the runner's child while the host is in use).
//!
//! This module owns what gatebench does on a remote host:
//! - [`prepare`] (`SshHost::preflight` on each host): before any cell, reach it (one line
//!   naming the host when it is unreachable or refuses the key), check it has the tools the
//!   remote commands use, that this build can run there, copy gatebench's own binary when the
//!   host lacks the same one (checked by SHA-256; it says so), and measure the clock offset;
//! - [`SshHost::spawn`]: start a long-running process in its own session, learn its remote PID
//!   (`echo $$; exec …`: sshd puts every session's command in a new session, so that PID is
//!   also its process group), stream its output into the local log;
//! - [`RemoteProcess`]'s [`stop`](crate::launch::Running::stop): stop it by that PID (SIGTERM
//!   to the group, up to 5 s, then SIGKILL), never by name, and never only by closing the ssh
//!   session (a server that writes nothing would not notice);
//! - [`RemoteSampler`]: the 1 s sampling of the SUT, by `gatebench host sample` on that host,
//!   its lines streamed back over the ssh channel.
//!
//! It does not decide which process runs where (the suite's `[hosts]` table and
//! [`crate::cell`] do). Splitting a cell's load across generator hosts is [`crate::shards`].
//!
//! # Layout
//! - this module: the suite's `[hosts]` ([`HostSpec`], [`Hosts`]) and a run's hosts, ready
//!   ([`HostPlan`], [`HostReport`]);
//! - `ssh`: the `ssh` command lines, [`SshHost`], quoting for the remote shell;
//! - `preflight`: the checks before any cell ([`prepare`]): reach, tools, system, the binary
//!   copy, the clock offset, fixed ports;
//! - `remote`: a cell's directory and ports on a host, setup commands there, remote processes
//!   ([`RemoteProcess`]) and the remote sampler ([`RemoteSampler`]).

mod preflight;
mod remote;
mod ssh;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::error::RunnerError;

pub use preflight::{prepare, REMOTE_TOOLS};
pub(crate) use remote::spawn_with_lines;
pub use remote::{stopping_remote, RemoteProcess, RemoteSampler};
pub use ssh::{sh_quote, SshHost, CONNECT_TIMEOUT_S};

/// Where a process runs, as written in a suite.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum HostSpec {
    /// This machine.
    #[default]
    Local,
    /// A host reached over ssh.
    Ssh {
        /// As written: `ssh://bench@sut-host`.
        url: String,
        /// What `ssh` is given: `bench@sut-host`.
        destination: String,
        /// `:port` when given.
        port: Option<u16>,
    },
}

impl HostSpec {
    /// Parses `local` or `ssh://[user@]host[:port]`.
    pub fn parse(s: &str) -> Result<HostSpec, RunnerError> {
        let s = s.trim();
        if s == "local" {
            return Ok(HostSpec::Local);
        }
        let Some(rest) = s.strip_prefix("ssh://") else {
            return Err(RunnerError::NotAHost {
                given: s.to_owned(),
                forms: "\"local\" or \"ssh://[user@]host[:port]\"",
            });
        };
        let rest = rest.trim_end_matches('/');
        let (userhost, port) = match rest.rsplit_once(':') {
            Some((h, p)) if !h.contains(']') || h.ends_with(']') => {
                let port: u16 =
                    p.parse()
                        .ok()
                        .filter(|p| *p > 0)
                        .ok_or_else(|| RunnerError::HostPort {
                            given: s.to_owned(),
                            port: p.to_owned(),
                        })?;
                (h, Some(port))
            }
            _ => (rest, None),
        };
        let host = userhost.rsplit('@').next().unwrap_or("");
        let ok = |c: char| c.is_ascii_alphanumeric() || "-._@[]:".contains(c);
        if host.is_empty() || !userhost.chars().all(ok) || userhost.starts_with('-') {
            return Err(RunnerError::NotAHost {
                given: s.to_owned(),
                forms: "\"ssh://[user@]host[:port]\"",
            });
        }
        Ok(HostSpec::Ssh {
            url: s.to_owned(),
            destination: userhost.to_owned(),
            port,
        })
    }

    /// `local` or the URL, as written.
    pub fn name(&self) -> &str {
        match self {
            HostSpec::Local => "local",
            HostSpec::Ssh { url, .. } => url,
        }
    }

    /// Whether it is this machine.
    pub fn is_local(&self) -> bool {
        matches!(self, HostSpec::Local)
    }
}

/// The suite's `[hosts]` table, validated.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Hosts {
    /// Where systems under test run.
    pub sut: HostSpec,
    /// Where back-ends run.
    pub backend: HostSpec,
    /// Where the load generator runs: `[local]`, or ssh hosts a cell's load is split across.
    pub generators: Vec<HostSpec>,
    /// The ssh client configuration (`ssh -F`); `None` = the user's own.
    pub ssh_config: Option<PathBuf>,
}

impl Hosts {
    /// Whether every process runs on this machine.
    pub fn all_local(&self) -> bool {
        self.sut.is_local()
            && self.backend.is_local()
            && self.generators.iter().all(HostSpec::is_local)
    }

    /// The ssh client configuration to use: the suite's, else `GATEBENCH_SSH_CONFIG`, else
    /// none (ssh reads `~/.ssh/config` itself).
    pub fn effective_ssh_config(&self) -> Option<PathBuf> {
        self.ssh_config.clone().or_else(|| {
            std::env::var_os("GATEBENCH_SSH_CONFIG")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
    }
}

/// What gatebench found on a host before the run: written to `hosts.json`.
#[derive(Clone, Debug, Serialize)]
pub struct HostReport {
    /// `sut`, `backend`, or both (`sut, backend`).
    pub roles: String,
    /// The URL, as written.
    pub url: String,
    /// The address targets use.
    pub address: String,
    /// `uname -sm` of the host.
    pub system: String,
    /// gatebench's path on the host.
    pub gatebench: String,
    /// Whether this run copied it there (the host lacked the same binary).
    pub copied: bool,
    /// SHA-256 of the binary.
    pub sha256: String,
    /// The host's clock minus this machine's, seconds (from the round trip with the shortest
    /// time).
    pub clock_offset_s: f64,
    /// Half that shortest round trip, seconds: the offset is known to within this.
    pub clock_uncertainty_s: f64,
    /// Every round trip, seconds.
    pub clock_rtts_s: Vec<f64>,
}

/// The hosts of a run, ready: what cells need of them.
#[derive(Debug, Default, Clone)]
pub struct HostPlan {
    /// The SUT's host; `None` = local.
    pub sut: Option<Arc<SshHost>>,
    /// The back-ends' host; `None` = local.
    pub backend: Option<Arc<SshHost>>,
    /// The generator hosts a cell's load is split across; empty = the load is made here.
    pub generators: Vec<Arc<SshHost>>,
}

impl HostPlan {
    /// Every remote host once, for reports.
    pub fn reports(&self) -> Vec<HostReport> {
        let mut out: Vec<HostReport> = Vec::new();
        for h in [&self.sut, &self.backend]
            .into_iter()
            .flatten()
            .chain(&self.generators)
        {
            if !out.iter().any(|r| r.url == h.url) {
                out.push(h.report.clone());
            }
        }
        out
    }
}

/// Seconds since the Unix epoch, as a float.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_urls() {
        assert_eq!(HostSpec::parse("local").unwrap(), HostSpec::Local);
        assert_eq!(
            HostSpec::parse("ssh://bench@sut-host:2222").unwrap(),
            HostSpec::Ssh {
                url: "ssh://bench@sut-host:2222".into(),
                destination: "bench@sut-host".into(),
                port: Some(2222)
            }
        );
        assert_eq!(
            HostSpec::parse("ssh://gen1").unwrap(),
            HostSpec::Ssh {
                url: "ssh://gen1".into(),
                destination: "gen1".into(),
                port: None
            }
        );
        for bad in [
            "sut",
            "ssh://",
            "ssh://a b",
            "ssh://-oProxyCommand=x",
            "ssh://h:0",
            "ssh://h:x",
        ] {
            assert!(HostSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn quoting() {
        assert_eq!(sh_quote("abc/d-1"), "abc/d-1");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
        assert_eq!(sh_quote(""), "''");
    }
}
