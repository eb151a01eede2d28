//! Timestamps: ISO-8601 UTC with milliseconds and `Z` when Lethe writes; memento's early
//! `YYYY-MM-DD HH:MM:SS` (UTC) is accepted when reading.

use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};

use crate::error::{Error, Result};

pub type Instant = DateTime<Utc>;

pub fn format(t: Instant) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parses any timestamp Lethe or memento may have written.
pub fn parse(s: &str) -> Result<Instant> {
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

pub fn add_days(t: Instant, days: f64) -> Instant {
    t + chrono::Duration::milliseconds((days * 86_400_000.0).round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_formats_and_writes_millis_z() {
        let a = parse("2026-01-02T03:04:05.678Z").unwrap();
        assert_eq!(format(a), "2026-01-02T03:04:05.678Z");
        let b = parse("2026-01-02 03:04:05").unwrap();
        assert_eq!(format(b), "2026-01-02T03:04:05.000Z", "memento 0.1 datetime('now') is UTC");
        assert!(parse("yesterday").is_err());
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
