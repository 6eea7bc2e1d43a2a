//! Several requests in one run: a weighted mix read from a file (`--mix`), and the request
//! classes a run with several requests reports apart.
//!
//! A mix file lists requests, each with a weight; a run sends them in proportion to their
//! weights. Each request is encoded once, like the single request of a plain run, and the
//! schedule picks one per request by smooth weighted round-robin (nginx's `upstream` weights):
//! deterministic, no allocation, and exact — over every `W` requests a worker sends (`W` the
//! sum of the weights) each entry is picked exactly its weight's times, spread out rather than
//! in runs.
//!
//! Two file formats, chosen by the name: JSON lines (`.jsonl`, `.ndjson`, `.json`: one object
//! per line) or TOML (anything else: `[[request]]` tables). Every entry has the same fields:
//! `name`, `weight` (default 1), `method` (default `-m`), `path` (default the URL's path and
//! query), `headers` (`["Name: value"]`, added to `-H`), and `body` or `body_file` (relative to
//! the mix file). Every error names the file and the line.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::LoadgenError;
use crate::request::RequestBody;

/// The most request classes a run reports apart: each costs every worker its own histograms.
pub const MAX_CLASSES: usize = 64;
/// The largest weight of a mix entry (the sum of 64 of them stays far from overflowing).
pub const MAX_WEIGHT: u64 = 1_000_000;

/// One entry of a mix file.
#[derive(Clone, Debug, PartialEq)]
pub struct MixEntry {
    /// The class's name; `METHOD path` when the file gives none.
    pub name: Option<String>,
    /// Relative weight, 1 to [`MAX_WEIGHT`].
    pub weight: u64,
    /// HTTP method; `None` takes the run's (`-m`).
    pub method: Option<String>,
    /// Path and query; `None` takes the URL's.
    pub path: Option<String>,
    /// Header lines `Name: value`, sent after the run's own (`-H`).
    pub headers: Vec<String>,
    /// The body.
    pub body: RequestBody,
    /// Where the entry starts in its file (1-based), for error messages.
    pub line: usize,
}

/// A mix file, read and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Mix {
    /// The file as given.
    pub file: String,
    /// Its entries, in file order; at least one.
    pub entries: Vec<MixEntry>,
}

/// An entry as written in either format.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    name: Option<String>,
    weight: Option<i64>,
    method: Option<String>,
    path: Option<String>,
    #[serde(default)]
    headers: Vec<String>,
    body: Option<String>,
    body_file: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToml {
    #[serde(default)]
    request: Vec<toml::Spanned<RawEntry>>,
}

/// The 1-based line of byte `offset` in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

