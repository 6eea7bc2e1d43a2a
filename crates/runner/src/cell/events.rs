//! A cell's events, fired during its measurement: each scenario event resolved when the cell
//! starts (its command's placeholders filled, its template rendered, its back-end's process
//! and readiness check found), then fired at its offsets by a thread of its own while the
//! load runs on the cell's thread, and stamped when it fired, with how it went.
//!
//! The rules: the firing thread never touches the load (it only sleeps, signals, runs
//! commands and starts or stops back-ends); every process it starts is in the cell's guard or
//! stopped by its id before it returns (a command still running when the measurement ends is
//! killed with its process group); an event that fails is recorded as failed and the cell
//! goes on. Stamps are Unix microseconds, put on the measurement's clock once the load says
//! when it started ([`stamp`]).

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gatebench_model::{EventRecord, LoadReport};
use rustix::process::{kill_process, kill_process_group, Pid, Signal};

use gatebench_model::CellKind;

use super::process::Common;
use super::remote::Place;
use super::CellRun;
use crate::driver::{Driver, NetDriver, ReadyCheck};
use crate::error::RunnerError;
use crate::launch::{Guard, Launcher, ProcessSpec};
use crate::placeholder;
use crate::suite::{firings, BackendAction, EventAction, EventSpec, Protocol};

/// How long an event's command may run before it is killed.
pub(super) const RUN_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the events' commands write their output, in the cell's directory.
pub(super) const LOG: &str = "events.log";

/// An event made concrete for one cell.
pub(super) enum Resolved {
    /// A signal to the SUT.
    Signal(&'static str),
    /// A shell command line, placeholders filled.
    Run(String),
    /// A back-end: its name, process and readiness check.
    Backend {
        action: BackendAction,
        name: String,
        spec: Box<ProcessSpec>,
        check: ReadyCheck,
    },
    /// A file to write, then maybe a signal.
    Render {
        path: PathBuf,
        text: String,
        signal: Option<&'static str>,
    },
}

/// A cell's events, ready to fire.
pub(super) struct Plan {
    /// `(offset into the measurement, event)`, in time order.
    pub(super) firings: Vec<(Duration, usize)>,
    /// Each event's spec and its concrete form.
    pub(super) events: Vec<(EventSpec, Resolved)>,
    /// The SUT's process id (signals go there).
    pub(super) sut_pid: Option<u32>,
    /// Where commands run.
    pub(super) workdir: PathBuf,
    /// The commands' log.
    pub(super) log: PathBuf,
    /// How long a started back-end may take to be ready.
    pub(super) ready_timeout: Duration,
}

/// One firing, stamped in Unix microseconds.
pub(super) struct Fired {
    pub(super) record: EventRecord,
    pub(super) unix_us: u64,
}

impl Plan {
    /// A plan for `events` over a measurement of `length`.
    pub(super) fn new(
        events: Vec<(EventSpec, Resolved)>,
        length: Duration,
        sut_pid: Option<u32>,
        workdir: PathBuf,
        log: PathBuf,
        ready_timeout: Duration,
    ) -> Plan {
        let specs: Vec<EventSpec> = events.iter().map(|(s, _)| s.clone()).collect();
        Plan {
            firings: firings(&specs, length),
            events,
            sut_pid,
            workdir,
            log,
            ready_timeout,
        }
    }

    /// Whether an event stops or starts a back-end.
    pub(super) fn acts_on_backends(&self) -> bool {
        self.events
            .iter()
            .any(|(_, r)| matches!(r, Resolved::Backend { .. }))
    }

    /// Fires every event at its offset from `zero` (the measurement's planned start), until
    /// `done` says the load ended (a message or its sender dropped).
    pub(super) fn fire_all(
        &self,
        zero: Instant,
        hands: Hands<'_>,
        done: &Receiver<()>,
    ) -> Vec<Fired> {
        let mut out = Vec::with_capacity(self.firings.len());
        for &(offset, i) in &self.firings {
            let wait = (zero + offset).saturating_duration_since(Instant::now());
            match done.recv_timeout(wait) {
                Err(RecvTimeoutError::Timeout) => {}
                _ => break,
            }
            let (spec, resolved) = &self.events[i];
            let unix_us = unix_us_now();
            let fired_at = Instant::now();
            let (action, ok, outcome, ready_ms) = self.fire(resolved, &hands, done, fired_at);
            out.push(Fired {
                unix_us,
                record: EventRecord {
                    name: spec.name.clone(),
                    kind: spec.action.kind().to_owned(),
                    action,
                    planned_s: offset.as_secs_f64(),
                    at_s: 0.0,
                    ok,
                    outcome,
                    ready_ms,
                    cost: None,
                },
            });
        }
        out
    }

