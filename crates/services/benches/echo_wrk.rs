//! Macro benchmark of the echo backend's two threading designs under `wrk`.
//!
//! Runs the echo backend in this process, once as `echo::serve` on one multi-threaded tokio
//! runtime (work stealing, a single accept loop) and once as `echo::run_blocking` (thread per
//! core: one current-thread runtime per thread, each accepting on the same socket), and drives
//! each with
//! `taskset -c 1 wrk -t1 -c100 -d5s` (GET, then a 1 KiB POST echo), alternating designs over
//! several rounds so that drift on a shared machine hits both alike.
//!
//! Run (wrk must be installed; the server's CPUs are whatever this process is allowed):
//!
//! ```text
//! taskset -c 0 cargo bench -p gatebench-services --bench echo_wrk              # 1 server core
//! ECHO_THREADS=2 cargo bench -p gatebench-services --bench echo_wrk            # 2 threads, unpinned
//! ```
//!
//! Environment: `ECHO_THREADS` (default 1), `ECHO_ROUNDS` (default 3), `ECHO_SECS` (default 5),
//! `ECHO_CONNS` (wrk's `-c`, default 100).
//!
//! Last results: 2-core VM shared with other builds (load average 3.5-5 throughout, so
//! throughput swung up to 5x between rounds; the server's CPU time per request is the steadier
//! figure), release profile, 2026-11-21, medians:
//!
//! ```text
//! threads=1 (taskset -c 0), 3 rounds of 5 s, -c100:
//!   MultiThread  GET  60818 req/s  7.5 CPU-us/req   POST 1 KiB  97536 req/s   8.3 CPU-us/req
//!   PerCore      GET  67976 req/s  7.4 CPU-us/req   POST 1 KiB  61040 req/s   8.9 CPU-us/req
//! threads=2 (unpinned), 7 rounds of 3 s, -c100:
//!   MultiThread  GET  17405 req/s  9.7 CPU-us/req   POST 1 KiB  18330 req/s  12.2 CPU-us/req
//!   PerCore      GET  22225 req/s  9.0 CPU-us/req   POST 1 KiB  23016 req/s   9.8 CPU-us/req
//! threads=2, 3 rounds of 5 s, -c100, an earlier quieter moment:
//!   MultiThread  GET  66054 req/s  7.7 CPU-us/req   POST 1 KiB  57485 req/s  10.8 CPU-us/req
//!   PerCore      GET 102420 req/s  7.9 CPU-us/req   POST 1 KiB  97194 req/s   9.2 CPU-us/req
//! ```
//!
//! With one thread the two designs cost the same per request; with two, thread per core costs
//! less (no work stealing, no cross-thread wake-ups) and served more in most rounds, so it is
//! what `run_blocking` uses.

use std::net::TcpListener;
use std::process::Command;
use std::time::Duration;

use gatebench_services::echo::{self, EchoConfig};
use tokio::sync::oneshot;

#[derive(Clone, Copy, Debug)]
enum Design {
    MultiThread,
    PerCore,
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Starts the backend on a thread; returns its port and a handle that stops it.
fn start(
    design: Design,
    threads: usize,
) -> (u16, oneshot::Sender<()>, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("local addr").port();
    let (stop, stopped) = oneshot::channel::<()>();
    let config = EchoConfig {
        threads,
        ..EchoConfig::default()
    };
    let shutdown = async {
        let _ = stopped.await;
    };
    let handle = std::thread::spawn(move || {
        let result = match design {
            // `serve` on a multi-threaded runtime is the work-stealing design.
            Design::MultiThread => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .enable_all()
                .build()
                .expect("runtime")
                .block_on(async {
                    listener.set_nonblocking(true).expect("nonblocking");
                    let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                    echo::serve(listener, config, shutdown).await
                }),
            // `run_blocking` is thread per core.
            Design::PerCore => echo::run_blocking(listener, config, shutdown),
        };
        result.expect("echo backend ran");
    });
    (port, stop, handle)
}

/// CPU time (user + system) this process has used so far, all threads, in seconds.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("read /proc/self/stat");
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 =
        fields[11].parse::<f64>().expect("utime") + fields[12].parse::<f64>().expect("stime");
    // USER_HZ is 100 on every Linux configuration that matters here.
    ticks / 100.0
}

