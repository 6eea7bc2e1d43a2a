//! The records of a run's shards merged into one record: what `gatebench merge` prints, and
//! what a suite would do with the records of several generator hosts.
//!
//! A run split across N load generators (`gatebench load --shard I/N`) gives N records, each
//! carrying its histograms losslessly ([`crate::PhaseHistograms`]). The merge:
//!
//! - checks they are the shards of one run: each says it is a shard of the same N, with the
//!   same target, request, model, protocol, phases and whole-run totals, the indices are
//!   distinct and none is missing (named when one is). The start instants may differ (a
//!   relative `--start-at +30s` on each machine): the start skew says by how much;
//! - adds the histograms bucket by bucket (HdrHistogram addition) and computes every latency
//!   figure from the sums, exactly as one run computes them from its workers' histograms.
//!   Percentiles are never averaged: the merged p99 is the p99 of every value of every shard;
//! - sums outcome classes, bytes, connections and CPU time;
//! - computes rates over the union of the shards' windows (from the earliest shard's start to
//!   the latest one's end), so a late shard lowers the rate rather than inflating it;
//! - keeps each shard's self-check: one generator-bound shard makes the merged record invalid,
//!   and its warnings are kept, prefixed with the shard (`shard 1/4: …`); the start skew between
//!   shards is recorded.
//!
//! What it cannot do: decide anew which of a shard's cut-off requests stalled. Each shard
//! decided that against its own slowest answer; the merged record keeps those censored values.

use std::collections::BTreeSet;

use crate::histogram::{self, HistogramError, LatencyHistogram};
use crate::{
    ConnectionStats, LoadReport, MergeInfo, MergedShard, Model, Outcome, OutcomeCounts,
    PhaseHistograms, PhaseReport, SecondRecord, SelfCheck, ToolInfo, SCHEMA_VERSION,
};

/// Why records do not merge.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// No record was given.
    #[error("no record to merge")]
    Empty,
    /// A record is not a shard (it was not run with `--shard I/N`).
    #[error("record {position} is not a shard (run with --shard I/N)")]
    NotAShard {
        /// 1-based position among the records given.
        position: usize,
    },
    /// Records disagree on something one run has in common.
    #[error("records {first} and {other} are not shards of one run: {what} differs ({a} vs {b})")]
    Mismatch {
        /// 1-based position of the first record.
        first: usize,
        /// 1-based position of the record that differs.
        other: usize,
        /// What differs.
        what: &'static str,
        /// The first record's value.
        a: String,
        /// The other record's value.
        b: String,
    },
    /// Two records are the same shard.
    #[error("shard {index}/{count} is given twice")]
    Duplicate {
        /// The shard's index.
        index: u32,
        /// Shards in the run.
        count: u32,
    },
    /// A shard's index is out of range.
    #[error("shard {index}/{count} is out of range (indices are 0 to {})", count.saturating_sub(1))]
    OutOfRange {
        /// The shard's index.
        index: u32,
        /// Shards in the run.
        count: u32,
    },
    /// Shards are missing.
    #[error(
        "shard{} {} missing: every shard's record is needed",
        if missing.len() == 1 { "" } else { "s" },
        missing.iter().map(|i| format!("{i}/{count}")).collect::<Vec<_>>().join(", ")
    )]
    Missing {
        /// The missing indices.
        missing: Vec<u32>,
        /// Shards in the run.
        count: u32,
    },
    /// A record has no histograms (written by a gatebench that did not carry them).
    #[error("shard {index}: the record carries no histograms, so it cannot merge exactly")]
    NoHistograms {
        /// The shard's index.
        index: u32,
    },
    /// A record has request classes (`--mix`): their figures are not merged, so the merge is
    /// refused rather than dropping them.
    #[error("shard {index}: the record has request classes (--mix), which gatebench merge does not merge yet")]
    Classes {
        /// The shard's index.
        index: u32,
    },
    /// A record is of another schema version.
    #[error("record {position} has schema version {found}, this gatebench reads version {SCHEMA_VERSION}")]
    SchemaVersion {
        /// 1-based position among the records given.
        position: usize,
        /// Its version.
        found: u32,
    },
    /// A shard's record contradicts itself (its classes do not add up to its requests, a
    /// duration or a rate that is negative or not a number): it was edited or crafted, and a
    /// merge of it would be wrong.
    #[error("shard {index}: {what}")]
    Inconsistent {
        /// The shard's index.
        index: u32,
        /// What is wrong, one line.
        what: String,
    },
    /// The shards' counts together do not fit in 64 bits.
    #[error("the shards' {what} add up to more than 64 bits hold")]
    Overflow {
        /// What was added (`requests`, `bytes read`).
        what: &'static str,
    },
    /// A histogram does not decode.
    #[error("shard {index}: {source}")]
    Histogram {
        /// The shard's index.
        index: u32,
        /// The cause.
        #[source]
        source: HistogramError,
    },
}

