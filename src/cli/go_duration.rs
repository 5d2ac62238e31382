//! `--request-timeout` as kubectl reads it: seconds, or a Go duration (`time.ParseDuration`).

use std::time::Duration;

/// Why `--request-timeout`'s value is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadRequestTimeout {
    #[error(
        "{text:?} is not a duration: want seconds (30), a Go duration (30s, 1m30s, 1h) or 0 for no limit"
    )]
    NotADuration { text: String },
    #[error("{text:?} is negative: 0 means no limit")]
    Negative { text: String },
    #[error("{text:?} is longer than a Go duration holds (about 290 years)")]
    TooLong { text: String },
}

/// `--request-timeout` as kubectl reads it (client-go `tools/clientcmd/helpers.go`,
/// `ParseTimeout`): a whole number is seconds, anything else a Go duration (`time.ParseDuration`:
/// `1h30m`, `1.5h`, `300ms`, units ns, us, µs, ms, s, m, h); zero means no limit. A negative
/// duration, which kubectl lets through as no limit, is refused: it is never meant.
pub fn parse_request_timeout(text: &str) -> Result<Duration, BadRequestTimeout> {
    if let Ok(seconds) = text.parse::<u64>() {
        return within_go_range(u128::from(seconds) * 1_000_000_000, text);
    }
    let not_a_duration = || BadRequestTimeout::NotADuration {
        text: text.to_string(),
    };
    let unsigned = text.strip_prefix('+').unwrap_or(text);
    if let Some(magnitude) = unsigned.strip_prefix('-') {
        // "-0s" is zero to Go; any other negative value is refused as negative.
        return match go_duration_nanos(magnitude) {
            Some(0) => Ok(Duration::ZERO),
            Some(_) => Err(BadRequestTimeout::Negative {
                text: text.to_string(),
            }),
            None => Err(not_a_duration()),
        };
    }
    within_go_range(
        go_duration_nanos(unsigned).ok_or_else(not_a_duration)?,
        text,
    )
}

/// Nanoseconds a Go duration can hold (`time.Duration` is an int64).
fn within_go_range(nanos: u128, text: &str) -> Result<Duration, BadRequestTimeout> {
    match u64::try_from(nanos) {
        Ok(n) if n <= i64::MAX.unsigned_abs() => Ok(Duration::from_nanos(n)),
        _ => Err(BadRequestTimeout::TooLong {
            text: text.to_string(),
        }),
    }
}

/// An unsigned Go duration (`0`, or `[0-9]*(.[0-9]*)?UNIT` repeated) in nanoseconds; `None`
/// when Go's `time.ParseDuration` refuses it. Fractions are truncated to the nanosecond, as Go's.
fn go_duration_nanos(text: &str) -> Option<u128> {
    match text {
        "" => return None,
        "0" => return Some(0),
        _ => {}
    }
    let mut rest = text;
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let whole_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (whole, after) = rest.split_at(whole_end);
        let (fraction, after) = match after.strip_prefix('.') {
            Some(after) => {
                let end = after
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(after.len());
                after.split_at(end)
            }
            None => ("", after),
        };
        if whole.is_empty() && fraction.is_empty() {
            return None;
        }
        let unit_end = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_end);
        let per_unit: u128 = match unit {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        // Too many digits for a u128 is too long for Go as well: saturate, refused as too long.
        let whole: u128 = match whole.is_empty() {
            true => 0,
            false => whole.parse().unwrap_or(u128::MAX),
        };
        // Digits past the nineteenth are below a nanosecond of any unit.
        let fraction = fraction.get(..fraction.len().min(19)).unwrap_or_default();
        let scale = 10u128.pow(u32::try_from(fraction.len()).ok()?);
        let fraction: u128 = match fraction.is_empty() {
            true => 0,
            false => fraction.parse().ok()?,
        };
        total = total
            .saturating_add(whole.saturating_mul(per_unit))
            .saturating_add(fraction * per_unit / scale);
        rest = after;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kubectl's forms (client-go `ParseTimeout`, Go's `time.ParseDuration`).
    #[test]
    fn request_timeouts_are_read_as_kubectl_reads_them() {
        let ok = |text: &str| parse_request_timeout(text).map_err(|e| e.to_string());
        assert_eq!(ok("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(ok("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(ok("0"), Ok(Duration::ZERO));
        assert_eq!(ok("0s"), Ok(Duration::ZERO));
        assert_eq!(ok("45"), Ok(Duration::from_secs(45)));
        assert_eq!(ok("+45"), Ok(Duration::from_secs(45)));
        assert_eq!(ok("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(ok(".5s"), Ok(Duration::from_millis(500)));
        assert_eq!(ok("300ms"), Ok(Duration::from_millis(300)));
        assert_eq!(ok("2us"), Ok(Duration::from_micros(2)));
        assert_eq!(ok("2\u{b5}s"), Ok(Duration::from_micros(2)));
        assert_eq!(ok("1h2m3s4ms5us6ns"), Ok(Duration::new(3723, 4_005_006)));
        assert_eq!(ok("-0s"), Ok(Duration::ZERO));
        assert_eq!(
            parse_request_timeout("2562047h47m16.854775807s"),
            Ok(Duration::from_nanos(i64::MAX.unsigned_abs()))
        );
        for refused in [
            "", "s", "1x", "1d", "1.s5", ".s", "1 s", "fast", "1h-2m", "1.2.3s",
        ] {
            assert!(
                matches!(
                    parse_request_timeout(refused),
                    Err(BadRequestTimeout::NotADuration { .. })
                ),
                "{refused:?}"
            );
        }
        assert!(matches!(
            parse_request_timeout("-5s"),
            Err(BadRequestTimeout::Negative { .. })
        ));
        for too_long in [
            "2562048h",
            "9223372037",
            "99999999999999999999999999999999999999999h",
        ] {
            assert!(
                matches!(
                    parse_request_timeout(too_long),
                    Err(BadRequestTimeout::TooLong { .. })
                ),
                "{too_long}"
            );
        }
    }
}
