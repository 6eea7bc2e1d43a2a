//! The requests of a run: one (the usual case), a weighted mix, or a replay's recorded
//! requests; each encoded once, and grouped into the classes whose figures the record keeps
//! apart.
//!
//! A mix's entries are its classes. A replay's requests are grouped by method and path, the
//! query left out (`GET /items?page=2` is class `GET /items`): the largest
//! [`MAX_CLASSES`]` - 1` groups by request count are classes of their own, the rest make one
//! class `other`. A replay's identical requests share one encoded template.

use std::collections::HashMap;

use gatebench_model::RequestsFrom;

use crate::error::LoadgenError;
use crate::mix::{Mix, MAX_CLASSES};
use crate::replay::Replay;
use crate::request::{RequestBody, RequestTemplate};
use crate::target::Target;

/// What makes two recorded requests the same: method, target, headers, body.
type RequestKey<'a> = (&'a str, &'a str, &'a [String], &'a [u8]);

/// Where a run's requests come from.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Requests {
    /// One request: the spec's method, headers and body to the URL.
    #[default]
    Single,
    /// A weighted mix (`--mix`); the spec's method is each entry's default and its headers
    /// come before each entry's own.
    Mix(Mix),
    /// Recorded traffic at its own times (`--replay`); the spec's headers are added to every
    /// request.
    Replay(Replay),
}

/// One request class as the record names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassInfo {
    /// Its name.
    pub name: String,
    /// Its method.
    pub method: String,
    /// Its path.
    pub path: String,
    /// Mix: its weight.
    pub weight: Option<u64>,
}

/// The encoded requests of a run and their classes.
#[derive(Clone, Debug)]
pub struct RequestSet {
    templates: Vec<RequestTemplate>,
    /// The class of each template (empty with a single request).
    class_of: Vec<u32>,
    classes: Vec<ClassInfo>,
    /// Mix: each template's weight.
    weights: Option<Vec<u64>>,
    from: Option<RequestsFrom>,
}

/// A replay's schedule: when each request is due and which template it sends.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayTimes {
    /// Nanoseconds after the run's start, speed applied, in order.
    pub due_ns: Vec<u64>,
    /// The template of each request.
    pub template: Vec<u32>,
    /// The speed factor.
    pub speed: f64,
}

impl ReplayTimes {
    /// Requests to send.
    pub fn len(&self) -> usize {
        self.due_ns.len()
    }

    /// Whether there is nothing to send.
    pub fn is_empty(&self) -> bool {
        self.due_ns.is_empty()
    }

    /// When the last request is due, seconds after the start.
    pub fn span_s(&self) -> f64 {
        self.due_ns.last().map_or(0.0, |n| *n as f64 / 1e9)
    }
}

impl RequestSet {
    /// Every request of the set with `status` declared a correct answer besides 2xx.
    pub fn with_expected_status(mut self, status: Option<u16>) -> RequestSet {
        self.templates = self
            .templates
            .into_iter()
            .map(|t| t.with_expected_status(status))
            .collect();
        self
    }

    /// The single request of a plain run.
    pub(crate) fn single(t: RequestTemplate) -> RequestSet {
        RequestSet {
            templates: vec![t],
            class_of: Vec::new(),
            classes: Vec::new(),
            weights: None,
            from: None,
        }
    }

    /// A mix's entries, each encoded once; `method` and `headers` are the run's.
    pub(crate) fn mix(
        mix: &Mix,
        target: &Target,
        method: &str,
        headers: &[String],
        keepalive: bool,
    ) -> Result<RequestSet, LoadgenError> {
        let mut templates = Vec::with_capacity(mix.entries.len());
        let mut classes = Vec::with_capacity(mix.entries.len());
        for e in &mix.entries {
            let m = e.method.as_deref().unwrap_or(method);
            let path = e.path.as_deref().unwrap_or(&target.path_and_query);
            let mut h = headers.to_vec();
            h.extend(e.headers.iter().cloned());
            let t = RequestTemplate::encode_to(target, path, m, &h, e.body.clone(), keepalive)
                .map_err(|err| LoadgenError::config(format!("{}:{}: {err}", mix.file, e.line)))?;
            templates.push(t);
            classes.push(ClassInfo {
                name: e.name.clone().unwrap_or_else(|| format!("{m} {path}")),
                method: m.to_owned(),
                path: path.to_owned(),
                weight: Some(e.weight),
            });
        }
        Ok(RequestSet {
            class_of: (0..templates.len() as u32).collect(),
            weights: Some(mix.entries.iter().map(|e| e.weight).collect()),
            from: Some(RequestsFrom {
                kind: "mix".into(),
                file: mix.file.clone(),
                format: None,
                speed: None,
                entries: templates.len() as u64,
            }),
            templates,
            classes,
        })
    }

