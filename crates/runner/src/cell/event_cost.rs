//! What each firing of a cell's events cost the load, from the load's own seconds (each with
//! its latency histogram, its errors by class, the milliseconds in which a successful response
//! completed and, with a marked header, when each value was first seen).
//!
//! The rules, per firing at `t` (seconds since the measurement started):
//! - its **window** runs from `t` to the next firing (of any event), or `t` plus its `window`
//!   (default 5 s), whichever comes first, cut at the measurement's end;
//! - **errors** and the **window p99** are those of every second the window touches (the
//!   timeline's resolution);
//! - the **longest gap** is the longest time between two successful responses that reaches
//!   into the window (a gap begun before it counts), to the millisecond; a window with no
//!   success after it runs to the last second recorded;
//! - the **steady** level is the load's whole seconds that end within the measurement, at or
//!   before the cell's first firing ([`STAMP_SLACK_S`] allowed: a firing on a whole second may
//!   be stamped a millisecond before it) (with a warm-up of a fraction of a second, the seconds'
//!   grid is that much off the measurement's start, and the first such second begins in the
//!   warm-up's end): their p99 altogether (what the window's is compared with), and for recovery the worst
//!   second's p99 and error rate among them;
//! - **recovery** is the time from `t` to the start of the first second after which every
//!   second until the next firing (or the end) is back at the steady level (p99 and error rate
//!   no worse than the worst steady second, some response answered); 0 when the firing's own
//!   second already is; absent when the level never came back or there are no steady seconds;
//! - **propagation** is the time from `t` to the first successful response carrying a marked
//!   value not seen in the look-back before `t` (2 s, or since the previous firing if nearer,
//!   but at least 1 s; a value counts as seen when it was first seen in one of the seconds at
//!   a time inside the look-back): the new route; absent when none came in the window.

use std::collections::BTreeSet;
use std::time::Duration;

use gatebench_model::events::{decode_ok_ms, MS_PER_SECOND};
use gatebench_model::histogram::{self, LatencyHistogram};
use gatebench_model::{EventCost, EventRecord, SecondRecord};

/// How far before a firing the values already seen are looked for.
const BEFORE_S: f64 = 2.0;

/// The shortest look-back, however near the previous firing: a value served throughout is
/// first seen in every second, so a second's look-back sees it.
const MIN_BEFORE_S: f64 = 1.0;

/// After a previous firing, how long what was in flight at it may still arrive: a back-end
/// killed then has its last responses delivered in the moments after (already written, or
/// on their way through the balancer). Sightings only within it do not count as "seen before"
/// the next firing.
const RESIDUE_S: f64 = 0.25;

/// Slack of comparisons between times on the seconds' grid.
const EPS: f64 = 1e-6;

/// How far before a second's end the first firing may be stamped with that second still
/// steady: the firing thread's clock and the load's agree to about a millisecond, and the
/// stamp is to the millisecond, so a firing due on a whole second can read as 0.999 s. A
/// second counted so holds at most this much of the event's effect.
const STAMP_SLACK_S: f64 = 0.01;

/// Fills each firing's `cost`; `windows[i]` is firing `i`'s event's window, `length_s` the
/// measurement's length.
pub(super) fn fill(
    timeline: &[SecondRecord],
    fired: &mut [EventRecord],
    windows: &[Duration],
    length_s: f64,
) {
    if timeline.is_empty() || fired.is_empty() {
        return;
    }
    let steady = Steady::of(timeline, fired[0].at_s);
    let oks = OkMap::of(timeline);
    let times: Vec<f64> = fired.iter().map(|f| f.at_s).collect();
    for (i, f) in fired.iter_mut().enumerate() {
        let t = f.at_s;
        let next = times.iter().copied().find(|&n| n > t + EPS);
        let prev = times[..i].iter().copied().rfind(|&p| p < t - EPS);
        let span_end = next.unwrap_or(length_s).min(length_s);
        let end = (t + windows[i].as_secs_f64()).min(span_end).max(t);
        let touched: Vec<&SecondRecord> = timeline
            .iter()
            .filter(|s| s.t_s < end.max(t + EPS) && s.t_s + s.length_s > t)
            .collect();
        let mut cost = EventCost {
            window_start_s: t,
            window_end_s: end,
            ..EventCost::default()
        };
        for s in &touched {
            for (k, n) in &s.detail.error_classes {
                *cost.errors.entry(k.clone()).or_default() += n;
            }
        }
        cost.errors_total = cost.errors.values().sum();
        cost.p99_window_ms = p99(touched.iter().copied());
        cost.p99_steady_ms = steady.p99_ms;
        if let Some((gap_ms, at_s)) = oks.longest_gap(t, end) {
            cost.longest_gap_ms = Some(gap_ms);
            cost.longest_gap_at_s = Some(at_s);
        }
        cost.recovery_s = steady.recovery(timeline, t, span_end);
        if let Some((ms, value)) = propagation(timeline, t, prev, end) {
            cost.propagation_ms = Some(ms);
            cost.new_route = Some(value);
        }
        f.cost = Some(cost);
    }
}

