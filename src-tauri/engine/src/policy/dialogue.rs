//! The reads-like-dialogue lint ("if the summary still reads like
//! dialogue, the extraction failed"). A semantic or procedural memory should hold a rule
//! drawn from a conversation, not the conversation. This scores how much a text reads like
//! turns of talk, with the reasons; it informs people (`show`, the memory detail, the
//! "needs extraction" filter) and never enters the ForgetScore.
//!
//! Each signal has a weight and the score is their noisy-or, `1 − Π(1 − wᵢ)`, in [0, 1];
//! a text is flagged from [`FLAG_AT`].

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use crate::model::Tier;

/// A text is flagged as needing extraction from this score on.
pub const FLAG_AT: f64 = 0.5;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct DialogueLint {
    pub score: f64,
    pub flagged: bool,
    /// In a fixed order: speaker prefix, turn timestamp, greeting, first person, second
    /// person, question, exclamation, quoted turn.
    pub reasons: Vec<String>,
}

/// Whether the lint applies to a tier: rules live in semantic and procedural memory.
pub fn applies_to(tier: Tier) -> bool {
    matches!(tier, Tier::Semantic | Tier::Procedural)
}

fn re(p: &str) -> Regex {
    Regex::new(p).expect("a valid built-in pattern")
}

/// A line opening with a conversational role: `User:`, `> assistant:`, `[12:01] Human:`.
static ROLE_PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^\s*(\[[^\]]{1,40}\]\s*)?[>*-]?\s*(user|assistant|human|ai|system|agent|bot|customer|me|q|a)\s*:\s*\S")
});
/// A line opening with a one- or two-word name and a colon: `Caroline: …`, `bob: …`. Rules
/// open like this too (`Note: …`, `Goal: …`), so it counts only with other signs of talk.
static NAME_PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^\s*(\[[^\]]{1,40}\]\s*)?[>*-]?\s*([A-Z][\w.-]{0,30}|[a-z][\w.-]{0,30})( [A-Z][\w-]{0,30})?:\s+\S")
});
/// When a turn was said: `[2024-03-02 14:05]`, `1:56 pm on 8 May, 2023`.
static TIMESTAMP: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?im)^\s*\[?\s*(\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}|\d{1,2}:\d{2}\s*(am|pm)\b)"));
/// A sentence opening with a greeting, a thank-you, a farewell or an interjection.
static GREETING: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(hey|hi|hello|thanks|thank you|thx|bye|goodbye|see you|congrats|congratulations|wow|aww|oh|sorry|glad|yeah|yep|yes|sure|okay|ok|cool|nice|great|awesome|haha|lol|good luck|way to go|sounds|no worries|of course|definitely|totally|hmm|well)\b",
    )
});
/// What opens a line before its words: a timestamp, a quote mark, a speaker.
static LINE_OPENING: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*(\[[^\]]*\]\s*)?[>*-]?\s*(\w[\w.-]*( \w+)?:\s+)?"));
static SENTENCE_END: LazyLock<Regex> = LazyLock::new(|| re(r"[.!?]\s+|\n"));
static QUESTION: LazyLock<Regex> = LazyLock::new(|| re(r#"\?\s*(\n|$|"|\))|\?\s+[A-Z]"#));
static QUOTED: LazyLock<Regex> =
    LazyLock::new(|| re(r#"(?im)(^\s*>)|\b(said|says|asked|asks|replied|told)\b[^"\n]{0,20}["“]"#));

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphabetic() || c == '\'' || c == '’'))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase().replace('’', "'"))
}

const FIRST: &[&str] = &["i", "i'm", "i've", "i'll", "i'd", "me", "my", "mine", "myself", "im", "ive"];
const SECOND: &[&str] = &["you", "your", "you're", "you've", "you'll", "you'd", "yours", "yourself", "u", "ya"];
const PLURAL: &[&str] = &["we", "us", "our", "let's", "we're", "we'll"];

