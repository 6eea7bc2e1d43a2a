//! Validation of the raw suite ([`super::raw`]) into real types, one clear error naming the key
//! when something is wrong, and the way back (a validated suite as raw TOML, for the resolved
//! `suite.toml` of a run). [`super::Suite::from_toml`] drives it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use gatebench_loadgen::arrival::{RateProgram, Spacing};
use gatebench_loadgen::bounds::{self, parse_duration};
use gatebench_loadgen::threshold::{Threshold, MAX_THRESHOLDS};

use super::events::{validate_events, EventContext};
use super::raw::{RawLoad, RawMatrix, RawProcess, RawRate, RawScenario};
use super::{
    GcLog, Intensity, LoadSettings, Matrix, ProcessTemplate, Program, Protocol, Scenario,
    MAX_BACKENDS,
};
use crate::error::RunnerError;
use crate::gc::GcFormat;
use crate::placeholder;

pub(super) fn names(ps: &[Protocol]) -> Vec<String> {
    ps.iter().map(|p| p.name().to_owned()).collect()
}

pub(super) fn split_intensities(v: &[Intensity]) -> (Option<Vec<u32>>, Option<Vec<RawRate>>) {
    let users: Vec<u32> = v
        .iter()
        .filter_map(|i| match i {
            Intensity::Users(u) => Some(*u),
            _ => None,
        })
        .collect();
    let rates: Vec<RawRate> = v
        .iter()
        .filter_map(|i| match i {
            Intensity::Rate(r) => Some(RawRate::Number(*r)),
            Intensity::Program(p) => Some(RawRate::Program(p.to_string())),
            Intensity::Users(_) => None,
        })
        .collect();
    (
        (!users.is_empty()).then_some(users),
        (!rates.is_empty()).then_some(rates),
    )
}

pub(super) fn raw_process(p: &ProcessTemplate) -> RawProcess {
    let (serve, command) = match &p.program {
        Program::Serve(s) => (Some(s.clone()), None),
        Program::Command(c) => (None, Some(c.clone())),
    };
    RawProcess {
        serve,
        command,
        count: Some(p.count),
        protocol: p.protocol.map(|p| p.name().to_owned()),
        ready: p.ready.clone(),
        port: p.port,
    }
}

/// A wrong value at `key` (`[load] timeout`, `scenario "a": backend`); the caller adds the
/// suite file's name ([`RunnerError::Suite`]).
fn bad(key: impl Into<String>, problem: impl Into<String>) -> RunnerError {
    RunnerError::SuiteValue {
        key: key.into(),
        problem: problem.into(),
    }
}

pub(super) fn validate_load(l: RawLoad) -> Result<LoadSettings, RunnerError> {
    let dur = |key: &str, v: &Option<String>, default: Duration| -> Result<Duration, RunnerError> {
        let d = v
            .as_deref()
            .map(|v| parse_duration(v).map_err(|e| bad(format!("[load] {key}"), e.to_string())))
            .unwrap_or(Ok(default))?;
        if d.is_zero() {
            return Err(bad(format!("[load] {key}"), "must be more than 0"));
        }
        Ok(d)
    };
    let method = l.method.unwrap_or_else(|| "POST".to_owned());
    check_method("[load] method", &method)?;
    let path = l.path.unwrap_or_else(|| "/".to_owned());
    check_path("[load] path", &path)?;
    let headers = l.headers.unwrap_or_default();
    for h in &headers {
        if !h.contains(':') {
            return Err(bad(
                "[load] headers",
                format!("\"{h}\" is not a header line (write \"Name: value\")"),
            ));
        }
    }
    let connections = l.connections.unwrap_or(100);
    bounds::check_count(u64::from(connections), u64::from(bounds::MAX_CONNECTIONS))
        .map_err(|r| bad("[load] connections", r))?;
    if let Some(t) = l.threads {
        bounds::check_count(u64::from(t), u64::from(bounds::MAX_THREADS))
            .map_err(|r| bad("[load] threads", r))?;
    }
    let thresholds = parse_thresholds("[load] thresholds", l.thresholds.as_deref())?;
    Ok(LoadSettings {
        method,
        path,
        headers,
        thresholds,
        connections,
        threads: l.threads,
        timeout: dur("timeout", &l.timeout, Duration::from_secs(10))?,
        connect_timeout: dur(
            "connect_timeout",
            &l.connect_timeout,
            Duration::from_secs(3),
        )?,
        keepalive: l.keepalive.unwrap_or(true),
        spacing: match (l.arrival.as_deref(), l.seed) {
            (None | Some("even"), None) => Spacing::Even,
            (None | Some("even"), Some(_)) => {
                return Err(bad(
                    "[load] seed",
                    "only Poisson arrivals have a seed (arrival = \"poisson\")",
                ))
            }
            // A fixed default keeps a suite reproducible; the resolved suite.toml records it.
            (Some("poisson"), seed) => Spacing::Poisson {
                seed: seed.unwrap_or(DEFAULT_SEED),
            },
            (Some(other), _) => {
                return Err(bad(
                    "[load] arrival",
                    format!("\"{other}\" is not a spacing (\"even\" or \"poisson\")"),
                ))
            }
        },
    })
}

