//! Recall (docs/recall.md): candidates from a stemmed BM25 (Lethe's porter FTS5 index) and from
//! the cosine of local sentence embeddings, S fused from both, then re-ranked by
//! `w_sim·S + w_rec·R + w_scene·C + w_pri·Pr`, each term in [0, 1], with a breakdown per
//! result that shows the lexical and the semantic part. Any user text is a safe query: it is
//! reduced to quoted words joined by OR.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use crate::storage::db::{Connection, Statement, ValueRef};
use serde::Serialize;

use crate::decay;
use crate::error::{Error, Result};
use crate::model::{parse_tags, Tier};
use crate::ops::period::{self, NamedPeriod, Period};
use crate::settings::{RecallWeights, Settings};
use crate::time::{self, Instant};

/// What a recall asks for: the words, how many results, the filters a result must pass, the
/// caller's context (scene fit C: the share of it a memory matches), and optionally the
/// ranking's weights (docs/recall.md).
#[derive(Debug, Clone, Default)]
pub struct RecallQuery {
    /// The query in plain words.
    pub text: String,
    /// Results at most (1 to [`MAX_LIMIT`]).
    pub limit: usize,
    /// Only memories of this tier.
    pub tier: Option<Tier>,
    /// The caller's session: a memory of it matches the scene.
    pub session: Option<String>,
    /// The caller's project: a memory of it matches the scene.
    pub project: Option<String>,
    /// The caller's workflow: a procedure of that workflow matches the scene.
    pub workflow: Option<String>,
    /// The caller's tags: each one a memory carries (case-insensitive) matches the scene.
    pub tags: Vec<String>,
    /// Only pinned (or only unpinned) memories.
    pub pinned: Option<bool>,
    /// The ranking's weights (similarity, recency, scene, priority); the store's settings
    /// when absent.
    pub weights: Option<RecallWeights>,
    /// The caller's task kind: task logs of this kind are recalled (and count as scene fit);
    /// without it no task log is.
    pub task_kind: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Breakdown {
    /// S, from its two parts below.
    pub similarity: f64,
    /// Stemmed BM25 relative to the best lexical candidate of this query.
    pub lexical: f64,
    /// Cosine relative to the best candidate's; None when recall is lexical only (no model).
    pub semantic: Option<f64>,
    /// The raw cosine of the query and the memory, when both have vectors.
    pub cosine: Option<f64>,
    pub recency: f64,
    pub scene: f64,
    pub priority: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Hit {
    pub id: String,
    #[serde(rename = "type")]
    pub tier: Tier,
    pub content: String,
    pub score: f64,
    pub bm25: f64,
    pub breakdown: Breakdown,
    /// A procedure's goal and steps (its current version), so an agent reads what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub task_goal: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, as = "Option<Vec<String>>"))]
    pub steps: Option<serde_json::Value>,
    /// The query words the memory matched only through a session neighbour's text (the
    /// memories of its session written just before and after it), per neighbour; absent when
    /// none. Filled by [`mark_matched_through`] for callers that show it beside plain results
    /// (MCP); `explain` says the same as `context_matches`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "ts", ts(optional, as = "Option<Vec<ContextMatch>>"))]
    pub matched_through: Vec<ContextMatch>,
}

/// A match is weak when its similarity S is below this share of the best S in the same
/// answer: it ranked in through recency, scene or priority, or a faint likeness in meaning,
/// more than through what was asked. People see weak matches behind a "show" (agents get
/// every result, ranked, as before).
pub const WEAK_SIMILARITY_SHARE: f64 = 0.5;

/// Which of `hits` are weak matches (see [`WEAK_SIMILARITY_SHARE`]), in their order.
pub fn weak_matches(hits: &[Hit]) -> Vec<bool> {
    let best = hits.iter().map(|h| h.breakdown.similarity).fold(0.0_f64, f64::max);
    hits.iter().map(|h| h.breakdown.similarity < WEAK_SIMILARITY_SHARE * best).collect()
}

/// The FTS5 MATCH expression for arbitrary text: every word quoted, joined by OR, so that
/// `"`, `*`, `NEAR`, `-`, `OR (` are searched as words and never parsed as syntax.
pub fn match_expression(text: &str) -> Option<String> {
    quoted_words(text).map(|w| w.join(" OR "))
}

/// At most this many distinct words of a query are searched (FTS5 cost grows with each).
pub const MAX_QUERY_WORDS: usize = 64;

/// English function words, left out of the lexical query: the Snowball English stop-word
/// list (snowball.tartarus.org, `english.stop`) without its contractions, plus the pieces a
/// contraction leaves when a query is split into words ("it's" → "it", "s"; "don't" → "don",
/// "t"). They carry no topic, and a word in nearly every memory walks a posting list of nearly
/// every memory: the search costs more and ranks by the wrong words. A query made only of
/// them keeps them (see [`searched_words`]). Sorted, for a binary search.
pub const FUNCTION_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "cannot",
    "could",
    "couldn",
    "d",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "hadn",
    "has",
    "hasn",
    "have",
    "haven",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "isn",
    "it",
    "its",
    "itself",
    "ll",
    "m",
    "me",
    "more",
    "most",
    "mustn",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "ought",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "re",
    "s",
    "same",
    "shan",
    "she",
    "should",
    "shouldn",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "ve",
    "very",
    "was",
    "wasn",
    "we",
    "were",
    "weren",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "with",
    "would",
    "wouldn",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Whether a lower-cased query word is one of the [`FUNCTION_WORDS`].
pub fn is_function_word(word: &str) -> bool {
    FUNCTION_WORDS.binary_search(&word).is_ok()
}

/// The distinct words of a query, lower-cased, in order of first appearance, function words
/// left out unless the query has no other word: the first [`MAX_QUERY_WORDS`] are searched,
/// the rest are dropped (and said so by [`dropped_words`]).
fn distinct_words(text: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let all: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| seen.insert(w.clone()))
        .collect();
    if all.iter().all(|w| is_function_word(w)) {
        return all;
    }
    all.into_iter().filter(|w| !is_function_word(w)).collect()
}

/// The words of a query recall does not search because the query has more than
/// [`MAX_QUERY_WORDS`] distinct ones (repeated words count once).
pub fn dropped_words(text: &str) -> Vec<String> {
    distinct_words(text).into_iter().skip(MAX_QUERY_WORDS).collect()
}

/// The words of a query recall searches, in order: its first [`MAX_QUERY_WORDS`] distinct ones.
pub fn searched_words(text: &str) -> Vec<String> {
    distinct_words(text).into_iter().take(MAX_QUERY_WORDS).collect()
}

fn quoted_words(text: &str) -> Option<Vec<String>> {
    let words: Vec<String> = searched_words(text).into_iter().map(|w| format!("\"{w}\"")).collect();
    (!words.is_empty()).then_some(words)
}

/// The same words, all required (FTS5's implicit AND).
pub fn match_all_expression(text: &str) -> Option<String> {
    quoted_words(text).map(|w| w.join(" "))
}

/// Parses `sim,rec,scene,pri`.
pub fn parse_weights(raw: &str) -> Result<RecallWeights> {
    let parts: Vec<f64> = raw
        .split(',')
        .map(|p| p.trim().parse::<f64>().map_err(|_| Error::invalid(format!("weights: {p:?} is not a number"))))
        .collect::<Result<_>>()?;
    if parts.len() != 4 || parts.iter().any(|w| !w.is_finite() || *w < 0.0) {
        return Err(Error::invalid("weights must be four non-negative numbers: sim,rec,scene,pri"));
    }
    Ok(RecallWeights { similarity: parts[0], recency: parts[1], scene: parts[2], priority: parts[3] })
}

/// How many candidates each of the two searches (stemmed BM25, cosine) contributes.
pub const CANDIDATES: usize = 100;
/// How many top BM25 matches FTS5 hands over before filters apply (all of them are fetched
/// when filters leave too few).
pub const INNER: i64 = 400;
/// From this many vectors on, recall scans them on a second thread while FTS5 ranks (below,
/// starting a thread costs more than the ~0.5 ms scan it overlaps).
pub const PARALLEL_SCAN_MIN: usize = 20_000;
/// The lexical search: the best stemmed-BM25 matches of a MATCH expression (`?1`), ranked
/// inside FTS5, at most `?2` (-1: all).
pub const LEXICAL_SQL: &str = "SELECT rowid, bm25(lethe_fts, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5) FROM lethe_fts \
     WHERE lethe_fts MATCH ?1 ORDER BY bm25(lethe_fts, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5) LIMIT ?2";
/// The CTEs of [`LEXICAL_SQL_POSTGRES`] that weigh each term of the `tsquery` `?1` as FTS5's
/// `bm25()` does: the query's words as the index stems them (`terms`), the row count and the
/// average document length (`total`), and each term's inverse document frequency,
/// `max(ln((N − df + ½) / (df + ½)), 10⁻⁶)`, df counted through the index (`idf`).
macro_rules! postgres_word_weights {
    () => {
        "WITH query AS (SELECT to_tsquery('english', ?1) AS q), \
         terms AS (SELECT DISTINCT t.lexeme FROM regexp_matches(?1, '''([^'']+)''', 'g') AS w, \
                   unnest(tsvector_to_array(to_tsvector('english', w[1]))) AS t(lexeme)), \
         total AS (SELECT COUNT(*)::float8 AS n, COALESCE(AVG(lethe_fts_len), 0)::float8 AS avgdl FROM memory_item), \
         counted AS (SELECT lexeme, (SELECT COUNT(*) FROM memory_item d \
                                     WHERE d.lethe_fts @@ quote_literal(terms.lexeme)::tsquery)::float8 AS df \
                     FROM terms), \
         idf AS MATERIALIZED (SELECT lexeme, GREATEST(ln((total.n - df + 0.5) / (df + 0.5)), 1e-6) AS w, \
                              GREATEST(total.avgdl, 1e-9) AS avgdl FROM total, counted)"
    };
}

/// What one occurrence of a term at the label `wt` counts: content (A) 1.0, the other fields
/// and the session neighbours' text (B) 0.5, as [`LEXICAL_SQL`] weighs FTS5's columns.
macro_rules! postgres_label_weight {
    () => {
        "CASE wt WHEN 'A' THEN 1.0 WHEN 'B' THEN 0.5 WHEN 'C' THEN 0.2 ELSE 0.1 END"
    };
}

/// A term's weighted frequency in the `tsvector` `$v` (a lateral subquery with the column
/// `tf`): each occurrence counts its label's weight.
macro_rules! postgres_term_frequency {
    ($v:literal) => {
        concat!(
            "LATERAL (SELECT COALESCE(SUM(",
            postgres_label_weight!(),
            "), 0) AS tf FROM unnest(",
            $v,
            ") AS u, unnest(u.weights) AS wt WHERE u.lexeme = idf.lexeme)"
        )
    };
}

/// One term's part of BM25 (k1 = 1.2, b = 0.75, as FTS5's `bm25()` and the in-memory index)
/// for the frequency `$tf` in the row `m`.
macro_rules! postgres_bm25_term {
    ($tf:literal) => {
        concat!("idf.w * ", $tf, " * 2.2 / (", $tf, " + 1.2 * (0.25 + 0.75 * m.lethe_fts_len / idf.avgdl))")
    };
}

/// [`LEXICAL_SQL`] on a team server: PostgreSQL's full-text index finds the matches (a
/// `tsvector` column with the same stemming, content at label A, the other fields and the
/// session neighbours' text at B), and each is ranked with FTS5's `bm25()` formula: for every
/// term of the query, its inverse document frequency times its weighted frequency saturated
/// by the document's length against the average (`lethe_fts_len`, the positions the text
/// spans), summed and negated so that lower is better. (`ts_rank` knows no document
/// frequency, and its log length discount and its fading repeats put the team store 0.017
/// below the file on LoCoMo once the neighbours' text was in; measured on the team store.)
///
/// Like FTS5 handing over its best `?2` matches, the BM25 is computed for a bounded set: the
/// `?2` matches `ts_rank` (C, with the labels weighted as the columns are) ranks first, each
/// document's terms read in one pass over its `tsvector`. Scoring every match, each term by
/// its own pass, took ~1.1 s at 100k memories whose words are common; `?2` = -1 takes all
/// the matches, ranked exactly as before. The term weights are MATERIALIZED: inlined, the
/// planner counted each term's documents again for every matching row. `?1` is a `tsquery`
/// ([`tsquery_of`]).
pub const LEXICAL_SQL_POSTGRES: &str = concat!(
    postgres_word_weights!(),
    ", cand AS MATERIALIZED (SELECT m.rowid, m.lethe_fts, m.lethe_fts_len \
     FROM memory_item m CROSS JOIN query WHERE m.lethe_fts @@ query.q \
     ORDER BY ts_rank('{0.1, 0.2, 0.5, 1.0}', m.lethe_fts, query.q) DESC, m.rowid LIMIT NULLIF(?2, -1)), \
     terms_of AS (SELECT c.rowid, c.lethe_fts_len, u.lexeme, SUM(",
    postgres_label_weight!(),
    ") AS tf FROM cand c CROSS JOIN unnest(c.lethe_fts) AS u CROSS JOIN unnest(u.weights) AS wt \
     WHERE u.lexeme IN (SELECT lexeme FROM idf) GROUP BY c.rowid, c.lethe_fts_len, u.lexeme) \
     SELECT m.rowid, (-SUM(",
    postgres_bm25_term!("m.tf"),
    "))::float8 FROM terms_of m JOIN idf ON idf.lexeme = m.lexeme GROUP BY m.rowid ORDER BY 2, m.rowid \
     LIMIT NULLIF(?2, -1)"
);

/// The lexical search of a connection's backend.
pub fn lexical_sql(conn: &Connection) -> &'static str {
    if conn.is_postgres() {
        LEXICAL_SQL_POSTGRES
    } else {
        LEXICAL_SQL
    }
}

