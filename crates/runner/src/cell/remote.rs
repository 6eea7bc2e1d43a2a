//! The remote side of a cell: where its processes run (their host, the cell's directory and
//! free ports there, the rendered templates copied there), the sampler of a target on its
//! host, the GC log fetched back from there, and the `gatebench load` arguments of a load
//! split across generator hosts ([`crate::shards`]).

use std::net::{IpAddr, TcpListener};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::{CellContext, GcInputs};
use crate::error::RunnerError;
use crate::hosts::{RemoteSampler, SshHost};
use crate::launch::RemoteAt;
use crate::matrix::Cell;
use crate::sampler::{Sample, Sampler};
use gatebench_loadgen::{Arrival, Spacing};

use crate::suite::{Protocol, Scenario, Suite};

/// Fetches a GC log written on a remote host into the local cell directory (`gc.log`), so it
/// is read as a local one and kept with the results. A failure is warned about by the reader
/// (the local copy is then missing).
pub(super) fn fetch_remote_gc_log(mut g: GcInputs, cell_dir: &Path) -> GcInputs {
    if let Some(host) = g.remote.take() {
        let local = cell_dir.join("gc.log");
        match host.get(&g.path.display().to_string()) {
            Ok(bytes) => {
                let _ = std::fs::write(&local, bytes);
            }
            Err(e) => tracing::warn!(
                "cannot fetch the GC log {} from {}: {e}",
                g.path.display(),
                host.url
            ),
        }
        g.path = local;
    }
    g
}

/// The sampler of the target: here, or on its host.
pub(super) enum AnySampler {
    Local(Sampler),
    Remote(RemoteSampler),
}

impl AnySampler {
    pub(super) fn finish(self) -> Vec<Sample> {
        match self {
            AnySampler::Local(s) => s.finish(),
            AnySampler::Remote(s) => s.finish(),
        }
    }
}

/// Where one role's processes run in a cell: the address others reach them by, and on a
/// remote host, the cell's directory there.
pub(super) struct Place {
    pub(super) addr: IpAddr,
    pub(super) remote: Option<RemoteAt>,
}

/// The cell's ports and places.
pub(super) struct CellHosts {
    pub(super) backend_ports: Vec<u16>,
    pub(super) sut_port: Option<u16>,
    pub(super) backend: Place,
    pub(super) sut: Place,
}

/// Picks the cell's ports: a process table's fixed `port`, else ports free on the host the
/// process runs on (here: bound together on 127.0.0.1 so they differ, released just before
/// the processes start; on a remote host: by `gatebench host ports` there, which also creates
/// the cell's directory on that host). Another program could take one in between; the
/// readiness check then fails the cell clearly.
pub(super) fn pick_ports(
    ctx: &CellContext<'_>,
    cell: &Cell,
    sc: &Scenario,
    n_backends: usize,
) -> Result<CellHosts, RunnerError> {
    let backend_fixed = sc.backend.as_ref().and_then(|b| b.port);
    let sut_fixed = sc.sut.as_ref().and_then(|s| s.port);
    let need_b = if backend_fixed.is_some() {
        0
    } else {
        n_backends
    };
    let need_s = usize::from(sc.sut.is_some() && sut_fixed.is_none());
    let local = IpAddr::from([127, 0, 0, 1]);
    let same_host = match (&ctx.hosts.backend, &ctx.hosts.sut) {
        (None, None) => true,
        (Some(b), Some(s)) => Arc::ptr_eq(b, s),
        _ => false,
    };
    let pick = |host: &Option<Arc<SshHost>>, n: usize| -> Result<(Place, Vec<u16>), RunnerError> {
        match host {
            None => Ok((
                Place {
                    addr: local,
                    remote: None,
                },
                free_ports(n).map_err(|source| RunnerError::FreePorts { source })?,
            )),
            Some(h) => {
                let (dir, ports) = h.cell_setup(&cell.id, n).map_err(|e| RunnerError::Host {
                    host: h.url.clone(),
                    message: e.to_string(),
                })?;
                Ok((
                    Place {
                        addr: h.address,
                        remote: Some(RemoteAt {
                            host: h.clone(),
                            dir,
                        }),
                    },
                    ports,
                ))
            }
        }
    };
    let (backend, sut, mut b_ports, mut s_ports);
    if same_host {
        let (place, mut ports) = pick(&ctx.hosts.sut, need_b + need_s)?;
        s_ports = ports.split_off(need_b);
        b_ports = ports;
        sut = Place {
            addr: place.addr,
            remote: place.remote.clone(),
        };
        backend = place;
    } else {
        (backend, b_ports) = pick(&ctx.hosts.backend, need_b)?;
        (sut, s_ports) = pick(&ctx.hosts.sut, need_s)?;
    }
    if let Some(p) = backend_fixed {
        b_ports = (0..n_backends as u16).map(|i| p + i).collect();
    }
    if let Some(p) = sut_fixed {
        s_ports = vec![p];
    }
    Ok(CellHosts {
        backend_ports: b_ports,
        sut_port: if sc.sut.is_some() {
            s_ports.first().copied()
        } else {
            None
        },
        backend,
        sut,
    })
}

