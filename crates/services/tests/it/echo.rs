//! The echo backend over real sockets on `127.0.0.1:0`.
//!
//! HTTP/1 is spoken by a tiny raw client below (literal request bytes, hand-parsed answers), so
//! that what is on the wire is exactly what is asserted. It is stricter than `support::Conn`,
//! which reads every framing an intermediary may forward: every echo answer has a
//! Content-Length and is never chunked, and this client fails the test otherwise. HTTP/2 uses
//! hyper's and h2's clients (`support::H2`); TLS uses `support::tls_connect` with a freshly
//! generated certificate (`support::cert`). Timing assertions only have lower bounds tight;
//! upper bounds are generous because the machine is shared.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use gatebench_services::echo::{self, EchoConfig};
use gatebench_services::ServicesError;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Upper bound for anything that should be quick; reached only when something hangs.
const PATIENCE: Duration = Duration::from_secs(10);

/// An echo backend running on the test's runtime.
struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), ServicesError>>,
}

impl Server {
    async fn start(config: EchoConfig) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(echo::serve(listener, config, async {
            let _ = stopped.await;
        }));
        Server {
            addr,
            stop: Some(stop),
            task,
        }
    }

    /// Signals shutdown without waiting for the drain.
    fn signal_stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Signals shutdown and waits for `serve` to return.
    async fn stop(mut self) -> Result<(), ServicesError> {
        self.signal_stop();
        tokio::time::timeout(PATIENCE, self.task)
            .await
            .expect("serve returned after shutdown")
            .unwrap()
    }

    async fn connect(&self) -> Conn<TcpStream> {
        Conn::new(TcpStream::connect(self.addr).await.unwrap())
    }
}

fn config() -> EchoConfig {
    EchoConfig {
        threads: 1,
        ..EchoConfig::default()
    }
}

/// One parsed HTTP/1 response.
#[derive(Debug)]
struct Answer {
    version: String,
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A raw HTTP/1 client connection: writes literal bytes, parses Content-Length-framed answers.
struct Conn<S> {
    stream: S,
    buf: Vec<u8>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Conn<S> {
    fn new(stream: S) -> Self {
        Conn {
            stream,
            buf: Vec::new(),
        }
    }

    async fn send(&mut self, raw: &[u8]) {
        self.stream.write_all(raw).await.unwrap();
    }

    /// Reads more bytes into the buffer; false on EOF.
    async fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 16 * 1024];
        let n = tokio::time::timeout(PATIENCE, self.stream.read(&mut chunk))
            .await
            .expect("the server answered in time")
            .unwrap_or(0);
        self.buf.extend_from_slice(&chunk[..n]);
        n > 0
    }

    /// Reads one response; `head` says it answers a HEAD request (no body follows).
    async fn answer(&mut self, head: bool) -> Answer {
        let head_end = loop {
            if let Some(pos) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break pos;
            }
            assert!(
                self.fill().await,
                "connection closed before a response head"
            );
        };
        let text = String::from_utf8(self.buf[..head_end].to_vec()).unwrap();
        self.buf.drain(..head_end + 4);
        let mut lines = text.split("\r\n");
        let mut status_line = lines.next().unwrap().splitn(3, ' ');
        let version = status_line.next().unwrap().to_owned();
        let status = status_line.next().unwrap().parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .map(|line| {
                let (name, value) = line.split_once(':').unwrap();
                (name.to_owned(), value.trim().to_owned())
            })
            .collect();
        let mut answer = Answer {
            version,
            status,
            headers,
            body: Vec::new(),
        };
        assert_eq!(
            answer.header("transfer-encoding"),
            None,
            "known-size answers are not chunked"
        );
        let len: usize = if head {
            0
        } else {
            answer
                .header("content-length")
                .expect("every answer has a Content-Length")
                .parse()
                .unwrap()
        };
        while self.buf.len() < len {
            assert!(self.fill().await, "connection closed mid-body");
        }
        answer.body = self.buf.drain(..len).collect();
        answer
    }

    async fn request(&mut self, raw: &[u8]) -> Answer {
        self.send(raw).await;
        self.answer(raw.starts_with(b"HEAD ")).await
    }

    /// True when the server closes the connection (EOF or reset) within [`PATIENCE`].
    async fn closed(&mut self) -> bool {
        let mut chunk = [0u8; 1024];
        loop {
            match tokio::time::timeout(PATIENCE, self.stream.read(&mut chunk)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => continue,
                Err(_) => return false,
            }
        }
    }
}

