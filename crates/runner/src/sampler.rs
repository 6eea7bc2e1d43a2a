//! The system under test's resource use, sampled from `/proc` once a second, and cut to the
//! same warm-up and measurement windows as the latency.
//!
//! The sampled set is the SUT's process group (the launcher gives every process its own), so a
//! shell command's children and a server's worker processes are summed in: CPU from
//! `/proc/PID/stat` (utime + stime), resident memory and threads from `/proc/PID/status`
//! (VmRSS, Threads), open descriptors from `/proc/PID/fd`; the machine's 1-minute load average
//! from `/proc/loadavg`. It does not sample the generator: the generator reports its own CPU
//! in its self-check.
//!
//! The group's CPU time over the measurement is not a sum of those samples (whose windows are
//! cut at whole seconds and which lose what a process used between its last sample and its
//! exit): [`CpuAt`] reads utime + stime of the group at the window's start and at its end, and
//! [`CpuReading::seconds_until`] gives the difference, which the cell divides by the responses
//! for the SUT's CPU time per request.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use gatebench_model::ResourceSummary;
use gatebench_results::rows::{to_csv, SampleRow};
use procfs::process::Process;
use procfs::{Current, LoadAverage};

/// One sample: the interval `(t_s - interval_s, t_s]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// End of the interval, seconds since the cell started.
    pub t_s: f64,
    /// Length of the interval, seconds.
    pub interval_s: f64,
    /// CPU use over the interval, percent of one core.
    pub cpu_percent: f64,
    /// Resident memory at the end, KiB.
    pub rss_kib: u64,
    /// Threads at the end.
    pub threads: u64,
    /// Open file descriptors at the end.
    pub fds: u64,
    /// Processes in the group at the end.
    pub processes: u32,
    /// 1-minute load average at the end.
    pub loadavg_1m: f64,
}

/// Which window a sample falls in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// Before the load started.
    Before,
    /// The load's warm-up.
    Warmup,
    /// The measurement.
    Measurement,
    /// After the measurement.
    After,
}

impl Window {
    /// The name written in `samples.csv`.
    pub fn name(self) -> &'static str {
        match self {
            Window::Before => "before",
            Window::Warmup => "warmup",
            Window::Measurement => "measurement",
            Window::After => "after",
        }
    }
}

/// The load's windows, seconds since the cell started.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Windows {
    /// When the load (its warm-up) started.
    pub load_start_s: f64,
    /// Warm-up length.
    pub warmup_s: f64,
    /// Measurement length.
    pub measurement_s: f64,
}

impl Windows {
    /// The window a sample belongs to: the one holding the middle of its interval.
    pub fn of(&self, s: &Sample) -> Window {
        let mid = s.t_s - s.interval_s / 2.0;
        let warm_end = self.load_start_s + self.warmup_s;
        if mid < self.load_start_s {
            Window::Before
        } else if mid < warm_end {
            Window::Warmup
        } else if mid < warm_end + self.measurement_s {
            Window::Measurement
        } else {
            Window::After
        }
    }

    /// The summary of the samples in window `w`; `None` when none fall in it.
    pub fn summarize(&self, samples: &[Sample], w: Window) -> Option<ResourceSummary> {
        let in_w: Vec<&Sample> = samples.iter().filter(|s| self.of(s) == w).collect();
        if in_w.is_empty() {
            return None;
        }
        let n = in_w.len() as f64;
        let mib = |kib: u64| kib as f64 / 1024.0;
        Some(ResourceSummary {
            samples: in_w.len() as u32,
            cpu_mean_percent: in_w.iter().map(|s| s.cpu_percent).sum::<f64>() / n,
            cpu_max_percent: in_w.iter().map(|s| s.cpu_percent).fold(0.0, f64::max),
            rss_mean_mib: in_w.iter().map(|s| mib(s.rss_kib)).sum::<f64>() / n,
            rss_max_mib: in_w.iter().map(|s| mib(s.rss_kib)).fold(0.0, f64::max),
            threads_max: in_w.iter().map(|s| s.threads).max().unwrap_or(0),
            fds_max: in_w.iter().map(|s| s.fds).max().unwrap_or(0),
            loadavg_mean: in_w.iter().map(|s| s.loadavg_1m).sum::<f64>() / n,
            cpu_time_s: None,
            cpu_us_per_request: None,
        })
    }

