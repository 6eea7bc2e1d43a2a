//! Hosts: where a suite's processes run. A host is `local` (this machine) or `ssh://[user@]host[:port]`,
//! reached with the user's own OpenSSH client and configuration (keys, `~/.ssh/config`, jump
//! hosts), or the `ssh_config` file a suite names. There is no agent and no daemon of ours: every
//! remote action is one `ssh` command line.
//!
//! This module owns what gatebench does on a remote host:
//! - [`SshHost::preflight`]: before any cell, reach it (one line naming the host when it is
//!   unreachable or refuses the key), check it has the tools the remote commands use, that this
//!   build can run there, copy gatebench's own binary when the host lacks the same one (checked
//!   by SHA-256; it says so), and measure the clock offset;
//! - [`SshHost::spawn`]: start a long-running process in its own session, learn its remote PID
//!   (`echo $$; exec …`: sshd puts every session's command in a new session, so that PID is
//!   also its process group), stream its output into the local log;
//! - [`RemoteProcess::stop`]: stop it by that PID (SIGTERM to the group, up to 5 s, then
//!   SIGKILL), never by name, and never only by closing the ssh session (a server that writes
//!   nothing would not notice);
//! - [`RemoteSampler`]: the 1 s sampling of the SUT, by `gatebench host sample` on that host,
//!   its lines streamed back over the ssh channel.
//!
//! It does not decide which process runs where (the suite's `[hosts]` table and
//! [`crate::cell`] do). Splitting a cell's load across generator hosts is [`crate::shards`].

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, ToSocketAddrs};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustix::process::{set_parent_process_death_signal, Signal};
use serde::Serialize;

use crate::error::RunnerError;
use crate::launch::{Running, STOP_GRACE};
use crate::sampler::Sample;

/// How long ssh may take to connect (`ConnectTimeout`): an unreachable host fails in seconds.
pub const CONNECT_TIMEOUT_S: u32 = 5;

/// The tools the remote commands use, checked on every host before any cell.
pub const REMOTE_TOOLS: [&str; 10] = [
    "sh",
    "uname",
    "sha256sum",
    "cut",
    "cat",
    "mkdir",
    "chmod",
    "mv",
    "rm",
    "sleep",
];