/// Copies the rendered templates to a remote cell directory, where `{cell_dir}` points for
/// processes on that host.
pub(super) fn copy_templates(
    sc: &Scenario,
    cell_dir: &Path,
    place: &Place,
) -> Result<(), RunnerError> {
    let Some(r) = &place.remote else {
        return Ok(());
    };
    for t in &sc.templates {
        let name = t.file_name().unwrap_or(t.as_os_str());
        let local = cell_dir.join(name);
        let data = std::fs::read(&local).map_err(|e| RunnerError::io("read", &local, e))?;
        let to = format!("{}/{}", r.dir, name.to_string_lossy());
        r.host
            .put(&to, &data)
            .map_err(|message| RunnerError::Host {
                host: r.host.url.clone(),
                message: format!("cannot copy the template to {to}: {message}"),
            })?;
    }
    Ok(())
}

/// The `gatebench load` arguments of a cell's load, for its shards on generator hosts (the
/// same load [`super::load_config`] builds, as a command line; `--shard`, `--start-at` and the
/// headers' `--header-file` are added per shard).
pub(super) fn shard_args(suite: &Suite, sc: &Scenario, cell: &Cell, url: &str) -> Vec<String> {
    let l = &suite.load;
    let d = |d: Duration| humantime::format_duration(d).to_string();
    let mut a: Vec<String> = vec![url.to_owned()];
    let mut push = |k: &str, v: String| {
        a.push(k.to_owned());
        a.push(v);
    };
    match suite.arrival(&cell.intensity, cell.repeat) {
        (u, Arrival::Closed) => push("-c", u.to_string()),
        (c, Arrival::Open { rate }) => {
            push("-c", c.to_string());
            push("-R", rate.to_string());
        }
        (c, Arrival::Program(p)) => {
            push("-c", c.to_string());
            push("-R", p.rate.to_string());
            if let Spacing::Poisson { seed } = p.spacing {
                push("--arrival", "poisson".to_owned());
                push("--seed", seed.to_string());
            }
        }
        (_, Arrival::Replay(_)) => unreachable!("a suite's cells never replay a file"),
    }
    if suite.duration_bound {
        push("-d", d(suite.duration));
    }
    if let Some(n) = suite.requests {
        push("-n", n.to_string());
    }
    if !suite.warmup.is_zero() {
        push("--warmup", d(suite.warmup));
    }
    push("-m", sc.method.clone());
    // The suite's headers (`l.headers`) are not here: they reach each shard in a file only
    // its owner can read (`crate::shards::run`), never on a command line.
    if let Some(status) = sc.expect_status {
        push("--expect-status", status.to_string());
    }
    let has_body = !matches!(sc.method.as_str(), "GET" | "HEAD" | "DELETE" | "OPTIONS");
    if has_body {
        push("--payload-size", cell.size.to_string());
    }
    push("--timeout", d(l.timeout));
    push("--connect-timeout", d(l.connect_timeout));
    if let Some(t) = l.threads {
        push("-t", t.to_string());
    }
    if !sc.keepalive {
        a.push("--no-keepalive".into());
    }
    if sc.verify && has_body {
        a.push("--verify".into());
    }
    match cell.protocol {
        Protocol::H1c => {}
        Protocol::H1 => a.push("-k".into()),
        Protocol::H2 => a.extend(["--http2".into(), "-k".into()]),
        Protocol::H2c => a.push("--h2c".into()),
    }
    a
}

fn free_ports(n: usize) -> std::io::Result<Vec<u16>> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
}
