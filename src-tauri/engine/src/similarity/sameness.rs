//! Whether two memories are the same memory: a **duplicate** (near-copy or true
//! paraphrase, the only judgment duplication D counts), a **possible update** (the same
//! statement with another value: "retry limit 3" / "retry limit 5") or merely **related**
//! (close in meaning or topic), with the evidence for it: the words and values both share and
//! those that differ, as plain text.
//!
//! Agent memories are templated, so closeness alone (word overlap, the embedding's cosine)
//! cannot tell a copy from a sibling: "build 41 passed on ci-7" and "build 43 failed on ci-2"
//! are as close as two texts get. The judgment therefore looks for what makes two memories
//! different, after normalising what only differs in its writing:
//!
//! - **values**: tokens holding a digit, hashes, paths, hosts, e-mail addresses, `#channels`
//!   and quoted strings. Dates written two ways ("2024-03-12", "March 12, 2024", "12 Mar
//!   2024"), numbers in words ("twelve", "five hundred"), thousands separators and currency
//!   signs are written one way first; case never matters. A value on one side only is a
//!   difference.
//! - **polarity**: a negation on one side only ("not", "never", "without", "instead of", …)
//!   or a word opposite to one on the other side (a general list of antonyms, and `un-`,
//!   `in-`, `dis-`, `non-` prefixes: "enabled" / "disabled", "passed" / "failed").
//! - **swapped words**: when the two texts are one template (most of their words in the
//!   same order), a word replaced by another ("chat transcripts" / "support emails").
//!   A word one letter apart (a typo, "authorised" / "authorized") is the same word.
//!
//! Two memories without a difference are duplicates when they are close enough
//! ([`DUPLICATE_AT`]); closeness is the larger of the word-bigram Jaccard and the cosine
//! mapped onto [0, 1], raised a little by each value both share (the same ids and numbers are
//! strong evidence of the same fact). Measured on labelled pairs in BENCHMARKS.md.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::collections::BTreeSet;
use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

/// Closeness at which two memories without a difference are the same memory.
pub const DUPLICATE_AT: f64 = 0.7;
/// The cosine of the sentence model mapped onto closeness: unrelated texts of potion-base-8M
/// sit below 0.4, texts about one subject around 0.5–0.7, paraphrases at 0.75–0.95.
pub const COSINE_FLOOR: f64 = 0.40;
pub const COSINE_FULL: f64 = 0.90;
/// What each value both memories hold adds to their closeness, and how many count.
pub const SHARED_VALUE_BONUS: f64 = 0.1;
pub const SHARED_VALUES_COUNTED: usize = 2;
/// Share of the two texts' words that are in one order (2·matched / total) from which they are
/// one template, where a replaced word is a changed value.
pub const ONE_TEMPLATE_AT: f64 = 0.6;
/// Words compared in order at most (longer texts are compared on their beginning).
const ORDER_WORDS: usize = 400;

/// What two memories are to each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum Kind {
    #[serde(rename = "duplicate")]
    Duplicate,
    #[serde(rename = "possible update")]
    PossibleUpdate,
    #[serde(rename = "related")]
    Related,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Duplicate => "duplicate",
            Kind::PossibleUpdate => "possible update",
            Kind::Related => "related",
        }
    }
}

/// One difference between two memories: what the first says and what the second says in its
/// place (empty when it says nothing there), and of what sort.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Difference {
    /// "value", "polarity" or "wording".
    pub what: String,
    /// What this memory says there (may be empty).
    pub this: String,
    /// What the other says there (may be empty).
    pub other: String,
}

/// Why two memories are judged as they are, in plain text.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Evidence {
    /// Values and content words both hold (at most [`EVIDENCE_WORDS`]).
    pub matching: Vec<String>,
    /// What differs.
    pub differing: Vec<Difference>,
    /// Both in one line for people: "same: a, b; differs: 5 → 3".
    pub summary: String,
}

/// Matching words listed at most.
pub const EVIDENCE_WORDS: usize = 12;

impl Evidence {
    fn new(matching: Vec<String>, differing: Vec<Difference>) -> Evidence {
        let mut e = Evidence { matching, differing, summary: String::new() };
        e.summary = e.line();
        e
    }

    fn line(&self) -> String {
        let mut out = String::new();
        if !self.matching.is_empty() {
            out.push_str("same: ");
            out.push_str(&self.matching.join(", "));
        }
        if !self.differing.is_empty() {
            if !out.is_empty() {
                out.push_str("; ");
            }
            out.push_str("differs: ");
            let parts: Vec<String> = self
                .differing
                .iter()
                .map(|d| {
                    let side = |s: &str| if s.is_empty() { "(nothing)".to_string() } else { s.to_string() };
                    format!("{} → {}", side(&d.this), side(&d.other))
                })
                .collect();
            out.push_str(&parts.join(", "));
        }
        out
    }
}

/// The judgment of a pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judgment {
    pub kind: Kind,
    /// How close the two are, in [0, 1] (the similarity shown).
    pub closeness: f64,
    pub evidence: Evidence,
}

impl Judgment {
    /// What the pair adds to duplication D: its closeness when a duplicate, else nothing.
    pub fn duplication(&self) -> f64 {
        if self.kind == Kind::Duplicate {
            self.closeness
        } else {
            0.0
        }
    }
}

/// A token of a memory: its form for comparison, its form for people, and whether it is a value.
#[derive(Debug, Clone)]
struct Token {
    key: String,
    shown: String,
    value: bool,
}

/// What the judgment reads of one memory, computed once per text.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    tokens: Vec<Token>,
    /// Each token's form for comparison (words stemmed), in order.
    keys: Vec<String>,
    /// What the word-order table needs of each key, in the same order.
    marks: Vec<Mark>,
    /// Its values, sorted, each once.
    values: Vec<String>,
    /// A hash of `values`: two profiles whose hashes differ hold different values.
    values_hash: u64,
    /// Its words (the tokens that are not values, unstemmed), sorted, each once.
    words: Vec<String>,
    /// Bit `l` set when a word of `l` bytes is among them (bit 63: 63 or more).
    word_lengths: u64,
    /// Bit `l` set when two adjacent words spell `l` bytes together (bit 63: 63 or more).
    pair_lengths: u64,
    /// The hash ([`fnv`]) of each of `words`, in the same order.
    word_hash_of: Vec<u64>,
    /// The same hashes, sorted, each once.
    word_hashes: Vec<u64>,
    /// Each of `words` as (its hash, its position), sorted: a word is looked up by its hash,
    /// then compared with the few words of that hash only.
    word_at: Vec<(u64, u32)>,
    /// The hashes of what two adjacent words spell together, sorted, each once: a pair can
    /// spell a word of another text only if its hash is among that text's `word_hashes`.
    pair_hashes: Vec<u64>,
    /// Per token: a content word (not a value, a stop word or a negation), the tokens a swapped
    /// word is looked for among.
    loose: Vec<bool>,
    /// Each of `keys` as (its hash, its position), sorted: the keys equal to another text's
    /// key are among those of its hash.
    key_at: Vec<(u64, u32)>,
    /// The positions of the keys that may be one typo apart from another (`Mark::typo`), in
    /// order.
    typo_at: Vec<u32>,
    negated: bool,
}