impl Mix {
    /// Reads and checks a mix file. Errors read `FILE:LINE: what is wrong`.
    pub fn read(path: &Path) -> Result<Mix, LoadgenError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| LoadgenError::config(format!("cannot read mix file {file}: {e}")))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Mix::parse(&file, &text, dir)
    }

    /// Parses the text of a mix file named `file`; `body_file`s are relative to `dir`.
    pub fn parse(file: &str, text: &str, dir: &Path) -> Result<Mix, LoadgenError> {
        let at = |line: usize, msg: &str| LoadgenError::config(format!("{file}:{line}: {msg}"));
        let json = [".jsonl", ".ndjson", ".json"]
            .iter()
            .any(|ext| file.to_ascii_lowercase().ends_with(ext));
        let mut raw: Vec<(usize, RawEntry)> = Vec::new();
        if json {
            for (i, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let e: RawEntry = serde_json::from_str(line).map_err(|e| {
                    at(
                        i + 1,
                        &format!("not a mix entry (a JSON object per line): {e}"),
                    )
                })?;
                raw.push((i + 1, e));
            }
        } else {
            let doc: RawToml = toml::from_str(text).map_err(|e| {
                let line = e.span().map_or(1, |s| line_of(text, s.start));
                let msg = e.message().replace('\n', " ");
                at(line, &format!("not a mix file: {msg}"))
            })?;
            for r in doc.request {
                let line = line_of(text, r.span().start);
                raw.push((line, r.into_inner()));
            }
        }
        if raw.is_empty() {
            return Err(LoadgenError::config(format!(
                "{file}: the mix has no requests (give at least one {})",
                if json {
                    "JSON object"
                } else {
                    "[[request]] table"
                }
            )));
        }
        if raw.len() > MAX_CLASSES {
            return Err(LoadgenError::config(format!(
                "{file}: the mix has {} requests, at most {MAX_CLASSES} are allowed",
                raw.len()
            )));
        }
        let mut entries = Vec::with_capacity(raw.len());
        for (line, e) in raw {
            let weight = match e.weight {
                None => 1,
                Some(w) if w >= 1 && w as u64 <= MAX_WEIGHT => w as u64,
                Some(w) => {
                    return Err(at(
                        line,
                        &format!("weight must be from 1 to {MAX_WEIGHT}, got {w}"),
                    ))
                }
            };
            let body = match (e.body, e.body_file) {
                (Some(_), Some(_)) => return Err(at(line, "give body or body_file, not both")),
                (Some(b), None) => RequestBody::Inline(b.into_bytes()),
                (None, Some(p)) => {
                    let p = dir.join(p);
                    RequestBody::Inline(std::fs::read(&p).map_err(|err| {
                        at(
                            line,
                            &format!("cannot read body_file {}: {err}", p.display()),
                        )
                    })?)
                }
                (None, None) => RequestBody::None,
            };
            if let Some(p) = &e.path {
                check_target(p).map_err(|why| at(line, &why))?;
            }
            if let Some(m) = &e.method {
                if m.is_empty() || !m.bytes().all(crate::target::is_token_byte) {
                    return Err(at(line, &format!("invalid method `{m}`")));
                }
            }
            for h in &e.headers {
                crate::request::parse_header(h).map_err(|err| at(line, &err.to_string()))?;
            }
            entries.push(MixEntry {
                name: e.name,
                weight,
                method: e.method,
                path: e.path,
                headers: e.headers,
                body,
                line,
            });
        }
        Ok(Mix {
            file: file.to_owned(),
            entries,
        })
    }
}

/// Checks a request target in origin form (`/path?query`, RFC 9112 §3.2.1).
pub(crate) fn check_target(t: &str) -> Result<(), String> {
    if !t.starts_with('/') {
        return Err(format!("the path `{t}` must start with `/`"));
    }
    t.parse::<http::uri::PathAndQuery>()
        .map(|_| ())
        .map_err(|e| format!("invalid path `{t}`: {e}"))
}

/// Smooth weighted round-robin (as nginx balances weighted upstreams): each pick adds every
/// weight to its entry's credit and takes the entry with the most, which then pays the sum.
/// Over every `sum` picks each entry is taken exactly `weight` times, interleaved.
#[derive(Debug, Clone)]
pub(crate) struct Picker {
    weights: Vec<i64>,
    credit: Vec<i64>,
    sum: i64,
}

impl Picker {
    /// A picker over `weights` (each ≥ 1).
    pub(crate) fn new(weights: &[u64]) -> Picker {
        let weights: Vec<i64> = weights.iter().map(|w| *w as i64).collect();
        Picker {
            sum: weights.iter().sum(),
            credit: vec![0; weights.len()],
            weights,
        }
    }

    /// The next entry's index.
    #[inline]
    pub(crate) fn pick(&mut self) -> u32 {
        let mut best = 0;
        for i in 0..self.credit.len() {
            self.credit[i] += self.weights[i];
            if self.credit[i] > self.credit[best] {
                best = i;
            }
        }
        self.credit[best] -= self.sum;
        best as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str, text: &str) -> Result<Mix, String> {
        Mix::parse(name, text, Path::new(".")).map_err(|e| e.to_string())
    }

