//! The identities the history keys runs by: the suite's fingerprint (which runs are the same
//! experiment, so their figures may stand in one series) and the environment's (which runs
//! were made on the same kind of machine, so a change between them is not the machine's).
//!
//! Both are the SHA-256, in hex, of a canonical JSON text (keys sorted, no spaces), which the
//! store keeps beside the hash so a person can see what differs.
//!
//! The suite fingerprint covers what decides what a cell measures: every scenario's name,
//! protocols, request (method, path, verify, keep-alive, expected status), its back-ends'
//! commands and counts, whether it has a system under test and in which protocol, its GC log
//! format, capacity and cost settings; the matrix; the load settings; the warm-up, duration
//! and request count. It deliberately leaves out what a run may change without changing the
//! experiment: the system under test's command (what changes from release to release: another
//! build, another path), titles, `repeats`, `order`, `pin` (kept in the environment
//! fingerprint instead), `compare`, `ready_timeout`, `include`/`exclude`, `estimate_only`,
//! `expected_rate`, the `[quick]` table (its values are in the matrix when `--quick` applied
//! them), `[hosts]`, working directories, templates, setup commands, and ready URLs and fixed
//! ports of processes. Two runs of one suite file with other `--out`, `--repeats`,
//! `--include` or on other machines therefore share a fingerprint; `--quick`, `--warmup`,
//! `--duration` or `--variant` make another suite.

use gatebench_model::Environment;
use serde_json::Value as Json;
use sha2::{Digest, Sha256};

/// A suite as the history knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuiteIdentity {
    /// The suite's name (`[suite] name`).
    pub name: String,
    /// SHA-256 hex of [`SuiteIdentity::definition`].
    pub fingerprint: String,
    /// The canonical JSON the fingerprint is taken of.
    pub definition: String,
}

/// `[suite]` keys that make the experiment (the rest are run-only).
const SUITE_KEYS: &[&str] = &["warmup", "duration", "requests"];
/// Scenario keys that make the experiment.
const SCENARIO_KEYS: &[&str] = &[
    "name",
    "protocols",
    "verify",
    "path",
    "method",
    "expect_status",
    "keepalive",
    "backend",
    "sut",
    "gc_format",
    "capacity",
    "cost",
];
/// Keys of a back-end's table that make the experiment.
const BACKEND_KEYS: &[&str] = &["serve", "command", "count", "protocol"];
/// Keys of a system under test's table that make the experiment: its protocol only. Whether
/// it is a built-in service or a command is kept as `kind`.
const SUT_KEYS: &[&str] = &["protocol"];

/// The identity of the suite whose resolved `suite.toml` (as a results directory holds it) is
/// `suite_toml`.
pub fn suite_identity(suite_toml: &str) -> Result<SuiteIdentity, String> {
    let full: Json =
        toml::from_str(suite_toml).map_err(|e| format!("suite.toml does not read: {e}"))?;
    let name = full
        .pointer("/suite/name")
        .and_then(Json::as_str)
        .ok_or("suite.toml has no [suite] name")?
        .to_owned();
    let mut out = serde_json::Map::new();
    out.insert("suite".into(), keep(full.get("suite"), SUITE_KEYS));
    for table in ["matrix", "load", "capacity", "cost"] {
        if let Some(v) = full.get(table) {
            out.insert(table.into(), v.clone());
        }
    }
    let scenarios: Vec<Json> = full
        .get("scenario")
        .and_then(Json::as_array)
        .map(|a| a.iter().map(scenario).collect())
        .unwrap_or_default();
    out.insert("scenario".into(), Json::Array(scenarios));
    let definition = canonical(&Json::Object(out));
    Ok(SuiteIdentity {
        name,
        fingerprint: sha256_hex(&definition),
        definition,
    })
}