/// Parses a list of thresholds (`gatebench load --threshold`'s form), naming `key` and the
/// threshold when one is wrong.
fn parse_thresholds(key: &str, v: Option<&[String]>) -> Result<Vec<Threshold>, RunnerError> {
    let v = v.unwrap_or_default();
    if v.len() > MAX_THRESHOLDS {
        return Err(bad(
            key,
            format!("{} thresholds; at most {MAX_THRESHOLDS}", v.len()),
        ));
    }
    v.iter()
        .map(|t| t.parse::<Threshold>().map_err(|e| bad(key, e.to_string())))
        .collect()
}

/// The seed of Poisson arrivals when `[load]` gives none.
pub(super) const DEFAULT_SEED: u64 = 1;

fn check_method(key: &str, method: &str) -> Result<(), RunnerError> {
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(bad(
            key,
            format!("\"{method}\" is not an HTTP method such as POST or GET"),
        ));
    }
    Ok(())
}

fn check_path(key: &str, path: &str) -> Result<(), RunnerError> {
    if !path.starts_with('/') || path.contains(char::is_whitespace) {
        return Err(bad(
            key,
            format!("\"{path}\" must start with / and contain no spaces"),
        ));
    }
    Ok(())
}

pub(crate) fn validate_matrix(m: RawMatrix) -> Result<Matrix, RunnerError> {
    // Both axes may be given: the closed model's cells (users) then the open model's (rates),
    // as seed 002 runs every server under wrk's and wrk2's models.
    let mut intensities = Vec::new();
    if let Some(u) = m.users {
        nonempty("[matrix] users", &u)?;
        if let Some(wrong) = u.iter().find(|&&u| u == 0 || u > bounds::MAX_CONNECTIONS) {
            return Err(bad(
                "[matrix] users",
                format!(
                    "every value must be from 1 to {}, got {wrong}",
                    bounds::MAX_CONNECTIONS
                ),
            ));
        }
        intensities.extend(u.into_iter().map(Intensity::Users));
    }
    if let Some(r) = m.rates {
        nonempty("[matrix] rates", &r)?;
        for rate in r {
            intensities.push(match rate {
                RawRate::Number(rate) => {
                    bounds::check_rate(rate)
                        .map_err(|e| bad("[matrix] rates", format!("every rate {e}")))?;
                    Intensity::Rate(rate)
                }
                RawRate::Program(text) => match text.parse::<RateProgram>() {
                    // A number written as a string is a rate like any other.
                    Ok(RateProgram::Constant(r)) => Intensity::Rate(r),
                    Ok(p) => Intensity::Program(p),
                    Err(e) => return Err(bad("[matrix] rates", format!("\"{text}\": {e}"))),
                },
            });
        }
    }
    if intensities.is_empty() {
        intensities.push(Intensity::Users(10));
    }
    let sizes = m.sizes.unwrap_or_else(|| vec![50]);
    nonempty("[matrix] sizes", &sizes)?;
    let min = gatebench_loadgen::request::min_payload_size() as u64;
    if let Some(s) = sizes.iter().find(|s| **s < min) {
        return Err(bad(
            "[matrix] sizes",
            format!("{s} is too small: a seed-004 JSON payload takes at least {min} bytes"),
        ));
    }
    if let Some(s) = sizes.iter().find(|s| **s > bounds::MAX_PAYLOAD) {
        return Err(bad(
            "[matrix] sizes",
            format!(
                "{s} is too large: at most {} bytes (1 GiB)",
                bounds::MAX_PAYLOAD
            ),
        ));
    }
    let delays = match m.delays {
        None => vec![Duration::ZERO],
        Some(d) => {
            nonempty("[matrix] delays", &d)?;
            d.iter()
                .map(|d| parse_duration(d).map_err(|e| bad("[matrix] delays", e.to_string())))
                .collect::<Result<_, _>>()?
        }
    };
    let protocols = match m.protocols {
        None => vec![Protocol::H1c],
        Some(p) => parse_protocols("[matrix] protocols", &p)?,
    };
    Ok(Matrix {
        intensities,
        sizes,
        delays,
        protocols,
    })
}

