//! Command-line arguments (clap derive). Raw input only: values are validated into domain types
//! by the subcommands before anything is started.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
// Every duration option goes through the one parser suite files use as well.
use gatebench_loadgen::bounds::parse_duration;

/// Benchmark HTTP services and the proxies, load balancers and gateways in front of them.
#[derive(Debug, Parser)]
#[command(name = "gatebench", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Each subcommand's arguments are built only when it is the one parsed (clap's `defer`): a
/// service that starts does not build the arguments of every other subcommand, which kept
/// their code resident for the service's whole life (docs/build.md).
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Load one URL (what wrk, wrk2, oha or hey are used for).
    Load(Box<LoadArgs>),
    /// Run a built-in reference service.
    Serve(ServeArgs),
    /// Run a benchmark suite (the built-in default, or a suite file) into a results directory.
    Run(crate::cmd::run::RunArgs),
    /// Re-render a results directory: its summaries, report.html and the SVG plots.
    Report(crate::cmd::report::ReportArgs),
    /// Merge the JSON records of a run's shards (`load --shard I/N`) into one record.
    Merge(crate::cmd::merge::MergeArgs),
    /// Print a Kubernetes Indexed Job that runs `gatebench load` as N shards, one pod each.
    K8s(crate::cmd::k8s::K8sArgs),
    /// Compare results directories (two versions, or a history against a baseline), with
    /// significance tests; a CI gate with --fail-on-regression.
    Compare(crate::cmd::compare::CompareArgs),
    /// An intermediary's own cost: the same open-model schedule to a back-end directly and
    /// through the intermediary, interleaved; the latency it adds per percentile with
    /// confidence intervals, and its CPU per request.
    Cost(crate::cmd::cost::CostArgs),
    /// What the runner runs on a remote host over ssh (sampling, free ports, its clock).
    #[command(hide = true)]
    Host(crate::cmd::host::HostArgs),
}

