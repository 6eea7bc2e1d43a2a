//! Prometheus remote write 1.0 (`gatebench load --remote-write URL`), for runs nothing scrapes:
//! the same series as a scrape, pushed every interval (1 s by default) and once at the end.
//!
//! <https://prometheus.io/docs/specs/prw/remote_write_spec/>: a `prometheus.WriteRequest`
//! protobuf, snappy block-compressed, sent by `POST` with `Content-Encoding: snappy`,
//! `Content-Type: application/x-protobuf` and `X-Prometheus-Remote-Write-Version: 0.1.0`.
//! The messages, from `prometheus/prompb` (`types.proto`, `remote.proto`), field numbers as
//! used below:
//!
//! ```text
//! WriteRequest   { repeated TimeSeries timeseries = 1; repeated MetricMetadata metadata = 3; }
//! TimeSeries     { repeated Label labels = 1; repeated Sample samples = 2; }
//! Label          { string name = 1; string value = 2; }
//! Sample         { double value = 1; int64 timestamp = 2; }   // milliseconds since the epoch
//! MetricMetadata { MetricType type = 1; string metric_family_name = 2; string help = 4; }
//! MetricType     { COUNTER = 1; GAUGE = 2; HISTOGRAM = 3; }
//! ```
//!
//! A series' labels are sorted by name, `__name__` among them, as the spec requires. A
//! histogram goes as its classic series (`_bucket{le}`, `_sum`, `_count`), as in the text
//! exposition; remote write 1.0 has no native histograms. Every series also carries
//! `job="gatebench"` and `instance="<host name>"`, as a scrape would add them, unless the run's
//! labels (`--metrics-label`) name `job` or `instance` themselves.
//!
//! **It never holds up the load.** The collector, once a second, hands a copy of the figures
//! to a bounded queue without waiting (`Feed::offer`); a thread of its own takes everything
//! queued and sends it as one request. A full queue (the endpoint slower than the interval)
//! drops the newest copy, counted; a push that fails (no connection, a timeout, a status other
//! than 2xx) is counted and not retried — the counters are cumulative, so the next push that
//! gets through carries every request, only points in time are lost. The first failure is said
//! once on stderr. At the end, one last push of the final figures, waited for a bounded time.
//!
//! Not here: TLS (`https://` is refused when the URL is parsed), authentication, retries with
//! backoff, remote write 2.0.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::proto::{Field, Reader, Writer};
use super::{Kind, LiveMetrics, Snapshot, Source, Value};

/// Copies of the figures waiting to be sent, at most.
const QUEUE: usize = 32;

/// How long one push may take to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How long one push may wait on a write or a read once connected.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// A remote-write endpoint: `http://HOST[:PORT][/PATH]` (port 80 by default, path `/` by
/// default; Prometheus's receiver is `/api/v1/write`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteWriteUrl {
    /// Host name or address (IPv6 without its brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
    text: String,
}

impl fmt::Display for RemoteWriteUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for RemoteWriteUrl {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let uri: http::Uri = s
            .trim()
            .parse()
            .map_err(|e| format!("'{s}' is not a URL ({e})"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(format!(
                    "'{s}': remote write over TLS (https) is not supported; use an http:// \
                     endpoint (a local Prometheus or agent)"
                ))
            }
            _ => return Err(format!("'{s}': expected an http:// URL")),
        }
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("'{s}': the URL has no host"))?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        let path = if path.is_empty() {
            "/".to_owned()
        } else {
            path
        };
        // The authority's text after the host: http::Uri keeps a port it cannot read as u16.
        let after_host = uri
            .authority()
            .map_or("", |a| a.as_str())
            .rsplit_once(']')
            .map_or_else(|| uri.authority().map_or("", |a| a.as_str()), |(_, r)| r);
        let port = match after_host.rsplit_once(':') {
            None => 80,
            Some((_, p)) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| format!("'{s}': port '{p}' is not a TCP port (1 to 65535)"))?,
        };
        Ok(RemoteWriteUrl {
            host,
            port,
            path,
            text: s.trim().to_owned(),
        })
    }
}

/// What became of the pushes of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemoteWriteStats {
    /// Pushes the endpoint took (a 2xx answer).
    pub pushed: u64,
    /// Pushes that failed: no connection, a timeout, a status other than 2xx.
    pub failed: u64,
    /// Copies of the figures dropped because the queue was full.
    pub dropped: u64,
    /// Samples in the pushes the endpoint took.
    pub samples: u64,
    /// The first failure, as said on stderr.
    pub first_error: Option<String>,
    /// The last push had not finished when the wait for it ended.
    pub unfinished: bool,
}

