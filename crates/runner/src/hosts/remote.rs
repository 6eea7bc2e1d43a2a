//! What gatebench does on a remote host during a cell: its directory and free ports there, a
//! scenario's setup command there, long-running processes started in their own session and
//! stopped by PID ([`RemoteProcess`]), and the SUT's sampling there ([`RemoteSampler`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::ssh::{die_with_parent, sh_quote, ssh_failure, SshHost, CONNECT_TIMEOUT_S};
use crate::error::RunnerError;
use crate::launch::{Running, STOP_GRACE};
use crate::sampler::Sample;

/// A shell command that prints the start time of the process `pid` (a shell word: `$$`,
/// `$P`): field 22 of `/proc/PID/stat`, counted after the command name, which may hold spaces;
/// nothing when there is no such process.
fn start_time_of(pid: &str) -> String {
    format!("sed 's/.*) //' /proc/{pid}/stat 2>/dev/null | cut -d' ' -f20")
}

/// Processes started on remote hosts and not yet stopped, plus stops in progress, in any
/// thread.
static STOPPING: AtomicUsize = AtomicUsize::new(0);

/// Whether processes this gatebench started on other hosts still run (or are being stopped)
/// right now. gatebench's Ctrl-C handler reads it (async-signal-safe: one atomic load): a
/// second Ctrl-C normally ends gatebench at once, but not while that would leave processes
/// running on other hosts; the first Ctrl-C already winds the run down and stops them. (Only
/// the stop itself counted once, and a second Ctrl-C that came while the interrupted load was
/// still finishing, before the stops began, left the back-ends running on their hosts.)
pub fn stopping_remote() -> bool {
    STOPPING.load(Ordering::SeqCst) > 0
}

/// Open while a remote process runs or a remote stop is in progress ([`stopping_remote`]).
#[derive(Debug)]
struct StopWindow;

impl StopWindow {
    fn open() -> StopWindow {
        STOPPING.fetch_add(1, Ordering::SeqCst);
        StopWindow
    }
}

impl Drop for StopWindow {
    fn drop(&mut self) {
        STOPPING.fetch_sub(1, Ordering::SeqCst);
    }
}

impl SshHost {
    /// `n` ports free on the host, and the host's directory for cell `id` (created).
    pub fn cell_setup(&self, id: &str, n: usize) -> Result<(String, Vec<u16>), RunnerError> {
        let dir = format!("{}/cells/{}-{id}", self.cache, std::process::id());
        // The run's lease on its build is renewed with every cell.
        let renew = self
            .lease
            .as_deref()
            .map(|l| format!("touch {} && ", sh_quote(l)))
            .unwrap_or_default();
        let out = self.run(
            &format!(
                "{renew}mkdir -p {d} && {exe} host ports --count {n}",
                d = sh_quote(&dir),
                exe = sh_quote(&self.exe)
            ),
            None,
        )?;
        if !out.status.success() {
            return Err(RunnerError::Remote {
                reason: ssh_failure(&out),
            });
        }
        let ports = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(|p| p.parse::<u16>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| RunnerError::HostPorts {
                asked: n,
                got: None,
            })?;
        if ports.len() != n {
            return Err(RunnerError::HostPorts {
                asked: n,
                got: Some(ports.len()),
            });
        }
        Ok((dir, ports))
    }

