//! HTTP/2, the server side (the upstream side is h2's client, driven by the proxy's
//! `forward`). Rule: served with the h2 crate; what h2 does not limit is counted below it;
//! nothing here imports HTTP/1.x or any service.
//!
//! - [`server`]: the services' HTTP/2 server: streams, interim responses, timers, rapid reset.
//! - [`flood`]: PING and SETTINGS floods counted on the bytes h2 reads.

pub(crate) mod flood;
pub(crate) mod server;