#[derive(Debug, Default)]
struct Counters {
    pushed: AtomicU64,
    failed: AtomicU64,
    dropped: AtomicU64,
    samples: AtomicU64,
    first_error: Mutex<Option<String>>,
}

/// The collector's side: when a copy is due, and the queue to put it in.
#[derive(Debug)]
pub(crate) struct Feed {
    interval: Duration,
    last: Mutex<Option<Instant>>,
    tx: Mutex<Option<SyncSender<(i64, Snapshot)>>>,
    counters: Arc<Counters>,
}

impl Feed {
    /// Whether a copy is due: the first second, then once an interval has passed (within a
    /// quarter of a second, as seconds arrive with some jitter).
    pub(crate) fn due(&self) -> bool {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let due = last
            .is_none_or(|l| now.duration_since(l) + Duration::from_millis(250) >= self.interval);
        if due {
            *last = Some(now);
        }
        due
    }

    /// Whether the queue still takes copies (the writer has not finished).
    fn open(&self) -> bool {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// Queues a copy without waiting; a full queue drops it, counted.
    pub(crate) fn offer(&self, snap: Snapshot) {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = tx.as_ref() {
            match tx.try_send((unix_ms(), snap)) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                }
                Err(TrySendError::Disconnected(_)) => {}
            }
        }
    }
}

/// A running remote writer: its thread and the figures it reads.
pub struct RemoteWrite {
    feed: Arc<Feed>,
    source: Arc<dyn Source + Send + Sync>,
    last: Arc<Mutex<Option<(i64, Snapshot)>>>,
    done: Receiver<()>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// With [`RemoteWrite::start_ticking`]: the thread that takes the copies.
    ticker: Option<std::thread::JoinHandle<()>>,
}

impl fmt::Debug for RemoteWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteWrite")
            .field("feed", &self.feed)
            .finish_non_exhaustive()
    }
}

impl RemoteWrite {
    /// Starts pushing `metrics` to `url` every `interval` (from the run's first second on: the
    /// run's collector hands each copy over as its second ends). Nothing is sent before the
    /// run: an endpoint that is down shows at the first push.
    pub fn start(
        url: RemoteWriteUrl,
        interval: Duration,
        metrics: Arc<LiveMetrics>,
    ) -> std::io::Result<RemoteWrite> {
        let w = RemoteWrite::spawn(url, interval, metrics.clone(), metrics.labels())?;
        metrics.attach(w.feed.clone());
        Ok(w)
    }

    /// Starts pushing whatever `source` shows to `url` every `interval`, taken by a thread of
    /// its own (a suite's figures, which span many runs); `labels` are the source's own, for
    /// the `job` and `instance` rule.
    pub fn start_ticking(
        url: RemoteWriteUrl,
        interval: Duration,
        source: Arc<dyn Source + Send + Sync>,
        labels: &[(String, String)],
    ) -> std::io::Result<RemoteWrite> {
        let mut w = RemoteWrite::spawn(url, interval, source.clone(), labels)?;
        let feed = w.feed.clone();
        w.ticker = Some(
            std::thread::Builder::new()
                .name("gatebench-remote-write-tick".into())
                .spawn(move || {
                    let step = Duration::from_millis(50);
                    let mut next = Instant::now() + interval;
                    while feed.open() {
                        if Instant::now() >= next {
                            feed.offer(source.snapshot());
                            next += interval;
                        }
                        std::thread::sleep(step);
                    }
                })?,
        );
        Ok(w)
    }

    fn spawn(
        url: RemoteWriteUrl,
        interval: Duration,
        source: Arc<dyn Source + Send + Sync>,
        labels: &[(String, String)],
    ) -> std::io::Result<RemoteWrite> {
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        let counters = Arc::new(Counters::default());
        let feed = Arc::new(Feed {
            interval,
            last: Mutex::new(None),
            tx: Mutex::new(Some(tx)),
            counters: counters.clone(),
        });
        let last = Arc::new(Mutex::new(None));
        let (done_tx, done) = mpsc::channel();
        let extra = identity(labels);
        let sender = Sender {
            url,
            counters,
            extra,
            said: AtomicBool::new(false),
        };
        let final_slot = last.clone();
        let thread = std::thread::Builder::new()
            .name("gatebench-remote-write".into())
            .spawn(move || {
                sender.run(rx, &final_slot);
                let _ = done_tx.send(());
            })?;
        Ok(RemoteWrite {
            feed,
            source,
            last,
            done,
            thread: Some(thread),
            ticker: None,
        })
    }

