//! gatebench's load generator.
//!
//! It sends HTTP requests to one target under one of two arrival models — closed (N
//! connections, each sending when the previous answer arrived) or open (a target rate, with
//! latency measured from each request's intended send time, correcting coordinated omission as
//! wrk2 does) — until a stop rule (duration or count) is met. Every scheduled request ends in
//! exactly one [`gatebench_model::Outcome`]; latency goes into HdrHistograms; the generator
//! checks its own CPU use and schedule keeping and says when it, not the target, was the
//! bottleneck.
//!
//! It does not render reports (see `gatebench-report`) nor start the systems it measures (see
//! `gatebench-runner`).
//!
//! # Layout
//! - [`bounds`]: the accepted range of every number, and the one duration parser.
//! - [`config`]: what a caller asks for and its validation.
//! - [`capacity`]: the capacity search (`--find-max`): the highest rate within an objective.
//! - [`cost`]: an intermediary's cost, measured: direct and through it, interleaved.
//! - [`arrival`]: arrival programs (ramp, steps, sine) and Poisson arrivals for the open model.
//! - [`request`]: the request, encoded once; seed-004 JSON payloads.
//! - [`mix`]: a weighted mix of requests read from a file, and the picker that follows it.
//! - [`replay`]: recorded traffic (access logs, goreplay captures) read for replay.
//! - `classes`: the requests of a run (one, a mix's, a replay's) and their classes.
//! - `connect`: establishing connections (TCP, TLS) and classifying connect failures.
//! - [`tls`]: the TLS client configuration (trust, ALPN, SNI, resumption).
//! - `exchange`: what an exchange ends in (answer or failure), whatever the protocol.
//! - `hpack`, `huffman`: HPACK header compression (RFC 7541), used by the request template
//!   and the HTTP/2 client.
//! - `http1`: the lean HTTP/1.1 client on the hot path.
//! - `http2`: the lean HTTP/2 client (own framing and HPACK), streams gated below the
//!   server's limit.
//! - `body`: response-body verification shared by both.
//! - `schedule`: arrival model × stop rule: who sends when.
//! - `sse`: the server-sent event stream format, parsed as it arrives (WHATWG).
//! - [`stream`]: stream mode (`--stream`): responses read as events, each timed.
//! - [`llm`]: the LLM-gateway mode's chat-completions request and token test.
//! - `worker`: one thread, its runtime, its connections and statistics.
//! - `target`: the URL, parsed and resolved; HTTP token syntax.
//! - [`stats`]: histograms and counters, exact merging, summaries.
//! - [`hlog`]: HdrHistogram interval logs.
//! - [`metrics`]: the live figures for Prometheus: scraped (text, or protobuf with native
//!   histograms) and pushed by remote write.
//! - [`run`](mod@run): orchestration, the live view, the report and its self-check.
//! - [`probe`](mod@probe): the correctness probe before the load.
//! - [`limits`]: the open-files check.
//! - `throttle`: how long a cgroup CPU quota held the generator back (the self-check).
//! - [`start`]: starting at an agreed wall-clock instant (the shards of one run).

pub mod arrival;
mod body;
pub mod bounds;
pub mod capacity;
mod classes;
pub mod config;
mod connect;
pub mod cost;
pub mod error;
mod exchange;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz;
pub mod grpc;
pub mod hlog;
mod hpack;
mod http1;
mod http2;
mod huffman;
pub mod limits;
pub mod llm;
mod mark;
pub mod metrics;
pub mod mix;
pub mod probe;
pub mod replay;
pub mod request;
pub mod run;
mod schedule;
mod selfcheck;
mod sse;
pub mod start;
pub mod stats;
pub mod stream;
mod target;
pub mod threshold;
mod throttle;
pub mod tls;
mod worker;
pub mod ws;

pub use arrival::{ArrivalProgram, RateProgram, Spacing};
pub use config::{Arrival, LoadConfig, LoadSpec, Protocol, Requests, StopRule};
pub use error::LoadgenError;
pub use llm::ChatRequest;
pub use mix::Mix;
pub use probe::probe;
pub use replay::{Replay, ReplayFormat};
pub use request::RequestBody;
pub use run::{run, IntervalView, RunOptions, RunOutput};
pub use stream::{StreamMode, StreamSpec};
pub use tls::TlsOptions;
