//! Timestamps: ISO-8601 UTC with milliseconds and `Z` when Lethe writes; memento's early
//! `YYYY-MM-DD HH:MM:SS` (UTC) is accepted when reading.

use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};

use crate::error::{Error, Result};

/// A moment in UTC; the engine never reads the clock itself, callers pass `now`.
pub type Instant = DateTime<Utc>;

/// `t` as Lethe writes it: ISO-8601 UTC with milliseconds and `Z`.
pub fn format(t: Instant) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The exact form [`format`] writes (`2026-01-02T03:04:05.678Z`), read without the general
/// RFC 3339 parser: the scorer reads two timestamps per memory, a million at a time.
fn parse_canonical(s: &str) -> Option<Instant> {
    let b = s.as_bytes();
    if b.len() != 24 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if b[19] != b'.' || b[23] != b'Z' {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<u32> {
        b[from..to].iter().try_fold(0u32, |n, c| c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0')))
    };
    let date = chrono::NaiveDate::from_ymd_opt(num(0, 4)? as i32, num(5, 7)?, num(8, 10)?)?;
    let t = date.and_hms_milli_opt(num(11, 13)?, num(14, 16)?, num(17, 19)?, num(20, 23)?)?;
    Some(t.and_utc())
}

/// Parses any timestamp Lethe or memento may have written. Years outside 0000–9999 are
/// refused: ISO 8601 / RFC 3339 text (what [`format`] writes) has four year digits, so such an
/// instant could be stored but never read back.
pub fn parse(s: &str) -> Result<Instant> {
    let t = parse_any(s)?;
    if !(0..=9999).contains(&chrono::Datelike::year(&t)) {
        return Err(Error::invalid(format!("timestamp out of range (years 0000–9999): {:?}", s.trim())));
    }
    Ok(t)
}

fn parse_any(s: &str) -> Result<Instant> {
    if let Some(t) = parse_canonical(s) {
        return Ok(t);
    }
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    for fmt in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, fmt) {
            return Ok(t.and_utc());
        }
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).map(|t| t.and_utc()).unwrap_or_default());
    }
    Err(Error::invalid(format!("not an ISO-8601 timestamp: {s:?}")))
}

/// Parses a stored timestamp leniently: a malformed value reads as `None` instead of
/// failing a whole listing.
pub fn parse_opt(s: Option<&str>) -> Option<Instant> {
    s.and_then(|s| parse(s).ok())
}

/// Days between two instants as a real number (negative when `to` is before `from`).
pub fn days_between(from: Instant, to: Instant) -> f64 {
    (to - from).num_milliseconds() as f64 / 86_400_000.0
}

/// `t` plus `days` (fractional, to the millisecond).
pub fn add_days(t: Instant, days: f64) -> Instant {
    t + chrono::Duration::milliseconds((days * 86_400_000.0).round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_path_agrees_with_the_general_parser() {
        for s in [
            "2026-01-02T03:04:05.678Z",
            "1999-12-31T23:59:59.999Z",
            "2024-02-29T00:00:00.000Z",
            "2026-11-30T12:00:00.001Z",
        ] {
            let general = DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
            assert_eq!(parse_canonical(s), Some(general), "{s}");
        }
        // Not the canonical form, or not a real date: left to the general parser.
        for s in [
            "2026-02-30T00:00:00.000Z",
            "2026-01-02T03:04:05.678+00:00",
            "2026-01-02 03:04:05",
            "2026-0a-02T03:04:05.678Z",
            "2026-01-02T24:00:00.000Z",
        ] {
            assert_eq!(parse_canonical(s), None, "{s}");
        }
        assert!(parse("2026-02-30T00:00:00.000Z").is_err());
        assert_eq!(format(parse("2026-01-02T03:04:05.678+01:00").unwrap()), "2026-01-02T02:04:05.678Z");
    }

    #[test]
    fn reads_both_formats_and_writes_millis_z() {
        let a = parse("2026-01-02T03:04:05.678Z").unwrap();
        assert_eq!(format(a), "2026-01-02T03:04:05.678Z");
        let b = parse("2026-01-02 03:04:05").unwrap();
        assert_eq!(format(b), "2026-01-02T03:04:05.000Z", "memento 0.1 datetime('now') is UTC");
        assert!(parse("yesterday").is_err());
        // A year RFC 3339 cannot write is refused rather than stored unreadable.
        assert!(parse("-1-1-1").is_err());
        assert!(parse("+10000-01-01").is_err());
        assert_eq!(format(parse("0000-01-01").unwrap()), "0000-01-01T00:00:00.000Z");
    }

    #[test]
    fn reads_what_memento_writes() {
        // CURRENT_TIMESTAMP / datetime('now'), strftime('%Y-%m-%dT%H:%M:%fZ'), JavaScript's
        // toISOString(), offsets, and the same with a space or without fractions.
        for (raw, want) in [
            ("2025-01-02 03:04:05", "2025-01-02T03:04:05.000Z"),
            ("2025-01-02T03:04:05.678Z", "2025-01-02T03:04:05.678Z"),
            ("2025-01-02T03:04:05Z", "2025-01-02T03:04:05.000Z"),
            ("2025-01-02 03:04:05.678Z", "2025-01-02T03:04:05.678Z"),
            ("2025-01-02 03:04:05Z", "2025-01-02T03:04:05.000Z"),
            ("2025-01-02T12:04:05+09:00", "2025-01-02T03:04:05.000Z"),
            ("2025-01-02T03:04:05.678", "2025-01-02T03:04:05.678Z"),
            ("2025-01-02 03:04:05.678", "2025-01-02T03:04:05.678Z"),
            (" 2025-01-02 03:04:05 ", "2025-01-02T03:04:05.000Z"),
        ] {
            assert_eq!(parse(raw).map(format).ok().as_deref(), Some(want), "{raw:?}");
        }
    }

    #[test]
    fn days_between_is_fractional() {
        let a = parse("2026-01-01T00:00:00Z").unwrap();
        let b = parse("2026-01-01T12:00:00Z").unwrap();
        assert_eq!(days_between(a, b), 0.5);
    }
}
