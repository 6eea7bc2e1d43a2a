//! The JSON → XML conversion on the bodies the transform is measured with.
//!
//! `payload-1k`, `payload-10k`, `payload-100k`: what `gatebench load --payload-size N` sends
//! (`crates/loadgen/src/request.rs`, `json_payload`: `{"size":"NB","payload":"abc…"}`).
//! `records-100k`: an array of user records (numbers, booleans, null, nested objects, short
//! strings). `escaped-100k`: nested objects whose keys are not XML names and whose strings are
//! full of `\` escapes, `\u` escapes, XML specials and non-ASCII text.
//!
//! The converter is the hand-written scanner of `json_xml.rs`. This bench measured it against a
//! converter driven by jiter's JSON iterator (commit 3aa11e4, results in
//! bench/results/json-xml-2026-11-28T124715.md, docs/proxy.md), which was slower on every body
//! and was removed.
//!
//! Run: `cargo bench -p gatebench-services --bench json_xml` (bench/json-xml.sh runs it RUNS
//! times and writes bench/results/json-xml-*.{tsv,md}). Each body: 0.5 s of warm-up, then 30
//! samples of about 2 s in all; it prints one line per body, `body<TAB>bytes<TAB>converter<TAB>
//! median ns per conversion`. (The A/B of 3aa11e4 ran under criterion; a bench of one
//! converter needs no statistics library, and criterion would have been built with every test
//! of this crate.)

use std::hint::black_box;
use std::time::{Duration, Instant};

use gatebench_services::json_xml::{json_to_xml, JsonXmlLimits};

/// `gatebench load --payload-size size`'s body, as crates/loadgen/src/request.rs makes it.
fn payload(size: usize) -> Vec<u8> {
    let head = format!("{{\"size\":\"{size}B\",\"payload\":\"");
    let tail = "\"}";
    let mut out = head.into_bytes();
    let fill = size - out.len() - tail.len();
    out.extend((0..fill).map(|i| b'a' + (i % 26) as u8));
    out.extend_from_slice(tail.as_bytes());
    assert_eq!(out.len(), size);
    out
}

fn records(size: usize) -> Vec<u8> {
    let mut out = String::from("[");
    for i in 0.. {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!(
            concat!(
                r#"{{"id":{i},"uuid":"{u:016x}","name":"User {i}","email":"user{i}@example.com","#,
                r#""active":{a},"score":{s}.{f},"tags":["alpha","beta","gamma"],"#,
                r#""address":{{"street":"{s} Main St","city":"Springfield","zip":"01234","#,
                r#""geo":{{"lat":-33.8688,"lng":151.2093}}}},"manager":null,"#,
                r#""created-at":"2024-05-01T12:00:00Z"}}"#
            ),
            i = i,
            u = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            a = i % 3 != 0,
            s = i * 37 % 1000,
            f = i % 100,
        ));
        if out.len() + 1 >= size {
            break;
        }
    }
    out.push(']');
    out.into_bytes()
}

fn escaped(size: usize) -> Vec<u8> {
    let mut out = String::from("[");
    for i in 0.. {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!(
            concat!(
                r#"{{"a b {i}":{{"1st":"<p class=\"x\">Tom &amp; Jerry's</p>\n\tline\r\n","#,
                r#""x:y":["caf\u00e9 \u65e5\u672c \ud83d\ude00","café 日本 😀 \\ \/ \"q\""],"#,
                r#""日本":{{"k\u0065y":"\u0041\u0042\u0043 <&> '\"'","":[[{{"-":null}}]]}}}}}}"#
            ),
            i = i
        ));
        if out.len() + 1 >= size {
            break;
        }
    }
    out.push(']');
    out.into_bytes()
}

/// The median time of one conversion of `body`, ns: warm-up, then `SAMPLES` samples of as many
/// conversions as fit in an even share of `MEASURE`.
fn median_ns(body: &[u8], limits: &JsonXmlLimits) -> f64 {
    const WARMUP: Duration = Duration::from_millis(500);
    const MEASURE: Duration = Duration::from_secs(2);
    const SAMPLES: u32 = 30;
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < WARMUP {
        black_box(json_to_xml(black_box(body), limits).expect("valid"));
        n += 1;
    }
    let per = WARMUP.as_secs_f64() / n.max(1) as f64;
    let iters = ((MEASURE.as_secs_f64() / f64::from(SAMPLES)) / per).max(1.0) as u64;
    let mut samples: Vec<f64> = (0..SAMPLES)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                black_box(json_to_xml(black_box(body), limits).expect("valid"));
            }
            t.elapsed().as_nanos() as f64 / iters as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let limits = JsonXmlLimits::default();
    let bodies = [
        ("payload-1k", payload(1 << 10)),
        ("payload-10k", payload(10 << 10)),
        ("payload-100k", payload(100 << 10)),
        ("records-100k", records(100 << 10)),
        ("escaped-100k", escaped(100 << 10)),
    ];
    for (name, body) in &bodies {
        json_to_xml(body, &limits).expect("valid body");
        let ns = median_ns(body, &limits);
        println!("{name}\t{}\tscanner\t{ns:.1}", body.len());
    }
}
