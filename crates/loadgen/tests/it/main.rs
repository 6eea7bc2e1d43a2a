//! Integration tests of the load generator against real sockets on 127.0.0.1: the in-process
//! echo backend and scripted misbehaving servers. One test binary, topic modules.

mod support;

mod accounting;
mod errors;
mod metrics;
mod mixes;
mod models;
mod programs;
mod protocols;
mod schema;
mod streams;