/// `gatebench load URL`.
#[derive(Debug, Args)]
#[command(
    after_help = "Closed model (default): -c connections each send the next request when the answer \
arrives. Open model (-R): requests are sent at a target rate and latency is measured from each \
request's intended send time, so a stalled target shows in the tail (coordinated-omission \
correction, as in wrk2).\n\nDurations are a number of seconds or e.g. 250ms, 30s, 2m, 1h; at most 100 days each. \
Out-of-range values are refused before anything is sent.\n\nExit status: 0 done, 1 the correctness probe failed, 2 bad arguments \
or another error."
)]
pub struct LoadArgs {
    /// Target URL, e.g. http://127.0.0.1:8688/
    pub url: String,
    /// Concurrent connections, 1 to 1000000.
    #[arg(short = 'c', long, default_value_t = 10, value_name = "N")]
    pub connections: u32,
    /// Measurement duration (e.g. 30s, 2m; at most 100 days). Default 10s unless -n is given.
    #[arg(short = 'd', long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true)]
    pub duration: Option<std::time::Duration>,
    /// Number of requests to send in the measurement (instead of, or with, a duration).
    #[arg(short = 'n', long, value_name = "N")]
    pub requests: Option<u64>,
    /// Target rate in requests/s, 0.001 to 1e9: switches to the open model. Or an arrival
    /// program: ramp:FROM..TO/DURATION (then holds TO), steps:R1,R2,…/DURATION (each step that
    /// long, the last held), sine:MEAN±AMPLITUDE/PERIOD (or +-); rates take k and M, e.g.
    /// ramp:0..20k/60s. Without -d a program runs its own length (the ramp, the steps, one
    /// period).
    #[arg(
        short = 'R',
        long,
        value_name = "RPS|PROGRAM",
        allow_hyphen_values = true
    )]
    pub rate: Option<String>,
    /// Open model: space requests evenly (wrk2's schedule) or as a Poisson process
    /// (exponential gaps around the rate).
    #[arg(long, value_enum, default_value_t = ArrivalSpacing::Even, requires = "rate")]
    pub arrival: ArrivalSpacing,
    /// Poisson arrivals: the seed of the random gaps, to repeat a run exactly [default: from
    /// the clock; the record keeps it].
    #[arg(long, value_name = "N", requires = "rate")]
    pub seed: Option<u64>,
    /// Worker threads, 1 to 1024 [default: the cores this process may use].
    #[arg(short = 't', long, value_name = "N")]
    pub threads: Option<u32>,
    /// Warm-up before the measurement (at most 100 days); measured and reported apart.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true)]
    pub warmup: Option<std::time::Duration>,
    /// HTTP method.
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    /// Request header `Name: value` (repeatable). Credentials (Authorization, Cookie, API keys)
    /// are redacted in the JSON record.
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Request headers from a file, one `Name: value` per line (blank lines and lines starting
    /// with `#` skipped), after the -H ones: credentials kept off the command line, where any
    /// user of the machine can read them.
    #[arg(long, value_name = "FILE")]
    pub header_file: Option<std::path::PathBuf>,
    /// Request body.
    #[arg(long, conflicts_with_all = ["body_file", "payload_size"])]
    pub body: Option<String>,
    /// Request body read from a file.
    #[arg(long, value_name = "PATH", conflicts_with = "payload_size")]
    pub body_file: Option<PathBuf>,
    /// A seed-004 JSON payload {"size":"NB","payload":"…"} of exactly N bytes (at most 1 GiB).
    #[arg(long, value_name = "N")]
    pub payload_size: Option<usize>,
    /// A new connection for every request (sends Connection: close).
    #[arg(long)]
    pub no_keepalive: bool,
    /// Per-request timeout (at most 100 days).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub timeout: std::time::Duration,
    /// TCP connect timeout (at most 100 days).
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub connect_timeout: std::time::Duration,
    /// Check every response: 2xx, and the body equals the request body (an echo).
    #[arg(long)]
    pub verify: bool,
    /// A status that counts as a correct answer besides 2xx (an error endpoint's declared 500):
    /// the probe accepts it and the load does not count it as an error.
    #[arg(long, value_name = "STATUS", value_parser = clap::value_parser!(u16).range(100..=999))]
    pub expect_status: Option<u16>,
    /// Skip the correctness probe sent before the load.
    #[arg(long)]
    pub no_probe: bool,
    /// Write the JSON record to FILE (`-` for stdout; the text report then goes to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write an HdrHistogram interval log (1 s intervals, nanoseconds) to FILE.
    #[arg(long, value_name = "FILE")]
    pub hlog: Option<PathBuf>,
    /// HTTP/2 over TLS, negotiated by ALPN (needs an https:// URL).
    #[arg(long, conflicts_with = "h2c")]
    pub http2: bool,
    /// HTTP/2 over cleartext by prior knowledge (needs an http:// URL).
    #[arg(long)]
    pub h2c: bool,
    /// HTTP/2: concurrent streams per connection, 1 to 10000.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub streams: u32,
    /// TLS: accept any server certificate (self-signed test targets).
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// TLS: trust the CA certificate(s) in this PEM file instead of the system's.
    #[arg(long, value_name = "PATH")]
    pub cacert: Option<PathBuf>,
    /// TLS: server name for SNI and verification [default: the URL's host].
    #[arg(long, value_name = "NAME")]
    pub sni: Option<String>,
    /// TLS: a full handshake on every new connection instead of resuming sessions.
    #[arg(long)]
    pub no_tls_resume: bool,
    /// No live progress line on stderr.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Capacity search: the highest open-model rate the target sustains within --slo (steps,
    /// then bisection, then the failing bound and the answer each run again). Every step uses -c
    /// connections.
    #[arg(long, requires = "slo", conflicts_with_all = ["rate", "requests", "hlog"])]
    pub find_max: bool,
    /// The objective of --find-max: comma-separated pNN<DURATION and errors<N%, e.g.
    /// 'p99<10ms,errors<0.1%'.
    #[arg(long, value_name = "SLO", requires = "find_max")]
    pub slo: Option<String>,
    /// --find-max: the first rate tried [default: half the closed model's throughput in a
    /// 2-second probe run].
    #[arg(
        long,
        value_name = "RPS",
        requires = "find_max",
        allow_negative_numbers = true
    )]
    pub start_rate: Option<f64>,
    /// --find-max: the shortest measurement per step (longer when the strictest percentile
    /// needs more requests: 50 beyond it). -d is not used.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration, requires = "find_max")]
    pub step_duration: std::time::Duration,
    /// --find-max: stop bisecting when the failing rate is within this many percent of the
    /// passing one.
    #[arg(
        long,
        value_name = "PERCENT",
        default_value_t = 2.0,
        requires = "find_max",
        allow_negative_numbers = true
    )]
    pub precision: f64,
    /// --find-max: write the latency-against-rate chart (the knee and the answer marked) as
    /// an SVG file.
    #[arg(long, value_name = "FILE", requires = "find_max")]
    pub svg: Option<PathBuf>,
    /// Run shard I of N (0-based: 0/2 and 1/2 make one run): this process takes its share of
    /// -c, -R and -n, and its record says so, for `gatebench merge`.
    #[arg(long, value_name = "I/N", value_parser = parse_shard, help_heading = "Shards")]
    pub shard: Option<(u32, u32)>,
    /// Start the load (the warm-up, after the probe) at this instant: RFC 3339 UTC
    /// (2026-11-25T16:00:00Z), Unix seconds (1795622400), or +DURATION from now (+5s).
    /// An instant more than a second past is refused.
    #[arg(long, value_name = "TIME", value_parser = parse_start_at, help_heading = "Shards")]
    pub start_at: Option<std::time::SystemTime>,
    /// Send a weighted mix of requests from FILE (TOML `[[request]]` tables, or JSON lines for
    /// .jsonl/.ndjson/.json): each entry has weight, method, path, headers, body or body_file.
    /// All go to the URL's host; -m and -H are each entry's defaults. The record and the
    /// report give every entry's figures.
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Mixes and replay",
        conflicts_with_all = ["body", "body_file", "payload_size", "replay"]
    )]
    pub mix: Option<PathBuf>,
    /// Replay recorded traffic from FILE (an access log in the common or combined format, or
    /// a goreplay capture), each request at its recorded time divided by --speed, latency
    /// measured from that time. Runs until the last request unless -d or -n stops it first.
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Mixes and replay",
        conflicts_with_all = ["body", "body_file", "payload_size", "rate", "find_max", "shard"]
    )]
    pub replay: Option<PathBuf>,
    /// The format of the --replay file [default: goreplay when its first line is a goreplay
    /// header, else an access log in the combined or common format].
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        requires = "replay",
        help_heading = "Mixes and replay"
    )]
    pub replay_format: Option<ReplayFormatArg>,
    /// --replay: how many times faster than recorded (1 = the recorded pace, 10 = ten times
    /// faster, 0.5 = half as fast); more than 0, at most 1e6.
    #[arg(
        long,
        value_name = "X",
        default_value_t = 1.0,
        requires = "replay",
        allow_negative_numbers = true,
        help_heading = "Mixes and replay"
    )]
    pub speed: f64,
}