/// Round trips of the clock-offset measurement; the one with the shortest round trip is kept.
const CLOCK_ROUNDS: usize = 8;

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
    pub fn parse(s: &str) -> Result<HostSpec, String> {
        let s = s.trim();
        if s == "local" {
            return Ok(HostSpec::Local);
        }
        let Some(rest) = s.strip_prefix("ssh://") else {
            return Err(format!(
                "\"{s}\" is not a host (write \"local\" or \"ssh://[user@]host[:port]\")"
            ));
        };
        let rest = rest.trim_end_matches('/');
        let (userhost, port) = match rest.rsplit_once(':') {
            Some((h, p)) if !h.contains(']') || h.ends_with(']') => {
                let port: u16 = p
                    .parse()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| format!("\"{s}\": \"{p}\" is not a port"))?;
                (h, Some(port))
            }
            _ => (rest, None),
        };
        let host = userhost.rsplit('@').next().unwrap_or("");
        let ok = |c: char| c.is_ascii_alphanumeric() || "-._@[]:".contains(c);
        if host.is_empty() || !userhost.chars().all(ok) || userhost.starts_with('-') {
            return Err(format!(
                "\"{s}\" is not a host (write \"ssh://[user@]host[:port]\")"
            ));
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

/// A remote host ready for cells: reached, checked, with gatebench on it.
#[derive(Debug)]
pub struct SshHost {
    /// The URL, as written (`ssh://sut`).
    pub url: String,
    destination: String,
    port: Option<u16>,
    ssh_config: Option<PathBuf>,
    /// The address the runner reaches it by (ssh's `HostName`, resolved): targets, readiness
    /// and the verification probe use it.
    pub address: IpAddr,
    /// gatebench on the host.
    pub exe: String,
    /// The host's cache directory for gatebench (cells' files of remote processes go under it).
    pub cache: String,
    /// What preflight found and did, for the results directory.
    pub report: HostReport,
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

/// Checks every remote host of `hosts` and readies it (see [`SshHost::preflight`]); `exe` is
/// this gatebench. `say` gets one line per host for the user. Each failure is one error naming
/// the host. `ports` lists fixed ports per role that must be free on their host.
pub fn prepare(
    hosts: &Hosts,
    exe: &Path,
    fixed_ports: &[(&'static str, u16)],
    say: &mut dyn FnMut(&str),
) -> Result<HostPlan, RunnerError> {
    let remote_generators = hosts.generators.iter().filter(|g| !g.is_local()).count();
    if remote_generators > 0 && remote_generators < hosts.generators.len() {
        return Err(RunnerError::Host {
            host: "generators".into(),
            message: "give [\"local\"] or only ssh:// hosts (a cell's load is split across \
                      generator hosts, or made here)"
                .into(),
        });
    }
    let config = hosts.effective_ssh_config();
    if let Some(c) = &config {
        if !c.is_file() {
            return Err(RunnerError::Host {
                host: "ssh_config".into(),
                message: format!("{} does not exist", c.display()),
            });
        }
    }
    let hash = sha256_file(exe)?;
    let mut plan = HostPlan::default();
    let mut ready: Vec<Arc<SshHost>> = Vec::new();
    let mut roles_of: Vec<(String, &HostSpec)> = vec![
        ("sut".into(), &hosts.sut),
        ("backend".into(), &hosts.backend),
    ];
    if remote_generators > 0 {
        for (i, g) in hosts.generators.iter().enumerate() {
            roles_of.push((format!("generator {}", i + 1), g));
        }
    }
    for (role, spec) in roles_of.iter().map(|(r, s)| (r.as_str(), *s)) {
        let HostSpec::Ssh {
            url,
            destination,
            port,
        } = spec
        else {
            continue;
        };
        // Roles shared by one host are named together in its report.
        let roles: Vec<&str> = roles_of
            .iter()
            .filter(|(_, s)| s.name() == url)
            .map(|(r, _)| r.as_str())
            .collect();
        let h = match ready.iter().find(|h| &h.url == url) {
            Some(h) => h.clone(),
            None => {
                let h = Arc::new(SshHost::preflight(
                    url,
                    destination,
                    *port,
                    config.clone(),
                    &roles.join(", "),
                    exe,
                    &hash,
                    say,
                )?);
                ready.push(h.clone());
                h
            }
        };
        let wanted: Vec<u16> = fixed_ports
            .iter()
            .filter(|(r, _)| *r == role)
            .map(|(_, p)| *p)
            .collect();
        if !wanted.is_empty() {
            h.check_ports_free(&wanted)?;
        }
        match role {
            "sut" => plan.sut = Some(h),
            "backend" => plan.backend = Some(h),
            _ => plan.generators.push(h),
        }
    }
    Ok(plan)
}

impl SshHost {
    /// Reaches the host and readies it: checks its tools and system, copies gatebench when
    /// the host lacks this very binary (by SHA-256, under `$XDG_CACHE_HOME/gatebench/<hash>/`,
    /// `~/.cache` by default), checks it reports this version, and measures the clock offset.
    #[allow(clippy::too_many_arguments)]
    fn preflight(
        url: &str,
        destination: &str,
        port: Option<u16>,
        ssh_config: Option<PathBuf>,
        role: &str,
        exe: &Path,
        hash: &str,
        say: &mut dyn FnMut(&str),
    ) -> Result<SshHost, RunnerError> {
        let err = |message: String| RunnerError::Host {
            host: format!("{url} ({role})"),
            message,
        };
        let mut h = SshHost {
            url: url.to_owned(),
            destination: destination.to_owned(),
            port,
            ssh_config,
            address: IpAddr::from([127, 0, 0, 1]),
            exe: String::new(),
            cache: String::new(),
            report: HostReport {
                roles: role.to_owned(),
                url: url.to_owned(),
                address: String::new(),
                system: String::new(),
                gatebench: String::new(),
                copied: false,
                sha256: hash.to_owned(),
                clock_offset_s: 0.0,
                clock_uncertainty_s: 0.0,
                clock_rtts_s: Vec::new(),
            },
        };
        // 1. Reach it, and list what it lacks, in one session.
        let tools = REMOTE_TOOLS.join(" ");
        let script = format!(
            "for t in {tools}; do command -v $t >/dev/null 2>&1 || echo \"missing $t\"; done; \
             echo \"cache ${{XDG_CACHE_HOME:-$HOME/.cache}}/gatebench\"; uname -sm"
        );
        let out = h.run(&script, None).map_err(&err)?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() && !text.contains("cache ") {
            return Err(err(format!("cannot connect: {}", ssh_failure(&out))));
        }
        let missing: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("missing "))
            .collect();
        if !missing.is_empty() {
            return Err(err(format!(
                "the host lacks {} (gatebench needs {tools} there)",
                missing.join(", ")
            )));
        }
        h.cache = text
            .lines()
            .find_map(|l| l.strip_prefix("cache "))
            .unwrap_or("")
            .to_owned();
        let system = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .to_owned();
        let (os, arch) = local_system();
        let ours = format!("{os} {arch}");
        if system != ours {
            return Err(err(format!(
                "gatebench {} built for {ours} cannot run on this host ({system}); install \
                 gatebench {} built for it",
                env!("CARGO_PKG_VERSION"),
                env!("CARGO_PKG_VERSION"),
            )));
        }
        h.report.system = system;
        // 2. The address targets use: ssh's own idea of the host name, resolved here.
        h.address = h.resolve_address().map_err(&err)?;
        h.report.address = h.address.to_string();
        // 3. This very binary on the host, by hash.
        let dir = format!("{}/{hash}", h.cache);
        let path = format!("{dir}/gatebench");
        let check = format!(
            "f={}; if [ -x \"$f\" ] && [ \"$(sha256sum < \"$f\" | cut -d' ' -f1)\" = {hash} ]; \
             then echo present; else echo absent; fi",
            sh_quote(&path)
        );
        let out = h.run(&check, None).map_err(&err)?;
        let present = String::from_utf8_lossy(&out.stdout).trim() == "present";
        if !present {
            let bytes = std::fs::read(exe).map_err(|e| RunnerError::io("read", exe, e))?;
            // Other builds copied there before are removed (one build kept per host: a debug
            // build is over 100 MB).
            let copy = format!(
                "set -e; mkdir -p {d}; t={d}/.gatebench.$$; cat > \"$t\"; chmod 755 \"$t\"; \
                 [ \"$(sha256sum < \"$t\" | cut -d' ' -f1)\" = {hash} ] || {{ rm -f \"$t\"; \
                 echo 'the copy does not have the expected SHA-256' >&2; exit 1; }}; mv \"$t\" {f}; \
                 for o in {c}/*; do case \"${{o##*/}}\" in {hash}|cells) ;; \
                 [0-9a-f]*) if [ -f \"$o/gatebench\" ]; then rm -rf \"$o\"; fi ;; esac; done",
                d = sh_quote(&dir),
                f = sh_quote(&path),
                c = sh_quote(&h.cache)
            );
            let out = h.run(&copy, Some(&bytes)).map_err(&err)?;
            if !out.status.success() {
                return Err(err(format!(
                    "cannot copy gatebench to {path}: {}",
                    ssh_failure(&out)
                )));
            }
            say(&format!(
                "{url}: copied gatebench {} ({:.1} MB, sha256 {}…) to {path} (the host lacked this build)",
                env!("CARGO_PKG_VERSION"),
                bytes.len() as f64 / 1e6,
                &hash[..12]
            ));
        } else {
            say(&format!(
                "{url}: has this gatebench build (sha256 {}…) at {path}",
                &hash[..12]
            ));
        }
        h.report.copied = !present;
        h.exe = path.clone();
        h.report.gatebench = path.clone();
        // 4. It runs there and is this version.
        let out = h
            .run(&format!("{} --version", sh_quote(&path)), None)
            .map_err(&err)?;
        let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let want = format!("gatebench {}", env!("CARGO_PKG_VERSION"));
        if version != want {
            return Err(err(format!(
                "gatebench at {path} reports \"{}\", expected \"{want}\"{}",
                if version.is_empty() {
                    ssh_failure(&out)
                } else {
                    version
                },
                ""
            )));
        }
        // 5. Its clock.
        let (offset, uncertainty, rtts) = h.clock_offset().map_err(&err)?;
        h.report.clock_offset_s = offset;
        h.report.clock_uncertainty_s = uncertainty;
        h.report.clock_rtts_s = rtts;
        say(&format!(
            "{url}: address {}, clock offset {:+.3} ms ± {:.3} ms",
            h.address,
            offset * 1e3,
            uncertainty * 1e3
        ));
        Ok(h)
    }

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
    pub fn run(&self, script: &str, stdin: Option<&[u8]>) -> Result<std::process::Output, String> {
        let mut c = self.ssh();
        c.arg(script)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().map_err(|e| format!("cannot run ssh: {e}"))?;
        let feeder = stdin.map(|data| {
            let mut pipe = child.stdin.take().expect("stdin is piped");
            let data = data.to_vec();
            std::thread::spawn(move || {
                let _ = pipe.write_all(&data);
            })
        });
        let out = child
            .wait_with_output()
            .map_err(|e| format!("ssh failed: {e}"))?;
        if let Some(f) = feeder {
            let _ = f.join();
        }
        Ok(out)
    }

    /// The host's address: `ssh -G` gives the `HostName` ssh would connect to (after the user's
    /// configuration), resolved here.
    fn resolve_address(&self) -> Result<IpAddr, String> {
        let mut c = Command::new("ssh");
        if let Some(f) = &self.ssh_config {
            c.arg("-F").arg(f);
        }
        let out = c
            .arg("-G")
            .arg(&self.destination)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run ssh -G: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let name = text
            .lines()
            .find_map(|l| l.strip_prefix("hostname "))
            .ok_or("ssh -G names no hostname")?
            .trim()
            .to_owned();
        (name.as_str(), 0)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .map(|a| a.ip())
            .ok_or_else(|| format!("cannot resolve {name}"))
    }

    /// The host's clock minus ours: [`CLOCK_ROUNDS`] round trips over one session of
    /// `gatebench host clock`; the offset is from the shortest round trip, assuming the
    /// host read its clock halfway (so it is known to ± half that round trip; Cristian's
    /// algorithm).
    fn clock_offset(&self) -> Result<(f64, f64, Vec<f64>), String> {
        let mut c = self.ssh();
        c.arg(format!("{} host clock", sh_quote(&self.exe)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().map_err(|e| format!("cannot run ssh: {e}"))?;
        let mut input = child.stdin.take().expect("piped");
        let mut output = BufReader::new(child.stdout.take().expect("piped"));
        let mut best: Option<(f64, f64)> = None;
        let mut rtts = Vec::new();
        let mut line = String::new();
        // A first exchange that is not counted: it waits for the session and the program to
        // start.
        let _ = input.write_all(b"t\n").and_then(|_| input.flush());
        let _ = output.read_line(&mut line);
        for _ in 0..CLOCK_ROUNDS {
            let t0 = unix_now();
            if input.write_all(b"t\n").and_then(|_| input.flush()).is_err() {
                break;
            }
            line.clear();
            if output.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            let t1 = unix_now();
            let Ok(remote) = line.trim().parse::<f64>() else {
                break;
            };
            let rtt = t1 - t0;
            rtts.push(rtt);
            let offset = remote - (t0 + rtt / 2.0);
            if best.is_none_or(|(r, _)| rtt < r) {
                best = Some((rtt, offset));
            }
        }
        drop(input);
        let _ = child.wait();
        let (rtt, offset) =
            best.ok_or_else(|| "cannot read the host's clock (gatebench host clock)".to_owned())?;
        Ok((offset, rtt / 2.0, rtts))
    }

    /// Fails, naming the host and the port, when one of `ports` cannot be bound there.
    fn check_ports_free(&self, ports: &[u16]) -> Result<(), RunnerError> {
        let list: Vec<String> = ports.iter().map(u16::to_string).collect();
        let out = self
            .run(
                &format!(
                    "{} host ports --check {}",
                    sh_quote(&self.exe),
                    list.join(",")
                ),
                None,
            )
            .map_err(|message| RunnerError::Host {
                host: self.url.clone(),
                message,
            })?;
        if out.status.success() {
            return Ok(());
        }
        let why = ssh_failure(&out);
        Err(RunnerError::Host {
            host: self.url.clone(),
            message: why.strip_prefix("gatebench: ").unwrap_or(&why).to_owned(),
        })
    }

    /// `n` ports free on the host, and the host's directory for cell `id` (created).
    pub fn cell_setup(&self, id: &str, n: usize) -> Result<(String, Vec<u16>), String> {
        let dir = format!("{}/cells/{}-{id}", self.cache, std::process::id());
        let out = self.run(
            &format!(
                "mkdir -p {d} && {exe} host ports --count {n}",
                d = sh_quote(&dir),
                exe = sh_quote(&self.exe)
            ),
            None,
        )?;
        if !out.status.success() {
            return Err(ssh_failure(&out));
        }
        let ports = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(|p| p.parse::<u16>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| "gatebench host ports printed something else".to_owned())?;
        if ports.len() != n {
            return Err(format!("asked for {n} free ports, got {}", ports.len()));
        }
        Ok((dir, ports))
    }

    /// Runs a scenario's setup command on the host, in gatebench's cache directory there, its
    /// output appended to `log` here. The error names the host and quotes the log's last line.
    pub fn setup(&self, command: &str, log: &Path) -> Result<(), RunnerError> {
        let out = self
            .run(
                &format!(
                    "cd {} && exec sh -c {} 2>&1",
                    sh_quote(&self.cache),
                    sh_quote(command)
                ),
                None,
            )
            .map_err(|message| RunnerError::Host {
                host: self.url.clone(),
                message,
            })?;
        let mut text = out.stdout.clone();
        text.extend_from_slice(&out.stderr);
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .and_then(|mut f| f.write_all(&text))
            .map_err(|e| RunnerError::io("write", log, e))?;
        if out.status.success() {
            return Ok(());
        }
        let name = log
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let last = String::from_utf8_lossy(&text)
            .lines()
            .map(str::trim)
            .rev()
            .find(|l| !l.is_empty())
            .map(|l| format!(": {l}"))
            .unwrap_or_default();
        Err(RunnerError::Host {
            host: self.url.clone(),
            message: format!("`{command}` {} (see {name}){last}", out.status),
        })
    }

    /// Writes `data` to `path` on the host.
    pub fn put(&self, path: &str, data: &[u8]) -> Result<(), String> {
        let out = self.run(&format!("cat > {}", sh_quote(path)), Some(data))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(ssh_failure(&out))
        }
    }

    /// Reads `path` on the host.
    pub fn get(&self, path: &str) -> Result<Vec<u8>, String> {
        let out = self.run(&format!("cat {}", sh_quote(path)), None)?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(ssh_failure(&out))
        }
    }

    /// Starts `argv` (a program and its arguments; `sh -c …` for a command line) in `dir` on
    /// the host. Its stdout and stderr are appended to `log` here. Returns once the remote PID
    /// is known.
    pub fn spawn(
        self: &Arc<Self>,
        argv: &[String],
        dir: &str,
        log: Option<&Path>,
    ) -> Result<RemoteProcess, RunnerError> {
        let quoted: Vec<String> = argv.iter().map(|a| sh_quote(a)).collect();
        // sshd runs a session's command in a new session (setsid), so `$$` is the leader of
        // its own process group: the group is what stop signals.
        let script = format!(
            "cd {} && echo $$ && exec {}",
            sh_quote(dir),
            quoted.join(" ")
        );
        let start_err = |e: String| RunnerError::Host {
            host: self.url.clone(),
            message: e,
        };
        let log_file = match log {
            Some(p) => Some(
                std::fs::File::options()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| RunnerError::io("create", p, e))?,
            ),
            None => None,
        };
        let mut c = self.ssh();
        c.arg(script).stdin(Stdio::null()).stdout(Stdio::piped());
        match &log_file {
            Some(f) => {
                let f2 = f.try_clone().map_err(|e| start_err(e.to_string()))?;
                c.stderr(f2);
            }
            None => {
                c.stderr(Stdio::null());
            }
        }
        die_with_parent(&mut c);
        let mut child = c
            .spawn()
            .map_err(|e| start_err(format!("cannot run ssh: {e}")))?;
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        let copier = std::thread::Builder::new()
            .name("gatebench-remote-log".into())
            .spawn(move || {
                let mut r = BufReader::new(stdout);
                let mut first = String::new();
                let _ = r.read_line(&mut first);
                let _ = tx.send(first.trim().parse::<u32>().ok());
                let mut buf = [0u8; 8192];
                let mut log_file = log_file;
                loop {
                    match r.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if let Some(f) = log_file.as_mut() {
                                let _ = f.write_all(&buf[..n]);
                            }
                        }
                    }
                }
            })
            .map_err(|e| start_err(e.to_string()))?;
        let wait = Duration::from_secs(u64::from(CONNECT_TIMEOUT_S) + 10);
        let pid = match rx.recv_timeout(wait) {
            Ok(Some(pid)) => pid,
            _ => {
                let _ = child.kill();
                let status = child.wait().ok();
                let _ = copier.join();
                let tail = log.and_then(last_line).unwrap_or_default();
                return Err(start_err(format!(
                    "cannot start {} ({}){}",
                    argv.first().map(String::as_str).unwrap_or(""),
                    status.map_or("ssh did not answer".to_owned(), |s| s.to_string()),
                    if tail.is_empty() {
                        String::new()
                    } else {
                        format!(": {tail}")
                    }
                )));
            }
        };
        Ok(RemoteProcess {
            host: self.clone(),
            pid,
            child,
            copier: Some(copier),
            stopped: None,
        })
    }

    /// Stops process group `pgid` on the host: SIGTERM, up to [`STOP_GRACE`] for every member
    /// to exit, then SIGKILL. Says how it ended.
    pub fn stop_group(&self, pgid: u32) -> String {
        let tries = STOP_GRACE.as_millis() / 100;
        let script = format!(
            "P={pgid}; kill -TERM -- -$P 2>/dev/null || {{ echo gone; exit 0; }}; i=0; \
             while kill -0 -- -$P 2>/dev/null; do i=$((i+1)); if [ $i -ge {tries} ]; then \
             kill -KILL -- -$P 2>/dev/null; echo killed; exit 0; fi; sleep 0.1; done; echo terminated"
        );
        match self.run(&script, None) {
            Ok(out) if out.status.success() => match String::from_utf8_lossy(&out.stdout).trim() {
                "killed" => format!("killed after {}s", STOP_GRACE.as_secs()),
                "gone" => "had exited".to_owned(),
                _ => "terminated".to_owned(),
            },
            Ok(out) => format!("not stopped: {}", ssh_failure(&out)),
            Err(e) => format!("not stopped: {e}"),
        }
    }
}