    /// Closes the queue, which tells the sending thread to send what is left and the final
    /// figures, and stops the ticker, if any.
    fn close(&mut self) {
        self.feed
            .tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }

    /// The run is over: pushes the final figures (after what is queued) and waits for that
    /// push at most `wait`; then what became of every push.
    pub fn finish(mut self, wait: Duration) -> RemoteWriteStats {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((unix_ms(), self.source.snapshot()));
        self.close();
        let unfinished = self.done.recv_timeout(wait).is_err();
        if !unfinished {
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
        let c = &self.feed.counters;
        RemoteWriteStats {
            pushed: c.pushed.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
            samples: c.samples.load(Ordering::Relaxed),
            first_error: c
                .first_error
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            unfinished,
        }
    }
}

impl Drop for RemoteWrite {
    /// A writer dropped without [`RemoteWrite::finish`] (an error path): its threads end, what
    /// is queued is still sent.
    fn drop(&mut self) {
        self.close();
    }
}

/// `job` and `instance` labels for every series, unless the run's labels have them.
fn identity(labels: &[(String, String)]) -> Vec<(String, String)> {
    let has = |n: &str| labels.iter().any(|(k, _)| k == n);
    let mut out = Vec::new();
    if !has("job") {
        out.push(("job".to_owned(), "gatebench".to_owned()));
    }
    if !has("instance") {
        let host = rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned();
        out.push(("instance".to_owned(), host));
    }
    out
}

/// The thread's side.
struct Sender {
    url: RemoteWriteUrl,
    counters: Arc<Counters>,
    extra: Vec<(String, String)>,
    said: AtomicBool,
}

impl Sender {
    fn run(&self, rx: Receiver<(i64, Snapshot)>, last: &Mutex<Option<(i64, Snapshot)>>) {
        while let Ok(first) = rx.recv() {
            let mut batch = vec![first];
            batch.extend(rx.try_iter());
            self.push(&batch);
        }
        if let Some(snap) = last.lock().unwrap_or_else(|e| e.into_inner()).take() {
            self.push(&[snap]);
        }
    }

    fn push(&self, batch: &[(i64, Snapshot)]) {
        let (body, samples) = encode(batch, &self.extra);
        let compressed = match snap::raw::Encoder::new().compress_vec(&body) {
            Ok(c) => c,
            Err(e) => return self.failed(format!("snappy: {e}")),
        };
        match post(&self.url, &compressed) {
            Ok(()) => {
                self.counters.pushed.fetch_add(1, Ordering::Relaxed);
                self.counters.samples.fetch_add(samples, Ordering::Relaxed);
            }
            Err(e) => self.failed(e),
        }
    }

    fn failed(&self, why: String) {
        self.counters.failed.fetch_add(1, Ordering::Relaxed);
        if !self.said.swap(true, Ordering::Relaxed) {
            eprintln!(
                "gatebench: --remote-write {}: {why}; the run goes on, failed pushes are counted",
                self.url
            );
            *self
                .counters
                .first_error
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some(why);
        }
    }
}

/// One `POST` of a compressed WriteRequest; Ok on a 2xx answer.
fn post(url: &RemoteWriteUrl, body: &[u8]) -> Result<(), String> {
    let addrs: Vec<_> = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", url.host))?
        .collect();
    let mut last_err = format!("{} resolves to no address", url.host);
    let mut conn = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, CONNECT_TIMEOUT) {
            Ok(c) => {
                conn = Some(c);
                break;
            }
            Err(e) => last_err = format!("cannot connect to {a}: {e}"),
        }
    }
    let mut c = conn.ok_or(last_err)?;
    let io = |e: std::io::Error| format!("{e}");
    c.set_read_timeout(Some(IO_TIMEOUT)).map_err(io)?;
    c.set_write_timeout(Some(IO_TIMEOUT)).map_err(io)?;
    let _ = c.set_nodelay(true);
    let host = if url.host.contains(':') {
        format!("[{}]:{}", url.host, url.port)
    } else {
        format!("{}:{}", url.host, url.port)
    };
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: gatebench/{}\r\n\
         Content-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\n\
         X-Prometheus-Remote-Write-Version: 0.1.0\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        url.path,
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    let mut out = head.into_bytes();
    out.extend_from_slice(body);
    c.write_all(&out).map_err(|e| format!("sending: {e}"))?;
    // The status line, and a little of the body to say why when it is not 2xx.
    let mut got = Vec::with_capacity(512);
    let mut buf = [0u8; 512];
    while got.len() < 4096 {
        match c.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if got.is_empty() => return Err(format!("reading the answer: {e}")),
            Err(_) => break,
        }
        if answer_complete(&got) {
            break;
        }
    }
    let text = String::from_utf8_lossy(&got);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| "no HTTP answer".to_owned())?;
    if (200..300).contains(&status) {
        return Ok(());
    }
    let why = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.trim())
        .unwrap_or("")
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect::<String>();
    Err(format!(
        "HTTP {status}{}{why}",
        if why.is_empty() { "" } else { ": " }
    ))
}

