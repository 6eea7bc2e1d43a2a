//! What a cell's processes are: their command lines and readiness checks from the scenario's
//! templates (on this machine or their remote host), the templates rendered into the cell's
//! directory, and the short names and log tails its messages give.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::remote::Place;
use super::{CellContext, Common};
use crate::driver::ReadyCheck;
use crate::error::RunnerError;
use crate::launch::ProcessSpec;
use crate::placeholder;
use crate::suite::{Program, Protocol, Scenario};

/// Process `name` of scenario `sc` from its template `t`, listening on `port`: its command
/// line (`gatebench serve …` with `--host ADDRESS` added on a remote host, or `sh -c` a
/// command), working directory, log, CPUs, and how to tell it is ready.
#[allow(clippy::too_many_arguments)]
pub(super) fn process_spec(
    ctx: &CellContext<'_>,
    sc: &Scenario,
    common: &Common<'_>,
    name: &str,
    t: &crate::suite::ProcessTemplate,
    port: u16,
    protocol: Protocol,
    cpus: Option<Vec<usize>>,
    place: &Place,
) -> Result<(ProcessSpec, ReadyCheck), RunnerError> {
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
