//! The live panel of `gatebench load` on a terminal: a few lines on stderr, redrawn in place
//! once a second from the run's live view, and cleared when the run ends so that the report
//! starts on a clean line.
//!
//! Rule: the panel only shows what the run's collector already computed for the second just
//! ended ([`IntervalView`]) and sums of it; it never asks the workers for anything. It is drawn
//! only when stderr is a terminal and `--quiet` is off, so piped output stays what it was, byte
//! for byte. Every line is cut to the terminal's width: a wrapped line would make the next
//! redraw move the cursor up too few lines.
//!
//! What it shows: the elapsed time against the planned one and the phase; the achieved rate
//! against the target (open model) with the requests sent, and the rate's trace; the second's
//! p50/p90/p99/max and the p99's trace; every outcome class so far and the second's errors;
//! connections opened; and the generator's own figures (its CPU against its threads, the
//! longest stall of a thread, whether it keeps the schedule), each flagged `!` where the run's
//! self-check would warn.

use std::collections::VecDeque;
use std::io::Write;
use std::time::{Duration, Instant};

use gatebench_loadgen::IntervalView;
use gatebench_model::OutcomeCounts;
use gatebench_report::fmt;

/// Seconds of trace kept.
const TRACE: usize = 120;
/// Trace characters, lowest to highest.
const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
/// The generator's CPU, percent of its threads' capacity, beyond which it may be the
/// bottleneck (the self-check's bound).
const CPU_WARN_PERCENT: f64 = 95.0;
/// A thread stall beyond this fails the self-check.
const STALL_WARN: Duration = Duration::from_millis(100);
/// An interval shorter than this is the run's last piece of a second.
const PARTIAL: Duration = Duration::from_millis(900);
/// Open model: sending less than this share of the second's target is falling behind.
const BEHIND_SHARE: f64 = 0.98;

/// What the panel knows of the run so far.
#[derive(Debug)]
pub(crate) struct Panel {
    /// Warm-up plus measurement, when the run has a duration.
    planned: Option<Duration>,
    threads: u32,
    last: Option<IntervalView>,
    outcomes: OutcomeCounts,
    sent: u64,
    opened: u64,
    rates: VecDeque<f64>,
    p99s: VecDeque<f64>,
    /// The generator's CPU over the last second, percent of one core.
    cpu_percent: Option<f64>,
    cpu_mark: Option<(Instant, f64)>,
    /// Lines on the terminal now.
    drawn: usize,
}

impl Panel {
    /// A panel for a run of `planned` (warm-up included) on `threads` threads.
    pub(crate) fn new(planned: Option<Duration>, threads: u32) -> Panel {
        Panel {
            planned,
            threads: threads.max(1),
            last: None,
            outcomes: OutcomeCounts::default(),
            sent: 0,
            opened: 0,
            rates: VecDeque::with_capacity(TRACE),
            p99s: VecDeque::with_capacity(TRACE),
            cpu_percent: None,
            cpu_mark: Some((
                Instant::now(),
                gatebench_loadgen::metrics::process_cpu_seconds(),
            )),
            drawn: 0,
        }
    }

    /// Takes in the second just ended.
    pub(crate) fn update(&mut self, v: &IntervalView) {
        self.outcomes.merge(&v.outcomes);
        self.sent += v.sent;
        self.opened += v.opened;
        // The run's last piece of a second (the run ended part-way through it) counts in the
        // sums, but its rate, percentiles and schedule would read as a collapse: the panel
        // keeps showing the last whole second.
        if v.length < PARTIAL && self.last.is_some() {
            return;
        }
        push(&mut self.rates, v.rps);
        push(&mut self.p99s, v.p99_ms);
        let now = (
            Instant::now(),
            gatebench_loadgen::metrics::process_cpu_seconds(),
        );
        if let Some((t0, c0)) = self.cpu_mark {
            let wall = now.0.duration_since(t0).as_secs_f64();
            if wall > 0.0 {
                self.cpu_percent = Some(100.0 * (now.1 - c0).max(0.0) / wall);
            }
        }
        self.cpu_mark = Some(now);
        self.last = Some(v.clone());
    }

    /// The panel's lines, each at most `width` characters.
    pub(crate) fn render(&self, width: usize) -> Vec<String> {
        let Some(v) = &self.last else {
            return vec![cut("gatebench: starting".to_owned(), width)];
        };
        let trace_width = width.saturating_sub(12).clamp(8, TRACE);
        let mut lines = Vec::with_capacity(8);
        lines.push(self.head(v));
        lines.push(rate_line(v));
        lines.push(format!("           {}", trace(&self.rates, trace_width).0));
        lines.push(format!(
            " latency   p50 {}  p90 {}  p99 {}  max {}  (this second)",
            fmt::duration_ms(v.p50_ms),
            fmt::duration_ms(v.p90_ms),
            fmt::duration_ms(v.p99_ms),
            fmt::duration_ms(v.max_ms)
        ));
        let (p99_trace, top) = trace(&self.p99s, trace_width);
        lines.push(format!(
            " p99       {p99_trace}  top {}",
            fmt::duration_ms(top)
        ));
        lines.push(self.outcome_line(v));
        lines.push(format!(
            " conns     opened {} (this second {})",
            fmt::count(self.opened),
            fmt::count(v.opened)
        ));
        lines.push(self.generator_line(v));
        lines.into_iter().map(|l| cut(l, width)).collect()
    }

