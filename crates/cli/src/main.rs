//! `gatebench`: the binary. Parses arguments, sets up logging, runs a subcommand and maps the
//! outcome to an exit status: 0 success, 1 a check failed (the correctness probe), 2 an error
//! (bad arguments, unusable target, I/O).
//!
//! # Layout
//! - `cli`: the clap argument structs.
//! - `cmd`: one module per subcommand.
//! - `signal`: Ctrl-C and SIGTERM as a flag or a future.

mod cli;
mod cmd;
mod signal;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return argument_error(e),
    };
    init_logging(matches!(cli.command, Command::Serve(_)));
    let result = match cli.command {
        Command::Load(args) if args.find_max => cmd::find_max::run(*args),
        Command::Load(args) => cmd::load::run(*args),
        Command::Serve(args) => cmd::serve::run(*args),
        Command::Run(args) => cmd::run::run(args),
        Command::Report(args) => cmd::report::run(args),
        Command::Compare(args) => cmd::compare::run(args),
        Command::Cost(args) => cmd::cost::run(args),
        Command::History(args) => cmd::history::run(args),
        Command::Host(args) => cmd::host::run(args),
        Command::Merge(args) => cmd::merge::run(args),
        Command::K8s(args) => cmd::k8s::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gatebench: {e:#}");
            ExitCode::from(exit_code(&e))
        }
    }
}

/// The exit status for an error: 1 when a check failed, 2 otherwise.
fn exit_code(e: &anyhow::Error) -> u8 {
    match e.downcast_ref::<gatebench_loadgen::LoadgenError>() {
        Some(gatebench_loadgen::LoadgenError::Probe { .. }) => 1,
        _ => 2,
    }
}

/// Help and version print as clap likes; a usage error becomes one line and exit status 2.
fn argument_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(2)
        }
        _ => {
            // clap's message, up to its usage section, folded onto one line.
            let rendered = e.render().to_string();
            let message: Vec<&str> = rendered
                .lines()
                .take_while(|l| !l.starts_with("Usage:"))
                .map(str::trim)
                .filter(|l| {
                    !l.is_empty()
                        && !l.starts_with("tip:")
                        && !l.starts_with("For more information")
                })
                .collect();
            let message = message.join(" ");
            let message = message.trim_start_matches("error: ");
            eprintln!("gatebench: {message} (see --help)");
            ExitCode::from(2)
        }
    }
}

/// Logs to stderr. `GATEBENCH_LOG` (tracing's filter syntax) overrides the default: warnings,
/// or information for long-running services.
fn init_logging(service: bool) {
    use tracing_subscriber::EnvFilter;
    let default = if service { "info" } else { "warn" };
    let filter =
        EnvFilter::try_from_env("GATEBENCH_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