fn post(path: &str, content_type: Option<&str>, body: &[u8]) -> Vec<u8> {
    let mut raw = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(ct) = content_type {
        raw.push_str(&format!("Content-Type: {ct}\r\n"));
    }
    raw.push_str("\r\n");
    let mut raw = raw.into_bytes();
    raw.extend_from_slice(body);
    raw
}

const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";

mod http1 {
    use super::*;

    #[tokio::test]
    async fn post_echoes_body_and_content_type() {
        let server = Server::start(config()).await;
        let mut conn = server.connect().await;
        let body = br#"{"size":"50B","payload":"abcdefghijklmnopqrstu"}"#;
        let answer = conn
            .request(&post("/echo", Some("application/json"), body))
            .await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body, body);
        assert_eq!(answer.header("content-type"), Some("application/json"));
        assert_eq!(
            answer.header("content-length"),
            Some(body.len().to_string().as_str())
        );
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn echo_is_byte_exact_for_binary_and_large_bodies() {
        let server = Server::start(config()).await;
        let mut conn = server.connect().await;
        let body: Vec<u8> = (0..1_000_000u32).map(|i| (i * 7 % 256) as u8).collect();
        let answer = conn.request(&post("/", None, &body)).await;
        assert_eq!(answer.status, 200);
        assert!(answer.body == body, "1 MB binary body echoed byte for byte");
        assert_eq!(
            answer.header("content-type"),
            Some("application/octet-stream")
        );
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn chunked_put_is_echoed_with_a_content_length() {
        let server = Server::start(config()).await;
        let mut conn = server.connect().await;
        let answer = conn
            .request(
                b"PUT /x HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/csv\r\n\
                  Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
            )
            .await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body, b"hello world");
        assert_eq!(answer.header("content-length"), Some("11"));
        assert_eq!(answer.header("content-type"), Some("text/csv"));
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn empty_post_echoes_nothing() {
        let server = Server::start(config()).await;
        let mut conn = server.connect().await;
        let answer = conn.request(&post("/", Some("text/plain"), b"")).await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.header("content-length"), Some("0"));
        assert!(answer.body.is_empty());
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn get_answers_exactly_get_size_bytes() {
        for size in [0usize, 13, 1024, 100_000] {
            let server = Server::start(EchoConfig {
                get_size: size,
                ..config()
            })
            .await;
            let mut conn = server.connect().await;
            let answer = conn.request(GET).await;
            assert_eq!(answer.status, 200);
            assert_eq!(answer.body.len(), size, "get_size {size}");
            assert_eq!(answer.header("content-type"), Some("text/plain"));
            if size >= 13 {
                assert_eq!(&answer.body[..13], b"Hello, world!");
            }
            let answer = conn
                .request(b"DELETE /thing HTTP/1.1\r\nHost: localhost\r\n\r\n")
                .await;
            assert_eq!(answer.body.len(), size, "bodiless DELETE answered like GET");
            server.stop().await.unwrap();
        }
    }

    #[tokio::test]
    async fn head_gets_headers_only() {
        let server = Server::start(EchoConfig {
            get_size: 500,
            ..config()
        })
        .await;
        let mut conn = server.connect().await;
        let answer = conn
            .request(b"HEAD / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.header("content-length"), Some("500"));
        // Had a body followed the head, this next answer would be misparsed.
        let answer = conn.request(GET).await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body.len(), 500);
        assert!(conn.buf.is_empty(), "no stray bytes after the GET");
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn keep_alive_serves_many_requests_on_one_connection() {
        let server = Server::start(config()).await;
        let mut conn = server.connect().await;
        for i in 0..20 {
            let body = format!("request number {i}");
            let answer = conn.request(&post("/", None, body.as_bytes())).await;
            assert_eq!(answer.body, body.as_bytes());
            let answer = conn.request(GET).await;
            assert_eq!(answer.body, b"Hello, world!");
            assert_eq!(answer.header("connection"), None);
        }
        // Pipelined: three requests in one write, three answers in order.
        let mut raw = Vec::new();
        raw.extend_from_slice(&post("/", None, b"one"));
        raw.extend_from_slice(GET);
        raw.extend_from_slice(&post("/", None, b"three"));
        conn.send(&raw).await;
        assert_eq!(conn.answer(false).await.body, b"one");
        assert_eq!(conn.answer(false).await.body, b"Hello, world!");
        assert_eq!(conn.answer(false).await.body, b"three");
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn http10_keeps_alive_only_when_asked() {
        let server = Server::start(config()).await;
        let mut conn = server.connect().await;
        let asked = b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
        for _ in 0..3 {
            let answer = conn.request(asked).await;
            assert_eq!(answer.status, 200);
            // The server's own version (RFC 9110 §2.5), as nginx and the intermediaries answer;
            // hyper, which served the echo before, echoed the client's.
            assert_eq!(answer.version, "HTTP/1.1");
            assert_eq!(answer.body, b"Hello, world!");
            assert!(answer
                .header("connection")
                .is_some_and(|v| v.eq_ignore_ascii_case("keep-alive")));
        }
        let answer = conn.request(b"GET / HTTP/1.0\r\n\r\n").await;
        assert_eq!(answer.status, 200);
        assert!(conn.closed().await, "HTTP/1.0 without keep-alive is closed");
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn health_is_ok_and_not_delayed() {
        let server = Server::start(EchoConfig {
            delay: Duration::from_secs(3),
            ..config()
        })
        .await;
        let mut conn = server.connect().await;
        let started = Instant::now();
        let answer = conn
            .request(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body, b"ok");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "no delay on /health"
        );
        server.stop().await.unwrap();
    }
}

mod delay {
    use super::*;

    #[tokio::test]
    async fn delay_holds_get_and_post_answers() {
        let delay = Duration::from_millis(50);
        let server = Server::start(EchoConfig { delay, ..config() }).await;
        let mut conn = server.connect().await;
        for raw in [GET.to_vec(), post("/", None, b"delayed")] {
            let started = Instant::now();
            let answer = conn.request(&raw).await;
            let took = started.elapsed();
            assert_eq!(answer.status, 200);
            assert!(
                took >= delay,
                "answered after {took:?}, before the {delay:?} delay"
            );
            assert!(took < delay + Duration::from_secs(3), "took {took:?}");
        }
        server.stop().await.unwrap();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn delayed_requests_wait_side_by_side_not_in_turn() {
        // One runtime thread: were the delay a blocking sleep, 20 requests would take 20 × 300 ms.
        let delay = Duration::from_millis(300);
        let server = Server::start(EchoConfig { delay, ..config() }).await;
        let started = Instant::now();
        let mut clients = Vec::new();
        for _ in 0..20 {
            let mut conn = server.connect().await;
            clients.push(tokio::spawn(async move { conn.request(GET).await.status }));
        }
        for client in clients {
            assert_eq!(client.await.unwrap(), 200);
        }
        let took = started.elapsed();
        assert!(took >= delay);
        assert!(
            took < Duration::from_secs(3),
            "20 delayed requests took {took:?}"
        );
        server.stop().await.unwrap();
    }
}

mod limits {
    use super::*;

    fn small_limit() -> EchoConfig {
        EchoConfig {
            max_body: 1024,
            ..config()
        }
    }

    #[tokio::test]
    async fn body_at_the_limit_is_echoed() {
        let server = Server::start(small_limit()).await;
        let mut conn = server.connect().await;
        let answer = conn.request(&post("/", None, &[b'a'; 1024])).await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body.len(), 1024);
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn declared_length_over_the_limit_gets_413_and_a_close() {
        let server = Server::start(small_limit()).await;
        let mut conn = server.connect().await;
        let answer = conn.request(&post("/", None, &[b'a'; 1025])).await;
        assert_eq!(answer.status, 413);
        assert_eq!(answer.header("connection"), Some("close"));
        assert!(conn.closed().await);
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn chunked_body_over_the_limit_gets_413() {
        let server = Server::start(small_limit()).await;
        let mut conn = server.connect().await;
        let mut raw =
            b"POST / HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for _ in 0..3 {
            raw.extend_from_slice(b"200\r\n");
            raw.extend_from_slice(&[b'b'; 0x200]);
            raw.extend_from_slice(b"\r\n");
        }
        raw.extend_from_slice(b"0\r\n\r\n");
        let answer = conn.request(&raw).await;
        assert_eq!(answer.status, 413);
        assert!(conn.closed().await);
        server.stop().await.unwrap();
    }
}

mod shutdown {
    use super::*;

    #[tokio::test]
    async fn in_flight_delayed_request_finishes_then_serve_returns() {
        let mut server = Server::start(EchoConfig {
            delay: Duration::from_secs(1),
            ..config()
        })
        .await;
        let addr = server.addr;
        let mut conn = server.connect().await;
        conn.send(&post("/", None, b"finish me")).await;
        // Let the request reach the server and start its delay (400 ms: margin for a loaded
        // machine, still well inside the delay).
        tokio::time::sleep(Duration::from_millis(400)).await;
        let started = Instant::now();
        server.signal_stop();
        let answer = conn.answer(false).await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body, b"finish me");
        assert!(
            conn.closed().await,
            "the drained connection is closed after its answer"
        );
        server.stop().await.unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "drain did not wait for its timeout"
        );
        assert!(
            TcpStream::connect(addr).await.is_err(),
            "no longer accepting after shutdown"
        );
    }

    #[tokio::test]
    async fn idle_keep_alive_connections_do_not_hold_up_shutdown() {
        let server = Server::start(config()).await;
        let mut conns = Vec::new();
        for _ in 0..5 {
            let mut conn = server.connect().await;
            assert_eq!(conn.request(GET).await.status, 200);
            conns.push(conn);
        }
        let started = Instant::now();
        server.stop().await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(3));
        for conn in &mut conns {
            assert!(conn.closed().await);
        }
    }

    #[test]
    fn run_blocking_serves_on_its_own_threads_and_returns_on_shutdown() {
        {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let (stop, stopped) = oneshot::channel::<()>();
            let config = EchoConfig {
                threads: 2,
                ..EchoConfig::default()
            };
            let shutdown = async {
                let _ = stopped.await;
            };
            let server = std::thread::spawn(move || echo::run_blocking(listener, config, shutdown));
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                // Several connections, so that both threads of the per-core design take some.
                for _ in 0..8 {
                    let mut conn = Conn::new(TcpStream::connect(addr).await.unwrap());
                    assert_eq!(conn.request(GET).await.body, b"Hello, world!");
                    assert_eq!(conn.request(&post("/", None, b"x")).await.body, b"x");
                }
            });
            stop.send(()).unwrap();
            server.join().unwrap().unwrap();
            assert!(std::net::TcpStream::connect(addr).is_err());
        }
    }

    #[test]
    fn run_blocking_drains_an_in_flight_delayed_request() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let config = EchoConfig {
            threads: 2,
            delay: Duration::from_secs(1),
            ..EchoConfig::default()
        };
        let server = std::thread::spawn(move || {
            echo::run_blocking(listener, config, async {
                let _ = stopped.await;
            })
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut conn = Conn::new(TcpStream::connect(addr).await.unwrap());
            conn.send(&post("/", None, b"in flight")).await;
            // Inside the 1 s delay, with margin for the request to arrive on a loaded machine.
            tokio::time::sleep(Duration::from_millis(400)).await;
            stop.send(()).unwrap();
            let answer = conn.answer(false).await;
            assert_eq!(answer.status, 200);
            assert_eq!(answer.body, b"in flight");
        });
        server.join().unwrap().unwrap();
    }

    #[tokio::test]
    async fn invalid_configuration_is_refused_before_serving() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let err = echo::serve(
            listener,
            EchoConfig {
                threads: 0,
                ..EchoConfig::default()
            },
            std::future::pending(),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("threads"), "{err}");
    }
}