    fn head(&self, v: &IntervalView) -> String {
        let elapsed = v.elapsed.as_secs();
        let of = self
            .planned
            .map(|p| format!(" of {}s", p.as_secs()))
            .unwrap_or_default();
        format!(
            " gatebench {elapsed}s{of}  {}",
            if v.warmup { "warm-up" } else { "measuring" }
        )
    }

    fn outcome_line(&self, v: &IntervalView) -> String {
        let classes: Vec<String> = self
            .outcomes
            .nonzero()
            .map(|(o, n)| format!("{} {}", o.name(), fmt::count(n)))
            .collect();
        format!(
            " outcomes  {}  errors {:.2} % (this second {})",
            if classes.is_empty() {
                "none yet".to_owned()
            } else {
                classes.join(" · ")
            },
            self.outcomes.error_percent(),
            fmt::count(v.errors)
        )
    }

    fn generator_line(&self, v: &IntervalView) -> String {
        let capacity = 100.0 * f64::from(self.threads);
        let cpu = match self.cpu_percent {
            Some(c) => format!(
                "CPU {:.0} % of {} thread{}{}",
                c,
                self.threads,
                if self.threads == 1 { "" } else { "s" },
                flag(c > CPU_WARN_PERCENT / 100.0 * capacity)
            ),
            None => "CPU -".to_owned(),
        };
        let stall = format!(
            "longest stall {}{}",
            fmt::duration_ms(v.stall_longest.as_secs_f64() * 1e3),
            flag(v.stall_longest > STALL_WARN)
        );
        let schedule = match v.target_rate {
            Some(t) if t > 0.0 => {
                let due = t * v.length.as_secs_f64();
                if (v.sent as f64) < BEHIND_SHARE * due.floor() {
                    format!("behind schedule ({} of {:.0} sent) !", v.sent, due)
                } else {
                    "on schedule".to_owned()
                }
            }
            _ => "closed model".to_owned(),
        };
        format!(" generator {cpu} · {stall} · {schedule}")
    }

    /// Redraws the panel in place on `out`.
    pub(crate) fn draw(&mut self, out: &mut impl Write, width: usize) {
        let lines = self.render(width);
        let mut buf = String::new();
        self.erase_into(&mut buf);
        for l in &lines {
            buf.push_str(l);
            buf.push('\n');
        }
        self.drawn = lines.len();
        let _ = out.write_all(buf.as_bytes());
        let _ = out.flush();
    }

    /// Removes the panel from the terminal.
    pub(crate) fn clear(&mut self, out: &mut impl Write) {
        let mut buf = String::new();
        self.erase_into(&mut buf);
        self.drawn = 0;
        let _ = out.write_all(buf.as_bytes());
        let _ = out.flush();
    }

    /// Cursor up over the lines drawn, and erase to the end of the screen.
    fn erase_into(&self, buf: &mut String) {
        if self.drawn > 0 {
            buf.push_str(&format!("\x1b[{}A\r\x1b[J", self.drawn));
        }
    }
}

/// The terminal's width on stderr; 80 when it cannot be known.
pub(crate) fn terminal_width() -> usize {
    rustix::termios::tcgetwinsize(std::io::stderr())
        .ok()
        .map(|w| usize::from(w.ws_col))
        .filter(|&w| w >= 20)
        .unwrap_or(80)
}

fn rate_line(v: &IntervalView) -> String {
    match v.target_rate {
        Some(t) if t > 0.0 => format!(
            " rate      {} req/s of {} target ({:.1} %)  sent {}/s",
            fmt::rate(v.rps),
            fmt::rate(t),
            100.0 * v.rps / t,
            fmt::count(v.sent)
        ),
        _ => format!(
            " rate      {} req/s  sent {}/s",
            fmt::rate(v.rps),
            fmt::count(v.sent)
        ),
    }
}

fn push(q: &mut VecDeque<f64>, v: f64) {
    if q.len() == TRACE {
        q.pop_front();
    }
    q.push_back(v);
}

/// The last `width` values as bars scaled to their largest, and that largest.
fn trace(q: &VecDeque<f64>, width: usize) -> (String, f64) {
    let shown: Vec<f64> = q
        .iter()
        .skip(q.len().saturating_sub(width))
        .copied()
        .collect();
    let top = shown.iter().copied().fold(0.0_f64, f64::max);
    let bars = shown
        .iter()
        .map(|&x| {
            if top <= 0.0 {
                BARS[0]
            } else {
                let i = ((x / top) * (BARS.len() - 1) as f64).round() as usize;
                BARS[i.min(BARS.len() - 1)]
            }
        })
        .collect();
    (bars, top)
}

