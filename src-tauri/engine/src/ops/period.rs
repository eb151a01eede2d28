//! The periods a recall query names: "in July 2022", "on 3 August, 2023", "May 9th 2023",
//! "2023-08-03", "in 2024", "the week before 16 November 2023", "yesterday", "last week",
//! "last Friday", "3 days ago". Recall ranks a memory dated inside such a period as a match of the caller's
//! context, and counts its recency from the period instead of from now (docs/recall.md), so that
//! "what did we decide in March?" finds March's memories however old they are.
//!
//! Only explicit forms are read; anything else ("recently", "after the launch", "4 years ago",
//! which dates an event rather than its writing down) names no period and leaves recall as it
//! was. Relative words count from the first date the query names ("last week, as mentioned
//! on 6 November 2023"), else from now. Days are UTC days, as `created_at` is stored.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::sync::LazyLock;

use chrono::{Datelike, Duration, NaiveDate};
use regex::{Captures, Regex};
use serde::Serialize;

use crate::time::{self, Instant};

/// A period a query names: from `from` (inclusive) to `until` (exclusive).
#[derive(Debug, Clone, PartialEq)]
pub struct Period {
    /// The query's words that name it, as written.
    pub said: String,
    pub from: Instant,
    pub until: Instant,
}

/// A [`Period`] as `recall --explain` and the window show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct NamedPeriod {
    pub said: String,
    /// ISO-8601, inclusive.
    pub from: String,
    /// ISO-8601, exclusive.
    pub until: String,
}

impl Period {
    pub fn view(&self) -> NamedPeriod {
        NamedPeriod { said: self.said.clone(), from: time::format(self.from), until: time::format(self.until) }
    }

    /// Days from `t` to the period (0 inside it).
    pub fn days_away(&self, t: Instant) -> f64 {
        if t < self.from {
            time::days_between(t, self.from)
        } else if t >= self.until {
            time::days_between(self.until, t)
        } else {
            0.0
        }
    }
}

/// Days from `t` to the nearest of `periods` (0 inside one); None without periods.
pub fn days_away(periods: &[Period], t: Instant) -> Option<f64> {
    periods.iter().map(|p| p.days_away(t)).min_by(f64::total_cmp)
}

const MONTH: &str = r"(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?";
const BEFORE: &str = r"(?:(?:the\s+)?(day|week|weekend|month)\s+(before|after|of)\s+)?";

static DAY_FIRST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"(?i)\b{BEFORE}(?:on\s+)?(\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+{MONTH},?\s+(\d{{4}})\b"))
        .expect("valid regex")
});
static MONTH_FIRST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"(?i)\b{BEFORE}(?:on\s+)?{MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b"))
        .expect("valid regex")
});
static ISO_DAY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!(r"(?i)\b{BEFORE}(\d{{4}})-(\d{{2}})-(\d{{2}})\b")).expect("valid regex"));
static MONTH_YEAR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!(r"(?i)\b{MONTH},?\s+(?:of\s+)?(\d{{4}})\b")).expect("valid regex"));
/// A year alone only after a word that makes it a time ("in 2023", "during 2024"): a bare
/// number such as "error 2003" or "port 2000" is not a year.
static YEAR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:in|during|throughout|early|late|mid|of|year)[\s-]+(19\d\d|20\d\d)\b").expect("valid regex")
});
/// A season of a year, northern-hemisphere months; winter takes in both readings (the winter
/// that starts in December of the year before, and the one that ends in the year after).
static SEASON: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(spring|summer|autumn|fall|winter)\s+(?:of\s+)?(19\d\d|20\d\d)\b").expect("valid regex")
});
static RELATIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(today|yesterday|(?:last|this|past|previous)\s+(?:week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|(\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten)\s+(days?|weeks?|months?)\s+ago)\b",
    )
    .expect("valid regex")
});

fn month_number(name: &str) -> Option<u32> {
    let m = name.trim_end_matches('.').to_ascii_lowercase();
    let i = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        .iter()
        .position(|p| m.starts_with(p))?;
    Some(i as u32 + 1)
}

