//! The HTTP/2 client's HPACK decoder (RFC 7541) against fluke-hpack's, over a sequence of
//! header blocks on one connection (so the dynamic table carries over).
//!
//! Checks, block by block until the first error: both accept or both refuse, save three
//! documented differences (a block holding only table size updates, which fluke-hpack refuses;
//! a size update after a field, which gatebench refuses as §4.2 requires; and a Huffman string
//! gatebench never decodes because the field is neither counted nor stored); what gatebench
//! reports (`:status`, `content-length`, malformed, pseudo-header count) is what the rules of
//! RFC 9113 §8.3 give for fluke-hpack's field list; and the dynamic tables hold the same
//! entries in the same order, with gatebench's size the §4.1 sum of them.
//!
//! Input: blocks, each a length byte and that many bytes.
#![no_main]

use fluke_hpack::decoder::{DecoderError, StringDecodingError};
use gatebench_loadgen::fuzz::{HpackDecoder, HpackHead};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut ours = HpackDecoder::default();
    let mut theirs = fluke_hpack::Decoder::new();
    theirs.set_max_allowed_table_size(4096);
    let mut rest = data;
    while let [n, tail @ ..] = rest {
        let n = usize::from(*n).min(tail.len());
        let (block, tail) = tail.split_at(n);
        rest = tail;
        let got = ours.decode(block);
        let Some(reps) = shape(block) else {
            // fluke-hpack panics on a truncated size update; gatebench must refuse it.
            assert_eq!(got, None, "a truncated size update accepted: {block:02x?}");
            return;
        };
        let size_update_late = reps
            .iter()
            .skip_while(|&&r| r == Rep::SizeUpdate)
            .any(|&r| r == Rep::SizeUpdate);
        match (got, theirs.decode(block)) {
            (Some(head), Ok(fields)) => {
                assert!(
                    !size_update_late,
                    "a late size update accepted: {block:02x?}"
                );
                assert_eq!(
                    head,
                    summary(&fields),
                    "block {block:02x?} fields {fields:?}"
                );
                same_tables(&ours, &mut theirs);
            }
            (None, Err(_)) => return,
            (Some(_), Err(DecoderError::SizeUpdateAtEnd)) => {
                assert!(reps.iter().all(|&r| r == Rep::SizeUpdate), "{block:02x?}");
                return;
            }
            (
                Some(_),
                Err(DecoderError::StringDecodingError(StringDecodingError::HuffmanDecoderError(_))),
            ) => return,
            (Some(_), Err(e)) => panic!("accepted what fluke-hpack refuses ({e:?}): {block:02x?}"),
            (None, Ok(fields)) => {
                assert!(
                    size_update_late,
                    "refused what fluke-hpack decodes as {fields:?}: {block:02x?}"
                );
                return;
            }
        }
    }
});

/// The rules of RFC 9113 §8.3 for a response head, as gatebench reports them.
fn summary(fields: &[(Vec<u8>, Vec<u8>)]) -> HpackHead {
    let mut h = HpackHead {
        status: None,
        content_length: None,
        malformed: false,
        pseudo: 0,
    };
    let mut regular = false;
    for (name, value) in fields {
        if name.first() == Some(&b':') {
            h.pseudo += 1;
            if regular || name != b":status" || h.status.is_some() {
                h.malformed = true;
                continue;
            }
            let status = std::str::from_utf8(value)
                .ok()
                .filter(|s| s.len() == 3 && s.bytes().all(|b| b.is_ascii_digit()))
                .filter(|s| !s.starts_with('0'))
                .and_then(|s| s.parse().ok());
            match status {
                Some(s) => h.status = Some(s),
                None => h.malformed = true,
            }
        } else {
            regular = true;
            if name == b"content-length" {
                let n = std::str::from_utf8(value)
                    .ok()
                    .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|s| s.parse::<u64>().ok());
                match (n, h.content_length) {
                    (Some(n), None) => h.content_length = Some(n),
                    (Some(n), Some(m)) if n == m => {}
                    _ => h.malformed = true,
                }
            }
        }
    }
    h
}

/// Compares gatebench's dynamic table with fluke-hpack's, read through indexed fields (which
/// leave the table as it is).
fn same_tables(ours: &HpackDecoder, theirs: &mut fluke_hpack::Decoder<'_>) {
    let (entries, size) = (ours.table(), ours.table_size());
    let sum: usize = entries.iter().map(|(n, v)| 32 + n.len() + v.len()).sum();
    assert_eq!(size, sum, "table size");
    assert!(size <= 4096);
    for i in 0..=entries.len() {
        let mut block = Vec::new();
        put_integer(&mut block, 0x80, 7, 62 + i);
        let found = theirs.decode(&block);
        match entries.get(i) {
            Some(entry) => assert_eq!(found.as_deref(), Ok(&[entry.clone()][..]), "entry {i}"),
            None => assert!(found.is_err(), "fluke-hpack has more entries: {found:?}"),
        }
    }
}

fn put_integer(out: &mut Vec<u8>, flags: u8, n: u32, value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 0x80 {
        out.push((rest as u8 & 0x7f) | 0x80);
        rest >>= 7;
    }
    out.push(rest as u8);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rep {
    Field,
    SizeUpdate,
}

/// The representations of a block (§6), read only as far as their integers and string
/// lengths; `None` when a size update's integer is cut off or too long (fluke-hpack panics on
/// that); a list that stops early when anything else is broken.
fn shape(block: &[u8]) -> Option<Vec<Rep>> {
    let mut reps = Vec::new();
    let mut pos = 0;
    while pos < block.len() {
        let b = block[pos];
        if b & 0xe0 == 0x20 {
            integer(block, &mut pos, 5)?;
            reps.push(Rep::SizeUpdate);
            continue;
        }
        reps.push(Rep::Field);
        let ok = if b & 0x80 != 0 {
            integer(block, &mut pos, 7).is_some()
        } else {
            let prefix = if b & 0xc0 == 0x40 { 6 } else { 4 };
            match integer(block, &mut pos, prefix) {
                Some(0) => string(block, &mut pos) && string(block, &mut pos),
                Some(_) => string(block, &mut pos),
                None => false,
            }
        };
        if !ok {
            break;
        }
    }
    Some(reps)
}

fn integer(block: &[u8], pos: &mut usize, n: u32) -> Option<usize> {
    let max = (1usize << n) - 1;
    let first = usize::from(*block.get(*pos)?) & max;
    *pos += 1;
    if first < max {
        return Some(first);
    }
    let mut value = max;
    for shift in [0, 7, 14, 21] {
        let b = *block.get(*pos)?;
        *pos += 1;
        value += usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

fn string(block: &[u8], pos: &mut usize) -> bool {
    let Some(len) = integer(block, pos, 7) else {
        return false;
    };
    match pos.checked_add(len).filter(|&end| end <= block.len()) {
        Some(end) => {
            *pos = end;
            true
        }
        None => false,
    }
}