fn nonempty<T>(key: &str, v: &[T]) -> Result<(), RunnerError> {
    if v.is_empty() {
        return Err(bad(key, "the list is empty"));
    }
    Ok(())
}

fn parse_protocols(key: &str, v: &[String]) -> Result<Vec<Protocol>, RunnerError> {
    nonempty(key, v)?;
    v.iter()
        .map(|s| {
            Protocol::parse(s).ok_or_else(|| {
                bad(
                    key,
                    format!("\"{s}\" is not a protocol (use h1c, h1, h2 or h2c)"),
                )
            })
        })
        .collect()
}

pub(super) fn validate_scenario(
    index: usize,
    r: RawScenario,
    base_dir: &Path,
    matrix: &Matrix,
    load: &LoadSettings,
) -> Result<Scenario, RunnerError> {
    let name = r
        .name
        .ok_or_else(|| bad(format!("[[scenario]] #{}", index + 1), "name is missing"))?;
    let scenario = format!("scenario \"{name}\"");
    let valid_name = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '+'));
    if !valid_name {
        return Err(bad(
            &scenario,
            "name must be letters, digits, '-', '.' and '+' (it is part of directory names), \
             starting with a letter or digit",
        ));
    }
    // A wrong value at one of this scenario's keys.
    let at = |key: &str, problem: String| bad(format!("{scenario}: {key}"), problem);
    let within = |e: RunnerError| e.within(&scenario);
    let protocols = match &r.protocols {
        Some(p) => parse_protocols("protocols", p).map_err(within)?,
        None => matrix.protocols.clone(),
    };
    let path = r.path.unwrap_or_else(|| load.path.clone());
    check_path("path", &path).map_err(within)?;
    let method = r.method.unwrap_or_else(|| load.method.clone());
    check_method("method", &method).map_err(within)?;
    if let Some(st) = r.expect_status {
        if !(200..=599).contains(&st) {
            return Err(at(
                "expect_status",
                format!("{st} is not a final HTTP status (200 to 599)"),
            ));
        }
    }
    let workdir = match r.workdir {
        Some(w) if w.trim().is_empty() => return Err(bad(&scenario, "workdir is empty")),
        Some(w) => base_dir.join(w),
        None => base_dir.to_path_buf(),
    };
    if let Some(s) = &r.setup {
        if s.trim().is_empty() {
            return Err(bad(&scenario, "setup is empty"));
        }
        // Setup runs once, before any cell: only the directories are known then.
        placeholder::expand_strict(s, &|n| {
            matches!(n, "suite_dir" | "workdir").then(String::new)
        })
        .map_err(|err| {
            // The list of every known placeholder would mislead here: setup knows only two.
            let what = match &err {
                RunnerError::UnknownPlaceholder { name, .. } => {
                    format!("unknown placeholder {{{name}}}")
                }
                other => other.to_string(),
            };
            at(
                "setup",
                format!("{what} (setup knows only {{suite_dir}} and {{workdir}})"),
            )
        })?;
    }
    let templates = r
        .templates
        .unwrap_or_default()
        .into_iter()
        .map(|t| {
            if t.trim().is_empty() {
                Err(at("templates", "a path is empty".into()))
            } else {
                Ok(PathBuf::from(t))
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let backend = r
        .backend
        .map(|p| validate_process("backend", p, true))
        .transpose()
        .map_err(within)?;
    let sut = r
        .sut
        .map(|p| validate_process("sut", p, false))
        .transpose()
        .map_err(within)?;
    if backend.is_none() && sut.is_none() {
        return Err(bad(
            &scenario,
            "needs a sut, a backend, or both (a backend alone is measured directly)",
        ));
    }
    let gc = match (r.gc_format, r.gc_log) {
        (None, None) => None,
        (None, Some(_)) => {
            return Err(bad(
                &scenario,
                "gc_log needs gc_format = \"jvm\" (-Xlog:gc), \"go\" (GODEBUG=gctrace=1) or \"node\" (--trace-gc)",
            ))
        }
        (Some(f), path) => {
            let format = GcFormat::parse(&f).ok_or_else(|| {
                at(
                    "gc_format",
                    format!("\"{f}\" is not a GC log format (use \"jvm\", \"go\" or \"node\")"),
                )
            })?;
            if let Some(p) = &path {
                if p.trim().is_empty() {
                    return Err(bad(&scenario, "gc_log is empty"));
                }
                placeholder::check(p).map_err(|m| at("gc_log", m.to_string()))?;
            }
            Some(GcLog { format, path })
        }
    };
    let thresholds = match &r.thresholds {
        Some(list) => parse_thresholds("thresholds", Some(list)).map_err(within)?,
        None => load.thresholds.clone(),
    };
    let stream = match r.stream.as_deref() {
        None => None,
        Some(mode) => {
            let mode = match mode {
                "sse" => gatebench_loadgen::StreamMode::Sse,
                "llm" => gatebench_loadgen::StreamMode::Llm,
                "chunks" => gatebench_loadgen::StreamMode::Chunks,
                other => {
                    return Err(at(
                        "stream",
                        format!(
                            "\"{other}\" is not a stream mode (use \"sse\", \"llm\" or \"chunks\")"
                        ),
                    ))
                }
            };
            if let Some(p) = protocols
                .iter()
                .find(|p| !matches!(p, Protocol::H1c | Protocol::H1))
            {
                return Err(at(
                    "stream",
                    format!(
                        "streams are read over HTTP/1.1 (h1c, h1) only, not {}",
                        p.name()
                    ),
                ));
            }
            Some(mode)
        }
    };
    let events = validate_events(
        r.events,
        &EventContext {
            scenario: &name,
            workdir: &workdir,
            backends: backend.as_ref().map_or(0, |b| b.count),
            has_sut: sut.is_some(),
        },
    )?;
    let own = OwnLoad {
        scenario: &scenario,
        protocols: &protocols,
        matrix,
        has_stream: stream.is_some(),
        has_events: !events.is_empty(),
        thresholds: &thresholds,
    };
    if r.grpc.is_some() && r.websocket.is_some() {
        return Err(bad(&scenario, "grpc and websocket cannot both be set"));
    }
    let grpc = r.grpc.map(|g| grpc_scenario(g, &own)).transpose()?;
    let websocket = r
        .websocket
        .map(|w| websocket_scenario(w, &own))
        .transpose()?;
    Ok(Scenario {
        thresholds,
        stream,
        grpc,
        websocket,
        events,
        title: r.title.unwrap_or_else(|| name.clone()),
        name,
        protocols,
        verify: r.verify.unwrap_or(true),
        path,
        method,
        expect_status: r.expect_status,
        keepalive: r.keepalive.unwrap_or(load.keepalive),
        setup: r.setup,
        workdir,
        templates,
        backend,
        sut,
        gc,
        // Set by `Suite::from_raw`, which knows the suite's `[capacity]` and `[cost]`.
        capacity: false,
        cost: false,
    })
}

fn validate_process(
    key: &str,
    p: RawProcess,
    backend: bool,
) -> Result<ProcessTemplate, RunnerError> {
    let at = |sub: &str, problem: String| bad(format!("{key}: {sub}"), problem);
    let program = match (p.serve, p.command) {
        (Some(_), Some(_)) => {
            return Err(bad(
                key,
                "give serve (a built-in service) or command (a shell command line), not both",
            ))
        }
        (None, None) => {
            return Err(bad(
                key,
                "command is missing (give serve = \"echo --port {port}\" for a built-in \
                 service, or command = \"…\" for any program)",
            ))
        }
        (Some(s), None) => {
            if s.trim().is_empty() {
                return Err(bad(key, "serve is empty"));
            }
            placeholder::check(&s).map_err(|m| at("serve", m.to_string()))?;
            Program::Serve(s)
        }
        (None, Some(c)) => {
            if c.trim().is_empty() {
                return Err(bad(key, "command is empty"));
            }
            placeholder::check(&c).map_err(|m| at("command", m.to_string()))?;
            Program::Command(c)
        }
    };
    let count = p.count.unwrap_or(1);
    if count == 0 || count > MAX_BACKENDS {
        return Err(bad(
            key,
            format!("count must be from 1 to {MAX_BACKENDS}, got {count}"),
        ));
    }
    if !backend && count != 1 {
        return Err(bad(key, "count must be 1 (one system under test per cell)"));
    }
    let protocol = p
        .protocol
        .map(|s| {
            Protocol::parse(&s).ok_or_else(|| {
                bad(
                    key,
                    format!("protocol \"{s}\" is not a protocol (use h1c, h1, h2 or h2c)"),
                )
            })
        })
        .transpose()?;
    if let Some(r) = &p.ready {
        placeholder::check(r).map_err(|m| at("ready", m.to_string()))?;
        if !(r.starts_with("http://") || r.starts_with("https://")) {
            return Err(at(
                "ready",
                format!("\"{r}\" must be an http:// or https:// URL"),
            ));
        }
    }
    if let Some(port) = p.port {
        if port == 0 || u32::from(port) + count - 1 > 65535 {
            return Err(at(
                "port",
                format!(
                    "must be from 1 to 65535 (for {count} back-ends, {count} consecutive ports), \
                     got {port}"
                ),
            ));
        }
    }
    Ok(ProcessTemplate {
        program,
        count,
        protocol,
        ready: p.ready,
        port: p.port,
    })
}

/// Turns toml's multi-line error into one line naming the key and the table.
pub(super) fn toml_error(source: &str, text: &str, e: &toml::de::Error) -> RunnerError {
    let msg = e.message();
    let (line, table) = match e.span() {
        Some(span) => {
            let before = text.get(..span.start.min(text.len())).unwrap_or(text);
            let line = before.matches('\n').count() + 1;
            let table = before
                .lines()
                .rev()
                .map(str::trim)
                .find(|l| l.starts_with('['))
                .map(|l| l.split('#').next().unwrap_or(l).trim().to_owned());
            (Some(line), table)
        }
        None => (None, None),
    };
    let table = table.unwrap_or_else(|| "the top level".to_owned());
    let at = line.map(|l| format!(" (line {l})")).unwrap_or_default();
    let message = if let Some(rest) = msg.strip_prefix("unknown field `") {
        let key = rest.split('`').next().unwrap_or(rest);
        // The span points at the key of an inline table (`sut = { comand = … }`) as well.
        let within = inline_key(text, e.span().map(|s| s.start));
        let table = within.unwrap_or(table);
        format!("unknown key \"{key}\" in {table}{at}")
    } else {
        let key = value_key(text, e.span().map(|s| s.start));
        let place = match (key, line) {
            (Some(key), _) => format!("{table} {key}: "),
            (None, Some(_)) => format!("{table}: "),
            (None, None) => String::new(),
        };
        format!("{place}{}{at}", msg.trim().replace('\n', " "))
    };
    RunnerError::suite(source, message)
}

/// For an error in a value, the key it is assigned to on the same line (`sizes` in
/// `sizes = [1e20]`), after an inline table's key (`backend count`).
fn value_key(text: &str, start: Option<usize>) -> Option<String> {
    let start = start?.min(text.len());
    let line_start = text.get(..start)?.rfind('\n').map_or(0, |i| i + 1);
    let before = text.get(line_start..start)?;
    let lhs = before[..before.rfind('=')?].trim_end();
    let key = last_key(lhs)?;
    let key_start = line_start + lhs.len() - key.len();
    Some(match inline_key(text, Some(key_start)) {
        Some(table) => format!("{} {key}", table.trim_end_matches(" = {…}")),
        None => key.to_owned(),
    })
}

/// For an error inside an inline table (`sut = { … }`), the table's key.
fn inline_key(text: &str, start: Option<usize>) -> Option<String> {
    let start = start?;
    let line_start = text
        .get(..start.min(text.len()))?
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let line = text.get(line_start..start.min(text.len()))?;
    // The last `{` that opens a table (`key = {`), not one inside a string (`{port}`).
    line.match_indices('{').rev().find_map(|(brace, _)| {
        let lhs = line[..brace].trim_end().strip_suffix('=')?.trim_end();
        last_key(lhs).map(|key| format!("{key} = {{…}}"))
    })
}

/// The bare key at the end of `s` (`count` in `{ serve = "x", count`), if any.
fn last_key(s: &str) -> Option<&str> {
    let from = s
        .char_indices()
        .rev()
        .find(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let key = &s[from..];
    (!key.is_empty()).then_some(key)
}

/// What a gRPC or WebSocket scenario is checked against: the rest of its scenario.
struct OwnLoad<'a> {
    scenario: &'a str,
    protocols: &'a [Protocol],
    matrix: &'a Matrix,
    has_stream: bool,
    has_events: bool,
    thresholds: &'a [Threshold],
}

impl OwnLoad<'_> {
    /// A wrong value at `key` of the scenario's `table` (`grpc`, `websocket`).
    fn at(&self, table: &str, key: &str, problem: String) -> RunnerError {
        bad(format!("{}: {table}.{key}", self.scenario), problem)
    }

    /// What a load of its own (`what`: gRPC, WebSocket) cannot be used with yet, refused: a
    /// stream mode, events, thresholds over windows or with `abort`, and arrival programs are
    /// the HTTP load's.
    fn refuse_http_only(&self, what: &str) -> Result<(), RunnerError> {
        let refuse = |thing: &str| {
            Err(bad(
                self.scenario,
                format!("{thing} cannot be used in a {what} scenario yet"),
            ))
        };
        if self.has_stream {
            return refuse("stream");
        }
        if self.has_events {
            return refuse("events");
        }
        if let Some(t) = self.thresholds.iter().find(|t| t.needs_seconds()) {
            return Err(bad(
                self.scenario,
                format!(
                    "threshold '{}': over and abort cannot be used in a {what} scenario yet (its thresholds are judged on the whole measurement)",
                    t.text
                ),
            ));
        }
        if self
            .matrix
            .intensities
            .iter()
            .any(|i| matches!(i, Intensity::Program(_)))
        {
            return refuse("an arrival program in [matrix] rates");
        }
        Ok(())
    }
}

/// `grpc = {…}` checked: a method path, a call kind, counts and rates in range, HTTP/2
/// protocols, connections that divide every users value.
fn grpc_scenario(
    g: crate::suite::raw::RawGrpc,
    own: &OwnLoad<'_>,
) -> Result<crate::suite::GrpcScenario, RunnerError> {
    let at = |key: &str, problem: String| own.at("grpc", key, problem);
    let method_ok = g
        .method
        .strip_prefix('/')
        .and_then(|m| m.split_once('/'))
        .is_some_and(|(svc, m)| !svc.is_empty() && !m.is_empty() && !m.contains('/'));
    if !method_ok {
        return Err(at(
            "method",
            format!("\"{}\" is not /package.Service/Method", g.method),
        ));
    }
    use gatebench_loadgen::grpc::CallKind;
    let kind = match g.kind.as_deref().unwrap_or("unary") {
        "unary" => CallKind::Unary,
        "server-stream" => CallKind::ServerStream,
        "client-stream" => CallKind::ClientStream,
        "bidi" => CallKind::Bidi,
        other => {
            return Err(at(
                "kind",
                format!("\"{other}\" is not unary, server-stream, client-stream or bidi"),
            ))
        }
    };
    let messages = g.messages.unwrap_or(1);
    if messages == 0 || messages > gatebench_loadgen::grpc::MAX_MESSAGES {
        return Err(at("messages", format!("{messages} is not 1 to 10000000")));
    }
    if g.message_rate
        .is_some_and(|r| !(r.is_finite() && r > 0.0 && r <= 1e6))
    {
        return Err(at(
            "message_rate",
            "must be above 0 and at most 1000000".into(),
        ));
    }
    let deadline = match &g.deadline {
        None => None,
        Some(d) => Some(
            parse_duration(d)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| at("deadline", format!("\"{d}\" is not a duration above zero")))?,
        ),
    };
    let connections = g.connections.unwrap_or(1);
    if connections == 0 {
        return Err(at("connections", "must be at least 1".into()));
    }
    if let Some(p) = own
        .protocols
        .iter()
        .find(|p| !matches!(p, Protocol::H2c | Protocol::H2))
    {
        return Err(at(
            "method",
            format!(
                "gRPC runs over HTTP/2 (protocols h2c, h2), not {}",
                p.name()
            ),
        ));
    }
    own.refuse_http_only("gRPC")?;
    for i in &own.matrix.intensities {
        if let Intensity::Users(u) = i {
            if u % connections != 0 {
                return Err(at(
                    "connections",
                    format!("{connections} does not divide {u} users (each connection carries users ÷ connections calls)"),
                ));
            }
        }
    }
    Ok(crate::suite::GrpcScenario {
        method: g.method,
        kind,
        messages,
        message_rate: g.message_rate,
        deadline,
        connections,
    })
}

