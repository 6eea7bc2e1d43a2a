//! The accepted range of every number a user hands gatebench — durations, rates, counts, sizes —
//! and the one parser of durations, shared by the command line and suite files.
//!
//! The ranges are far beyond any real benchmark; they exist so that no input can make the
//! program panic or exhaust memory later: `Duration::from_secs_f64` panics past about 1.8e19 s,
//! `Instant + Duration` panics when the sum overflows, an open-model interval of `1 / rate`
//! overflows for a tiny rate and rounds to zero for a huge one, and a count turns into
//! allocations (a task per stream, a thread per worker, a buffer per payload byte). Checking
//! here, at the validation stage, turns each into one line naming the option and its range.
//!
//! It does not know option names: callers (the CLI, the suite validator, [`crate::LoadConfig`])
//! put the value's name in front of the reason.

use std::time::Duration;

/// Longest duration any option or suite key accepts (measurement, warm-up, timeouts, delays):
/// 100 days. Warm-up plus measurement plus timeouts then always fit in an `Instant`.
pub const MAX_DURATION: Duration = Duration::from_secs(100 * 24 * 3600);

/// How [`MAX_DURATION`] is written in messages and help texts.
pub const MAX_DURATION_TEXT: &str = "100 days";

/// Lowest open-model rate, requests/s: one request every 1000 s. Below it the interval between
/// requests outgrows any sensible run (and `1 / rate` overflows a `Duration` near 1e-19).
pub const MIN_RATE: f64 = 1e-3;

/// Highest open-model rate, requests/s. Above it the interval between requests rounds to zero
/// nanoseconds; no generator on one machine comes near it.
pub const MAX_RATE: f64 = 1e9;

/// Most concurrent connections (each needs a file descriptor and its buffers).
pub const MAX_CONNECTIONS: u32 = 1_000_000;

/// Most worker threads of the generator or of a built-in service.
pub const MAX_THREADS: u32 = 1024;

/// Most HTTP/2 streams per connection (the generator runs a task per stream slot; servers
/// commonly allow 100 to 256).
pub const MAX_STREAMS: u32 = 10_000;

/// Largest generated payload or fixed answer, bytes (1 GiB): it is built in memory.
pub const MAX_PAYLOAD: u64 = 1 << 30;

/// A duration that was refused: the text given and why. Its message is the one line both the
/// command line and suite files show after the option or key, e.g.
/// `"5 parsecs" is not a duration (write e.g. "30s", "5m", "250ms")`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a duration ({kind})")]
pub struct DurationError {
    /// The text refused, trimmed (quoted and escaped in the message, so it stays one line).
    pub input: String,
    /// Why.
    pub kind: DurationErrorKind,
}

/// Why a duration was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationErrorKind {
    /// It starts with `-`.
    #[error("it must not be negative")]
    Negative,
    /// Neither a finite number of seconds nor a humantime duration.
    #[error("write e.g. \"30s\", \"5m\", \"250ms\"")]
    Malformed,
    /// Longer than [`MAX_DURATION`].
    #[error("durations are at most {MAX_DURATION_TEXT}")]
    TooLong,
}

/// The one parser of durations, for every command-line option and suite key that takes one.
///
/// Accepts a duration as humantime writes it (`30s`, `1m30s`, `250ms`, `2d`) or a bare number
/// of seconds (`1.5`, `2e3`). Refuses negative values, NaN, infinities and anything longer than
/// [`MAX_DURATION`]. Zero is accepted: the options and keys that need more say so themselves
/// (`must be more than 0`).
pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let s = s.trim();
    parse_trimmed(s).map_err(|kind| DurationError {
        input: s.to_owned(),
        kind,
    })
}

