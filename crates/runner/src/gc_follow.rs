//! A SUT's GC log followed while a cell's load runs, for the live series of
//! `gatebench run --metrics` (the record's GC figures are still read once, after the cell,
//! by [`crate::gc`]).
//!
//! Rule: every period the bytes appended to the log since the last read are taken, split into
//! complete lines (a line still being written waits for the next read), and each line is
//! parsed exactly as the end-of-cell summary parses it ([`crate::gc`]'s line parsers); the
//! pauses are added up. What the log held when following began (start-up collections) is not
//! counted: the figures count from the load's start. A log that does not exist yet is waited
//! for; one that shrinks (rotated, truncated) is read again from its start.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::gc::{self, GcFormat};

/// The longest line kept while waiting for its end: a longer one is not a GC event.
const MAX_LINE: usize = 64 * 1024;

/// Pauses counted since following began.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GcLive {
    /// Stop-the-world pauses.
    pub pauses: u64,
    /// Their total, seconds.
    pub pause_seconds: f64,
    /// The longest, seconds.
    pub pause_max_seconds: f64,
    /// Events of full collections.
    pub full: u64,
    /// The heap after the latest collection that said it, MiB.
    pub heap_after_mib: Option<f64>,
}

/// The pauses of the lines fed so far.
#[derive(Debug)]
pub struct GcTally {
    format: GcFormat,
    partial: Vec<u8>,
    live: GcLive,
}

impl GcTally {
    /// An empty tally of a `format` log.
    pub fn new(format: GcFormat) -> GcTally {
        GcTally {
            format,
            partial: Vec::new(),
            live: GcLive::default(),
        }
    }

    /// Adds the bytes appended to the log; a line without its end yet waits for it.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.partial.extend_from_slice(bytes);
        let Some(last_nl) = self.partial.iter().rposition(|&b| b == b'\n') else {
            if self.partial.len() > MAX_LINE {
                self.partial.clear();
            }
            return;
        };
        let rest = self.partial.split_off(last_nl + 1);
        let complete = std::mem::replace(&mut self.partial, rest);
        for line in String::from_utf8_lossy(&complete).lines() {
            let events = match self.format {
                GcFormat::Jvm => gc::parse_jvm_line(line).into_iter().collect(),
                GcFormat::Go => gc::parse_go_line(line),
                GcFormat::Node => gc::parse_node_line(line).into_iter().collect(),
            };
            for e in events {
                self.add(&e);
            }
        }
    }

    fn add(&mut self, e: &gc::GcEvent) {
        let l = &mut self.live;
        if let Some(ms) = e.pause_ms {
            l.pauses += 1;
            l.pause_seconds += ms / 1e3;
            l.pause_max_seconds = l.pause_max_seconds.max(ms / 1e3);
        }
        if e.full {
            l.full += 1;
        }
        if e.heap_after_mib.is_some() {
            l.heap_after_mib = e.heap_after_mib;
        }
    }

    /// The figures so far.
    pub fn live(&self) -> GcLive {
        self.live
    }
}

/// Told the figures after every read.
pub type GcTap = Arc<dyn Fn(&GcLive) + Send + Sync>;

/// A thread following one GC log.
#[derive(Debug)]
pub struct GcFollower {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl GcFollower {
    /// Follows the `format` log at `path` every `period`, from its present end.
    pub fn start(path: PathBuf, format: GcFormat, period: Duration, tap: GcTap) -> GcFollower {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        // From the log's present end: start-up collections are not the load's.
        let offset = std::fs::metadata(&path).map_or(0, |m| m.len());
        let handle = std::thread::Builder::new()
            .name("gatebench-gc-follow".into())
            .spawn(move || follow(&path, offset, format, period, &flag, &tap))
            .ok();
        GcFollower { stop, handle }
    }

    /// Stops following (after its last read).
    pub fn finish(mut self) {
        self.stop_thread();
    }

    fn stop_thread(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for GcFollower {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

fn follow(
    path: &PathBuf,
    mut offset: u64,
    format: GcFormat,
    period: Duration,
    stop: &AtomicBool,
    tap: &GcTap,
) {
    let mut tally = GcTally::new(format);
    let mut buf = Vec::new();
    loop {
        let last = stop.load(Ordering::Relaxed);
        if let Ok(mut f) = File::open(path) {
            let len = f.metadata().map_or(0, |m| m.len());
            if len < offset {
                offset = 0;
            }
            buf.clear();
            if f.seek(SeekFrom::Start(offset)).is_ok() {
                if let Ok(n) = f.read_to_end(&mut buf) {
                    offset += n as u64;
                    tally.feed(&buf);
                }
            }
        }
        tap(&tally.live());
        if last {
            return;
        }
        // Sleeps in short steps so that a stop is seen at once.
        let mut slept = Duration::ZERO;
        while slept < period && !stop.load(Ordering::Relaxed) {
            let step = Duration::from_millis(50).min(period - slept);
            std::thread::sleep(step);
            slept += step;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::Mutex;

    const GO: &str = "gc 1 @0.012s 2%: 0.015+0.52+0.003 ms clock, 0.060+0.30/0.45/0+0.012 ms cpu, 4->4->0 MB, 5 MB goal, 4 P\n";
    const JVM_FULL: &str =
        "[0.279s][info][gc             ] GC(29) Pause Full (System.gc()) 27M->20M(64M) 5.731ms\n";

    #[test]
    fn lines_are_counted_once_complete() {
        let mut t = GcTally::new(GcFormat::Go);
        // A line cut in two: nothing until its end arrives.
        let (a, b) = GO.split_at(30);
        t.feed(a.as_bytes());
        assert_eq!(t.live().pauses, 0);
        t.feed(b.as_bytes());
        // Go's line is two stop-the-world pauses: 0.015 and 0.003 ms.
        let l = t.live();
        assert_eq!(l.pauses, 2);
        assert!((l.pause_seconds - 0.018e-3).abs() < 1e-12, "{l:?}");
        assert!((l.pause_max_seconds - 0.015e-3).abs() < 1e-12);
        assert_eq!(l.heap_after_mib, Some(0.0));
        // The program's own output between GC lines is skipped.
        t.feed(b"listening on :8080\n");
        t.feed(GO.as_bytes());
        assert_eq!(t.live().pauses, 4);
    }

    #[test]
    fn full_collections_and_heap_after() {
        let mut t = GcTally::new(GcFormat::Jvm);
        t.feed(JVM_FULL.as_bytes());
        let l = t.live();
        assert_eq!((l.pauses, l.full), (1, 1));
        assert_eq!(l.heap_after_mib, Some(20.0));
        assert!((l.pause_seconds - 5.731e-3).abs() < 1e-12);
    }

    #[test]
    fn the_follower_counts_what_is_appended_after_it_started() {
        let dir = std::env::temp_dir().join(format!("gatebench-gc-follow-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sut.log");
        // A start-up collection before following began: not counted.
        std::fs::write(&path, GO).unwrap();
        let seen = Arc::new(Mutex::new(GcLive::default()));
        let sink = seen.clone();
        let f = GcFollower::start(
            path.clone(),
            GcFormat::Go,
            Duration::from_millis(20),
            Arc::new(move |l: &GcLive| *sink.lock().unwrap() = *l),
        );
        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        for _ in 0..3 {
            log.write_all(GO.as_bytes()).unwrap();
        }
        log.flush().unwrap();
        // The last read happens at the stop, so nothing appended before it is missed.
        f.finish();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(seen.lock().unwrap().pauses, 6);
    }
}