/// `websocket = {…}` checked: a path, counts and rates in range, message sizes the generator
/// takes. Every protocol opens WebSocket: HTTP/1.1 (h1c, h1) with its upgrade, HTTP/2 (h2c, h2)
/// with an extended CONNECT (RFC 8441).
fn websocket_scenario(
    w: crate::suite::raw::RawWebSocket,
    own: &OwnLoad<'_>,
) -> Result<crate::suite::WebSocketScenario, RunnerError> {
    let at = |key: &str, problem: String| own.at("websocket", key, problem);
    let path = w.path.unwrap_or_else(|| "/ws".to_owned());
    if !path.starts_with('/') || path.chars().any(|c| c.is_ascii_control() || c == ' ') {
        return Err(at(
            "path",
            format!("\"{path}\" is not a path starting with /"),
        ));
    }
    if w.message_rate
        .is_some_and(|r| !(r.is_finite() && r > 0.0 && r <= 1e6))
    {
        return Err(at(
            "message_rate",
            "must be above 0 and at most 1000000".into(),
        ));
    }
    if w.messages == Some(0) {
        return Err(at("messages", "must be at least 1".into()));
    }
    if let Some(size) = own
        .matrix
        .sizes
        .iter()
        .find(|s| **s as usize > gatebench_loadgen::ws::MAX_SIZE)
    {
        return Err(bad(
            own.scenario,
            format!(
                "a WebSocket message of {size} bytes ([matrix] sizes) is past the most the generator sends ({} bytes)",
                gatebench_loadgen::ws::MAX_SIZE
            ),
        ));
    }
    own.refuse_http_only("WebSocket")?;
    Ok(crate::suite::WebSocketScenario {
        path,
        binary: w.binary.unwrap_or(false),
        message_rate: w.message_rate,
        messages: w.messages,
    })
}