    /// `samples.csv`: one line per sample with its window.
    pub fn csv(&self, samples: &[Sample]) -> String {
        to_csv(
            SampleRow::HEADER,
            samples.iter().map(|s| SampleRow {
                t_s: s.t_s,
                window: self.of(s).name().to_owned(),
                cpu_percent: s.cpu_percent,
                rss_mib: s.rss_kib as f64 / 1024.0,
                threads: Some(s.threads),
                fds: Some(s.fds),
                processes: Some(s.processes),
                loadavg_1m: Some(s.loadavg_1m),
            }),
        )
    }
}

/// A running sampler thread.
#[derive(Debug)]
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<Sample>>,
}

/// Told of each sample as it is taken (`gatebench run --metrics`).
pub type Tap = Arc<dyn Fn(&Sample) + Send + Sync>;

impl Sampler {
    /// Starts sampling process group `pgid` every `period`; times are relative to `origin`.
    pub fn start(pgid: u32, origin: Instant, period: Duration) -> Sampler {
        Sampler::start_tapped(pgid, origin, period, None)
    }

    /// As [`Sampler::start`], `tap` told of each sample as it is taken.
    pub fn start_tapped(pgid: u32, origin: Instant, period: Duration, tap: Option<Tap>) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("gatebench-sampler".into())
            .spawn(move || sample_loop(pgid, origin, period, &flag, tap))
            .expect("spawning the sampler thread");
        Sampler { stop, handle }
    }

    /// Stops the thread (within a few milliseconds) and returns its samples.
    pub fn finish(self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

fn sample_loop(
    pgid: u32,
    origin: Instant,
    period: Duration,
    stop: &AtomicBool,
    tap: Option<Tap>,
) -> Vec<Sample> {
    let mut out = Vec::new();
    sample_every(
        pgid,
        origin,
        period,
        &|| stop.load(Ordering::Relaxed),
        &mut |s| {
            if let Some(t) = &tap {
                t(&s);
            }
            out.push(s);
            true
        },
    );
    out
}

/// Samples process group `pgid` every `period` until `stop` says so or `emit` returns false;
/// times are relative to `origin`. The loop of [`Sampler`] and of `gatebench host sample`
/// (the same figures on a remote host, see [`crate::hosts::RemoteSampler`]).
pub fn sample_every(
    pgid: u32,
    origin: Instant,
    period: Duration,
    stop: &dyn Fn() -> bool,
    emit: &mut dyn FnMut(Sample) -> bool,
) {
    let mut prev_ticks = group_ticks(pgid);
    let mut prev_at = Instant::now();
    let mut next = prev_at + period;
    loop {
        while Instant::now() < next {
            if stop() {
                return;
            }
            std::thread::sleep((next - Instant::now()).min(Duration::from_millis(20)));
        }
        let now = Instant::now();
        let ticks = group_ticks(pgid);
        let interval = now - prev_at;
        let usage = read_group(pgid);
        // CPU of processes present in both readings; a process that appeared or vanished in
        // between contributes what it used while visible.
        let delta: u64 = ticks
            .iter()
            .map(|(pid, t)| {
                t.saturating_sub(
                    prev_ticks
                        .iter()
                        .find(|(p, _)| p == pid)
                        .map_or(*t, |(_, pt)| *pt),
                )
            })
            .sum();
        let cpu = 100.0 * delta as f64 / clock_ticks() / interval.as_secs_f64().max(1e-9);
        let sample = Sample {
            t_s: now.duration_since(origin).as_secs_f64(),
            interval_s: interval.as_secs_f64(),
            cpu_percent: cpu,
            rss_kib: usage.rss_kib,
            threads: usage.threads,
            fds: usage.fds,
            processes: usage.processes,
            loadavg_1m: loadavg(),
        };
        if !emit(sample) {
            return;
        }
        prev_ticks = ticks;
        prev_at = now;
        next += period;
        if next < now {
            next = now + period;
        }
    }
}

/// The CPU time of a process group at one instant: utime + stime of each of its processes,
/// in clock ticks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuReading {
    /// `(pid, utime + stime)` of every process of the group.
    pub ticks: Vec<(u32, u64)>,
}

