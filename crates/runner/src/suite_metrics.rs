//! A suite's live figures for Prometheus (`gatebench run --metrics ADDRESS`): the load cell in
//! progress with the suite's labels, and how far the run is.
//!
//! Rule: each load cell gets figures of its own (`gatebench load --metrics`'s families), every
//! series labelled with the suite, the cell's id and its matrix values (`scenario`, `users` or
//! `rate`, `size_bytes`, `delay_ms`, `protocol`, `repeat`) besides the user's own labels, so a
//! dashboard tells the cells apart and a cell's counters start at zero; between cells, and
//! after the last, the last cell's final figures stay. The run's progress is
//! `gatebench_suite_cells{state="planned"|"done"|"failed"}`. A sharded cell's figures are its
//! shards' seconds merged live (`crate::shards`).
//!
//! The SUT's samples are live series too (`gatebench_sut_cpu_percent`, `…_resident_memory_bytes`,
//! `…_threads`, `…_open_files`, and the machine's `gatebench_machine_load1`), the latest of
//! the cell in progress, on this machine or on the SUT's remote host (its sampler's lines come
//! back over ssh as they are taken), and its GC pauses from its GC log followed while the load
//! runs (`gatebench_sut_gc_*`, counted from the cell's load start; not for a log at a path on
//! a remote host, which is fetched after the cell).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use gatebench_loadgen::metrics::{Family, Kind, LiveMetrics, Series, Snapshot, Source, Value};

use crate::gc_follow::{GcLive, GcTap};
use crate::matrix::Cell;
use crate::sampler::Sample;
use crate::suite::{Intensity, Suite};

/// A suite's live figures.
#[derive(Debug)]
pub struct SuiteMetrics {
    /// The user's labels (`--metrics-label`), then `suite`.
    labels: Vec<(String, String)>,
    current: Mutex<Option<Arc<LiveMetrics>>>,
    /// The SUT's latest sample in the cell in progress.
    sut: Mutex<Option<Sample>>,
    /// The SUT's GC pauses since the load of the cell in progress began.
    gc: Mutex<Option<GcLive>>,
    planned: AtomicU64,
    done: AtomicU64,
    failed: AtomicU64,
}

impl SuiteMetrics {
    /// The labels each cell's series get from gatebench (a user's label may not use them).
    pub const CELL_LABELS: [&'static str; 10] = [
        "cell",
        "scenario",
        "users",
        "rate",
        "size_bytes",
        "delay_ms",
        "protocol",
        "repeat",
        "phase",
        "outcome",
    ];

    /// Figures of `suite`, with the user's `labels` on every series.
    pub fn new(suite: &Suite, labels: &[(String, String)]) -> Arc<SuiteMetrics> {
        let mut l = labels.to_vec();
        if !l.iter().any(|(k, _)| k == "suite") {
            l.push(("suite".to_owned(), suite.name.clone()));
        }
        Arc::new(SuiteMetrics {
            labels: l,
            current: Mutex::new(None),
            sut: Mutex::new(None),
            gc: Mutex::new(None),
            planned: AtomicU64::new(0),
            done: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        })
    }

    /// The labels every series carries: the user's, then `suite`.
    pub fn labels(&self) -> &[(String, String)] {
        &self.labels
    }

    /// The run plans `n` cells.
    pub fn planned(&self, n: usize) {
        self.planned.store(n as u64, Ordering::Relaxed);
    }

