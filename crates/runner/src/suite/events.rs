//! A scenario's events (`[[scenario.event]]`): what happens to the system under test or its
//! back-ends at set offsets into each cell's measurement — a signal, a command, a back-end
//! stopped, killed or started, a template rendered again — and the way back to TOML.
//!
//! The rule: every event is checked before anything runs, each wrong one with one line naming
//! the scenario and the event (two actions in one event, an unknown back-end or signal, an
//! unknown placeholder, a template that cannot be read); the offsets are checked against the
//! measurement once the command line's changes are in ([`super::Suite::check_events`]).
//! Firing them is [`crate::cell`]'s business.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gatebench_loadgen::bounds::parse_duration;

use super::raw::{RawEvent, RawRender};
use crate::error::RunnerError;
use crate::placeholder;

/// An event's window when it gives none: the figures of a firing are taken from it until the
/// next firing or this long after it, whichever comes first.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(5);

/// The shortest `every`: a load's seconds cannot tell apart firings closer than this.
pub const MIN_EVERY: Duration = Duration::from_millis(100);

/// Most firings of one cell's events.
pub const MAX_FIRINGS: usize = 10_000;

/// Signals an event may send, by the names `kill -l` gives them.
pub const SIGNALS: [&str; 9] = [
    "HUP", "INT", "QUIT", "USR1", "USR2", "TERM", "KILL", "WINCH", "CONT",
];

/// One event of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct EventSpec {
    /// Its name in tables (`reload`).
    pub name: String,
    /// Its first firing, from the measurement's start.
    pub at: Duration,
    /// Fired again this often until the measurement ends.
    pub every: Option<Duration>,
    /// How long after a firing its figures are taken at most.
    pub window: Duration,
    /// What it does.
    pub action: EventAction,
}

/// What an event does.
#[derive(Clone, Debug, PartialEq)]
pub enum EventAction {
    /// A signal to the system under test, by its process id (`HUP`).
    Signal(&'static str),
    /// A shell command run to its end (`nginx -s reload …`), with the SUT's placeholders and
    /// `{sut_pid}`.
    Run(String),
    /// Back-end `index` (from 1) stopped, killed, started or restarted.
    Backend {
        /// Which, from 1.
        index: u32,
        /// What is done to it.
        action: BackendAction,
    },
    /// A template rendered again into the cell's directory with other values, then
    /// optionally a signal to the SUT.
    Render {
        /// The template, relative to the scenario's workdir.
        template: PathBuf,
        /// Values for `{key}` besides the usual placeholders.
        set: BTreeMap<String, String>,
        /// The file name written in the cell's directory (the template's own when `None`).
        to: Option<String>,
        /// Sent to the SUT once the file is written.
        signal: Option<&'static str>,
    },
}

impl EventAction {
    /// `signal`, `run`, `backend` or `render`.
    pub fn kind(&self) -> &'static str {
        match self {
            EventAction::Signal(_) => "signal",
            EventAction::Run(_) => "run",
            EventAction::Backend { .. } => "backend",
            EventAction::Render { .. } => "render",
        }
    }
}

/// What an event does to a back-end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendAction {
    /// SIGTERM, then SIGKILL after the grace time.
    Stop,
    /// SIGKILL at once.
    Kill,
    /// Started again as the cell started it (after a stop or a kill).
    Start,
    /// Stopped, then started.
    Restart,
}

impl BackendAction {
    /// The name in suite files.
    pub fn name(self) -> &'static str {
        match self {
            BackendAction::Stop => "stop",
            BackendAction::Kill => "kill",
            BackendAction::Start => "start",
            BackendAction::Restart => "restart",
        }
    }

    fn parse(s: &str) -> Option<BackendAction> {
        [
            BackendAction::Stop,
            BackendAction::Kill,
            BackendAction::Start,
            BackendAction::Restart,
        ]
        .into_iter()
        .find(|a| a.name() == s)
    }
}

/// A wrong value of a scenario's event.
fn bad(scenario: &str, event: &str, problem: impl Into<String>) -> RunnerError {
    RunnerError::SuiteValue {
        key: format!("scenario \"{scenario}\": event \"{event}\""),
        problem: problem.into(),
    }
}

fn signal(name: &str) -> Option<&'static str> {
    let n = name.trim().trim_start_matches("SIG");
    SIGNALS.iter().copied().find(|s| s.eq_ignore_ascii_case(n))
}

