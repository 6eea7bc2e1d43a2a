//! Garbage-collection figures of the system under test, from the GC log it writes, cut to the
//! same warm-up and measurement windows as the latency and the `/proc` samples.
//!
//! Three formats are read:
//!
//! - **JVM unified logging** (JDK 9 and later, `-Xlog:gc*:file=…` or `-Xlog:gc` to stdout):
//!   every line starts with decorations — `[0.304s]` (uptime, the default), `[12ms]`
//!   (`uptimemillis`), `[2026-11-21T07:24:34.517+0000]` (`time`, `utctime`) … — then the level
//!   and the tags. Pauses are the `gc`-tagged messages `GC(n) Pause … 1.234ms` (G1, Parallel,
//!   Serial, Shenandoah; ZGC's `Pause Mark Start 0.007ms`), with the heap transition
//!   `27M->20M(64M)` where the collector prints one; ZGC's cycle summary
//!   `GC(8) Garbage Collection (System.gc()) 76M(59%)->22M(17%)` gives its heap after. A full
//!   collection is a `Pause Full`, or a ZGC cycle caused by `System.gc()`.
//! - **Go's `GODEBUG=gctrace=1`** (on stderr, so in the SUT's log):
//!   `gc 12 @0.786s 5%: 0.13+12+0.055 ms clock, …, 75->99->47 MB, 88 MB goal, …, 2 P (forced)`.
//!   The first and last clock figures are the two stop-the-world pauses (sweep termination,
//!   mark termination); the middle one is concurrent. The heap after is the live heap, the
//!   third figure. A `(forced)` collection (`runtime.GC()`) counts as full.
//! - **Node's `--trace-gc`** (V8's `GCTracer::Print`, on stdout, so in the SUT's log):
//!   `[4242:0x2af1fcb0]   764 ms: Mark-Compact 27.1 (55.9) -> 23.6 (57.0) MB, 38.11 / 0.00 ms
//!   (+ 2.2 ms in 50 steps since start of marking, …) (average mu = 0.942, …) finalize …`.
//!   The time is milliseconds since the isolate started; the first figure after the heap sizes
//!   is the collection's pause on the main thread (the second is the part of it spent in
//!   embedder callbacks, already inside the first). The heap after is the object size after
//!   (`23.6`, V8's `MB` are MiB). Every line is one collection; V8 numbers none, so they are
//!   numbered in log order. A `Mark-Compact` (V8's major GC, the whole heap, also when
//!   `(reduce)`d or forced by `gc()`) counts as full; `Scavenge` and the minor collectors do
//!   not. Incremental marking steps before a mark-compact (`+ 2.2 ms in 50 steps`) are not
//!   counted as pauses, as Go's concurrent phase is not.
//!
//! Units are kept: the JVM prints `K`, `M` and `G` in one log (binary units), Go prints whole
//! `MB` that are mebibytes (`heap >> 20` in the runtime); everything is converted to MiB here
//! rather than mixed, as the seed tooling did. Lines that are not GC events — the program's own
//! output, a line cut short when the SUT was stopped — are skipped.
//!
//! It does not compute anything from the GC's own cumulative figures (Go's `5%` is since the
//! program started, not over a window), and it does not read the JDK 8 `-XX:+PrintGCDetails`
//! format.

use gatebench_model::GcSummary;

use crate::sampler::Windows;

/// The format of a GC log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcFormat {
    /// JVM unified logging (`-Xlog:gc…`).
    Jvm,
    /// Go's `GODEBUG=gctrace=1`.
    Go,
    /// Node's (V8's) `--trace-gc`.
    Node,
}

impl GcFormat {
    /// The name used in suite files and records: `jvm`, `go`, `node`.
    pub fn name(self) -> &'static str {
        match self {
            GcFormat::Jvm => "jvm",
            GcFormat::Go => "go",
            GcFormat::Node => "node",
        }
    }

    /// The option that makes the SUT write this log, for messages.
    pub fn option(self) -> &'static str {
        match self {
            GcFormat::Jvm => "-Xlog:gc",
            GcFormat::Go => "GODEBUG=gctrace=1",
            GcFormat::Node => "node --trace-gc",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Option<GcFormat> {
        match s {
            "jvm" => Some(GcFormat::Jvm),
            "go" => Some(GcFormat::Go),
            "node" => Some(GcFormat::Node),
            _ => None,
        }
    }
}

/// When an event happened, as the log says it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stamp {
    /// Seconds since the process started (JVM uptime, Go's `@0.786s`, V8's `764 ms` since
    /// the isolate started).
    Uptime(f64),
    /// Wall-clock time, seconds since the Unix epoch (JVM `time`, `utctime`, `timemillis`).
    Wall(f64),
}

/// One event of a GC log.
#[derive(Clone, Debug, PartialEq)]
pub struct GcEvent {
    /// When it was logged.
    pub at: Stamp,
    /// The collection it belongs to (JVM `GC(n)`, Go `gc n`, the line's place among V8's).
    pub collection: Option<u64>,
    /// A stop-the-world pause, ms; `None` for a line that only reports a heap size.
    pub pause_ms: Option<f64>,
    /// Heap occupancy after the collection, MiB.
    pub heap_after_mib: Option<f64>,
    /// Whether the collection is a full one.
    pub full: bool,
}

