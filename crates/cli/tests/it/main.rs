//! Integration tests of the `gatebench` binary as a user runs it: one test binary, one module
//! per topic (ripgrep's `tests/tests.rs` layout), so that the dependencies are linked once.
//!
//! The modules share one process and run in parallel: none changes process-wide state (current
//! directory, environment, resource limits, signal handlers); each gives a child process what
//! it needs instead (`support::gatebench_in` for a working directory). Timing-sensitive tests
//! take the machine alone with `support::alone()` (all in `alone`, which runs first); every
//! test that runs load, a suite, or processes by the dozen holds it shared with
//! `support::shared()`, so that nothing of this binary runs beside a timing test (when they
//! were nine binaries, the others never did).
//!
//! # Layout
//! - `support`: the binary, temporary directories, an echo back-end child, the machine lock.
//! - `alone`: the tests that take the machine alone (a capacity search and cost measurements
//!   of `load`, `cost` and suites), named to run first.
//! - `gateways`: echo back-ends that name themselves and count what they see, and the proxy
//!   and the balancer reloading their upstreams file on SIGHUP under traffic.
//! - `compare`: `gatebench compare` and `gatebench report` on results directories.
//! - `events`: a suite's events (a back-end killed and started behind the balancer) stamped
//!   and costed in the record and summary.json; bad events refused.
//! - `history`: `run --history` and `gatebench history` on a real run's history.
//! - `hosts`: suites across hosts on the network-namespace testbed (root only).
//! - `k8s`: `gatebench k8s`'s Indexed Job, checked strictly, and each pod's command run here.
//! - `load`: `gatebench load`, `serve echo` and `cost`; the cgroup CPU quota; the interval log
//!   read by HdrHistogram's Java reader.
//! - `mixes`: `load --mix` and `--replay`.
//! - `robustness`: random options and suite files never make it panic or hang.
//! - `run`: `gatebench run` end to end on the example suites.
//! - `searches`: a suite's capacity column and intermediary cost (their runs are in `alone`).
//! - `shards`: `load --shard` processes merged by `gatebench merge`.
//! - `ws`: `load ws://` against the echo's WebSocket echo.

mod support;

mod alone;
mod compare;
mod events;
mod gateways;
mod grpc;
mod history;
mod hosts;
mod k8s;
mod load;
mod mixes;
mod robustness;
mod run;
mod searches;
mod shards;
mod ws;
