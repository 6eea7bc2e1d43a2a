//! The checks on every remote host before any cell ([`prepare`]): reach it, check its tools and
//! system, copy this gatebench there when it lacks the same build, measure its clock offset,
//! and check the fixed ports its roles need are free.

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use super::ssh::{sh_quote, ssh_failure, SshHost};
use super::{unix_now, HostPlan, HostReport, HostSpec, Hosts};
use crate::error::RunnerError;

/// The tools the remote commands use, checked on every host before any cell.
pub const REMOTE_TOOLS: [&str; 14] = [
    "sh",
    "uname",
    "sha256sum",
    "cut",
    "sed",
    "find",
    "readlink",
    "touch",
    "cat",
    "mkdir",
    "chmod",
    "mv",
    "rm",
    "sleep",
];

/// The name of a run's lease on a build, before its runner host's name and PID.
pub(super) const LEASE_PREFIX: &str = ".in-use.";

/// Round trips of the clock-offset measurement; the one with the shortest round trip is kept.
const CLOCK_ROUNDS: usize = 8;

/// Checks every remote host of `hosts` and readies it (see `SshHost::preflight`); `exe` is
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
                let reach = Reach {
                    url,
                    destination,
                    port: *port,
                    ssh_config: config.clone(),
                };
                let build = ThisBuild { exe, hash: &hash };
                let h = Arc::new(SshHost::preflight(reach, &roles.join(", "), &build, say)?);
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

/// How a host is reached over ssh.
struct Reach<'a> {
    /// As written: `ssh://bench@sut-host`.
    url: &'a str,
    /// What `ssh` is given: `bench@sut-host`.
    destination: &'a str,
    port: Option<u16>,
    ssh_config: Option<PathBuf>,
}

/// The gatebench a host must run: this executable and its SHA-256.
struct ThisBuild<'a> {
    exe: &'a Path,
    hash: &'a str,
}