/// The shards' per-second timelines added second by second, when every shard has one: the
/// shards started at one agreed instant, so their seconds line up. Each second's latency
/// histograms are added too (exactly, as the phases' are) when every shard's second has one.
fn merge_timelines(shards: &[&LoadReport]) -> Result<Option<Vec<SecondRecord>>, MergeError> {
    let mut out: Vec<SecondSum> = Vec::new();
    for r in shards {
        let Some(seconds) = r.timeline.as_ref() else {
            return Ok(None);
        };
        let index = r.shard.as_ref().map_or(0, |s| s.index);
        for s in seconds {
            match out.iter_mut().find(|o| o.same_second(s)) {
                Some(o) => o.add(s, index)?,
                None => out.push(SecondSum::new(s, index)?),
            }
        }
    }
    out.sort_by(|a, b| a.second.t_s.total_cmp(&b.second.t_s));
    Ok(Some(out.into_iter().map(SecondSum::finish).collect()))
}

/// One second of several shards, added up: the shards' own seconds, which line up because the
/// shards started at one agreed instant.
#[derive(Debug)]
pub struct SecondSum {
    second: SecondRecord,
    latency: Option<LatencyHistogram>,
}

impl SecondSum {
    /// Starts from shard `index`'s second `s`.
    pub fn new(s: &SecondRecord, index: u32) -> Result<SecondSum, MergeError> {
        let latency = s.latency.as_deref().map(|t| decode(t, index)).transpose()?;
        Ok(SecondSum {
            second: s.clone(),
            latency,
        })
    }

    /// Whether `s` is the same second of the run (its start within half a second).
    pub fn same_second(&self, s: &SecondRecord) -> bool {
        (self.second.t_s - s.t_s).abs() < 0.5
    }

    /// Adds shard `index`'s second `s`.
    pub fn add(&mut self, s: &SecondRecord, index: u32) -> Result<(), MergeError> {
        let h = s.latency.as_deref().map(|t| decode(t, index)).transpose()?;
        let o = &mut self.second;
        o.length_s = o.length_s.max(s.length_s);
        o.target_rate += s.target_rate;
        o.sent = o.sent.saturating_add(s.sent);
        o.responses = o.responses.saturating_add(s.responses);
        o.errors = o.errors.saturating_add(s.errors);
        o.detail.merge(&s.detail);
        self.latency = match (self.latency.take(), h) {
            (Some(mut a), Some(b)) => {
                histogram::add(&mut a, &b);
                Some(a)
            }
            // A second some shard has no histogram for has none merged.
            _ => None,
        };
        Ok(())
    }

    /// The merged second's counts so far (its `latency` field is the first shard's until
    /// [`SecondSum::finish`]).
    pub fn counts(&self) -> &SecondRecord {
        &self.second
    }

    /// The merged second's latency so far, when every shard gave one.
    pub fn latency(&self) -> Option<&LatencyHistogram> {
        self.latency.as_ref()
    }

    /// The merged second, its histogram encoded as a record's is.
    pub fn finish(mut self) -> SecondRecord {
        self.second.latency = self.latency.as_ref().map(histogram::encode);
        self.second
    }
}

/// A record's start, Unix microseconds; from its milliseconds when it predates
/// `started_at_unix_us`.
fn start_us(r: &LoadReport) -> u64 {
    if r.started_at_unix_us > 0 {
        r.started_at_unix_us
    } else {
        r.started_at_unix_ms * 1_000
    }
}