/// A MATCH expression of [`match_expression`] or [`match_all_expression`] as the text of a
/// PostgreSQL `tsquery`: each quoted word a lexeme, `OR` as `|`, side by side as `&`.
pub fn tsquery_of(expr: &str) -> String {
    let mut out = String::new();
    for token in expr.split_whitespace() {
        if token == "OR" {
            out.push_str(" | ");
            continue;
        }
        if !out.is_empty() && !out.ends_with("| ") {
            out.push_str(" & ");
        }
        // The words are letters, digits and `_` only (distinct_words), so quoting is enough.
        out.push('\'');
        out.push_str(token.trim_matches('"'));
        out.push('\'');
    }
    out
}

/// The expression [`lexical_sql`] takes on this connection.
pub fn lexical_param(conn: &Connection, expr: &str) -> String {
    if conn.is_postgres() {
        tsquery_of(expr)
    } else {
        expr.to_string()
    }
}

/// The lexical share of S when a model is loaded: `S = α·lexical + (1−α)·semantic`. Chosen on
/// LoCoMo's dev conversations against reciprocal-rank fusion (BENCHMARKS.md, "Recall by
/// meaning"); 0.5 is the round value in the flat optimum (0.4–0.5).
pub const LEXICAL_SHARE: f64 = 0.5;

pub fn recall(conn: &Connection, q: &RecallQuery, now: Instant) -> Result<Vec<Hit>> {
    // One read transaction for the handful of statements: a consistent view, and one shared
    // lock instead of one per statement.
    crate::store::read_tx(conn, || recall_in_tx(conn, q, now))
}

/// What a recall answers, whichever interface asked (the CLI prints it, MCP returns it, the
/// window receives it): the results, how recall ran, and what of the query it read.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "RecallAnswer"))]
pub struct Answer {
    pub results: Vec<Hit>,
    /// Per result, in order: whether it is a weak match (its similarity below
    /// [`WEAK_SIMILARITY_SHARE`] of the best), which the window shows only on request.
    pub weak: Vec<bool>,
    /// "semantic + lexical (model fingerprint)" or "lexical recall only: why".
    pub recall_mode: String,
    /// The words the lexical search looked for (function words left out unless the query has
    /// nothing else).
    pub searched_words: Vec<String>,
    /// The periods the query names (absent when none): memories dated inside match the scene,
    /// and recency counts from the period.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub periods: Option<Vec<NamedPeriod>>,
    #[serde(flatten)]
    #[cfg_attr(feature = "ts", ts(flatten))]
    pub unsearched: Unsearched,
}

/// What of a query recall did not search, as every recall answer says it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Unsearched {
    /// Words not searched: the query had more than [`MAX_QUERY_WORDS`] distinct words.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub dropped_words: Option<Vec<String>>,
    /// A sentence for a person when part of the query was not searched.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub notice: Option<String>,
}

impl Unsearched {
    /// The words of `text` past [`MAX_QUERY_WORDS`], and a sentence saying so (none when all
    /// were searched).
    pub fn of(text: &str) -> Unsearched {
        let dropped = dropped_words(text);
        if dropped.is_empty() {
            return Unsearched::default();
        }
        let notice = format!(
            "the query has more than {MAX_QUERY_WORDS} distinct words; the last {} were not searched",
            dropped.len()
        );
        Unsearched { dropped_words: Some(dropped), notice: Some(notice) }
    }
}

/// [`recall`], answered whole: the results with what recall read of the query.
pub fn answer(conn: &Connection, q: &RecallQuery, now: Instant) -> Result<Answer> {
    let results = recall(conn, q, now)?;
    let periods = named_periods(&q.text, now);
    Ok(Answer {
        weak: weak_matches(&results),
        results,
        recall_mode: crate::embed::status(),
        searched_words: searched_words(&q.text),
        periods: (!periods.is_empty()).then_some(periods),
        unsearched: Unsearched::of(&q.text),
    })
}

/// Fills each result's `matched_through`: the query words it matched only through a session
/// neighbour's text, per neighbour (see [`context_matches`]).
pub fn mark_matched_through(conn: &Connection, answer: &mut Answer, text: &str) -> Result<()> {
    let through = context_matches(conn, &answer.results, text)?;
    for (hit, m) in answer.results.iter_mut().zip(through) {
        hit.matched_through = m;
    }
    Ok(())
}

/// The memories recall finds for a topic (at most `limit`, 1-100), for the meta statistics of
/// that topic; the search is not recorded as recall hits.
pub fn topic_ids(conn: &Connection, query: &str, limit: usize, now: Instant) -> Result<Vec<String>> {
    if !(1..=100).contains(&limit) {
        return Err(Error::invalid("limit must be 1-100"));
    }
    let q = RecallQuery { text: query.to_string(), limit, ..Default::default() };
    Ok(recall(conn, &q, now)?.into_iter().map(|h| h.id).collect())
}

/// How many declined candidates of each kind [`explain`] lists unless told otherwise.
pub const DECLINED: usize = 10;

/// A result of [`explain`]: the hit as [`recall`] returns it, and its age.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ExplainedHit {
    #[serde(flatten)]
    pub hit: Hit,
    /// Days from `created_at` to `now`; None when the stored time is unreadable.
    pub age_days: Option<f64>,
    /// The part of `breakdown.lexical` the memory's own text gives: what its BM25 would be
    /// without its session neighbours' text, relative to the same best candidate.
    pub lexical_own: f64,
    /// The part its session neighbours' text adds (`lexical − lexical_own`).
    pub lexical_context: f64,
    /// The query words it matched only through a session neighbour, per neighbour.
    pub context_matches: Vec<ContextMatch>,
}

/// Query words a result matched only through the text of one of its session neighbours.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ContextMatch {
    /// The neighbour's memory id.
    pub neighbour: String,
    /// The searched words its text holds and the result's own text does not.
    pub words: Vec<String>,
    /// E.g. "matched its neighbour mem_x: 'lake'".
    pub said: String,
}

/// Why a candidate is not among the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum DeclineKind {
    /// Eligible, but scored below the last result.
    RankedOut,
    /// Matched the query but recall leaves it out by its state.
    Excluded,
}

/// A memory recall did not return, with the reason a person can read.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Declined {
    pub id: String,
    #[serde(rename = "type")]
    pub tier: Tier,
    pub preview: String,
    pub kind: DeclineKind,
    /// Its score and breakdown (ranked out only: an excluded memory is not scored).
    pub score: Option<f64>,
    pub breakdown: Option<Breakdown>,
    pub age_days: Option<f64>,
    /// The weighted term that fell furthest short of the last result's: similarity, recency,
    /// scene or priority (ranked out only).
    pub component: Option<String>,
    /// E.g. "recency 0.02 — 14 months old", "in quarantine", "superseded by mem_…".
    pub reason: String,
    /// The memory that supersedes it, when that is why it is excluded.
    pub superseded_by: Option<String>,
}

/// What [`explain`] answers: the results (exactly [`recall`]'s), the next candidates that
/// ranked out, then the matches excluded by state, and the weights that ranked them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Explained {
    pub results: Vec<ExplainedHit>,
    pub declined: Vec<Declined>,
    pub weights: RecallWeights,
    /// The periods the query names (see [`named_periods`]); empty when it names none.
    pub periods: Vec<NamedPeriod>,
    /// The words the lexical search looked for: the query's, function words left out (unless
    /// it has no other), at most [`MAX_QUERY_WORDS`].
    pub searched_words: Vec<String>,
}

/// The periods a query names ("in July 2022", "on 3 August 2023", "last week"), as `recall`
/// answers them: a memory dated inside one matches the scene, and recency counts from it.
pub fn named_periods(text: &str, now: Instant) -> Vec<NamedPeriod> {
    period::named(text, now).iter().map(Period::view).collect()
}

