//! The human report of one load run, in the spirit of `wrk --latency`: what was asked, what
//! came back, the whole percentile spectrum, every error class that occurred, transfer rates,
//! connection figures and the generator's self-check. One run only: suites are
//! [`crate::summary`]'s, comparisons [`crate::compare`]'s; the CLI prints what it returns.

use std::fmt::Write;

use gatebench_model::{
    ClassReport, LatencySummary, LoadReport, Model, Outcome, PhaseReport, SecondRecord, SelfCheck,
};

use crate::fmt::{bytes, count, duration_ms, rate};

/// The measured full second whose sent count strays furthest from the program's target:
/// `(percent off, second, sent, target)`. Seconds whose target is zero are left out.
fn worst_second(timeline: &[SecondRecord]) -> Option<(f64, i64, u64, f64)> {
    timeline
        .iter()
        .filter(|s| s.t_s >= 0.0 && s.length_s >= 0.999 && s.target_rate > 0.0)
        .map(|s| {
            let target = s.target_rate * s.length_s;
            let off = 100.0 * (s.sent as f64 - target).abs() / target;
            (off, s.t_s.round() as i64, s.sent, target)
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// Renders `r` as the text `gatebench load` prints.
pub fn render(r: &LoadReport) -> String {
    let mut out = String::new();
    let c = &r.config;
    let stop = match (c.duration_s, c.requests) {
        (Some(d), Some(n)) => format!("{} or {} requests", secs(d), count(n)),
        (Some(d), None) => secs(d),
        (None, Some(n)) => format!("{} requests", count(n)),
        (None, None) => "to the end of the replay".to_owned(),
    };
    let replay = c.requests_from.as_ref().filter(|f| f.kind == "replay");
    let model = match (c.model, c.rate, &c.arrival) {
        (Model::Open, _, _) if replay.is_some() => {
            let f = replay.expect("checked");
            format!(
                "replay of {} ({}, {} requests) at speed {}",
                f.file,
                f.format.as_deref().unwrap_or("?"),
                count(f.entries),
                f.speed.unwrap_or(1.0)
            )
        }
        (Model::Open, Some(rate_), Some(a)) => format!(
            "open model, rate {} (mean {} req/s){}",
            a.program,
            count(rate_.round() as u64),
            match a.seed {
                Some(seed) if a.spacing == "poisson" => format!(", Poisson arrivals (seed {seed})"),
                _ => String::new(),
            }
        ),
        (Model::Open, Some(rate_), None) => {
            format!("open model at {} req/s", count(rate_.round() as u64))
        }
        _ => "closed model".to_owned(),
    };
    match &c.requests_from {
        Some(f) if f.kind == "mix" => {
            let _ = writeln!(
                out,
                "mix of {} requests ({}) to {} {}",
                f.entries, f.file, c.url, c.protocol
            );
        }
        Some(_) => {
            let _ = writeln!(out, "replay to {} {}", c.url, c.protocol);
        }
        None => {
            let _ = writeln!(out, "{} {} {}", c.method, c.url, c.protocol);
        }
    }
    let streams = if c.streams > 1 {
        format!(" × {} streams", c.streams)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "  {model}, {} connections{streams}, {} threads, {stop}{}{}",
        c.connections,
        c.threads,
        if c.warmup_s > 0.0 {
            format!(" after {} warm-up", secs(c.warmup_s))
        } else {
            String::new()
        },
        if c.keepalive { "" } else { ", no keep-alive" },
    );
    if let Some(w) = &r.warmup {
        let _ = writeln!(
            out,
            "  warm-up (not counted below): {} responses, {} req/s, {} errors, p99 {}{}",
            count(w.outcomes.responses()),
            rate(w.throughput_rps),
            count(w.outcomes.errors()),
            if w.latency.point(99.0).is_some_and(|p| p.lower_bound) {
                "≥"
            } else {
                ""
            },
            duration_ms(w.latency.at(99.0).unwrap_or(0.0)),
        );
    }
    out.push('\n');
    phase(&mut out, &r.measurement, c.model);
    if let Some(cls) = &r.classes {
        classes(&mut out, cls, r.measurement.requests);
    }
    if let Some(s) = &r.stream {
        crate::stream_text::render(&mut out, s);
    }
    if let Some(worst) = r.timeline.as_deref().and_then(worst_second) {
        let _ = writeln!(
            out,
            "{}: sent within {:.1}% of the target in every full second (worst: \
             second {}, {} sent, {} asked)",
            // A shard keeps its seconds at a fixed rate too.
            if c.arrival.is_some() {
                "Program"
            } else {
                "Rate"
            },
            worst.0,
            worst.1,
            count(worst.2),
            rate(worst.3)
        );
    }
    self_check(&mut out, r);
    for w in &r.target_warnings {
        let _ = writeln!(out, "TARGET: {w}");
    }
    thresholds(&mut out, r);
    out
}

/// `Thresholds`: each one's verdict, its metric over the measurement, and where a window first
/// breached it.
fn thresholds(out: &mut String, r: &LoadReport) {
    thresholds_block(out, &r.thresholds);
}

/// The `Thresholds` block of a report: each verdict on its line; nothing without any.
pub(crate) fn thresholds_block(out: &mut String, thresholds: &[gatebench_model::ThresholdResult]) {
    if thresholds.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nThresholds");
    for t in thresholds {
        let _ = write!(
            out,
            "  {} {:<32} {}",
            if t.passed { "PASS" } else { "FAIL" },
            t.threshold,
            t.observed
        );
        if let (Some(at), Some(b)) = (t.breached_at_s, &t.breach) {
            let _ = write!(out, "; breached at {at:.0} s ({b})");
        }
        if t.aborted {
            out.push_str("; stopped the run");
        }
        out.push('\n');
    }
}

fn secs(s: f64) -> String {
    if s.fract() == 0.0 {
        format!("{s:.0}s")
    } else {
        format!("{s:.2}s")
    }
}

fn phase(out: &mut String, m: &PhaseReport, model: Model) {
    let _ = writeln!(
        out,
        "  {} requests in {}, {} responses, {} read, {} written",
        count(m.requests),
        secs(m.duration_s),
        count(m.outcomes.responses()),
        bytes(m.bytes_read),
        bytes(m.bytes_written),
    );
    let _ = writeln!(
        out,
        "  Requests/sec: {:>12}   (2xx {}/s)",
        rate(m.throughput_rps),
        rate(m.ok_rps)
    );
    if let Some(t) = m.target_rps {
        let _ = writeln!(
            out,
            "  Rate:         target {} req/s, sent {} req/s",
            rate(t),
            rate(m.sent_rps)
        );
    }
    let secs_ = m.duration_s.max(1e-9);
    let _ = writeln!(
        out,
        "  Transfer/sec: {:>12} read, {} written",
        bytes((m.bytes_read as f64 / secs_) as u64),
        bytes((m.bytes_written as f64 / secs_) as u64)
    );
    out.push('\n');
    let title = match model {
        Model::Open => "Latency (from the intended send time, corrected for coordinated omission)",
        Model::Closed => "Latency",
    };
    latency(out, title, &m.latency);
    if let Some(a) = &m.latency_answered {
        latency(
            out,
            "Latency of answered requests only (as wrk reports it; hides the unanswered)",
            a,
        );
    }
    if let Some(u) = &m.latency_uncorrected {
        latency(
            out,
            "Latency from the actual send (uncorrected, hides stalls)",
            u,
        );
    }
    let _ = writeln!(
        out,
        "  Concurrency (Little's law): {:.1} requests outstanding on average",
        m.concurrency
    );
    out.push('\n');
    let _ = writeln!(out, "Outcomes ({} scheduled)", count(m.requests));
    for (o, n) in m.outcomes.nonzero() {
        let pct = if m.requests == 0 {
            0.0
        } else {
            100.0 * n as f64 / m.requests as f64
        };
        let _ = writeln!(out, "  {:<24}{:>14}  {:>7.3}%", o.label(), count(n), pct);
    }
    let _ = writeln!(out, "  Error %: {:.3}", m.error_percent);
    let never = m.outcomes.get(Outcome::NeverSent);
    if never > 0 {
        let _ = writeln!(
            out,
            "  note: {} requests were due but no connection was free to send them; latency \
             includes that wait. More connections (-c) let the target show its own limit.",
            count(never)
        );
    }
    out.push('\n');
    let cs = &m.connections;
    let _ = write!(
        out,
        "Connections: {} opened, {} reconnects, {} failed attempts, {:.1} responses per connection",
        count(cs.opened),
        count(cs.reconnects),
        count(cs.connect_failures),
        cs.requests_per_connection
    );
    if let Some(ct) = &cs.connect_time {
        let _ = write!(
            out,
            ", connect p50 {} p99 {}",
            duration_ms(ct.at(50.0).unwrap_or(0.0)),
            duration_ms(ct.at(99.0).unwrap_or(0.0))
        );
    }
    out.push('\n');
    if cs.tls_full_handshakes + cs.tls_resumed_handshakes > 0 {
        let _ = write!(
            out,
            "TLS: {} full handshakes, {} resumed",
            count(cs.tls_full_handshakes),
            count(cs.tls_resumed_handshakes)
        );
        if let Some(h) = &cs.tls_handshake_time {
            let _ = write!(
                out,
                ", handshake p50 {} p99 {} max {}",
                duration_ms(h.at(50.0).unwrap_or(0.0)),
                duration_ms(h.at(99.0).unwrap_or(0.0)),
                duration_ms(h.max_ms)
            );
        }
        out.push('\n');
    }
    if let Some(s) = cs.max_streams_in_use {
        let _ = writeln!(
            out,
            "HTTP/2: at most {s} streams in use at once on a connection"
        );
    }
}

/// The measurement by request class: one line each, after the totals.
fn classes(out: &mut String, classes: &[ClassReport], total: u64) {
    let _ = writeln!(
        out,
        "\nBy request class{}",
        if classes.iter().any(|c| c.weight.is_some()) {
            ""
        } else {
            " (method and path, query left out)"
        }
    );
    let _ = writeln!(
        out,
        "  {:<32} {:>6} {:>10} {:>7} {:>8} {:>10} {:>10} {:>10}",
        "class", "weight", "requests", "share", "errors", "p50", "p99", "max"
    );
    for c in classes {
        let name: String = if c.name.chars().count() > 32 {
            c.name.chars().take(31).chain(['…']).collect()
        } else {
            c.name.clone()
        };
        let point = |p: f64| match c.latency.point(p) {
            Some(x) if c.latency.count > 0 => {
                format!(
                    "{}{}",
                    if x.lower_bound { "≥" } else { "" },
                    duration_ms(x.ms)
                )
            }
            _ => "-".to_owned(),
        };
        let max = if c.latency.count == 0 {
            "-".to_owned()
        } else {
            format!(
                "{}{}",
                if c.latency.censored > 0 { "≥" } else { "" },
                duration_ms(c.latency.max_ms)
            )
        };
        let share = if total == 0 {
            0.0
        } else {
            100.0 * c.requests as f64 / total as f64
        };
        let _ = writeln!(
            out,
            "  {:<32} {:>6} {:>10} {:>6.1}% {:>8} {:>10} {:>10} {:>10}",
            name,
            c.weight.map_or("-".to_owned(), |w| w.to_string()),
            count(c.requests),
            share,
            count(c.outcomes.errors()),
            point(50.0),
            point(99.0),
            max
        );
    }
    out.push('\n');
}

fn latency(out: &mut String, title: &str, l: &LatencySummary) {
    let _ = writeln!(out, "{title}");
    if l.count == 0 {
        let _ = writeln!(out, "  no complete responses");
        return;
    }
    // With censored values (requests that never got an answer) the mean, stdev and max are
    // lower bounds, as is every percentile that falls on them.
    let ge = if l.censored > 0 { "≥" } else { "" };
    let _ = writeln!(
        out,
        "  mean {ge}{}  stdev {}  min {}  max {ge}{}",
        duration_ms(l.mean_ms),
        duration_ms(l.stdev_ms),
        duration_ms(l.min_ms),
        duration_ms(l.max_ms)
    );
    let mut line = String::from(" ");
    for p in &l.percentiles {
        if p.p == 25.0 || p.p == 100.0 {
            continue;
        }
        let ge = if p.lower_bound { "≥" } else { "" };
        let _ = write!(line, " p{}={ge}{}", trim_pct(p.p), duration_ms(p.ms));
    }
    let _ = writeln!(out, "{line}");
    if l.censored > 0 {
        let _ = writeln!(
            out,
            "  ({} of {} values are requests that never got an answer, at the time they had \
             waited: ≥ marks lower bounds)",
            count(l.censored),
            count(l.count)
        );
    }
}

fn trim_pct(p: f64) -> String {
    let s = format!("{p}");
    s.trim_end_matches(".0").to_owned()
}

fn self_check(out: &mut String, r: &LoadReport) {
    let threads = format!("{} worker threads", r.config.threads);
    self_check_block(out, &r.self_check, &threads);
    if !r.valid {
        let _ = writeln!(
            out,
            "WARNING: this result describes the load generator, not the target (marked invalid)"
        );
    }
}

/// The generator's self-check in words: its CPU against `threads` (what its capacity was), its
/// send lag and the schedule kept when it had one, each warning on its own line.
pub(crate) fn self_check_block(out: &mut String, s: &SelfCheck, threads: &str) {
    let _ = write!(
        out,
        "Generator: {:.2}s user + {:.2}s system CPU, {:.0}% of {threads}",
        s.cpu_user_s, s.cpu_sys_s, s.cpu_percent
    );
    if let Some(l) = &s.send_lag {
        let _ = write!(
            out,
            "; send lag p50 {} p99 {}",
            duration_ms(l.at(50.0).unwrap_or(0.0)),
            duration_ms(l.at(99.0).unwrap_or(0.0))
        );
    }
    if let Some(k) = s.schedule_kept_percent {
        let _ = write!(out, "; {k:.2}% of the schedule sent");
    }
    out.push('\n');
    for w in &s.warnings {
        let _ = writeln!(out, "WARNING: {w}");
    }
}