/// FNV-1a of `bytes`, continued from `hash` (so that the hash of two words written together
/// is the second continued from the first's).
fn fnv(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// FNV-1a's starting value.
const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// A key as the word-order table compares it: two keys are the same word when their hashes and
/// then their bytes are equal, or (only when both may be) when they are one typo apart.
#[derive(Debug, Clone, Copy, Default)]
struct Mark {
    hash: u64,
    len: usize,
    ascii: bool,
    /// Five bytes or more and no digit: what [`one_apart`] needs to find two different words
    /// one typo apart.
    typo: bool,
    /// The bytes the key holds, each as bit `byte % 64`. One typo (a letter changed, dropped or
    /// swapped with the next) adds at most one byte to a word and takes at most one away, so
    /// two ASCII words whose sets differ in more than two bits are not one typo apart.
    bytes: u64,
}

impl Mark {
    fn of(key: &str) -> Mark {
        Mark {
            hash: fnv(FNV_START, key.as_bytes()),
            len: key.len(),
            ascii: key.is_ascii(),
            typo: key.len() >= 5 && !key.bytes().any(|c| c.is_ascii_digit()),
            bytes: key.bytes().fold(0, |m, b| m | 1 << (b % 64)),
        }
    }
}

/// How `w` orders against `p` followed by `q` (as `str`s order, byte by byte).
fn cmp_joined(w: &str, p: &str, q: &str) -> std::cmp::Ordering {
    let (w, p, q) = (w.as_bytes(), p.as_bytes(), q.as_bytes());
    let k = w.len().min(p.len());
    match w[..k].cmp(&p[..k]) {
        std::cmp::Ordering::Equal if w.len() < p.len() => std::cmp::Ordering::Less,
        std::cmp::Ordering::Equal => w[p.len()..].cmp(q),
        other => other,
    }
}

/// Whether key `i` of `a` and key `j` of `b` are one word: the same, or one letter apart without
/// being opposites. The cheap tests go first: equal hashes before equal bytes, and the typo
/// test only for words that could be one typo apart (five bytes or more, no digit, lengths at
/// most a letter apart).
fn same_at(a: &Profile, i: usize, b: &Profile, j: usize) -> bool {
    let (x, mx) = (a.keys[i].as_str(), a.marks[i]);
    let (y, my) = (b.keys[j].as_str(), b.marks[j]);
    if mx.hash == my.hash && x == y {
        return true;
    }
    mx.typo && my.typo && one_typo_apart(x, mx, y, my)
}

/// [`same_at`]'s second way for two keys that may be one typo apart (`Mark::typo` on both):
/// one letter apart without being opposites (equal keys are [`same_at`]'s first way).
fn one_typo_apart(x: &str, mx: Mark, y: &str, my: Mark) -> bool {
    let apart = if mx.ascii && my.ascii {
        mx.len.abs_diff(my.len) <= 1
            && (mx.bytes ^ my.bytes).count_ones() <= 2
            && apart_by_one(x.as_bytes(), y.as_bytes(), |_| false)
    } else {
        one_apart(x, y)
    };
    apart && !opposite(x, y)
}

/// Bit `len` of a length mask (63 for every length from 63 on).
fn length_bit(len: usize) -> u64 {
    1 << len.min(63)
}

fn month(name: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let n = name.to_lowercase();
    let n = n.trim_end_matches('.');
    if n == "sept" {
        return Some(9);
    }
    MONTHS.iter().position(|m| *m == n || (n.len() == 3 && m.starts_with(n))).map(|i| i as u32 + 1)
}

const MONTH_RE: &str = "(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)";

struct Patterns {
    thousands: Regex,
    list_marker: Regex,
    month_day_year: Regex,
    day_month_year: Regex,
    slash_date: Regex,
    month_day: Regex,
    day_month: Regex,
    currency: Regex,
    token: Regex,
    host: Regex,
    split: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let re = |s: &str| Regex::new(s).expect("a valid pattern");
        Patterns {
            thousands: re(r"(\d),(\d{3})\b"),
            // "1) pause …, 2) run …": the numbers of a list, not values.
            list_marker: re(r"(^|[\s:;,(])\d{1,2}\)(\s)"),
            month_day_year: re(&format!(r"(?i)\b{MONTH_RE}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b")),
            day_month_year: re(&format!(r"(?i)\b(\d{{1,2}})(?:st|nd|rd|th)?\s+{MONTH_RE}\.?,?\s+(\d{{4}})\b")),
            slash_date: re(r"\b(\d{4})/(\d{1,2})/(\d{1,2})\b"),
            month_day: re(&format!(r"(?i)\b{MONTH_RE}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b")),
            day_month: re(&format!(r"(?i)\b(\d{{1,2}})(?:st|nd|rd|th)?\s+{MONTH_RE}\b")),
            currency: re(r"([$€£])\s?(\d[\d.]*)"),
            token: re(
                r"[\p{L}\p{N}][\p{L}\p{N}_.:/@#%+=\-]*[\p{L}\p{N}%/]|[\p{L}\p{N}%]|[#@/][\p{L}\p{N}][\p{L}\p{N}_./\-]*",
            ),
            host: re(r"^[a-z][a-z0-9-]*(\.[a-z0-9-]+)*\.[a-z]{2,6}$"),
            split: re(r"[-_./:+=]+"),
        }
    })
}

/// Writes one way what can be written several: dates, thousands separators, currency signs,
/// contractions, list numbers.
fn normalise(text: &str) -> String {
    let p = patterns();
    let t = text.replace(['’', '‘'], "'");
    // Every form below holds a digit: a text without one skips eight passes.
    if !t.bytes().any(|b| b.is_ascii_digit()) {
        return contractions(t.to_lowercase());
    }
    // Each pass only where its form can be (a cheap look for its characters first).
    let t = if t.contains(')') { p.list_marker.replace_all(&t, "$1$2").into_owned() } else { t };
    let t = if t.contains(',') {
        p.thousands.replace_all(&p.thousands.replace_all(&t, "$1$2"), "$1$2").into_owned()
    } else {
        t
    };
    let lower = t.to_ascii_lowercase();
    let named_month = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        .iter()
        .any(|m| lower.contains(m));
    let t = if named_month { dates_with_month_names(p, &t) } else { t };
    let t = if t.contains('/') {
        p.slash_date
            .replace_all(&t, |c: &regex::Captures| {
                format!("{}-{:02}-{:02}", &c[1], c[2].parse::<u32>().unwrap_or(0), c[3].parse::<u32>().unwrap_or(0))
            })
            .into_owned()
    } else {
        t
    };
    let t = if t.contains(['$', '€', '£']) {
        p.currency
            .replace_all(&t, |c: &regex::Captures| {
                let unit = match &c[1] {
                    "$" => "dollars",
                    "€" => "euros",
                    _ => "pounds",
                };
                format!("{} {unit}", &c[2])
            })
            .into_owned()
    } else {
        t
    };
    contractions(t.to_lowercase())
}

/// "March 12, 2024", "12 Mar 2024", "3 September" written as "2024-03-12" / "--09-03".
fn dates_with_month_names(p: &Patterns, t: &str) -> String {
    let iso = |y: &str, m: u32, d: &str| format!("{y}-{m:02}-{:02}", d.parse::<u32>().unwrap_or(0));
    let t = p.month_day_year.replace_all(t, |c: &regex::Captures| match month(&c[1]) {
        Some(m) => iso(&c[3], m, &c[2]),
        None => c[0].to_string(),
    });
    let t = p.day_month_year.replace_all(&t, |c: &regex::Captures| match month(&c[2]) {
        Some(m) => iso(&c[3], m, &c[1]),
        None => c[0].to_string(),
    });
    // A day without a year ("3 September"): the month and day, written one way.
    let t = p.month_day.replace_all(&t, |c: &regex::Captures| match month(&c[1]) {
        Some(m) => format!("--{m:02}-{:02}", c[2].parse::<u32>().unwrap_or(0)),
        None => c[0].to_string(),
    });
    p.day_month
        .replace_all(&t, |c: &regex::Captures| match month(&c[2]) {
            Some(m) => format!("--{m:02}-{:02}", c[1].parse::<u32>().unwrap_or(0)),
            None => c[0].to_string(),
        })
        .into_owned()
}

fn contractions(mut t: String) -> String {
    if t.contains("n't") {
        for (from, to) in [("can't", "cannot"), ("won't", "will not"), ("n't", " not")] {
            t = t.replace(from, to);
        }
    }
    t
}