impl SshHost {
    /// Reaches the host and readies it: checks its tools and system, copies gatebench when
    /// the host lacks this very binary (by SHA-256, under `$XDG_CACHE_HOME/gatebench/<hash>/`,
    /// `~/.cache` by default), checks it reports this version, and measures the clock offset.
    fn preflight(
        reach: Reach<'_>,
        role: &str,
        build: &ThisBuild<'_>,
        say: &mut dyn FnMut(&str),
    ) -> Result<SshHost, RunnerError> {
        let Reach {
            url,
            destination,
            port,
            ssh_config,
        } = reach;
        let ThisBuild { exe, hash } = *build;
        let err = |message: String| RunnerError::Host {
            host: format!("{url} ({role})"),
            message,
        };
        let fail = |e: RunnerError| err(e.to_string());
        let mut h = SshHost {
            url: url.to_owned(),
            destination: destination.to_owned(),
            port,
            ssh_config,
            address: IpAddr::from([127, 0, 0, 1]),
            exe: String::new(),
            cache: String::new(),
            lease: None,
            master: None,
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
        // 0. One connection that the host's commands share from here on; a host ssh cannot
        //    reach fails here, with ssh's reason.
        h.open_master()
            .map_err(|reason| err(format!("cannot connect: {reason}")))?;
        // 1. Reach it, and list what it lacks, in one session.
        let tools = REMOTE_TOOLS.join(" ");
        let script = format!(
            "for t in {tools}; do command -v $t >/dev/null 2>&1 || echo \"missing $t\"; done; \
             echo \"cache ${{XDG_CACHE_HOME:-$HOME/.cache}}/gatebench\"; uname -sm"
        );
        let out = h.run(&script, None).map_err(&fail)?;
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
        h.address = h.resolve_address().map_err(&fail)?;
        h.report.address = h.address.to_string();
        // 3. This very binary on the host, by hash.
        let dir = format!("{}/{hash}", h.cache);
        let path = format!("{dir}/gatebench");
        let check = format!(
            "f={}; if [ -x \"$f\" ] && [ \"$(sha256sum < \"$f\" | cut -d' ' -f1)\" = {hash} ]; \
             then echo present; else echo absent; fi",
            sh_quote(&path)
        );
        let out = h.run(&check, None).map_err(&fail)?;
        let present = String::from_utf8_lossy(&out.stdout).trim() == "present";
        // The lease first, so that from now on no other run's clean-up takes this build.
        static LEASES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let lease = format!(
            "{dir}/{LEASE_PREFIX}{}-{}-{}",
            rustix::system::uname().nodename().to_string_lossy(),
            std::process::id(),
            LEASES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let out = h
            .run(
                &format!("mkdir -p {} && touch {}", sh_quote(&dir), sh_quote(&lease)),
                None,
            )
            .map_err(&fail)?;
        if !out.status.success() {
            return Err(err(format!("cannot write in {dir}: {}", ssh_failure(&out))));
        }
        h.lease = Some(lease);
        if !present {
            let bytes = std::fs::read(exe).map_err(|e| RunnerError::io("read", exe, e))?;
            // Other builds copied there before are removed (a debug build is over 100 MB),
            // except one another run is using: it holds a lease renewed at every cell (a
            // lease untouched for a day is a crashed run's), or a process runs that binary.
            let copy = format!(
                "set -e; mkdir -p {d}; t={d}/.gatebench.$$; cat > \"$t\"; chmod 755 \"$t\"; \
                 [ \"$(sha256sum < \"$t\" | cut -d' ' -f1)\" = {hash} ] || {{ rm -f \"$t\"; \
                 echo 'the copy does not have the expected SHA-256' >&2; exit 1; }}; mv \"$t\" {f}; \
                 for o in {c}/*; do case \"${{o##*/}}\" in {hash}|cells) continue ;; \
                 [0-9a-f]*) [ -f \"$o/gatebench\" ] || continue ;; *) continue ;; esac; \
                 if [ -n \"$(find \"$o\" -maxdepth 1 -name '{LEASE_PREFIX}*' -mmin -1440)\" ]; \
                 then continue; fi; busy=; for p in /proc/[0-9]*; do \
                 [ \"$(readlink \"$p/exe\" 2>/dev/null)\" = \"$o/gatebench\" ] && busy=1 && break; \
                 done; [ -n \"$busy\" ] || rm -rf \"$o\"; done",
                d = sh_quote(&dir),
                f = sh_quote(&path),
                c = sh_quote(&h.cache)
            );
            let out = h.run(&copy, Some(&bytes)).map_err(&fail)?;
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
            .map_err(&fail)?;
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
        let (offset, uncertainty, rtts) = h.clock_offset().map_err(&fail)?;
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

    /// The host's address: `ssh -G` gives the `HostName` ssh would connect to (after the user's
    /// configuration), resolved here.
    fn resolve_address(&self) -> Result<IpAddr, RunnerError> {
        let mut c = Command::new("ssh");
        if let Some(f) = &self.ssh_config {
            c.arg("-F").arg(f);
        }
        let out = c
            .arg("-G")
            .arg(&self.destination)
            .stdin(Stdio::null())
            .output()
            .map_err(|error| RunnerError::SshClient {
                what: "cannot run ssh -G",
                error,
            })?;
        let text = String::from_utf8_lossy(&out.stdout);
        let name = text
            .lines()
            .find_map(|l| l.strip_prefix("hostname "))
            .ok_or(RunnerError::SshNoHostName)?
            .trim()
            .to_owned();
        (name.as_str(), 0)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .map(|a| a.ip())
            .ok_or(RunnerError::Resolve { name })
    }

    /// The host's clock minus ours: [`CLOCK_ROUNDS`] round trips over one session of
    /// `gatebench host clock`; the offset is from the shortest round trip, assuming the
    /// host read its clock halfway (so it is known to ± half that round trip; Cristian's
    /// algorithm).
    fn clock_offset(&self) -> Result<(f64, f64, Vec<f64>), RunnerError> {
        let mut c = self.ssh();
        c.arg(format!("{} host clock", sh_quote(&self.exe)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().map_err(|error| RunnerError::SshClient {
            what: "cannot run ssh",
            error,
        })?;
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
        let (rtt, offset) = best.ok_or(RunnerError::HostClock)?;
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
            .map_err(|e| RunnerError::Host {
                host: self.url.clone(),
                message: e.to_string(),
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