/// Whether `got` holds a whole answer head and as much of its body as is worth reading (up to
/// 200 bytes, to say why): a receiver that keeps the connection open despite `Connection:
/// close` does not hold the push up until the read times out.
fn answer_complete(got: &[u8]) -> bool {
    let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&got[..end]);
    let length = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse::<usize>().ok())
            .flatten()
    });
    let no_body = head
        .split_whitespace()
        .nth(1)
        .is_some_and(|s| s == "204" || s == "304" || s.starts_with('1'));
    match length {
        _ if no_body => true,
        Some(n) => got.len() - (end + 4) >= n.min(200),
        None => false,
    }
}

fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The WriteRequest (uncompressed) for copies of the figures taken at their times, each
/// series' samples in time order; and the number of samples.
pub fn encode(batch: &[(i64, Snapshot)], extra: &[(String, String)]) -> (Vec<u8>, u64) {
    // Sorted labels → samples, in the order the copies were taken.
    let mut series: BTreeMap<Labels, Vec<(f64, i64)>> = BTreeMap::new();
    let mut meta: BTreeMap<&'static str, (Kind, &'static str)> = BTreeMap::new();
    let mut samples = 0u64;
    for (t, snap) in batch {
        for f in &snap.families {
            meta.insert(f.name, (f.kind, f.help));
            for s in &f.series {
                let base = || {
                    snap.labels
                        .iter()
                        .cloned()
                        .chain(extra.iter().cloned())
                        .chain(
                            s.labels
                                .iter()
                                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
                        )
                };
                let mut add = |name: String, more: Option<(&str, String)>, v: f64| {
                    let mut labels: Vec<(String, String)> = base()
                        .chain([("__name__".to_owned(), name)])
                        .chain(more.map(|(k, v)| (k.to_owned(), v)))
                        .collect();
                    labels.sort();
                    series.entry(labels).or_default().push((v, *t));
                    samples += 1;
                };
                match &s.value {
                    Value::Histogram(h) => {
                        for (le, n) in h.cumulative() {
                            let le = if le.is_infinite() {
                                "+Inf".to_owned()
                            } else {
                                le.to_string()
                            };
                            add(format!("{}_bucket", f.name), Some(("le", le)), n as f64);
                        }
                        add(format!("{}_sum", f.name), None, h.sum_s);
                        add(format!("{}_count", f.name), None, h.count as f64);
                    }
                    v => add(f.name.to_owned(), None, v.as_f64()),
                }
            }
        }
    }
    let mut w = Writer::new();
    for (labels, points) in &series {
        w.message(1, |ts| {
            for (k, v) in labels {
                ts.message(1, |l| {
                    l.bytes(1, k.as_bytes());
                    l.bytes(2, v.as_bytes());
                });
            }
            for (v, t) in points {
                ts.message(2, |s| {
                    s.double(1, *v);
                    s.int(2, *t);
                });
            }
        });
    }
    for (name, (kind, help)) in meta {
        w.message(3, |m| {
            m.uint(
                1,
                match kind {
                    Kind::Counter => 1,
                    Kind::Gauge => 2,
                    Kind::Histogram => 3,
                },
            );
            m.bytes(2, name.as_bytes());
            m.bytes(4, help.as_bytes());
        });
    }
    (w.into_bytes(), samples)
}

/// A series' label pairs (name, value), sorted by name.
pub type Labels = Vec<(String, String)>;

/// One series of a decoded WriteRequest: its labels (sorted) and samples (value, time in ms).
pub type DecodedSeries = (Labels, Vec<(f64, i64)>);