    /// A replay's requests (the first `limit` of them, with `-n`): identical ones share a
    /// template; the classes group them by method and path.
    pub(crate) fn replay(
        replay: &Replay,
        limit: Option<u64>,
        target: &Target,
        headers: &[String],
        keepalive: bool,
    ) -> Result<(RequestSet, ReplayTimes), LoadgenError> {
        let n = limit.map_or(replay.requests.len(), |l| {
            replay
                .requests
                .len()
                .min(usize::try_from(l).unwrap_or(usize::MAX))
        });
        let requests = &replay.requests[..n];
        // Classes: method and path without the query, the largest first.
        let key = |r: &crate::replay::ReplayRequest| {
            let path = r.target.split('?').next().unwrap_or("/").to_owned();
            (r.method.clone(), path)
        };
        let mut groups: HashMap<(String, String), (u64, usize)> = HashMap::new();
        for (i, r) in requests.iter().enumerate() {
            groups.entry(key(r)).or_insert((0, i)).0 += 1;
        }
        let mut order: Vec<((String, String), (u64, usize))> = groups.into_iter().collect();
        // Most requests first; ties in order of first appearance.
        order.sort_by_key(|(_, (count, first))| (std::cmp::Reverse(*count), *first));
        let own = if order.len() > MAX_CLASSES {
            MAX_CLASSES - 1
        } else {
            order.len()
        };
        let mut class_index: HashMap<(String, String), u32> = HashMap::new();
        let mut classes = Vec::new();
        for (i, ((method, path), _)) in order.iter().enumerate() {
            if i < own {
                class_index.insert((method.clone(), path.clone()), i as u32);
                classes.push(ClassInfo {
                    name: format!("{method} {path}"),
                    method: method.clone(),
                    path: path.clone(),
                    weight: None,
                });
            }
        }
        if own < order.len() {
            classes.push(ClassInfo {
                name: "other".into(),
                method: "*".into(),
                path: "*".into(),
                weight: None,
            });
        }
        let other = own as u32;
        let mut dedup: HashMap<RequestKey<'_>, u32> = HashMap::new();
        let mut templates = Vec::new();
        let mut class_of = Vec::new();
        let mut template = Vec::with_capacity(n);
        let mut due_ns = Vec::with_capacity(n);
        for r in requests {
            let k = (
                r.method.as_str(),
                r.target.as_str(),
                &r.headers[..],
                &r.body[..],
            );
            let t = match dedup.get(&k) {
                Some(t) => *t,
                None => {
                    let mut h = headers.to_vec();
                    h.extend(r.headers.iter().cloned());
                    let body = if r.body.is_empty() {
                        RequestBody::None
                    } else {
                        RequestBody::Inline(r.body.clone())
                    };
                    let enc = RequestTemplate::encode_to(
                        target, &r.target, &r.method, &h, body, keepalive,
                    )
                    .map_err(|err| {
                        LoadgenError::config(format!("{}:{}: {err}", replay.file, r.line))
                    })?;
                    let t = templates.len() as u32;
                    templates.push(enc);
                    class_of.push(*class_index.get(&key(r)).unwrap_or(&other));
                    dedup.insert(k, t);
                    t
                }
            };
            template.push(t);
            // The speed was checked (> 0): the quotient is finite and at most the span.
            due_ns.push((r.at_ns as f64 / replay.speed).round() as u64);
        }
        let set = RequestSet {
            templates,
            class_of,
            classes,
            weights: None,
            from: Some(RequestsFrom {
                kind: "replay".into(),
                file: replay.file.clone(),
                format: Some(replay.format.name().into()),
                speed: Some(replay.speed),
                entries: n as u64,
            }),
        };
        Ok((
            set,
            ReplayTimes {
                due_ns,
                template,
                speed: replay.speed,
            },
        ))
    }

    /// The first request: a plain run's only one; what the correctness probe sends first.
    pub fn first(&self) -> &RequestTemplate {
        &self.templates[0]
    }

    /// Every encoded request.
    pub fn templates(&self) -> &[RequestTemplate] {
        &self.templates
    }

    /// Template `i`.
    #[inline]
    pub(crate) fn get(&self, i: u32) -> &RequestTemplate {
        &self.templates[i as usize]
    }

    /// The classes; empty for a single request (the totals are its figures).
    pub fn classes(&self) -> &[ClassInfo] {
        &self.classes
    }

    /// The class of template `i`; `None` for a single request.
    #[inline]
    pub(crate) fn class_of(&self, i: u32) -> Option<usize> {
        self.class_of.get(i as usize).map(|c| *c as usize)
    }

    /// Mix: each template's weight, for the schedule's picker.
    pub(crate) fn weights(&self) -> Option<&[u64]> {
        self.weights.as_deref()
    }

    /// Whether the run sends more than one request (per-class figures are kept).
    pub fn is_multi(&self) -> bool {
        !self.classes.is_empty()
    }

    /// The record of where the requests came from.
    pub(crate) fn from(&self) -> Option<RequestsFrom> {
        self.from.clone()
    }
}