/// [`recall`] with its reasons: the same results in the same order with the same breakdowns,
/// plus up to `declined` candidates that ranked out and up to `declined` matches excluded by
/// state (in quarantine, superseded, archived, a task log of another kind). Reads only: it
/// records no meta-memory statistics (callers must not either) and writes nothing.
pub fn explain(conn: &Connection, q: &RecallQuery, now: Instant, declined: usize) -> Result<Explained> {
    crate::store::read_tx(conn, || {
        let ranked = rank(conn, q, now, true)?;
        let Ranked { limit, weights, periods, mut hits, excluded } = ranked;
        let below: Vec<(i64, Hit, Why)> = hits.split_off(limit.min(hits.len())).into_iter().take(declined).collect();
        let cut = hits.last().map(|(_, h, _)| h.breakdown);
        let ages: Vec<Option<f64>> = hits.iter().map(|(_, _, w)| w.age_days).collect();
        let rowids: Vec<i64> = hits.iter().map(|(r, _, _)| *r).collect();
        let words = searched_words(&q.text);
        let mut results = Vec::with_capacity(rowids.len());
        for ((hit, age_days), rowid) in
            fill(conn, hits.into_iter().map(|(rowid, h, _)| (rowid, h)).collect())?.into_iter().zip(ages).zip(rowids)
        {
            let (lexical_own, context_matches) = through_context(conn, rowid, &hit, &words)?;
            let lexical_context = (hit.breakdown.lexical - lexical_own).max(0.0);
            results.push(ExplainedHit { hit, age_days, lexical_own, lexical_context, context_matches });
        }
        let mut out = Vec::with_capacity(below.len() + excluded.len().min(declined));
        let mut preview = conn.prepare_cached("SELECT id, content FROM memory_item WHERE rowid = ?1")?;
        for (rowid, h, why) in below {
            let (id, content): (String, String) = preview.query_row([rowid], |r| Ok((r.get(0)?, r.get(1)?)))?;
            let (component, reason) = match cut {
                Some(cut) => ranked_out_reason(&h.breakdown, &cut, &weights, why, &periods),
                None => (None, String::new()),
            };
            out.push(Declined {
                id,
                tier: h.tier,
                preview: crate::model::preview(&content, 200),
                kind: DeclineKind::RankedOut,
                score: Some(h.score),
                breakdown: Some(h.breakdown),
                age_days: why.age_days,
                component,
                reason,
                superseded_by: None,
            });
        }
        let task_logs = crate::session::has_tables(conn)?;
        let mut state = conn.prepare_cached(&format!(
            "SELECT m.id, m.type, m.content, COALESCE(m.is_deleted, 0), m.created_at, \
             (SELECT s.new_id FROM lethe_supersede s WHERE s.old_id = m.id ORDER BY s.created_at LIMIT 1), \
             (SELECT a.archive_no FROM lethe_archive a WHERE a.memory_id = m.id AND a.restored_at IS NULL LIMIT 1), {} \
             FROM memory_item m WHERE m.rowid = ?1",
            if task_logs { "(SELECT t.task_kind FROM lethe_task_log t WHERE t.memory_id = m.id)" } else { "NULL" }
        ))?;
        for rowid in excluded.into_iter().take(declined) {
            let mut rows = state.query([rowid])?;
            let Some(r) = rows.next()? else { continue };
            let Ok(tier) = r.get_ref(1)?.as_str()?.parse::<Tier>() else { continue };
            let (Some(id), Some(content)) = (crate::model::lenient::text(&r, 0)?, crate::model::lenient::text(&r, 2)?)
            else {
                continue;
            };
            let deleted = crate::model::lenient::flag(&r, 3)?;
            let created = time::parse_opt(r.get_ref(4)?.as_str_or_null()?);
            let superseded_by: Option<String> = r.get(5)?;
            let archive_no: Option<i64> = r.get(6)?;
            let task_kind: Option<String> = r.get(7)?;
            let reason = if deleted {
                "in quarantine".to_string()
            } else if let Some(new) = &superseded_by {
                format!("superseded by {new}")
            } else if let Some(n) = archive_no {
                format!("archived (#{n})")
            } else if let Some(k) = &task_kind {
                format!("task log of {k}: recalled only for that task kind")
            } else {
                "excluded".to_string()
            };
            out.push(Declined {
                id,
                tier,
                preview: crate::model::preview(&content, 200),
                kind: DeclineKind::Excluded,
                score: None,
                breakdown: None,
                age_days: created.map(|t| time::days_between(t, now)),
                component: None,
                reason,
                superseded_by: if deleted { None } else { superseded_by },
            });
        }
        Ok(Explained {
            results,
            declined: out,
            weights,
            periods: periods.iter().map(Period::view).collect(),
            searched_words: words,
        })
    })
}

/// `recall --explain`'s answer and the window's Recall view's: [`explain`]'s, how recall finds
/// memories (`recall_mode`), and the words it did not search, as [`Answer`] says them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "RecallExplained"))]
pub struct ExplainAnswer {
    #[serde(flatten)]
    pub explained: Explained,
    /// "semantic + lexical (model)" or "lexical recall only: why".
    pub recall_mode: String,
    #[serde(flatten)]
    #[cfg_attr(feature = "ts", ts(flatten))]
    pub unsearched: Unsearched,
}

/// [`explain`] with the recall mode and the words not searched: what `lethe recall --explain`
/// prints and the window's Recall view shows.
pub fn explain_answer(conn: &Connection, q: &RecallQuery, now: Instant, declined: usize) -> Result<ExplainAnswer> {
    Ok(ExplainAnswer {
        explained: explain(conn, q, now, declined)?,
        recall_mode: crate::embed::status(),
        unsearched: Unsearched::of(&q.text),
    })
}

/// For each of `hits` (as [`recall`] returned them for `text`), the query words it matched
/// only through a session neighbour, per neighbour (what [`explain`] says as
/// `context_matches`), for callers that show it beside plain results (MCP).
pub fn context_matches(conn: &Connection, hits: &[Hit], text: &str) -> Result<Vec<Vec<ContextMatch>>> {
    let words = searched_words(text);
    crate::store::read_tx(conn, || {
        let mut rowid = conn.prepare_cached("SELECT rowid FROM memory_item WHERE id = ?1")?;
        hits.iter()
            .map(|h| {
                let Some(at) = rowid.query_map([&h.id], |r| r.get::<_, i64>(0))?.next().transpose()? else {
                    return Ok(Vec::new());
                };
                context_words(conn, at, h, &words)
            })
            .collect()
    })
}

/// The BM25 of the row at `rowid` for `expr` with the session neighbours' text weighted 0
/// (its own text alone; the row's length is the same).
const OWN_BM25_SQL: &str = "SELECT bm25(lethe_fts, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.0) FROM lethe_fts \
     WHERE lethe_fts MATCH ?1 AND rowid = ?2";

/// [`OWN_BM25_SQL`] on a team server: the row's BM25 for the `tsquery` `?1` from its own
/// text (the neighbours' context weighted 0, the document's length the same) and from its
/// whole document, both positive.
const OWN_SHARE_SQL_POSTGRES: &str = concat!(
    postgres_word_weights!(),
    " SELECT COALESCE(SUM(",
    postgres_bm25_term!("o.tf"),
    "), 0)::float8, COALESCE(SUM(",
    postgres_bm25_term!("a.tf"),
    "), 0)::float8 FROM memory_item m CROSS JOIN idf CROSS JOIN ",
    postgres_term_frequency!("lethe_own_fts(m.content, m.tags, m.task_goal, m.workflow_name, m.skill_name, m.steps)"),
    " AS o CROSS JOIN ",
    postgres_term_frequency!("m.lethe_fts"),
    " AS a WHERE m.rowid = ?2"
);

/// Where [`through_context`] looks for a word in a row.
#[derive(Clone, Copy)]
enum TextPart {
    /// The memory's own fields.
    Own,
    /// Its session neighbours' text.
    Context,
    /// Its content alone.
    Content,
}

impl TextPart {
    /// The columns of `lethe_fts` ([`crate::lexical::COLUMNS`]) this part is.
    fn columns(self) -> std::ops::Range<usize> {
        match self {
            TextPart::Own => 0..crate::lexical::CONTEXT_COLUMN,
            TextPart::Context => crate::lexical::CONTEXT_COLUMN..crate::lexical::CONTEXT_COLUMN + 1,
            TextPart::Content => 0..1,
        }
    }
}

/// Whether a part of a row holds a searched word, as the lexical search stems it. On a file
/// each row's text is read once and tokenized by FTS5's own tokenizer
/// ([`crate::lexical::IndexedRow`]); a team server answers with its `tsvector`s.
struct Lookup<'c> {
    conn: &'c Connection,
    tokenizer: Option<crate::lexical::Tokenizer<'c>>,
    rows: std::collections::HashMap<i64, Option<crate::lexical::IndexedRow>>,
}

