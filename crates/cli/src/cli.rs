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
    Load(Box<crate::cmd::load::LoadArgs>),
    /// Run a built-in reference service.
    Serve(Box<ServeArgs>),
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
    /// The release history: store runs as versions of their suite (`add`), list them, export
    /// every figure, find change points, gate a release, write the trend site (SQLite file by
    /// default, or PostgreSQL).
    History(crate::cmd::history::HistoryArgs),
    /// What the runner runs on a remote host over ssh (sampling, free ports, its clock).
    #[command(hide = true)]
    Host(crate::cmd::host::HostArgs),
}

/// `--work`: a duration of at most one second (a busy loop per request).
fn parse_work(s: &str) -> Result<std::time::Duration, String> {
    let d = parse_duration(s).map_err(|e| e.to_string())?;
    if d > std::time::Duration::from_secs(1) {
        return Err(format!("`{s}` is more than 1s of CPU per request"));
    }
    Ok(d)
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
    /// Delay before every response (e.g. 20ms; at most 100 days); never blocks a thread. The
    /// echo waits before it answers; an intermediary before it forwards each request (a slower
    /// build emulated, e.g. for a series of versions with a known change).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub delay: std::time::Duration,
    /// Intermediaries: CPU spent on each request before it is forwarded, in a busy loop (e.g.
    /// 20us): a slower build's per-request work emulated, finer than --delay's millisecond
    /// timer (at most 1 s).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_work, allow_hyphen_values = true)]
    pub work: std::time::Duration,
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
    /// echo: POST /v1/chat/completions with "stream": true is answered as a model streaming
    /// a completion (server-sent chat.completion.chunk events, then the closing DONE event); this is the
    /// time from the request to its first token. A request may set its own with the header
    /// x-gatebench-first-token-ms.
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = parse_duration, help_heading = "Echo: emulated model (chat completions)")]
    pub chat_first_token: std::time::Duration,
    /// echo: the time between tokens (header x-gatebench-token-interval-ms).
    #[arg(long, value_name = "DURATION", default_value = "20ms", value_parser = parse_duration, help_heading = "Echo: emulated model (chat completions)")]
    pub chat_interval: std::time::Duration,
    /// echo: each gap between tokens is the interval plus a uniform draw in ±this (header
    /// x-gatebench-token-jitter-ms).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_duration, help_heading = "Echo: emulated model (chat completions)")]
    pub chat_jitter: std::time::Duration,
    /// echo: tokens per completion, 1 to 1000000 (header x-gatebench-tokens); the request's
    /// max_tokens caps it.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 16,
        help_heading = "Echo: emulated model (chat completions)"
    )]
    pub chat_tokens: u32,
    /// echo: append one line per completed stream to FILE: microseconds from the request to
    /// the first token, then each gap between tokens, as the echo produced them.
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Echo: emulated model (chat completions)"
    )]
    pub chat_log: Option<PathBuf>,
    /// echo: stamp each token's event with the echo's clock, a comment line
    /// `: sent <ns since the Unix epoch>` (ignored by SSE readers); `gatebench load --llm` and
    /// `--stream sse` then report each stamped event's delay from it to its arrival.
    #[arg(long, help_heading = "Echo: emulated model (chat completions)")]
    pub chat_stamp: bool,
    /// echo: this back-end's name, sent on every response as the header
    /// x-gatebench-backend: NAME (to tell behind an intermediary who answered).
    #[arg(long, value_name = "NAME", help_heading = "Echo: origin")]
    pub id: Option<String>,
    /// echo: count what this back-end sees (connections by protocol, TLS handshakes full and
    /// resumed, requests, HTTP/2 streams) and answer them as JSON at GET /__gatebench/origin;
    /// the reading's own connection is not counted.
    #[arg(long, help_heading = "Echo: origin")]
    pub stats: bool,
    /// echo: write those statistics as JSON to PATH when the echo stops (implies --stats).
    #[arg(long, value_name = "PATH", help_heading = "Echo: origin")]
    pub stats_file: Option<PathBuf>,
    /// Upstream URL, http://, https:// or h2c:// (HTTP/2 over cleartext by prior knowledge, for
    /// gRPC back-ends) (proxy, transform: one; balance: repeat for each).
    #[arg(long = "upstream", value_name = "URL", help_heading = "Intermediaries")]
    pub upstreams: Vec<String>,
    /// A file of upstream URLs, one a line (blank lines and # comments skipped), instead of
    /// --upstream (proxy, transform: exactly one). Read again on SIGHUP: new requests go to
    /// the new set at once, requests in flight finish on their old upstream, pooled
    /// connections to upstreams that left are closed (busy ones after their exchange); a file
    /// that does not parse is refused with one log line and the old set kept.
    #[arg(
        long,
        value_name = "PATH",
        conflicts_with = "upstreams",
        help_heading = "Intermediaries"
    )]
    pub upstreams_file: Option<PathBuf>,
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
    /// Longest silence inside a client's request body; 408 beyond (HTTP/2: 408 or RST_STREAM).
    /// Every service [default: 60s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true)]
    pub client_body_timeout: Option<std::time::Duration>,
    /// Client connections with no request in progress (HTTP/2: no open stream, or no preface
    /// yet) are closed after this. Every service [default: 60s; echo: 30s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true)]
    pub idle_timeout: Option<std::time::Duration>,
    /// A client that takes no response bytes for this long is cut (HTTP/2: its stream is
    /// reset), and an intermediary's upstream connection let go. Every service [default: 60s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true)]
    pub send_timeout: Option<std::time::Duration>,
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
    /// The echo backend (seed 004's Netty echo): POST echoes, GET answers --size bytes; also a
    /// WebSocket echo at /ws (with --http2 also over HTTP/2, RFC 8441), an emulated model's
    /// token stream at /v1/chat/completions, and with --http2 the gRPC echo service
    /// gatebench.echo.v1.Echo.
    Echo,
    /// Passthrough reverse proxy in front of one --upstream (every seed-004 protocol pair);
    /// passes WebSocket upgrades (with --http2 also HTTP/2 clients' extended CONNECT, RFC 8441),
    /// and gRPC to an h2c:// (or HTTP/2 https://) upstream.
    Proxy,
    /// Round-robin load balancer over several --upstream, with health checks and ejection;
    /// passes WebSocket upgrades and gRPC as the proxy does.
    Balance,
    /// JSON request bodies forwarded as XML to one --upstream.
    Transform,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
