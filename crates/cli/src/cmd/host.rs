//! `gatebench host …`: what the runner runs on a remote host over ssh (hidden from `--help`;
//! see docs/hosts.md). Each prints plain lines on stdout for the runner to read:
//!
//! - `host sample --pgid P --interval-ms N`: the SUT's CPU, memory, threads and descriptors,
//!   sampled by the same code as a local run (`gatebench_runner::sampler`), one line per
//!   interval, until the group is gone, stdin closes or the runner stops it by PID;
//! - `host ports --count N`: N ports free on this host; `--check P,Q`: fails, naming the port,
//!   when one cannot be bound;
//! - `host clock`: for every line read, this host's clock (Unix seconds), for the runner's
//!   clock-offset measurement.

use std::io::{BufRead, Write};
use std::net::TcpListener;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use gatebench_runner::sampler;

/// `gatebench host`.
#[derive(Debug, Args)]
pub struct HostArgs {
    #[command(subcommand)]
    pub action: HostAction,
}

/// What to do on this host.
#[derive(Debug, Subcommand)]
pub enum HostAction {
    /// Sample a process group once per interval, one line each.
    Sample {
        /// The process group (the SUT's PID: it leads its group).
        #[arg(long)]
        pgid: u32,
        /// Sampling interval in milliseconds.
        #[arg(long, default_value_t = 1000)]
        interval_ms: u64,
    },
    /// Free ports on this host.
    Ports {
        /// Print this many free ports.
        #[arg(long, conflicts_with = "check")]
        count: Option<usize>,
        /// Fail when one of these ports (comma separated) is in use.
        #[arg(long, value_delimiter = ',')]
        check: Vec<u16>,
    },
    /// Answer every line read with this host's clock.
    Clock,
}

/// Runs the subcommand.
pub fn run(args: HostArgs) -> Result<ExitCode> {
    match args.action {
        HostAction::Sample { pgid, interval_ms } => sample(pgid, interval_ms),
        HostAction::Ports { count, check } => ports(count, &check),
        HostAction::Clock => clock(),
    }
}

fn sample(pgid: u32, interval_ms: u64) -> Result<ExitCode> {
    if interval_ms == 0 {
        bail!("--interval-ms must be more than 0");
    }
    // Stdin closing (the runner's ssh session gone) ends the sampler too.
    let closed = Arc::new(AtomicBool::new(false));
    let flag = closed.clone();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        flag.store(true, Ordering::Relaxed);
    });
    let alive = move || group_alive(pgid);
    let stdout = std::io::stdout();
    let origin = Instant::now();
    sampler::sample_every(
        pgid,
        origin,
        Duration::from_millis(interval_ms),
        &|| closed.load(Ordering::Relaxed),
        &mut |s| {
            let mut out = stdout.lock();
            writeln!(out, "{}", sampler::format_line(&s)).is_ok() && out.flush().is_ok() && alive()
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// Whether any process of group `pgid` is left (signal 0 to the group).
fn group_alive(pgid: u32) -> bool {
    let Ok(id) = i32::try_from(pgid) else {
        return false;
    };
    // Signal 0 sends nothing; it only checks that the group exists.
    id > 1
        && rustix::process::Pid::from_raw(id)
            .is_some_and(|pid| rustix::process::test_kill_process_group(pid).is_ok())
}

fn ports(count: Option<usize>, check: &[u16]) -> Result<ExitCode> {
    if let Some(n) = count {
        // Bound together so they differ, released on exit.
        let listeners = (0..n)
            .map(|_| TcpListener::bind("0.0.0.0:0"))
            .collect::<std::io::Result<Vec<_>>>()
            .context("cannot bind free ports")?;
        let ports: Vec<String> = listeners
            .iter()
            .map(|l| l.local_addr().map(|a| a.port().to_string()))
            .collect::<std::io::Result<_>>()?;
        println!("{}", ports.join(" "));
        return Ok(ExitCode::SUCCESS);
    }
    for p in check {
        if let Err(e) = TcpListener::bind(("0.0.0.0", *p)) {
            bail!("port {p} is in use on this host ({e})");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn clock() -> Result<ExitCode> {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        if line.is_err() {
            break;
        }
        writeln!(out, "{:.9}", gatebench_runner::hosts::unix_now())?;
        out.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}