fn parse_trimmed(s: &str) -> Result<Duration, DurationErrorKind> {
    if s.starts_with('-') {
        return Err(DurationErrorKind::Negative);
    }
    let d = if let Ok(secs) = s.parse::<f64>() {
        if !secs.is_finite() {
            return Err(DurationErrorKind::Malformed);
        }
        // Compared as f64 before converting: `Duration::from_secs_f64` panics on overflow.
        if secs > MAX_DURATION.as_secs_f64() {
            return Err(DurationErrorKind::TooLong);
        }
        Duration::try_from_secs_f64(secs).map_err(|_| DurationErrorKind::Malformed)?
    } else {
        humantime::parse_duration(s).map_err(|e| match e {
            // humantime's own overflow (`99999999999999999999s`) is too long as well.
            humantime::DurationError::NumberOverflow => DurationErrorKind::TooLong,
            _ => DurationErrorKind::Malformed,
        })?
    };
    if d > MAX_DURATION {
        return Err(DurationErrorKind::TooLong);
    }
    Ok(d)
}

/// Checks an open-model rate: finite and within [`MIN_RATE`]..=[`MAX_RATE`] requests/s. The
/// error is the reason, for the caller to prefix with the option's name.
pub fn check_rate(rate: f64) -> Result<(), String> {
    if rate.is_finite() && (MIN_RATE..=MAX_RATE).contains(&rate) {
        Ok(())
    } else {
        Err(format!(
            "must be from {MIN_RATE} to {MAX_RATE:e} requests/s, got {}",
            compact(rate)
        ))
    }
}

/// A number as a person would write it: `1e-300` rather than three hundred digits.
fn compact(x: f64) -> String {
    if x != 0.0 && x.is_finite() && !(1e-3..1e9).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        x.to_string()
    }
}

/// Checks a count against `1..=max`; the error is the reason, for the caller to prefix with
/// the option's name.
pub fn check_count(n: u64, max: u64) -> Result<(), String> {
    if n == 0 {
        Err("must be at least 1".into())
    } else if n > max {
        Err(format!("must be at most {max}, got {n}"))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_both_notations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration(" 1m30s "), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2e3"), Ok(Duration::from_secs(2000)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("100d"), Ok(MAX_DURATION));
        assert_eq!(parse_duration("8640000"), Ok(MAX_DURATION));
    }

    #[test]
    fn refuses_what_would_panic_later() {
        let kind = |s: &str| parse_duration(s).map_err(|e| e.kind);
        for s in ["-1", "-0", "-5s", " -1e300"] {
            assert_eq!(kind(s), Err(DurationErrorKind::Negative), "{s}");
        }
        for s in [
            "1e20",
            "1e19",
            "1.8e19",
            "8640000.001",
            "101d",
            "584942417355y",
            "99999999999999999999s",
        ] {
            assert_eq!(kind(s), Err(DurationErrorKind::TooLong), "{s}");
        }
        for s in ["NaN", "inf", "-inf", "", "soon", "5 parsecs", "1e20x"] {
            assert!(parse_duration(s).is_err(), "{s}");
        }
    }

    #[test]
    fn the_message_is_one_line_quoting_what_was_given() {
        let msg = |s: &str| parse_duration(s).unwrap_err().to_string();
        assert_eq!(
            msg(" 5 parsecs "),
            r#""5 parsecs" is not a duration (write e.g. "30s", "5m", "250ms")"#
        );
        assert_eq!(
            msg("1e20"),
            r#""1e20" is not a duration (durations are at most 100 days)"#
        );
        assert_eq!(
            msg("-1s"),
            r#""-1s" is not a duration (it must not be negative)"#
        );
        assert_eq!(
            msg("1s\nsoon"),
            r#""1s\nsoon" is not a duration (write e.g. "30s", "5m", "250ms")"#
        );
    }

    #[test]
    fn rates_and_counts() {
        assert!(check_rate(MIN_RATE).is_ok());
        assert!(check_rate(MAX_RATE).is_ok());
        for r in [0.0, -1.0, 1e-300, 1e12, f64::NAN, f64::INFINITY] {
            let e = check_rate(r).unwrap_err();
            assert!(e.contains("0.001") && e.contains("1e9"), "{r}: {e}");
            assert!(e.len() < 80, "the value is written compactly: {e}");
        }
        assert!(check_count(1, 5).is_ok());
        assert!(check_count(0, 5).unwrap_err().contains("at least 1"));
        assert!(check_count(6, 5).unwrap_err().contains("at most 5"));
    }
}
