//! HTTP/1.x, both sides. Rule: the framing rules are `gatebench-h1`'s and the request rules
//! `check`'s; nothing here imports HTTP/2 or any service.
//!
//! - [`server`]: the services' HTTP/1.x server: one parse per head, bodies streamed,
//!   keep-alive, pipelining, interim responses.
//! - [`conn`]: its connection: reads, writes, the request body's reader.
//! - [`check`]: strict HTTP/1.1 request framing (request smuggling, limits, the slowloris
//!   deadline): the server's rules.
//! - [`client`]: the lean HTTP/1.1 client of upstream connections.

pub(crate) mod check;
pub(crate) mod client;
pub(crate) mod conn;
pub(crate) mod server;