/// Scores one text (pure; no settings, no clock).
pub fn lint(text: &str) -> DialogueLint {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let roles = lines.iter().filter(|l| ROLE_PREFIX.is_match(l)).count();
    let names = lines.iter().filter(|l| NAME_PREFIX.is_match(l)).count();
    let (mut first, mut second, mut plural) = (0usize, 0usize, 0usize);
    for w in words(text) {
        first += usize::from(FIRST.contains(&w.as_str()));
        second += usize::from(SECOND.contains(&w.as_str()));
        plural += usize::from(PLURAL.contains(&w.as_str()));
    }
    let timestamp = TIMESTAMP.is_match(text);
    let question = QUESTION.is_match(text);
    let exclamations = text.matches('!').count();
    let chat = first > 0 || second > 0 || timestamp || question || exclamations > 0;
    let mut weights: Vec<f64> = Vec::new();
    let mut reasons: Vec<String> = Vec::new();
    let mut add = |w: f64, reason: Option<&str>| {
        weights.push(w);
        if let Some(r) = reason {
            reasons.push(r.to_string());
        }
    };
    if roles > 0 {
        add(0.6, Some("speaker prefix"));
    } else if names >= 2 || (names == 1 && chat) {
        add(0.45, Some("speaker prefix"));
    }
    if timestamp {
        add(0.3, Some("turn timestamp"));
    }
    let greets = SENTENCE_END.split(text).any(|s| {
        let s = LINE_OPENING.replace(s, "");
        GREETING.is_match(&s)
    });
    if greets {
        add(0.35, Some("greeting"));
    }
    if first > 0 {
        add((0.25 + 0.1 * first as f64).min(0.45), Some("first person"));
    }
    if second > 0 {
        add((0.2 + 0.1 * second as f64).min(0.4), Some("second person"));
    }
    if plural > 0 && first == 0 {
        // "We deploy on Fridays" is how teams write rules: a faint sign only, no reason.
        add(0.1, None);
    }
    if question {
        add(0.3, Some("question"));
    }
    if exclamations > 0 {
        add(0.15 + 0.05 * exclamations.min(3) as f64, Some("exclamation"));
    }
    if QUOTED.is_match(text) {
        add(0.35, Some("quoted turn"));
    }
    let score = 1.0 - weights.iter().fold(1.0, |p, w| p * (1.0 - w));
    let score = (score * 1000.0).round() / 1000.0;
    DialogueLint { score, flagged: score >= FLAG_AT, reasons }
}

/// The rowids of the semantic and procedural memories the lint flags (the "needs
/// extraction" filter).
pub fn flagged_rowids(conn: &crate::storage::db::Connection) -> crate::Result<std::collections::HashSet<i64>> {
    let mut stmt =
        conn.prepare_cached("SELECT rowid, content FROM memory_item WHERE type IN ('semantic', 'procedural')")?;
    let mut rows = stmt.query([])?;
    let mut out = std::collections::HashSet::new();
    while let Some(r) = rows.next()? {
        let Some(text) = r.get_ref(1)?.as_str_or_null().ok().flatten() else { continue };
        if lint(text).flagged {
            out.insert(r.get(0)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_is_clean_and_a_turn_is_flagged_with_its_reasons() {
        let rule = lint("Deploys to production go through the staging cluster first.");
        assert_eq!(rule.score, 0.0);
        assert!(!rule.flagged && rule.reasons.is_empty());
        let turn = lint("User: hey, can you check why my build fails?");
        assert!(turn.flagged, "{turn:?}");
        for r in ["speaker prefix", "greeting", "first person", "second person", "question"] {
            assert!(turn.reasons.iter().any(|x| x == r), "{r} in {:?}", turn.reasons);
        }
        assert!((0.0..=1.0).contains(&turn.score));
    }

    #[test]
    fn a_label_before_a_colon_alone_is_not_a_speaker() {
        assert!(!lint("Note: the staging database is reset every Sunday.").flagged);
        assert!(lint("Joanna: Wow, that's so cute!").flagged);
    }
}
