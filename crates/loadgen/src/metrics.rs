//! A run's live figures for Prometheus (`gatebench load --metrics ADDRESS`): the text exposition
//! format (version 0.0.4, which every Prometheus scrapes), served on `GET /metrics` by one small
//! thread. The rule: the load's hot path pays nothing for it. The figures are updated once a
//! second, from the seconds the collector already merges (so a scrape lags by at most a
//! second), and rendered only when scraped.
//!
//! Metric names follow Prometheus's conventions (base units, `_total` counters, `_seconds`):
//! - `gatebench_requests_sent_total{phase}`: requests sent;
//! - `gatebench_requests_total{phase,outcome}`: requests finished, by outcome class (the same
//!   classes as the record's `outcomes`); `in flight at the end` and `never sent` are counted
//!   once the run ends;
//! - `gatebench_request_duration_seconds{phase}`: a histogram of the latency (corrected for
//!   coordinated omission in the open model; requests that never got an answer at the time they
//!   had waited), with buckets for HTTP latencies from 0.5 ms to 10 s;
//! - `gatebench_target_rate`, `gatebench_achieved_rate`: the target (open model) and achieved
//!   responses per second over the last second;
//! - `gatebench_in_flight_requests`: sent and not finished, at the end of the last second;
//! - `gatebench_phase`: 0 warm-up, 1 measurement, 2 done;
//! - `gatebench_generator_cpu_seconds_total`: the generator process's CPU time (the self-check's
//!   view of it).
//!
//! Every series carries the labels given with `--metrics-label` (e.g. `scenario="proxy"`). A
//! series' `phase` is that of the second a request finished in (Prometheus counts events when
//! they happen), where the record counts a request in the phase it was sent in: the two differ
//! by the requests in flight across the warm-up's end, and agree exactly over both phases.

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gatebench_model::histogram::LatencyHistogram;
use gatebench_model::{Outcome, OutcomeCounts};

/// The histogram's upper bounds, seconds: HTTP latencies from half a millisecond to ten seconds
/// (Prometheus's default buckets, with 0.5 ms and 1 ms below them for fast services).
pub const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Most scrapes answered at once.
const MAX_SCRAPES: usize = 8;

/// Most labels `--metrics-label` takes.
pub const MAX_LABELS: usize = 16;

/// The phases figures are kept apart by.
const PHASES: [&str; 2] = ["warmup", "measurement"];

/// A histogram in the exposition's form: counts per bucket (not cumulative; `+Inf` last), the
/// sum and the count.
#[derive(Clone, Debug, Default)]
struct Buckets {
    counts: [u64; BUCKETS.len() + 1],
    sum_s: f64,
    count: u64,
}

impl Buckets {
    fn add(&mut self, h: &LatencyHistogram) {
        for v in h.iter_recorded() {
            let n = v.count_at_value();
            let s = v.value_iterated_to() as f64 / 1e9;
            let i = BUCKETS
                .iter()
                .position(|b| s <= *b)
                .unwrap_or(BUCKETS.len());
            self.counts[i] += n;
            self.sum_s += s * n as f64;
            self.count += n;
        }
    }
}

#[derive(Debug, Default)]
struct State {
    sent: [u64; 2],
    outcomes: [OutcomeCounts; 2],
    latency: [Buckets; 2],
    target_rate: Option<f64>,
    achieved_rate: f64,
    in_flight: u64,
    phase: u8,
}

/// The live figures of one run, shared by the collector (writes once a second) and the
/// metrics server (reads on each scrape).
#[derive(Debug)]
pub struct LiveMetrics {
    state: Mutex<State>,
    /// The rendered label pairs every series carries (`a="b",c="d"`), maybe empty.
    labels: String,
}

impl LiveMetrics {
    /// Figures that carry `labels` (name, value) on every series; names are checked with
    /// [`check_label`].
    pub fn new(labels: &[(String, String)]) -> Arc<LiveMetrics> {
        let labels = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
            .collect::<Vec<_>>()
            .join(",");
        Arc::new(LiveMetrics {
            state: Mutex::new(State::default()),
            labels,
        })
    }