mod parsing {
    use super::*;

    /// Sends `raw` on a fresh connection; returns the status and whether the server then closed.
    async fn refused(server: &Server, raw: &[u8]) -> (u16, bool) {
        let mut conn = server.connect().await;
        let answer = conn.request(raw).await;
        (answer.status, conn.closed().await)
    }

    #[tokio::test]
    async fn host_rules_of_rfc_9112() {
        let server = Server::start(config()).await;
        for raw in [
            &b"GET / HTTP/1.1\r\n\r\n"[..],
            b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
        ] {
            let what = String::from_utf8_lossy(raw);
            assert_eq!(refused(&server, raw).await, (400, true), "{what}");
        }
        // HTTP/1.0 needs no Host.
        let mut conn = server.connect().await;
        assert_eq!(conn.request(b"GET / HTTP/1.0\r\n\r\n").await.status, 200);
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn malformed_framing_gets_400_and_close_never_a_hang() {
        let server = Server::start(config()).await;
        for raw in [
            &b"GET foo bar\r\n\r\n"[..],
            b"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: \x01\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
            b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        ] {
            let what = String::from_utf8_lossy(raw);
            assert_eq!(refused(&server, raw).await, (400, true), "{what}");
        }
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn too_many_header_fields_get_431() {
        let server = Server::start(config()).await;
        let mut raw = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
        for i in 0..120 {
            raw.extend_from_slice(format!("X-{i}: a\r\n").as_bytes());
        }
        raw.extend_from_slice(b"\r\n");
        assert_eq!(refused(&server, &raw).await, (431, true));
        server.stop().await.unwrap();
    }
}

mod accept {
    use super::*;

    const CHILD_ENV: &str = "GATEBENCH_ECHO_EMFILE_CHILD";

    /// Runs [`out_of_descriptors_child`] in a child process: it lowers the descriptor limit,
    /// which must not affect the other tests of this binary.
    #[test]
    fn accept_backs_off_when_out_of_descriptors_and_recovers() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "echo::accept::out_of_descriptors_child",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
        assert!(stdout.contains("1 passed"), "child ran no test:\n{stdout}");
    }

    #[allow(unsafe_code)]
    fn cpu_time() -> Duration {
        // getrusage needs no descriptor, unlike reading /proc while none are left.
        // SAFETY: rusage is plain old data; all-zero bytes are a valid value.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is a valid, writable rusage for the call to fill.
        assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) }, 0);
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
        };
        tv(usage.ru_utime) + tv(usage.ru_stime)
    }

    #[tokio::test]
    #[ignore = "run in a child process by accept_backs_off_when_out_of_descriptors_and_recovers"]
    async fn out_of_descriptors_child() {
        if std::env::var_os(CHILD_ENV).is_none() {
            // Run with `--ignored` by hand: lowering the limit here would starve other tests.
            return;
        }
        let server = Server::start(config()).await;
        let mut existing = server.connect().await;
        assert_eq!(existing.request(GET).await.status, 200);

        // Lower the limit just above the descriptors in use, then use up the rest.
        let highest = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u64>().ok())
            .max()
            .unwrap();
        use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
        let old = getrlimit(Resource::Nofile);
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(highest + 16),
                maximum: old.maximum,
            },
        )
        .unwrap();
        let mut fillers = Vec::new();
        while let Ok(file) = std::fs::File::open("/dev/null") {
            fillers.push(file);
        }
        // One descriptor for the client; the server's accept then finds none (EMFILE).
        fillers.pop();
        let mut pending = server.connect().await;
        pending.send(GET).await;

        let cpu_before = cpu_time();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        // Existing connections keep being served while accept is paused.
        assert_eq!(existing.request(GET).await.status, 200);
        let cpu = cpu_time() - cpu_before;
        assert!(
            cpu < Duration::from_millis(300),
            "accept loop spun: {cpu:?} CPU in 1.5 s"
        );

        // Descriptors come back: the waiting connection is accepted and answered.
        drop(fillers);
        let answer = pending.answer(false).await;
        assert_eq!(answer.status, 200);
        setrlimit(Resource::Nofile, old).unwrap();
        server.stop().await.unwrap();
    }
}