    /// Fires one event: `(what was done, it went well, how, ready after ms)`.
    fn fire(
        &self,
        r: &Resolved,
        hands: &Hands<'_>,
        done: &Receiver<()>,
        fired_at: Instant,
    ) -> (String, bool, String, Option<f64>) {
        match r {
            Resolved::Signal(sig) => {
                let (ok, how) = self.signal(sig);
                (format!("SIG{sig} to the SUT"), ok, how, None)
            }
            Resolved::Run(cmd) => {
                let (ok, how) = self.run(cmd, done);
                (cmd.clone(), ok, how, None)
            }
            Resolved::Render { path, text, signal } => {
                let file = path.file_name().map_or_else(
                    || path.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                );
                if let Err(e) = std::fs::write(path, text) {
                    return (
                        format!("render {file}"),
                        false,
                        format!("cannot write: {e}"),
                        None,
                    );
                }
                match signal {
                    None => (format!("render {file}"), true, "written".into(), None),
                    Some(sig) => {
                        let (ok, how) = self.signal(sig);
                        (format!("render {file}, SIG{sig} to the SUT"), ok, how, None)
                    }
                }
            }
            Resolved::Backend {
                action,
                name,
                spec,
                check,
            } => {
                let what = format!("{} {name}", action.name());
                let (ok, how, ready) = backend(
                    *action,
                    name,
                    spec,
                    check,
                    hands,
                    self.ready_timeout,
                    fired_at,
                );
                (what, ok, how, ready)
            }
        }
    }

    fn signal(&self, sig: &str) -> (bool, String) {
        let Some(pid) = self.sut_pid.and_then(|p| Pid::from_raw(p as i32)) else {
            return (false, "no SUT process".into());
        };
        match kill_process(pid, signal_of(sig)) {
            Ok(()) => (true, format!("delivered to pid {}", pid.as_raw_nonzero())),
            Err(e) => (
                false,
                format!("not delivered to pid {}: {e}", pid.as_raw_nonzero()),
            ),
        }
    }

    /// Runs `cmd` with `sh -c` in its own process group, to its end, [`RUN_TIMEOUT`] or the
    /// load's end, whichever comes first (then the group is killed).
    fn run(&self, cmd: &str, done: &Receiver<()>) -> (bool, String) {
        let log = match File::options().create(true).append(true).open(&self.log) {
            Ok(f) => f,
            Err(e) => return (false, format!("cannot open {}: {e}", self.log.display())),
        };
        let (out, err) = match (log.try_clone(), log.try_clone()) {
            (Ok(a), Ok(b)) => (a, b),
            _ => return (false, "cannot share the log".into()),
        };
        let started = Instant::now();
        let child = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .current_dir(&self.workdir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => return (false, format!("cannot start sh: {e}")),
        };
        let ended = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) => {}
                Err(_) => break None,
            }
            if started.elapsed() >= RUN_TIMEOUT {
                break None;
            }
            match done.recv_timeout(Duration::from_millis(5)) {
                Err(RecvTimeoutError::Timeout) => {}
                _ => break None,
            }
        };
        if let Some(status) = ended {
            let ms = started.elapsed().as_secs_f64() * 1e3;
            return match status.code() {
                Some(0) => (true, format!("exit status 0 after {ms:.0} ms")),
                Some(c) => (false, format!("exit status {c} after {ms:.0} ms")),
                None => (false, format!("ended by a signal after {ms:.0} ms")),
            };
        }
        // Still running: its group goes, by the id we started it with.
        if let Some(pid) = Pid::from_raw(child.id() as i32) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
        let _ = child.wait();
        (
            false,
            format!(
                "killed after {:.1} s: still running at the timeout or the measurement's end",
                started.elapsed().as_secs_f64()
            ),
        )
    }
}

/// What the scenario's events need of the cell that was started.
pub(super) struct CellSide<'c> {
    pub(super) common: &'c Common<'c>,
    /// The target's port, protocol and place: what `{port}` and friends stand for.
    pub(super) port: u16,
    pub(super) protocol: Protocol,
    pub(super) place: &'c Place,
    /// Every back-end: name, process, readiness check.
    pub(super) backends: &'c [(String, ProcessSpec, ReadyCheck)],
    pub(super) sut_pid: Option<u32>,
}