/// Reads every GC event of `text`.
pub fn parse(format: GcFormat, text: &str) -> Vec<GcEvent> {
    match format {
        GcFormat::Jvm => text.lines().flat_map(parse_jvm_line).collect(),
        GcFormat::Go => text.lines().flat_map(parse_go_line).collect(),
        GcFormat::Node => text
            .lines()
            .filter_map(parse_node_line)
            .zip(1..)
            .map(|(e, n)| GcEvent {
                collection: Some(n),
                ..e
            })
            .collect(),
    }
}

/// One line of JVM unified logging; `None` when it is not a GC event.
pub fn parse_jvm_line(line: &str) -> Option<GcEvent> {
    let mut rest = line.trim_start();
    let mut uptime = None;
    let mut wall = None;
    let mut tags: Option<&str> = None;
    while let Some(inner) = rest.strip_prefix('[') {
        let end = inner.find(']')?;
        let deco = inner[..end].trim();
        rest = &inner[end + 1..];
        if let Some(t) = parse_iso_time(deco) {
            wall = Some(t);
        } else if let Some(v) = deco.strip_suffix("ms").and_then(|v| v.parse::<f64>().ok()) {
            // `uptimemillis` or `timemillis`: an epoch time is far beyond any uptime.
            if v > 1e11 {
                wall = Some(v / 1e3);
            } else {
                uptime = Some(v / 1e3);
            }
        } else if let Some(v) = deco.strip_suffix("ns").and_then(|v| v.parse::<f64>().ok()) {
            if v > 1e17 {
                wall = Some(v / 1e9);
            } else {
                uptime = Some(v / 1e9);
            }
        } else if let Some(v) = deco.strip_suffix('s').and_then(|v| v.parse::<f64>().ok()) {
            uptime = Some(v);
        } else if deco.split(',').next().is_some_and(|t| t.trim() == "gc") {
            tags = Some(deco);
        }
    }
    tags?;
    let at = match (wall, uptime) {
        (Some(w), _) => Stamp::Wall(w),
        (None, Some(u)) => Stamp::Uptime(u),
        (None, None) => return None,
    };
    let mut msg = rest.trim();
    let mut collection = None;
    if let Some(r) = msg.strip_prefix("GC(") {
        let end = r.find(')')?;
        collection = r[..end].parse().ok();
        msg = r[end + 1..].trim_start();
    }
    // Generational ZGC (JDK 21) prefixes the generation: `Y: Pause Mark Start 0.010ms`.
    for prefix in ["Y: ", "O: "] {
        if let Some(r) = msg.strip_prefix(prefix) {
            msg = r;
        }
    }
    if msg.starts_with("Pause ") {
        let last = msg.rsplit(' ').next()?;
        let pause_ms = last.strip_suffix("ms")?.parse::<f64>().ok()?;
        let heap_after_mib = msg.split(' ').find_map(heap_transition);
        return Some(GcEvent {
            at,
            collection,
            pause_ms: Some(pause_ms),
            heap_after_mib,
            full: msg.starts_with("Pause Full"),
        });
    }
    if msg.starts_with("Garbage Collection (") || msg.starts_with("Major Collection (") {
        // ZGC's cycle summary: `Garbage Collection (Warmup) 30M(47%)->50M(78%)`.
        let heap_after_mib = msg.split(' ').find_map(heap_transition)?;
        return Some(GcEvent {
            at,
            collection,
            pause_ms: None,
            heap_after_mib: Some(heap_after_mib),
            full: msg.contains("(System.gc())"),
        });
    }
    None
}

/// The size after `->` in a heap transition token: `27M->20M(64M)` or `76M(59%)->22M(17%)`.
fn heap_transition(token: &str) -> Option<f64> {
    let (before, after) = token.split_once("->")?;
    size_mib(before.split('(').next()?)?;
    size_mib(after.split('(').next()?)
}