/// HTTP/2 and TLS helpers.
mod support_h2 {
    use super::*;
    use bytes::Bytes;
    use http::Request;
    use http_body_util::Full;

    pub use crate::support::{tls_connect, try_tls_connect};
    pub use gatebench_services::TlsSettings;

    /// A TLS-serving config with a freshly generated certificate written to a temp dir; returns
    /// the config and the certificate's PEM for the client to trust.
    pub fn tls_config(http2: bool, tag: &str) -> (EchoConfig, String) {
        let cert = crate::support::cert(&format!("echo-{tag}"));
        let config = EchoConfig {
            tls: Some(cert.settings),
            http2,
            ..config()
        };
        (config, cert.pem)
    }

    /// An HTTP/2 client over any stream (TLS or prior-knowledge cleartext): `support::H2`'s
    /// connection, with the answer read as the echo tests check it.
    pub struct H2 {
        pub send: hyper::client::conn::http2::SendRequest<Full<Bytes>>,
    }

    /// One HTTP/2 answer.
    pub struct H2Answer {
        pub status: u16,
        pub version: http::Version,
        pub content_type: Option<String>,
        pub content_length: Option<String>,
        pub body: Vec<u8>,
    }

    impl H2 {
        pub async fn handshake<S>(stream: S) -> Self
        where
            S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
        {
            H2 {
                send: crate::support::H2::handshake(stream).await.send,
            }
        }