impl<'c> Lookup<'c> {
    fn new(conn: &'c Connection) -> Result<Lookup<'c>> {
        let tokenizer = match conn.sqlite() {
            Some(sqlite) => Some(crate::lexical::Tokenizer::new(sqlite)?),
            None => None,
        };
        Ok(Lookup { conn, tokenizer, rows: std::collections::HashMap::new() })
    }

    /// Whether `word` is in `part` of the row at `rowid`.
    fn holds(&mut self, part: TextPart, rowid: i64, word: &str) -> Result<bool> {
        self.holds_any(part, rowid, std::slice::from_ref(&word))
    }

    /// Whether `part` of the row at `rowid` holds any of `words`.
    fn holds_any(&mut self, part: TextPart, rowid: i64, words: &[impl AsRef<str>]) -> Result<bool> {
        let Some(tokenizer) = self.tokenizer.as_mut() else {
            for w in words {
                if holds_postgres(self.conn, part, rowid, w.as_ref())? {
                    return Ok(true);
                }
            }
            return Ok(false);
        };
        let row = match self.rows.entry(rowid) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(crate::lexical::IndexedRow::read(self.conn, tokenizer, rowid)?)
            }
        };
        let Some(row) = row else { return Ok(false) };
        for w in words {
            if row.holds(part.columns(), &crate::lexical::query_phrase(tokenizer, w.as_ref())?) {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// [`Lookup::holds`] on a team server.
fn holds_postgres(conn: &Connection, part: TextPart, rowid: i64, word: &str) -> Result<bool> {
    let vector = match part {
        TextPart::Own => "lethe_own_fts(m.content, m.tags, m.task_goal, m.workflow_name, m.skill_name, m.steps)",
        TextPart::Context => "m.lethe_context",
        TextPart::Content => "lethe_own_fts(m.content, NULL, NULL, NULL, NULL, NULL)",
    };
    let sql = format!(
        "SELECT EXISTS (SELECT 1 FROM memory_item m WHERE m.rowid = ?2 \
         AND {vector} @@ to_tsquery('english', quote_literal(?1)))"
    );
    conn.prepare_cached(&sql)?.query_row(crate::params![word, rowid], |r| r.get::<_, bool>(0))
}

/// The session neighbours of the row at `rowid` (before, after), as the index holds them.
fn session_neighbours(conn: &Connection, rowid: i64) -> Result<(Option<i64>, Option<i64>)> {
    let sql = if conn.is_postgres() {
        "SELECT c.before_rowid, c.after_rowid FROM memory_item m, \
         lethe_session_context(m.rowid, m.team, m.session_id, m.owner_id, m.privacy_scope, m.created_at) c \
         WHERE m.rowid = ?1"
    } else {
        "SELECT before_rowid, after_rowid FROM lethe_session_context WHERE memory_rowid = ?1"
    };
    conn.prepare_cached(sql)?.query_row([rowid], |r| Ok((r.get(0)?, r.get(1)?)))
}

/// A result's lexical part from its own text, and the words it matched only through a
/// session neighbour, with the neighbour that holds them.
fn through_context(conn: &Connection, rowid: i64, hit: &Hit, words: &[String]) -> Result<(f64, Vec<ContextMatch>)> {
    if hit.bm25 >= 0.0 || words.is_empty() {
        return Ok((hit.breakdown.lexical, Vec::new()));
    }
    let Some(expr) = match_expression(&words.join(" ")) else { return Ok((hit.breakdown.lexical, Vec::new())) };
    // The share of the row's rank its own text gives.
    let share = if conn.is_postgres() {
        let (own, all): (f64, f64) = conn
            .prepare_cached(OWN_SHARE_SQL_POSTGRES)?
            .query_row(crate::params![tsquery_of(&expr), rowid], |r| Ok((r.get(0)?, r.get(1)?)))?;
        if all > 0.0 {
            own / all
        } else {
            1.0
        }
    } else {
        let own: f64 = conn.prepare_cached(OWN_BM25_SQL)?.query_row(crate::params![expr, rowid], |r| r.get(0))?;
        // Both negative (lower is better).
        own / hit.bm25
    };
    let lexical_own = (hit.breakdown.lexical * share).clamp(0.0, hit.breakdown.lexical);
    Ok((lexical_own, context_words(conn, rowid, hit, words)?))
}

/// The words a lexical result at `rowid` matched only through a session neighbour, per
/// neighbour. Most results match through their own text: one look-up says whether the
/// neighbours' text holds any of the words at all, and a word is looked for in the
/// neighbours' text only when the result's own text does not hold it.
fn context_words(conn: &Connection, rowid: i64, hit: &Hit, words: &[String]) -> Result<Vec<ContextMatch>> {
    if hit.bm25 >= 0.0 || words.is_empty() || match_expression(&words.join(" ")).is_none() {
        return Ok(Vec::new());
    }
    let mut lookup = Lookup::new(conn)?;
    if !lookup.holds_any(TextPart::Context, rowid, words)? {
        return Ok(Vec::new());
    }
    let only_there: Vec<&String> = words
        .iter()
        .map(|w| Ok((w, !lookup.holds(TextPart::Own, rowid, w)? && lookup.holds(TextPart::Context, rowid, w)?)))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .filter_map(|(w, only)| only.then_some(w))
        .collect();
    if only_there.is_empty() {
        return Ok(Vec::new());
    }
    let (before, after) = session_neighbours(conn, rowid)?;
    let mut out = Vec::new();
    for at in [before, after].into_iter().flatten() {
        let held: Vec<String> = only_there
            .iter()
            .map(|w| Ok((w, lookup.holds(TextPart::Content, at, w)?)))
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .filter(|(_, held)| *held)
            .map(|(w, _)| (*w).clone())
            .collect();
        if held.is_empty() {
            continue;
        }
        let id: String =
            conn.prepare_cached("SELECT id FROM memory_item WHERE rowid = ?1")?.query_row([at], |r| r.get(0))?;
        let quoted: Vec<String> = held.iter().map(|w| format!("'{w}'")).collect();
        let said = format!("matched its neighbour {id}: {}", quoted.join(", "));
        out.push(ContextMatch { neighbour: id, words: held, said });
    }
    Ok(out)
}

/// Which weighted term of a ranked-out candidate fell furthest short of the last result's,
/// and the sentence that says so.
fn ranked_out_reason(
    b: &Breakdown,
    cut: &Breakdown,
    w: &RecallWeights,
    why: Why,
    periods: &[Period],
) -> (Option<String>, String) {
    let gaps = [
        ("similarity", w.similarity * (cut.similarity - b.similarity)),
        ("recency", w.recency * (cut.recency - b.recency)),
        ("scene", w.scene * (cut.scene - b.scene)),
        ("priority", w.priority * (cut.priority - b.priority)),
    ];
    let (name, gap) = gaps.iter().copied().fold(("", 0.0_f64), |best, g| if g.1 > best.1 { g } else { best });
    if gap <= 0.0 {
        return (None, "ties the last result; ranked below it by BM25".to_string());
    }
    let reason = match name {
        "similarity" => match b.semantic {
            Some(sem) => format!("similarity {:.2} — lexical {:.2}, semantic {:.2}", b.similarity, b.lexical, sem),
            None => format!("similarity {:.2} — lexical {:.2}", b.similarity, b.lexical),
        },
        "recency" => match (why.period_days, why.age_days) {
            (Some(away), _) => {
                let said = periods.iter().map(|p| p.said.as_str()).collect::<Vec<_>>().join(" / ");
                if away == 0.0 {
                    format!("recency {:.2} — dated inside {said}", b.recency)
                } else {
                    format!("recency {:.2} — {} from {said}", b.recency, age_words(away).trim_end_matches(" old"))
                }
            }
            (None, Some(age)) => format!("recency {:.2} — {}", b.recency, age_words(age)),
            (None, None) => format!("recency {:.2} — no readable creation time", b.recency),
        },
        "scene" if b.scene == 0.0 => "scene 0.00 — matches none of the context".to_string(),
        "scene" => {
            format!("scene {:.2} — matches less of the context than the last result ({:.2})", b.scene, cut.scene)
        }
        _ => format!(
            "priority {:.2} — importance {:.2}, {}",
            b.priority,
            why.importance,
            if why.pinned { "pinned" } else { "not pinned" }
        ),
    };
    (Some(name.to_string()), reason)
}

/// An age in the unit a person would say it in: "3 days old", "14 months old", "2.5 years old".
pub fn age_words(days: f64) -> String {
    let days = days.max(0.0);
    if days < 1.0 {
        "less than a day old".to_string()
    } else if days < 61.0 {
        let d = days.floor() as i64;
        format!("{d} day{} old", if d == 1 { "" } else { "s" })
    } else if days < 730.0 {
        format!("{} months old", (days / 30.44).round() as i64)
    } else {
        format!("{:.1} years old", days / 365.25)
    }
}

/// The columns of a row the ranking reads, as [`facts_of`] reads them: from the candidate
/// statement, or kept per row by the process's in-memory index (`lexical`).
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// `None`: a text that names no tier (the row is filtered out).
    pub tier: Option<Tier>,
    pub created: Option<Instant>,
    pub importance: f64,
    pub pinned: bool,
    pub deleted: bool,
    pub session: Option<String>,
    pub project: Option<String>,
    pub workflow: Option<String>,
    pub tags: Vec<String>,
}

/// The statement columns [`facts_of`] reads, in order, from `base`.
pub const FACT_COLUMNS: &str = "m.type, m.created_at, m.importance, m.pinned, COALESCE(m.is_deleted, 0), \
     m.session_id, m.project_id, m.workflow_name, m.tags";

/// How many columns [`FACT_COLUMNS`] names.
pub const FACT_COLUMN_COUNT: usize = 9;

/// Reads [`FACT_COLUMNS`] at `base..base + 9`. A row whose tier or time is not text (another
/// program's; reported as mistyped) gets no tier, so recall leaves it out as scoring does.
pub fn facts_of(r: &crate::storage::db::Row, base: usize) -> Result<Facts> {
    // Context columns as text when they hold any: scene fit compares them as text.
    let text = |i: usize| crate::model::lenient::text(r, base + i);
    let tags = text(8)?;
    let created = r.get_ref(base + 1)?;
    let readable = matches!(created, ValueRef::Text(_) | ValueRef::Null);
    Ok(Facts {
        tier: match r.get_ref(base)? {
            ValueRef::Text(t) if readable => std::str::from_utf8(t).ok().and_then(|t| t.parse::<Tier>().ok()),
            _ => None,
        },
        created: time::parse_opt(created.as_str_or_null().ok().flatten()),
        importance: crate::model::lenient::real(r, base + 2)?.unwrap_or(0.5),
        pinned: crate::model::lenient::flag(r, base + 3)?,
        deleted: crate::model::lenient::flag(r, base + 4)?,
        session: text(5)?,
        project: text(6)?,
        workflow: text(7)?,
        tags: parse_tags(tags.as_deref()),
    })
}

/// A candidate: the columns the ranking needs, its BM25 (when a word matched) and cosine.
struct Cand {
    rowid: i64,
    bm25: f64,
    cosine: Option<f64>,
    tier: Tier,
    created: Option<Instant>,
    importance: f64,
    pinned: bool,
    session: Option<String>,
    project: Option<String>,
    workflow: Option<String>,
    tags: Vec<String>,
    task_kind: Option<String>,
}

/// What the ranking knows of a candidate beyond its hit: enough to say why it ranked where
/// it did.
#[derive(Debug, Clone, Copy)]
struct Why {
    age_days: Option<f64>,
    /// Days from the nearest period the query names (None when it names none).
    period_days: Option<f64>,
    importance: f64,
    pinned: bool,
}

/// Every eligible candidate of a query, best first, plus (when asked) the rowids of matches
/// left out by their state, in the order the searches met them.
struct Ranked {
    limit: usize,
    weights: RecallWeights,
    periods: Vec<Period>,
    hits: Vec<(i64, Hit, Why)>,
    excluded: Vec<i64>,
}

/// The most results a query (or `similar`) answers: a larger limit asks for a list it cannot hold.
pub const MAX_LIMIT: usize = 1000;

/// The effective number of results of a query.
fn effective_limit(q: &RecallQuery) -> usize {
    if q.limit == 0 {
        10
    } else {
        q.limit.min(MAX_LIMIT)
    }
}

fn recall_in_tx(conn: &Connection, q: &RecallQuery, now: Instant) -> Result<Vec<Hit>> {
    let mut ranked = rank(conn, q, now, false)?;
    ranked.hits.truncate(ranked.limit);
    fill(conn, ranked.hits.into_iter().map(|(rowid, h, _)| (rowid, h)).collect())
}

/// Id and content (and a procedure's goal and steps) are read only for the memories returned,
/// not for every candidate. A row whose id or content is not text (another program's;
/// reported as mistyped) is left out; a goal or steps that are not text are left out alone.
fn fill(conn: &Connection, hits: Vec<(i64, Hit)>) -> Result<Vec<Hit>> {
    let mut content = conn.prepare_cached(
        "SELECT id, content, CASE WHEN type = 'procedural' THEN task_goal END, \
         CASE WHEN type = 'procedural' THEN steps END FROM memory_item WHERE rowid = ?1",
    )?;
    let text = |v: ValueRef| match v {
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        _ => None,
    };
    let mut out = Vec::with_capacity(hits.len());
    for (rowid, mut h) in hits {
        let read = content.query_row([rowid], |r| {
            Ok(match (text(r.get_ref(0)?), text(r.get_ref(1)?)) {
                (Some(id), Some(c)) => Some((id, c, text(r.get_ref(2)?), text(r.get_ref(3)?))),
                _ => None,
            })
        })?;
        if let Some((id, c, goal, steps)) = read {
            (h.id, h.content) = (id, c);
            h.task_goal = goal;
            h.steps = steps.and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok()).filter(|v| v.is_array());
            out.push(h);
        }
    }
    Ok(out)
}

/// How many candidates pgvector's HNSW search keeps in view (`hnsw.ef_search`): above the
/// `2 × CANDIDATES` asked for, so that the list it returns is the exact one nearly always.
const EF_SEARCH: usize = 4 * CANDIDATES;

/// Up to `2 × CANDIDATES` memories whose vectors are nearest `qv`, best first, from the team
/// server's HNSW index (pgvector): its `EF_SEARCH` nearest, filtered by state, tier and pin
/// as Lethe's own scan is (a filter that leaves fewer gives fewer semantic candidates).
fn nearest_on_server(conn: &Connection, q: &RecallQuery, qv: &crate::embed::Vector, model: &str) -> Result<Vec<i64>> {
    conn.query_row(
        "SELECT set_config('hnsw.ef_search', ?1, true), set_config('hnsw.iterative_scan', 'relaxed_order', true)",
        [EF_SEARCH.to_string()],
        |_| Ok(()),
    )?;
    let literal = format!("[{}]", qv.q.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","));
    // The index is searched on `lethe_vector` alone (with a join in the same query the
    // planner scans every memory instead); each of its EF_SEARCH nearest is then looked up by
    // id (a correlated subquery: one index probe each, where a join hashed every memory),
    // filtered by state, tier and pin, and the best 2 × CANDIDATES kept.
    let mut stmt = conn.prepare_cached(
        "SELECT r FROM ( \
             SELECT (SELECT m.rowid FROM memory_item m WHERE m.id = v.memory_id AND COALESCE(m.is_deleted, 0) = 0 \
                       AND (CAST(?3 AS TEXT) IS NULL OR m.type = ?3) \
                       AND (CAST(?4 AS BIGINT) IS NULL OR m.pinned = ?4)) AS r, v.d \
             FROM (SELECT memory_id, emb <=> CAST(CAST(?1 AS TEXT) AS vector) AS d FROM lethe_vector \
                   WHERE model = ?2 ORDER BY emb <=> CAST(CAST(?1 AS TEXT) AS vector) LIMIT ?6) v) x \
         WHERE r IS NOT NULL ORDER BY d, r LIMIT ?5",
    )?;
    let tier = q.tier.map(|t| t.to_string());
    let pinned = q.pinned.map(i64::from);
    let rows = stmt
        .query_map(
            crate::storage::db::params![literal, model, tier, pinned, (2 * CANDIDATES) as i64, EF_SEARCH as i64],
            |r| r.get(0),
        )?
        .collect::<Result<Vec<i64>>>()?;
    Ok(rows)
}

