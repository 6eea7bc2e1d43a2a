//! `gatebench serve SERVICE`: a built-in reference service on its own, until Ctrl-C or SIGTERM
//! (then a graceful drain).
//!
//! Every service prints one line first on stdout, `<service> listening on http(s)://HOST:PORT/`
//! (with the real port when `--port 0` was given); the runner and the tests parse it. The
//! intermediaries add where they forward on the same line.

use std::net::TcpListener;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use gatebench_loadgen::bounds::{check_count, MAX_PAYLOAD, MAX_THREADS};
use gatebench_services::echo::EchoConfig;
use gatebench_services::json_xml::JsonXmlLimits;
use gatebench_services::tls::{generate_self_signed, TlsSettings};
use gatebench_services::{
    BalanceConfig, EjectionConfig, HealthConfig, ProxyConfig, Timeouts, TransformConfig,
    UpstreamTls,
};

use crate::cli::{ServeArgs, Service};
use crate::signal;

/// Runs the subcommand.
pub fn run(args: ServeArgs) -> Result<ExitCode> {
    match args.service {
        Service::Echo => echo(args),
        Service::Proxy | Service::Balance | Service::Transform => intermediary(args),
    }
}

fn echo(args: ServeArgs) -> Result<ExitCode> {
    if !args.upstreams.is_empty() {
        bail!("echo takes no --upstream (it is the backend)");
    }
    check_common(&args)?;
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
        header_timeout: args.client_header_timeout,
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

/// The proxy, the balancer or the transform.
fn intermediary(args: ServeArgs) -> Result<ExitCode> {
    let name = match args.service {
        Service::Proxy => "proxy",
        Service::Balance => "balance",
        _ => "transform",
    };
    match (args.service, args.upstreams.len()) {
        (_, 0) => bail!("{name} needs --upstream URL"),
        (Service::Proxy | Service::Transform, n) if n > 1 => {
            bail!("{name} forwards to one --upstream (use balance for several)")
        }
        _ => {}
    }
    check_common(&args)?;
    if args.tries == 0 || args.tries > 16 {
        bail!("--tries must be 1 to 16");
    }
    // The services check these too, but only once the port is bound; here each is named by
    // its option and refused before anything listens.
    if args.max_head < 1024 {
        bail!("--max-head must be at least 1024 bytes");
    }
    if args.max_request_line < 64 {
        bail!("--max-request-line must be at least 64 bytes");
    }
    if args.service == Service::Balance && !args.no_health_checks {
        // tokio's interval panics on a zero period; a zero timeout fails every check.
        for (option, d) in [
            ("--health-interval", args.health_interval),
            ("--health-timeout", args.health_timeout),
        ] {
            if d.is_zero() {
                bail!("{option} must be more than 0");
            }
        }
        for (option, n) in [
            ("--health-fall", args.health_fall),
            ("--health-rise", args.health_rise),
        ] {
            if n == 0 {
                bail!("{option} must be at least 1");
            }
        }
        if !args.health_path.starts_with('/') {
            bail!("--health-path must start with /");
        }
    }
    if args.service == Service::Balance && !args.no_ejection {
        if args.eject_after == 0 {
            bail!("--eject-after must be at least 1");
        }
        if args.eject_base.is_zero() {
            bail!("--eject-base must be more than 0");
        }
    }
    let (tls, cert_line) = if args.tls {
        match (&args.cert, &args.key) {
            (Some(c), Some(k)) => (
                Some(TlsSettings {
                    cert_pem_path: Some(c.clone()),
                    key_pem_path: Some(k.clone()),
                }),
                None,
            ),
            _ => {
                let (settings, line) = write_self_signed(name)?;
                (Some(settings), Some(line))
            }
        }
    } else {
        (None, None)
    };
    let proxy = ProxyConfig {
        upstreams: args.upstreams.clone(),
        threads: args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        tls,
        http2: args.http2,
        h2_max_streams: args.h2_max_streams,
        upstream_tls: UpstreamTls {
            insecure: args.insecure_upstream,
            ca_file: args.upstream_cacert.clone(),
            http1_only: args.upstream_http1,
        },
        timeouts: Timeouts {
            connect: args.connect_timeout,
            response: args.response_timeout,
            upstream_read: args.upstream_read_timeout,
            client_header: args.client_header_timeout,
            client_body: args.client_body_timeout,
            client_idle: args.idle_timeout,
        },
        max_body: args.max_body as u64,
        max_head: args.max_head,
        max_request_line: args.max_request_line,
        tries: args.tries,
        ..ProxyConfig::new(Vec::new())
    };
    let listener = TcpListener::bind((args.host.as_str(), args.port))
        .with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
    let addr = listener
        .local_addr()
        .context("reading the listening address")?;
    let scheme = if proxy.tls.is_some() { "https" } else { "http" };
    println!(
        "{name} listening on {scheme}://{addr}/, forwarding to {} ({} thread{}, {}; health at {})",
        proxy.upstreams.join(" "),
        proxy.threads,
        if proxy.threads == 1 { "" } else { "s" },
        if proxy.http2 {
            "HTTP/1.1 and HTTP/2"
        } else {
            "HTTP/1.1"
        },
        gatebench_services::proxy::HEALTH_PATH,
    );
    if let Some(line) = cert_line {
        println!("{line}");
    }
    let shutdown = signal::shutdown_signal();
    let result = match args.service {
        Service::Proxy => gatebench_services::proxy::run_blocking(listener, proxy, shutdown),
        Service::Transform => {
            let config = TransformConfig {
                json: JsonXmlLimits {
                    max_depth: args.json_max_depth,
                    max_input: args.max_body,
                },
                proxy,
            };
            gatebench_services::transform::run_blocking(listener, config, shutdown)
        }
        _ => {
            let config = BalanceConfig {
                proxy,
                health: (!args.no_health_checks).then(|| HealthConfig {
                    path: args.health_path.clone(),
                    interval: args.health_interval,
                    timeout: args.health_timeout,
                    fall: args.health_fall,
                    rise: args.health_rise,
                }),
                ejection: (!args.no_ejection).then_some(EjectionConfig {
                    after: args.eject_after,
                    base: args.eject_base,
                    max: args.eject_max,
                }),
            };
            gatebench_services::balance::run_blocking(listener, config, shutdown)
        }
    };
    result.with_context(|| format!("{name} failed"))?;
    Ok(ExitCode::SUCCESS)
}

/// Checks the options every service shares, before anything listens. Durations are bounded by
/// their parser (`gatebench_loadgen::bounds`); counts and sizes here, so that no value turns
/// into a panic or an allocation the size of the machine.
fn check_common(args: &ServeArgs) -> Result<()> {
    if let Some(t) = args.threads {
        check_count(t as u64, u64::from(MAX_THREADS)).map_err(|r| anyhow!("--threads {r}"))?;
    }
    if args.h2_max_streams == 0 {
        bail!("--h2-max-streams must be at least 1");
    }
    if args.client_header_timeout.is_zero() {
        bail!("--client-header-timeout must be above zero");
    }
    if args.size as u64 > MAX_PAYLOAD {
        bail!(
            "--size must be at most {MAX_PAYLOAD} bytes (1 GiB), got {}",
            args.size
        );
    }
    Ok(())
}

/// Generates a self-signed certificate, writes it beside a key in the temp directory and prints
/// where, with its fingerprint, so clients can trust it (`--cacert`) or pin it.
fn self_signed() -> Result<TlsSettings> {
    let (settings, line) = write_self_signed("echo")?;
    println!("{line}");
    Ok(settings)
}

/// Writes a fresh self-signed certificate and key for `service`; returns the settings and the
/// line that tells where they are.
fn write_self_signed(service: &str) -> Result<(TlsSettings, String)> {
    let cert = generate_self_signed().context("generating a self-signed certificate")?;
    let dir = std::env::temp_dir().join(format!("gatebench-{service}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let cert_path = dir.join("cert.pem");
    let key_path = dir.join("key.pem");
    std::fs::write(&cert_path, &cert.cert_pem)
        .with_context(|| format!("writing {}", cert_path.display()))?;
    write_private(&key_path, &cert.key_pem)?;
    let line = format!(
        "self-signed certificate: {} (SHA-256 {})",
        cert_path.display(),
        cert.sha256_fingerprint
    );
    Ok((
        TlsSettings {
            cert_pem_path: Some(cert_path),
            key_pem_path: Some(key_path),
        },
        line,
    ))
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