        pub async fn request(&mut self, method: &str, body: &[u8], ct: Option<&str>) -> H2Answer {
            let mut req = Request::builder()
                .method(method)
                .uri("https://localhost/echo");
            if let Some(ct) = ct {
                req = req.header("content-type", ct);
            }
            let req = req.body(Full::new(Bytes::copy_from_slice(body))).unwrap();
            let mut client = crate::support::H2 {
                send: self.send.clone(),
            };
            let answer = client.send_request(req).await;
            let header = |name: &str| {
                answer
                    .headers
                    .get(name)
                    .map(|v| v.to_str().unwrap().to_owned())
            };
            H2Answer {
                status: answer.status,
                version: answer.version,
                content_type: header("content-type"),
                content_length: header("content-length"),
                body: answer.body.expect("the whole HTTP/2 body"),
            }
        }
    }
}

mod tls {
    use super::support_h2::*;
    use super::*;

    #[tokio::test]
    async fn http1_over_tls_echoes() {
        let (config, cert) = tls_config(false, "h1");
        let server = Server::start(config).await;
        let tls = tls_connect(server.addr, &cert, &[b"h2", b"http/1.1"]).await;
        assert_eq!(
            tls.get_ref().1.alpn_protocol(),
            Some(&b"http/1.1"[..]),
            "h2 is not offered when http2 is off"
        );
        let mut conn = Conn::new(tls);
        let answer = conn.request(&post("/", Some("text/xml"), b"<a/>")).await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body, b"<a/>");
        assert_eq!(answer.header("content-type"), Some("text/xml"));
        assert_eq!(conn.request(GET).await.body, b"Hello, world!");
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn http2_is_chosen_by_alpn() {
        let (config, cert) = tls_config(true, "alpn");
        let server = Server::start(config).await;
        let tls = tls_connect(server.addr, &cert, &[b"h2", b"http/1.1"]).await;
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let mut h2 = H2::handshake(tls).await;
        let answer = h2.request("POST", b"over h2", Some("text/plain")).await;
        assert_eq!(answer.version, http::Version::HTTP_2);
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body, b"over h2");
        assert_eq!(answer.content_type.as_deref(), Some("text/plain"));
        // An HTTP/1.1-only client on the same port still gets HTTP/1.1.
        let tls = tls_connect(server.addr, &cert, &[b"http/1.1"]).await;
        let mut conn = Conn::new(tls);
        assert_eq!(conn.request(GET).await.version, "HTTP/1.1");
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn generated_certificate_when_no_paths_are_given() {
        let server = Server::start(EchoConfig {
            tls: Some(TlsSettings::default()),
            ..config()
        })
        .await;
        // The client cannot trust a certificate it has never seen: the handshake gets as far as
        // certificate verification, which proves a certificate was generated and served.
        let err = try_tls_connect(server.addr, None, &[b"http/1.1"])
            .await
            .unwrap_err();
        assert!(err.to_string().contains("UnknownIssuer"), "{err}");
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn plain_http_to_the_tls_port_gets_400_not_a_hang() {
        let (config, _) = tls_config(true, "plain");
        let server = Server::start(config).await;
        let mut conn = server.connect().await;
        let started = Instant::now();
        let answer = conn.request(GET).await;
        assert_eq!(answer.status, 400);
        assert!(String::from_utf8_lossy(&answer.body).contains("TLS"));
        assert!(conn.closed().await);
        assert!(started.elapsed() < Duration::from_secs(5));
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn unreadable_certificate_is_a_startup_error() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let config = EchoConfig {
            tls: Some(TlsSettings {
                cert_pem_path: Some("/nonexistent/cert.pem".into()),
                key_pem_path: Some("/nonexistent/key.pem".into()),
            }),
            ..config()
        };
        let err = echo::serve(listener, config, std::future::pending())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("/nonexistent/cert.pem"), "{err}");
    }
}