/// Each candidate's cosine with `qv`, from its stored vector (when it has one of this model):
/// the same quantised cosine Lethe's own index gives.
fn cosines_from_rows(conn: &Connection, cands: &mut [Cand], qv: &crate::embed::Vector, model: &str) -> Result<()> {
    if cands.is_empty() {
        return Ok(());
    }
    let list = format!("[{}]", cands.iter().map(|c| c.rowid.to_string()).collect::<Vec<_>>().join(","));
    let mut stmt = conn.prepare_cached(
        "SELECT m.rowid, v.vec FROM memory_item m JOIN lethe_vector v ON v.memory_id = m.id AND v.model = ?2 \
         WHERE m.rowid IN (SELECT value::bigint FROM json_array_elements_text(CAST(CAST(?1 AS TEXT) AS json)))",
    )?;
    let mut found: std::collections::HashMap<i64, f64> = std::collections::HashMap::with_capacity(cands.len());
    let mut rows = stmt.query(crate::storage::db::params![list, model])?;
    while let Some(r) = rows.next()? {
        if let Some(v) = crate::embed::Vector::from_bytes(r.get_ref(1)?.as_blob()?) {
            found.insert(r.get(0)?, f64::from(qv.cosine(&v)));
        }
    }
    for c in cands.iter_mut() {
        c.cosine = found.get(&c.rowid).copied();
    }
    Ok(())
}

/// What the candidate lookup found at a rowid.
enum Looked {
    Eligible(Box<Cand>),
    /// Deleted (in quarantine), superseded, archived, or a task log of another kind.
    Excluded,
    /// Left out by the caller's tier or pinned filter (or an unreadable tier).
    Filtered,
}

fn rank(conn: &Connection, q: &RecallQuery, now: Instant, collect_excluded: bool) -> Result<Ranked> {
    let limit = effective_limit(q);
    let Some(any) = match_expression(&q.text) else {
        return Ok(Ranked {
            limit,
            weights: RecallWeights::default(),
            periods: Vec::new(),
            hits: Vec::new(),
            excluded: Vec::new(),
        });
    };
    let ranking = Ranking::new(conn, q, now)?;
    let mut row_stmt = conn.prepare_cached(&ranking.facts_sql(conn))?;
    let mut pool = Pool { collect_excluded, ..Pool::default() };
    let scanned = ranking.lexical(conn, &mut row_stmt, &any, limit, &mut pool)?;
    ranking.semantic(conn, &mut row_stmt, scanned, &mut pool)?;
    let hits = ranking.score(pool.cands);
    Ok(Ranked { limit, weights: ranking.weights, periods: ranking.periods, hits, excluded: pool.excluded })
}

/// One query's ranking, as named steps: what it needs of the store and the query
/// ([`Ranking::new`]), the candidates of the lexical search ([`Ranking::lexical`]) and of the
/// vector scan ([`Ranking::semantic`]), each judged by its row's facts ([`Ranking::judge`]),
/// and their fused scores ([`Ranking::score`]).
struct Ranking<'q> {
    q: &'q RecallQuery,
    now: Instant,
    settings: Settings,
    weights: RecallWeights,
    /// The query's session, project and workflow (those it gives), by name.
    context: Vec<(&'static str, &'q str)>,
    /// The periods the query names.
    periods: Vec<Period>,
    /// How many things a memory's scene can match: the context, the tags, the task kind and
    /// a named period.
    ctx_size: usize,
    /// Whether the store holds superseded memories or archived payloads (they leave recall).
    excluding: bool,
    /// Whether the store holds task logs.
    task_logs: bool,
    embedder: Option<&'static crate::embed::Embedder>,
    qvec: Option<crate::embed::Vector>,
    /// A team server with pgvector: the nearest vectors come from its HNSW index.
    on_server: bool,
    /// The process's index of this model's vectors (not on a team server with pgvector).
    ix: Option<std::sync::Arc<crate::semantic::VectorIndex>>,
    /// A long-running process's in-memory copy of the lexical index and of the rows' facts.
    kept: Option<crate::lexical::Kept>,
}

/// The candidates found so far and, when asked for, the matches left out by their state in
/// the order the searches met them.
#[derive(Default)]
struct Pool {
    cands: Vec<Cand>,
    seen: std::collections::HashSet<i64>,
    collect_excluded: bool,
    excluded: Vec<i64>,
    excluded_seen: std::collections::HashSet<i64>,
}

impl Pool {
    fn note_excluded(&mut self, rowid: i64) {
        if self.collect_excluded && self.excluded_seen.insert(rowid) {
            self.excluded.push(rowid);
        }
    }
}

/// The vector scan: the `2 × CANDIDATES` nearest of `qv` in `ix`, filtered by tier and pin.
fn scan_vectors(q: &RecallQuery, ix: &crate::semantic::VectorIndex, qv: &crate::embed::Vector) -> Vec<(usize, f32)> {
    ix.top(qv, CANDIDATES * 2, |i| {
        q.tier.is_none_or(|t| t == ix.tiers[i]) && q.pinned.is_none_or(|p| p == ix.pinned[i])
    })
}