/// What a scenario offers its events.
pub(super) struct EventContext<'a> {
    pub(super) scenario: &'a str,
    pub(super) workdir: &'a Path,
    /// Back-ends the scenario starts.
    pub(super) backends: u32,
    /// It has a system under test.
    pub(super) has_sut: bool,
}

/// Checks a scenario's events.
pub(super) fn validate_events(
    raw: Vec<RawEvent>,
    cx: &EventContext<'_>,
) -> Result<Vec<EventSpec>, RunnerError> {
    let mut out: Vec<EventSpec> = Vec::with_capacity(raw.len());
    for (i, r) in raw.into_iter().enumerate() {
        let e = validate_event(i, r, cx)?;
        if out.iter().any(|o| o.name == e.name) {
            return Err(bad(cx.scenario, &e.name, "the name is used twice"));
        }
        out.push(e);
    }
    Ok(out)
}

fn validate_event(
    index: usize,
    r: RawEvent,
    cx: &EventContext<'_>,
) -> Result<EventSpec, RunnerError> {
    let name = r
        .name
        .clone()
        .unwrap_or_else(|| format!("event-{}", index + 1));
    if name.trim().is_empty() || name.contains(['\n', '|']) {
        return Err(bad(
            cx.scenario,
            &name,
            "name must be a non-empty word without | or newlines",
        ));
    }
    let err = |p: String| bad(cx.scenario, &name, p);
    let dur = |key: &str, v: &Option<String>| -> Result<Option<Duration>, RunnerError> {
        v.as_deref()
            .map(|v| parse_duration(v).map_err(|e| err(format!("{key}: {e}"))))
            .transpose()
    };
    let at = dur("at", &r.at)?.ok_or_else(|| {
        err("at is missing (the offset into the measurement, e.g. at = \"20s\")".into())
    })?;
    let every = dur("every", &r.every)?;
    if let Some(e) = every {
        if e < MIN_EVERY {
            return Err(err(format!(
                "every: must be at least {}",
                humantime::format_duration(MIN_EVERY)
            )));
        }
    }
    let window = dur("window", &r.window)?.unwrap_or(DEFAULT_WINDOW);
    if window.is_zero() {
        return Err(err("window: must be more than 0".into()));
    }
    let action = action(&r, cx, &err)?;
    Ok(EventSpec {
        name,
        at,
        every,
        window,
        action,
    })
}

/// The one action of an event.
fn action(
    r: &RawEvent,
    cx: &EventContext<'_>,
    err: &dyn Fn(String) -> RunnerError,
) -> Result<EventAction, RunnerError> {
    let given: Vec<&str> = [
        ("run", r.run.is_some()),
        ("backend", r.backend.is_some() || r.action.is_some()),
        ("render", r.render.is_some()),
        ("signal", r.signal.is_some() && r.render.is_none()),
    ]
    .into_iter()
    .filter_map(|(k, on)| on.then_some(k))
    .collect();
    match given.len() {
        0 => {
            return Err(err(
                "needs one action: signal, run, backend with action, or render".into(),
            ))
        }
        1 => {}
        _ => {
            return Err(err(format!(
                "gives {}: one action per event (render may be followed by a signal)",
                given.join(" and ")
            )))
        }
    }
    let sig = |s: &str| {
        if !cx.has_sut {
            return Err(err("signal: the scenario has no sut to signal".into()));
        }
        signal(s).ok_or_else(|| {
            err(format!(
                "signal: \"{s}\" is not a signal (use one of {})",
                SIGNALS.join(", ")
            ))
        })
    };
    if let Some(c) = &r.run {
        if c.trim().is_empty() {
            return Err(err("run is empty".into()));
        }
        placeholder::expand_strict(c, &|n| {
            (placeholder::is_known(n) || n == "sut_pid").then(String::new)
        })
        .map_err(|e| err(format!("run: {e}")))?;
        return Ok(EventAction::Run(c.clone()));
    }
    if let Some(render) = &r.render {
        return validate_render(render, cx, r.signal.as_deref().map(sig).transpose()?, err);
    }
    if r.backend.is_some() || r.action.is_some() {
        let (Some(index), Some(action)) = (r.backend, r.action.as_deref()) else {
            return Err(err(
                "a back-end event needs both backend (its number, from 1) and action \
                 (stop, kill, start or restart)"
                    .into(),
            ));
        };
        if index == 0 || index > cx.backends {
            return Err(err(format!(
                "backend: no back-end {index} (the scenario starts {}{})",
                cx.backends,
                if cx.backends == 1 {
                    " back-end"
                } else {
                    " back-ends, numbered from 1"
                }
            )));
        }
        let action = BackendAction::parse(action).ok_or_else(|| {
            err(format!(
                "action: \"{action}\" is not a back-end action (stop, kill, start or restart)"
            ))
        })?;
        return Ok(EventAction::Backend { index, action });
    }
    let s = r.signal.as_deref().expect("one action was given");
    Ok(EventAction::Signal(sig(s)?))
}