/// A process started on a remote host by [`SshHost::spawn`].
#[derive(Debug)]
pub struct RemoteProcess {
    host: Arc<SshHost>,
    pid: u32,
    /// The local ssh client carrying its output; it exits when the remote process does.
    child: Child,
    copier: Option<JoinHandle<()>>,
    stopped: Option<String>,
}

impl RemoteProcess {
    /// The host it runs on.
    pub fn host(&self) -> &Arc<SshHost> {
        &self.host
    }

    /// `Some(exit code)` once it has ended (its ssh session gives the remote status; 255 is
    /// ssh's own failure).
    pub fn try_status(&mut self) -> Option<i32> {
        self.child
            .try_wait()
            .ok()
            .flatten()
            .map(|s| s.code().unwrap_or(-1))
    }

    /// What it printed on stderr (read once it has ended).
    pub fn take_stderr(&mut self) -> String {
        let mut out = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut out);
        }
        out
    }
}

impl Running for RemoteProcess {
    fn pid(&self) -> u32 {
        self.pid
    }

    fn exited(&mut self) -> Option<String> {
        if let Some(s) = &self.stopped {
            return Some(s.clone());
        }
        match self.child.try_wait() {
            Ok(Some(status)) => Some(match status.code() {
                Some(255) => format!("lost its ssh session to {}", self.host.url),
                Some(code) => format!("exited with status {code} on {}", self.host.url),
                None => format!("lost its ssh client ({status})"),
            }),
            _ => None,
        }
    }