/// A `--replay` file's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplayFormatArg {
    /// Common log format: `host ident user [time] "request" status bytes`.
    Common,
    /// Combined log format: the common one and "referer" "user-agent".
    Combined,
    /// goreplay payloads: a `1 ID TIMESTAMP_NS LATENCY` line, the raw request, a 🐵🙈🙉 line.
    Goreplay,
}

/// How open-model requests are spaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ArrivalSpacing {
    /// Evenly, one every 1/rate.
    Even,
    /// A Poisson process: independent exponential gaps with mean 1/rate.
    Poisson,
}

/// `gatebench serve SERVICE`.
#[derive(Debug, Args)]
#[command(
    after_help = "Durations are a number of seconds or e.g. 250ms, 30s, 2m, 1h; at most 100 days \
each. Out-of-range values are refused before the service listens.\n\nExit status: 0 stopped by \
Ctrl-C or SIGTERM, 2 bad arguments or another error."
)]
pub struct ServeArgs {
    /// Which service.
    #[arg(value_enum)]
    pub service: Service,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0 picks a free one and prints it).
    #[arg(short = 'p', long, default_value_t = 8688)]
    pub port: u16,
    /// Delay before every response (e.g. 20ms; at most 100 days); never blocks a thread.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub delay: std::time::Duration,
    /// Bytes answered to GET and other requests without a body (at most 1 GiB).
    #[arg(long, value_name = "N", default_value_t = 13)]
    pub size: usize,
    /// Worker threads, 1 to 1024 [default: the cores this process may use].
    #[arg(short = 't', long, value_name = "N")]
    pub threads: Option<usize>,
    /// Largest accepted request body in bytes (413 beyond), on every protocol.
    #[arg(long, value_name = "BYTES", default_value_t = 16 * 1024 * 1024)]
    pub max_body: usize,
    /// Serve TLS. Without --cert/--key a self-signed certificate is generated and its path and
    /// fingerprint printed.
    #[arg(long)]
    pub tls: bool,
    /// PEM certificate chain (with --tls).
    #[arg(long, value_name = "PATH", requires_all = ["tls", "key"])]
    pub cert: Option<PathBuf>,
    /// PEM private key (with --tls).
    #[arg(long, value_name = "PATH", requires_all = ["tls", "cert"])]
    pub key: Option<PathBuf>,
    /// Also serve HTTP/2: by ALPN over TLS, by prior knowledge (h2c) on cleartext.
    #[arg(long)]
    pub http2: bool,
    /// HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub h2_max_streams: u32,
    /// Upstream URL, http:// or https:// (proxy, transform: one; balance: repeat for each).
    #[arg(long = "upstream", value_name = "URL", help_heading = "Intermediaries")]
    pub upstreams: Vec<String>,
    /// Accept any upstream TLS certificate (self-signed test backends). Verified by default.
    #[arg(long, help_heading = "Intermediaries")]
    pub insecure_upstream: bool,
    /// Also trust the CA certificate(s) in this PEM file for HTTPS upstreams.
    #[arg(long, value_name = "PATH", help_heading = "Intermediaries")]
    pub upstream_cacert: Option<PathBuf>,
    /// Offer only HTTP/1.1 to HTTPS upstreams (ALPN), never HTTP/2.
    #[arg(long, help_heading = "Intermediaries")]
    pub upstream_http1: bool,
    /// Upstream connect timeout (TCP, TLS and HTTP handshakes); 504 beyond.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration, allow_hyphen_values = true, help_heading = "Intermediaries")]
    pub connect_timeout: std::time::Duration,
    /// Time from sending a request to the upstream's response head; 504 beyond.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration, allow_hyphen_values = true, help_heading = "Intermediaries")]
    pub response_timeout: std::time::Duration,
    /// Longest silence inside an upstream response body (the client's response is cut).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration, allow_hyphen_values = true, help_heading = "Intermediaries")]
    pub upstream_read_timeout: std::time::Duration,
    /// Total time for an HTTP/1.1 request head, from its first byte; 408 and a close beyond
    /// (slowloris). Every service, the echo backend too.
    #[arg(long, visible_alias = "header-timeout", value_name = "DURATION", default_value = "10s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub client_header_timeout: std::time::Duration,
    /// Longest silence inside a client's request body; 408 beyond.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration, allow_hyphen_values = true, help_heading = "Intermediaries")]
    pub client_body_timeout: std::time::Duration,
    /// Client connections with no request in progress (HTTP/2: no open stream, or no preface
    /// yet) are closed after this.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration, allow_hyphen_values = true, help_heading = "Intermediaries")]
    pub idle_timeout: std::time::Duration,
    /// A client that takes no response bytes for this long is cut (HTTP/2: its stream is
    /// reset), and its upstream connection let go.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration, allow_hyphen_values = true, help_heading = "Intermediaries")]
    pub send_timeout: std::time::Duration,
    /// Most client connections served at once; more wait in the accept queue until one ends
    /// [default: 10000, or half the open-files limit if lower]. Every service.
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Largest request head in bytes, at least 1024 (431 beyond); also the largest upstream
    /// response head.
    #[arg(long, value_name = "BYTES", default_value_t = 16 * 1024, help_heading = "Intermediaries")]
    pub max_head: usize,
    /// Longest request line in bytes, at least 64 (414 beyond).
    #[arg(long, value_name = "BYTES", default_value_t = 8 * 1024, help_heading = "Intermediaries")]
    pub max_request_line: usize,
    /// Upstreams one request may try, 1 to 16 (retries go to another upstream).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 3,
        help_heading = "Intermediaries"
    )]
    pub tries: usize,
    /// Balance: path of the active health check (GET).
    #[arg(
        long,
        value_name = "PATH",
        default_value = "/health",
        help_heading = "Balancer"
    )]
    pub health_path: String,
    /// Balance: time between health checks of one upstream (more than 0).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_duration, allow_hyphen_values = true, help_heading = "Balancer")]
    pub health_interval: std::time::Duration,
    /// Balance: how long one health check may take (more than 0).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration, allow_hyphen_values = true, help_heading = "Balancer")]
    pub health_timeout: std::time::Duration,
    /// Balance: failed checks in a row that take an upstream down.
    #[arg(long, value_name = "N", default_value_t = 3, help_heading = "Balancer")]
    pub health_fall: u32,
    /// Balance: good checks in a row that bring it back up.
    #[arg(long, value_name = "N", default_value_t = 2, help_heading = "Balancer")]
    pub health_rise: u32,
    /// Balance: no active health checks.
    #[arg(long, help_heading = "Balancer")]
    pub no_health_checks: bool,
    /// Balance: failed requests in a row that eject an upstream.
    #[arg(long, value_name = "N", default_value_t = 3, help_heading = "Balancer")]
    pub eject_after: u32,
    /// Balance: first ejection time, doubled at each ejection without a success in between.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration, allow_hyphen_values = true, help_heading = "Balancer")]
    pub eject_base: std::time::Duration,
    /// Balance: longest ejection time.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration, allow_hyphen_values = true, help_heading = "Balancer")]
    pub eject_max: std::time::Duration,
    /// Balance: no passive ejection.
    #[arg(long, help_heading = "Balancer")]
    pub no_ejection: bool,
    /// Transform: deepest JSON nesting accepted (400 beyond).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 64,
        help_heading = "Transform"
    )]
    pub json_max_depth: usize,
}

