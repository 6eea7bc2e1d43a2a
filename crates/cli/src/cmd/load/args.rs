//! `gatebench load`'s arguments (clap derive), beside the command that validates and runs
//! them: raw input only, turned into a `LoadConfig` by `cmd::load::spec`.

use std::path::PathBuf;

use clap::Args;
// Every duration option goes through the one parser suite files use as well.
use gatebench_loadgen::bounds::parse_duration;
use gatebench_loadgen::threshold::Threshold;

/// `gatebench load URL`.
#[derive(Debug, Args)]
#[command(
    after_help = "Closed model (default): -c connections each send the next request when the answer \
arrives. Open model (-R): requests are sent at a target rate and latency is measured from each \
request's intended send time, so a stalled target shows in the tail (coordinated-omission \
correction, as in wrk2).\n\nDurations are a number of seconds or e.g. 250ms, 30s, 2m, 1h; at most 100 days each. \
Out-of-range values are refused before anything is sent.\n\nExit status: 0 done, 1 the correctness probe failed, 2 bad arguments \
or another error, 99 a --threshold failed, 130 interrupted."
)]
#[command(group(clap::ArgGroup::new("live").args(["metrics", "remote_write"]).multiple(true)))]
pub struct LoadArgs {
    /// Target URL, e.g. http://127.0.0.1:8688/ (or ws:// or wss://host:port/path for a WebSocket
    /// load, grpc:// or grpcs://host:port/package.Service/Method for a gRPC load)
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
    /// Note, each second, the first time each value of this response header was seen on a
    /// successful response (e.g. x-gatebench-backend, which gatebench's echo back-ends send):
    /// what a suite's events measure a route change's propagation with. Kept in the record's
    /// seconds (`timeline`), which the record has with --shard and arrival programs. At most 64
    /// distinct values per worker thread; HTTP/1.x only.
    #[arg(long, value_name = "NAME")]
    pub mark_header: Option<String>,
    /// Skip the correctness probe sent before the load.
    #[arg(long)]
    pub no_probe: bool,
    /// Write the JSON record to FILE (`-` for stdout; the text report then goes to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write an HdrHistogram interval log (1 s intervals, nanoseconds) to FILE.
    #[arg(long, value_name = "FILE")]
    pub hlog: Option<PathBuf>,
    /// HTTP/2 over TLS, negotiated by ALPN (needs an https:// URL; with wss://, each WebSocket
    /// an extended CONNECT, RFC 8441).
    #[arg(long, conflicts_with = "h2c")]
    pub http2: bool,
    /// HTTP/2 over cleartext by prior knowledge (needs an http:// URL; with ws://, each
    /// WebSocket an extended CONNECT, RFC 8441).
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
    /// Serve the run's live figures for Prometheus on ADDRESS (e.g. 127.0.0.1:9464):
    /// `GET /metrics`, updated once a second: requests sent and finished by outcome, a latency
    /// histogram, target and achieved rate, in-flight requests, the phase and the generator's
    /// CPU time. Text exposition format; the protobuf one, with a native histogram beside the
    /// classic buckets, when the scraper asks for it (Prometheus with native histograms on).
    #[arg(long, value_name = "ADDRESS", help_heading = "Live metrics")]
    pub metrics: Option<std::net::SocketAddr>,
    /// A label every series of --metrics and --remote-write carries, NAME=VALUE (e.g.
    /// scenario=proxy).
    /// Repeatable.
    #[arg(long = "metrics-label", value_name = "NAME=VALUE", value_parser = parse_label, requires = "live", help_heading = "Live metrics")]
    pub metrics_labels: Vec<(String, String)>,
    /// Keep serving --metrics this long after the run ends, so that a scraper's next scrape
    /// sees the final figures.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_duration, requires = "metrics", help_heading = "Live metrics")]
    pub metrics_linger: std::time::Duration,
    /// Push the same figures by Prometheus remote write 1.0 to URL (an http:// endpoint, e.g.
    /// http://127.0.0.1:9090/api/v1/write; no TLS), every --remote-write-interval and once at
    /// the end, from a thread of its own: an endpoint that is down or refuses is said once on
    /// stderr and counted, and the run goes on. Labels: --metrics-label, job and instance.
    #[arg(long, value_name = "URL", value_parser = parse_remote_write, help_heading = "Live metrics")]
    pub remote_write: Option<gatebench_loadgen::metrics::RemoteWriteUrl>,
    /// How often --remote-write pushes (at least 1s; the figures change once a second).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_remote_write_interval, requires = "remote_write", help_heading = "Live metrics")]
    pub remote_write_interval: std::time::Duration,
    /// A pass/fail condition on the run, k6-style: `METRIC OP LIMIT [over DURATION] [abort]`,
    /// e.g. 'p99<50ms', 'errors<0.1%', 'rate>=0.99*target over 10s', 'p99<100ms over 5s abort'.
    /// Judged on the whole measurement at the end and, with `over`, on every full window while
    /// the run goes; `abort` stops the run at a breach and keeps what was measured (ws:// and
    /// grpc:// loads: judged on the whole run, on their messages or calls; no `over` or
    /// `abort`). Repeatable; any failed threshold makes the exit status 99.
    #[arg(long = "threshold", value_name = "THRESHOLD", value_parser = parse_threshold)]
    pub thresholds: Vec<Threshold>,
    /// Run shard I of N (0-based: 0/2 and 1/2 make one run): this process takes its share of
    /// -c, -R and -n, and its record says so, for `gatebench merge`.
    #[arg(long, value_name = "I/N", value_parser = parse_shard, help_heading = "Shards")]
    pub shard: Option<(u32, u32)>,
    /// While the run goes, print each finished second on stdout as one line,
    /// `gatebench-second {JSON}` (its counts, outcomes and latency histogram), before the record:
    /// what a coordinator merges live (`gatebench run` with `[hosts] generators`).
    #[arg(long, requires = "shard", help_heading = "Shards")]
    pub live_seconds: bool,
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

