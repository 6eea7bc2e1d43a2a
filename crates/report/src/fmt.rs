//! Number formatting shared by the renderers: counts with thousands separators, byte sizes,
//! rates and latencies in the unit that reads best. It formats single figures only; where a
//! figure goes (columns, padding, tables) is each renderer's business.

/// `1234567` → `1,234,567`.
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate with one decimal and separators: `41152.23` → `41,152.2`.
pub fn rate(r: f64) -> String {
    if !r.is_finite() || r < 0.0 {
        return format!("{r}");
    }
    let whole = r.trunc() as u64;
    let tenth = ((r - r.trunc()) * 10.0).round() as u64;
    if tenth == 10 {
        format!("{}.0", count(whole + 1))
    } else {
        format!("{}.{tenth}", count(whole))
    }
}

/// Bytes in binary units: `1536` → `1.50 KiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

/// A latency given in milliseconds, printed in µs, ms or s as it reads best.
pub fn duration_ms(ms: f64) -> String {
    if ms < 1.0 {
        format!("{:.1}µs", ms * 1e3)
    } else if ms < 1000.0 {
        format!("{ms:.2}ms")
    } else {
        format!("{:.2}s", ms / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(rate(41152.23), "41,152.2");
        assert_eq!(rate(9.96), "10.0");
        assert_eq!(bytes(10), "10 B");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(duration_ms(0.0456), "45.6µs");
        assert_eq!(duration_ms(20.123), "20.12ms");
        assert_eq!(duration_ms(1500.0), "1.50s");
    }
}