/// Quoted strings (backticks, double quotes, typographic quotes, and single quotes that open
/// and close a phrase rather than an apostrophe) are values; they are cut out of the text.
fn cut_quoted(text: &str, values: &mut Vec<String>) -> String {
    let mut chars: Vec<char> = Vec::with_capacity(text.len());
    chars.extend(text.chars());
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let close = match c {
            '`' | '"' => Some(c),
            '“' => Some('”'),
            '\'' if i == 0 || !chars[i - 1].is_alphanumeric() => Some('\''),
            _ => None,
        };
        if let Some(close) = close {
            let end = (i + 1..chars.len().min(i + 200)).find(|&j| {
                chars[j] == close
                    && (close != '\'' || j + 1 == chars.len() || !chars[j + 1].is_alphanumeric())
                    && j > i + 1
            });
            if let Some(end) = end {
                let inner: String = chars[i + 1..end].iter().collect();
                let inner = inner.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
                let apostrophe_inside = close == '\'' && inner.contains('\'');
                if !inner.is_empty() && !apostrophe_inside {
                    values.push(inner);
                    out.push(' ');
                    i = end + 1;
                    continue;
                }
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

fn number_word(w: &str) -> Option<u64> {
    const WORDS: [(&str, u64); 27] = [
        ("zero", 0),
        ("two", 2),
        ("three", 3),
        ("four", 4),
        ("five", 5),
        ("six", 6),
        ("seven", 7),
        ("eight", 8),
        ("nine", 9),
        ("ten", 10),
        ("eleven", 11),
        ("twelve", 12),
        ("thirteen", 13),
        ("fourteen", 14),
        ("fifteen", 15),
        ("sixteen", 16),
        ("seventeen", 17),
        ("eighteen", 18),
        ("nineteen", 19),
        ("twenty", 20),
        ("thirty", 30),
        ("forty", 40),
        ("fifty", 50),
        ("sixty", 60),
        ("seventy", 70),
        ("eighty", 80),
        ("ninety", 90),
    ];
    WORDS.iter().find(|(n, _)| *n == w).map(|(_, v)| *v)
}

fn multiplier(w: &str) -> Option<u64> {
    match w {
        "hundred" => Some(100),
        "thousand" => Some(1_000),
        "million" => Some(1_000_000),
        "billion" => Some(1_000_000_000),
        _ => None,
    }
}

/// Words that carry no content of their own. "one" alone is an article here ("one email
/// digest" / "a daily digest"); before a multiplier it is a number.
const STOP: &[&str] = &[
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "being", "am", "of", "to", "in", "on", "at", "for",
    "by", "with", "from", "and", "or", "but", "if", "then", "than", "that", "this", "these", "those", "it", "its",
    "as", "into", "onto", "over", "under", "about", "up", "our", "we", "us", "you", "your", "they", "their", "them",
    "he", "she", "his", "her", "i", "my", "me", "do", "does", "did", "done", "has", "have", "had", "having", "will",
    "would", "shall", "should", "can", "could", "may", "might", "must", "there", "here", "what", "which", "who",
    "whom", "when", "where", "why", "how", "all", "any", "each", "every", "some", "such", "so", "also", "just", "very",
    "get", "gets", "got", "getting", "one", "s", "ll", "re", "ve", "d",
];

/// Negations, contrastive ones included ("pnpm rather than npm", "instead of paging").
const NEGATIONS: &[&str] = &[
    "not",
    "no",
    "never",
    "nobody",
    "none",
    "nothing",
    "neither",
    "nor",
    "without",
    "cannot",
    "instead",
    "rather",
    "otherwise",
    "unless",
    "lack",
    "lacks",
    "lacking",
];

/// Opposites (a general list, not a list of any data set's words).
const OPPOSITES: &[(&str, &str)] = &[
    ("enabled", "disabled"),
    ("enable", "disable"),
    ("on", "off"),
    ("passed", "failed"),
    ("pass", "fail"),
    ("passes", "fails"),
    ("passing", "failing"),
    ("succeeded", "failed"),
    ("successful", "failed"),
    ("successfully", "failed"),
    ("success", "failure"),
    ("completed", "failed"),
    ("allowed", "forbidden"),
    ("allow", "deny"),
    ("allowed", "denied"),
    ("allows", "denies"),
    ("accept", "reject"),
    ("accepted", "rejected"),
    ("approved", "rejected"),
    ("approve", "reject"),
    ("always", "never"),
    ("love", "hate"),
    ("loves", "hates"),
    ("like", "dislike"),
    ("likes", "dislikes"),
    ("increase", "decrease"),
    ("increased", "decreased"),
    ("improved", "hurt"),
    ("improved", "worsened"),
    ("improved", "degraded"),
    ("improves", "hurts"),
    ("better", "worse"),
    ("fixed", "broken"),
    ("open", "closed"),
    ("up", "down"),
    ("true", "false"),
    ("yes", "no"),
    ("include", "exclude"),
    ("included", "excluded"),
    ("before", "after"),
    ("above", "below"),
    ("more", "less"),
    ("higher", "lower"),
    ("faster", "slower"),
    ("start", "stop"),
    ("started", "stopped"),
    ("online", "offline"),
    ("public", "private"),
    ("read", "write"),
    ("min", "max"),
    ("minimum", "maximum"),
    ("add", "remove"),
    ("added", "removed"),
    ("grant", "revoke"),
    ("granted", "revoked"),
    ("win", "lose"),
    ("won", "lost"),
    ("wins", "loses"),
    ("beats", "loses"),
    ("sync", "async"),
    ("internal", "external"),
    ("inside", "outside"),
    ("required", "optional"),
    ("mandatory", "optional"),
    ("valid", "invalid"),
    ("present", "absent"),
    ("slow", "fast"),
    ("high", "low"),
    ("large", "small"),
    ("old", "new"),
    ("first", "last"),
    ("upgrade", "downgrade"),
    ("upgraded", "downgraded"),
    ("lock", "unlock"),
    ("locked", "unlocked"),
    ("may", "must"),
];

fn opposite(a: &str, b: &str) -> bool {
    if a == b {
        return false;
    }
    // Most pairs hold a word of no opposite pair: one look in a set of them each, not a walk
    // through every pair.
    static LISTED: std::sync::LazyLock<rustc_hash::FxHashSet<&'static str>> =
        std::sync::LazyLock::new(|| OPPOSITES.iter().flat_map(|&(x, y)| [x, y]).collect());
    if LISTED.contains(a)
        && LISTED.contains(b)
        && OPPOSITES.iter().any(|&(x, y)| (x == a && y == b) || (x == b && y == a))
    {
        return true;
    }
    negative_of(a, b) || negative_of(b, a)
}

/// Whether `long` is `short` with a negative prefix ("unlocked" / "locked"), `short` holding
/// three bytes or more.
fn negative_of(long: &str, short: &str) -> bool {
    // The prefix's length is the difference of theirs (the lengths first: most pairs differ in
    // more than a prefix).
    let extra = long.len().wrapping_sub(short.len());
    (extra == 2 || extra == 3)
        && short.len() > 2
        && long.ends_with(short)
        && ["un", "in", "dis", "non", "im", "ir", "il"].iter().any(|p| p.len() == extra && long.starts_with(p))
}

fn is_value(w: &str) -> bool {
    let bytes = w.as_bytes();
    w.chars().any(|c| c.is_ascii_digit())
        || w.starts_with('/')
        || w.starts_with('#')
        || w.contains("://")
        || is_path(w)
        || w.find('@').is_some_and(|at| at > 0)
        || (w.len() >= 8 && bytes.iter().all(u8::is_ascii_hexdigit))
        // A host holds a dot (a cheap look before the pattern, which most words fail).
        || (w.contains('.') && patterns().host.is_match(w))
}

/// A path of two or more parts ("src/notifications/mod.rs", "payments/stripe/webhook");
/// "req/min" or "w/" are words.
fn is_path(w: &str) -> bool {
    let slashes = w.matches('/').count();
    slashes >= 2
        || (slashes == 1 && {
            let ext = w.rsplit('.').next().unwrap_or("");
            w.contains('.') && (1..=5).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_alphanumeric())
        })
}

/// A light suffix stripper: enough for "requests" / "request", "partitioned" / "partitioning".
fn stem(w: &str) -> String {
    for suf in ["ations", "ation", "ings", "ing", "edly", "ies", "ied", "ed", "es", "s", "ly"] {
        if let Some(s) = w.strip_suffix(suf) {
            if s.chars().count() >= 3 {
                return s.to_string();
            }
        }
    }
    w.to_string()
}

/// Whether two words of letters are one word written with a typo or a spelling variant (one
/// letter changed, added, dropped, or two neighbours swapped; five letters or more).
fn one_apart(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    if a.len() < 5 || b.len() < 5 {
        return false;
    }
    if a.is_ascii() && b.is_ascii() {
        return apart_by_one(a.as_bytes(), b.as_bytes(), |c| c.is_ascii_digit());
    }
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    apart_by_one(&a, &b, |c| c.is_ascii_digit())
}

fn apart_by_one<T: PartialEq>(a: &[T], b: &[T], digit: impl Fn(&T) -> bool) -> bool {
    if a.len() < 5 || b.len() < 5 || a.len().abs_diff(b.len()) > 1 {
        return false;
    }
    if a.iter().chain(b).any(digit) {
        return false;
    }
    if a.len() == b.len() {
        let mut d = (0..a.len()).filter(|&i| a[i] != b[i]);
        return match (d.next(), d.next(), d.next()) {
            (Some(_), None, _) => true,
            (Some(i), Some(j), None) => j == i + 1 && a[i] == b[j] && a[j] == b[i],
            _ => false,
        };
    }
    let (short, long) = if a.len() < b.len() { (a, b) } else { (b, a) };
    // `short` is `long` with one letter dropped exactly when dropping the letter where they
    // first differ gives it (dropping any other letter of the same run gives the same text).
    let first = short.iter().zip(long).take_while(|(x, y)| x == y).count();
    long[first + 1..] == short[first..]
}

impl Profile {
    pub fn of(text: &str) -> Profile {
        let p = patterns();
        let mut quoted = Vec::new();
        let t = cut_quoted(&normalise(text), &mut quoted);
        // Room for the tokens at once: grown push by push, these vectors were most of the
        // reallocations of the first scoring at 3k realistic (`perf`).
        let mut raw: Vec<&str> = Vec::with_capacity(t.len() / 4 + 1);
        raw.extend(p.token.find_iter(&t).map(|m| m.as_str().trim_end_matches(['.', ':'])));
        let mut tokens: Vec<Token> = Vec::with_capacity(quoted.len() + raw.len());
        tokens.extend(quoted.into_iter().map(|q| Token {
            key: format!("\"{q}\""),
            shown: format!("'{q}'"),
            value: true,
        }));
        let mut i = 0;
        while i < raw.len() {
            let w = raw[i];
            // Numbers in words: "twelve", "five hundred", "one hundred".
            let starts =
                number_word(w).is_some() || (w == "one" && raw.get(i + 1).is_some_and(|n| multiplier(n).is_some()));
            if starts {
                let (mut total, mut current, mut j) = (0u64, 0u64, i);
                while j < raw.len() {
                    let x = raw[j];
                    if let Some(n) = number_word(x) {
                        current += n;
                    } else if x == "one" && j == i {
                        current += 1;
                    } else if let Some(m) = multiplier(x) {
                        current = current.max(1) * m;
                        total += current;
                        current = 0;
                    } else if x == "and" && j + 1 < raw.len() && (number_word(raw[j + 1]).is_some()) {
                    } else {
                        break;
                    }
                    j += 1;
                }
                let n = (total + current).to_string();
                tokens.push(Token { key: n.clone(), shown: raw[i..j].join(" "), value: true });
                i = j;
                continue;
            }
            if w.is_empty() {
                i += 1;
                continue;
            }
            if is_value(w) {
                let v = w.trim_end_matches(['/', '.']).to_string();
                tokens.push(Token { key: v.clone(), shown: v, value: true });
            } else if !w.contains(['-', '_', '.', '/', ':', '+', '=']) {
                // Nothing to split on (most words): the word itself, as the split would give it.
                tokens.push(Token { key: w.to_string(), shown: w.to_string(), value: false });
            } else {
                for part in p.split.split(w).filter(|s| !s.is_empty()) {
                    tokens.push(Token { key: part.to_string(), shown: part.to_string(), value: false });
                }
            }
            i += 1;
        }
        Profile::from_tokens(tokens)
    }

    fn from_tokens(tokens: Vec<Token>) -> Profile {
        let keys: Vec<String> = tokens.iter().map(|t| if t.value { t.key.clone() } else { stem(&t.key) }).collect();
        let marks: Vec<Mark> = keys.iter().map(|k| Mark::of(k)).collect();
        let mut key_at: Vec<(u64, u32)> = marks.iter().enumerate().map(|(i, m)| (m.hash, i as u32)).collect();
        key_at.sort_unstable();
        let typo_at: Vec<u32> = (0..marks.len()).filter(|&i| marks[i].typo).map(|i| i as u32).collect();
        let mut values: Vec<String> = tokens.iter().filter(|t| t.value).map(|t| t.key.clone()).collect();
        values.sort_unstable();
        values.dedup();
        let mut words: Vec<String> = tokens.iter().filter(|t| !t.value).map(|t| t.key.clone()).collect();
        words.sort_unstable();
        words.dedup();
        let word_lengths = words.iter().fold(0, |m, w| m | length_bit(w.len()));
        let pair_lengths = tokens
            .windows(2)
            .filter(|p| !p[0].value && !p[1].value)
            .fold(0, |m, p| m | length_bit(p[0].key.len() + p[1].key.len()));
        let negated = tokens.iter().any(|t| !t.value && NEGATIONS.contains(&t.key.as_str()));
        // Each value's length goes in first, so that ["ab", "c"] and ["a", "bc"] hash apart.
        let values_hash = values.iter().fold(FNV_START, |h, v| fnv(fnv(h, &v.len().to_le_bytes()), v.as_bytes()));
        let word_hash_of: Vec<u64> = words.iter().map(|w| fnv(FNV_START, w.as_bytes())).collect();
        let mut word_at: Vec<(u64, u32)> = word_hash_of.iter().enumerate().map(|(i, &h)| (h, i as u32)).collect();
        word_at.sort_unstable();
        let mut word_hashes: Vec<u64> = word_at.iter().map(|&(h, _)| h).collect();
        word_hashes.dedup();
        let mut pair_hashes: Vec<u64> = tokens
            .windows(2)
            .filter(|p| !p[0].value && !p[1].value)
            .map(|p| fnv(fnv(FNV_START, p[0].key.as_bytes()), p[1].key.as_bytes()))
            .collect();
        pair_hashes.sort_unstable();
        pair_hashes.dedup();
        let loose = tokens.iter().map(|t| !t.value && content(t)).collect();
        Profile {
            tokens,
            keys,
            marks,
            values,
            values_hash,
            words,
            word_lengths,
            pair_lengths,
            word_hash_of,
            word_hashes,
            word_at,
            pair_hashes,
            loose,
            key_at,
            typo_at,
            negated,
        }
    }

    /// Whether `word` (whose hash is `hash`) is among its words: the hashes first.
    fn holds_word(&self, word: &str, hash: u64) -> bool {
        let at = self.word_at.partition_point(|&(h, _)| h < hash);
        self.word_at[at..].iter().take_while(|&&(h, _)| h == hash).any(|&(_, i)| self.words[i as usize] == word)
    }

    /// Whether the two hold different values (sorted, each once): their hashes first.
    fn values_differ(&self, other: &Profile) -> bool {
        self.values_hash != other.values_hash || self.values != other.values
    }

    /// `self` with the words two adjacent words of it spell together as one word of `other`
    /// joined ([`join_compounds`]), or `None` when none do. Most pairs are settled by the
    /// lengths alone: two words can spell a word of `other` only if their lengths add up to
    /// one of its words' lengths.
    fn joined_for(&self, other: &Profile) -> Option<Profile> {
        if self.pair_lengths & other.word_lengths == 0 {
            return None;
        }
        // Then by the hashes: a pair spells a word of `other` only if their hashes are equal.
        if !sorted_share(&self.pair_hashes, &other.word_hashes) {
            return None;
        }
        // The pairs [`join_compounds`] would join, looked up in the other's sorted words
        // without building the joined word.
        let joins = self.tokens.windows(2).any(|p| {
            !p[0].value && !p[1].value && other.words.binary_search_by(|w| cmp_joined(w, &p[0].key, &p[1].key)).is_ok()
        });
        if !joins {
            return None;
        }
        join_compounds(&self.tokens, &other.tokens).map(Profile::from_tokens)
    }

    fn values(&self) -> BTreeSet<&str> {
        self.values.iter().map(String::as_str).collect()
    }

    /// How many values both hold.
    fn shared_values(&self, other: &Profile) -> usize {
        self.values.iter().filter(|v| other.values.binary_search(v).is_ok()).count()
    }
}

/// Whether two sorted lists hold a common element.
fn sorted_share(a: &[u64], b: &[u64]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

/// A text as the judgment reads it: its word-bigram shingles, and its [`Profile`] once asked
/// for. Kept per process for the texts judged most recently ([`known`]).
#[derive(Debug, Default)]
pub struct Known {
    text: Box<str>,
    pub shingles: Vec<u64>,
    profile: OnceLock<Profile>,
}

impl Known {
    pub fn profile(&self) -> &Profile {
        self.profile.get_or_init(|| Profile::of(&self.text))
    }
}

/// `text` as the judgment reads it, kept per process for the texts judged most recently: a
/// long-running writer judges the same neighbours again and again (a cluster's members at each
/// write), and its shingles are read for every candidate, its profile for the closest only.
///
/// Kept in two generations of at most [`KEPT`] texts: when the newer is full it becomes the
/// older (the older one is dropped), and a text found in the older is moved to the newer. So
/// a text judged again within the last [`KEPT`] texts is always still kept, and what is
/// kept never passes twice that, whatever a store's size.
pub fn known(text: &str) -> std::sync::Arc<Known> {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    text.hash(&mut h);
    let key = h.finish();
    // A text kept under the same hash is this text only if it reads the same.
    let kept = KNOWN.lock().ok().and_then(|mut c| {
        let k = c.newer.get(&key).filter(|k| *k.text == *text).cloned();
        k.or_else(|| {
            let k = c.older.remove(&key).filter(|k| *k.text == *text)?;
            c.insert(key, k.clone());
            Some(k)
        })
    });
    if let Some(k) = kept {
        return k;
    }
    let k = std::sync::Arc::new(Known {
        text: text.into(),
        shingles: crate::dedup::shingles(text),
        profile: OnceLock::new(),
    });
    if let Ok(mut c) = KNOWN.lock() {
        c.insert(key, k.clone());
    }
    k
}

/// Texts kept by [`known`] in each generation.
pub const KEPT: usize = 4096;

/// The two generations of [`known`]'s texts, by the hash of the text.
struct Generations {
    newer: rustc_hash::FxHashMap<u64, std::sync::Arc<Known>>,
    older: rustc_hash::FxHashMap<u64, std::sync::Arc<Known>>,
}

impl Generations {
    fn insert(&mut self, key: u64, k: std::sync::Arc<Known>) {
        if self.newer.len() >= KEPT {
            self.older = std::mem::take(&mut self.newer);
        }
        self.newer.insert(key, k);
    }
}

static KNOWN: std::sync::LazyLock<std::sync::Mutex<Generations>> = std::sync::LazyLock::new(|| {
    std::sync::Mutex::new(Generations { newer: Default::default(), older: Default::default() })
});

/// Words of `x` that two adjacent words of `x` spell together as one word of `y` ("re ranker" /
/// "reranker") are joined.
fn join_compounds(x: &[Token], y: &[Token]) -> Option<Vec<Token>> {
    let joins = |i: usize| {
        !x[i].value && !x[i + 1].value && {
            let (p, q) = (&x[i].key, &x[i + 1].key);
            y.iter().any(|t| {
                !t.value
                    && t.key.len() == p.len() + q.len()
                    && t.key.starts_with(p.as_str())
                    && t.key.ends_with(q.as_str())
            })
        }
    };
    if !(0..x.len().saturating_sub(1)).any(joins) {
        return None;
    }
    let words: std::collections::HashSet<&str> = y.iter().filter(|t| !t.value).map(|t| t.key.as_str()).collect();
    let mut out = Vec::with_capacity(x.len());
    let mut i = 0;
    while i < x.len() {
        if i + 1 < x.len() && !x[i].value && !x[i + 1].value {
            let joined = format!("{}{}", x[i].key, x[i + 1].key);
            if words.contains(joined.as_str()) {
                out.push(Token { shown: joined.clone(), key: joined, value: false });
                i += 2;
                continue;
            }
        }
        out.push(x[i].clone());
        i += 1;
    }
    Some(out)
}

fn content(t: &Token) -> bool {
    t.value || !(STOP.contains(&t.key.as_str()) || NEGATIONS.contains(&t.key.as_str()))
}

/// Rows of the word-order table at most, in 64-bit words ([`ORDER_WORDS`] bits).
const ROW_WORDS: usize = ORDER_WORDS.div_ceil(64);

/// The word-order table of a pair and the longest common subsequence's table, kept per thread
/// so that judging a pair allocates neither.
#[derive(Default)]
struct Scratch {
    /// Row `i`, bit `j`: key `i` of the first text and key `j` of the second are one word
    /// ([`same_at`]).
    rows: Vec<u64>,
    lengths: Vec<u16>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// How two texts' words line up, as far as the judgment needs it.
enum Template {
    /// Fewer than [`ONE_TEMPLATE_AT`] of their words are in one order.
    Not,
    /// One template, and either the order was not asked for, or every word of one text is in
    /// it (no word of that text is left to have been swapped).
    One,
    /// One template, with the matched pairs of positions of the longest common subsequence.
    Swappable(Vec<(usize, usize)>),
}

/// Whether `a` and `b` are one template (their words in one order are at least
/// [`ONE_TEMPLATE_AT`] of all), and the order itself when `with_order` and both texts hold
/// words outside it. The words are compared once per pair into a bit table; the length of the
/// common order is found bit-parallel on it (Allison–Dix, Hyyrö), and the order (the same
/// pairs the plain dynamic programme finds) only when it is needed.
fn template(a: &Profile, b: &Profile, with_order: bool) -> Template {
    let (sa, sb) = (&a.keys, &b.keys);
    let total = sa.len() + sb.len();
    let (n, m) = (sa.len().min(ORDER_WORDS), sb.len().min(ORDER_WORDS));
    // The words in one order are at most the shorter text's.
    if total == 0 || 2.0 * n.min(m) as f64 / (total as f64) < ONE_TEMPLATE_AT {
        return Template::Not;
    }
    SCRATCH.with(|s| {
        let s = &mut *s.borrow_mut();
        let w = m.div_ceil(64);
        fill_rows(a, b, n, m, &mut s.rows);
        let length = common_length(&s.rows, n, w);
        if 2.0 * length as f64 / (total as f64) < ONE_TEMPLATE_AT {
            return Template::Not;
        }
        // Every word of one text in the order: it has no word outside it, so none was swapped.
        if !with_order || length == sa.len() || length == sb.len() {
            return Template::One;
        }
        Template::Swappable(common_order(&s.rows, n, m, w, &mut s.lengths))
    })
}

/// [`template`] as [`verdict`] and [`duplication`] need it, without the order itself: whether
/// the two are one template, and (when `swap` is asked) whether a word of it was swapped
/// ([`words_swapped`] on the common order). A content word of each text that is one word with
/// no word of the other is outside every common order and matches no word the other leaves
/// out, so when both texts hold one the answer is known without the order; only the rest
/// build it.
fn template_swapped(a: &Profile, b: &Profile, swap: bool) -> (bool, bool) {
    let (sa, sb) = (&a.keys, &b.keys);
    let total = sa.len() + sb.len();
    let (n, m) = (sa.len().min(ORDER_WORDS), sb.len().min(ORDER_WORDS));
    if total == 0 || 2.0 * n.min(m) as f64 / (total as f64) < ONE_TEMPLATE_AT {
        return (false, false);
    }
    SCRATCH.with(|s| {
        let s = &mut *s.borrow_mut();
        let w = m.div_ceil(64);
        fill_rows(a, b, n, m, &mut s.rows);
        let length = common_length(&s.rows, n, w);
        if 2.0 * length as f64 / (total as f64) < ONE_TEMPLATE_AT {
            return (false, false);
        }
        if !swap || length == sa.len() || length == sb.len() {
            return (true, false);
        }
        // Every word of both in the table (the order of longer texts is looked for on their
        // beginning, and a word past it may still match one the other leaves out).
        if n == sa.len() && m == sb.len() {
            let rows = &s.rows;
            let orphan_a = (0..n).any(|i| a.loose[i] && rows[i * w..(i + 1) * w].iter().all(|&x| x == 0));
            if orphan_a {
                let mut seen = [0u64; ROW_WORDS];
                for row in rows.chunks_exact(w) {
                    for (x, &r) in seen.iter_mut().zip(row) {
                        *x |= r;
                    }
                }
                if (0..m).any(|j| b.loose[j] && seen[j / 64] >> (j % 64) & 1 == 0) {
                    return (true, true);
                }
            }
        }
        let order = common_order(&s.rows, n, m, w, &mut s.lengths);
        (true, words_swapped(a, b, &order))
    })
}

/// The bit table of [`Scratch::rows`] for the first `n` keys of `a` and `m` of `b`: bit
/// `(i, j)` is [`same_at`]. Its two ways of being true are looked for apart, each only where it
/// can be: equal keys among the keys of equal hash (found by `b`'s sorted hashes), and one typo
/// apart only between keys that may be so (`Mark::typo` on both sides).
fn fill_rows(a: &Profile, b: &Profile, n: usize, m: usize, rows: &mut Vec<u64>) {
    let w = m.div_ceil(64);
    rows.clear();
    rows.resize(n * w, 0);
    for (i, row) in rows.chunks_exact_mut(w.max(1)).take(n).enumerate() {
        let (x, mx) = (a.keys[i].as_str(), a.marks[i]);
        let at = b.key_at.partition_point(|&(h, _)| h < mx.hash);
        for &(_, j) in b.key_at[at..].iter().take_while(|&&(h, _)| h == mx.hash) {
            let j = j as usize;
            if j < m && b.keys[j] == x {
                row[j / 64] |= 1 << (j % 64);
            }
        }
        if mx.typo {
            for &j in b.typo_at.iter().take_while(|&&j| (j as usize) < m) {
                let j = j as usize;
                if one_typo_apart(x, mx, &b.keys[j], b.marks[j]) {
                    row[j / 64] |= 1 << (j % 64);
                }
            }
        }
    }
}

/// The length of the longest common subsequence of a bit table of `n` rows of `w` words, one
/// row at a time as a bit vector (Hyyrö's form of Allison–Dix): `V' = (V + (V & M)) | (V & !M)`;
/// the length is the number of zero bits left in `V`. Bits above the second text's length stay
/// set (their rows' bits are clear).
fn common_length(rows: &[u64], n: usize, w: usize) -> usize {
    let mut v = [u64::MAX; ROW_WORDS];
    let v = &mut v[..w];
    for row in rows.chunks_exact(w.max(1)).take(n) {
        let mut carry = false;
        for (x, &matches) in v.iter_mut().zip(row) {
            let u = *x & matches;
            let (sum, c1) = x.overflowing_add(u);
            let (sum, c2) = sum.overflowing_add(u64::from(carry));
            carry = c1 || c2;
            *x = sum | (*x & !matches);
        }
    }
    v.iter().map(|x| x.count_zeros() as usize).sum()
}

/// The matched pairs of positions of the longest common subsequence on a bit table of `n` rows
/// and `m` columns: the table of suffix lengths, then the walk from the start that takes a
/// match when it is on a longest path, else the longer way (down on a tie).
fn common_order(rows: &[u64], n: usize, m: usize, w: usize, lengths: &mut Vec<u16>) -> Vec<(usize, usize)> {
    let same = |i: usize, j: usize| rows[i * w + j / 64] >> (j % 64) & 1 == 1;
    lengths.clear();
    lengths.resize((n + 1) * (m + 1), 0);
    let dp = lengths;
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            dp[at(i, j)] = if same(i, j) { dp[at(i + 1, j + 1)] + 1 } else { dp[at(i + 1, j)].max(dp[at(i, j + 1)]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::with_capacity(usize::from(dp[0])));
    while i < n && j < m {
        if same(i, j) && dp[at(i, j)] == dp[at(i + 1, j + 1)] + 1 {
            out.push((i, j));
            i += 1;
            j += 1;
        } else if dp[at(i + 1, j)] >= dp[at(i, j + 1)] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// Whether a word of one text is the opposite of a word of the other that the first does not
/// hold ("enabled" / "disabled").
fn opposite_words(a: &Profile, b: &Profile) -> bool {
    fn only<'p>(x: &'p Profile, y: &'p Profile) -> impl Iterator<Item = &'p String> {
        x.words.iter().zip(&x.word_hash_of).filter(|(w, h)| !y.holds_word(w, **h)).map(|(w, _)| w)
    }
    // Collected once (no allocation when the second holds no word of its own, as near-copies).
    let only_b: Vec<&String> = only(b, a).collect();
    !only_b.is_empty() && only(a, b).any(|x| only_b.iter().any(|y| opposite(x, y)))
}

/// Which judgment this process makes, for people: with the sentence model, or (when it is
/// missing or its files do not match their pinned sums) by words and values alone, and why.
pub fn judgment() -> String {
    match crate::embed::shared() {
        Some(e) => format!("words, values and meaning ({})", e.fingerprint()),
        None => match crate::embed::unavailable() {
            Some(why) => format!("words and values only, no sentence model: {why}"),
            None => "words and values only".to_string(),
        },
    }
}

/// The cosine mapped onto closeness.
pub fn semantic(cosine: f64) -> f64 {
    ((cosine - COSINE_FLOOR) / (COSINE_FULL - COSINE_FLOOR)).clamp(0.0, 1.0)
}

/// The most closeness a pair with this word-bigram Jaccard and cosine can have (with every
/// shared value counted): below [`DUPLICATE_AT`] it is not judged further.
pub fn closeness_at_most(jaccard: f64, cosine: Option<f64>) -> f64 {
    jaccard.max(cosine.map_or(0.0, semantic)) + SHARED_VALUE_BONUS * SHARED_VALUES_COUNTED as f64
}

/// The judgment of two memories' profiles, given their word-bigram Jaccard and (with a model)
/// the cosine of their vectors.
pub fn judge(a: &Profile, b: &Profile, jaccard: f64, cosine: Option<f64>) -> Judgment {
    // Words two adjacent words of the other spell together are joined ("re ranker" / "reranker").
    let joined_a = a.joined_for(b);
    let a = joined_a.as_ref().unwrap_or(a);
    let joined_b = b.joined_for(a);
    let b = joined_b.as_ref().unwrap_or(b);
    let (ta, tb) = (&a.tokens, &b.tokens);
    let (va, vb) = (a.values(), b.values());
    let (sa, sb) = (&a.keys, &b.keys);
    let mut differing: Vec<Difference> = Vec::new();
    // Values on one side only.
    let only_a: Vec<&str> = va.difference(&vb).copied().collect();
    let only_b: Vec<&str> = vb.difference(&va).copied().collect();
    let shown = |ts: &[Token], key: &str| ts.iter().find(|t| t.key == key).map_or(key.to_string(), |t| t.shown.clone());
    if !only_a.is_empty() || !only_b.is_empty() {
        differing.push(Difference {
            what: "value".into(),
            this: only_a.iter().map(|k| shown(ta, k)).collect::<Vec<_>>().join(" "),
            other: only_b.iter().map(|k| shown(tb, k)).collect::<Vec<_>>().join(" "),
        });
    }
    // Polarity: opposite words, or a negation on one side only.
    // (Each profile's words are sorted, as a set of them iterates.)
    let only_b: Vec<&String> = b.words.iter().filter(|w| a.words.binary_search(w).is_err()).collect();
    for x in a.words.iter().filter(|w| b.words.binary_search(w).is_err()) {
        for y in &only_b {
            if opposite(x, y) {
                differing.push(Difference { what: "polarity".into(), this: x.to_string(), other: y.to_string() });
            }
        }
    }
    let (na, nb) = (a.negated, b.negated);
    if na != nb {
        let neg = |ts: &[Token]| ts.iter().find(|t| NEGATIONS.contains(&t.key.as_str())).map(|t| t.shown.clone());
        differing.push(Difference {
            what: "polarity".into(),
            this: neg(ta).unwrap_or_default(),
            other: neg(tb).unwrap_or_default(),
        });
    }
    // One template with a word swapped for another.
    let template = template(a, b, true);
    let one_template = !matches!(template, Template::Not);
    if let Template::Swappable(order) = &template {
        // The content words each text holds outside the common order; one the other text also
        // holds outside it was moved, not replaced. Words left on both sides were swapped.
        let in_a: std::collections::HashSet<usize> = order.iter().map(|p| p.0).collect();
        let in_b: std::collections::HashSet<usize> = order.iter().map(|p| p.1).collect();
        let loose = |ts: &[Token], keys: &[String], matched: &std::collections::HashSet<usize>| -> Vec<usize> {
            (0..keys.len().min(ts.len()))
                .filter(|k| !matched.contains(k) && !ts[*k].value && content(&ts[*k]))
                .collect()
        };
        let (la, lb) = (loose(ta, sa, &in_a), loose(tb, sb, &in_b));
        let xa: Vec<String> =
            la.iter().filter(|&&k| !lb.iter().any(|&j| same_at(a, k, b, j))).map(|&k| ta[k].shown.clone()).collect();
        let xb: Vec<String> =
            lb.iter().filter(|&&k| !la.iter().any(|&j| same_at(b, k, a, j))).map(|&k| tb[k].shown.clone()).collect();
        if !xa.is_empty() && !xb.is_empty() {
            differing.push(Difference { what: "wording".into(), this: xa.join(" "), other: xb.join(" ") });
        }
    }
    // What both hold: values, then content words, each once.
    let mut matching: Vec<String> = Vec::new();
    for (i, t) in ta.iter().enumerate().take(sa.len()) {
        if matching.len() >= EVIDENCE_WORDS {
            break;
        }
        if content(t) && (0..sb.len()).any(|j| same_at(a, i, b, j)) && !matching.contains(&t.shown) {
            matching.push(t.shown.clone());
        }
    }
    let shared_values = a.shared_values(b).min(SHARED_VALUES_COUNTED);
    let closeness = (jaccard.max(cosine.map_or(0.0, semantic)) + SHARED_VALUE_BONUS * shared_values as f64).min(1.0);
    let kind = if differing.is_empty() && closeness >= DUPLICATE_AT {
        Kind::Duplicate
    } else if !differing.is_empty() && one_template {
        Kind::PossibleUpdate
    } else {
        Kind::Related
    };
    Judgment { kind, closeness: (closeness * 1000.0).round() / 1000.0, evidence: Evidence::new(matching, differing) }
}

/// [`judge`]'s kind and closeness without its evidence (no text is built, and the words both
/// hold are not listed): what the write-time `similar` list orders and filters its candidates
/// by, so that the evidence is made only for those it lists. A test holds it equal to
/// [`judge`] on every pair of a test set.
pub fn verdict(a: &Profile, b: &Profile, jaccard: f64, cosine: Option<f64>) -> (Kind, f64) {
    let joined_a = a.joined_for(b);
    let a = joined_a.as_ref().unwrap_or(a);
    let joined_b = b.joined_for(a);
    let b = joined_b.as_ref().unwrap_or(b);
    let shared = a.shared_values(b).min(SHARED_VALUES_COUNTED);
    let closeness = (jaccard.max(cosine.map_or(0.0, semantic)) + SHARED_VALUE_BONUS * shared as f64).min(1.0);
    // Values on one side only, a negation on one side only, opposite words.
    let differs = a.values_differ(b) || a.negated != b.negated || opposite_words(a, b);
    // One template, and (when nothing else differs) a word swapped for another within it.
    let (one_template, swapped) = template_swapped(a, b, !differs);
    let differs = differs || swapped;
    let kind = if !differs && closeness >= DUPLICATE_AT {
        Kind::Duplicate
    } else if differs && one_template {
        Kind::PossibleUpdate
    } else {
        Kind::Related
    };
    (kind, (closeness * 1000.0).round() / 1000.0)
}

/// Whether, with `order` the two texts' words in one order, each text holds a content word
/// outside it that the other does not hold outside it either: [`judge`]'s "wording" difference.
fn words_swapped(a: &Profile, b: &Profile, order: &[(usize, usize)]) -> bool {
    let mut in_a = vec![false; a.keys.len()];
    let mut in_b = vec![false; b.keys.len()];
    for &(i, j) in order {
        in_a[i] = true;
        in_b[j] = true;
    }
    let loose = |p: &Profile, matched: &[bool]| -> Vec<usize> {
        (0..p.keys.len().min(p.tokens.len())).filter(|&k| !matched[k] && p.loose[k]).collect()
    };
    let (la, lb) = (loose(a, &in_a), loose(b, &in_b));
    la.iter().any(|&k| !lb.iter().any(|&j| same_at(a, k, b, j)))
        && lb.iter().any(|&k| !la.iter().any(|&j| same_at(b, k, a, j)))
}

/// What the pair adds to duplication D ([`Judgment::duplication`]), without the evidence: the
/// cheap differences (values, negation) are looked at first, and most templated pairs stop
/// there.
pub fn duplication(a: &Profile, b: &Profile, jaccard: f64, cosine: Option<f64>) -> f64 {
    settled(a, b, jaccard, cosine).unwrap_or_else(|| unsettled(a, b, jaccard, cosine))
}

/// [`duplication`] when the values, a negation or the closeness settle it (nothing, then),
/// else `None`. It reads the two sides alike: swapped, the answer is the same.
pub fn settled(a: &Profile, b: &Profile, jaccard: f64, cosine: Option<f64>) -> Option<f64> {
    if apart(a, b) {
        // Looked at first: it settles most templated pairs without counting their shared values.
        return Some(0.0);
    }
    too_far(a, jaccard, cosine).then_some(0.0)
}

/// Whether values on one side only or a negation on one side only make the two different
/// memories whatever their closeness: the first thing [`settled`] looks at, and all of it that
/// reads neither the word overlap nor the cosine (so a search can ask it before computing
/// them). Joining compound words never changes it: only words are joined.
pub fn apart(a: &Profile, b: &Profile) -> bool {
    a.values_differ(b) || a.negated != b.negated
}

/// Whether two memories that are not [`apart`] are too far from each other to be duplicates:
/// the rest of [`settled`] (`a` holds the values both hold).
pub fn too_far(a: &Profile, jaccard: f64, cosine: Option<f64>) -> bool {
    // Equal sets of values (sorted, each once): every value is shared.
    let shared = a.values.len();
    let closeness =
        jaccard.max(cosine.map_or(0.0, semantic)) + SHARED_VALUE_BONUS * shared.min(SHARED_VALUES_COUNTED) as f64;
    closeness < DUPLICATE_AT
}

/// [`duplication`] of a pair that [`settled`] does not settle.
pub fn unsettled(a: &Profile, b: &Profile, jaccard: f64, cosine: Option<f64>) -> f64 {
    if differs(a, b) {
        0.0
    } else {
        close_enough(a, jaccard, cosine)
    }
}

/// The rest of [`judge`]'s differences for a pair [`settled`] leaves open (equal values, no
/// negation on one side only), in its order, stopping at the first one found and building no
/// evidence: compound words joined, a negation or opposite words, a word swapped in one
/// template. It reads neither the word overlap nor the cosine.
pub fn differs(a: &Profile, b: &Profile) -> bool {
    let joined_a = a.joined_for(b);
    let a = joined_a.as_ref().unwrap_or(a);
    let joined_b = b.joined_for(a);
    let b = joined_b.as_ref().unwrap_or(b);
    a.negated != b.negated || opposite_words(a, b) || template_swapped(a, b, true).1
}

/// [`duplication`] of a pair left open by [`settled`] in which nothing [`differs`]: its
/// closeness when close enough (`a` holds the values both hold).
pub fn close_enough(a: &Profile, jaccard: f64, cosine: Option<f64>) -> f64 {
    let shared = a.values.len();
    let closeness = (jaccard.max(cosine.map_or(0.0, semantic))
        + SHARED_VALUE_BONUS * shared.min(SHARED_VALUES_COUNTED) as f64)
        .min(1.0);
    if closeness >= DUPLICATE_AT {
        (closeness * 1000.0).round() / 1000.0
    } else {
        0.0
    }
}

/// [`judge`] of two texts.
pub fn judge_texts(a: &str, b: &str, cosine: Option<f64>) -> Judgment {
    let j = crate::dedup::jaccard(&crate::dedup::shingles(a), &crate::dedup::shingles(b));
    judge(&Profile::of(a), &Profile::of(b), j, cosine)
}

#[cfg(test)]
mod reference;

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(a: &str, b: &str, cos: f64) -> Kind {
        judge_texts(a, b, Some(cos)).kind
    }

    #[test]
    fn a_changed_number_is_a_possible_update_with_both_values() {
        let j = judge_texts(
            "Retry limit for the email sender is 3 attempts.",
            "Retry limit for the email sender is 5 attempts.",
            Some(0.99),
        );
        assert_eq!(j.kind, Kind::PossibleUpdate);
        assert_eq!(j.evidence.differing[0], Difference { what: "value".into(), this: "3".into(), other: "5".into() });
        assert!(j.evidence.matching.contains(&"retry".to_string()), "{:?}", j.evidence);
    }

    #[test]
    fn a_text_judged_again_within_the_kept_ones_stays_known_and_the_kept_stay_bounded() {
        let text = "The kept text is judged again and again, as a cluster's member is.";
        let first = known(text);
        for i in 0..3 * KEPT {
            known(&format!("filler text number {i} of the cache test"));
            if i % 1000 == 999 {
                assert!(std::sync::Arc::ptr_eq(&known(text), &first), "lost after {i} other texts");
            }
        }
        let g = KNOWN.lock().unwrap();
        assert!(g.newer.len() <= KEPT && g.older.len() <= KEPT, "{} + {}", g.newer.len(), g.older.len());
    }

    #[test]
    fn a_date_written_two_ways_is_one_value() {
        let a = Profile::of("Migrated on 2024-03-12 after the outage.");
        let b = Profile::of("Migrated on March 12, 2024 after the outage.");
        assert_eq!(a.values(), b.values());
        let c = Profile::of("Migrated on 12 Mar 2024 after the outage.");
        assert_eq!(a.values(), c.values());
    }

    #[test]
    fn numbers_in_words_and_separators_are_values_written_one_way() {
        assert_eq!(Profile::of("twelve hours").values(), Profile::of("12 hours").values());
        assert_eq!(Profile::of("five hundred dollars").values(), Profile::of("$500").values());
        assert_eq!(Profile::of("step 4,200").values(), Profile::of("step 4200").values());
        assert!(Profile::of("one email digest").values().is_empty(), "'one' alone is an article");
    }

    #[test]
    fn opposites_and_negations_are_never_duplicates() {
        assert_eq!(
            kind("Push notifications are enabled.", "Push notifications are disabled.", 0.97),
            Kind::PossibleUpdate
        );
        assert_eq!(kind("The deploy passed.", "The deploy failed.", 0.95), Kind::PossibleUpdate);
        assert_ne!(kind("The branch has been merged.", "The branch hasn't been merged yet.", 0.95), Kind::Duplicate);
    }

    #[test]
    fn near_copies_and_typos_are_duplicates() {
        assert_eq!(
            kind("Rolled back the thumbnail servcie.", "Rolled back the thumbnail service.", 0.97),
            Kind::Duplicate
        );
        assert_eq!(kind("Sophie is allergic to peanuts.", "sophie is allergic to peanuts", 1.0), Kind::Duplicate);
        assert_eq!(kind("removing the reranker drops MRR", "removing the re-ranker drops MRR", 0.98), Kind::Duplicate);
    }

    #[test]
    fn a_swapped_word_in_one_template_is_a_difference() {
        let j = judge_texts(
            "Retention period for chat transcripts is ninety days.",
            "Retention period for support emails is ninety days.",
            Some(0.95),
        );
        assert_eq!(j.kind, Kind::PossibleUpdate);
        assert_eq!(j.evidence.differing[0].what, "wording");
    }

    #[test]
    fn a_word_the_other_text_holds_only_in_the_common_order_was_replaced_not_moved() {
        let j = judge_texts(
            "Currently editing the notifications module in scheduler.",
            "Currently editing the notifications module in payments.",
            Some(0.98),
        );
        assert_eq!(j.kind, Kind::PossibleUpdate, "{:?}", j.evidence);
        for other in [
            "Currently editing the notifications module in notifications.",
            "Currently editing the module module in notifications.",
        ] {
            let k = judge_texts("Currently editing the notifications module in scheduler.", other, Some(0.98));
            assert_eq!(k.kind, Kind::PossibleUpdate, "{other}: {:?}", k.evidence);
        }
        let api = judge_texts(
            "Rate limit on the api API is 500 a minute.",
            "Rate limit on the search API is 500 a minute.",
            Some(0.99),
        );
        assert_eq!(api.kind, Kind::PossibleUpdate, "{:?}", api.evidence);
        assert!(Profile::of("edit src/notifications/mod.rs now").values().contains("src/notifications/mod.rs"));
        assert!(Profile::of("100 req/min").values().len() == 1, "req/min is not a path");
    }

    #[test]
    fn any_text_is_judged_without_a_panic() {
        for (a, b) in [
            ("ünïcode @ñ 'ä' “q” `x` ’s", "ünïcode @ñ 'ä'"),
            ("@", "'"),
            ("", ""),
            ("日本語のテキスト 2024年3月12日", "日本語のテキスト"),
            ("a'b'c 'unterminated", "\"open `also"),
            ("ǅemo march 3rd, 2024 $5 €6 £7 1,234,567 1) 2)", "ǅemo"),
        ] {
            let j = judge_texts(a, b, Some(0.9));
            assert!(j.closeness.is_finite(), "{a:?} / {b:?}");
        }
    }

    #[test]
    fn quoted_strings_are_values_and_apostrophes_are_not_quotes() {
        let a = Profile::of("The user asked to rename the 'invoices' tab.");
        assert!(a.values().contains("\"invoices\""), "{:?}", a.values());
        let b = Profile::of("Check the provider's console and the provider's logs.");
        assert!(b.values().is_empty(), "{:?}", b.values());
    }

    #[test]
    fn without_a_model_only_word_overlap_makes_a_duplicate() {
        let j = judge_texts(
            "The staging database is reset every Sunday.",
            "The staging database is reset every Sunday",
            None,
        );
        assert_eq!(j.kind, Kind::Duplicate);
        let k = judge_texts("Never deploy on Fridays.", "Production releases are not allowed on Friday.", None);
        assert_ne!(k.kind, Kind::Duplicate);
    }

    #[test]
    fn duplication_and_verdict_equal_the_full_judgments_on_every_pair() {
        // Near-copies, paraphrases, templated siblings, opposites, negations, joined compounds,
        // dates written two ways, typos, swapped words and texts of very different lengths.
        let texts = [
            "Retry limit for the email sender is 3 attempts.",
            "Retry limit for the email sender is 5 attempts.",
            "The retry limit of the email sender is 3 attempts",
            "Push notifications are enabled in the beta build.",
            "Push notifications are disabled in the beta build.",
            "Push notifications are not enabled in the beta build.",
            "The branch has been merged.",
            "The branch hasn't been merged yet.",
            "removing the reranker drops MRR",
            "removing the re-ranker drops MRR",
            "removing the re ranker drops MRR",
            "Rolled back the thumbnail servcie.",
            "Rolled back the thumbnail service.",
            "The quarterly access review was completed on 2024-07-15.",
            "The quarterly access review was completed on July 15, 2024.",
            "Export the chat transcripts to the archive bucket every night.",
            "Export the support emails to the archive bucket every night.",
            "Every night, export the chat transcripts to the archive bucket.",
            "Never deploy to production on Fridays.",
            "Production releases are not allowed on Friday.",
            "ok",
            "Sophie is allergic to peanuts.",
            "sophie is allergic to peanuts",
        ];
        for a in texts {
            for b in texts {
                let j = crate::dedup::jaccard(&crate::dedup::shingles(a), &crate::dedup::shingles(b));
                let (pa, pb) = (Profile::of(a), Profile::of(b));
                for cos in [None, Some(0.3), Some(0.7), Some(0.82), Some(0.9), Some(1.0)] {
                    let full = judge(&pa, &pb, j, cos);
                    assert_eq!(duplication(&pa, &pb, j, cos), full.duplication(), "{a:?} / {b:?} at cosine {cos:?}");
                    assert_eq!(
                        verdict(&pa, &pb, j, cos),
                        (full.kind, full.closeness),
                        "{a:?} / {b:?} at cosine {cos:?}"
                    );
                }
            }
        }
    }

    /// Words that make the judgment's cases: typos and spelling variants (five letters or more,
    /// one letter apart), opposites, negations, stop words, values, compounds and their parts.
    const VOCABULARY: &[&str] = &[
        "retry",
        "limit",
        "sender",
        "service",
        "servcie",
        "services",
        "authorised",
        "authorized",
        "enabled",
        "disabled",
        "passed",
        "failed",
        "not",
        "never",
        "the",
        "a",
        "is",
        "of",
        "to",
        "on",
        "off",
        "deploy",
        "production",
        "friday",
        "reranker",
        "re",
        "ranker",
        "re-ranker",
        "3",
        "5",
        "2024-03-12",
        "March 12, 2024",
        "'invoices'",
        "`main`",
        "ci-7",
        "src/app/mod.rs",
        "visible",
        "invisible",
        "locked",
        "unlocked",
        "export",
        "exports",
        "exporting",
        "archive",
        "bucket",
        "buckets",
        "nightly",
        "transcripts",
        "emails",
        "twelve",
        "hundred",
        "open",
        "closed",
        "always",
        "user",
        "users",
        "dashboard",
        "dashbaord",
        "alpha",
        "alhpa",
        "日本語",
        "日本語x",
        "ünïcode",
        "ünïcöde",
    ];

    fn text_of(words: &[usize]) -> String {
        words.iter().map(|&w| VOCABULARY[w % VOCABULARY.len()]).collect::<Vec<_>>().join(" ")
    }

    /// The first text's words, and edits that make the second from it (replace, insert,
    /// delete at a position), so that most pairs share a template, as agents' memories do.
    fn pair_strategy(max_words: usize) -> impl proptest::strategy::Strategy<Value = (String, String)> {
        use proptest::prelude::*;
        let words = proptest::collection::vec(0..VOCABULARY.len(), 0..max_words);
        let edits = proptest::collection::vec((0..3u8, any::<prop::sample::Index>(), 0..VOCABULARY.len()), 0..6);
        (words, edits).prop_map(|(a, edits)| {
            let mut b = a.clone();
            for (op, at, w) in edits {
                match op {
                    0 if !b.is_empty() => {
                        let i = at.index(b.len());
                        b[i] = w;
                    }
                    1 => {
                        let i = at.index(b.len() + 1);
                        b.insert(i, w);
                    }
                    _ if !b.is_empty() => {
                        let i = at.index(b.len());
                        b.remove(i);
                    }
                    _ => {}
                }
            }
            (text_of(&a), text_of(&b))
        })
    }

    /// The judgment in use and the plain one ([`reference`]) on one pair: the same judgment
    /// with its evidence, the same verdict and duplication, the same word order.
    fn same_as_reference(a: &str, b: &str) -> Result<(), proptest::test_runner::TestCaseError> {
        use proptest::prop_assert_eq;
        let j = crate::dedup::jaccard(&crate::dedup::shingles(a), &crate::dedup::shingles(b));
        let (pa, pb) = (Profile::of(a), Profile::of(b));
        // The word order itself, on the profiles as given and as judged (compounds joined).
        let (n, m) = (pa.keys.len().min(ORDER_WORDS), pb.keys.len().min(ORDER_WORDS));
        let plain = reference::common_order(&pa.keys, &pb.keys, reference::same_word);
        let mut rows = Vec::new();
        fill_rows(&pa, &pb, n, m, &mut rows);
        let w = m.div_ceil(64);
        prop_assert_eq!(common_length(&rows, n, w), plain.len(), "{:?} / {:?}", a, b);
        prop_assert_eq!(&common_order(&rows, n, m, w, &mut Vec::new()), &plain, "{:?} / {:?}", a, b);
        for cos in [None, Some(0.3), Some(0.75), Some(0.9), Some(1.0)] {
            prop_assert_eq!(judge(&pa, &pb, j, cos), reference::judge(&pa, &pb, j, cos), "{:?} / {:?}", a, b);
            prop_assert_eq!(verdict(&pa, &pb, j, cos), reference::verdict(&pa, &pb, j, cos), "{:?} / {:?}", a, b);
            prop_assert_eq!(
                duplication(&pa, &pb, j, cos),
                reference::duplication(&pa, &pb, j, cos),
                "{:?} / {:?}",
                a,
                b
            );
        }
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(3000))]
        #[test]
        fn the_cheap_judgment_equals_the_plain_one_on_generated_pairs((a, b) in pair_strategy(40)) {
            same_as_reference(&a, &b)?;
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(40))]
        #[test]
        fn the_cheap_judgment_equals_the_plain_one_on_long_texts((a, b) in pair_strategy(460)) {
            // Past 64 words (rows of several machine words) and past the 400 compared in order.
            same_as_reference(&a, &b)?;
        }
    }

    #[test]
    fn the_word_order_table_finds_typos_and_nothing_else() {
        let (a, b) = (Profile::of("the dashboard servcie is unlocked"), Profile::of("the dashbaord service is locked"));
        let mut rows = Vec::new();
        fill_rows(&a, &b, a.keys.len(), b.keys.len(), &mut rows);
        // Row i holds the words of b that are one word with a's word i.
        let row = |i: usize| rows[i];
        assert_eq!(row(1), 0b00010, "dashboard / dashbaord: two neighbours swapped");
        assert_eq!(row(2), 0b00100, "servcie / service");
        assert_eq!(row(4), 0, "unlock / lock: two letters apart");
        assert_eq!(common_length(&rows, a.keys.len(), 1), 4);
    }

    #[test]
    fn a_dropped_letter_is_found_where_the_words_first_differ() {
        // Against the plain definition: some letter of the longer dropped gives the shorter.
        let plain = |a: &[u8], b: &[u8]| {
            let (short, long) = if a.len() < b.len() { (a, b) } else { (b, a) };
            (0..long.len()).any(|i| long[..i] == short[..i] && long[i + 1..] == short[i..])
        };
        // Every word of three letters' alphabet of five to seven letters.
        let words_of = |len: u32| -> Vec<Vec<u8>> {
            (0..3usize.pow(len))
                .map(|mut k| {
                    (0..len)
                        .map(|_| {
                            let c = b"abc"[k % 3];
                            k /= 3;
                            c
                        })
                        .collect()
                })
                .collect()
        };
        let mut checked = 0;
        for len in [6, 7] {
            let shorter = words_of(len - 1);
            for a in words_of(len) {
                for b in &shorter {
                    assert_eq!(apart_by_one(&a, b, |_| false), plain(&a, b), "{a:?} / {b:?}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 100_000, "{checked} pairs");
    }

    #[test]
    fn words_one_typo_apart_never_differ_in_more_than_two_bytes_of_their_sets() {
        // The byte-set test in `same_at` may only turn away pairs the typo test turns away:
        // every pair of words of a four-letter alphabet, of five letters, and of five and six.
        let words_of = |len: u32| -> Vec<String> {
            (0..4usize.pow(len))
                .map(|mut k| {
                    (0..len)
                        .map(|_| {
                            let c = ['a', 'b', 'c', 'd'][k % 4];
                            k /= 4;
                            c
                        })
                        .collect()
                })
                .collect()
        };
        let (five, six) = (words_of(5), words_of(6));
        let mut apart = 0;
        for a in &five {
            let ma = Mark::of(a);
            for b in five.iter().chain(&six) {
                if apart_by_one(a.as_bytes(), b.as_bytes(), |_| false) {
                    apart += 1;
                    assert!((ma.bytes ^ Mark::of(b).bytes).count_ones() <= 2, "{a} / {b}");
                }
            }
        }
        assert!(apart > 10_000, "{apart} pairs one typo apart");
    }

    #[test]
    fn the_word_order_table_is_every_pair_of_words_compared() {
        // The table is filled by hash and by typo candidates only; each bit must still be what
        // comparing the two words says, on texts with repeats, typos, non-ASCII words, values and
        // texts longer than one row of 64 words.
        let long: String = (0..150).map(|i| format!("word{} servcie ", i % 40)).collect();
        let texts = [
            "the dashboard servcie is unlocked and the service is locked",
            "the dashbaord service is locked, the dashboard servcie unlocked",
            "Café naïve résumé: the café is naive about the résumé",
            "cafe naive resume; the cafés are naïve",
            "Retry limit 3 for sender sender sender sender",
            "retry limits 5 for senders sendre",
            "authorised authorized authorizes authorising",
            long.as_str(),
            "",
        ];
        for x in texts {
            for y in texts {
                let (a, b) = (Profile::of(x), Profile::of(y));
                let (n, m) = (a.keys.len().min(ORDER_WORDS), b.keys.len().min(ORDER_WORDS));
                let mut rows = Vec::new();
                fill_rows(&a, &b, n, m, &mut rows);
                let w = m.div_ceil(64);
                for i in 0..n {
                    for j in 0..m {
                        let bit = rows[i * w + j / 64] >> (j % 64) & 1 == 1;
                        assert_eq!(bit, same_at(&a, i, &b, j), "{:?} / {:?} in {x:?} / {y:?}", a.keys[i], b.keys[j]);
                    }
                }
            }
        }
    }

    #[test]
    fn opposites_are_the_listed_pairs_and_the_negative_prefixes() {
        // As defined: a listed pair either way round, or a negative prefix on a word of three
        // bytes or more.
        let plain = |a: &str, b: &str| {
            a != b
                && (OPPOSITES.iter().any(|&(x, y)| (x == a && y == b) || (x == b && y == a))
                    || ["un", "in", "dis", "non", "im", "ir", "il"].iter().any(|p| {
                        (a.len() > p.len() + 2 && a.strip_prefix(p) == Some(b))
                            || (b.len() > p.len() + 2 && b.strip_prefix(p) == Some(a))
                    }))
        };
        let mut words: Vec<String> = OPPOSITES.iter().flat_map(|&(x, y)| [x.to_string(), y.to_string()]).collect();
        for w in ["lock", "able", "on", "run", "valid", "é", "ét", "été", "xyz", "secure", "possible", "legal"] {
            words.push(w.to_string());
            for p in ["un", "in", "dis", "non", "im", "ir", "il", "u", "no"] {
                words.push(format!("{p}{w}"));
            }
        }
        let mut found = 0;
        for a in &words {
            for b in &words {
                assert_eq!(opposite(a, b), plain(a, b), "{a} / {b}");
                found += usize::from(plain(a, b));
            }
        }
        assert!(found > 150, "{found} opposite pairs");
    }
}