    /// Read each 2xx response as a stream, timing every event as it arrives: `sse` (a
    /// text/event-stream's events), `llm` (chat-completion chunks: a token is a chunk with
    /// content, and the stream must end with `data: [DONE]`), `chunks` (any body: each read of
    /// its bytes is one event). Reports time to first byte and first event, the gaps between
    /// events, stream durations and events/s. HTTP/1.1 only for now.
    #[arg(long, value_enum, value_name = "MODE", help_heading = "Streams")]
    pub stream: Option<StreamModeArg>,
    /// ws:// targets: bytes per WebSocket message.
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = 64,
        help_heading = "WebSocket"
    )]
    pub ws_size: usize,
    /// ws:// targets: binary messages instead of text.
    #[arg(long, help_heading = "WebSocket")]
    pub ws_binary: bool,
    /// ws:// targets: messages per second on each connection, sent on a fixed schedule
    /// whatever is in flight; each round trip counts from the message's intended send time.
    /// Without it, one message in flight per connection at a time.
    #[arg(long, value_name = "R", help_heading = "WebSocket")]
    pub ws_rate: Option<f64>,
    /// ws:// targets: messages each connection sends, then it closes (1000) when the last echo
    /// is in. With -R (connection opens per second, each handshake timed from its intended
    /// start) or -n (connections in all), connections are opened one after another, at most
    /// -c at once; without either, -c connections each send N and the run ends.
    #[arg(long, value_name = "N", help_heading = "WebSocket")]
    pub ws_messages: Option<u64>,
    /// grpc:// targets: the kind of call: unary, server-stream, client-stream or bidi
    /// (bidirectional) [default: unary].
    #[arg(long, value_enum, value_name = "KIND", help_heading = "gRPC")]
    pub grpc_kind: Option<GrpcKindArg>,
    /// grpc:// targets: each request message is a gatebench.echo.v1.Payload whose body is this
    /// many bytes (proto/gatebench/echo/v1/echo.proto) [default: 64].
    #[arg(
        long,
        value_name = "BYTES",
        conflicts_with = "grpc_message_file",
        help_heading = "gRPC"
    )]
    pub grpc_size: Option<usize>,
    /// grpc:// targets: send this file's bytes as each request message instead (an encoded
    /// protobuf message, e.g. from `protoc --encode`).
    #[arg(long, value_name = "PATH", help_heading = "gRPC")]
    pub grpc_message_file: Option<PathBuf>,
    /// grpc:// targets: a protobuf descriptor set (a FileDescriptorSet: protoc --include_imports
    /// -o FILE) with the URL's method; with --grpc-json, the request message is that JSON
    /// encoded as the method's input type, and the call kind is the method's.
    #[arg(long, value_name = "FILE", requires = "grpc_json", conflicts_with_all = ["grpc_size", "grpc_message_file", "grpc_proto"], help_heading = "gRPC")]
    pub grpc_proto_set: Option<PathBuf>,
    /// grpc:// targets: a .proto file with the URL's method, compiled by gatebench (no protoc
    /// needed); as --grpc-proto-set otherwise.
    #[arg(long, value_name = "FILE", requires = "grpc_json", conflicts_with_all = ["grpc_size", "grpc_message_file"], help_heading = "gRPC")]
    pub grpc_proto: Option<PathBuf>,
    /// grpc:// targets: a directory the imports of --grpc-proto are looked up in (as protoc's
    /// -I; repeatable, in order; the file's own directory is looked in last).
    #[arg(
        long,
        value_name = "DIR",
        requires = "grpc_proto",
        help_heading = "gRPC"
    )]
    pub grpc_import_path: Vec<PathBuf>,
    /// grpc:// targets: the request message as JSON (protobuf's JSON mapping), encoded through
    /// --grpc-proto-set or --grpc-proto.
    #[arg(long, value_name = "JSON", help_heading = "gRPC")]
    pub grpc_json: Option<String>,
    /// grpc:// targets: messages per call: sent by client and bidirectional streams, asked of
    /// gatebench's echo by server streams (x-gatebench-count) [default: 1].
    #[arg(long, value_name = "N", help_heading = "gRPC")]
    pub grpc_messages: Option<u64>,
    /// grpc:// targets: messages per second within a stream, each timed from its intended
    /// send time (server streams: the interval asked of the echo). Without it, back to back
    /// (bidirectional: the next message when the last one's reply arrives).
    #[arg(long, value_name = "R", help_heading = "gRPC")]
    pub grpc_message_rate: Option<f64>,
    /// grpc:// targets: each call's deadline, sent as grpc-timeout and kept by the client: a
    /// call still open then is cancelled and counted deadline_exceeded.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true, help_heading = "gRPC")]
    pub grpc_deadline: Option<std::time::Duration>,
    /// LLM-gateway mode: POST an OpenAI-style chat completion with "stream": true to the URL
    /// (give its full path, e.g. http://gw:8080/v1/chat/completions) and read the answer as
    /// --stream llm: time to first token, inter-token latency, tokens/s.
    #[arg(
        long,
        conflicts_with_all = ["stream", "body", "body_file", "payload_size", "mix", "replay"],
        help_heading = "Streams"
    )]
    pub llm: bool,
    /// --llm: the request's "model".
    #[arg(
        long,
        value_name = "NAME",
        default_value = "gatebench",
        requires = "llm",
        help_heading = "Streams"
    )]
    pub llm_model: String,
    /// --llm: the user message sent.
    #[arg(
        long,
        value_name = "TEXT",
        default_value = "Write a short story.",
        requires = "llm",
        help_heading = "Streams"
    )]
    pub llm_prompt: String,
    /// --llm: the request's "max_tokens".
    #[arg(
        long,
        value_name = "N",
        default_value_t = 128,
        requires = "llm",
        help_heading = "Streams"
    )]
    pub max_tokens: u32,
    /// With --stream or --llm: a stream with no event (token) for this long, after its head or
    /// its last event, is counted as stream_stalled and its connection closed. The whole
    /// stream must still end within --timeout.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration, allow_hyphen_values = true, help_heading = "Streams")]
    pub stall: std::time::Duration,
}

