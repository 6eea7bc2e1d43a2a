//! What a cell's processes are: the placeholder values of their templates, their command lines
//! and readiness checks (on this machine or their remote host), the templates rendered into
//! the cell's directory, and the short names and log tails its messages give. Nothing here
//! starts a process (`start.rs` does).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use super::remote::Place;
use super::CellRun;
use crate::driver::ReadyCheck;
use crate::error::RunnerError;
use crate::launch::ProcessSpec;
use crate::matrix::Cell;
use crate::placeholder;
use crate::suite::{Intensity, ProcessTemplate, Program, Protocol, Scenario};

/// One process of a cell: its name, its template, and where and how it listens.
pub(super) struct ProcessAt<'p> {
    /// `backend-N` or `sut`.
    pub(super) name: String,
    pub(super) template: &'p ProcessTemplate,
    pub(super) port: u16,
    pub(super) protocol: Protocol,
    /// The CPUs it is pinned to here.
    pub(super) cpus: Option<Vec<usize>>,
    pub(super) place: &'p Place,
}

/// Placeholder values shared by every process of a cell.
pub(super) struct Common<'a> {
    pub(super) cell: &'a Cell,
    pub(super) backend_ports: &'a [u16],
    pub(super) backend_addr: IpAddr,
    pub(super) backend_protocol: Protocol,
    pub(super) cell_dir: &'a Path,
    pub(super) suite_dir: &'a Path,
    pub(super) workdir: &'a Path,
}

impl Common<'_> {
    pub(super) fn values(
        &self,
        port: Option<u16>,
        protocol: Protocol,
        place: &Place,
    ) -> BTreeMap<&'static str, String> {
        let c = self.cell;
        let url = |p: &u16| {
            format!(
                "{}://{}",
                self.backend_protocol.scheme(),
                SocketAddr::new(self.backend_addr, *p)
            )
        };
        let join = |v: Vec<String>| v.join(" ");
        let mut m = BTreeMap::new();
        m.insert("host", place.addr.to_string());
        m.insert("scheme", protocol.scheme().to_owned());
        m.insert("protocol", protocol.name().to_owned());
        m.insert("protocol_flags", protocol.serve_flags().to_owned());
        if let Some(p) = port {
            m.insert("port", p.to_string());
        }
        let bp = self.backend_ports;
        m.insert(
            "backend_port",
            bp.first().map(u16::to_string).unwrap_or_default(),
        );
        m.insert(
            "backend_ports",
            join(bp.iter().map(u16::to_string).collect()),
        );
        m.insert("upstream", bp.first().map(url).unwrap_or_default());
        m.insert("upstreams", join(bp.iter().map(url).collect()));
        m.insert(
            "upstream_args",
            join(
                bp.iter()
                    .map(|p| format!("--upstream {}", url(p)))
                    .collect(),
            ),
        );
        m.insert("delay", humantime::format_duration(c.delay).to_string());
        m.insert("delay_ms", c.delay.as_millis().to_string());
        m.insert("size", c.size.to_string());
        m.insert(
            "users",
            match c.intensity {
                Intensity::Users(u) => u.to_string(),
                _ => String::new(),
            },
        );
        m.insert("cell_dir", self.cell_dir.display().to_string());
        m.insert("suite_dir", self.suite_dir.display().to_string());
        m.insert("workdir", self.workdir.display().to_string());
        // On a remote host the process runs in the cell's directory there.
        if let Some(r) = &place.remote {
            m.insert("cell_dir", r.dir.clone());
            m.insert("workdir", r.dir.clone());
        }
        m
    }

    /// `text` with its placeholders replaced as they are (a URL, a path).
    pub(super) fn expand(
        &self,
        text: &str,
        port: Option<u16>,
        protocol: Protocol,
        place: &Place,
    ) -> Result<String, RunnerError> {
        self.expand_with(text, self.values(port, protocol, place))
    }

    /// A command line (`command`, `serve`) with its placeholders replaced, the paths among them
    /// quoted for the shell ([`placeholder::PATHS`]).
    pub(super) fn expand_command(
        &self,
        text: &str,
        port: Option<u16>,
        protocol: Protocol,
        place: &Place,
    ) -> Result<String, RunnerError> {
        let mut values = self.values(port, protocol, place);
        for k in placeholder::PATHS {
            if let Some(v) = values.get_mut(k) {
                *v = placeholder::shell_quote(v);
            }
        }
        self.expand_with(text, values)
    }

    fn expand_with(
        &self,
        text: &str,
        values: BTreeMap<&'static str, String>,
    ) -> Result<String, RunnerError> {
        placeholder::expand_strict_lists(
            text,
            &|name| values.get(name).cloned(),
            &self.backend_items(),
        )
    }

    /// Every back-end's values for `{backends:…}`, at the back-ends' host address.
    pub(super) fn backend_items(&self) -> Vec<placeholder::ListItem> {
        self.backend_ports
            .iter()
            .enumerate()
            .map(|(i, p)| placeholder::ListItem {
                index: i + 1,
                port: *p,
                url: format!(
                    "{}://{}",
                    self.backend_protocol.scheme(),
                    SocketAddr::new(self.backend_addr, *p)
                ),
            })
            .collect()
    }
}

