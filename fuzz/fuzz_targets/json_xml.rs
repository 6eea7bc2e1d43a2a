//! The JSON → XML converter of the transform service against serde_json and quick-xml.
//!
//! Checks: the converter accepts a document exactly when serde_json does, save the documented
//! differences — nesting deeper than the limit (64; serde_json allows 128), characters XML 1.0
//! cannot carry (refused, not replaced), and numbers beyond f64's range (copied verbatim;
//! serde_json refuses them); and every output is a well-formed XML 1.0 document (quick-xml
//! with end-name and comment checks, plus the name, character and reference checks it leaves
//! out) that follows the documented mapping and gives back exactly the value serde_json
//! read, members in order and duplicates kept.
//!
//! Input: the JSON text.
#![no_main]

use std::fmt;

use gatebench_services::json_xml::strict_reader::{self as reader, legal_char};
use gatebench_services::json_xml::{json_to_xml, JsonXmlError, JsonXmlLimits};
use libfuzzer_sys::fuzz_target;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

const MAX_DEPTH: usize = 64;

fuzz_target!(|data: &[u8]| {
    let limits = JsonXmlLimits {
        max_depth: MAX_DEPTH,
        max_input: 1 << 20,
    };
    let ours = json_to_xml(data, &limits);
    let oracle = serde_json::from_slice::<J>(data);
    match (ours, oracle) {
        (Ok(xml), Ok(value)) => {
            let rebuilt = walk(&xml);
            assert_eq!(
                canonical(&rebuilt),
                value,
                "{:?}",
                String::from_utf8_lossy(data)
            );
            assert!(depth(&value) <= MAX_DEPTH);
        }
        (Ok(xml), Err(e)) => {
            // Numbers are copied as written; serde_json refuses what f64 cannot hold.
            assert!(
                e.to_string().contains("number out of range"),
                "accepted what serde_json refuses ({e}): {:?}",
                String::from_utf8_lossy(data)
            );
            walk(&xml);
        }
        (Err(JsonXmlError::TooDeep { .. }), Ok(value)) => {
            assert!(
                depth(&value) > MAX_DEPTH,
                "refused as too deep at depth {}",
                depth(&value)
            );
        }
        (Err(JsonXmlError::InvalidCharacter { .. }), Ok(value)) => {
            assert!(
                has_illegal(&value),
                "refused a character XML can carry: {:?}",
                String::from_utf8_lossy(data)
            );
        }
        (Err(e), Ok(_)) => panic!(
            "refused ({e}) what serde_json reads: {:?}",
            String::from_utf8_lossy(data)
        ),
        (Err(_), Err(_)) => {}
    }
});

/// A JSON value as the target sees it: numbers kept as text (the XML side) or in serde_json's
/// reading (the oracle side, see [`canonical`]), members in order, duplicates kept.
#[derive(Debug, Clone, PartialEq)]
enum J {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

/// Numbers rewritten as serde_json reads them, so that `1.0e1` on the XML side (verbatim)
/// equals serde_json's reading of the same text.
fn canonical(v: &J) -> J {
    match v {
        J::Num(text) => serde_json::from_str::<J>(text).expect("a number serde_json reads"),
        J::Arr(items) => J::Arr(items.iter().map(canonical).collect()),
        J::Obj(members) => J::Obj(
            members
                .iter()
                .map(|(k, v)| (k.clone(), canonical(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn depth(v: &J) -> usize {
    match v {
        J::Arr(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        J::Obj(members) => 1 + members.iter().map(|(_, v)| depth(v)).max().unwrap_or(0),
        _ => 0,
    }
}

fn has_illegal(v: &J) -> bool {
    match v {
        J::Str(s) => !s.chars().all(legal_char),
        J::Arr(items) => items.iter().any(has_illegal),
        J::Obj(members) => members
            .iter()
            .any(|(k, v)| !k.chars().all(legal_char) || has_illegal(v)),
        _ => false,
    }
}

impl<'de> Deserialize<'de> for J {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<J, D::Error> {
        d.deserialize_any(JVisitor)
    }
}

struct JVisitor;

impl<'de> Visitor<'de> for JVisitor {
    type Value = J;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<J, E> {
        Ok(J::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<J, E> {
        Ok(J::Bool(b))
    }
    fn visit_u64<E>(self, n: u64) -> Result<J, E> {
        Ok(J::Num(format!("u{n}")))
    }
    fn visit_i64<E>(self, n: i64) -> Result<J, E> {
        Ok(J::Num(format!("i{n}")))
    }
    fn visit_f64<E>(self, n: f64) -> Result<J, E> {
        Ok(J::Num(format!("f{:x}", n.to_bits())))
    }
    fn visit_str<E>(self, s: &str) -> Result<J, E> {
        Ok(J::Str(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<J, E> {
        Ok(J::Str(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<J, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(J::Arr(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<J, A::Error> {
        let mut members = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, J>()? {
            members.push((k, v));
        }
        Ok(J::Obj(members))
    }
}

/// The strict reader's value (shared with the converter's own tests) as this target's `J`.
fn from_reader(v: reader::J) -> J {
    match v {
        reader::J::Null => J::Null,
        reader::J::Bool(b) => J::Bool(b),
        reader::J::Num(n) => J::Num(n),
        reader::J::Str(s) => J::Str(s),
        reader::J::Arr(items) => J::Arr(items.into_iter().map(from_reader).collect()),
        reader::J::Obj(members) => J::Obj(
            members
                .into_iter()
                .map(|(k, v)| (k, from_reader(v)))
                .collect(),
        ),
    }
}

/// Parses the converter's output strictly and rebuilds the value it encodes.
fn walk(xml: &[u8]) -> J {
    from_reader(reader::walk(xml))
}