/// `--grpc-kind`'s kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum GrpcKindArg {
    /// One message each way.
    Unary,
    /// One message sent, a stream of replies.
    ServerStream,
    /// A stream of messages sent, one reply.
    ClientStream,
    /// Both ways at once.
    Bidi,
}

/// `--stream`'s modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StreamModeArg {
    /// Server-sent events (text/event-stream).
    Sse,
    /// OpenAI-style chat-completion chunks as server-sent events.
    Llm,
    /// Any body: each read of its bytes is one event.
    Chunks,
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

/// How far in the past a `--start-at` instant may be and still start the load at once: the
/// shards' clocks and start-up differ by this much at most in a sane deployment.
pub const START_AT_TOLERANCE: std::time::Duration = std::time::Duration::from_secs(1);

/// Parses `I/N` (0-based index, shard count): `0/2`, `1/2`.
pub(crate) fn parse_label(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}': expected NAME=VALUE"))?;
    gatebench_loadgen::metrics::check_label(k)?;
    Ok((k.to_owned(), v.to_owned()))
}

pub(crate) fn parse_remote_write(
    s: &str,
) -> Result<gatebench_loadgen::metrics::RemoteWriteUrl, String> {
    s.parse()
}

pub(crate) fn parse_remote_write_interval(s: &str) -> Result<std::time::Duration, String> {
    let d = parse_duration(s).map_err(|e| e.to_string())?;
    if d < std::time::Duration::from_secs(1) {
        return Err(format!(
            "'{s}': at least 1s (the figures change once a second)"
        ));
    }
    Ok(d)
}

fn parse_threshold(s: &str) -> Result<Threshold, String> {
    s.parse::<Threshold>().map_err(|e| e.to_string())
}

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
}