impl CpuReading {
    /// Reads process group `pgid` now.
    pub fn now(pgid: u32) -> CpuReading {
        CpuReading {
            ticks: group_ticks(pgid),
        }
    }

    /// CPU seconds the group used from this reading to `later`, at `ticks_per_s` clock ticks a
    /// second: for every process in `later`, its ticks minus those it had here (all of them
    /// when it started in between). A process that exited in between is not counted: its last
    /// ticks cannot be read any more.
    pub fn seconds_until(&self, later: &CpuReading, ticks_per_s: f64) -> f64 {
        let ticks: u64 = later
            .ticks
            .iter()
            .map(|(pid, t)| {
                let before = self
                    .ticks
                    .iter()
                    .find(|(p, _)| p == pid)
                    .map_or(0, |(_, b)| *b);
                t.saturating_sub(before)
            })
            .sum();
        ticks as f64 / ticks_per_s
    }

    /// [`CpuReading::seconds_until`] in this machine's clock ticks.
    pub fn seconds_until_here(&self, later: &CpuReading) -> f64 {
        self.seconds_until(later, clock_ticks())
    }
}

/// A reading of a process group's CPU time at a chosen instant (a window's start or end),
/// taken by a thread of its own that sleeps until then, so the cell's thread can run the load.
#[derive(Debug)]
pub struct CpuAt {
    cancel: Arc<AtomicBool>,
    handle: JoinHandle<Option<CpuReading>>,
}

impl CpuAt {
    /// Reads group `pgid` at `at` (at once when `at` has passed).
    pub fn spawn(pgid: u32, at: Instant) -> CpuAt {
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = cancel.clone();
        let handle = std::thread::Builder::new()
            .name("gatebench-cpu-at".into())
            .spawn(move || {
                while Instant::now() < at {
                    if flag.load(Ordering::Relaxed) {
                        return None;
                    }
                    // Short sleeps: a cancelled reading ends its thread within milliseconds.
                    std::thread::sleep((at - Instant::now()).min(Duration::from_millis(20)));
                }
                Some(CpuReading::now(pgid))
            })
            .expect("spawning the CPU reading thread");
        CpuAt { cancel, handle }
    }

    /// The reading, waiting for its instant.
    pub fn wait(self) -> Option<CpuReading> {
        self.handle.join().unwrap_or_default()
    }

