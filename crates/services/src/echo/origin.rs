//! The echo's origin statistics: what a back-end sees of the client in front of it (usually an
//! intermediary), so that a proxy's use of its upstream connections can be measured from the
//! origin's side: connections opened by protocol, TLS handshakes full against resumed,
//! requests, and from those requests per connection and HTTP/2 streams per connection; and the
//! gRPC messages its gRPC service received and sent, which a load generator's own counts can be
//! checked against.
//!
//! The rule: counting costs the echo no measurable throughput. Connections are rare next to
//! requests, so they go to shared counters; requests go to one counter per serving thread (each
//! on its own cache line, the slot picked once per thread), summed only when read. Every
//! counter is a relaxed atomic: a reading is a sum of monotone counters, not an instant's
//! snapshot, which is exact once the load is quiet (the runner and the bench read before and
//! after a measurement and take the difference).
//!
//! A reading over HTTP (`GET /__gatebench/origin`, [`PATH`]) is no traffic of the measured
//! client: the reading's own connection and request are taken back out of the counts.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use crate::server::Opened;

/// The reserved path where an echo that counts answers its statistics as JSON (`GET`).
pub const PATH: &str = "/__gatebench/origin";

/// Request counters, one per serving thread (threads beyond share them).
const SLOTS: usize = 64;

/// Hands each thread its request slot.
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static SLOT: usize = NEXT_SLOT.fetch_add(1, Relaxed) % SLOTS;
}

/// One thread's request counters, alone on their cache line.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Slot {
    h1: AtomicU64,
    h2: AtomicU64,
    grpc_in: AtomicU64,
    grpc_out: AtomicU64,
}

/// The live counters of one echo back-end. Shared by its every connection; compared by
/// identity.
#[derive(Debug)]
pub struct Origin {
    /// The back-end's name (`--id`), carried into each reading.
    id: Option<String>,
    opened_h1: AtomicU64,
    opened_h2: AtomicU64,
    closed: AtomicU64,
    tls_full: AtomicU64,
    tls_resumed: AtomicU64,
    requests: Box<[Slot]>,
}

impl PartialEq for Origin {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for Origin {}

impl Origin {
    /// Counters at zero for the back-end named `id`.
    pub fn new(id: Option<String>) -> Self {
        Self {
            id,
            opened_h1: AtomicU64::new(0),
            opened_h2: AtomicU64::new(0),
            closed: AtomicU64::new(0),
            tls_full: AtomicU64::new(0),
            tls_resumed: AtomicU64::new(0),
            requests: (0..SLOTS).map(|_| Slot::default()).collect(),
        }
    }

    /// A connection's protocol is settled.
    pub(crate) fn opened(&self, how: Opened) {
        self.adjust(how, 1);
    }

    /// A counted connection ended.
    pub(crate) fn closed(&self) {
        self.closed.fetch_add(1, Relaxed);
    }

    /// A connection turned out to be a reading: it is no longer counted.
    pub(crate) fn uncount(&self, how: Opened) {
        self.adjust(how, u64::MAX);
    }

    /// Adds `delta` (wrapping: `u64::MAX` takes one back) to what `how` counts.
    fn adjust(&self, how: Opened, delta: u64) {
        let opened = if how.h2 {
            &self.opened_h2
        } else {
            &self.opened_h1
        };
        opened.fetch_add(delta, Relaxed);
        match how.tls_resumed {
            Some(true) => self.tls_resumed.fetch_add(delta, Relaxed),
            Some(false) => self.tls_full.fetch_add(delta, Relaxed),
            None => 0,
        };
    }

    /// One request (an HTTP/2 stream when `h2`).
    pub(crate) fn request(&self, h2: bool) {
        SLOT.with(|slot| {
            let slot = &self.requests[*slot];
            if h2 { &slot.h2 } else { &slot.h1 }.fetch_add(1, Relaxed);
        });
    }

    /// One gRPC message received (`sent` false) or sent by the gRPC service.
    pub(crate) fn grpc_message(&self, sent: bool) {
        SLOT.with(|slot| {
            let slot = &self.requests[*slot];
            if sent { &slot.grpc_out } else { &slot.grpc_in }.fetch_add(1, Relaxed);
        });
    }