mod h2 {
    use super::support_h2::*;
    use super::*;

    fn h2c() -> EchoConfig {
        EchoConfig {
            http2: true,
            ..config()
        }
    }

    #[tokio::test]
    async fn h2c_by_prior_knowledge_and_http1_share_the_port() {
        let server = Server::start(h2c()).await;
        let mut h2 = H2::handshake(TcpStream::connect(server.addr).await.unwrap()).await;
        let answer = h2
            .request("POST", b"{\"a\":1}", Some("application/json"))
            .await;
        assert_eq!(answer.version, http::Version::HTTP_2);
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body, b"{\"a\":1}");
        assert_eq!(answer.content_type.as_deref(), Some("application/json"));
        let answer = h2.request("GET", b"", None).await;
        assert_eq!(answer.body, b"Hello, world!");
        assert_eq!(answer.content_length.as_deref(), Some("13"));
        let answer = h2.request("HEAD", b"", None).await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.content_length.as_deref(), Some("13"));
        assert!(answer.body.is_empty());
        let mut conn = server.connect().await;
        assert_eq!(conn.request(GET).await.version, "HTTP/1.1");
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn delay_applies_on_http2() {
        let delay = Duration::from_millis(50);
        let server = Server::start(EchoConfig { delay, ..h2c() }).await;
        let mut h2 = H2::handshake(TcpStream::connect(server.addr).await.unwrap()).await;
        for method in ["GET", "POST"] {
            let started = Instant::now();
            let answer = h2.request(method, b"body", None).await;
            let took = started.elapsed();
            assert_eq!(answer.status, 200);
            assert!(took >= delay, "{method} answered after {took:?}");
            assert!(
                took < delay + Duration::from_secs(3),
                "{method} took {took:?}"
            );
        }
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn body_limit_applies_on_http2() {
        let server = Server::start(EchoConfig {
            max_body: 100,
            ..h2c()
        })
        .await;
        let mut h2 = H2::handshake(TcpStream::connect(server.addr).await.unwrap()).await;
        assert_eq!(h2.request("POST", &[1; 101], None).await.status, 413);
        // The connection survives a refused stream.
        let answer = h2.request("POST", &[1; 100], None).await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body.len(), 100);
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn max_concurrent_streams_is_announced() {
        let server = Server::start(EchoConfig {
            h2_max_streams: 3,
            ..h2c()
        })
        .await;
        let tcp = TcpStream::connect(server.addr).await.unwrap();
        let (mut client, conn) = ::h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(conn);
        let req = http::Request::get("http://localhost/").body(()).unwrap();
        let (response, _) = client.send_request(req, true).unwrap();
        let response = tokio::time::timeout(PATIENCE, response)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(client.current_max_send_streams(), 3);
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn concurrent_delayed_streams_on_one_connection() {
        let delay = Duration::from_millis(300);
        let server = Server::start(EchoConfig { delay, ..h2c() }).await;
        let tcp = TcpStream::connect(server.addr).await.unwrap();
        let h2 = H2::handshake(tcp).await;
        let started = Instant::now();
        let mut streams = Vec::new();
        for i in 0..10u8 {
            let mut h2 = H2 {
                send: h2.send.clone(),
            };
            streams.push(tokio::spawn(async move {
                h2.request("POST", &[i; 10], None).await.body == [i; 10]
            }));
        }
        for stream in streams {
            assert!(stream.await.unwrap());
        }
        let took = started.elapsed();
        assert!(took >= delay);
        assert!(took < Duration::from_secs(2), "10 streams took {took:?}");
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn shutdown_lets_an_in_flight_stream_finish() {
        let mut server = Server::start(EchoConfig {
            delay: Duration::from_millis(400),
            ..h2c()
        })
        .await;
        let mut h2 = H2::handshake(TcpStream::connect(server.addr).await.unwrap()).await;
        let in_flight = tokio::spawn(async move { h2.request("POST", b"last", None).await.body });
        tokio::time::sleep(Duration::from_millis(150)).await;
        server.signal_stop();
        assert_eq!(in_flight.await.unwrap(), b"last");
        server.stop().await.unwrap();
    }
}

mod head_deadline {
    use super::support_h2::*;
    use super::*;

    /// The head deadline of these tests: long enough that a loaded machine does not miss it by
    /// much, short enough to keep the tests quick.
    const DEADLINE: Duration = Duration::from_millis(1000);
    /// One byte this often: far below the deadline, so a timer that counted only silence (an
    /// inactivity timeout) would never fire and the test would see no 408 at all.
    const TRICKLE: Duration = Duration::from_millis(50);

    fn deadline_config() -> EchoConfig {
        EchoConfig {
            header_timeout: DEADLINE,
            ..config()
        }
    }

    /// Trickles a head that never ends, one byte per [`TRICKLE`], until the server answers:
    /// asserts a 408 that comes no earlier than the deadline and within the deadline plus
    /// generous slack for a loaded 2-core machine, then a close.
    async fn slowloris<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(stream: S) {
        let (mut read, mut write) = tokio::io::split(stream);
        let started = Instant::now();
        let trickle = tokio::spawn(async move {
            let head = b"GET / HTTP/1.1\r\nHost: a\r\nX-Slow: ";
            for &byte in head.iter().chain(std::iter::repeat(&b'a')) {
                if write.write_all(&[byte]).await.is_err() {
                    return;
                }
                tokio::time::sleep(TRICKLE).await;
            }
        });
        let mut answer = Vec::new();
        let mut chunk = [0u8; 1024];
        let closed = loop {
            match tokio::time::timeout(PATIENCE, read.read(&mut chunk)).await {
                Ok(Ok(0)) | Ok(Err(_)) => break true,
                Ok(Ok(n)) => answer.extend_from_slice(&chunk[..n]),
                Err(_) => break false,
            }
        };
        let took = started.elapsed();
        trickle.abort();
        let text = String::from_utf8_lossy(&answer);
        assert!(text.starts_with("HTTP/1.1 408 "), "{text:?} after {took:?}");
        assert!(
            text.to_ascii_lowercase().contains("connection: close"),
            "{text}"
        );
        assert!(closed, "the connection closes after the 408");
        // The deadline counts from the first byte, which left just after `started`.
        assert!(took >= DEADLINE - Duration::from_millis(50), "{took:?}");
        assert!(took < DEADLINE + Duration::from_secs(4), "{took:?}");
    }

    #[tokio::test]
    async fn slowloris_head_gets_408_at_the_deadline_while_bytes_trickle() {
        let server = Server::start(deadline_config()).await;
        slowloris(TcpStream::connect(server.addr).await.unwrap()).await;
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn slowloris_head_over_tls_gets_408() {
        let (config, cert) = tls_config(false, "slowloris");
        let server = Server::start(EchoConfig {
            header_timeout: DEADLINE,
            ..config
        })
        .await;
        slowloris(tls_connect(server.addr, &cert, &[b"http/1.1"]).await).await;
        server.stop().await.unwrap();
    }

    /// The deadline runs from a head's first byte: a connection idle (before its first request,
    /// and between requests) for longer than the deadline is served normally, no 408.
    #[tokio::test]
    async fn idle_connections_are_not_timed_out_as_slow_heads() {
        let server = Server::start(deadline_config()).await;
        let mut conn = server.connect().await;
        tokio::time::sleep(DEADLINE + Duration::from_millis(500)).await;
        assert_eq!(conn.request(GET).await.status, 200);
        tokio::time::sleep(DEADLINE + Duration::from_millis(500)).await;
        let answer = conn.request(&post("/", None, b"still here")).await;
        assert_eq!(
            (answer.status, answer.body.as_slice()),
            (200, &b"still here"[..])
        );
        server.stop().await.unwrap();
    }

    #[tokio::test]
    async fn a_zero_header_timeout_is_refused() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let err = echo::serve(
            listener,
            EchoConfig {
                header_timeout: Duration::ZERO,
                ..config()
            },
            async {},
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("header_timeout"), "{err}");
    }
}