    /// A cell ended, failed or not.
    pub fn cell_done(&self, failed: bool) {
        self.done.fetch_add(1, Ordering::Relaxed);
        if failed {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Fresh figures for load cell `cell` of `suite`, served from now on.
    pub fn begin_cell(&self, suite: &Suite, cell: &Cell) -> Arc<LiveMetrics> {
        let mut labels = self.labels.clone();
        let sc = &suite.scenarios[cell.scenario];
        labels.push(("cell".into(), cell.id.clone()));
        labels.push(("scenario".into(), sc.name.clone()));
        match &cell.intensity {
            Intensity::Users(u) => labels.push(("users".into(), u.to_string())),
            Intensity::Rate(r) => labels.push(("rate".into(), r.to_string())),
            Intensity::Program(p) => labels.push(("rate".into(), p.to_string())),
        }
        labels.push(("size_bytes".into(), cell.size.to_string()));
        labels.push((
            "delay_ms".into(),
            (cell.delay.as_secs_f64() * 1e3).to_string(),
        ));
        labels.push(("protocol".into(), cell.protocol.name().to_owned()));
        labels.push(("repeat".into(), cell.repeat.to_string()));
        let live = LiveMetrics::new(&labels);
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(live.clone());
        *self.sut.lock().unwrap_or_else(|e| e.into_inner()) = None;
        *self.gc.lock().unwrap_or_else(|e| e.into_inner()) = None;
        live
    }

    /// The figures of the load cell in progress (the last one's between cells).
    pub fn current(&self) -> Option<Arc<LiveMetrics>> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The SUT's sample just taken in the cell in progress.
    pub fn sut_sample(&self, s: &Sample) {
        *self.sut.lock().unwrap_or_else(|e| e.into_inner()) = Some(s.clone());
    }

    /// A GC log follower's tap: the SUT's pauses so far in the cell in progress.
    pub fn gc_tap(self: &Arc<Self>) -> GcTap {
        let m = self.clone();
        Arc::new(move |g: &GcLive| {
            *m.gc.lock().unwrap_or_else(|e| e.into_inner()) = Some(*g);
        })
    }

    /// A sampler's tap that hands each sample to [`SuiteMetrics::sut_sample`].
    pub fn tap(self: &Arc<Self>) -> crate::sampler::Tap {
        let m = self.clone();
        Arc::new(move |s: &Sample| m.sut_sample(s))
    }
}

impl Source for SuiteMetrics {
    fn snapshot(&self) -> Snapshot {
        let current = self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut snap = match current {
            Some(live) => live.snapshot(),
            None => Snapshot {
                labels: self.labels.clone().into(),
                families: Vec::new(),
            },
        };
        let state = |name: &'static str, n: &AtomicU64| Series {
            labels: vec![("state", name)],
            value: Value::Int(n.load(Ordering::Relaxed)),
        };
        let sut = self.sut.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(s) = sut {
            let gauge = |name: &'static str, help: &'static str, value: Value| Family {
                name,
                help,
                kind: Kind::Gauge,
                series: vec![Series {
                    labels: Vec::new(),
                    value,
                }],
            };
            snap.families.extend([
                gauge(
                    "gatebench_sut_cpu_percent",
                    "The SUT's CPU over the last sample, percent of one core (its process group).",
                    Value::Float(s.cpu_percent),
                ),
                gauge(
                    "gatebench_sut_resident_memory_bytes",
                    "The SUT's resident memory (its process group).",
                    Value::Int(s.rss_kib * 1024),
                ),
                gauge(
                    "gatebench_sut_threads",
                    "The SUT's threads (its process group).",
                    Value::Int(s.threads),
                ),
                gauge(
                    "gatebench_sut_open_files",
                    "The SUT's open file descriptors (its process group).",
                    Value::Int(s.fds),
                ),
                gauge(
                    "gatebench_machine_load1",
                    "The machine's 1-minute load average.",
                    Value::Float(s.loadavg_1m),
                ),
            ]);
        }
        let gc = *self.gc.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(g) = gc {
            snap.families.extend(gc_families(&g));
        }
        snap.families.push(Family {
            name: "gatebench_suite_cells",
            help: "Cells of the suite run: planned, done (failed or not), failed.",
            kind: Kind::Gauge,
            series: vec![
                state("planned", &self.planned),
                state("done", &self.done),
                state("failed", &self.failed),
            ],
        });
        snap
    }
}

/// The SUT's GC pauses as series: counters from the cell's load start, the longest pause, and
/// the heap after the latest collection.
fn gc_families(g: &GcLive) -> Vec<Family> {
    let one = |name: &'static str, help: &'static str, kind: Kind, value: Value| Family {
        name,
        help,
        kind,
        series: vec![Series {
            labels: Vec::new(),
            value,
        }],
    };
    let mut out = vec![
        one(
            "gatebench_sut_gc_pauses_total",
            "The SUT's stop-the-world GC pauses since the cell's load began (from its GC log).",
            Kind::Counter,
            Value::Int(g.pauses),
        ),
        one(
            "gatebench_sut_gc_pause_seconds_total",
            "The SUT's GC pause time since the cell's load began.",
            Kind::Counter,
            Value::Float(g.pause_seconds),
        ),
        one(
            "gatebench_sut_gc_pause_max_seconds",
            "The SUT's longest GC pause since the cell's load began.",
            Kind::Gauge,
            Value::Float(g.pause_max_seconds),
        ),
        one(
            "gatebench_sut_gc_full_collections_total",
            "The SUT's full-collection GC events since the cell's load began.",
            Kind::Counter,
            Value::Int(g.full),
        ),
    ];
    if let Some(mib) = g.heap_after_mib {
        out.push(one(
            "gatebench_sut_gc_heap_after_bytes",
            "The SUT's heap after its latest collection, as its GC log says.",
            Kind::Gauge,
            Value::Float(mib * 1024.0 * 1024.0),
        ));
    }
    out
}