/// The p99 of the seconds' histograms together, milliseconds.
fn p99<'a>(seconds: impl Iterator<Item = &'a SecondRecord>) -> Option<f64> {
    let mut all: Option<LatencyHistogram> = None;
    for s in seconds {
        let Some(h) = s.latency.as_deref().and_then(|t| histogram::decode(t).ok()) else {
            continue;
        };
        match all.as_mut() {
            Some(a) => histogram::add(a, &h),
            None => all = Some(h),
        }
    }
    let all = all.filter(|h| !h.is_empty())?;
    Some(all.value_at_quantile(0.99) as f64 / 1e6)
}

/// The steady level before the first firing.
struct Steady {
    /// p99 of the steady seconds together.
    p99_ms: Option<f64>,
    /// The worst steady second's p99 and error rate: `(p99 ms, errors / settled)`.
    worst: Option<(f64, f64)>,
}

impl Steady {
    fn of(timeline: &[SecondRecord], first_at: f64) -> Steady {
        let steady: Vec<&SecondRecord> = timeline
            .iter()
            .filter(|s| {
                let end = s.t_s + s.length_s;
                end > EPS && end <= first_at + STAMP_SLACK_S
            })
            .filter(|s| s.length_s >= 1.0 - 1e-3)
            .collect();
        let worst = steady
            .iter()
            .map(|s| second_level(s))
            .try_fold((0.0f64, 0.0f64), |(p, e), l| {
                let (sp, se) = l?;
                Some((p.max(sp), e.max(se)))
            })
            .filter(|_| !steady.is_empty());
        Steady {
            p99_ms: p99(steady.iter().copied()),
            worst,
        }
    }

    /// Seconds from `t` until every second up to `span_end` is back at the steady level.
    fn recovery(&self, timeline: &[SecondRecord], t: f64, span_end: f64) -> Option<f64> {
        let (p99_level, err_level) = self.worst?;
        let span: Vec<&SecondRecord> = timeline
            .iter()
            .filter(|s| s.t_s + s.length_s > t && s.t_s < span_end.max(t + EPS))
            .collect();
        let back = |s: &SecondRecord| {
            second_level(s).is_some_and(|(p, e)| p <= p99_level + EPS && e <= err_level + EPS)
        };
        // The first second from which every later one in the span is back.
        let from = span.iter().rposition(|s| !back(s)).map_or(0, |i| i + 1);
        let s = span.get(from)?;
        Some((s.t_s - t).max(0.0))
    }
}

/// A second's p99 (ms) and error rate; `None` when nothing was answered in it.
fn second_level(s: &SecondRecord) -> Option<(f64, f64)> {
    if s.responses == 0 {
        return None;
    }
    let p = p99(std::iter::once(s))?;
    let settled = s.responses + s.errors;
    Some((p, s.errors as f64 / settled as f64))
}

/// Every millisecond of the timeline with a successful response, from its first second.
struct OkMap {
    /// The first second's start.
    base_s: f64,
    ok: Vec<bool>,
}

impl OkMap {
    fn of(timeline: &[SecondRecord]) -> OkMap {
        let base_s = timeline[0].t_s;
        let last = timeline.last().expect("not empty");
        let len = ms_index(base_s, last.t_s + last.length_s);
        let mut ok = vec![false; len + 1];
        for s in timeline {
            let Some(words) = decode_ok_ms(s.detail.ok_ms.as_deref()) else {
                continue;
            };
            let first = ms_index(base_s, s.t_s);
            for ms in 0..MS_PER_SECOND {
                if words[ms / 64] >> (ms % 64) & 1 == 1 {
                    if let Some(slot) = ok.get_mut(first + ms) {
                        *slot = true;
                    }
                }
            }
        }
        OkMap { base_s, ok }
    }