    fn stop(&mut self) -> String {
        if let Some(s) = &self.stopped {
            return s.clone();
        }
        let early = self.exited();
        // By PID on the host, whatever the ssh session's state.
        let how = self.host.stop_group(self.pid);
        let how = early.unwrap_or(how);
        // The remote process is gone, so its ssh session ends; wait for it briefly.
        let deadline = Instant::now() + Duration::from_secs(2);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(c) = self.copier.take() {
            let _ = c.join();
        }
        self.stopped = Some(how.clone());
        how
    }
}

impl Drop for RemoteProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The SUT's sampling on its remote host: `gatebench host sample` there, one line a second
/// streamed back over ssh; each sample is placed on this machine's clock when its line
/// arrives.
#[derive(Debug)]
pub struct RemoteSampler {
    process: RemoteProcess,
    samples: Arc<Mutex<Vec<Sample>>>,
    reader: Option<JoinHandle<()>>,
}

impl RemoteSampler {
    /// Starts sampling process group `pgid` on `host`; times are relative to `origin`.
    pub fn start(
        host: &Arc<SshHost>,
        pgid: u32,
        origin: Instant,
        period: Duration,
        dir: &str,
    ) -> Result<RemoteSampler, RunnerError> {
        let argv = vec![
            host.exe.clone(),
            "host".into(),
            "sample".into(),
            "--pgid".into(),
            pgid.to_string(),
            "--interval-ms".into(),
            period.as_millis().to_string(),
        ];
        // The sampler's own output is read here, not logged: spawn with a pipe.
        let (process, lines) = spawn_with_lines(host, &argv, dir)?;
        let samples = Arc::new(Mutex::new(Vec::new()));
        let sink = samples.clone();
        let reader = std::thread::Builder::new()
            .name("gatebench-remote-sampler".into())
            .spawn(move || {
                for line in lines {
                    if let Some(mut s) = crate::sampler::parse_line(&line) {
                        s.t_s = origin.elapsed().as_secs_f64();
                        sink.lock().expect("sampler lock").push(s);
                    }
                }
            })
            .map_err(|e| RunnerError::Host {
                host: host.url.clone(),
                message: e.to_string(),
            })?;
        Ok(RemoteSampler {
            process,
            samples,
            reader: Some(reader),
        })
    }