/// The scenario's events made concrete for this cell (a load cell with events), or `None`.
pub(super) fn resolve(
    run: &CellRun<'_, '_>,
    side: CellSide<'_>,
) -> Result<Option<Plan>, RunnerError> {
    let sc = run.sc;
    if sc.events.is_empty() || run.cell.kind != CellKind::Load {
        return Ok(None);
    }
    let mut events = Vec::with_capacity(sc.events.len());
    for e in &sc.events {
        let err = |source: RunnerError| RunnerError::Command {
            name: format!("event \"{}\"", e.name),
            source: Box::new(source),
        };
        let resolved = match &e.action {
            EventAction::Signal(s) => Resolved::Signal(s),
            EventAction::Run(cmd) => {
                let pid = side.sut_pid.map(|p| p.to_string()).unwrap_or_default();
                let cmd = cmd.replace("{sut_pid}", &pid);
                Resolved::Run(
                    side.common
                        .expand_command(&cmd, Some(side.port), side.protocol, side.place)
                        .map_err(err)?,
                )
            }
            EventAction::Backend { index, action } => {
                let (name, spec, check) = side
                    .backends
                    .get(*index as usize - 1)
                    .cloned()
                    .expect("the back-end's number was checked with the suite");
                Resolved::Backend {
                    action: *action,
                    name,
                    spec: Box::new(spec),
                    check,
                }
            }
            EventAction::Render {
                template,
                set,
                to,
                signal,
            } => {
                let src = sc.workdir.join(template);
                let mut text = std::fs::read_to_string(&src)
                    .map_err(|e| err(RunnerError::io("read template", &src, e)))?;
                for (k, v) in set {
                    text = text.replace(&format!("{{{k}}}"), v);
                }
                let values = side
                    .common
                    .values(Some(side.port), side.protocol, side.place);
                let text =
                    placeholder::expand_lenient_lists(&text, &values, &side.common.backend_items());
                let name = match to {
                    Some(to) => std::ffi::OsStr::new(to.as_str()),
                    None => template.file_name().unwrap_or(template.as_os_str()),
                };
                Resolved::Render {
                    path: run.ctx.cell_dir.join(name),
                    text,
                    signal: *signal,
                }
            }
        };
        events.push((e.clone(), resolved));
    }
    let suite = run.ctx.suite;
    Ok(Some(Plan::new(
        events,
        suite.duration,
        side.sut_pid,
        sc.workdir.clone(),
        run.ctx.cell_dir.join(LOG),
        suite.ready_timeout,
    )))
}

/// What the firing thread acts through: the cell's guard (shared with the cell's thread for
/// the load's length), the launcher, and Ctrl-C.
pub(super) struct Hands<'h> {
    pub(super) guard: &'h Mutex<Guard>,
    pub(super) launcher: Mutex<&'h mut dyn Launcher>,
    pub(super) stop: &'h AtomicBool,
}

/// A back-end action: `(it went well, how, ready after ms)`.
fn backend(
    action: BackendAction,
    name: &str,
    spec: &ProcessSpec,
    check: &ReadyCheck,
    hands: &Hands<'_>,
    ready_timeout: Duration,
    fired_at: Instant,
) -> (bool, String, Option<f64>) {
    let lock = || hands.guard.lock().unwrap_or_else(|e| e.into_inner());
    let mut stopped = None;
    if matches!(
        action,
        BackendAction::Stop | BackendAction::Kill | BackendAction::Restart
    ) {
        let kill = action == BackendAction::Kill;
        match lock().stop_one(name, kill) {
            Some(how) => stopped = Some(how),
            None => return (false, format!("{name} was not running"), None),
        }
        if action != BackendAction::Restart {
            return (true, stopped.unwrap_or_default(), None);
        }
    }
    if action == BackendAction::Start && lock().get_mut(name).is_some() {
        return (false, format!("{name} was already running"), None);
    }
    let launched = {
        let mut l = hands.launcher.lock().unwrap_or_else(|e| e.into_inner());
        l.launch(spec)
    };
    let p = match launched {
        Ok(p) => p,
        Err(e) => return (false, format!("cannot start {name}: {}", e.chain()), None),
    };
    lock().push(name, p);
    let prefix = stopped.map(|s| format!("{s}; ")).unwrap_or_default();
    let deadline = Instant::now() + ready_timeout;
    let mut driver = NetDriver;
    loop {
        if let Some(how) = lock().get_mut(name).and_then(|p| p.exited()) {
            return (false, format!("{prefix}started, then {how}"), None);
        }
        if driver.check_ready(check).is_ok() {
            let ms = fired_at.elapsed().as_secs_f64() * 1e3;
            return (true, format!("{prefix}ready after {ms:.0} ms"), Some(ms));
        }
        if Instant::now() >= deadline || hands.stop.load(Ordering::Relaxed) {
            return (false, format!("{prefix}started, not ready in time"), None);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn signal_of(name: &str) -> Signal {
    match name {
        "HUP" => Signal::HUP,
        "INT" => Signal::INT,
        "QUIT" => Signal::QUIT,
        "USR1" => Signal::USR1,
        "USR2" => Signal::USR2,
        "KILL" => Signal::KILL,
        "WINCH" => Signal::WINCH,
        "CONT" => Signal::CONT,
        _ => Signal::TERM,
    }
}

fn unix_us_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// The firings' records on the measurement's clock: seconds since it started (the load's
/// start plus its warm-up), to the millisecond.
pub(super) fn stamp(fired: Vec<Fired>, report: &LoadReport) -> Vec<EventRecord> {
    let start_us = if report.started_at_unix_us > 0 {
        report.started_at_unix_us
    } else {
        report.started_at_unix_ms * 1000
    } as f64
        + report.config.warmup_s * 1e6;
    fired
        .into_iter()
        .map(|f| {
            let mut r = f.record;
            r.at_s = ((f.unix_us as f64 - start_us) / 1e3).round() / 1e3;
            r
        })
        .collect()
}