fn start(d: NaiveDate) -> Instant {
    d.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc()
}

fn days(from: NaiveDate, until: NaiveDate) -> (Instant, Instant) {
    (start(from), start(until))
}

fn year_of(y: i32) -> Option<(Instant, Instant)> {
    Some(days(NaiveDate::from_ymd_opt(y, 1, 1)?, NaiveDate::from_ymd_opt(y + 1, 1, 1)?))
}

/// The Monday of `day`'s week (weeks run Monday to Sunday).
fn monday_of(day: NaiveDate) -> NaiveDate {
    day - Duration::days(i64::from(day.weekday().num_days_from_monday()))
}

fn month_of(y: i32, m: u32) -> Option<(NaiveDate, NaiveDate)> {
    let first = NaiveDate::from_ymd_opt(y, m, 1)?;
    let next = if m == 12 { NaiveDate::from_ymd_opt(y + 1, 1, 1)? } else { NaiveDate::from_ymd_opt(y, m + 1, 1)? };
    Some((first, next))
}

/// A day, widened by the words before it: "the week before" = the seven days before it and
/// the day itself, "the weekend before" = the three days before it, "the day before" = the
/// day before, "the month before" = the 31 days before it and the day; "after" mirrors them;
/// "the week of" = the day and six after.
fn around(day: NaiveDate, unit: Option<&str>, side: Option<&str>) -> (Instant, Instant) {
    let next = day + Duration::days(1);
    let span = match unit.map(str::to_ascii_lowercase).as_deref() {
        Some("day") => 1,
        Some("weekend") => 3,
        Some("month") => 31,
        Some(_) => 7,
        None => return days(day, next),
    };
    match side.map(str::to_ascii_lowercase).as_deref() {
        Some("before") if span == 1 => days(day - Duration::days(1), day),
        Some("before") => days(day - Duration::days(span), next),
        Some("after") if span == 1 => days(next, next + Duration::days(1)),
        Some("after") => days(day, next + Duration::days(span)),
        _ => days(day, day + Duration::days(span)),
    }
}

fn weekday(word: &str) -> Option<chrono::Weekday> {
    word.parse().ok()
}