/// The built-in services.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Service {
    /// The echo backend (seed 004's Netty echo): POST echoes, GET answers --size bytes.
    Echo,
    /// Passthrough reverse proxy in front of one --upstream (every seed-004 protocol pair).
    Proxy,
    /// Round-robin load balancer over several --upstream, with health checks and ejection.
    Balance,
    /// JSON request bodies forwarded as XML to one --upstream.
    Transform,
}

/// How far in the past a `--start-at` instant may be and still start the load at once: the
/// shards' clocks and start-up differ by this much at most in a sane deployment.
pub const START_AT_TOLERANCE: std::time::Duration = std::time::Duration::from_secs(1);

/// Parses `I/N` (0-based index, shard count): `0/2`, `1/2`.
pub fn parse_shard(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("`{s}` is not a shard; write I/N, e.g. 0/2 (I counts from 0)");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let i: u32 = i.trim().parse().map_err(|_| bad())?;
    let n: u32 = n.trim().parse().map_err(|_| bad())?;
    if n == 0 {
        return Err(format!("`{s}`: a run has at least one shard"));
    }
    if i >= n {
        return Err(format!(
            "`{s}`: shard indices count from 0, so the last of {n} is {}",
            n - 1
        ));
    }
    Ok((i, n))
}

/// Parses a start instant: RFC 3339 in UTC, Unix seconds, or `+DURATION` from now. An instant
/// more than [`START_AT_TOLERANCE`] in the past is refused.
pub fn parse_start_at(s: &str) -> Result<std::time::SystemTime, String> {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};
    let t = s.trim();
    let now = SystemTime::now();
    let at = if let Some(rel) = t.strip_prefix('+') {
        now + gatebench_loadgen::bounds::parse_duration(rel).map_err(|e| e.to_string())?
    } else if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs: f64 = t
            .parse()
            .map_err(|_| format!("`{t}` is not a number of Unix seconds"))?;
        UNIX_EPOCH
            + Duration::try_from_secs_f64(secs).map_err(|_| format!("`{t}` is out of range"))?
    } else {
        humantime::parse_rfc3339_weak(t).map_err(|e| {
            format!(
                "`{t}` is not an instant ({e}); give RFC 3339 UTC (2026-11-25T16:00:00Z), Unix \
                 seconds, or +DURATION"
            )
        })?
    };
    if let Ok(ago) = now.duration_since(at) {
        if ago > START_AT_TOLERANCE {
            return Err(format!(
                "`{t}` is {:.1} s in the past; give an instant to come",
                ago.as_secs_f64()
            ));
        }
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_and_start_instants() {
        assert_eq!(parse_shard("1/2"), Ok((1, 2)));
        assert_eq!(parse_shard("0/1"), Ok((0, 1)));
        assert!(parse_shard("2/2")
            .unwrap_err()
            .contains("the last of 2 is 1"));
        assert!(parse_shard("0/0").is_err());
        assert!(parse_shard("1").is_err());
        let now = std::time::SystemTime::now();
        let t = parse_start_at("+5s").unwrap();
        let ahead = t.duration_since(now).unwrap().as_secs_f64();
        assert!((4.0..6.0).contains(&ahead), "{ahead}");
        assert_eq!(
            parse_start_at("2090-01-01T00:00:00Z").unwrap(),
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(3_786_912_000)
        );
        assert_eq!(
            parse_start_at("3786912000").unwrap(),
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(3_786_912_000)
        );
        let e = parse_start_at("2020-01-01T00:00:00Z").unwrap_err();
        assert!(e.contains("in the past"), "{e}");
        assert!(parse_start_at("1000").unwrap_err().contains("in the past"));
        assert!(parse_start_at("tomorrow").is_err());
    }

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
