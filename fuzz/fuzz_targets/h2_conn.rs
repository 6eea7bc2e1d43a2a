//! The HTTP/2 client's connection state machine fed arbitrary server frames interleaved with
//! client actions; the invariants (no panic, bounded output, every stream answered once the
//! connection ends) are asserted by `gatebench_loadgen::fuzz::h2_conn` itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| gatebench_loadgen::fuzz::h2_conn(data));
