//! [`TestServer`]: the listener, the thread and runtime it runs on, the counters tests read, and
//! stopping all of it on drop.
//!
//! It owns the lifecycle only; what a server does with a connection is `script`'s business.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

use crate::script::{self, Script, Stats};
use crate::{Behavior, SeenRequest};

/// How long a dropped server waits for its connection tasks to be torn down. They never block,
/// so this only bounds a bug: a test must not hang on drop.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// Pause after a failed `accept` (EMFILE when a test opens more connections than the file
/// descriptor limit allows) so the accept loop backs off instead of spinning.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// A scripted HTTP/1.1 server on `127.0.0.1:0`, running on its own thread with its own
/// current-thread tokio runtime.
///
/// The listener is bound before [`TestServer::start`] returns, so clients can connect at once.
/// Dropping the handle stops the accept loop, closes the listener, drops every open connection
/// (including [`Behavior::Hang`] and [`Behavior::Silent`] ones) and joins the thread.
#[derive(Debug)]
pub struct TestServer {
    addr: SocketAddr,
    stats: Arc<Stats>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Binds `127.0.0.1:0` and starts serving `behavior` on a new thread.
    ///
    /// # Panics
    ///
    /// If the listener, the runtime or the thread cannot be created: this is test support, and
    /// a test cannot do anything useful without its server.
    pub fn start(behavior: Behavior) -> TestServer {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("test server: building a tokio runtime");
        let listener = {
            // Registering the listener needs the runtime's I/O driver; bind here rather than on
            // the server thread so a failure panics in the test that asked for the server.
            let _runtime = runtime.enter();
            let std_listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .expect("test server: binding 127.0.0.1:0");
            std_listener
                .set_nonblocking(true)
                .expect("test server: making the listener non-blocking");
            TcpListener::from_std(std_listener).expect("test server: registering the listener")
        };
        let addr = listener
            .local_addr()
            .expect("a bound listener has an address");
        let stats = Arc::new(Stats::default());
        let script = Arc::new(Script::new(behavior, Instant::now(), Arc::clone(&stats)));
        let (shutdown, shutdown_rx) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(format!("testkit-{}", addr.port()))
            .spawn(move || run(runtime, listener, script, shutdown_rx))
            .expect("test server: spawning its thread");
        TestServer {
            addr,
            stats,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// The address the server listens on (`127.0.0.1:PORT`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Complete request heads read so far, over all connections.
    ///
    /// A head is counted before any response bytes for it are written, so once a client has
    /// seen a response the count includes its request. [`Behavior::Silent`] and
    /// [`Behavior::CloseOnAccept`] never read, so they never count.
    pub fn requests_seen(&self) -> u64 {
        self.stats.requests_seen.load(Ordering::Relaxed)
    }

    /// Every request head read so far, in the order read: method, target, when.
    pub fn requests_log(&self) -> Vec<SeenRequest> {
        self.stats
            .log
            .lock()
            .expect("no test server task panics while holding the log")
            .clone()
    }

    /// Requests read so far by request target (path and query, as sent).
    pub fn requests_by_target(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for r in self.requests_log() {
            *out.entry(r.target).or_insert(0) += 1;
        }
        out
    }

    /// TCP connections accepted so far.
    ///
    /// The kernel completes a client's `connect` before the server calls `accept`, so right after
    /// a connect this may lag by the connections still in the backlog; it is exact once the
    /// server has answered on each of them.
    pub fn connections_accepted(&self) -> u64 {
        self.stats.connections_accepted.load(Ordering::Relaxed)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            // Fails only if the server thread is already gone; joining tells us how it ended.
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() && !std::thread::panicking() {
                panic!("test server thread for {} panicked", self.addr);
            }
        }
    }
}

/// The server thread: accept until told to stop, then drop the listener and every connection.
fn run(
    runtime: Runtime,
    listener: TcpListener,
    script: Arc<Script>,
    shutdown: oneshot::Receiver<()>,
) {
    runtime.block_on(accept_loop(listener, script, shutdown));
    // Connection tasks are not awaited anywhere: shutting the runtime down drops them, which
    // closes their sockets (a FIN, or a RST where unread request bytes remain).
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
}

async fn accept_loop(
    listener: TcpListener,
    script: Arc<Script>,
    mut shutdown: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            biased;
            // A send or a dropped sender both mean stop.
            _ = &mut shutdown => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    script.stats().connections_accepted.fetch_add(1, Ordering::Relaxed);
                    tokio::spawn(script::serve(stream, Arc::clone(&script)));
                }
                Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{ErrorKind, Read, Write};
    use std::net::TcpStream;

    use super::*;

    #[test]
    fn url_and_addr_name_the_listening_socket() {
        let server = TestServer::start(Behavior::Echo);
        assert!(server.addr().ip().is_loopback());
        assert_ne!(server.addr().port(), 0);
        assert_eq!(
            server.url(),
            format!("http://127.0.0.1:{}/", server.addr().port())
        );
        TcpStream::connect(server.addr()).expect("the listener is up once start returns");
    }

    #[test]
    fn drop_closes_open_connections_and_the_listener_promptly() {
        let hang = TestServer::start(Behavior::Hang);
        let silent = TestServer::start(Behavior::Silent);
        let addrs = [hang.addr(), silent.addr()];
        let mut clients = Vec::new();
        for server in [&hang, &silent] {
            let mut client = TcpStream::connect(server.addr()).unwrap();
            client
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            client
                .write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                .unwrap();
            clients.push(client);
        }
        // Make sure the Hang connection is being served, not still in the backlog.
        let deadline = Instant::now() + Duration::from_secs(5);
        while hang.requests_seen() == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(hang.requests_seen(), 1);

        let started = Instant::now();
        drop(hang);
        drop(silent);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "dropping took {:?}",
            started.elapsed()
        );

        for mut client in clients {
            // Closed: an EOF (Hang had read everything) or a reset (Silent left the request
            // unread), but not a read timeout.
            match client.read(&mut [0; 64]) {
                Ok(0) => {}
                Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
                other => panic!("connection still open after drop: {other:?}"),
            }
        }
        for addr in addrs {
            let err = TcpStream::connect(addr).expect_err("the listener is closed");
            assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
        }
    }
}
