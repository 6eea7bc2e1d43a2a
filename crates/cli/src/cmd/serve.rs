//! `gatebench serve SERVICE`: a built-in reference service on its own, until Ctrl-C or SIGTERM
//! (then a graceful drain).

use std::net::TcpListener;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use gatebench_services::echo::EchoConfig;
use gatebench_services::tls::{generate_self_signed, TlsSettings};

use crate::cli::{ServeArgs, Service};
use crate::signal;

/// Runs the subcommand.
pub fn run(args: ServeArgs) -> Result<ExitCode> {
    match args.service {
        Service::Echo => echo(args),
    }
}

fn echo(args: ServeArgs) -> Result<ExitCode> {
    if args.threads == Some(0) {
        bail!("--threads must be at least 1");
    }
    if args.h2_max_streams == 0 {
        bail!("--h2-max-streams must be at least 1");
    }
    let tls = if args.tls {
        Some(match (&args.cert, &args.key) {
            (Some(c), Some(k)) => TlsSettings {
                cert_pem_path: Some(c.clone()),
                key_pem_path: Some(k.clone()),
            },
            _ => self_signed()?,
        })
    } else {
        None
    };
    let config = EchoConfig {
        delay: args.delay,
        get_size: args.size,
        threads: args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        max_body: args.max_body,
        tls,
        http2: args.http2,
        h2_max_streams: args.h2_max_streams,
    };
    let listener = TcpListener::bind((args.host.as_str(), args.port))
        .with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
    let addr = listener
        .local_addr()
        .context("reading the listening address")?;
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    println!(
        "echo listening on {scheme}://{addr}/ (delay {}, GET answers {} bytes, {} threads{})",
        humantime::format_duration(config.delay),
        config.get_size,
        config.threads,
        if config.http2 {
            ", HTTP/1.1 and HTTP/2"
        } else {
            ", HTTP/1.1"
        }
    );
    gatebench_services::echo::run_blocking(listener, config, signal::shutdown_signal())
        .context("echo backend failed")?;
    Ok(ExitCode::SUCCESS)
}

/// Generates a self-signed certificate, writes it beside a key in the temp directory and prints
/// where, with its fingerprint, so clients can trust it (`--cacert`) or pin it.
fn self_signed() -> Result<TlsSettings> {
    let cert = generate_self_signed().context("generating a self-signed certificate")?;
    let dir = std::env::temp_dir().join(format!("gatebench-echo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let cert_path = dir.join("cert.pem");
    let key_path = dir.join("key.pem");
    std::fs::write(&cert_path, &cert.cert_pem)
        .with_context(|| format!("writing {}", cert_path.display()))?;
    write_private(&key_path, &cert.key_pem)?;
    println!(
        "self-signed certificate: {} (SHA-256 {})",
        cert_path.display(),
        cert.sha256_fingerprint
    );
    Ok(TlsSettings {
        cert_pem_path: Some(cert_path),
        key_pem_path: Some(key_path),
    })
}

fn write_private(path: &std::path::Path, data: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(data.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}