/// Merges the records of every shard of one run into one record (see the module's text).
/// The records may come in any order.
pub fn merge(records: &[LoadReport]) -> Result<LoadReport, MergeError> {
    let shards = check(records)?;
    let first = shards[0];
    let count = first.shard.as_ref().expect("checked").count;
    let open = first.config.model == Model::Open;

    // Each shard's phases, as wall-clock windows in Unix milliseconds.
    let warm_start = |r: &LoadReport| start_us(r) as f64 / 1e3;
    let meas_start =
        |r: &LoadReport| warm_start(r) + r.warmup.as_ref().map_or(0.0, |w| w.duration_s * 1e3);
    let warmup = match first.warmup {
        Some(_) => Some(merge_phase(
            &shards,
            |r| {
                r.warmup
                    .as_ref()
                    .expect("checked: every shard has a warm-up")
            },
            warm_start,
            open,
        )?),
        None => None,
    };
    let measurement = merge_phase(&shards, |r| &r.measurement, meas_start, open)?;

    let mut lag = histogram::new_histogram();
    let mut cpu_user_s = 0.0;
    let mut cpu_sys_s = 0.0;
    let mut cpu_percent: f64 = 0.0;
    let mut warnings = Vec::new();
    let mut target_warnings = Vec::new();
    for r in &shards {
        let index = r.shard.as_ref().expect("checked").index;
        for p in std::iter::once(&r.measurement).chain(r.warmup.as_ref()) {
            let h = p.histograms.as_ref().expect("checked");
            if let Some(l) = &h.send_lag {
                histogram::add(&mut lag, &decode(l, index)?);
            }
        }
        cpu_user_s += r.self_check.cpu_user_s;
        cpu_sys_s += r.self_check.cpu_sys_s;
        cpu_percent = cpu_percent.max(r.self_check.cpu_percent);
        let tag = |w: &String| format!("shard {index}/{count}: {w}");
        warnings.extend(r.self_check.warnings.iter().map(tag));
        if !r.valid && r.self_check.warnings.is_empty() {
            warnings.push(format!(
                "shard {index}/{count}: the generator was the bottleneck"
            ));
        }
        target_warnings.extend(r.target_warnings.iter().map(tag));
    }
    let due = measurement.outcomes.total();
    let never = measurement.outcomes.get(Outcome::NeverSent);
    let self_check = SelfCheck {
        cpu_user_s,
        cpu_sys_s,
        cpu_percent,
        send_lag: open.then(|| histogram::summarize(&lag)),
        schedule_kept_percent: open.then(|| {
            if due == 0 {
                100.0
            } else {
                100.0 * (due - never) as f64 / due as f64
            }
        }),
        // The most held-back shard's, as `cpu_percent` is the busiest one's.
        cpu_throttled_s: shards
            .iter()
            .filter_map(|r| r.self_check.cpu_throttled_s)
            .reduce(f64::max),
        warnings,
    };

    let started: Vec<u64> = shards.iter().map(|r| start_us(r)).collect();
    let earliest = *started.iter().min().expect("at least one shard");
    let latest = *started.iter().max().expect("at least one shard");
    let info = first.shard.as_ref().expect("checked");
    let mut config = first.config.clone();
    config.connections = info.connections_total;
    config.rate = info.rate_total;
    if let Some(program) = &info.program_total {
        // Each shard ran the program scaled to its share: the whole run ran it as given, at
        // the sum of the shards' mean rates.
        config.rate = Some(shards.iter().filter_map(|r| r.config.rate).sum());
        if let Some(a) = config.arrival.as_mut() {
            a.program = program.clone();
        }
    }
    config.requests = info.requests_total;
    config.threads = shards.iter().map(|r| r.config.threads).sum();

    Ok(LoadReport {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo {
            name: "gatebench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        started_at_unix_ms: earliest / 1_000,
        started_at_unix_us: earliest,
        config,
        warmup,
        measurement,
        self_check,
        target_warnings,
        timeline: merge_timelines(&shards)?,
        classes: None,
        valid: shards.iter().all(|r| r.valid),
        shard: None,
        thresholds: Vec::new(),
        stream: None,
        merged: Some(MergeInfo {
            live: None,
            count,
            start_skew_ms: (latest - earliest) as f64 / 1e3,
            shards: shards
                .iter()
                .map(|r| MergedShard {
                    index: r.shard.as_ref().expect("checked").index,
                    started_at_unix_ms: r.started_at_unix_ms,
                    started_at_unix_us: start_us(r),
                    connections: r.config.connections,
                    rate: r.config.rate,
                    requests: r.measurement.requests,
                    valid: r.valid,
                    self_check: r.self_check.clone(),
                })
                .collect(),
        }),
    })
}

/// Checks that `records` are every shard of one run; returns them by index.
fn check(records: &[LoadReport]) -> Result<Vec<&LoadReport>, MergeError> {
    let first = records.first().ok_or(MergeError::Empty)?;
    for (i, r) in records.iter().enumerate() {
        if r.schema_version != SCHEMA_VERSION {
            return Err(MergeError::SchemaVersion {
                position: i + 1,
                found: r.schema_version,
            });
        }
        if r.shard.is_none() {
            return Err(MergeError::NotAShard { position: i + 1 });
        }
    }
    // Not the start instant: shards given `--start-at +30s` on several machines each compute
    // their own, and the merge reports how far apart they started (`start_skew_ms`).
    let key = |r: &LoadReport| -> [(&'static str, String); 11] {
        let s = r.shard.as_ref().expect("checked above");
        let c = &r.config;
        [
            ("the shard count", s.count.to_string()),
            ("the URL", c.url.clone()),
            ("the method", c.method.clone()),
            ("the protocol", c.protocol.clone()),
            ("the model", format!("{:?}", c.model)),
            ("the total connections", s.connections_total.to_string()),
            ("the total rate", format!("{:?}", s.rate_total)),
            ("the total request count", format!("{:?}", s.requests_total)),
            ("the duration", format!("{:?}", c.duration_s)),
            ("the warm-up", c.warmup_s.to_string()),
            ("the request", format!("{:?} {:?}", c.headers, c.body_bytes)),
        ]
    };
    let k0 = key(first);
    for (i, r) in records.iter().enumerate().skip(1) {
        for ((what, a), (_, b)) in k0.iter().zip(key(r)) {
            if *a != b {
                return Err(MergeError::Mismatch {
                    first: 1,
                    other: i + 1,
                    what,
                    a: a.clone(),
                    b,
                });
            }
        }
    }
    let count = first.shard.as_ref().expect("checked").count;
    let mut seen = BTreeSet::new();
    for r in records {
        let index = r.shard.as_ref().expect("checked").index;
        if index >= count {
            return Err(MergeError::OutOfRange { index, count });
        }
        if !seen.insert(index) {
            return Err(MergeError::Duplicate { index, count });
        }
        let phases = std::iter::once(&r.measurement).chain(r.warmup.as_ref());
        if phases.into_iter().any(|p| p.histograms.is_none()) {
            return Err(MergeError::NoHistograms { index });
        }
        if r.classes.is_some() {
            return Err(MergeError::Classes { index });
        }
        consistent(r, index)?;
    }
    // Every sum the merge makes fits: each class is at most its phase's requests.
    for (what, part) in [
        (
            "requests",
            (|p: &PhaseReport| p.requests) as fn(&PhaseReport) -> u64,
        ),
        ("bytes read", |p| p.bytes_read),
        ("bytes written", |p| p.bytes_written),
    ] {
        let phases = records
            .iter()
            .flat_map(|r| std::iter::once(&r.measurement).chain(r.warmup.as_ref()));
        if phases.map(part).try_fold(0u64, u64::checked_add).is_none() {
            return Err(MergeError::Overflow { what });
        }
    }
    let missing: Vec<u32> = (0..count).filter(|i| !seen.contains(i)).collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing { missing, count });
    }
    let mut sorted: Vec<&LoadReport> = records.iter().collect();
    sorted.sort_by_key(|r| r.shard.as_ref().expect("checked").index);
    Ok(sorted)
}