impl<'q> Ranking<'q> {
    /// The settings, the query's context and periods, what the store holds that recall leaves
    /// out, the query's vector and the indexes, up to date in this transaction.
    fn new(conn: &Connection, q: &'q RecallQuery, now: Instant) -> Result<Self> {
        let settings = Settings::load(conn)?;
        let weights = q.weights.clone().unwrap_or_else(|| settings.recall_weights.clone());
        let context: Vec<(&'static str, &'q str)> =
            [("session", q.session.as_deref()), ("project", q.project.as_deref()), ("workflow", q.workflow.as_deref())]
                .into_iter()
                .filter_map(|(k, v)| v.map(|v| (k, v)))
                .collect();
        // A period the query names ("in July 2022", "last week") is part of the context: a
        // memory dated inside it matches, and recency counts from it instead of from now.
        let periods = period::named(&q.text, now);
        let ctx_size =
            context.len() + q.tags.len() + usize::from(q.task_kind.is_some()) + usize::from(!periods.is_empty());
        // Superseded memories and archived payloads leave recall. Most files have neither;
        // then the per-candidate checks are skipped.
        let excluding: bool = conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM lethe_supersede) \
                 OR EXISTS (SELECT 1 FROM lethe_archive WHERE restored_at IS NULL)",
            )?
            .query_row([], |r| r.get(0))?;
        // Defensive: a file without migration 5's table has no task logs (read-only opens
        // refuse older schemas today; the check costs one lookup).
        let task_logs: bool = crate::session::has_tables(conn)?
            && conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM lethe_task_log)")?.query_row([], |r| r.get(0))?;
        let embedder = crate::embed::shared();
        let qvec = embedder.map(|e| e.embed(&q.text));
        // The process's index of this model's vectors, brought up to date in this
        // transaction: it gives every candidate's cosine (lexical ones too) without reading
        // its vector row. On a team server with pgvector the nearest vectors come from its
        // HNSW index instead, and the process holds no index: each candidate's cosine is
        // computed from its stored vector once the candidates are known.
        let on_server = conn.vector_search_on_server();
        let ix = match embedder {
            Some(e) if !on_server => Some(crate::semantic::index(conn, e)?),
            _ => None,
        };
        // A long-running process's in-memory copy of the lexical index and of the rows'
        // facts (`lexical`), up to date in this transaction.
        let kept = crate::lexical::index(conn)?;
        Ok(Ranking {
            q,
            now,
            settings,
            weights,
            context,
            periods,
            ctx_size,
            excluding,
            task_logs,
            embedder,
            qvec,
            on_server,
            ix,
            kept,
        })
    }

    /// The candidates' columns, for a batch of rowids at once (one statement per batch, not
    /// per candidate: a statement's own cost was a tenth of a recall at 10k).
    fn facts_sql(&self, conn: &Connection) -> String {
        format!(
            "SELECT {FACT_COLUMNS}, {}, {}, m.rowid FROM memory_item m WHERE m.rowid IN ({})",
            if self.excluding {
                "EXISTS (SELECT 1 FROM lethe_supersede s WHERE s.old_id = m.id) \
                 OR EXISTS (SELECT 1 FROM lethe_archive a WHERE a.memory_id = m.id AND a.restored_at IS NULL)"
            } else {
                "0"
            },
            if self.task_logs { "(SELECT t.task_kind FROM lethe_task_log t WHERE t.memory_id = m.id)" } else { "NULL" },
            if conn.is_postgres() {
                "SELECT value::bigint FROM json_array_elements_text(CAST(CAST(?1 AS TEXT) AS json))"
            } else {
                "SELECT value FROM json_each(?1)"
            },
        )
    }

    /// What a row's facts say of its candidate: excluded (by state, or a task log of another
    /// kind), filtered out (by the caller's tier or pin), or eligible with its cosine. The
    /// context columns are copied only when the query has a context to match them with.
    fn judge(&self, f: &Facts, rowid: i64, excluded: bool, task_kind: Option<String>) -> Looked {
        let q = self.q;
        let Some(tier) = f.tier else { return Looked::Filtered };
        // A task log is recalled only for a caller doing the same kind of task.
        let excluded = excluded || task_kind.as_ref().is_some_and(|k| q.task_kind.as_ref() != Some(k));
        if f.deleted || excluded {
            return Looked::Excluded;
        }
        if q.tier.is_some_and(|t| t != tier) || q.pinned.is_some_and(|p| p != f.pinned) {
            return Looked::Filtered;
        }
        let cosine = match (&self.qvec, &self.ix) {
            (Some(qv), Some(ix)) => ix.position(rowid).map(|p| f64::from(ix.cosine_at(qv, p))),
            _ => None,
        };
        let context = !self.context.is_empty();
        Looked::Eligible(Box::new(Cand {
            rowid,
            bm25: 0.0,
            cosine,
            tier,
            created: f.created,
            importance: f.importance,
            pinned: f.pinned,
            session: if context { f.session.clone() } else { None },
            project: if context { f.project.clone() } else { None },
            workflow: if context { f.workflow.clone() } else { None },
            tags: if q.tags.is_empty() { Vec::new() } else { f.tags.clone() },
            task_kind,
        }))
    }

    /// The candidates at `rowids`, in their order (a rowid without a row is filtered out):
    /// from the process's copy of the rows when it holds them all (as read in this
    /// transaction), else from the file.
    fn look_up(&self, row_stmt: &mut Statement, rowids: &[i64]) -> Result<Vec<Looked>> {
        if let Some(kept) = &self.kept {
            let facts: Option<Vec<&Facts>> = rowids.iter().map(|&r| kept.index.facts(r)).collect();
            if let Some(facts) = facts {
                return Ok(rowids
                    .iter()
                    .zip(facts)
                    .map(|(&rowid, f)| {
                        let (excluded, task_kind) = if self.excluding || self.task_logs {
                            kept.exclusions.of(kept.index.id(rowid))
                        } else {
                            (false, None)
                        };
                        self.judge(f, rowid, self.excluding && excluded, task_kind.filter(|_| self.task_logs))
                    })
                    .collect());
            }
        }
        let list = format!("[{}]", rowids.iter().map(i64::to_string).collect::<Vec<_>>().join(","));
        let mut found: std::collections::HashMap<i64, Looked> = std::collections::HashMap::with_capacity(rowids.len());
        let mut rows = row_stmt.query([list])?;
        while let Some(r) = rows.next()? {
            let rowid: i64 = r.get(11)?;
            found.insert(rowid, self.judge(&facts_of(&r, 0)?, rowid, r.get::<_, bool>(9)?, r.get(10)?));
        }
        Ok(rowids.iter().map(|r| found.remove(r).unwrap_or(Looked::Filtered)).collect())
    }

    /// Takes the eligible ones of `fresh` (rowids not yet candidates, each with its BM25), in
    /// order, until `eligible` reaches CANDIDATES: each batch is as large as the number still
    /// wanted, so exactly the rows a one-by-one walk would look at are looked at.
    fn take(
        &self,
        row_stmt: &mut Statement,
        fresh: &[(i64, f64)],
        eligible: &mut usize,
        pool: &mut Pool,
    ) -> Result<()> {
        let mut at = 0;
        while *eligible < CANDIDATES && at < fresh.len() {
            let batch = &fresh[at..(at + CANDIDATES - *eligible).min(fresh.len())];
            at += batch.len();
            let rowids: Vec<i64> = batch.iter().map(|&(r, _)| r).collect();
            for (&(rowid, bm25), looked) in batch.iter().zip(self.look_up(row_stmt, &rowids)?) {
                match looked {
                    Looked::Eligible(mut c) => {
                        c.bm25 = bm25;
                        pool.seen.insert(rowid);
                        pool.cands.push(*c);
                        *eligible += 1;
                    }
                    Looked::Excluded => pool.note_excluded(rowid),
                    Looked::Filtered => {}
                }
            }
        }
        Ok(())
    }

    /// Step 1, lexical: the best stemmed-BM25 matches, ranked inside FTS5. Memories matching every
    /// word first; only when they are fewer than asked for does the search widen to any word
    /// (bm25() sums over all the query's words either way, so a memory scores the same under
    /// both; ranking every match of a common word costs ~15× more at 10k). The vector scan
    /// needs nothing of the lexical search: on a large index it runs on a second thread
    /// meanwhile (at 100k it takes ~3 ms of a ~8 ms recall); its nearest are returned.
    fn lexical(
        &self,
        conn: &Connection,
        row_stmt: &mut Statement,
        any: &str,
        limit: usize,
        pool: &mut Pool,
    ) -> Result<Option<Vec<(usize, f32)>>> {
        let q = self.q;
        let mut fts = conn.prepare_cached(lexical_sql(conn))?;
        let all = match_all_expression(&q.text).unwrap_or_else(|| any.to_string());
        let exprs: Vec<(&str, bool)> =
            if all == any { vec![(any, false)] } else { vec![(all.as_str(), true), (any, false)] };
        // A long-running process searches its in-memory copy of the same index instead, with
        // the same scores and order (`lexical`), unless a query word has no token at all.
        let in_memory = match &self.kept {
            Some(k) => k.index.phrases(conn, &searched_words(&q.text))?.map(|p| (k.index.clone(), p)),
            None => None,
        };
        std::thread::scope(|scope| -> Result<Option<Vec<(usize, f32)>>> {
            let aside = match (&self.ix, &self.qvec) {
                (Some(ix), Some(qv)) if ix.len() >= PARALLEL_SCAN_MIN => {
                    Some(scope.spawn(move || scan_vectors(q, ix, qv)))
                }
                _ => None,
            };
            // In memory, one pass finds the matches of both searches.
            let counted = in_memory.as_ref().map(|(ix, phrases)| (ix.search_counted(phrases), phrases.len()));
            for (expr, every_word) in exprs {
                let mut eligible = pool.cands.len();
                let mut found = counted.as_ref().map(|(all, n)| {
                    let need = if every_word { *n } else { 1 };
                    all.iter().filter(|m| usize::from(m.2) >= need).map(|&(r, s, _)| (r, s)).collect::<Vec<_>>()
                });
                for inner in [INNER, -1] {
                    let matches: Vec<(i64, f64)> = match &mut found {
                        Some(found) => {
                            let n = crate::lexical::best_first(found, usize::try_from(inner).ok());
                            found[..n].to_vec()
                        }
                        None => fts
                            .query_map(crate::storage::db::params![lexical_param(conn, expr), inner], |r| {
                                Ok((r.get(0)?, r.get(1)?))
                            })?
                            .collect::<std::result::Result<_, _>>()?,
                    };
                    let raw = matches.len();
                    let fresh: Vec<(i64, f64)> = matches
                        .into_iter()
                        .filter(|(r, _)| !pool.seen.contains(r))
                        .map(|(r, rank)| (r, -rank))
                        .collect();
                    self.take(row_stmt, &fresh, &mut eligible, pool)?;
                    // Deleted, superseded or filtered-out rows crowded the first matches out:
                    // the whole match set is used.
                    if eligible == CANDIDATES || (raw as i64) < INNER || inner < 0 {
                        break;
                    }
                }
                if pool.cands.len() >= limit {
                    break;
                }
            }
            Ok(match (aside, &self.ix, &self.qvec) {
                // A panic in the scan is the same panic as on this thread.
                (Some(h), _, _) => Some(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))),
                (None, Some(ix), Some(qv)) => Some(scan_vectors(q, ix, qv)),
                _ => None,
            })
        })
    }

    /// Step 2, semantic: the nearest stored vectors (the exact scan's `scanned`, or the server's
    /// HNSW index), filtered by tier and pin; deleted memories are not searched. On a team
    /// server every candidate's cosine is then read from its stored vector.
    fn semantic(
        &self,
        conn: &Connection,
        row_stmt: &mut Statement,
        scanned: Option<Vec<(usize, f32)>>,
        pool: &mut Pool,
    ) -> Result<()> {
        let nearest: Option<Vec<i64>> = match (&self.ix, scanned, &self.qvec, self.embedder) {
            (Some(ix), Some(top), _, _) => Some(top.into_iter().map(|(i, _)| ix.rowids[i]).collect()),
            (None, _, Some(qv), Some(e)) if self.on_server => {
                Some(nearest_on_server(conn, self.q, qv, e.fingerprint())?)
            }
            _ => None,
        };
        if let Some(nearest) = nearest {
            let mut eligible = 0;
            let fresh: Vec<(i64, f64)> =
                nearest.into_iter().map(|r| (r, 0.0)).filter(|(r, _)| !pool.seen.contains(r)).collect();
            self.take(row_stmt, &fresh, &mut eligible, pool)?;
        }
        if let (true, Some(qv), Some(e)) = (self.on_server, &self.qvec, self.embedder) {
            cosines_from_rows(conn, &mut pool.cands, qv, e.fingerprint())?;
        }
        Ok(())
    }

    /// Step 3, the fused score of every candidate, best first (ties by BM25, then rowid). S: BM25
    /// normalised by the best lexical candidate, cosine by the best semantic one, mixed with
    /// LEXICAL_SHARE (lexical alone without a model).
    fn score(&self, cands: Vec<Cand>) -> Vec<(i64, Hit, Why)> {
        let best_bm25 = cands.iter().map(|c| c.bm25).fold(0.0_f64, f64::max);
        let best_cos = cands.iter().filter_map(|c| c.cosine).fold(0.0_f64, f64::max);
        let mut hits: Vec<(i64, Hit, Why)> =
            cands.into_iter().map(|c| self.score_one(c, best_bm25, best_cos)).collect();
        hits.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then(a.1.bm25.total_cmp(&b.1.bm25)).then(a.0.cmp(&b.0)));
        hits
    }

    /// One candidate's similarity, recency, scene and priority, and their weighted sum.
    fn score_one(&self, c: Cand, best_bm25: f64, best_cos: f64) -> (i64, Hit, Why) {
        let (q, s, w) = (self.q, &self.settings, &self.weights);
        let lexical = if best_bm25 > 0.0 { (c.bm25 / best_bm25).clamp(0.0, 1.0) } else { 0.0 };
        let semantic = self.qvec.is_some().then(|| {
            let cos = c.cosine.unwrap_or(0.0).max(0.0);
            if best_cos > 0.0 {
                (cos / best_cos).clamp(0.0, 1.0)
            } else {
                0.0
            }
        });
        let sim = match semantic {
            Some(s) => LEXICAL_SHARE * lexical + (1.0 - LEXICAL_SHARE) * s,
            None => lexical,
        };
        let age_days = c.created.map(|t| time::days_between(t, self.now));
        let period_days = c.created.and_then(|t| period::days_away(&self.periods, t));
        let rec = c
            .created
            .map(|t| {
                let h = if c.task_kind.is_some() { s.task_log_half_life_days } else { s.half_life_days.get(c.tier) };
                decay::recency(period_days.unwrap_or_else(|| time::days_between(t, self.now)), h)
            })
            .unwrap_or(0.0);
        let mut matched = 0usize;
        for (k, v) in &self.context {
            let have = match *k {
                "session" => c.session.as_deref(),
                "project" => c.project.as_deref(),
                _ => c.workflow.as_deref(),
            };
            if have == Some(*v) {
                matched += 1;
            }
        }
        matched += usize::from(q.task_kind.is_some() && c.task_kind == q.task_kind);
        matched += q.tags.iter().filter(|t| c.tags.iter().any(|ct| ct.eq_ignore_ascii_case(t))).count();
        matched += usize::from(period_days == Some(0.0));
        let scene = if self.ctx_size == 0 { 0.0 } else { matched as f64 / self.ctx_size as f64 };
        let pri = (c.importance + if c.pinned { 0.2 } else { 0.0 }).clamp(0.0, 1.0);
        let score = w.similarity * sim + w.recency * rec + w.scene * scene + w.priority * pri;
        let breakdown =
            Breakdown { similarity: sim, lexical, semantic, cosine: c.cosine, recency: rec, scene, priority: pri };
        let why = Why { age_days, period_days, importance: c.importance, pinned: c.pinned };
        let hit = Hit {
            id: String::new(),
            tier: c.tier,
            content: String::new(),
            score,
            bm25: -c.bm25,
            breakdown,
            task_goal: None,
            steps: None,
            matched_through: Vec::new(),
        };
        (c.rowid, hit, why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::lifecycle::{self, NewMemory};
    use crate::store;

    #[test]
    fn a_match_below_half_of_the_best_similarity_is_weak() {
        let hit = |s: f64| Hit {
            id: String::new(),
            tier: Tier::Semantic,
            content: String::new(),
            score: 0.0,
            bm25: 0.0,
            breakdown: Breakdown {
                similarity: s,
                lexical: s,
                semantic: None,
                cosine: None,
                recency: 0.0,
                scene: 0.0,
                priority: 0.0,
            },
            task_goal: None,
            steps: None,
            matched_through: Vec::new(),
        };
        // Best 0.8: the line is 0.4; 0.4 itself is not weak, 0.39 is.
        let hits = [hit(0.8), hit(0.1), hit(0.4), hit(0.39)];
        assert_eq!(weak_matches(&hits), [false, true, false, true]);
        assert!(weak_matches(&[]).is_empty());
        assert_eq!(weak_matches(&[hit(0.0)]), [false], "nothing is weaker than the best");
    }

    #[test]
    fn hostile_queries_never_error() {
        let mut conn = store::open_in_memory().unwrap();
        let now = chrono::Utc::now();
        lifecycle::remember(
            &mut conn,
            &NewMemory::new(Tier::Semantic, "near the OR gate, docker volumes need uid"),
            "user",
            now,
        )
        .unwrap();
        for q in ["\"", "*", "OR (", "NEAR/3", "a -b", "(((", "\"docker\" NEAR/3 uid*", "", "   ", "AND OR NOT"] {
            let r = recall(&conn, &RecallQuery { text: q.into(), limit: 10, ..Default::default() }, now);
            assert!(r.is_ok(), "query {q:?} must not be a syntax error: {r:?}");
        }
        let r = recall(&conn, &RecallQuery { text: "docker NEAR/3 (uid".into(), limit: 10, ..Default::default() }, now)
            .unwrap();
        assert_eq!(r.len(), 1, "words are still found");
    }

    #[test]
    fn many_deleted_better_matches_do_not_hide_an_active_one() {
        let mut conn = store::open_in_memory().unwrap();
        let now = chrono::Utc::now();
        for i in 0..450 {
            let id = put(&mut conn, NewMemory::new(Tier::Episodic, format!("alpha alpha {i}")), now);
            lifecycle::soft_delete(&mut conn, &id, None, "user", now).unwrap();
        }
        let keep = put(
            &mut conn,
            NewMemory::new(Tier::Episodic, "alpha in a much longer sentence about other things entirely"),
            now,
        );
        let hits = recall(&conn, &RecallQuery { text: "alpha".into(), limit: 5, ..Default::default() }, now).unwrap();
        assert_eq!(
            hits.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(),
            vec![keep.as_str()],
            "found past 450 deleted better matches"
        );
    }

    #[test]
    fn deleted_and_superseded_are_excluded() {
        let mut conn = store::open_in_memory().unwrap();
        let now = chrono::Utc::now();
        let a =
            lifecycle::remember(&mut conn, &NewMemory::new(Tier::Semantic, "the api key rotates weekly"), "user", now)
                .unwrap();
        let a = a.id().unwrap().to_string();
        let mut newer = NewMemory::new(Tier::Semantic, "the api key rotates monthly now");
        newer.supersedes = vec![a.clone()];
        let b = lifecycle::remember(&mut conn, &newer, "user", now).unwrap().id().unwrap().to_string();
        let hits = recall(&conn, &RecallQuery { text: "api key rotates".into(), limit: 10, ..Default::default() }, now)
            .unwrap();
        assert_eq!(
            hits.iter().map(|h| h.id.clone()).collect::<Vec<_>>(),
            vec![b.clone()],
            "the superseded memory left recall"
        );
        lifecycle::soft_delete(&mut conn, &b, None, "user", now).unwrap();
        let hits =
            recall(&conn, &RecallQuery { text: "api key".into(), limit: 10, ..Default::default() }, now).unwrap();
        assert!(hits.is_empty(), "soft-deleted memories leave recall at once");
    }

    fn put(conn: &mut Connection, m: NewMemory, now: Instant) -> String {
        lifecycle::remember(conn, &m, "user", now).unwrap().id().unwrap().to_string()
    }

    fn ids(hits: &[Hit]) -> Vec<String> {
        let mut v: Vec<String> = hits.iter().map(|h| h.id.clone()).collect();
        v.sort();
        v
    }

    fn sorted(mut v: Vec<String>) -> Vec<String> {
        v.sort();
        v
    }

    #[test]
    fn tier_and_pinned_filters_restrict_the_candidates() {
        let mut conn = store::open_in_memory().unwrap();
        let now = chrono::Utc::now();
        let sem = put(&mut conn, NewMemory::new(Tier::Semantic, "redis caches tenant settings"), now);
        let epi = put(&mut conn, NewMemory::new(Tier::Episodic, "redis evicted the tenant sessions"), now);
        let mut pinned = NewMemory::new(Tier::Semantic, "redis maxmemory is 4 GB for tenant data");
        pinned.pinned = true;
        let pin = put(&mut conn, pinned, now);
        let q = |tier: Option<Tier>, pinned: Option<bool>| RecallQuery {
            text: "redis tenant".into(),
            limit: 10,
            tier,
            pinned,
            ..Default::default()
        };
        assert_eq!(
            ids(&recall(&conn, &q(None, None), now).unwrap()),
            sorted(vec![sem.clone(), epi.clone(), pin.clone()])
        );
        assert_eq!(ids(&recall(&conn, &q(Some(Tier::Episodic), None), now).unwrap()), vec![epi.clone()], "tier filter");
        assert_eq!(
            ids(&recall(&conn, &q(Some(Tier::Semantic), None), now).unwrap()),
            sorted(vec![sem.clone(), pin.clone()])
        );
        assert!(recall(&conn, &q(Some(Tier::Working), None), now).unwrap().is_empty(), "no working memory matches");
        assert_eq!(ids(&recall(&conn, &q(None, Some(true)), now).unwrap()), vec![pin.clone()], "only pinned");
        assert_eq!(
            ids(&recall(&conn, &q(None, Some(false)), now).unwrap()),
            sorted(vec![sem.clone(), epi]),
            "only unpinned"
        );
        assert_eq!(
            ids(&recall(&conn, &q(Some(Tier::Semantic), Some(false)), now).unwrap()),
            vec![sem],
            "filters combine"
        );
    }

    #[test]
    fn scene_is_the_share_of_the_callers_context_that_the_memory_matches() {
        let mut conn = store::open_in_memory().unwrap();
        let now = chrono::Utc::now();
        let mut full = NewMemory::new(Tier::Procedural, "deploy billing with make promote");
        full.session_id = Some("s1".into());
        full.project_id = Some("billing".into());
        full.tags = vec!["Deploy".into(), "prod".into()];
        full.procedure.workflow_name = Some("release".into());
        let full = put(&mut conn, full, now);
        let mut some = NewMemory::new(Tier::Episodic, "deploy of billing went out at ten");
        some.project_id = Some("billing".into());
        some.session_id = Some("s2".into());
        some.tags = vec!["deploy".into()];
        let some = put(&mut conn, some, now);
        let none = put(&mut conn, NewMemory::new(Tier::Semantic, "deploy freeze on fridays"), now);
        let mut q = RecallQuery {
            text: "deploy".into(),
            limit: 10,
            session: Some("s1".into()),
            project: Some("billing".into()),
            workflow: Some("release".into()),
            tags: vec!["deploy".into(), "prod".into()],
            ..Default::default()
        };
        let scene = |hits: &[Hit], id: &str| hits.iter().find(|h| h.id == id).unwrap().breakdown.scene;
        let hits = recall(&conn, &q, now).unwrap();
        assert_eq!(scene(&hits, &full), 1.0, "session, project, workflow and both tags (case-insensitive) match");
        assert_eq!(scene(&hits, &some), 2.0 / 5.0, "project and one tag out of five context items");
        assert_eq!(scene(&hits, &none), 0.0, "nothing of the context matches");
        q.session = None;
        q.workflow = None;
        q.tags = vec!["prod".into()];
        let hits = recall(&conn, &q, now).unwrap();
        assert_eq!(scene(&hits, &some), 1.0 / 2.0, "project matches, the prod tag does not");
        let hits = recall(&conn, &RecallQuery { text: "deploy".into(), limit: 10, ..Default::default() }, now).unwrap();
        assert!(hits.iter().all(|h| h.breakdown.scene == 0.0), "no context, no scene fit");
    }

    #[test]
    fn every_breakdown_term_lies_in_zero_to_one_and_the_score_is_their_weighted_sum() {
        let mut conn = store::open_in_memory().unwrap();
        let now = chrono::Utc::now();
        let cases = [
            (Tier::Working, 0.0, 1.0, true),
            (Tier::Working, 400.0, 0.0, false),
            (Tier::Episodic, 30.0, 0.5, false),
            (Tier::Semantic, 3650.0, 0.95, true),
            (Tier::Procedural, 1.0, 0.2, false),
        ];
        for (i, (tier, age, imp, pinned)) in cases.iter().enumerate() {
            let mut m = NewMemory::new(*tier, format!("kafka consumer lag case {i} {}", "lag ".repeat(i)));
            m.importance = Some(*imp);
            m.pinned = *pinned;
            m.created_at = Some(time::add_days(now, -age));
            m.project_id = Some(if i % 2 == 0 { "data" } else { "web" }.into());
            put(&mut conn, m, now);
        }
        // A clock skew of 30 s (created_at slightly in the future) is accepted by remember;
        // recency must still not exceed 1.
        let mut future = NewMemory::new(Tier::Working, "kafka lag seen from a skewed clock");
        future.created_at = Some(now + chrono::Duration::seconds(30));
        future.importance = Some(1.0);
        future.pinned = true;
        put(&mut conn, future, now);
        let w = RecallWeights { similarity: 0.4, recency: 0.3, scene: 0.2, priority: 0.1 };
        let q = RecallQuery {
            text: "kafka consumer lag".into(),
            limit: 10,
            project: Some("data".into()),
            tags: vec!["none".into()],
            weights: Some(w.clone()),
            ..Default::default()
        };
        let hits = recall(&conn, &q, now).unwrap();
        assert_eq!(hits.len(), 6, "every memory shares a word with the query");
        for h in &hits {
            let b = h.breakdown;
            for (name, v) in [
                ("similarity", b.similarity),
                ("lexical", b.lexical),
                ("semantic", b.semantic.unwrap_or(0.0)),
                ("recency", b.recency),
                ("scene", b.scene),
                ("priority", b.priority),
            ] {
                assert!((0.0..=1.0).contains(&v), "{name} = {v} out of [0, 1] for {}", h.content);
            }
            let expected =
                w.similarity * b.similarity + w.recency * b.recency + w.scene * b.scene + w.priority * b.priority;
            assert!((h.score - expected).abs() < 1e-12, "score {} is the weighted sum {expected}", h.score);
        }
        assert!(hits.iter().any(|h| h.breakdown.lexical == 1.0), "the best BM25 candidate has a lexical part of 1");
        if crate::embed::shared().is_some() {
            assert!(hits.iter().any(|h| h.breakdown.semantic == Some(1.0)), "the nearest has a semantic part of 1");
        }
        assert!(hits.iter().any(|h| h.breakdown.priority == 1.0), "I + 0.2 for pinned is clamped to 1");
        assert!(hits.windows(2).all(|p| p[0].score >= p[1].score), "sorted by score");
    }

    #[test]
    fn weights_per_call_override_the_settings() {
        let mut conn = store::open_in_memory().unwrap();
        let now = chrono::Utc::now();
        // The old memory matches the query better; the new one is recent.
        let mut old =
            NewMemory::new(Tier::Episodic, "invoice export failed: invoice export job timed out on invoice 7");
        old.created_at = Some(time::add_days(now, -300.0));
        let old = put(&mut conn, old, now);
        let new = put(&mut conn, NewMemory::new(Tier::Episodic, "invoice sent to tenant 9"), now);
        let q = |weights: Option<RecallWeights>| RecallQuery {
            text: "invoice export".into(),
            limit: 10,
            weights,
            ..Default::default()
        };
        let top = |conn: &Connection, weights| recall(conn, &q(weights), now).unwrap()[0].id.clone();
        let by_similarity = RecallWeights { similarity: 1.0, recency: 0.0, scene: 0.0, priority: 0.0 };
        let by_recency = RecallWeights { similarity: 0.0, recency: 1.0, scene: 0.0, priority: 0.0 };
        assert_eq!(top(&conn, None), old, "the defaults favour the better text match");
        let s = Settings { recall_weights: by_recency.clone(), ..Default::default() };
        Settings::store(&mut conn, &s, "user", now).unwrap();
        assert_eq!(top(&conn, None), new, "the stored settings apply when the call names no weights");
        let hits = recall(&conn, &q(None), now).unwrap();
        assert!(hits.iter().all(|h| h.score == h.breakdown.recency), "score is R alone under (0,1,0,0)");
        assert_eq!(top(&conn, Some(by_similarity)), old, "weights given with the call win over the settings");
        assert_eq!(top(&conn, Some(by_recency)), new);
    }

    #[test]
    fn parse_weights_accepts_four_non_negative_numbers_only() {
        assert_eq!(
            parse_weights(" 0.7, 0.1,0.1 ,0.1").unwrap(),
            RecallWeights { similarity: 0.7, recency: 0.1, scene: 0.1, priority: 0.1 }
        );
        assert_eq!(parse_weights("1,0,0,0").unwrap().similarity, 1.0);
        for bad in ["", "1,0,0", "1,0,0,0,0", "a,0,0,0", "1;0;0;0", "-0.1,0,0,0", "NaN,0,0,0", "inf,0,0,0", "1,,0,0"] {
            let err = parse_weights(bad).unwrap_err();
            assert!(matches!(err, Error::Invalid(_)), "{bad:?} is invalid input, got {err}");
        }
    }

    /// Everything a read could have changed: the data version the watcher follows, the rows
    /// of meta statistics and of the audit.
    fn fingerprint(conn: &Connection) -> (i64, i64, i64) {
        conn.query_row(
            "SELECT (SELECT total_changes()), (SELECT COUNT(*) FROM meta_memory_stats), \
             (SELECT COUNT(*) FROM lethe_action)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap()
    }

    #[test]
    fn explain_returns_recalls_results_and_writes_nothing() {
        let mut conn = store::open_in_memory().unwrap();
        let now = time::parse("2026-06-01T00:00:00Z").unwrap();
        for (i, age) in [0.0, 10.0, 100.0, 400.0, 800.0, 3.0].iter().enumerate() {
            let mut m = NewMemory::new(Tier::Episodic, format!("postgres vacuum run {i} {}", "vacuum ".repeat(i)));
            m.created_at = Some(time::add_days(now, -age));
            m.project_id = Some(if i % 2 == 0 { "db" } else { "web" }.into());
            put(&mut conn, m, now);
        }
        let q =
            RecallQuery { text: "postgres vacuum".into(), limit: 3, project: Some("db".into()), ..Default::default() };
        let before = fingerprint(&conn);
        let e = explain(&conn, &q, now, DECLINED).unwrap();
        assert_eq!(fingerprint(&conn), before, "explain wrote nothing, counted no statistics");
        let plain = recall(&conn, &q, now).unwrap();
        assert_eq!(
            e.results.iter().map(|r| r.hit.clone()).collect::<Vec<_>>(),
            plain,
            "the same results, order, scores and breakdowns as recall"
        );
        assert_eq!(e.weights, Settings::default().recall_weights, "the stored weights ranked them");
        let ranked_out: Vec<&Declined> = e.declined.iter().filter(|d| d.kind == DeclineKind::RankedOut).collect();
        assert_eq!(ranked_out.len(), 3, "the three candidates below the cut of 3");
        let cut = e.results.last().unwrap().hit.score;
        for d in &ranked_out {
            assert!(d.score.unwrap() <= cut, "a declined candidate scored at most the last result");
            assert!(!plain.iter().any(|h| h.id == d.id), "declined ones are not results");
            let c = d.component.as_deref().unwrap();
            assert!(d.reason.starts_with(c), "the reason {:?} names the component {c}", d.reason);
        }
        assert!(ranked_out.windows(2).all(|p| p[0].score >= p[1].score), "declined in rank order");
        let ages: Vec<f64> = e.results.iter().map(|r| r.age_days.unwrap()).collect();
        assert!(ages.iter().all(|a| [0.0, 10.0, 100.0, 400.0, 800.0, 3.0].contains(a)), "ages in days: {ages:?}");
        let few = explain(&conn, &q, now, 1).unwrap();
        assert_eq!(few.declined.len(), 1, "at most the number of declined asked for");
    }

    #[test]
    fn an_old_memory_ranked_out_by_recency_says_how_old() {
        let mut conn = store::open_in_memory().unwrap();
        let now = time::parse("2026-06-01T00:00:00Z").unwrap();
        let fresh = put(&mut conn, NewMemory::new(Tier::Episodic, "the nightly backup job"), now);
        let mut old = NewMemory::new(Tier::Episodic, "the nightly backup job, as before");
        old.created_at = Some(time::add_days(now, -426.0));
        let old = put(&mut conn, old, now);
        let q = RecallQuery {
            text: "nightly backup job".into(),
            limit: 1,
            weights: Some(RecallWeights { similarity: 0.5, recency: 0.5, scene: 0.0, priority: 0.0 }),
            ..Default::default()
        };
        let e = explain(&conn, &q, now, DECLINED).unwrap();
        assert_eq!(e.results[0].hit.id, fresh);
        let d = &e.declined[0];
        assert_eq!(
            (d.id.as_str(), d.kind, d.component.as_deref()),
            (old.as_str(), DeclineKind::RankedOut, Some("recency"))
        );
        // R = exp(−ln2 · 426 / 30) ≈ 0.00005.
        assert_eq!(d.reason, "recency 0.00 — 14 months old");
    }

    #[test]
    fn a_period_the_query_names_ranks_the_memories_dated_in_it_first() {
        let mut conn = store::open_in_memory().unwrap();
        let now = time::parse("2026-06-01T00:00:00Z").unwrap();
        // Three deploys of the same service: the newest would win on recency alone.
        let mut march = NewMemory::new(Tier::Episodic, "deployed the billing service with a schema change");
        march.created_at = Some(time::parse("2026-03-12T10:00:00Z").unwrap());
        let march = put(&mut conn, march, now);
        let mut april = NewMemory::new(Tier::Episodic, "deployed the billing service, config only");
        april.created_at = Some(time::parse("2026-04-20T10:00:00Z").unwrap());
        let april = put(&mut conn, april, now);
        let mut may = NewMemory::new(Tier::Episodic, "deployed the billing service again");
        may.created_at = Some(time::parse("2026-05-30T10:00:00Z").unwrap());
        let may = put(&mut conn, may, now);
        let ask = |text: &str| {
            let q = RecallQuery { text: text.into(), limit: 3, ..Default::default() };
            let e = explain(&conn, &q, now, DECLINED).unwrap();
            let hits = recall(&conn, &q, now).unwrap();
            assert_eq!(
                hits.iter().map(|h| &h.id).collect::<Vec<_>>(),
                e.results.iter().map(|r| &r.hit.id).collect::<Vec<_>>(),
                "recall and explain agree"
            );
            e
        };
        let plain = ask("billing service deploy");
        assert_eq!(plain.results[0].hit.id, may, "without a period the newest ranks first");
        assert!(plain.periods.is_empty());
        assert_eq!(plain.results[0].hit.breakdown.scene, 0.0);

        let e = ask("what did we deploy to the billing service in March 2026?");
        assert_eq!(e.results[0].hit.id, march);
        assert_eq!(e.periods.len(), 1);
        assert_eq!(e.periods[0].said, "March 2026");
        assert_eq!(e.periods[0].from, "2026-03-01T00:00:00.000Z");
        assert_eq!(e.periods[0].until, "2026-04-01T00:00:00.000Z");
        let top = e.results[0].hit.breakdown;
        // Inside the period: the whole context matches and recency is at its top.
        assert_eq!((top.scene, top.recency), (1.0, 1.0));
        // April's memory is 19 days 10 hours after March's end: R = 2^(−19.42/30).
        let of = |id: &str| e.results.iter().find(|r| r.hit.id == id).unwrap().hit.breakdown;
        let r = (-std::f64::consts::LN_2 * (19.0 + 10.0 / 24.0) / 30.0).exp();
        assert!((of(&april).recency - r).abs() < 1e-9, "{:?}", of(&april));
        assert_eq!(of(&april).scene, 0.0);
        assert!(of(&april).recency > of(&may).recency, "the nearer to the period, the higher R");

        // A day with the week before it; the reason of a ranked-out memory says how far it is.
        let q = RecallQuery {
            text: "billing service deploy the week before 25 April 2026".into(),
            limit: 1,
            weights: Some(RecallWeights { similarity: 0.2, recency: 0.8, scene: 0.0, priority: 0.0 }),
            ..Default::default()
        };
        let e = explain(&conn, &q, now, DECLINED).unwrap();
        assert_eq!(e.results[0].hit.id, april);
        let d = e.declined.iter().find(|d| d.id == may).unwrap();
        assert_eq!(d.component.as_deref(), Some("recency"));
        assert_eq!(d.reason, "recency 0.45 — 34 days from the week before 25 April 2026");
    }

    #[test]
    fn matches_excluded_by_state_are_declined_with_their_reason() {
        let mut conn = store::open_in_memory().unwrap();
        let now = time::parse("2026-06-01T00:00:00Z").unwrap();
        let quarantined = put(&mut conn, NewMemory::new(Tier::Semantic, "grafana alert routes go to oncall"), now);
        lifecycle::soft_delete(&mut conn, &quarantined, None, "user", now).unwrap();
        let old = put(&mut conn, NewMemory::new(Tier::Semantic, "grafana alert routes go to the ops channel"), now);
        let mut newer = NewMemory::new(Tier::Semantic, "grafana alert routes now go to pagerduty");
        newer.supersedes = vec![old.clone()];
        let newer = put(&mut conn, newer, now);
        let mut obs = NewMemory::new(Tier::Episodic, "tool output: grafana alert routes dump, 400 lines");
        obs.source = Some("tool:grafana".into());
        let obs = put(&mut conn, obs, now);
        let receipt = crate::archive::archive(&mut conn, &obs, "grafana alert routes dump", "user", now).unwrap();
        let q = RecallQuery { text: "grafana alert routes".into(), limit: 10, ..Default::default() };
        let e = explain(&conn, &q, now, DECLINED).unwrap();
        assert_eq!(e.results.iter().map(|r| r.hit.id.clone()).collect::<Vec<_>>(), vec![newer.clone()]);
        let reason = |id: &str| {
            let d = e.declined.iter().find(|d| d.id == id).unwrap_or_else(|| panic!("{id} is declined"));
            assert_eq!(d.kind, DeclineKind::Excluded);
            assert_eq!(d.score, None, "an excluded memory is not scored");
            (d.reason.clone(), d.superseded_by.clone())
        };
        assert_eq!(reason(&quarantined), ("in quarantine".to_string(), None));
        assert_eq!(reason(&old), (format!("superseded by {newer}"), Some(newer.clone())));
        assert_eq!(reason(&obs), (format!("archived (#{})", receipt.archive_no), None));
        assert_eq!(e.declined.len(), 3, "nothing else is declined");
    }

    #[test]
    fn ages_are_said_in_the_unit_a_person_would_use() {
        for (days, words) in [
            (0.2, "less than a day old"),
            (1.5, "1 day old"),
            (45.0, "45 days old"),
            (426.0, "14 months old"),
            (1000.0, "2.7 years old"),
        ] {
            assert_eq!(age_words(days), words, "{days} days");
        }
    }
}
