//! Events in a cell and what each cost: the finer per-second data a load keeps for them
//! ([`SecondDetail`]: errors by class, the milliseconds with a successful response, the first
//! time each value of a marked response header was seen), and the record's `events` section
//! ([`EventRecord`]: each firing, stamped on the measurement's clock, with its outcome and its
//! cost).
//!
//! The rule: a second's detail is exact and merges exactly (classes add, millisecond maps are
//! OR-ed, first-seen times take the minimum), so a window's figures are computed from it the
//! same way for one generator or several.

use std::collections::BTreeMap;

use base64::Engine;
use serde::{Deserialize, Serialize};

/// Milliseconds in a second's map of successful responses.
pub const MS_PER_SECOND: usize = 1000;
/// Words of a second's map (1024 bits, the last 24 unused).
pub const OK_WORDS: usize = 16;

/// The finer data of one second of a load, kept when the load records its seconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SecondDetail {
    /// Errors settled in this second by class (`reset`, `connect_refused`, `status_5xx`, …),
    /// only the classes seen.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_classes: BTreeMap<String, u64>,
    /// The milliseconds of this second (from its start) in which at least one successful
    /// response completed: a map of 1000 bits, sixteen little-endian 64-bit words, base64
    /// (standard alphabet). Absent when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok_ms: Option<String>,
    /// With `--mark-header`: each value of that response header seen in this second, with the
    /// millisecond (from the second's start) of the first successful response that carried it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<MarkSeen>,
}

impl SecondDetail {
    /// Adds another generator's same second: classes add, maps are OR-ed, first-seen times
    /// take the minimum.
    pub fn merge(&mut self, other: &SecondDetail) {
        for (k, v) in &other.error_classes {
            *self.error_classes.entry(k.clone()).or_default() += v;
        }
        self.ok_ms = match (
            decode_ok_ms(self.ok_ms.as_deref()),
            decode_ok_ms(other.ok_ms.as_deref()),
        ) {
            (Some(mut a), Some(b)) => {
                for (x, y) in a.iter_mut().zip(b) {
                    *x |= y;
                }
                Some(encode_ok_ms(&a))
            }
            (a, b) => a.or(b).map(|m| encode_ok_ms(&m)),
        };
        merge_marks(&mut self.marks, &other.marks);
    }
}

/// Adds `from`'s sightings into `into`: the earlier first and the later last of two for one
/// value.
pub fn merge_marks(into: &mut Vec<MarkSeen>, from: &[MarkSeen]) {
    for m in from {
        match into.iter_mut().find(|x| x.value == m.value) {
            Some(x) => {
                x.first_ms = x.first_ms.min(m.first_ms);
                x.last_ms = match (x.last_ms, m.last_ms) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
            }
            None => into.push(m.clone()),
        }
    }
}

/// A value of the marked header and when it was seen in a second: first and last.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkSeen {
    /// The header's value (`backend-2`).
    pub value: String,
    /// Milliseconds from the second's start to the first successful response carrying it.
    pub first_ms: u32,
    /// Milliseconds from the second's start to the last one; absent in records written
    /// before 2026-11-29 (read as unknown: only the first sighting counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_ms: Option<u32>,
}

/// A second's map of successful responses in its text form.
pub fn encode_ok_ms(words: &[u64; OK_WORDS]) -> String {
    let mut bytes = Vec::with_capacity(OK_WORDS * 8);
    for w in words {
        bytes.extend_from_slice(&w.to_le_bytes());
    }
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The map back from its text form; `None` when absent or malformed.
pub fn decode_ok_ms(text: Option<&str>) -> Option<[u64; OK_WORDS]> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text?)
        .ok()?;
    if bytes.len() != OK_WORDS * 8 {
        return None;
    }
    let mut out = [0u64; OK_WORDS];
    for (w, c) in out.iter_mut().zip(bytes.chunks_exact(8)) {
        *w = u64::from_le_bytes(c.try_into().expect("chunks of eight"));
    }
    Some(out)
}

/// One firing of an event of a cell, in the record's `events` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// The event's name in the suite (`reload`).
    pub name: String,
    /// What it does: `signal`, `run`, `backend` or `render`.
    pub kind: String,
    /// What was done, in words (`SIGHUP to the SUT (pid 1234)`, `kill backend-2`).
    pub action: String,
    /// When it was due, seconds since the measurement started.
    pub planned_s: f64,
    /// When it fired, seconds since the measurement started (millisecond precision).
    pub at_s: f64,
    /// It did what it should (a command's exit status 0, a signal delivered, a back-end
    /// stopped or ready again).
    pub ok: bool,
    /// How it went, in words (`exit status 0`, `delivered`, `ready after 212 ms`).
    pub outcome: String,
    /// A started back-end: milliseconds from the firing until it was ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_ms: Option<f64>,
    /// What it cost, from the load's seconds; absent when the load kept no seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<EventCost>,
}

/// What one firing cost the load, from its seconds (see `docs/suite-format.md`, "Events").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EventCost {
    /// The window's start and end, seconds since the measurement started: from the firing to
    /// the next firing or its `window` (default 5 s) later, whichever comes first, cut at the
    /// measurement's end.
    pub window_start_s: f64,
    /// The window's end.
    pub window_end_s: f64,
    /// Errors by class in the seconds the window touches.
    pub errors: BTreeMap<String, u64>,
    /// Their sum.
    pub errors_total: u64,
    /// The longest time between two successful responses that reaches into the window,
    /// milliseconds (at the millisecond's resolution).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest_gap_ms: Option<f64>,
    /// Where that gap began, seconds since the measurement started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest_gap_at_s: Option<f64>,
    /// p99 of the seconds the window touches, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_window_ms: Option<f64>,
    /// p99 of the steady seconds (the measurement's whole seconds before the cell's first
    /// event), milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_steady_ms: Option<f64>,
    /// Seconds from the firing until the per-second error rate and p99 are back at the steady
    /// level for good (until the next firing); absent when they never were, or without steady
    /// seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_s: Option<f64>,
    /// With a marked header: milliseconds from the firing to the first successful response
    /// served with a value not seen just before the firing (the new route); absent when none
    /// came in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagation_ms: Option<f64>,
    /// That new value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_route: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_merge_exactly() {
        let mut a = SecondDetail::default();
        let mut words = [0u64; OK_WORDS];
        words[0] = 1;
        a.ok_ms = Some(encode_ok_ms(&words));
        a.error_classes.insert("reset".into(), 2);
        a.marks.push(MarkSeen {
            value: "b1".into(),
            first_ms: 40,
            last_ms: Some(60),
        });
        let mut b = SecondDetail::default();
        words[0] = 0;
        words[15] = 1 << 7; // ms 967
        b.ok_ms = Some(encode_ok_ms(&words));
        b.error_classes.insert("reset".into(), 1);
        b.marks.push(MarkSeen {
            value: "b1".into(),
            first_ms: 12,
            last_ms: Some(30),
        });
        b.marks.push(MarkSeen {
            value: "b2".into(),
            first_ms: 900,
            last_ms: None,
        });
        a.merge(&b);
        let m = decode_ok_ms(a.ok_ms.as_deref()).unwrap();
        assert_eq!((m[0], m[15]), (1, 1 << 7));
        assert_eq!(a.error_classes["reset"], 3);
        assert_eq!(a.marks.len(), 2);
        assert_eq!((a.marks[0].first_ms, a.marks[0].last_ms), (12, Some(60)));
        assert_eq!(a.marks[1].last_ms, None);
        assert_eq!(decode_ok_ms(Some("AAAA")), None);
    }
}
