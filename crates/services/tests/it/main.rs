//! Integration tests of the reference services (the echo backend, and the intermediaries: proxy,
//! balancer, transform) over real sockets on `127.0.0.1:0`, all on the test's runtime. One test
//! binary, one module per topic (ripgrep's `tests/tests.rs` layout).
//!
//! The oracle for smuggling and retries is what an upstream actually received: a raw TCP
//! upstream (`support::Capture`) records every byte. Clients are raw too where the bytes on the
//! wire are the point; HTTP/2 uses hyper's client. Upper time bounds are generous (a loaded
//! 2-core machine); lower bounds are tight.
//!
//! # Layout
//! - `support`: services on the runtime, the raw client, the capturing upstream, TLS and h2.
//! - `echo`: the echo backend: HTTP/1.1, delays, limits, shutdown, accept, TLS, h2, head deadline.
//! - `header_rules`: TE and Connection rules, as an HTTP/1.1 or HTTP/2 upstream received them.
//! - `hostile`: slow and hostile clients: HTTP/2 idle and preface deadlines, the connection
//!   cap, stalled HTTP/2 bodies, clients that stop reading, rapid reset, repeated
//!   Content-Length, userinfo in a target.
//! - `interim`: 1xx responses forwarded to HTTP/1.1 clients; `Expect: 100-continue`.
//! - `h2raw`: raw HTTP/2 frames, for requests a client library refuses to send.
//! - `passthrough`: every seed-004 protocol pair, pooling, streaming, intermediary headers.
//! - `pool`: idle pooled upstream connections closed without traffic (timeout, upstream close).
//! - `smuggling`: hostile framing, refused before the upstream sees a byte.
//! - `sse`: server-sent event streams: the echo's emulated model, each event through the proxy.
//! - `faults`: refused, hanging, resetting and misframing upstreams; truncation; stale pools.
//! - `limits`: slow clients, oversized heads and bodies, idle connections, shutdown.
//! - `balance`: round robin, dead and hanging upstreams, health checks, ejection.
//! - `transform`: JSON → XML forwarding and hostile JSON.

mod balance;
mod echo;
mod faults;
mod h2raw;
mod header_rules;
mod hostile;
mod interim;
mod limits;
mod passthrough;
mod pool;
mod smuggling;
mod sse;
mod support;
mod transform;
mod tunnel;
