//! HPACK's Huffman code (RFC 7541 §5.2, Appendix B): decoding only — gatebench's own header
//! blocks are sent as raw literals or table indices.
//!
//! The code is canonical: codes of one length are consecutive, in symbol order, and each length's
//! first code follows the previous length's last. So the 257 code lengths below define it
//! completely; the codes are rebuilt from them once. Decoding walks a table of four bits at a
//! time (the shortest code has five bits, so a nibble completes at most one symbol).

use std::sync::OnceLock;

/// Bit length of the code of each symbol 0..=255 and of EOS (256), RFC 7541 Appendix B.
#[rustfmt::skip]
const CODE_LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
    6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
    13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
    15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,
    6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
    30,
];

const EOS: u16 = 256;

/// Why a Huffman string is invalid (RFC 7541 §5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InvalidHuffman;

/// The codes, rebuilt from the lengths: `(code, length)` per symbol.
fn codes() -> [(u32, u8); 257] {
    let mut order: Vec<u16> = (0..=EOS).collect();
    order.sort_by_key(|&s| (CODE_LENGTHS[s as usize], s));
    let mut out = [(0u32, 0u8); 257];
    let mut code = 0u32;
    let mut prev = CODE_LENGTHS[order[0] as usize];
    for (i, &s) in order.iter().enumerate() {
        let len = CODE_LENGTHS[s as usize];
        if i > 0 {
            code = (code + 1) << (len - prev);
        }
        prev = len;
        out[s as usize] = (code, len);
    }
    out
}

/// One step of the nibble machine: from a node, four bits lead to `next`, maybe emitting a
/// symbol on the way.
#[derive(Debug, Clone, Copy, Default)]
struct Step {
    next: u8,
    sym: u8,
    /// `EMIT`, `FAIL`.
    flags: u8,
}

const EMIT: u8 = 1;
const FAIL: u8 = 2;

struct Machine {
    steps: Vec<Step>,
    /// Per internal node: whether the input may end there (the bits since the last symbol are
    /// fewer than eight and all ones — a prefix of EOS used as padding).
    may_end: [bool; 256],
}

fn machine() -> &'static Machine {
    static MACHINE: OnceLock<Machine> = OnceLock::new();
    MACHINE.get_or_init(build)
}

/// A child in the code tree: an internal node or a symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Child {
    Empty,
    Node(u8),
    Leaf(u16),
}

fn build() -> Machine {
    // 257 leaves make 256 internal nodes: each fits in a u8; node 0 is the root.
    let mut tree: Vec<[Child; 2]> = vec![[Child::Empty; 2]];
    for (sym, (code, len)) in codes().iter().enumerate() {
        let mut node = 0usize;
        for i in (0..*len).rev() {
            let bit = ((code >> i) & 1) as usize;
            if i == 0 {
                tree[node][bit] = Child::Leaf(sym as u16);
            } else {
                node = match tree[node][bit] {
                    Child::Node(n) => n as usize,
                    _ => {
                        tree.push([Child::Empty; 2]);
                        let n = tree.len() - 1;
                        tree[node][bit] = Child::Node(n as u8);
                        n
                    }
                };
            }
        }
    }
    debug_assert_eq!(tree.len(), 256);
    let mut may_end = [false; 256];
    let mut node = 0usize;
    may_end[0] = true;
    for _ in 0..7 {
        match tree[node][1] {
            Child::Node(n) => {
                node = n as usize;
                may_end[node] = true;
            }
            _ => unreachable!("EOS is thirty ones"),
        }
    }
    let mut steps = vec![Step::default(); 256 * 16];
    for (start, _) in tree.iter().enumerate() {
        for nibble in 0..16u8 {
            let mut node = start;
            let mut step = Step::default();
            for i in (0..4).rev() {
                match tree[node][usize::from((nibble >> i) & 1)] {
                    Child::Node(n) => node = n as usize,
                    Child::Leaf(EOS) | Child::Empty => {
                        step.flags |= FAIL;
                        break;
                    }
                    Child::Leaf(s) => {
                        step.sym = s as u8;
                        step.flags |= EMIT;
                        node = 0;
                    }
                }
            }
            step.next = node as u8;
            steps[start * 16 + usize::from(nibble)] = step;
        }
    }
    Machine { steps, may_end }
}

/// Appends the decoding of `src` to `out`.
pub(crate) fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), InvalidHuffman> {
    let m = machine();
    let mut node = 0usize;
    out.reserve(src.len() * 8 / 5);
    for &b in src {
        for nibble in [b >> 4, b & 0x0f] {
            let step = m.steps[node * 16 + usize::from(nibble)];
            if step.flags & FAIL != 0 {
                return Err(InvalidHuffman);
            }
            if step.flags & EMIT != 0 {
                out.push(step.sym);
            }
            node = usize::from(step.next);
        }
    }
    if m.may_end[node] {
        Ok(())
    } else {
        Err(InvalidHuffman)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpack::hex;

    fn decoded(h: &str) -> Result<String, InvalidHuffman> {
        let mut out = Vec::new();
        decode(&hex(h), &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    /// Encodes with the rebuilt codes (for round trips only).
    fn encode(src: &[u8]) -> Vec<u8> {
        let codes = codes();
        let (mut acc, mut bits, mut out) = (0u64, 0u32, Vec::new());
        for &b in src {
            let (code, len) = codes[b as usize];
            acc = (acc << len) | u64::from(code);
            bits += u32::from(len);
            while bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
            }
        }
        if bits > 0 {
            out.push(((acc << (8 - bits)) | (0xff >> bits)) as u8);
        }
        out
    }

    #[test]
    fn rfc7541_examples_decode() {
        // Appendix C.4 and C.6.
        assert_eq!(
            decoded("f1e3 c2e5 f23a 6ba0 ab90 f4ff").unwrap(),
            "www.example.com"
        );
        assert_eq!(decoded("a8eb 1064 9cbf").unwrap(), "no-cache");
        assert_eq!(decoded("25a8 49e9 5ba9 7d7f").unwrap(), "custom-key");
        assert_eq!(decoded("25a8 49e9 5bb8 e8b4 bf").unwrap(), "custom-value");
        assert_eq!(decoded("6402").unwrap(), "302");
        assert_eq!(decoded("aec3 771a 4b").unwrap(), "private");
        assert_eq!(
            decoded("d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff").unwrap(),
            "Mon, 21 Oct 2013 20:13:21 GMT"
        );
        assert_eq!(
            decoded("9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3").unwrap(),
            "https://www.example.com"
        );
    }

    #[test]
    fn every_byte_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        let mut out = Vec::new();
        decode(&encode(&all), &mut out).unwrap();
        assert_eq!(out, all);
        for b in 0..=255u8 {
            let mut out = Vec::new();
            decode(&encode(&[b, b'a', b]), &mut out).unwrap();
            assert_eq!(out, [b, b'a', b]);
        }
    }

    #[test]
    fn bad_padding_and_eos_are_refused() {
        // Padding of zeros instead of EOS's ones.
        assert!(decoded("f1e3 c2e5 f23a 6ba0 ab90 f400").is_err());
        // Eight bits or more of padding.
        assert!(decoded("a8eb 1064 9cbf ff").is_err());
        // EOS itself inside the string (thirty ones).
        assert!(decoded("ffff ffff").is_err());
        // Empty input is the empty string.
        assert_eq!(decoded("").unwrap(), "");
    }
}