    /// One more second of the run: what was sent and finished in it, its latency, its length
    /// and target rate, and whether it lies in the warm-up.
    pub(crate) fn second(
        &self,
        warmup: bool,
        sent: u64,
        outcomes: &OutcomeCounts,
        latency: &LatencyHistogram,
        length: Duration,
        target: Option<f64>,
    ) {
        let p = usize::from(!warmup);
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.sent[p] += sent;
        s.outcomes[p].merge(outcomes);
        s.latency[p].add(latency);
        s.target_rate = target;
        s.achieved_rate = outcomes.responses() as f64 / length.as_secs_f64().max(1e-3);
        let sent_all: u64 = s.sent.iter().sum();
        let done: u64 = s.outcomes.iter().map(|o| o.total()).sum();
        s.in_flight = sent_all.saturating_sub(done);
        s.phase = p as u8;
    }

    /// The run ended: the requests settled only then (in flight at the end, never sent) are
    /// counted, and the phase reads done.
    pub(crate) fn finish(&self, measurement: &OutcomeCounts) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for o in [Outcome::InFlight, Outcome::NeverSent] {
            let have = s.outcomes[1].get(o);
            let add = measurement.get(o).saturating_sub(have);
            s.outcomes[1].add(o, add);
        }
        s.in_flight = 0;
        s.achieved_rate = 0.0;
        s.phase = 2;
    }

    /// The exposition text.
    pub fn render(&self) -> String {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::with_capacity(4096);
        let l = |extra: &str| -> String {
            match (self.labels.is_empty(), extra.is_empty()) {
                (true, true) => String::new(),
                (true, false) => format!("{{{extra}}}"),
                (false, true) => format!("{{{}}}", self.labels),
                (false, false) => format!("{{{},{extra}}}", self.labels),
            }
        };
        let _ = writeln!(out, "# HELP gatebench_requests_sent_total Requests sent.");
        let _ = writeln!(out, "# TYPE gatebench_requests_sent_total counter");
        for (p, name) in PHASES.iter().enumerate() {
            let _ = writeln!(
                out,
                "gatebench_requests_sent_total{} {}",
                l(&format!("phase=\"{name}\"")),
                s.sent[p]
            );
        }
        let _ = writeln!(
            out,
            "# HELP gatebench_requests_total Requests finished, by outcome class."
        );
        let _ = writeln!(out, "# TYPE gatebench_requests_total counter");
        for (p, name) in PHASES.iter().enumerate() {
            for o in Outcome::ALL {
                let _ = writeln!(
                    out,
                    "gatebench_requests_total{} {}",
                    l(&format!("phase=\"{name}\",outcome=\"{}\"", o.name())),
                    s.outcomes[p].get(o)
                );
            }
        }
        let _ = writeln!(
            out,
            "# HELP gatebench_request_duration_seconds Request latency (corrected for \
             coordinated omission in the open model)."
        );
        let _ = writeln!(out, "# TYPE gatebench_request_duration_seconds histogram");
        for (p, name) in PHASES.iter().enumerate() {
            let b = &s.latency[p];
            let mut cumulative = 0;
            for (i, le) in BUCKETS
                .iter()
                .map(|b| b.to_string())
                .chain(["+Inf".to_owned()])
                .enumerate()
            {
                cumulative += b.counts[i];
                let _ = writeln!(
                    out,
                    "gatebench_request_duration_seconds_bucket{} {cumulative}",
                    l(&format!("phase=\"{name}\",le=\"{le}\""))
                );
            }
            let _ = writeln!(
                out,
                "gatebench_request_duration_seconds_sum{} {}",
                l(&format!("phase=\"{name}\"")),
                b.sum_s
            );
            let _ = writeln!(
                out,
                "gatebench_request_duration_seconds_count{} {}",
                l(&format!("phase=\"{name}\"")),
                b.count
            );
        }
        let gauge = |out: &mut String, name: &str, help: &str, v: f64| {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} gauge");
            let _ = writeln!(out, "{name}{} {v}", l(""));
        };
        if let Some(t) = s.target_rate {
            gauge(
                &mut out,
                "gatebench_target_rate",
                "The open model's target rate over the last second, requests per second.",
                t,
            );
        }
        gauge(
            &mut out,
            "gatebench_achieved_rate",
            "Responses per second over the last second.",
            s.achieved_rate,
        );
        gauge(
            &mut out,
            "gatebench_in_flight_requests",
            "Requests sent and not finished, at the end of the last second.",
            s.in_flight as f64,
        );
        gauge(
            &mut out,
            "gatebench_phase",
            "0 warm-up, 1 measurement, 2 done.",
            f64::from(s.phase),
        );
        drop(s);
        let cpu = process_cpu_seconds();
        let _ = writeln!(
            out,
            "# HELP gatebench_generator_cpu_seconds_total CPU time of the generator process."
        );
        let _ = writeln!(out, "# TYPE gatebench_generator_cpu_seconds_total counter");
        let _ = writeln!(out, "gatebench_generator_cpu_seconds_total{} {cpu}", l(""));
        out
    }
}