/// A JVM size with its unit (`640K`, `20M`, `1G`, `512B`), in MiB. JVM units are binary.
fn size_mib(s: &str) -> Option<f64> {
    let unit = s.chars().last()?;
    let v: f64 = s[..s.len() - unit.len_utf8()].parse().ok()?;
    let mib = match unit {
        'B' => v / (1024.0 * 1024.0),
        'K' => v / 1024.0,
        'M' => v,
        'G' => v * 1024.0,
        'T' => v * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(mib)
}

/// `2026-11-21T07:24:34.517+0000` (the `time` and `utctime` decorations) → Unix seconds.
fn parse_iso_time(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &s[19..];
    let mut frac = 0.0;
    if let Some(r) = rest.strip_prefix('.') {
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        frac = format!("0.{}", &r[..digits]).parse().ok()?;
        rest = &r[digits..];
    }
    let offset_s = match rest.as_bytes().first() {
        None => 0,
        Some(b'Z') => 0,
        Some(sign @ (b'+' | b'-')) => {
            let digits: String = rest[1..].chars().filter(char::is_ascii_digit).collect();
            if digits.len() != 4 {
                return None;
            }
            let hh: i64 = digits[..2].parse().ok()?;
            let mm: i64 = digits[2..].parse().ok()?;
            let o = hh * 3600 + mm * 60;
            if *sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_s;
    Some(secs as f64 + frac)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// One line of Go's gctrace; `None` when it is not one. Gives up to two events: the two
/// stop-the-world pauses, the second carrying the live heap.
pub fn parse_go_line(line: &str) -> Vec<GcEvent> {
    parse_go(line).unwrap_or_default()
}

fn parse_go(line: &str) -> Option<Vec<GcEvent>> {
    let line = line.trim();
    let rest = line.strip_prefix("gc ")?;
    let mut words = rest.split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    let at: f64 = words
        .next()?
        .strip_prefix('@')?
        .strip_suffix('s')?
        .parse()
        .ok()?;
    let (_, fields) = rest.split_once(": ")?;
    let mut parts = fields.split(", ");
    let clock = parts.next()?.strip_suffix(" ms clock")?;
    let phases: Vec<f64> = clock
        .split('+')
        .map(|v| v.parse::<f64>().ok())
        .collect::<Option<_>>()?;
    if phases.len() != 3 {
        return None;
    }
    let live = parts.find_map(|p| {
        let sizes = p.strip_suffix(" MB")?;
        let v: Vec<f64> = sizes
            .split("->")
            .map(|v| v.parse::<f64>().ok())
            .collect::<Option<_>>()?;
        (v.len() == 3).then(|| v[2])
    });
    let full = line.ends_with("(forced)");
    let stamp = Stamp::Uptime(at);
    Some(vec![
        GcEvent {
            at: stamp,
            collection: Some(n),
            pause_ms: Some(phases[0]),
            heap_after_mib: None,
            full,
        },
        GcEvent {
            at: stamp,
            collection: Some(n),
            pause_ms: Some(phases[2]),
            heap_after_mib: live,
            full,
        },
    ])
}

/// One line of Node's `--trace-gc`; `None` when it is not one. Its `collection` is `None`:
/// V8 numbers no collection, [`parse`] numbers them in log order.
pub fn parse_node_line(line: &str) -> Option<GcEvent> {
    // `[pid:isolate]` then the milliseconds since the isolate started, right-aligned.
    let rest = line.trim_start().strip_prefix('[')?;
    let (tag, rest) = rest.split_once(']')?;
    let (pid, isolate) = tag.split_once(':')?;
    if pid.parse::<u32>().is_err() || !isolate.starts_with("0x") {
        return None;
    }
    let (ms, rest) = rest.split_once(" ms: ")?;
    let ms: f64 = ms.trim().parse().ok()?;
    // The collector's name runs up to the first number: `Scavenge`, `Mark-Compact (reduce)`,
    // `Minor Mark-Sweep`; then `start (committed) -> end (committed) MB`.
    let num_at = rest.find(|c: char| c.is_ascii_digit())?;
    let kind = rest[..num_at].trim();
    if kind.is_empty() {
        return None;
    }
    let (sizes, rest) = rest[num_at..].split_once(" MB, ")?;
    let (_, after) = sizes.split_once(" -> ")?;
    let heap_after_mib: f64 = after.split(' ').next()?.parse().ok()?;
    // `38.11 / 0.00 ms`: the first `…, ` field of that shape, so a field another V8 version
    // puts before it does not shift the parse.
    let pause_ms = rest.split(", ").find_map(|field| {
        let (pause, external) = field.split_once(" / ")?;
        external.split(' ').nth(1).filter(|u| *u == "ms")?;
        pause.parse::<f64>().ok()
    })?;
    // `Mark-Compact`, or `Mark-sweep` in older V8s: the major collector.
    let full = kind.starts_with("Mark-");
    Some(GcEvent {
        at: Stamp::Uptime(ms / 1e3),
        collection: None,
        pause_ms: Some(pause_ms),
        heap_after_mib: Some(heap_after_mib),
        full,
    })
}

/// How to place a log's stamps on the cell's clock (seconds since the cell started).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GcClock {
    /// When the process that writes the log was started, seconds since the cell started.
    pub process_start_s: f64,
    /// When the cell started, Unix seconds.
    pub cell_start_unix_s: f64,
}

impl GcClock {
    /// The event's time on the cell's clock.
    pub fn cell_time(&self, at: Stamp) -> f64 {
        match at {
            Stamp::Uptime(u) => self.process_start_s + u,
            Stamp::Wall(w) => w - self.cell_start_unix_s,
        }
    }
}

/// Which of the load's windows an event falls in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcWindow {
    /// The warm-up.
    Warmup,
    /// The measurement.
    Measurement,
}

/// The GC figures of `window`: the events whose cell time falls in it. A window without any
/// event still has a summary (no pauses) but no throughput: without a single event there is no
/// evidence the log records this collector at all (a missing `-Xlog:gc`, a wrong format), so
/// "100 %" would be a figure nobody measured. The reports show "no GC events" instead.
pub fn summarize(
    format: GcFormat,
    events: &[GcEvent],
    clock: &GcClock,
    windows: &Windows,
    window: GcWindow,
) -> GcSummary {
    let warm_end = windows.load_start_s + windows.warmup_s;
    let (from, len) = match window {
        GcWindow::Warmup => (windows.load_start_s, windows.warmup_s),
        GcWindow::Measurement => (warm_end, windows.measurement_s),
    };
    let inside: Vec<&GcEvent> = events
        .iter()
        .filter(|e| {
            let t = clock.cell_time(e.at);
            t >= from && t < from + len
        })
        .collect();
    let mut pauses: Vec<f64> = inside.iter().filter_map(|e| e.pause_ms).collect();
    pauses.sort_by(f64::total_cmp);
    let total: f64 = pauses.iter().sum();
    let mut collections: Vec<u64> = inside.iter().filter_map(|e| e.collection).collect();
    collections.sort_unstable();
    collections.dedup();
    let mut full: Vec<u64> = inside
        .iter()
        .filter(|e| e.full)
        .filter_map(|e| e.collection)
        .collect();
    full.sort_unstable();
    full.dedup();
    let after: Vec<f64> = inside.iter().filter_map(|e| e.heap_after_mib).collect();
    let after_full: Vec<f64> = inside
        .iter()
        .filter(|e| e.full)
        .filter_map(|e| e.heap_after_mib)
        .collect();
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let throughput =
        (!inside.is_empty() && len > 0.0).then(|| (100.0 * (1.0 - total / 1e3 / len)).max(0.0));
    GcSummary {
        format: format.name().to_owned(),
        window_s: len,
        collections: collections.len() as u32,
        full_collections: full.len() as u32,
        pauses: pauses.len() as u32,
        pause_total_ms: total,
        pause_p50_ms: percentile(&pauses, 50.0),
        pause_p90_ms: percentile(&pauses, 90.0),
        pause_p99_ms: percentile(&pauses, 99.0),
        pause_max_ms: pauses.last().copied().unwrap_or(0.0),
        throughput_percent: throughput,
        heap_after_gc_mean_mib: mean(&after),
        heap_after_gc_max_mib: after.iter().copied().reduce(f64::max),
        heap_after_full_gc_mib: mean(&after_full),
    }
}

/// The nearest-rank percentile of sorted values (0 when empty): the smallest value with at
/// least `p` % of the values at or below it, as HdrHistogram reports.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/gc")
            .join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// A clock where uptime is cell time and windows cover [0, 1) and [1, 1000).
    fn whole() -> (GcClock, Windows) {
        (
            GcClock {
                process_start_s: 0.0,
                cell_start_unix_s: 0.0,
            },
            Windows {
                load_start_s: 0.0,
                warmup_s: 0.25,
                measurement_s: 1000.0,
            },
        )
    }

    #[test]
    fn jvm_lines_of_every_collector() {
        let g1 = parse_jvm_line(
            "[0.279s][info][gc             ] GC(29) Pause Full (System.gc()) 27M->20M(64M) 5.731ms",
        )
        .unwrap();
        assert_eq!(g1.at, Stamp::Uptime(0.279));
        assert_eq!(g1.collection, Some(29));
        assert_eq!(g1.pause_ms, Some(5.731));
        assert_eq!(g1.heap_after_mib, Some(20.0));
        assert!(g1.full);
        // The start line has no duration: not an event (it would count the pause twice).
        assert!(
            parse_jvm_line("[0.273s][info][gc,start    ] GC(29) Pause Full (System.gc())")
                .is_none()
        );
        let z =
            parse_jvm_line("[0.200s][info][gc,phases   ] GC(0) Pause Mark Start 0.007ms").unwrap();
        assert_eq!(
            (z.pause_ms, z.heap_after_mib, z.full),
            (Some(0.007), None, false)
        );
        let zc = parse_jvm_line(
            "[0.299s][info][gc          ] GC(8) Garbage Collection (System.gc()) 76M(59%)->22M(17%)",
        )
        .unwrap();
        assert_eq!(
            (zc.pause_ms, zc.heap_after_mib, zc.full),
            (None, Some(22.0), true)
        );
        let wall = parse_jvm_line(
            "[2026-11-21T07:24:34.517+0000][0.304s][info][gc] GC(58) Pause Young (Allocation Failure) 16M->512K(61M) 1.4ms",
        )
        .unwrap();
        assert_eq!(wall.at, Stamp::Wall(1_795_245_874.517));
        // K and M in one log: the unit is kept, not assumed.
        assert_eq!(wall.heap_after_mib, Some(0.5));
        let millis = parse_jvm_line(
            "[54ms][info ][gc     ] GC(0) Pause Young (Allocation Failure) 10M->1G(38M) 1.135ms",
        )
        .unwrap();
        assert_eq!(millis.at, Stamp::Uptime(0.054));
        assert_eq!(millis.heap_after_mib, Some(1024.0));
        // Not gc-tagged, or not an event.
        assert!(parse_jvm_line("[0.1s][info][safepoint] Pause 1.0ms").is_none());
        assert!(parse_jvm_line("[0.009s][info][gc] Using G1").is_none());
        assert!(parse_jvm_line("rounds=708 live=18320").is_none());
        assert!(
            parse_jvm_line("[0.279s][info][gc] GC(29) Pause Full (System.gc()) 27M->2").is_none()
        );
    }

    #[test]
    fn iso_times_with_offsets() {
        assert_eq!(parse_iso_time("1970-01-01T00:00:00.000+0000"), Some(0.0));
        assert_eq!(parse_iso_time("1970-01-01T01:00:00.500+0100"), Some(0.5));
        assert_eq!(parse_iso_time("2000-03-01T00:00:00Z"), Some(951_868_800.0));
        assert_eq!(parse_iso_time("0.304s"), None);
    }

    #[test]
    fn go_lines() {
        let e = parse_go_line(
            "gc 143 @0.801s 5%: 0.046+1.0+0.002 ms clock, 0.093+0/0.032/1.0+0.005 ms cpu, 53->53->24 MB, 95 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)",
        );
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].pause_ms, Some(0.046));
        assert_eq!(e[1].pause_ms, Some(0.002));
        assert_eq!(e[1].heap_after_mib, Some(24.0));
        assert_eq!(e[0].at, Stamp::Uptime(0.801));
        assert!(e[0].full && e[1].full);
        // The older format (Go 1.13) without stacks and globals.
        let old = parse_go_line(
            "gc 1 @0.012s 2%: 0.015+0.52+0.003 ms clock, 0.060+0.30/0.45/0+0.012 ms cpu, 4->4->0 MB, 5 MB goal, 4 P",
        );
        assert_eq!(old.len(), 2);
        assert!(!old[0].full);
        assert!(parse_go_line("gcdemo listening on 127.0.0.1:0 (not really)").is_empty());
        assert!(parse_go_line("gc 1 @0.012s 2%: 0.015+0.5").is_empty());
    }

    /// Lines of `node --trace-gc` (Node 20.20.2, V8 11.3) from the committed log, with the
    /// figures they print.
    #[test]
    fn node_lines() {
        let s = parse_node_line(
            "[15165:0x2af1fcb0]     1518 ms: Scavenge 62.6 (80.2) -> 47.6 (80.5) MB, 11.11 / 0.00 ms  (average mu = 0.942, current mu = 0.942) allocation failure; ",
        )
        .unwrap();
        assert_eq!(s.at, Stamp::Uptime(1.518));
        assert_eq!(s.pause_ms, Some(11.11));
        assert_eq!(s.heap_after_mib, Some(47.6));
        assert_eq!(s.collection, None);
        assert!(!s.full);
        // gc() under --expose-gc: a forced mark-compact, full.
        let forced = parse_node_line(
            "[15165:0x2af1fcb0]       73 ms: Mark-Compact 11.0 (20.5) -> 3.8 (20.5) MB, 11.31 / 0.00 ms  (average mu = 1.000, current mu = 1.000) testing; GC in old space requested",
        )
        .unwrap();
        assert_eq!(
            (
                forced.at,
                forced.pause_ms,
                forced.heap_after_mib,
                forced.full
            ),
            (Stamp::Uptime(0.073), Some(11.31), Some(3.8), true)
        );
        // After incremental marking: the atomic pause, not the 2.2 ms of marking steps.
        let incremental = parse_node_line(
            "[15165:0x2af1fcb0]      764 ms: Mark-Compact 27.1 (55.9) -> 23.6 (57.0) MB, 38.11 / 0.00 ms  (+ 2.2 ms in 50 steps since start of marking, biggest step 0.1 ms, walltime since start of marking 50 ms) (average mu = 0.942, current mu = 0.942) finalize incremental marking via stack guard; GC in old space requested",
        )
        .unwrap();
        assert_eq!(
            (
                incremental.pause_ms,
                incremental.heap_after_mib,
                incremental.full
            ),
            (Some(38.11), Some(23.6), true)
        );
        // Under --optimize-for-size (examples/seed-002.toml's Express server) the memory
        // reducer's mark-compacts: full too.
        let reduce = parse_node_line(
            "[11077:0x28ac9840]      641 ms: Mark-Compact (reduce) 15.7 (17.0) -> 7.6 (17.0) MB, 2.66 / 0.00 ms  (+ 0.8 ms in 28 steps since start of marking, biggest step 0.1 ms, walltime since start of marking 31 ms) (average mu = 0.986, current mu = 0.986) finalize incremental marking via task; GC in old space requested",
        )
        .unwrap();
        assert_eq!(
            (
                reduce.at,
                reduce.pause_ms,
                reduce.heap_after_mib,
                reduce.full
            ),
            (Stamp::Uptime(0.641), Some(2.66), Some(7.6), true)
        );
        // The program's own output, other formats, a line cut short.
        assert!(parse_node_line("rounds=5886 live=294300").is_none());
        assert!(parse_node_line(
            "[0.279s][info][gc] GC(29) Pause Full (System.gc()) 27M->20M(64M) 5.731ms"
        )
        .is_none());
        assert!(
            parse_node_line("gc 1 @0.012s 2%: 0.015+0.52+0.003 ms clock, 4->4->0 MB, 4 P")
                .is_none()
        );
        assert!(parse_node_line(
            "[15165:0x2af1fcb0]     1505 ms: Scavenge 62.4 (80.0) -> 47.4 (80.2) MB, 1.0"
        )
        .is_none());
        assert!(parse_node_line("[server:0x1] 5 ms: listening").is_none());
    }

    /// The whole committed `node --trace-gc` log (tests/fixtures/gc/gcdemo.js): 192 scavenges
    /// and 2 mark-compacts, mixed with the program's output; every figure as the log prints it.
    #[test]
    fn real_node_log() {
        let text = fixture("node20.20.2-trace-gc.log");
        let events = parse(GcFormat::Node, &text);
        assert_eq!(events.len(), 194);
        let numbers: Vec<u64> = events.iter().filter_map(|e| e.collection).collect();
        assert_eq!(numbers, (1..=194).collect::<Vec<u64>>());
        let (clock, mut windows) = whole();
        windows.warmup_s = 0.0;
        let s = summarize(
            GcFormat::Node,
            &events,
            &clock,
            &windows,
            GcWindow::Measurement,
        );
        assert_eq!(s.format, "node");
        assert_eq!((s.collections, s.full_collections, s.pauses), (194, 2, 194));
        assert!((s.pause_total_ms - 869.67).abs() < 1e-9, "{s:?}");
        assert_eq!(
            (
                s.pause_p50_ms,
                s.pause_p90_ms,
                s.pause_p99_ms,
                s.pause_max_ms
            ),
            (2.93, 9.89, 13.32, 38.11)
        );
        assert_eq!(s.heap_after_gc_max_mib, Some(47.6));
        assert!(
            (s.heap_after_full_gc_mib.unwrap() - 13.7).abs() < 1e-9,
            "{s:?}"
        );
        // The window from 0.5 s to 1 s: 53 collections, one of them the mark-compact at 764 ms.
        let half = Windows {
            load_start_s: 0.0,
            warmup_s: 0.5,
            measurement_s: 0.5,
        };
        let m = summarize(
            GcFormat::Node,
            &events,
            &clock,
            &half,
            GcWindow::Measurement,
        );
        assert_eq!((m.collections, m.full_collections), (53, 1));
        assert!((m.pause_total_ms - 321.13).abs() < 1e-9, "{m:?}");
        assert_eq!(m.heap_after_full_gc_mib, Some(23.6));
        let t = m.throughput_percent.unwrap();
        assert!((t - 35.774).abs() < 1e-9, "{t}");
        let w = summarize(GcFormat::Node, &events, &clock, &half, GcWindow::Warmup);
        // The first 0.5 s hold the other 89 (the forced one among them); the 52 after 1 s are
        // in neither window.
        assert_eq!((w.collections, w.full_collections), (89, 1));
    }

    #[test]
    fn real_g1_log() {
        let text = fixture("jvm17-g1-gcstar.log");
        let events = parse(GcFormat::Jvm, &text);
        let (clock, windows) = whole();
        let s = summarize(
            GcFormat::Jvm,
            &events,
            &clock,
            &windows,
            GcWindow::Measurement,
        );
        // One event per `[gc] … Pause …ms` line in the window, none from gc,start / gc,phases.
        let pause_lines = text
            .lines()
            .filter(|l| l.contains("[gc ") && l.contains(" Pause ") && l.ends_with("ms"))
            .filter(|l| {
                let t: f64 = l[1..l.find("s]").unwrap()].parse().unwrap();
                t >= 0.25
            })
            .count();
        assert!(pause_lines > 5, "{pause_lines}");
        assert_eq!(s.pauses as usize, pause_lines);
        // Full collections: the `[gc]` lines of `Pause Full` in the window, one per GC id.
        let full_lines = text
            .lines()
            .filter(|l| l.contains("[gc ") && l.contains(" Pause Full ") && l.ends_with("ms"))
            .filter(|l| l[1..l.find("s]").unwrap()].parse::<f64>().unwrap() >= 0.25)
            .count();
        assert_eq!(
            full_lines, 2,
            "the fixture's forced collections in the window"
        );
        assert_eq!(s.full_collections as usize, full_lines, "{s:?}");
        assert!(s.heap_after_full_gc_mib.unwrap() > 1.0, "{s:?}");
        assert!(s.pause_max_ms >= s.pause_p99_ms && s.pause_p99_ms >= s.pause_p50_ms);
        let t = s
            .throughput_percent
            .expect("a window with pauses has a throughput");
        assert!(t > 0.0 && t <= 100.0);
        assert_eq!(s.format, "jvm");
        // The warm-up is cut apart: its pauses are not in the measurement.
        let w = summarize(GcFormat::Jvm, &events, &clock, &windows, GcWindow::Warmup);
        assert!(w.pauses > 0);
        let all = events.iter().filter(|e| e.pause_ms.is_some()).count();
        assert_eq!((w.pauses + s.pauses) as usize, all);
    }

    #[test]
    fn real_parallel_log_uses_wall_clock() {
        let text = fixture("jvm17-parallel-gc-time.log");
        let events = parse(GcFormat::Jvm, &text);
        assert!(events.len() > 100);
        assert!(events.iter().all(|e| matches!(e.at, Stamp::Wall(_))));
        // Put the cell's start 0.1 s before the first event: every event lands after it.
        let Stamp::Wall(first) = events[0].at else {
            unreachable!()
        };
        let clock = GcClock {
            process_start_s: 1e9, // ignored for wall-clock stamps
            cell_start_unix_s: first - 0.1,
        };
        let windows = Windows {
            load_start_s: 0.0,
            warmup_s: 0.0,
            measurement_s: 100.0,
        };
        let s = summarize(
            GcFormat::Jvm,
            &events,
            &clock,
            &windows,
            GcWindow::Measurement,
        );
        assert_eq!(s.pauses as usize, events.len());
        // Every `Pause Full` line is one full collection (the demo calls System.gc()).
        let full_lines = text.lines().filter(|l| l.contains(" Pause Full ")).count();
        assert_eq!(full_lines, 15);
        assert_eq!(s.full_collections as usize, full_lines);
    }

    #[test]
    fn real_serial_log_in_milliseconds_with_heap_debug_lines() {
        let events = parse(GcFormat::Jvm, &fixture("jvm17-serial-gc-uptimemillis.log"));
        // The gc+heap=debug lines (`DefNew: 10944K(12288K)->647K(12288K)`) are not events.
        assert!(events.iter().all(|e| e.pause_ms.is_some()));
        assert!(events.len() > 10);
        assert!(events
            .iter()
            .all(|e| matches!(e.at, Stamp::Uptime(u) if u < 10.0)));
    }

    #[test]
    fn real_zgc_log() {
        let events = parse(GcFormat::Jvm, &fixture("jvm17-zgc-gcstar.log"));
        let (clock, windows) = whole();
        let s = summarize(
            GcFormat::Jvm,
            &events,
            &clock,
            &windows,
            GcWindow::Measurement,
        );
        assert!(s.pauses > 3, "{s:?}");
        // ZGC pauses are sub-millisecond.
        assert!(s.pause_max_ms < 5.0, "{s:?}");
        assert!(s.heap_after_gc_mean_mib.is_some());
        assert!(s.full_collections >= 1, "the demo calls System.gc(): {s:?}");
    }

    #[test]
    fn real_go_trace_mixed_with_program_output() {
        let name = std::fs::read_dir(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/gc"),
        )
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("go") && n.ends_with("-gctrace.log"))
        .expect("a committed Go trace");
        let text = fixture(&name);
        let events = parse(GcFormat::Go, &text);
        let gc_lines = text.lines().filter(|l| l.starts_with("gc ")).count();
        assert!(gc_lines > 10);
        assert_eq!(events.len(), 2 * gc_lines);
        let (clock, mut windows) = whole();
        windows.warmup_s = 0.0;
        let s = summarize(
            GcFormat::Go,
            &events,
            &clock,
            &windows,
            GcWindow::Measurement,
        );
        assert_eq!(s.collections as usize, gc_lines);
        assert_eq!(s.pauses as usize, 2 * gc_lines);
        assert!(
            s.full_collections >= 1,
            "the demo calls runtime.GC(): {s:?}"
        );
        assert!(s.heap_after_full_gc_mib.is_some());
        assert_eq!(s.format, "go");
    }

    #[test]
    fn windows_and_throughput() {
        let ev = |t: f64, ms: f64| GcEvent {
            at: Stamp::Uptime(t),
            collection: Some((t * 10.0) as u64),
            pause_ms: Some(ms),
            heap_after_mib: Some(10.0),
            full: false,
        };
        // The process started 2 s into the cell; the load at 3 s: 1 s warm-up, 2 s measured.
        let clock = GcClock {
            process_start_s: 2.0,
            cell_start_unix_s: 0.0,
        };
        let windows = Windows {
            load_start_s: 3.0,
            warmup_s: 1.0,
            measurement_s: 2.0,
        };
        let events = vec![
            ev(0.5, 100.0),
            ev(1.5, 50.0),
            ev(2.5, 100.0),
            ev(3.5, 100.0),
        ];
        let w = summarize(GcFormat::Jvm, &events, &clock, &windows, GcWindow::Warmup);
        assert_eq!((w.pauses, w.pause_total_ms), (1, 50.0));
        assert!((w.throughput_percent.unwrap() - 95.0).abs() < 1e-9);
        let m = summarize(
            GcFormat::Jvm,
            &events,
            &clock,
            &windows,
            GcWindow::Measurement,
        );
        assert_eq!((m.pauses, m.pause_total_ms, m.collections), (2, 200.0, 2));
        assert!((m.throughput_percent.unwrap() - 90.0).abs() < 1e-9);
        assert_eq!(m.heap_after_full_gc_mib, None);
        // Events elsewhere in the log but none in the window: no throughput figure.
        let late = vec![ev(10.0, 5.0)];
        let quiet = summarize(
            GcFormat::Jvm,
            &late,
            &clock,
            &windows,
            GcWindow::Measurement,
        );
        assert_eq!((quiet.pauses, quiet.throughput_percent), (0, None));
    }

    /// A JVM started with `-Xlog:gc*` that stopped before its first collection: the log has
    /// the collector's start-up lines and the heap summary at exit, but no GC event. Its
    /// windows get no throughput (shown as "no GC events"), never 100 %.
    #[test]
    fn log_without_gc_events_has_no_throughput() {
        let text = "\
[0.004s][info][gc,init] Version: 17.0.13+11-Debian-2deb12u1 (release)
[0.004s][info][gc,init] CPUs: 2 total, 2 available
[0.004s][info][gc,init] Memory: 7937M
[0.004s][info][gc     ] Using G1
[0.005s][info][gc,init] Heap Region Size: 1M
[0.005s][info][gc,init] Heap Min Capacity: 8M
[0.005s][info][gc,init] Heap Initial Capacity: 124M
[0.005s][info][gc,init] Heap Max Capacity: 1984M
[0.012s][info][gc,metaspace] CDS archive(s) mapped at: [0x0000000800000000-0x0000000800bd5000-0x0000000800bd5000), size 12406784, SharedBaseAddress: 0x0000000800000000, ArchiveRelocationMode: 1.
[3.521s][info][gc,heap,exit] Heap
[3.521s][info][gc,heap,exit]  garbage-first heap   total 126976K, used 9216K [0x0000000084000000, 0x0000000100000000)
[3.521s][info][gc,heap,exit]   region size 1024K, 10 young (10240K), 0 survivors (0K)
[3.521s][info][gc,heap,exit]  Metaspace       used 1021K, committed 1216K, reserved 1056768K, class space used 88K, committed 192K, reserved 1048576K
";
        let events = parse(GcFormat::Jvm, text);
        assert!(
            events.is_empty(),
            "start-up and exit lines are no events: {events:?}"
        );
        let (clock, windows) = whole();
        for w in [GcWindow::Warmup, GcWindow::Measurement] {
            let s = summarize(GcFormat::Jvm, &events, &clock, &windows, w);
            assert_eq!(s.throughput_percent, None, "{w:?}");
            assert_eq!((s.pauses, s.collections), (0, 0));
        }
        // The same for Go: program output only, no gctrace line.
        let go = parse(GcFormat::Go, "listening on :8080\nserved 1000 requests\n");
        assert!(go.is_empty());
        let s = summarize(GcFormat::Go, &go, &clock, &windows, GcWindow::Measurement);
        assert_eq!(s.throughput_percent, None);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&[3.0], 99.0), 3.0);
        assert_eq!(percentile(&[], 99.0), 0.0);
    }

    /// The suite keys that name a GC log: validated, round-tripped, misspellings refused.
    #[test]
    fn suite_keys() {
        use crate::suite::Suite;
        let base = |extra: &str| {
            format!(
                "[[scenario]]\nname = \"s\"\nsut = {{ command = \"exec x {{port}}\" }}\n{extra}"
            )
        };
        let dir = std::path::Path::new("/x");
        let s = Suite::from_toml(
            "t.toml",
            dir,
            &base("gc_format = \"jvm\"\ngc_log = \"{cell_dir}/gc.log\""),
        )
        .unwrap();
        let gc = s.scenarios[0].gc.clone().unwrap();
        assert_eq!(gc.format, GcFormat::Jvm);
        assert_eq!(gc.path.as_deref(), Some("{cell_dir}/gc.log"));
        let again = Suite::from_toml("t.toml", dir, &s.to_toml()).unwrap();
        assert_eq!(again.scenarios[0].gc, s.scenarios[0].gc);
        // Go's trace is on stderr: the SUT's own log is the default.
        let go = Suite::from_toml("t.toml", dir, &base("gc_format = \"go\"")).unwrap();
        assert_eq!(go.scenarios[0].gc.as_ref().unwrap().path, None);
        let err = |extra: &str| {
            Suite::from_toml("t.toml", dir, &base(extra))
                .unwrap_err()
                .to_string()
        };
        assert!(err("gc_format = \"dotnet\"").contains("is not a GC log format"));
        assert!(err("gc_log = \"gc.log\"").contains("gc_log needs gc_format"));
        assert!(err("gc_format = \"go\"\ngc_log = \"{cel_dir}/x\"").contains("gc_log"));
        assert!(err("gc_fromat = \"go\"").contains("unknown key \"gc_fromat\""));
    }
}