    /// The reading if its instant has come, else `None` without waiting (the window did not
    /// run to its end: a failed or stopped load).
    pub fn cancel(self) -> Option<CpuReading> {
        self.cancel.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// The CPU time per request, microseconds: `cpu_s` over `responses`; `None` without responses.
pub fn cpu_us_per_request(cpu_s: f64, responses: f64) -> Option<f64> {
    (responses >= 1.0 && cpu_s.is_finite()).then(|| cpu_s * 1e6 / responses)
}

/// One sample as the line `gatebench host sample` prints: `t_s interval_s cpu_percent rss_kib
/// threads fds processes loadavg_1m`, space separated.
pub fn format_line(s: &Sample) -> String {
    format!(
        "{:.6} {:.6} {:.3} {} {} {} {} {}",
        s.t_s, s.interval_s, s.cpu_percent, s.rss_kib, s.threads, s.fds, s.processes, s.loadavg_1m
    )
}

/// Reads a line written by [`format_line`]; `None` for anything else.
pub fn parse_line(line: &str) -> Option<Sample> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() != 8 {
        return None;
    }
    Some(Sample {
        t_s: f[0].parse().ok()?,
        interval_s: f[1].parse().ok()?,
        cpu_percent: f[2].parse().ok()?,
        rss_kib: f[3].parse().ok()?,
        threads: f[4].parse().ok()?,
        fds: f[5].parse().ok()?,
        processes: f[6].parse().ok()?,
        loadavg_1m: f[7].parse().ok()?,
    })
}

/// Clock ticks per second, the unit of `utime` and `stime` in `/proc/PID/stat`.
fn clock_ticks() -> f64 {
    match procfs::ticks_per_second() {
        0 => 100.0,
        t => t as f64,
    }
}

/// The processes of group `pgid` (the leader itself even if its stat cannot be read).
fn group_processes(pgid: u32) -> Vec<(u32, Process)> {
    let Ok(all) = procfs::process::all_processes() else {
        return Vec::new();
    };
    all.filter_map(Result::ok)
        .filter(|p| p.pid as u32 == pgid || p.stat().is_ok_and(|st| st.pgrp as u32 == pgid))
        .map(|p| (p.pid as u32, p))
        .collect()
}

/// CPU ticks (utime + stime) of every process of group `pgid`.
fn group_ticks(pgid: u32) -> Vec<(u32, u64)> {
    group_processes(pgid)
        .into_iter()
        .filter_map(|(pid, p)| {
            let st = p.stat().ok()?;
            Some((pid, st.utime + st.stime))
        })
        .collect()
}

#[derive(Default)]
struct GroupUsage {
    rss_kib: u64,
    threads: u64,
    fds: u64,
    processes: u32,
}

fn read_group(pgid: u32) -> GroupUsage {
    let mut u = GroupUsage::default();
    for (_, p) in group_processes(pgid) {
        let Ok(status) = p.status() else {
            continue;
        };
        u.processes += 1;
        u.rss_kib += status.vmrss.unwrap_or(0);
        u.threads += status.threads;
        u.fds += p.fd_count().map_or(0, |n| n as u64);
    }
    u
}

/// The machine's 1-minute load average (`/proc/loadavg`); 0 when unreadable.
fn loadavg() -> f64 {
    // procfs reads it as an f32; going through its shortest decimal form gives the f64 of the
    // text in /proc/loadavg (3.35, not 3.3499999046325684 in record.json).
    LoadAverage::current()
        .ok()
        .and_then(|l| l.one.to_string().parse().ok())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t: f64, cpu: f64, rss_mib: u64) -> Sample {
        Sample {
            t_s: t,
            interval_s: 1.0,
            cpu_percent: cpu,
            rss_kib: rss_mib * 1024,
            threads: 4,
            fds: 10,
            processes: 1,
            loadavg_1m: 1.0,
        }
    }

    #[test]
    fn samples_are_cut_to_the_windows() {
        // Load starts 0.5 s into the cell: 2 s warm-up, 3 s measurement.
        let w = Windows {
            load_start_s: 0.5,
            warmup_s: 2.0,
            measurement_s: 3.0,
        };
        let samples: Vec<Sample> = (1..=7)
            .map(|i| sample(0.5 + i as f64, 10.0 * i as f64, 100 + i))
            .collect();
        let kinds: Vec<Window> = samples.iter().map(|s| w.of(s)).collect();
        use Window::*;
        assert_eq!(
            kinds,
            [
                Warmup,
                Warmup,
                Measurement,
                Measurement,
                Measurement,
                After,
                After
            ]
        );
        let m = w.summarize(&samples, Measurement).unwrap();
        assert_eq!(m.samples, 3);
        assert!((m.cpu_mean_percent - 40.0).abs() < 1e-9);
        assert!((m.cpu_max_percent - 50.0).abs() < 1e-9);
        assert!((m.rss_mean_mib - 104.0).abs() < 1e-9);
        assert!((m.rss_max_mib - 105.0).abs() < 1e-9);
        let warm = w.summarize(&samples, Warmup).unwrap();
        assert_eq!(warm.samples, 2);
        assert!((warm.cpu_mean_percent - 15.0).abs() < 1e-9);
        assert!(w.summarize(&samples, Before).is_none());
        let csv = w.csv(&samples);
        assert!(csv.starts_with("t_s,window,cpu_percent"));
        assert_eq!(
            csv.lines().filter(|l| l.contains(",measurement,")).count(),
            3
        );
    }