/// The parts of one `[[scenario]]` that make the experiment.
fn scenario(s: &Json) -> Json {
    let mut out = match keep(Some(s), SCENARIO_KEYS) {
        Json::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    if let Some(b) = s.get("backend") {
        out.insert("backend".into(), keep(Some(b), BACKEND_KEYS));
    }
    if let Some(p) = s.get("sut") {
        let mut sut = match keep(Some(p), SUT_KEYS) {
            Json::Object(m) => m,
            _ => serde_json::Map::new(),
        };
        let kind = if p.get("serve").is_some() {
            "built-in"
        } else {
            "command"
        };
        sut.insert("kind".into(), Json::String(kind.into()));
        out.insert("sut".into(), Json::Object(sut));
    }
    Json::Object(out)
}

/// The object `v` with only `keys` (an empty object when `v` is not one).
fn keep(v: Option<&Json>, keys: &[&str]) -> Json {
    let mut out = serde_json::Map::new();
    if let Some(Json::Object(m)) = v {
        for k in keys {
            if let Some(x) = m.get(*k) {
                out.insert((*k).into(), x.clone());
            }
        }
    }
    Json::Object(out)
}

/// The environment's fingerprint: CPU model, cores (online and available), kernel,
/// architecture, the kernel and cgroup settings (governor, limits, …), whether the run pinned
/// its processes to CPUs, and gatebench's version. Not the source revision, which changes with
/// every commit of a development build. Returns the fingerprint and the canonical JSON it is
/// taken of (which the store keeps).
pub fn environment_fingerprint(env: &Environment, pinned: bool) -> (String, String) {
    let mut v = serde_json::to_value(env).expect("an environment always serializes");
    if let Json::Object(m) = &mut v {
        m.remove("schema_version");
        m.remove("git_revision");
        m.insert("pinned".into(), Json::Bool(pinned));
    }
    let text = canonical(&v);
    (sha256_hex(&text), text)
}

/// What differs between two environments as the store keeps them (the canonical JSON of
/// [`environment_fingerprint`]): one `key: A vs B` per differing field (nested fields as
/// `system.cpu_governor`), in key order. Empty when they are the same.
pub fn environment_differences(a: &str, b: &str) -> Vec<String> {
    fn flat(prefix: &str, v: &Json, out: &mut std::collections::BTreeMap<String, String>) {
        match v {
            Json::Object(m) => {
                for (k, x) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    flat(&key, x, out);
                }
            }
            other => {
                out.insert(prefix.to_owned(), other.to_string());
            }
        }
    }
    let parse = |t: &str| {
        let mut m = std::collections::BTreeMap::new();
        flat("", &serde_json::from_str(t).unwrap_or(Json::Null), &mut m);
        m
    };
    let (a, b) = (parse(a), parse(b));
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let none = "(none)".to_owned();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| {
            format!(
                "{k}: {} vs {}",
                a.get(k).unwrap_or(&none),
                b.get(k).unwrap_or(&none)
            )
        })
        .collect()
}

/// Whether the resolved suite pinned its processes to CPUs (`[suite] pin`).
pub fn suite_pins(suite_toml: &str) -> bool {
    toml::from_str::<Json>(suite_toml)
        .ok()
        .and_then(|v| v.pointer("/suite/pin").and_then(Json::as_bool))
        .unwrap_or(false)
}

/// The release gates of a resolved `suite.toml` (`[suite] gates`, an array of expressions):
/// none when the key is absent; an error, one line, when it is not an array of strings or an
/// expression does not parse ([`crate::gate::parse_all`]). Gates are not part of the suite's
/// fingerprint: changing them changes how a release is judged, not what is measured.
pub fn suite_gates(suite_toml: &str) -> Result<Vec<String>, String> {
    let v: Json =
        toml::from_str(suite_toml).map_err(|e| format!("suite.toml does not read: {e}"))?;
    let Some(g) = v.pointer("/suite/gates") else {
        return Ok(Vec::new());
    };
    let gates: Vec<String> = g
        .as_array()
        .and_then(|a| a.iter().map(|e| e.as_str().map(str::to_owned)).collect())
        .ok_or("[suite] gates: expected an array of gate expressions (strings)")?;
    crate::gate::parse_all(&gates).map_err(|e| format!("[suite] gates: {e}"))?;
    Ok(gates)
}