/// Checks that a shard's phases agree with themselves: every class counted once, so the
/// classes add up to the requests, and durations and rates are numbers of at least 0.
fn consistent(r: &LoadReport, index: u32) -> Result<(), MergeError> {
    let bad = |what: String| Err(MergeError::Inconsistent { index, what });
    for (name, p) in std::iter::once(("measurement", &r.measurement))
        .chain(r.warmup.as_ref().map(|w| ("warm-up", w)))
    {
        match p.outcomes.checked_total() {
            Some(t) if t == p.requests => {}
            Some(t) => {
                return bad(format!(
                    "the {name}'s classes add up to {t} requests, its count says {}",
                    p.requests
                ))
            }
            None => {
                return bad(format!(
                    "the {name}'s classes add up to more than 64 bits hold"
                ))
            }
        }
        for (field, v) in [
            ("duration", p.duration_s),
            ("throughput", p.throughput_rps),
            ("send rate", p.sent_rps),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(format!(
                    "the {name}'s {field} is {v}, not a number of at least 0"
                ));
            }
        }
    }
    Ok(())
}

fn decode(text: &str, index: u32) -> Result<LatencyHistogram, MergeError> {
    histogram::decode(text).map_err(|source| MergeError::Histogram { index, source })
}

/// Adds an optional histogram of a shard into `into`.
fn add_opt(
    into: &mut LatencyHistogram,
    text: Option<&String>,
    index: u32,
) -> Result<(), MergeError> {
    if let Some(t) = text {
        histogram::add(into, &decode(t, index)?);
    }
    Ok(())
}