fn number(word: &str) -> Option<i64> {
    let w = word.to_ascii_lowercase();
    let words = ["a", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"];
    if w == "an" {
        return Some(1);
    }
    match words.iter().position(|x| *x == w) {
        Some(0) => Some(1),
        Some(i) => Some(i as i64),
        None => w.parse().ok(),
    }
}

fn push(
    found: &mut Vec<(usize, Period)>,
    taken: &mut Vec<(usize, usize)>,
    m: regex::Match<'_>,
    span: (Instant, Instant),
) {
    taken.push((m.start(), m.end()));
    found.push((m.start(), Period { said: m.as_str().trim().to_string(), from: span.0, until: span.1 }));
}

/// The span of a day pattern's match from its year, month and day, widened by the words
/// before it (groups 1 and 2); None when there is no such day.
fn day_span(c: &Captures, (y, m, d): (Option<i32>, Option<u32>, Option<u32>)) -> Option<(Instant, Instant)> {
    let day = NaiveDate::from_ymd_opt(y?, m?, d?)?;
    Some(around(day, c.get(1).map(|x| x.as_str()), c.get(2).map(|x| x.as_str())))
}

/// Reads the span a match of an absolute form names (None: no such day).
type SpanOf = dyn Fn(&Captures) -> Option<(Instant, Instant)>;

/// Whether `text` holds four digits 1900–2099 standing alone, which every absolute form has.
fn has_year(text: &str) -> bool {
    let b = text.as_bytes();
    b.windows(4).enumerate().any(|(i, w)| {
        w.iter().all(u8::is_ascii_digit)
            && matches!(&w[..2], b"19" | b"20")
            && (i == 0 || !b[i - 1].is_ascii_digit())
            && b.get(i + 4).is_none_or(|c| !c.is_ascii_digit())
    })
}

/// The periods `text` names, in the order written. "yesterday", "last week", "3 days ago"
/// count from the first date `text` names, else from `now`. A date that does not exist
/// ("31 February 2023") names nothing.
pub fn named(text: &str, now: Instant) -> Vec<Period> {
    let mut found: Vec<(usize, Period)> = Vec::new();
    // Every recall asks: most queries hold neither a year nor a relative word, and then no
    // pattern is run (all of them together cost ~3 % of a recall at 10k memories).
    let year = has_year(text);
    let relative = has_relative_word(text);
    if !year && !relative {
        return Vec::new();
    }
    // Spans already read as a day or a month, so that their month and year are not read again.
    let mut taken: Vec<(usize, usize)> = Vec::new();
    if year {
        absolute(text, &mut found, &mut taken);
    }
    // Relative words count from the first day the query names, if it names one ("last week,
    // as mentioned on 6 November 2023"), else from now.
    let today = found
        .iter()
        .min_by_key(|(at, _)| *at)
        .map(|(_, p)| (p.until - Duration::days(1)).date_naive())
        .unwrap_or_else(|| now.date_naive());
    for c in RELATIVE.captures_iter(if relative { text } else { "" }) {
        let whole = c.get(0).expect("match");
        let said = whole.as_str().to_ascii_lowercase();
        let said: Vec<&str> = said.split_whitespace().collect();
        if let Some(span) = relative_span(&said, today) {
            push(&mut found, &mut taken, whole, span);
        }
    }
    found.sort_by_key(|(at, _)| *at);
    found.into_iter().map(|(_, p)| p).collect()
}

/// Whether `text` holds a word a relative time needs ("yesterday", "week", "ago", a weekday).
fn has_relative_word(text: &str) -> bool {
    const RELATIVE_WORDS: [&str; 13] = [
        "today",
        "yesterday",
        "week",
        "month",
        "year",
        "ago",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ];
    text.split(|c: char| !c.is_ascii_alphabetic())
        .any(|w| (3..=9).contains(&w.len()) && RELATIVE_WORDS.iter().any(|r| w.eq_ignore_ascii_case(r)))
}

/// The days, months, seasons and years `text` names, in the form order (a day before the month
/// and year in it); each match's span goes into `taken`.
fn absolute(text: &str, found: &mut Vec<(usize, Period)>, taken: &mut Vec<(usize, usize)>) {
    let free = |taken: &[(usize, usize)], s: usize, e: usize| taken.iter().all(|&(a, b)| e <= a || s >= b);
    // Each absolute form reads its span from a match; a match that names no real time ("31
    // February 2023") is still taken, so that its month and year are not read on their own.
    let day_first = |c: &Captures| day_span(c, (c[5].parse().ok(), month_number(&c[4]), c[3].parse().ok()));
    let month_first = |c: &Captures| day_span(c, (c[5].parse().ok(), month_number(&c[3]), c[4].parse().ok()));
    let iso = |c: &Captures| day_span(c, (c[3].parse().ok(), c[4].parse().ok(), c[5].parse().ok()));
    let month = |c: &Captures| month_of(c[2].parse().ok()?, month_number(&c[1])?).map(|(a, b)| days(a, b));
    let season = |c: &Captures| {
        let y: i32 = c[2].parse().ok()?;
        let (a, b) = match c[1].to_ascii_lowercase().as_str() {
            "spring" => ((y, 3), (y, 6)),
            "summer" => ((y, 6), (y, 9)),
            "winter" => ((y - 1, 12), (y + 1, 3)),
            _ => ((y, 9), (y, 12)),
        };
        Some(days(NaiveDate::from_ymd_opt(a.0, a.1, 1)?, NaiveDate::from_ymd_opt(b.0, b.1, 1)?))
    };
    let in_year = |c: &Captures| year_of(c[1].parse().ok()?);
    let forms: [(&Regex, &SpanOf); 6] = [
        (&DAY_FIRST, &day_first),
        (&MONTH_FIRST, &month_first),
        (&ISO_DAY, &iso),
        (&MONTH_YEAR, &month),
        (&SEASON, &season),
        (&YEAR, &in_year),
    ];
    for (pattern, span_of) in forms {
        for c in pattern.captures_iter(text) {
            let whole = c.get(0).expect("match");
            if !free(taken, whole.start(), whole.end()) {
                continue;
            }
            match span_of(&c) {
                Some(span) => push(found, taken, whole, span),
                None => taken.push((whole.start(), whole.end())),
            }
        }
    }
}

/// The days a relative phrase (lower case, split on white space) names, counted from `today`.
fn relative_span(said: &[&str], today: NaiveDate) -> Option<(Instant, Instant)> {
    match said {
        ["today"] => Some(days(today, today + Duration::days(1))),
        ["yesterday"] => Some(days(today - Duration::days(1), today)),
        ["this", "week"] => Some(days(monday_of(today), today + Duration::days(1))),
        ["past", unit @ ("week" | "month" | "year")] => {
            let back = match *unit {
                "week" => 7,
                "month" => 30,
                _ => 365,
            };
            Some(days(today - Duration::days(back), today + Duration::days(1)))
        }
        [_, "week"] => Some(days(monday_of(today) - Duration::days(7), monday_of(today))),
        ["this", "month"] => month_of(today.year(), today.month()).map(|(a, b)| days(a, b)),
        [_, "month"] => {
            let (y, m) = if today.month() == 1 { (today.year() - 1, 12) } else { (today.year(), today.month() - 1) };
            month_of(y, m).map(|(a, b)| days(a, b))
        }
        ["this", "year"] => year_of(today.year()),
        [_, "year"] => year_of(today.year() - 1),
        ["last" | "previous", day] if weekday(day).is_some() => {
            // The latest such day before today.
            let want = weekday(day).expect("a weekday");
            let back = (i64::from(today.weekday().num_days_from_monday()) - i64::from(want.num_days_from_monday()))
                .rem_euclid(7);
            let day = today - Duration::days(if back == 0 { 7 } else { back });
            Some(days(day, day + Duration::days(1)))
        }
        ["this", day] if weekday(day).is_some() => {
            // This week's (Monday to Sunday) such day.
            let want = weekday(day).expect("a weekday");
            let day = monday_of(today) + Duration::days(i64::from(want.num_days_from_monday()));
            Some(days(day, day + Duration::days(1)))
        }
        [n, unit, "ago"] => number(n).filter(|n| (1..=400).contains(n)).map(|n| {
            let (back, half) = match unit.trim_end_matches('s') {
                "day" => (n, 0),
                "week" => (7 * n, 3),
                _ => (30 * n, 15),
            };
            let day = today - Duration::days(back);
            days(day - Duration::days(half), day + Duration::days(half + 1))
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Instant {
        time::parse("2026-03-18T15:00:00.000Z").unwrap() // a Wednesday
    }

    fn spans(text: &str) -> Vec<(String, String, String)> {
        named(text, now())
            .into_iter()
            .map(|p| (p.said, time::format(p.from)[..10].to_string(), time::format(p.until)[..10].to_string()))
            .collect()
    }

    fn one(said: &str, from: &str, until: &str) -> Vec<(String, String, String)> {
        vec![(said.to_string(), from.to_string(), until.to_string())]
    }

    #[test]
    fn days_in_every_written_order() {
        assert_eq!(
            spans("What did Tim say on 16 November, 2023?"),
            one("on 16 November, 2023", "2023-11-16", "2023-11-17")
        );
        assert_eq!(spans("the 3rd of Aug 2023"), one("3rd of Aug 2023", "2023-08-03", "2023-08-04"));
        assert_eq!(spans("on February 7, 2022 he"), one("on February 7, 2022", "2022-02-07", "2022-02-08"));
        assert_eq!(spans("May 9th 2023"), one("May 9th 2023", "2023-05-09", "2023-05-10"));
        assert_eq!(spans("deploy of 2024-02-29"), one("2024-02-29", "2024-02-29", "2024-03-01"));
    }

    #[test]
    fn months_and_years() {
        assert_eq!(spans("in July 2022?"), one("July 2022", "2022-07-01", "2022-08-01"));
        assert_eq!(spans("December of 2023"), one("December of 2023", "2023-12-01", "2024-01-01"));
        assert_eq!(spans("recently in 2024"), one("in 2024", "2024-01-01", "2025-01-01"));
        assert_eq!(spans("the beach in summer 2021"), one("summer 2021", "2021-06-01", "2021-09-01"));
        assert_eq!(spans("fall of 2023"), one("fall of 2023", "2023-09-01", "2023-12-01"));
    }

    #[test]
    fn words_before_a_day_widen_it() {
        assert_eq!(
            spans("Where was Tim in the week before 16 November 2023?"),
            one("the week before 16 November 2023", "2023-11-09", "2023-11-17")
        );
        assert_eq!(
            spans("the day before 3 March 2024"),
            one("the day before 3 March 2024", "2024-03-02", "2024-03-03")
        );
        assert_eq!(
            spans("the weekend before May 20, 2023"),
            one("the weekend before May 20, 2023", "2023-05-17", "2023-05-21")
        );
        assert_eq!(spans("the week of 2023-01-02"), one("the week of 2023-01-02", "2023-01-02", "2023-01-09"));
    }

    #[test]
    fn relative_to_now() {
        assert_eq!(spans("what broke yesterday"), one("yesterday", "2026-03-17", "2026-03-18"));
        assert_eq!(spans("notes from last week"), one("last week", "2026-03-09", "2026-03-16"));
        assert_eq!(spans("this week"), one("this week", "2026-03-16", "2026-03-19"));
        assert_eq!(spans("last month's incidents"), one("last month", "2026-02-01", "2026-03-01"));
        assert_eq!(spans("3 days ago"), one("3 days ago", "2026-03-15", "2026-03-16"));
        assert_eq!(spans("two weeks ago"), one("two weeks ago", "2026-03-01", "2026-03-08"));
        assert_eq!(spans("last year"), one("last year", "2025-01-01", "2026-01-01"));
        assert_eq!(spans("in the past week"), one("past week", "2026-03-11", "2026-03-19"));
        assert_eq!(spans("what did we ship last Friday"), one("last Friday", "2026-03-13", "2026-03-14"));
        assert_eq!(spans("last wednesday"), one("last wednesday", "2026-03-11", "2026-03-12"));
        assert_eq!(spans("this Monday"), one("this Monday", "2026-03-16", "2026-03-17"));
        assert!(spans("4 years ago").is_empty(), "an event's age, not when it was written down");
    }

    #[test]
    fn relative_words_count_from_the_day_the_query_names() {
        assert_eq!(
            spans("What did Joanna finish last Friday on 23 January, 2022?"),
            vec![
                ("last Friday".to_string(), "2022-01-21".to_string(), "2022-01-22".to_string()),
                ("on 23 January, 2022".to_string(), "2022-01-23".to_string(), "2022-01-24".to_string()),
            ]
        );
        assert_eq!(
            spans("Tim's writing issue last week, as mentioned on November 6, 2023")[0],
            ("last week".to_string(), "2023-10-30".to_string(), "2023-11-06".to_string())
        );
    }

    #[test]
    fn nothing_else_names_a_period() {
        for q in [
            "roll back a failed deploy",
            "may I deploy on friday",
            "what happened recently",
            "port 8080 and 443",
            "what causes error 2003 on port 2000",
            "the 2024 roadmap",
            "31 February 2023",
            "version 12345 of the api",
            "",
        ] {
            assert!(named(q, now()).is_empty(), "{q:?} named {:?}", named(q, now()));
        }
    }

    #[test]
    fn several_periods_in_the_order_written_and_the_nearest_counts() {
        let p = named("between March 2023 and 2024-06-01", now());
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].said, "March 2023");
        assert_eq!(p[1].said, "2024-06-01");
        let inside = time::parse("2023-03-10T08:00:00.000Z").unwrap();
        assert_eq!(days_away(&p, inside), Some(0.0));
        let after = time::parse("2024-06-04T00:00:00.000Z").unwrap();
        assert_eq!(days_away(&p, after), Some(2.0));
        assert_eq!(days_away(&[], after), None);
    }
}