/// Decodes a WriteRequest body, snappy-compressed as sent (for tests and checks): its series.
pub fn decode(compressed: &[u8]) -> Result<Vec<DecodedSeries>, String> {
    let body = snap::raw::Decoder::new()
        .decompress_vec(compressed)
        .map_err(|e| format!("snappy: {e}"))?;
    let mut out = Vec::new();
    for f in Reader::new(&body).fields()? {
        let Field::Bytes(1, ts) = f else { continue };
        let (mut labels, mut samples) = (Vec::new(), Vec::new());
        for f in Reader::new(ts).fields()? {
            match f {
                Field::Bytes(1, l) => {
                    let (mut k, mut v) = (String::new(), String::new());
                    for f in Reader::new(l).fields()? {
                        match f {
                            Field::Bytes(1, b) => k = String::from_utf8_lossy(b).into_owned(),
                            Field::Bytes(2, b) => v = String::from_utf8_lossy(b).into_owned(),
                            _ => {}
                        }
                    }
                    labels.push((k, v));
                }
                Field::Bytes(2, s) => {
                    let (mut v, mut t) = (0.0, 0);
                    for f in Reader::new(s).fields()? {
                        match f {
                            Field::Fixed64(1, b) => v = f64::from_bits(b),
                            Field::Varint(2, b) => t = b as i64,
                            _ => {}
                        }
                    }
                    samples.push((v, t));
                }
                _ => {}
            }
        }
        out.push((labels, samples));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_complete_without_waiting_for_the_close() {
        assert!(!answer_complete(b"HTTP/1.1 204 No Content\r\n"));
        assert!(answer_complete(
            b"HTTP/1.1 204 No Content\r\nDate: x\r\n\r\n"
        ));
        assert!(answer_complete(
            b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
        ));
        assert!(!answer_complete(
            b"HTTP/1.1 400 Bad\r\nContent-Length: 5\r\n\r\nout"
        ));
        assert!(answer_complete(
            b"HTTP/1.1 400 Bad\r\nContent-Length: 5\r\n\r\nout o"
        ));
        assert!(!answer_complete(b"HTTP/1.1 400 Bad\r\n\r\nuntil the close"));
    }

    #[test]
    fn urls_are_parsed_and_tls_refused() {
        let u: RemoteWriteUrl = "http://127.0.0.1:9090/api/v1/write".parse().unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1", 9090, "/api/v1/write")
        );
        let u: RemoteWriteUrl = "http://[::1]/w?x=1".parse().unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("::1", 80, "/w?x=1")
        );
        let u: RemoteWriteUrl = "http://localhost:1".parse().unwrap();
        assert_eq!(u.path, "/");
        assert!("https://x/api/v1/write"
            .parse::<RemoteWriteUrl>()
            .unwrap_err()
            .contains("TLS"));
        for bad in [
            "",
            "localhost:9090",
            "ftp://x/",
            "http://",
            "http://x:99999/",
            "http://a b/",
        ] {
            assert!(bad.parse::<RemoteWriteUrl>().is_err(), "{bad}");
        }
    }

    /// A copy of the figures becomes sorted label sets with `__name__`, the run's labels,
    /// `job` and `instance`, and one sample per copy in time order.
    #[test]
    fn a_batch_encodes_to_sorted_series_with_samples_in_order() {
        let m = LiveMetrics::new(&[("Scenario".into(), "echo".into())]);
        let a = m.snapshot();
        let extra = identity(m.labels());
        let (body, n) = encode(&[(1000, a.clone()), (2000, a)], &extra);
        let series = decode(&snap::raw::Encoder::new().compress_vec(&body).unwrap()).unwrap();
        assert_eq!(n as usize, series.iter().map(|s| s.1.len()).sum::<usize>());
        for (labels, samples) in &series {
            let mut sorted = labels.clone();
            sorted.sort();
            assert_eq!(&sorted, labels);
            assert!(labels.iter().any(|(k, v)| k == "Scenario" && v == "echo"));
            assert!(labels.iter().any(|(k, v)| k == "job" && v == "gatebench"));
            assert!(labels.iter().any(|(k, _)| k == "instance"));
            assert_eq!(
                samples.iter().map(|s| s.1).collect::<Vec<_>>(),
                [1000, 2000]
            );
        }
        let names: std::collections::BTreeSet<&str> = series
            .iter()
            .flat_map(|(l, _)| {
                l.iter()
                    .filter(|(k, _)| k == "__name__")
                    .map(|(_, v)| v.as_str())
            })
            .collect();
        assert!(names.contains("gatebench_request_duration_seconds_bucket"));
        assert!(names.contains("gatebench_requests_total"));
        assert!(!names.contains("gatebench_request_duration_seconds"));
        // 2 phases × 15 buckets.
        let buckets = series
            .iter()
            .filter(|(l, _)| {
                l.iter()
                    .any(|(_, v)| v == "gatebench_request_duration_seconds_bucket")
            })
            .count();
        assert_eq!(buckets, 30);
        assert!(identity(&[("job".into(), "x".into())])
            .iter()
            .all(|(k, _)| k != "job"));
    }
}