    /// The longest gap between successes reaching into `[a, b)`: `(ms, start in s)`.
    fn longest_gap(&self, a: f64, b: f64) -> Option<(f64, f64)> {
        if !self.ok.iter().any(|x| *x) {
            return None;
        }
        let (ia, ib) = (
            ms_index(self.base_s, a).min(self.ok.len()),
            ms_index(self.base_s, b).min(self.ok.len()),
        );
        let before = self.ok[..ia].iter().rposition(|x| *x).unwrap_or(ia);
        let after = self.ok[ib..]
            .iter()
            .position(|x| *x)
            .map_or(self.ok.len() - 1, |i| ib + i);
        let mut points = vec![before];
        points.extend((ia..ib).filter(|&i| self.ok[i]));
        points.push(after.max(before));
        let (start, gap) = points
            .windows(2)
            .map(|w| (w[0], w[1] - w[0]))
            .max_by_key(|&(start, gap)| (gap, std::cmp::Reverse(start)))?;
        Some((gap as f64, self.base_s + start as f64 / 1e3))
    }
}

/// The millisecond of `t` counted from `base`.
fn ms_index(base: f64, t: f64) -> usize {
    ((t - base) * 1e3).round().max(0.0) as usize
}

/// The first marked value new after `t` and when it came: `(ms after t, value)`.
fn propagation(
    timeline: &[SecondRecord],
    t: f64,
    prev: Option<f64>,
    end: f64,
) -> Option<(f64, String)> {
    // The look-back: 2 s, or since the previous firing if nearer, but at least 1 s.
    let from = prev
        .map_or(t - BEFORE_S, |p| p.max(t - BEFORE_S))
        .min(t - MIN_BEFORE_S);
    // Each second's sightings of a value: (first, last) on the load's clock; `None` for the
    // last in records that did not keep it.
    let all: Vec<(f64, Option<f64>, String)> = timeline
        .iter()
        .flat_map(|s| {
            s.detail.marks.iter().map(move |m| {
                let at = |ms: u32| s.t_s + f64::from(ms) / 1e3;
                (at(m.first_ms), m.last_ms.map(at), m.value.clone())
            })
        })
        .collect();
    // With the last sightings known, a value was seen before the firing when a second's
    // sightings reach into the look-back, past what was in flight at the previous firing.
    let since = match prev {
        Some(p) if p > t - BEFORE_S && p + RESIDUE_S < t - EPS => p + RESIDUE_S,
        Some(p) if p > t - BEFORE_S => p,
        _ => t - BEFORE_S,
    };
    let seen_before = |first: f64, last: Option<f64>| match last {
        Some(last) => last >= since - EPS && first < t,
        // Without them, for certain only when first seen in a second at a time within the
        // look-back (a value first seen before it in a second that straddles its start may
        // not have been seen since).
        None => first >= from - EPS && first < t,
    };
    let before: BTreeSet<&str> = all
        .iter()
        .filter(|(first, last, _)| seen_before(*first, *last))
        .map(|(_, _, v)| v.as_str())
        .collect();
    all.iter()
        .filter(|(at, _, v)| *at >= t - EPS && *at < end + EPS && !before.contains(v.as_str()))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(at, _, v)| (((at - t) * 1e3).max(0.0), v.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatebench_model::events::{encode_ok_ms, MarkSeen, OK_WORDS};
    use gatebench_model::SecondDetail;

    /// A second at `t_s`: `n` responses of `ms` each, `errors` resets, successes in the
    /// milliseconds `ok`, marked values `(value, first ms)`.
    fn second(
        t_s: f64,
        latency_ms: u64,
        errors: u64,
        ok: impl IntoIterator<Item = usize>,
        marks: &[(&str, u32)],
    ) -> SecondRecord {
        let mut words = [0u64; OK_WORDS];
        let mut n = 0;
        for ms in ok {
            words[ms / 64] |= 1 << (ms % 64);
            n += 1;
        }
        let mut h = histogram::new_histogram();
        if n > 0 {
            h.record_n(latency_ms * 1_000_000, n).unwrap();
        }
        let mut detail = SecondDetail {
            ok_ms: (n > 0).then(|| encode_ok_ms(&words)),
            marks: marks
                .iter()
                .map(|(v, ms)| MarkSeen {
                    value: (*v).into(),
                    first_ms: *ms,
                    last_ms: None,
                })
                .collect(),
            ..SecondDetail::default()
        };
        if errors > 0 {
            detail.error_classes.insert("reset".into(), errors);
        }
        SecondRecord {
            t_s,
            length_s: 1.0,
            target_rate: 100.0,
            sent: n + errors,
            responses: n,
            errors,
            latency: Some(histogram::encode(&h)),
            detail,
        }
    }

    fn event(at_s: f64) -> EventRecord {
        EventRecord {
            name: "e".into(),
            kind: "backend".into(),
            action: "kill backend-2".into(),
            planned_s: at_s,
            at_s,
            ok: true,
            outcome: "killed".into(),
            ready_ms: None,
            cost: None,
        }
    }

    /// A success every 10 ms.
    fn steady() -> impl Iterator<Item = usize> {
        (0..100).map(|i| i * 10)
    }

    #[test]
    fn a_kill_and_a_restart_have_known_costs() {
        // Steady 0..3 s at 2 ms with both back-ends; a kill at 3.5 s: 4 resets, no success
        // from 3.5 s to 3.8 s, p99 of 20 ms in seconds 3 and 4, back at 5; a restart at 6.2 s:
        // b2 first seen again at 6.45 s.
        let both = [("b1", 0), ("b2", 5)];
        let mut t = vec![
            second(0.0, 2, 0, steady(), &both),
            second(1.0, 2, 0, steady(), &both),
            second(2.0, 2, 0, steady(), &both),
            second(3.0, 20, 4, (0..50).map(|i| i * 10).chain(800..801), &both),
            second(4.0, 20, 0, steady(), &[("b1", 0)]),
            second(5.0, 2, 0, steady(), &[("b1", 0)]),
            second(6.0, 2, 0, steady(), &[("b1", 0), ("b2", 450)]),
            second(7.0, 2, 0, steady(), &both),
        ];
        // The last success before the kill's gap is at 3.490 s; the next at 3.800 s.
        t[3].detail.ok_ms = Some(encode_ok_ms(&{
            let mut w = [0u64; OK_WORDS];
            for ms in (0..50).map(|i| i * 10).chain([800]) {
                w[ms / 64] |= 1 << (ms % 64);
            }
            w
        }));
        let mut fired = vec![event(3.5), event(6.2)];
        fill(&t, &mut fired, &[DEFAULT; 2], 8.0);
        let kill = fired[0].cost.as_ref().unwrap();
        assert_eq!((kill.window_start_s, kill.window_end_s), (3.5, 6.2));
        assert_eq!(kill.errors_total, 4);
        assert_eq!(kill.errors["reset"], 4);
        assert_eq!(kill.longest_gap_ms, Some(310.0));
        assert!((kill.longest_gap_at_s.unwrap() - 3.49).abs() < 1e-9);
        assert_eq!(kill.p99_steady_ms.map(|p| p.round()), Some(2.0));
        assert_eq!(kill.p99_window_ms.map(|p| p.round()), Some(20.0));
        assert_eq!(
            kill.recovery_s,
            Some(1.5),
            "second 5 is the first back for good"
        );
        assert_eq!(kill.propagation_ms, None, "no value is new after a kill");
        let restart = fired[1].cost.as_ref().unwrap();
        assert_eq!(restart.errors_total, 0);
        assert_eq!(restart.recovery_s, Some(0.0));
        assert_eq!(restart.new_route.as_deref(), Some("b2"));
        assert!((restart.propagation_ms.unwrap() - 250.0).abs() < 1e-6);
        assert_eq!(restart.longest_gap_ms, Some(10.0));
    }

    #[test]
    fn a_firing_stamped_just_before_a_whole_second_keeps_the_second_before_it_steady() {
        let t = vec![
            second(0.0, 2, 0, steady(), &[]),
            second(1.0, 20, 4, steady(), &[]),
        ];
        let mut fired = vec![event(0.999)];
        fill(&t, &mut fired, &[DEFAULT], 2.0);
        let cost = fired[0].cost.as_ref().unwrap();
        assert_eq!(cost.p99_steady_ms.map(|p| p.round()), Some(2.0));
        // Stamped well inside the second, the second is not steady.
        let mut fired = vec![event(0.9)];
        fill(&t, &mut fired, &[DEFAULT], 2.0);
        assert_eq!(fired[0].cost.as_ref().unwrap().p99_steady_ms, None);
    }

    #[test]
    fn a_level_that_never_comes_back_has_no_recovery() {
        let t = vec![
            second(0.0, 2, 0, steady(), &[]),
            second(1.0, 2, 0, steady(), &[]),
            second(2.0, 30, 0, steady(), &[]),
            second(3.0, 30, 0, steady(), &[]),
        ];
        let mut fired = vec![event(2.0)];
        fill(&t, &mut fired, &[DEFAULT], 4.0);
        let c = fired[0].cost.as_ref().unwrap();
        assert_eq!(c.recovery_s, None);
        assert_eq!(c.window_end_s, 4.0, "cut at the measurement's end");
        // Nothing answered after the firing would be a gap to the end: here successes go on.
        assert_eq!(c.longest_gap_ms, Some(10.0));
    }

    #[test]
    fn no_success_after_the_firing_is_a_gap_to_the_last_second() {
        let t = vec![
            second(0.0, 2, 0, steady(), &[]),
            second(1.0, 2, 3, [100], &[]),
            second(2.0, 2, 7, [], &[]),
        ];
        let mut fired = vec![event(1.5)];
        fill(&t, &mut fired, &[DEFAULT], 3.0);
        let c = fired[0].cost.as_ref().unwrap();
        assert_eq!(
            c.longest_gap_ms,
            Some(1900.0),
            "from 1.100 s to the end at 3.000 s"
        );
        assert_eq!(c.errors_total, 10);
        assert_eq!(c.recovery_s, None, "the last second answered nothing");
    }

    #[test]
    fn a_back_end_started_after_a_kill_is_the_new_route() {
        // Seconds on a half-second grid (a 0.5 s warm-up); b2 is killed at 1.0 s (first seen
        // at 0.505 s in the second that straddles the kill) and started at 2.0 s, back at
        // 2.3 s.
        let both = [("b1", 0), ("b2", 5)];
        let t = vec![
            second(-0.5, 2, 0, steady(), &both),
            second(0.5, 2, 0, steady(), &both),
            second(1.5, 2, 0, steady(), &[("b1", 0), ("b2", 800)]),
            second(2.5, 2, 0, steady(), &both),
        ];
        let mut fired = vec![event(1.0), event(2.0)];
        fill(&t, &mut fired, &[DEFAULT; 2], 3.5);
        let start = fired[1].cost.as_ref().unwrap();
        assert_eq!(start.new_route.as_deref(), Some("b2"));
        assert!((start.propagation_ms.unwrap() - 300.0).abs() < 1e-6);
    }

    /// `second`, its marks with their last sightings: `(value, first ms, last ms)`.
    fn spans(t_s: f64, marks: &[(&str, u32, u32)]) -> SecondRecord {
        let mut s = second(t_s, 2, 0, steady(), &[]);
        s.detail.marks = marks
            .iter()
            .map(|(v, first, last)| MarkSeen {
                value: (*v).into(),
                first_ms: *first,
                last_ms: Some(*last),
            })
            .collect();
        s
    }

    #[test]
    fn what_a_killed_back_end_had_in_flight_does_not_hide_its_return() {
        // Whole seconds; b2 is killed at 1.0 s, its last answers (in flight at the kill)
        // arrive 3 to 5 ms after it, and it is started at 2.0 s and serves from 2.3 s on.
        let t = vec![
            spans(0.0, &[("b1", 0, 999), ("b2", 0, 998)]),
            spans(1.0, &[("b1", 0, 999), ("b2", 3, 5)]),
            spans(2.0, &[("b1", 0, 999), ("b2", 300, 999)]),
        ];
        let mut fired = vec![event(1.0), event(2.0)];
        fill(&t, &mut fired, &[DEFAULT; 2], 3.0);
        let start = fired[1].cost.as_ref().unwrap();
        assert_eq!(start.new_route.as_deref(), Some("b2"), "{start:?}");
        assert!((start.propagation_ms.unwrap() - 300.0).abs() < 1e-6);
        // b2 served on past the residue: it was there all along, nothing is new.
        let mut t = t;
        t[1] = spans(1.0, &[("b1", 0, 999), ("b2", 3, 700)]);
        let mut fired = vec![event(1.0), event(2.0)];
        fill(&t, &mut fired, &[DEFAULT; 2], 3.0);
        let start = fired[1].cost.as_ref().unwrap();
        assert_eq!(start.new_route, None, "{start:?}");
    }

    const DEFAULT: Duration = crate::suite::DEFAULT_WINDOW;
}