    /// The counts now.
    pub fn snapshot(&self) -> OriginStats {
        let (mut h1, mut h2, mut grpc_in, mut grpc_out) = (0, 0, 0, 0);
        for slot in self.requests.iter() {
            h1 += slot.h1.load(Relaxed);
            h2 += slot.h2.load(Relaxed);
            grpc_in += slot.grpc_in.load(Relaxed);
            grpc_out += slot.grpc_out.load(Relaxed);
        }
        OriginStats {
            id: self.id.clone(),
            connections_h1: self.opened_h1.load(Relaxed),
            connections_h2: self.opened_h2.load(Relaxed),
            connections_closed: self.closed.load(Relaxed),
            requests_h1: h1,
            h2_streams: h2,
            tls_full: self.tls_full.load(Relaxed),
            tls_resumed: self.tls_resumed.load(Relaxed),
            grpc_messages_received: grpc_in,
            grpc_messages_sent: grpc_out,
        }
    }
}

/// One reading of an echo's origin statistics, since it started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OriginStats {
    /// The back-end's name (`--id`).
    pub id: Option<String>,
    /// HTTP/1.x connections opened (cleartext or TLS).
    pub connections_h1: u64,
    /// HTTP/2 connections opened (ALPN h2 or h2c).
    pub connections_h2: u64,
    /// Connections that have ended.
    pub connections_closed: u64,
    /// HTTP/1.x requests.
    pub requests_h1: u64,
    /// HTTP/2 requests (streams).
    pub h2_streams: u64,
    /// TLS handshakes that made a new session.
    pub tls_full: u64,
    /// TLS handshakes that resumed one.
    pub tls_resumed: u64,
    /// gRPC messages the gRPC service received whole.
    pub grpc_messages_received: u64,
    /// gRPC messages it handed to the server to send.
    pub grpc_messages_sent: u64,
}

impl OriginStats {
    /// Connections opened, both protocols.
    pub fn connections(&self) -> u64 {
        self.connections_h1 + self.connections_h2
    }

    /// Requests, both protocols.
    pub fn requests(&self) -> u64 {
        self.requests_h1 + self.h2_streams
    }

    /// The reading as one JSON object (what [`PATH`] answers and `--stats-file` holds); the
    /// ratios are `null` without a connection to divide by.
    pub fn to_json(&self) -> String {
        let ratio = |n: u64, d: u64| (d > 0).then(|| n as f64 / d as f64);
        let value = serde_json::json!({
            "id": self.id,
            "connections_opened": self.connections(),
            "connections_h1": self.connections_h1,
            "connections_h2": self.connections_h2,
            "connections_closed": self.connections_closed,
            "requests": self.requests(),
            "requests_h1": self.requests_h1,
            "h2_streams": self.h2_streams,
            "tls_handshakes_full": self.tls_full,
            "tls_handshakes_resumed": self.tls_resumed,
            "requests_per_connection": ratio(self.requests(), self.connections()),
            "h2_streams_per_connection": ratio(self.h2_streams, self.connections_h2),
            "grpc_messages_received": self.grpc_messages_received,
            "grpc_messages_sent": self.grpc_messages_sent,
        });
        let mut text = value.to_string();
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_connection_is_taken_back_out() {
        let origin = Origin::new(Some("a".into()));
        let h1_tls = Opened {
            h2: false,
            tls_resumed: Some(false),
        };
        let h2_resumed = Opened {
            h2: true,
            tls_resumed: Some(true),
        };
        origin.opened(h1_tls);
        origin.opened(h2_resumed);
        origin.opened(h1_tls);
        origin.uncount(h1_tls);
        origin.request(false);
        origin.request(true);
        origin.request(true);
        origin.grpc_message(false);
        origin.grpc_message(false);
        origin.grpc_message(true);
        let s = origin.snapshot();
        assert_eq!((s.grpc_messages_received, s.grpc_messages_sent), (2, 1));
        assert_eq!((s.connections_h1, s.connections_h2), (1, 1));
        assert_eq!((s.tls_full, s.tls_resumed), (1, 1));
        assert_eq!((s.requests_h1, s.h2_streams, s.requests()), (1, 2, 3));
        let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(json["id"], "a");
        assert_eq!(json["requests_per_connection"], 1.5);
        assert_eq!(json["h2_streams_per_connection"], 2.0);
    }

    #[test]
    fn requests_counted_on_many_threads_all_arrive() {
        let origin = std::sync::Arc::new(Origin::new(None));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let origin = origin.clone();
                std::thread::spawn(move || (0..1000).for_each(|_| origin.request(false)))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(origin.snapshot().requests_h1, 4000);
        let empty = Origin::new(None).snapshot().to_json();
        assert!(
            empty.contains("\"requests_per_connection\":null"),
            "{empty}"
        );
    }
}