    /// Removes the host's directory for cell `id` ([`SshHost::cell_setup`]) once the cell is
    /// over and its files came back: a long suite leaves nothing to fill the host's disk.
    pub fn cell_cleanup(&self, id: &str) {
        let dir = format!("{}/cells/{}-{id}", self.cache, std::process::id());
        let _ = self.run(&format!("rm -rf {}", sh_quote(&dir)), None);
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
            .map_err(|e| RunnerError::Host {
                host: self.url.clone(),
                message: e.to_string(),
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
        // its own process group: the group is what stop signals. Its start time (in clock
        // ticks since boot, `/proc/PID/stat`'s 22nd field; `exec` keeps it) tells at stop time
        // whether that PID is still the same process.
        let script = format!(
            "cd {} && echo $$ $({}) && exec {}",
            sh_quote(dir),
            start_time_of("$$"),
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
                let mut words = first.split_whitespace();
                let pid = words.next().and_then(|w| w.parse::<u32>().ok());
                let start = words.next().unwrap_or("").to_owned();
                let _ = tx.send(pid.map(|p| (p, start)));
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
        let (pid, start_time) = match rx.recv_timeout(wait) {
            Ok(Some(started)) => started,
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
            start_time,
            child,
            copier: Some(copier),
            stopped: None,
            _alive: StopWindow::open(),
        })
    }

    /// Stops process group `pgid` on the host: SIGTERM, up to [`STOP_GRACE`] for every member
    /// to exit, then SIGKILL. Says how it ended.
    ///
    /// The group is signalled only while its leader is the process that was started: the PID
    /// exists with the start time `start_time` it had then (a zombie not yet reaped counts;
    /// it still holds the group's id). When the leader is gone its PID, and so the group id,
    /// may belong to someone else's processes by now: nothing is signalled, and what is left
    /// of the group, if anything, is named in the answer.
    pub fn stop_group(&self, pgid: u32, start_time: &str) -> String {
        let tries = STOP_GRACE.as_millis() / 100;
        let script = format!(
            "P={pgid}; if [ \"$({st})\" != {t} ]; then \
             L=$(pgrep -g $P 2>/dev/null | tr '\\n' ' '); echo \"gone $L\"; exit 0; fi; \
             kill -TERM -- -$P 2>/dev/null || {{ echo gone; exit 0; }}; i=0; \
             while kill -0 -- -$P 2>/dev/null; do i=$((i+1)); if [ $i -ge {tries} ]; then \
             kill -KILL -- -$P 2>/dev/null; echo killed; exit 0; fi; sleep 0.1; done; echo terminated",
            st = start_time_of("$P"),
            t = sh_quote(start_time)
        );
        // A second Ctrl-C while this runs does not end gatebench ([`stopping_remote`]).
        let _window = StopWindow::open();
        match self.run(&script, None) {
            Ok(out) if out.status.success() => {
                let said = String::from_utf8_lossy(&out.stdout);
                match said.trim() {
                    "killed" => format!("killed after {}s", STOP_GRACE.as_secs()),
                    "gone" => "had exited".to_owned(),
                    left if left.starts_with("gone ") => format!(
                        "had exited; its group was not signalled (the leader is gone), and \
                         these processes of it are left on {}: {}",
                        self.url,
                        left["gone ".len()..].trim()
                    ),
                    _ => "terminated".to_owned(),
                }
            }
            Ok(out) => format!(
                "not stopped on {} (PID {pgid}): {}",
                self.url,
                ssh_failure(&out)
            ),
            Err(e) => format!("not stopped on {} (PID {pgid}): {e}", self.url),
        }
    }
}

/// A process started on a remote host by [`SshHost::spawn`].
#[derive(Debug)]
pub struct RemoteProcess {
    host: Arc<SshHost>,
    pid: u32,
    /// Its start time on the host (`/proc/PID/stat`), to know the PID still names it.
    start_time: String,
    /// The local ssh client carrying its output; it exits when the remote process does.
    child: Child,
    copier: Option<JoinHandle<()>>,
    stopped: Option<String>,
    /// Held from its start until it is stopped ([`stopping_remote`]).
    _alive: StopWindow,
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

    /// Asks it to stop as Ctrl-C would: SIGINT to its PID, while that PID is still the process
    /// that was started (a load then ends early and still prints what it measured).
    pub fn interrupt(&self) {
        let script = format!(
            "P={}; if [ \"$({})\" = {} ]; then kill -INT $P 2>/dev/null; fi; true",
            self.pid,
            start_time_of("$P"),
            sh_quote(&self.start_time)
        );
        let _ = self.host.run(&script, None);
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
        let how = self.host.stop_group(self.pid, &self.start_time);
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
/// arrives, and told to the tap (live metrics) at once.
#[derive(Debug)]
pub struct RemoteSampler {
    process: RemoteProcess,
    samples: Arc<Mutex<Vec<Sample>>>,
    reader: Option<JoinHandle<()>>,
}

impl RemoteSampler {
    /// Starts sampling process group `pgid` on `host`; times are relative to `origin`; `tap`
    /// is told of each sample as it arrives.
    pub fn start(
        host: &Arc<SshHost>,
        pgid: u32,
        origin: Instant,
        period: Duration,
        dir: &str,
        tap: Option<crate::sampler::Tap>,
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
                        if let Some(tap) = &tap {
                            tap(&s);
                        }
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
        "cd {} && echo $$ $({}) && exec {}",
        sh_quote(dir),
        start_time_of("$$"),
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
    let mut words = first.split_whitespace();
    let start_time = words.clone().nth(1).unwrap_or("").to_owned();
    let Some(Ok(pid)) = words.next().map(str::parse::<u32>) else {
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
            start_time,
            child,
            copier: None,
            stopped: None,
            _alive: StopWindow::open(),
        },
        rx,
    ))
}

fn last_line(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_owned)
}
