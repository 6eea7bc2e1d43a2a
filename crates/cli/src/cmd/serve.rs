//! `gatebench serve SERVICE`: a built-in reference service on its own, until Ctrl-C or SIGTERM
//! (then a graceful drain).
//!
//! Every service prints one line first on stdout, `<service> listening on http(s)://HOST:PORT/`
//! (with the real port when `--port 0` was given); the runner and the tests parse it. The
//! intermediaries add where they forward on the same line.

use std::net::TcpListener;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use gatebench_services::echo::chat::ChatConfig;
use gatebench_services::echo::origin::Origin;
use gatebench_services::echo::{EchoConfig, EchoLimits};
use gatebench_services::json_xml::JsonXmlLimits;
use gatebench_services::tls::{generate_self_signed, TlsSettings};
use gatebench_services::{
    BalanceConfig, EjectionConfig, HealthConfig, ProxyConfig, ServicesError, Timeouts,
    TransformConfig, UpstreamTls,
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

/// The intermediaries' client body, idle and send timeouts when none is given (nginx's
/// `client_body_timeout` and `send_timeout`).
const INTERMEDIARY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

fn echo(args: ServeArgs) -> Result<ExitCode> {
    if !args.upstreams.is_empty() || args.upstreams_file.is_some() {
        bail!("echo takes no --upstream nor --upstreams-file (it is the backend)");
    }
    let mut config = EchoConfig {
        delay: args.delay,
        get_size: args.size,
        threads: args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        max_body: args.max_body,
        tls: None,
        http2: args.http2,
        h2_max_streams: args.h2_max_streams,
        header_timeout: args.client_header_timeout,
        max_connections: args
            .max_connections
            .unwrap_or_else(|| EchoConfig::default().max_connections),
        chat: ChatConfig {
            first_token: args.chat_first_token,
            interval: args.chat_interval,
            jitter: args.chat_jitter,
            tokens: args.chat_tokens,
            log: args.chat_log.clone(),
            stamp: args.chat_stamp,
        },
        id: args.id.clone(),
        origin: (args.stats || args.stats_file.is_some())
            .then(|| Arc::new(Origin::new(args.id.clone()))),
    };
    // Refused before a certificate is made or anything listens.
    config.validate().map_err(by_option)?;
    if args.tls {
        config.tls = Some(match (&args.cert, &args.key) {
            (Some(c), Some(k)) => TlsSettings {
                cert_pem_path: Some(c.clone()),
                key_pem_path: Some(k.clone()),
            },
            _ => self_signed()?,
        });
    }
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
    let defaults = EchoLimits::default();
    let limits = EchoLimits {
        idle: args.idle_timeout.unwrap_or(defaults.idle),
        body: args.client_body_timeout.unwrap_or(defaults.body),
        send: args.send_timeout.unwrap_or(defaults.send),
        ..defaults
    };
    let origin = config.origin.clone();
    gatebench_services::echo::run_blocking_with(
        listener,
        config,
        limits,
        signal::shutdown_signal(),
    )
    .context("echo backend failed")?;
    if let (Some(path), Some(origin)) = (&args.stats_file, origin) {
        std::fs::write(path, origin.snapshot().to_json())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The proxy, the balancer or the transform.
fn intermediary(args: ServeArgs) -> Result<ExitCode> {
    let name = match args.service {
        Service::Proxy => "proxy",
        Service::Balance => "balance",
        _ => "transform",
    };
    if args.id.is_some() || args.stats || args.stats_file.is_some() {
        bail!("--id, --stats and --stats-file are the echo's (a back-end's) options, not the {name}'s");
    }
    let upstreams = match &args.upstreams_file {
        Some(path) => gatebench_services::proxy::reload::read_upstreams(path).map_err(by_option)?,
        None => args.upstreams.clone(),
    };
    let mut proxy = ProxyConfig {
        upstreams,
        upstreams_file: args.upstreams_file.clone(),
        threads: args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        tls: None,
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
            client_body: args.client_body_timeout.unwrap_or(INTERMEDIARY_TIMEOUT),
            client_idle: args.idle_timeout.unwrap_or(INTERMEDIARY_TIMEOUT),
            client_send: args.send_timeout.unwrap_or(INTERMEDIARY_TIMEOUT),
        },
        max_body: args.max_body as u64,
        max_head: args.max_head,
        max_request_line: args.max_request_line,
        tries: args.tries,
        added_delay: args.delay,
        added_work: args.work,
        max_connections: args
            .max_connections
            .unwrap_or_else(|| ProxyConfig::new(Vec::new()).max_connections),
        ..ProxyConfig::new(Vec::new())
    };
    let transform = JsonXmlLimits {
        max_depth: args.json_max_depth,
        max_input: args.max_body,
    };
    let balance = |proxy: ProxyConfig| BalanceConfig {
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
    // Refused before a certificate is made or anything listens; the service's own types say
    // what is valid.
    match args.service {
        Service::Proxy => proxy.validate(),
        Service::Transform => TransformConfig {
            proxy: proxy.clone(),
            json: transform,
        }
        .validate(),
        _ => balance(proxy.clone()).validate(),
    }
    .map_err(by_option)?;
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
    proxy.tls = tls;
    if proxy.upstreams_file.is_some() {
        // A SIGHUP before the service listens for it must not end the process.
        signal::hold_sighup();
    }
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
                json: transform,
                proxy,
            };
            gatebench_services::transform::run_blocking(listener, config, shutdown)
        }
        _ => gatebench_services::balance::run_blocking(listener, balance(proxy), shutdown),
    };
    result.with_context(|| format!("{name} failed"))?;
    Ok(ExitCode::SUCCESS)
}