    #[test]
    fn samples_csv_keeps_its_exact_text() {
        let w = Windows {
            load_start_s: 0.5,
            warmup_s: 2.0,
            measurement_s: 3.0,
        };
        assert_eq!(
            w.csv(&[sample(1.5, 12.34, 101)]),
            "t_s,window,cpu_percent,rss_mib,threads,fds,processes,loadavg_1m\n\
             1.500,warmup,12.3,101.00,4,10,1,1.00\n"
        );
        assert_eq!(
            w.csv(&[]),
            "t_s,window,cpu_percent,rss_mib,threads,fds,processes,loadavg_1m\n"
        );
    }

    #[test]
    fn the_load_average_is_the_number_in_proc() {
        let text = std::fs::read_to_string("/proc/loadavg").unwrap();
        let first: f64 = text.split_whitespace().next().unwrap().parse().unwrap();
        // It may move between the two reads, but only by whole hundredths.
        let got = loadavg();
        assert!((got * 100.0 - (got * 100.0).round()).abs() < 1e-9, "{got}");
        assert!((got - first).abs() < 5.0, "{got} vs {first}");
    }

    #[test]
    fn a_sample_line_reads_back() {
        let s = Sample {
            t_s: 1.5,
            interval_s: 1.0,
            cpu_percent: 12.25,
            rss_kib: 2048,
            threads: 3,
            fds: 9,
            processes: 2,
            loadavg_1m: 0.42,
        };
        assert_eq!(parse_line(&format_line(&s)), Some(s));
        assert_eq!(parse_line("pid 12"), None);
    }

    #[test]
    fn cpu_time_is_the_difference_of_two_readings() {
        let start = CpuReading {
            ticks: vec![(10, 500), (11, 40), (12, 7)],
        };
        // 10 went on, 11 and 12 exited, 13 started in between.
        let end = CpuReading {
            ticks: vec![(10, 750), (13, 30)],
        };
        assert_eq!(start.seconds_until(&end, 100.0), 2.8);
        assert_eq!(end.seconds_until(&end, 100.0), 0.0);
        assert_eq!(cpu_us_per_request(2.8, 56_000.0), Some(50.0));
        assert_eq!(cpu_us_per_request(2.8, 0.0), None);
    }

    #[test]
    fn a_reading_comes_at_its_instant_or_not_at_all() {
        let pgid = rustix::process::getpgrp().as_raw_nonzero().get() as u32;
        let me = std::process::id();
        let at = Instant::now() + Duration::from_millis(150);
        let reading = CpuAt::spawn(pgid, at).wait().expect("its instant came");
        assert!(Instant::now() >= at);
        assert!(reading.ticks.iter().any(|(p, _)| *p == me), "{reading:?}");
        // Cancelled before its instant (a load that stopped early): no reading, no wait.
        let t = Instant::now();
        let early = CpuAt::spawn(pgid, t + Duration::from_secs(60)).cancel();
        assert_eq!(early, None);
        assert!(t.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn samples_this_process_group() {
        // The test binary is in some process group; sample it briefly.
        let pgid = rustix::process::getpgrp().as_raw_nonzero().get() as u32;
        let s = Sampler::start(pgid, Instant::now(), Duration::from_millis(100));
        std::thread::sleep(Duration::from_millis(350));
        let samples = s.finish();
        assert!(!samples.is_empty());
        assert!(samples
            .iter()
            .all(|s| s.rss_kib > 0 && s.threads >= 1 && s.fds >= 1));
    }
}