    /// Stops the remote sampler by its PID and returns its samples.
    pub fn finish(mut self) -> Vec<Sample> {
        self.process.stop();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        std::mem::take(&mut *self.samples.lock().expect("sampler lock"))
    }
}

/// Like [`SshHost::spawn`], but the process's stdout (after its PID) comes back as lines.
pub(crate) fn spawn_with_lines(
    host: &Arc<SshHost>,
    argv: &[String],
    dir: &str,
) -> Result<(RemoteProcess, std::sync::mpsc::Receiver<String>), RunnerError> {
    let quoted: Vec<String> = argv.iter().map(|a| sh_quote(a)).collect();
    let script = format!(
        "cd {} && echo $$ && exec {}",
        sh_quote(dir),
        quoted.join(" ")
    );
    let err = |m: String| RunnerError::Host {
        host: host.url.clone(),
        message: m,
    };
    let mut c = host.ssh();
    // Stdin stays open while it runs: `gatebench host sample` ends when it closes.
    c.arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    die_with_parent(&mut c);
    let mut child = c.spawn().map_err(|e| err(format!("cannot run ssh: {e}")))?;
    let mut r = BufReader::new(child.stdout.take().expect("piped"));
    let mut first = String::new();
    let _ = r.read_line(&mut first);
    let Ok(pid) = first.trim().parse::<u32>() else {
        let mut stderr = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut stderr);
        }
        let _ = child.kill();
        let _ = child.wait();
        return Err(err(format!(
            "cannot start the sampler: {}",
            stderr.lines().last().unwrap_or("no answer")
        )));
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in r.lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Ok((
        RemoteProcess {
            host: host.clone(),
            pid,
            child,
            copier: None,
            stopped: None,
        },
        rx,
    ))
}