fn flag(warn: bool) -> &'static str {
    if warn {
        " !"
    } else {
        ""
    }
}

/// `line` cut to `width` characters.
fn cut(line: String, width: usize) -> String {
    if line.chars().count() <= width {
        line
    } else {
        line.chars().take(width).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatebench_model::Outcome;

    fn second(i: u64, rps: f64, p99: f64) -> IntervalView {
        let mut outcomes = OutcomeCounts::default();
        outcomes.add(Outcome::Ok, rps as u64);
        IntervalView {
            index: i,
            elapsed: Duration::from_secs(i + 1),
            warmup: i == 0,
            responses: rps as u64,
            rps,
            length: Duration::from_secs(1),
            p99_ms: p99,
            p50_ms: p99 / 4.0,
            p90_ms: p99 / 2.0,
            max_ms: p99 * 2.0,
            sent: rps as u64,
            target_rate: Some(1000.0),
            outcomes,
            opened: if i == 0 { 10 } else { 0 },
            ..IntervalView::default()
        }
    }

    #[test]
    fn shows_the_second_and_the_sums_so_far() {
        let mut p = Panel::new(Some(Duration::from_secs(30)), 2);
        assert_eq!(p.render(80), vec!["gatebench: starting"]);
        p.update(&second(0, 1000.0, 2.0));
        let mut v = second(1, 500.0, 40.0);
        v.outcomes.add(Outcome::Timeout, 3);
        v.errors = 3;
        p.update(&v);
        let text = p.render(200).join("\n");
        assert!(text.contains(" gatebench 2s of 30s  measuring"), "{text}");
        assert!(
            text.contains("500.0 req/s of 1,000.0 target (50.0 %)"),
            "{text}"
        );
        // The schedule: 500 sent of 1,000 due is behind it.
        assert!(
            text.contains("behind schedule (500 of 1000 sent) !"),
            "{text}"
        );
        assert!(
            text.contains("p50 10.00ms  p90 20.00ms  p99 40.00ms  max 80.00ms"),
            "{text}"
        );
        // Outcomes add up over the seconds; errors are those of the run so far.
        assert!(text.contains("ok 1,500 · timeout 3"), "{text}");
        assert!(text.contains("errors 0.20 % (this second 3)"), "{text}");
        assert!(text.contains("opened 10 (this second 0)"), "{text}");
        // The p99 trace: the second second is the top.
        assert!(text.contains(" p99       ▁█  top 40.00ms"), "{text}");
    }

    #[test]
    fn lines_fit_the_terminal() {
        let mut p = Panel::new(None, 1);
        for i in 0..200 {
            p.update(&second(i, 1000.0 + i as f64, 1.0 + (i % 7) as f64));
        }
        for width in [20, 40, 80] {
            for l in p.render(width) {
                assert!(l.chars().count() <= width, "{width}: {l}");
            }
        }
        // A long run keeps only the trace it can show.
        assert_eq!(p.rates.len(), TRACE);
    }

    #[test]
    fn the_runs_last_piece_of_a_second_adds_to_the_sums_only() {
        let mut p = Panel::new(None, 1);
        p.update(&second(0, 1000.0, 1.0));
        let mut tail = second(1, 0.0, 0.0);
        tail.length = Duration::from_millis(30);
        tail.outcomes.add(Outcome::InFlight, 2);
        tail.sent = 0;
        p.update(&tail);
        let text = p.render(200).join("\n");
        assert!(text.contains("1,000.0 req/s"), "{text}");
        assert!(text.contains("on schedule"), "{text}");
        assert!(text.contains("ok 1,000 · in_flight 2"), "{text}");
    }

    #[test]
    fn a_stalled_generator_is_flagged() {
        let mut p = Panel::new(None, 1);
        let mut v = second(3, 1000.0, 1.0);
        v.stall_longest = Duration::from_millis(250);
        p.update(&v);
        let text = p.render(200).join("\n");
        assert!(text.contains("longest stall 250.00ms !"), "{text}");
        assert!(text.contains("on schedule"), "{text}");
    }

    #[test]
    fn redraws_replace_the_lines_drawn_before() {
        let mut p = Panel::new(None, 1);
        p.update(&second(0, 1000.0, 1.0));
        let mut out = Vec::new();
        p.draw(&mut out, 80);
        let first = String::from_utf8(out.clone()).unwrap();
        assert!(!first.contains("\x1b["), "nothing to erase the first time");
        let n = first.lines().count();
        out.clear();
        p.draw(&mut out, 80);
        let second = String::from_utf8(out.clone()).unwrap();
        assert!(
            second.starts_with(&format!("\x1b[{n}A\r\x1b[J")),
            "{second:?}"
        );
        out.clear();
        p.clear(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("\x1b[{n}A\r\x1b[J")
        );
    }
}