fn validate_render(
    render: &RawRender,
    cx: &EventContext<'_>,
    signal: Option<&'static str>,
    err: &dyn Fn(String) -> RunnerError,
) -> Result<EventAction, RunnerError> {
    if render.template.trim().is_empty() {
        return Err(err("render: template is empty".into()));
    }
    let template = PathBuf::from(&render.template);
    let src = cx.workdir.join(&template);
    std::fs::read_to_string(&src)
        .map_err(|e| err(format!("render: cannot read {}: {e}", src.display())))?;
    let set = render.set.clone().unwrap_or_default();
    for k in set.keys() {
        let word = !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !word {
            return Err(err(format!(
                "render: set key \"{k}\" must be letters, digits and _"
            )));
        }
    }
    let to = match render.to.as_deref() {
        None => None,
        Some(t) => {
            let plain = !t.is_empty() && t != "." && t != ".." && !t.contains(['/', '\\', '\0']);
            if !plain {
                return Err(err(format!(
                    "render: to = \"{t}\" must be a file name in the cell's directory, without /"
                )));
            }
            Some(t.to_owned())
        }
    };
    Ok(EventAction::Render {
        template,
        set,
        to,
        signal,
    })
}

/// Every firing of `events` in a measurement of `length`: `(offset, event index)` in time
/// order.
pub fn firings(events: &[EventSpec], length: Duration) -> Vec<(Duration, usize)> {
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let mut t = e.at;
        while t < length && out.len() < MAX_FIRINGS {
            out.push((t, i));
            match e.every {
                Some(every) => t += every,
                None => break,
            }
        }
    }
    out.sort_by_key(|(t, i)| (*t, *i));
    out
}

/// The raw form of `e`, for the resolved suite.
pub(super) fn raw_event(e: &EventSpec) -> RawEvent {
    let fmt = |d: Duration| humantime::format_duration(d).to_string();
    let mut r = RawEvent {
        name: Some(e.name.clone()),
        at: Some(fmt(e.at)),
        every: e.every.map(fmt),
        window: (e.window != DEFAULT_WINDOW).then(|| fmt(e.window)),
        ..RawEvent::default()
    };
    match &e.action {
        EventAction::Signal(s) => r.signal = Some((*s).to_owned()),
        EventAction::Run(c) => r.run = Some(c.clone()),
        EventAction::Backend { index, action } => {
            r.backend = Some(*index);
            r.action = Some(action.name().to_owned());
        }
        EventAction::Render {
            template,
            set,
            to,
            signal,
        } => {
            r.render = Some(RawRender {
                template: template.display().to_string(),
                set: (!set.is_empty()).then(|| set.clone()),
                to: to.clone(),
            });
            r.signal = signal.map(str::to_owned);
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(at: u64, every: Option<u64>) -> EventSpec {
        EventSpec {
            name: "e".into(),
            at: Duration::from_secs(at),
            every: every.map(Duration::from_secs),
            window: DEFAULT_WINDOW,
            action: EventAction::Signal("HUP"),
        }
    }

    #[test]
    fn repeated_events_fire_until_the_measurement_ends() {
        let f = firings(&[spec(2, Some(3)), spec(4, None)], Duration::from_secs(10));
        let at: Vec<(u64, usize)> = f.iter().map(|(t, i)| (t.as_secs(), *i)).collect();
        assert_eq!(at, vec![(2, 0), (4, 1), (5, 0), (8, 0)]);
        assert!(firings(&[spec(10, None)], Duration::from_secs(10)).is_empty());
    }

    #[test]
    fn signal_names_are_read_with_or_without_sig() {
        assert_eq!(signal("SIGHUP"), Some("HUP"));
        assert_eq!(signal("usr2"), Some("USR2"));
        assert_eq!(signal("HUPP"), None);
    }
}