/// `a\b"c` → `a\\b\"c`, newlines as `\n`: a label value as the exposition format writes it.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Checks a label name given with `--metrics-label`: Prometheus's `[a-zA-Z_][a-zA-Z0-9_]*`,
/// not reserved (`__…`) and not one gatebench sets (`phase`, `outcome`, `le`).
pub fn check_label(name: &str) -> Result<(), String> {
    let ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(format!(
            "'{name}' is not a Prometheus label name (letters, digits and _, not starting \
             with a digit)"
        ));
    }
    if name.starts_with("__") || ["phase", "outcome", "le"].contains(&name) {
        return Err(format!("'{name}' is reserved"));
    }
    Ok(())
}

/// User plus system CPU seconds of this process (`/proc/self/stat`); 0 where unreadable.
fn process_cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces) start past the last ')'.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are fields 14 and 15 of the line: 12 and 13 after the state field.
    let hz = rustix::param::clock_ticks_per_second().max(1) as f64;
    (ticks(11) + ticks(12)) as f64 / hz
}

/// The thread serving `GET /metrics` for a run; stopped when dropped.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MetricsServer {
    /// Listens on `addr` (a port in use or an address this machine lacks is an error here,
    /// before the run) and serves `metrics`.
    pub fn start(addr: SocketAddr, metrics: Arc<LiveMetrics>) -> io::Result<MetricsServer> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("gatebench-metrics".into())
            .spawn(move || {
                let busy = Arc::new(std::sync::atomic::AtomicUsize::new(0));
                for conn in listener.incoming() {
                    if flag.load(Ordering::Relaxed) {
                        break;
                    }
                    let Ok(c) = conn else { continue };
                    // Each scrape on its own thread, so a client that sends nothing (its 2 s
                    // read timeout) holds up no other; past MAX_SCRAPES at once, dropped.
                    if busy.fetch_add(1, Ordering::AcqRel) >= MAX_SCRAPES {
                        busy.fetch_sub(1, Ordering::AcqRel);
                        continue;
                    }
                    let (metrics, done) = (metrics.clone(), busy.clone());
                    let spawned = std::thread::Builder::new()
                        .name("gatebench-scrape".into())
                        .spawn(move || {
                            let _ = answer(c, &metrics);
                            done.fetch_sub(1, Ordering::AcqRel);
                        });
                    if spawned.is_err() {
                        busy.fetch_sub(1, Ordering::AcqRel);
                    }
                }
            })?;
        Ok(MetricsServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept with a connection of our own.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads one request head (bounded in size and time) and answers it: the exposition for
/// `GET /metrics`, 404 otherwise; then closes.
fn answer(mut c: TcpStream, metrics: &LiveMetrics) -> io::Result<()> {
    c.set_read_timeout(Some(Duration::from_secs(2)))?;
    c.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        let n = c.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|b| *b == b'\n').next().unwrap_or(&[]);
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, ctype, body) = if (method == "GET" || method == "HEAD") && path == "/metrics" {
        (
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            metrics.render(),
        )
    } else {
        (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "gatebench serves GET /metrics only\n".to_owned(),
        )
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if method != "HEAD" {
        out.extend_from_slice(body.as_bytes());
    }
    c.write_all(&out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatebench_model::histogram::new_histogram;

    /// The exposition a scrape gets: counters by phase and outcome, the histogram's cumulative
    /// buckets, sum and count, every series with the run's labels.
    #[test]
    fn a_scrape_reads_the_seconds_so_far() {
        let m = LiveMetrics::new(&[("scenario".into(), "proxy \"a\"".into())]);
        let mut h = new_histogram();
        h.record_n(2_000_000, 90).unwrap(); // 2 ms
        h.record_n(300_000_000, 10).unwrap(); // 300 ms
        let mut o = OutcomeCounts::default();
        o.add(Outcome::Ok, 95);
        o.add(Outcome::Status5xx, 5);
        m.second(true, 100, &o, &h, Duration::from_secs(1), Some(100.0));
        m.second(false, 110, &o, &h, Duration::from_secs(1), Some(100.0));
        let text = m.render();
        let has = |line: &str| assert!(text.lines().any(|l| l == line), "{line}\n{text}");
        has(r#"gatebench_requests_sent_total{scenario="proxy \"a\"",phase="measurement"} 110"#);
        has(
            r#"gatebench_requests_total{scenario="proxy \"a\"",phase="measurement",outcome="ok"} 95"#,
        );
        has(
            r#"gatebench_requests_total{scenario="proxy \"a\"",phase="measurement",outcome="status_5xx"} 5"#,
        );
        has(
            r#"gatebench_request_duration_seconds_bucket{scenario="proxy \"a\"",phase="measurement",le="0.001"} 0"#,
        );
        has(
            r#"gatebench_request_duration_seconds_bucket{scenario="proxy \"a\"",phase="measurement",le="0.0025"} 90"#,
        );
        has(
            r#"gatebench_request_duration_seconds_bucket{scenario="proxy \"a\"",phase="measurement",le="0.25"} 90"#,
        );
        has(
            r#"gatebench_request_duration_seconds_bucket{scenario="proxy \"a\"",phase="measurement",le="0.5"} 100"#,
        );
        has(
            r#"gatebench_request_duration_seconds_bucket{scenario="proxy \"a\"",phase="measurement",le="+Inf"} 100"#,
        );
        has(
            r#"gatebench_request_duration_seconds_count{scenario="proxy \"a\"",phase="measurement"} 100"#,
        );
        has(r#"gatebench_in_flight_requests{scenario="proxy \"a\""} 10"#);
        has(r#"gatebench_phase{scenario="proxy \"a\""} 1"#);
        has(r#"gatebench_target_rate{scenario="proxy \"a\""} 100"#);
        let sum: f64 = text
            .lines()
            .find(|l| {
                l.starts_with("gatebench_request_duration_seconds_sum") && l.contains("measurement")
            })
            .and_then(|l| l.rsplit(' ').next())
            .unwrap()
            .parse()
            .unwrap();
        assert!((sum - (90.0 * 0.002 + 10.0 * 0.3)).abs() < 0.01, "{sum}");
        let mut end = o;
        end.add(Outcome::InFlight, 3);
        m.finish(&end);
        let text = m.render();
        assert!(text.contains("outcome=\"in_flight\"} 3"), "{text}");
        assert!(
            text.contains("gatebench_phase{scenario=\"proxy \\\"a\\\"\"} 2"),
            "{text}"
        );
    }

    #[test]
    fn label_names_are_checked() {
        assert!(check_label("scenario").is_ok());
        assert!(check_label("1a").is_err());
        assert!(check_label("a-b").is_err());
        assert!(check_label("__x").is_err());
        assert!(check_label("phase").is_err());
    }

    #[test]
    fn the_server_answers_get_metrics_and_404_elsewhere() {
        let m = LiveMetrics::new(&[]);
        let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), m).unwrap();
        let get = |path: &str| {
            let mut c = TcpStream::connect(server.addr()).unwrap();
            write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            let mut s = String::new();
            c.read_to_string(&mut s).unwrap();
            s
        };
        // A client that connects and sends nothing holds up no scrape (it would for 2 s).
        let _silent = TcpStream::connect(server.addr()).unwrap();
        let t = std::time::Instant::now();
        let ok = get("/metrics");
        assert!(
            t.elapsed() < Duration::from_millis(1500),
            "{:?}",
            t.elapsed()
        );
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(
            ok.contains("\r\n\r\n# HELP gatebench_requests_sent_total"),
            "{ok}"
        );
        assert!(get("/").starts_with("HTTP/1.1 404"));
        drop(server);
    }
}
