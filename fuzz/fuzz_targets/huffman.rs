//! HPACK Huffman decoding (RFC 7541 §5.2): the same verdict and bytes as fluke-hpack's
//! decoder for any input, and every string encoded by httlib-huffman decodes back to itself.
#![no_main]

use gatebench_loadgen::fuzz::huffman_decode;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let ours = huffman_decode(data);
    let theirs = fluke_hpack::huffman::HuffmanDecoder::new()
        .decode(data)
        .ok();
    assert_eq!(ours, theirs, "input {data:02x?}");
    let mut encoded = Vec::new();
    httlib_huffman::encode(data, &mut encoded).expect("every byte has a code");
    assert_eq!(
        huffman_decode(&encoded).as_deref(),
        Some(data),
        "round trip"
    );
});
