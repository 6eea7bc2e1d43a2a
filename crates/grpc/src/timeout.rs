//! The `grpc-timeout` field: at most 8 digits and a unit (`H`, `M`, `S`, `m`, `u`, `n`).
//! Rule: a sender rounds up to the finest unit that fits 8 digits, so the deadline it
//! announces is never shorter than the one it keeps.

use std::time::Duration;

/// Largest value gRPC allows in the field: 8 digits.
const MAX_DIGITS: u64 = 99_999_999;

/// The field's value for `d`, in the finest unit whose count fits 8 digits (rounded up).
pub fn encode(d: Duration) -> String {
    let nanos = d.as_nanos();
    for (unit, per) in [
        ('n', 1u128),
        ('u', 1_000),
        ('m', 1_000_000),
        ('S', 1_000_000_000),
        ('M', 60_000_000_000),
        ('H', 3_600_000_000_000),
    ] {
        let count = nanos.div_ceil(per);
        if count <= u128::from(MAX_DIGITS) {
            return format!("{count}{unit}");
        }
    }
    format!("{MAX_DIGITS}H")
}

/// Reads the field; `None` when it is not 1 to 8 digits and a known unit.
pub fn parse(value: &[u8]) -> Option<Duration> {
    let (&unit, digits) = value.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_deadlines_read_back_never_shorter() {
        for d in [
            Duration::from_nanos(1),
            Duration::from_millis(50),
            Duration::from_millis(99_999_999) + Duration::from_nanos(1),
            Duration::from_secs(10),
            Duration::from_secs(86_400 * 365),
        ] {
            let v = encode(d);
            assert!(v.len() <= 9, "{v}");
            let back = parse(v.as_bytes()).unwrap();
            assert!(back >= d, "{d:?} -> {v} -> {back:?}");
        }
        assert_eq!(encode(Duration::from_millis(50)), "50000000n");
        assert_eq!(encode(Duration::from_secs(10)), "10000000u");
    }

    #[test]
    fn malformed_fields_are_refused() {
        for bad in [&b""[..], b"S", b"123456789S", b"10s", b"1.5S", b"-1S"] {
            assert_eq!(parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        assert_eq!(parse(b"250m"), Some(Duration::from_millis(250)));
    }
}