/// A service's refusal of a configuration value, named by the option that set it
/// (`--max-head must be at least 1024 bytes`); the services' configuration types do the
/// checking, this only translates their field names.
fn by_option(error: ServicesError) -> anyhow::Error {
    if let ServicesError::InvalidValue { field, reason } = &error {
        let option = match *field {
            "upstreams" => Some("--upstream"),
            "upstreams_file" => Some("--upstreams-file"),
            "threads" => Some("--threads"),
            "h2_max_streams" => Some("--h2-max-streams"),
            "tries" => Some("--tries"),
            "max_head" => Some("--max-head"),
            "max_request_line" => Some("--max-request-line"),
            "timeouts.client_header" | "header_timeout" => Some("--client-header-timeout"),
            "timeouts.client_send" => Some("--send-timeout"),
            "max_connections" => Some("--max-connections"),
            "get_size" => Some("--size"),
            "id" => Some("--id"),
            "health.interval" => Some("--health-interval"),
            "health.timeout" => Some("--health-timeout"),
            "health.fall" => Some("--health-fall"),
            "health.rise" => Some("--health-rise"),
            "health.path" => Some("--health-path"),
            "ejection.after" => Some("--eject-after"),
            "ejection.base" => Some("--eject-base"),
            _ => None,
        };
        if let Some(option) = option {
            return anyhow!("{option} {reason}");
        }
    }
    anyhow::Error::new(error)
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
    let dir = private_temp_dir(&std::env::temp_dir(), &format!("gatebench-{service}"))?;
    let cert_path = dir.join("cert.pem");
    let key_path = dir.join("key.pem");
    write_new(&cert_path, &cert.cert_pem, 0o644)?;
    write_new(&key_path, &cert.key_pem, 0o600)?;
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

/// Creates a new directory `PREFIX-PID-XXXXXXXX` in `parent`, readable by its owner only, as
/// `mkdtemp` does: the name is not guessable in advance and the directory is created, never
/// reused, so on a shared machine nobody can have placed a directory or a symbolic link there
/// for the key to be written into.
fn private_temp_dir(parent: &std::path::Path, prefix: &str) -> Result<std::path::PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    use std::time::{SystemTime, UNIX_EPOCH};
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ u64::from(std::process::id()).rotate_left(32);
    let mut x = seed;
    for _ in 0..100 {
        // SplitMix64: a new name on every try.
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let dir = parent.join(format!("{prefix}-{}-{:08x}", std::process::id(), z as u32));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
        }
    }
    bail!(
        "creating a directory for the certificate in {}: every name taken",
        parent.display()
    )
}

/// Writes a file that must not exist yet (never through a symbolic link), with `mode`.
fn write_new(path: &std::path::Path, data: &str, mode: u32) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        // O_CREAT | O_EXCL: fails on anything already there, a symbolic link included.
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(data.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_certificate_goes_into_a_new_private_directory_and_the_key_is_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let (a, _) = write_self_signed("test").unwrap();
        let (b, _) = write_self_signed("test").unwrap();
        let (ka, kb) = (a.key_pem_path.unwrap(), b.key_pem_path.unwrap());
        let (da, db) = (ka.parent().unwrap(), kb.parent().unwrap());
        assert_ne!(da, db, "each service gets its own directory");
        assert_eq!((mode(da), mode(&ka)), (0o700, 0o600));
        assert_eq!(mode(&a.cert_pem_path.unwrap()), 0o644);
        // A file that is there already, or a link planted in its place, is never written through.
        let target = db.join("elsewhere");
        std::fs::write(&target, "x").unwrap();
        let planted = db.join("planted.pem");
        std::os::unix::fs::symlink(&target, &planted).unwrap();
        assert!(write_new(&planted, "secret", 0o600).is_err());
        assert!(write_new(&kb, "secret", 0o600).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "x");
        for d in [da, db] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }

    fn message(result: std::result::Result<(), ServicesError>) -> String {
        by_option(result.expect_err("refused")).to_string()
    }

    #[test]
    fn refused_service_options_are_named_as_on_the_command_line() {
        let proxy = ProxyConfig::new(vec!["http://127.0.0.1:1".to_owned()]);
        let cases = [
            (
                ProxyConfig {
                    max_head: 10,
                    ..proxy.clone()
                }
                .validate(),
                "--max-head must be at least 1024 bytes",
            ),
            (
                ProxyConfig {
                    threads: 5000,
                    ..proxy.clone()
                }
                .validate(),
                "--threads must be at most 1024, got 5000",
            ),
            (
                ProxyConfig::new(Vec::new()).validate(),
                "--upstream is missing",
            ),
            (
                BalanceConfig {
                    ejection: Some(EjectionConfig {
                        after: 0,
                        ..EjectionConfig::default()
                    }),
                    ..BalanceConfig::new(proxy.upstreams.clone())
                }
                .validate(),
                "--eject-after must be at least 1",
            ),
            (
                EchoConfig {
                    header_timeout: std::time::Duration::ZERO,
                    ..EchoConfig::default()
                }
                .validate(),
                "--client-header-timeout must be above zero",
            ),
        ];
        for (result, want) in cases {
            let got = message(result);
            assert!(got.starts_with(want), "{got}");
            assert_eq!(got.lines().count(), 1, "{got}");
        }
    }
}