    #[test]
    fn toml_and_json_lines_read_the_same_entries() {
        let t = parse(
            "m.toml",
            "[[request]]\nweight = 3\npath = \"/a\"\n\n[[request]]\nname = \"post b\"\nmethod = \"POST\"\npath = \"/b?x=1\"\nheaders = [\"X-Y: z\"]\nbody = \"hi\"\n",
        )
        .unwrap();
        let j = parse(
            "m.jsonl",
            "{\"weight\":3,\"path\":\"/a\"}\n\n{\"name\":\"post b\",\"method\":\"POST\",\"path\":\"/b?x=1\",\"headers\":[\"X-Y: z\"],\"body\":\"hi\"}\n",
        )
        .unwrap();
        assert_eq!(t.entries.len(), 2);
        assert_eq!(t.entries[0].weight, 3);
        assert_eq!(t.entries[1].weight, 1, "the default weight");
        assert_eq!(t.entries[1].body, RequestBody::Inline(b"hi".to_vec()));
        for (a, b) in t.entries.iter().zip(&j.entries) {
            assert_eq!(
                (&a.name, a.weight, &a.path, &a.body),
                (&b.name, b.weight, &b.path, &b.body)
            );
        }
        // A TOML entry starts at its `[[request]]` line.
        assert_eq!(t.entries[1].line, 5);
        assert_eq!(j.entries[1].line, 3);
    }

    #[test]
    fn bad_entries_name_the_file_and_line() {
        for (name, text, want) in [
            ("m.toml", "", "m.toml: the mix has no requests"),
            ("m.jsonl", "\n\n", "m.jsonl: the mix has no requests"),
            (
                "m.toml",
                "[[request]]\npath = \"/a\"\n[[request]]\nweight = 0\n",
                "m.toml:3: weight must be from 1",
            ),
            (
                "m.jsonl",
                "{\"path\":\"/a\"}\n{\"weight\":-2}\n",
                "m.jsonl:2: weight must be from 1",
            ),
            (
                "m.jsonl",
                "{\"path\":\"/a\"}\nnot json\n",
                "m.jsonl:2: not a mix entry",
            ),
            (
                "m.toml",
                "[[request]]\npath = \"/a\"\ncolour = 1\n",
                "m.toml:3: not a mix file",
            ),
            (
                "m.toml",
                "[[request]]\npath = \"a\"\n",
                "m.toml:1: the path `a` must start with `/`",
            ),
            (
                "m.toml",
                "[[request]]\nheaders = [\"bad\"]\n",
                "m.toml:1: invalid header `bad`",
            ),
            (
                "m.toml",
                "[[request]]\nbody = \"x\"\nbody_file = \"y\"\n",
                "m.toml:1: give body or body_file",
            ),
        ] {
            let e = parse(name, text).unwrap_err();
            assert!(e.starts_with(want), "{text:?}: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }

    #[test]
    fn smooth_weighted_round_robin_is_exact_and_spread() {
        let mut p = Picker::new(&[1, 2, 7]);
        let picks: Vec<u32> = (0..1000).map(|_| p.pick()).collect();
        for window in picks.chunks(10) {
            let n = |c| window.iter().filter(|x| **x == c).count();
            assert_eq!((n(0), n(1), n(2)), (1, 2, 7), "{window:?}");
        }
        // Spread: the heaviest entry never runs more than 3 times in a row at 7 of 10.
        let longest = picks
            .chunk_by(|a, b| a == b)
            .filter(|r| r[0] == 2)
            .map(|r| r.len())
            .max();
        assert!(longest <= Some(3), "{longest:?}");
        // At every point, each entry's count is within one of its exact share.
        for weights in [
            vec![1, 2, 7],
            vec![5, 1],
            vec![3, 3, 3, 1],
            vec![13, 1, 6, 20],
        ] {
            let sum: u64 = weights.iter().sum();
            let mut p = Picker::new(&weights);
            let mut counts = vec![0u64; weights.len()];
            for n in 1..=3 * sum {
                counts[p.pick() as usize] += 1;
                for (c, w) in counts.iter().zip(&weights) {
                    let exact = (n * w) as f64 / sum as f64;
                    assert!(
                        (*c as f64 - exact).abs() <= 1.0,
                        "{weights:?} after {n}: {counts:?}"
                    );
                }
            }
            assert_eq!(counts, weights.iter().map(|w| 3 * w).collect::<Vec<_>>());
        }
    }
}