/// Process `p` of the cell's scenario, from its template: its command line (`gatebench serve …`
/// with `--host ADDRESS` added on a remote host, or `sh -c` a command), working directory, log,
/// CPUs, and how to tell it is ready.
pub(super) fn process_spec(
    run: &CellRun<'_, '_>,
    common: &Common<'_>,
    p: ProcessAt<'_>,
) -> Result<(ProcessSpec, ReadyCheck), RunnerError> {
    let (ctx, sc) = (run.ctx, run.sc);
    let ProcessAt {
        name,
        template: t,
        port,
        protocol,
        cpus,
        place,
    } = p;
    let name = name.as_str();
    let err = |e| RunnerError::Command {
        name: name.to_owned(),
        source: Box::new(e),
    };
    let ex = |s: &str| common.expand(s, Some(port), protocol, place).map_err(err);
    let ex_command = |s: &str| {
        common
            .expand_command(s, Some(port), protocol, place)
            .map_err(err)
    };
    let (program, args) = match &t.program {
        Program::Serve(s) => {
            let line = ex_command(s)?;
            // Split as a shell would: a quoted path with a space stays one argument.
            let words = placeholder::split_words(&line)
                .ok_or_else(|| err(RunnerError::ServeLine { line: line.clone() }))?;
            let mut args: Vec<String> = std::iter::once("serve".to_owned()).chain(words).collect();
            match &place.remote {
                None => (ctx.exe.to_path_buf(), args),
                Some(r) => {
                    // Reached over the network at the address the runner reaches the host by,
                    // and on no other: a reference service is no open server on every
                    // interface of someone's machine. (Behind NAT, where the host does not hold
                    // that address, a `serve` line can say `--host 0.0.0.0` itself.)
                    if !args
                        .iter()
                        .any(|a| a == "--host" || a.starts_with("--host="))
                    {
                        args.insert(2.min(args.len()), "--host".into());
                        args.insert(3.min(args.len()), place.addr.to_string());
                    }
                    (PathBuf::from(&r.host.exe), args)
                }
            }
        }
        Program::Command(c) => (PathBuf::from("sh"), vec!["-c".to_owned(), ex_command(c)?]),
    };
    let check = match &t.ready {
        Some(url) => ReadyCheck::Url(ex(url)?),
        None => ReadyCheck::Port(SocketAddr::new(place.addr, port)),
    };
    Ok((
        ProcessSpec {
            name: name.to_owned(),
            program,
            args,
            workdir: Some(sc.workdir.clone()),
            log: Some(ctx.cell_dir.join(format!("{name}.log"))),
            // CPU placement is this machine's: a remote process keeps its host's default.
            cpus: cpus.filter(|_| place.remote.is_none()),
            remote: place.remote.clone(),
        },
        check,
    ))
}

/// Renders the scenario's templates into the cell's directory; `{port}` in a template is the
/// target's (the SUT's) port.
pub(super) fn render_templates(
    sc: &Scenario,
    common: &Common<'_>,
    port: u16,
    place: &Place,
) -> Result<(), RunnerError> {
    let values = common.values(Some(port), common.cell.protocol, place);
    for t in &sc.templates {
        let src = sc.workdir.join(t);
        let text =
            std::fs::read_to_string(&src).map_err(|e| RunnerError::io("read template", &src, e))?;
        let name = t.file_name().unwrap_or(t.as_os_str());
        let dst = common.cell_dir.join(name);
        let rendered = placeholder::expand_lenient_lists(&text, &values, &common.backend_items());
        std::fs::write(&dst, rendered).map_err(|e| RunnerError::io("write", &dst, e))?;
    }
    Ok(())
}

/// Whether `spec` is gatebench's own `serve` subcommand.
pub(super) fn is_serve(spec: &ProcessSpec, exe: &Path) -> bool {
    spec.program == exe && spec.args.first().is_some_and(|a| a == "serve")
}

/// A short name for a process in messages: `gatebench serve proxy`, or a command's first word
/// (the full command line and its ports are in the record).
pub(super) fn spec_summary(spec: &ProcessSpec) -> String {
    match spec.args.first().map(String::as_str) {
        Some("serve") => format!(
            "gatebench serve {}",
            spec.args.get(1).map(String::as_str).unwrap_or("")
        ),
        Some("-c") if spec.program == Path::new("sh") => spec
            .args
            .get(1)
            .and_then(|c| c.split_whitespace().find(|w| *w != "exec"))
            .unwrap_or("sh")
            .to_owned(),
        _ => spec.program.display().to_string(),
    }
}

/// The last non-empty line of a process's log, shortened.
pub(super) fn log_tail(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().rev().map(str::trim).find(|l| !l.is_empty())?;
    let mut s: String = line.chars().take(300).collect();
    if line.chars().count() > 300 {
        s.push('…');
    }
    Some(s)
}