/// One wrk run: requests per second and the server's CPU microseconds per request.
struct Run {
    rps: f64,
    cpu_us_per_req: f64,
}

/// Runs wrk and measures this process's (the server's) CPU time while it runs.
fn wrk(port: u16, conns: u64, secs: u64, script: Option<&std::path::Path>) -> Run {
    let cpu_before = cpu_seconds();
    let mut cmd = Command::new("taskset");
    cmd.args(["-c", "1", "wrk", "-t1"])
        .arg(format!("-c{conns}"))
        .arg(format!("-d{secs}s"))
        .arg(format!("http://127.0.0.1:{port}/"));
    if let Some(script) = script {
        cmd.arg("-s").arg(script);
    }
    let out = cmd.output().expect("taskset and wrk are installed");
    let cpu = cpu_seconds() - cpu_before;
    let text = String::from_utf8_lossy(&out.stdout);
    let requests: Option<f64> = text
        .lines()
        .find(|l| l.contains(" requests in "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok());
    let rps = text
        .lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok());
    match (rps, requests) {
        (Some(rps), Some(requests)) => {
            if text.contains("Non-2xx") || text.contains("Socket errors") {
                eprintln!("wrk reported errors:\n{text}");
            }
            Run {
                rps,
                cpu_us_per_req: cpu * 1e6 / requests,
            }
        }
        _ => panic!(
            "unexpected wrk output:\n{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn main() {
    // `cargo test --all-targets` runs bench targets without `--bench`: do nothing then.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    if Command::new("wrk").arg("--version").output().is_err() {
        eprintln!("wrk not installed: skipping (apt-get install -y wrk)");
        return;
    }
    let threads = env_or("ECHO_THREADS", 1) as usize;
    let rounds = env_or("ECHO_ROUNDS", 3);
    let secs = env_or("ECHO_SECS", 5);
    let conns = env_or("ECHO_CONNS", 100);
    let script = std::env::temp_dir().join(format!("echo-wrk-post-{}.lua", std::process::id()));
    std::fs::write(
        &script,
        format!(
            "wrk.method = \"POST\"\nwrk.body = \"{}\"\nwrk.headers[\"Content-Type\"] = \"application/json\"\n",
            "x".repeat(1024)
        ),
    )
    .expect("write the wrk script");
    let designs = [Design::MultiThread, Design::PerCore];
    let mut results = vec![[Vec::new(), Vec::new(), Vec::new(), Vec::new()]; designs.len()];
    for round in 0..rounds {
        for (i, design) in designs.iter().enumerate() {
            let (port, stop, handle) = start(*design, threads);
            std::thread::sleep(Duration::from_millis(200));
            let get = wrk(port, conns, secs, None);
            let post = wrk(port, conns, secs, Some(&script));
            let _ = stop.send(());
            handle.join().expect("server thread");
            println!(
                "round {round} {design:?}: GET {:.0} req/s {:.1} CPU-us/req, POST 1 KiB {:.0} req/s {:.1} CPU-us/req",
                get.rps, get.cpu_us_per_req, post.rps, post.cpu_us_per_req
            );
            results[i][0].push(get.rps);
            results[i][1].push(get.cpu_us_per_req);
            results[i][2].push(post.rps);
            results[i][3].push(post.cpu_us_per_req);
        }
    }
    std::fs::remove_file(&script).ok();
    println!(
        "threads={threads}, median of {rounds} rounds of {secs}s, wrk -t1 -c{conns} on CPU 1:"
    );
    for (design, [get, get_cpu, post, post_cpu]) in designs.iter().zip(results) {
        println!(
            "  {:<12} GET {:>7.0} req/s {:>5.1} CPU-us/req   POST 1 KiB {:>7.0} req/s {:>5.1} CPU-us/req",
            format!("{design:?}"),
            median(get),
            median(get_cpu),
            median(post),
            median(post_cpu)
        );
    }
}