/// `v` as JSON with every object's keys sorted and no spaces, so equal values give equal text
/// whatever order their keys were written in.
pub fn canonical(v: &Json) -> String {
    fn sorted(v: &Json) -> Json {
        match v {
            Json::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                let mut out = serde_json::Map::new();
                for k in keys {
                    out.insert(k.clone(), sorted(&m[k]));
                }
                Json::Object(out)
            }
            Json::Array(a) => Json::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    // Without serde_json's `preserve_order` the map is already sorted; with it, insertion in
    // sorted order sorts it.
    serde_json::to_string(&sorted(v)).expect("JSON values always serialize")
}

/// SHA-256 of `text`, lower-case hex.
fn sha256_hex(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUITE: &str = r#"
[suite]
name = "s"
warmup = "1s"
duration = "4s"
repeats = 1
order = "interleaved"
pin = false
include = []

[matrix]
users = [10, 100]
sizes = [50]
delays = ["0s"]

[load]
method = "POST"
path = "/"

[[scenario]]
name = "proxy"
title = "Proxy"
workdir = "/home/a/checkout"
backend = { serve = "echo --port {port}", protocol = "h1c" }
sut = { command = "/opt/app-1.0/bin/app --port {port}", ready = "http://127.0.0.1:{port}/" }
"#;

    #[test]
    fn run_only_settings_do_not_change_the_fingerprint() {
        let a = suite_identity(SUITE).unwrap();
        assert_eq!(a.name, "s");
        assert_eq!(a.fingerprint.len(), 64);
        // Another checkout, another release's binary, more repeats, another order, a title.
        let b = suite_identity(
            &SUITE
                .replace("/home/a/checkout", "/srv/ci/42")
                .replace("app-1.0", "app-1.1")
                .replace("repeats = 1", "repeats = 5")
                .replace("interleaved", "sequential")
                .replace("title = \"Proxy\"", "title = \"The proxy\""),
        )
        .unwrap();
        assert_eq!(a.fingerprint, b.fingerprint);
        // The matrix, the load, the warm-up and the back-end are the experiment.
        for (from, to) in [
            ("users = [10, 100]", "users = [10]"),
            ("method = \"POST\"", "method = \"GET\""),
            ("warmup = \"1s\"", "warmup = \"2s\""),
            (
                "serve = \"echo --port {port}\"",
                "serve = \"echo --delay 1ms --port {port}\"",
            ),
            ("sut = { command", "sut = { serve"),
        ] {
            let c = suite_identity(&SUITE.replace(from, to)).unwrap();
            assert_ne!(a.fingerprint, c.fingerprint, "{from} -> {to}");
        }
        assert!(suite_identity("[suite]\nwarmup = 1").is_err());
    }

    #[test]
    fn canonical_json_sorts_keys() {
        let a: Json = serde_json::from_str(r#"{"b":1,"a":{"d":2,"c":[3]}}"#).unwrap();
        assert_eq!(canonical(&a), r#"{"a":{"c":[3],"d":2},"b":1}"#);
    }

    #[test]
    fn environment_differences_name_each_field() {
        let a = r#"{"cores":2,"cpu_model":"A","system":{"cpu_governor":"performance"}}"#;
        let b = r#"{"cores":4,"cpu_model":"A","system":{"cpu_governor":"powersave"}}"#;
        assert_eq!(
            environment_differences(a, b),
            vec![
                "cores: 2 vs 4".to_owned(),
                "system.cpu_governor: \"performance\" vs \"powersave\"".to_owned()
            ]
        );
        assert!(environment_differences(a, a).is_empty());
    }
}