/// The last line ssh printed on stderr (its own error, or the remote command's), else the
/// exit status.
fn ssh_failure(out: &std::process::Output) -> String {
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

/// This machine's `uname -s` and `-m`.
fn local_system() -> (String, String) {
    let u = rustix::system::uname();
    (
        u.sysname().to_string_lossy().into_owned(),
        u.machine().to_string_lossy().into_owned(),
    )
}

/// The SHA-256 of a file, by the system's `sha256sum` (the same tool the hosts use).
fn sha256_file(path: &Path) -> Result<String, RunnerError> {
    let out = Command::new("sha256sum")
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| RunnerError::io("hash (sha256sum)", path, e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let hash = text.split_whitespace().next().unwrap_or("");
    if !out.status.success() || hash.len() != 64 {
        return Err(RunnerError::io(
            "hash (sha256sum)",
            path,
            std::io::Error::other(String::from_utf8_lossy(&out.stderr).trim().to_owned()),
        ));
    }
    Ok(hash.to_owned())
}

fn last_line(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_owned)
}

/// Seconds since the Unix epoch, as a float.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Makes the child of `c` receive SIGTERM when this process dies: an ssh client must not
/// outlive the runner.
#[allow(unsafe_code)] // `pre_exec`, see the SAFETY comment below
fn die_with_parent(c: &mut Command) {
    // SAFETY: between fork and exec the closure only calls prctl(PR_SET_PDEATHSIG), which is
    // async-signal-safe, and allocates nothing.
    unsafe {
        c.pre_exec(|| {
            let _ = set_parent_process_death_signal(Some(Signal::TERM));
            Ok(())
        });
    }
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