/// One phase of every shard merged. `start_ms` gives a shard's phase start (Unix ms).
fn merge_phase(
    shards: &[&LoadReport],
    phase: impl Fn(&LoadReport) -> &PhaseReport,
    start_ms: impl Fn(&LoadReport) -> f64,
    open: bool,
) -> Result<PhaseReport, MergeError> {
    let mut answered = histogram::new_histogram();
    let mut censored = histogram::new_histogram();
    let mut answered_unc = histogram::new_histogram();
    let mut censored_unc = histogram::new_histogram();
    let mut connect = histogram::new_histogram();
    let mut tls = histogram::new_histogram();
    let mut lag = histogram::new_histogram();
    let mut outcomes = OutcomeCounts::default();
    let (mut bytes_read, mut bytes_written, mut sent) = (0u64, 0u64, 0.0f64);
    let mut conns = ConnectionStats::default();
    let mut max_streams: Option<u64> = None;
    let mut target: Option<f64> = None;
    let (mut begin, mut end) = (f64::INFINITY, f64::NEG_INFINITY);
    for r in shards {
        let index = r.shard.as_ref().expect("checked").index;
        let p = phase(r);
        let h: &PhaseHistograms = p.histograms.as_ref().expect("checked");
        histogram::add(&mut answered, &decode(&h.answered, index)?);
        add_opt(&mut censored, h.censored.as_ref(), index)?;
        add_opt(&mut answered_unc, h.answered_uncorrected.as_ref(), index)?;
        add_opt(&mut censored_unc, h.censored_uncorrected.as_ref(), index)?;
        add_opt(&mut connect, h.connect_time.as_ref(), index)?;
        add_opt(&mut tls, h.tls_handshake.as_ref(), index)?;
        add_opt(&mut lag, h.send_lag.as_ref(), index)?;
        outcomes.merge(&p.outcomes);
        bytes_read += p.bytes_read;
        bytes_written += p.bytes_written;
        // The shard's sends come back from its rate over its own window.
        sent += p.sent_rps * p.duration_s;
        let c = &p.connections;
        conns.opened = conns.opened.saturating_add(c.opened);
        conns.reconnects = conns.reconnects.saturating_add(c.reconnects);
        conns.connect_failures = conns.connect_failures.saturating_add(c.connect_failures);
        conns.tls_full_handshakes = conns
            .tls_full_handshakes
            .saturating_add(c.tls_full_handshakes);
        conns.tls_resumed_handshakes = conns
            .tls_resumed_handshakes
            .saturating_add(c.tls_resumed_handshakes);
        if let Some(m) = c.max_streams_in_use {
            max_streams = Some(max_streams.unwrap_or(0).max(m));
        }
        if let Some(t) = p.target_rps {
            target = Some(target.unwrap_or(0.0) + t);
        }
        let s = start_ms(r);
        begin = begin.min(s);
        end = end.max(s + p.duration_s * 1e3);
    }
    let duration_s = ((end - begin) / 1e3).max(0.0);
    let secs = duration_s.max(1e-9);
    let responses = outcomes.responses();
    let latency = histogram::summarize_censored(&answered, &censored);
    let latency_answered = (!censored.is_empty()).then(|| histogram::summarize(&answered));
    let throughput = responses as f64 / secs;
    let some = |h: &LatencyHistogram| (!h.is_empty()).then(|| histogram::encode(h));
    conns.requests_per_connection = if conns.opened == 0 {
        0.0
    } else {
        responses as f64 / conns.opened as f64
    };
    conns.connect_time = (!connect.is_empty()).then(|| histogram::summarize(&connect));
    conns.tls_handshake_time = (!tls.is_empty()).then(|| histogram::summarize(&tls));
    conns.max_streams_in_use = max_streams;
    Ok(PhaseReport {
        duration_s,
        outcomes,
        requests: outcomes.total(),
        throughput_rps: throughput,
        ok_rps: outcomes.get(Outcome::Ok) as f64 / secs,
        error_percent: outcomes.error_percent(),
        target_rps: target,
        sent_rps: sent / secs,
        bytes_read,
        bytes_written,
        concurrency: throughput * latency_answered.as_ref().unwrap_or(&latency).mean_ms / 1e3,
        latency,
        latency_answered,
        latency_uncorrected: open
            .then(|| histogram::summarize_censored(&answered_unc, &censored_unc)),
        connections: conns,
        histograms: Some(PhaseHistograms {
            answered: histogram::encode(&answered),
            censored: some(&censored),
            answered_uncorrected: open.then(|| histogram::encode(&answered_unc)),
            censored_uncorrected: if open { some(&censored_unc) } else { None },
            connect_time: some(&connect),
            tls_handshake: some(&tls),
            send_lag: if open { some(&lag) } else { None },
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::{encode, new_histogram, summarize};
    use crate::{LatencySummary, LoadConfigRecord, SecondRecord, ShardInfo};

    /// A closed-model shard record whose measurement holds `values` (ns), all answered `ok`.
    fn shard(index: u32, count: u32, values: &[u64], started: u64) -> LoadReport {
        let mut h = new_histogram();
        for v in values {
            h.record(*v).unwrap();
        }
        let mut outcomes = OutcomeCounts::default();
        outcomes.add(Outcome::Ok, values.len() as u64);
        LoadReport {
            schema_version: SCHEMA_VERSION,
            tool: ToolInfo {
                name: "gatebench".into(),
                version: "test".into(),
            },
            started_at_unix_ms: started,
            started_at_unix_us: 0,
            config: LoadConfigRecord {
                url: "http://127.0.0.1:1/".into(),
                method: "GET".into(),
                protocol: "http/1.1".into(),
                model: Model::Closed,
                connections: 2,
                streams: 1,
                threads: 1,
                rate: None,
                arrival: None,
                duration_s: Some(10.0),
                requests: None,
                warmup_s: 0.0,
                timeout_ms: 1000.0,
                connect_timeout_ms: 1000.0,
                keepalive: true,
                verify: false,
                headers: vec![],
                body_bytes: 0,
                requests_from: None,
            },
            warmup: None,
            measurement: PhaseReport {
                duration_s: 10.0,
                outcomes,
                requests: values.len() as u64,
                throughput_rps: values.len() as f64 / 10.0,
                ok_rps: values.len() as f64 / 10.0,
                error_percent: 0.0,
                target_rps: None,
                sent_rps: values.len() as f64 / 10.0,
                bytes_read: 100 * values.len() as u64,
                bytes_written: 50 * values.len() as u64,
                latency: summarize(&h),
                latency_answered: None,
                latency_uncorrected: None,
                concurrency: 0.0,
                connections: ConnectionStats::default(),
                histograms: Some(PhaseHistograms {
                    answered: encode(&h),
                    ..PhaseHistograms::default()
                }),
            },
            self_check: SelfCheck {
                cpu_user_s: 1.0,
                cpu_sys_s: 0.5,
                cpu_percent: 20.0,
                send_lag: None,
                schedule_kept_percent: None,
                cpu_throttled_s: None,
                warnings: vec![],
            },
            target_warnings: vec![],
            timeline: None,
            classes: None,
            valid: true,
            shard: Some(ShardInfo {
                index,
                count,
                connections_total: 2 * count,
                rate_total: None,
                program_total: None,
                requests_total: None,
                start_at_unix_ms: Some(1_000),
            }),
            merged: None,
            thresholds: Vec::new(),
            stream: None,
        }
    }

    /// Two shards with very different distributions: the merged percentiles are those of one
    /// histogram holding every value, to the bit, and not any average of the shards' own.
    #[test]
    fn merged_percentiles_equal_one_histogram_of_both_shards() {
        let a: Vec<u64> = (1..=9_000u64).map(|i| 100_000 + i * 37 % 400_000).collect();
        let b: Vec<u64> = (1..=1_000u64).map(|i| 20_000_000 + i * 7_919).collect();
        let merged = merge(&[shard(1, 2, &b, 1_004), shard(0, 2, &a, 1_001)]).unwrap();
        let mut both = new_histogram();
        for v in a.iter().chain(&b) {
            both.record(*v).unwrap();
        }
        let one = summarize(&both);
        let m = &merged.measurement.latency;
        for p in [50.0, 99.0, 99.9] {
            assert_eq!(m.at(p), one.at(p), "p{p}");
        }
        assert_eq!(m, &one);
        // Averaging the shards' p99 would be far from it.
        let avg = (shard(0, 2, &a, 0).measurement.latency.at(99.0).unwrap()
            + shard(1, 2, &b, 0).measurement.latency.at(99.0).unwrap())
            / 2.0;
        assert!((avg - m.at(99.0).unwrap()).abs() > 1.0, "{avg} vs {m:?}");
        assert_eq!(merged.measurement.requests, 10_000);
        assert_eq!(merged.measurement.bytes_read, 1_000_000);
        assert_eq!(merged.config.connections, 4);
        assert_eq!(merged.merged.as_ref().unwrap().start_skew_ms, 3.0);
        // The union window: 1.001 s to 11.004 s.
        assert!((merged.measurement.duration_s - 10.003).abs() < 1e-9);
        assert!((merged.measurement.throughput_rps - 10_000.0 / 10.003).abs() < 1e-9);
        assert!(merged.valid && merged.shard.is_none());
        assert!((merged.self_check.cpu_user_s - 2.0).abs() < 1e-12);
        // The merged record's histogram is itself lossless: it merges on.
        let h = histogram::decode(&merged.measurement.histograms.unwrap().answered).unwrap();
        assert_eq!(summarize(&h), one);
    }

    #[test]
    fn the_start_skew_is_measured_in_microseconds_when_every_shard_gives_them() {
        let mut a = shard(0, 2, &[1_000_000], 1_000);
        let mut b = shard(1, 2, &[1_000_000], 1_000);
        a.started_at_unix_us = 1_000_250;
        b.started_at_unix_us = 1_000_870;
        let m = merge(&[b.clone(), a.clone()]).unwrap();
        let info = m.merged.as_ref().unwrap();
        // 620 µs apart, inside one millisecond: the milliseconds alone would say 0.
        assert!(
            (info.start_skew_ms - 0.62).abs() < 1e-9,
            "{}",
            info.start_skew_ms
        );
        assert_eq!(m.started_at_unix_us, 1_000_250);
        assert_eq!(m.started_at_unix_ms, 1_000);
        assert_eq!(
            info.shards
                .iter()
                .map(|s| s.started_at_unix_us)
                .collect::<Vec<_>>(),
            [1_000_250, 1_000_870]
        );
        // A record from before the field: its milliseconds stand in.
        a.started_at_unix_us = 0;
        b.started_at_unix_ms = 1_002;
        b.started_at_unix_us = 0;
        let m = merge(&[a, b]).unwrap();
        assert_eq!(m.merged.unwrap().start_skew_ms, 2.0);
    }

    #[test]
    fn each_second_of_the_shards_merges_exactly() {
        let second = |t_s: f64, values: &[u64]| {
            let mut h = new_histogram();
            for v in values {
                h.record(*v).unwrap();
            }
            SecondRecord {
                t_s,
                length_s: 1.0,
                target_rate: 100.0,
                sent: values.len() as u64,
                responses: values.len() as u64,
                errors: 1,
                latency: Some(encode(&h)),
                detail: Default::default(),
            }
        };
        let mut a = shard(0, 2, &[1_000_000], 1_000);
        let mut b = shard(1, 2, &[1_000_000], 1_000);
        a.timeline = Some(vec![
            second(0.0, &[1_000_000, 2_000_000]),
            second(1.0, &[3_000_000]),
        ]);
        b.timeline = Some(vec![second(0.0, &[50_000_000])]);
        let m = merge(&[a, b]).unwrap();
        let t = m.timeline.expect("both shards kept their seconds");
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].sent, t[0].errors, t[0].target_rate), (3, 2, 200.0));
        let h0 = histogram::decode(t[0].latency.as_deref().unwrap()).unwrap();
        assert_eq!(h0.len(), 3);
        // The second's p99 is the slow shard's value: the histograms were added, not averaged.
        assert_eq!(
            h0.highest_equivalent(h0.value_at_quantile(0.99)),
            h0.highest_equivalent(50_000_000)
        );
        let h1 = histogram::decode(t[1].latency.as_deref().unwrap()).unwrap();
        assert_eq!((h1.len(), t[1].sent), (1, 1));
    }

    #[test]
    fn a_generator_bound_shard_marks_the_merge_and_keeps_its_warning() {
        let mut b = shard(1, 2, &[1_000_000], 1_000);
        b.valid = false;
        b.self_check.warnings = vec!["busy".into()];
        let m = merge(&[shard(0, 2, &[2_000_000], 1_000), b]).unwrap();
        assert!(!m.valid);
        assert_eq!(m.self_check.warnings, ["shard 1/2: busy"]);
        let shards = &m.merged.unwrap().shards;
        assert_eq!((shards[1].index, shards[1].valid), (1, false));
    }

    #[test]
    fn records_with_request_classes_are_refused_rather_than_dropped() {
        let mut mixed = shard(1, 2, &[1], 0);
        mixed.classes = Some(Vec::new());
        let e = merge(&[shard(0, 2, &[1], 0), mixed])
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "shard 1: the record has request classes (--mix), which gatebench merge does not merge yet"
        );
    }

    #[test]
    fn crafted_or_inconsistent_records_are_refused_with_one_line() {
        let good = || [shard(0, 2, &[1_000], 0), shard(1, 2, &[2_000], 0)];
        let refused = |edit: &dyn Fn(&mut LoadReport)| {
            let mut rs = good();
            edit(&mut rs[1]);
            merge(&rs).unwrap_err().to_string()
        };
        assert!(merge(&good()).is_ok());
        let e = refused(&|r| r.measurement.requests += 5);
        assert_eq!(
            e,
            "shard 1: the measurement's classes add up to 1 requests, its count says 6"
        );
        let e = refused(&|r| {
            r.measurement.outcomes.add(Outcome::Timeout, u64::MAX);
        });
        assert_eq!(
            e,
            "shard 1: the measurement's classes add up to more than 64 bits hold"
        );
        let e = refused(&|r| r.measurement.duration_s = -1.0);
        assert_eq!(
            e,
            "shard 1: the measurement's duration is -1, not a number of at least 0"
        );
        let e = refused(&|r| r.measurement.throughput_rps = f64::NAN);
        assert!(e.contains("throughput is NaN"), "{e}");
        // Each shard alone is consistent, the two together overflow the sums.
        let e = refused(&|r| r.measurement.bytes_read = u64::MAX);
        assert_eq!(e, "the shards' bytes read add up to more than 64 bits hold");
    }

    #[test]
    fn records_that_are_not_every_shard_of_one_run_are_refused() {
        let e = |r: &[LoadReport]| merge(r).unwrap_err().to_string();
        assert_eq!(
            e(&[shard(0, 3, &[1], 0), shard(2, 3, &[1], 0)]),
            "shard 1/3 missing: every shard's record is needed"
        );
        assert_eq!(
            e(&[shard(0, 2, &[1], 0), shard(0, 2, &[1], 0)]),
            "shard 0/2 is given twice"
        );
        let mut other = shard(1, 2, &[1], 0);
        other.config.url = "http://127.0.0.1:2/".into();
        assert!(e(&[shard(0, 2, &[1], 0), other]).contains("the URL differs"));
        let mut plain = shard(1, 2, &[1], 0);
        plain.shard = None;
        assert_eq!(
            e(&[shard(0, 2, &[1], 0), plain]),
            "record 2 is not a shard (run with --shard I/N)"
        );
        let mut old = shard(1, 2, &[1], 0);
        old.measurement.histograms = None;
        assert!(e(&[shard(0, 2, &[1], 0), old]).contains("carries no histograms"));
        assert_eq!(e(&[]), "no record to merge");
        // A hand-made record with no shard at all is refused, not a panic.
        let mut none = shard(0, 1, &[1], 0);
        none.shard.as_mut().unwrap().count = 0;
        assert!(e(&[none]).contains("out of range"));
    }

    #[test]
    fn censored_values_stay_censored() {
        let mut a = shard(0, 2, &[1_000_000; 99], 0);
        let mut c = new_histogram();
        c.record(5_000_000_000).unwrap();
        let h = a.measurement.histograms.as_mut().unwrap();
        h.censored = Some(encode(&c));
        let m = merge(&[a, shard(1, 2, &[1_000_000; 100], 0)]).unwrap();
        let l: &LatencySummary = &m.measurement.latency;
        assert_eq!((l.count, l.censored), (200, 1));
        assert!(l.point(100.0).unwrap().lower_bound);
        assert!(!l.point(99.0).unwrap().lower_bound);
        assert_eq!(m.measurement.latency_answered.as_ref().unwrap().count, 199);
    }
}
