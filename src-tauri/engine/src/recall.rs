//! Recall (DESIGN §6): FTS5 BM25 candidates re-ranked by
//! `w_sim·S + w_rec·R + w_scene·C + w_pri·Pr`, each term in [0, 1], with a breakdown per
//! result. Any user text is a safe query: it is reduced to quoted words joined by OR.

use rusqlite::{params_from_iter, Connection};
use serde::Serialize;

use crate::decay;
use crate::error::{Error, Result};
use crate::model::{parse_tags, Tier};
use crate::settings::{RecallWeights, Settings};
use crate::time::{self, Instant};

#[derive(Debug, Clone, Default)]
pub struct RecallQuery {
    pub text: String,
    pub limit: usize,
    pub tier: Option<Tier>,
    pub session: Option<String>,
    pub project: Option<String>,
    pub workflow: Option<String>,
    pub tags: Vec<String>,
    pub pinned: Option<bool>,
    pub weights: Option<RecallWeights>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Breakdown {
    pub similarity: f64,
    pub recency: f64,
    pub scene: f64,
    pub priority: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    pub id: String,
    #[serde(rename = "type")]
    pub tier: Tier,
    pub content: String,
    pub score: f64,
    pub bm25: f64,
    pub breakdown: Breakdown,
}

/// The FTS5 MATCH expression for arbitrary text: every word quoted, joined by OR, so that
/// `"`, `*`, `NEAR`, `-`, `OR (` are searched as words and never parsed as syntax.
pub fn match_expression(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .take(64)
        .map(|w| format!("\"{}\"", w.to_lowercase()))
        .collect();
    if words.is_empty() {
        None
    } else {
        Some(words.join(" OR "))
    }
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

/// How many BM25 candidates are re-ranked.
const CANDIDATES: usize = 200;

pub fn recall(conn: &Connection, q: &RecallQuery, now: Instant) -> Result<Vec<Hit>> {
    let limit = if q.limit == 0 { 10 } else { q.limit.min(1000) };
    let Some(expr) = match_expression(&q.text) else { return Ok(Vec::new()) };
    let settings = Settings::load(conn)?;
    let w = q.weights.clone().unwrap_or_else(|| settings.recall_weights.clone());
    let mut sql = String::from(
        "SELECT m.id, m.type, m.content, m.created_at, m.importance, m.pinned, m.session_id, m.project_id, m.workflow_name, m.tags, \
         bm25(memory_item_fts) AS rank \
         FROM memory_item_fts JOIN memory_item m ON m.rowid = memory_item_fts.rowid \
         WHERE memory_item_fts MATCH ?1 AND COALESCE(m.is_deleted, 0) = 0 \
         AND NOT EXISTS (SELECT 1 FROM lethe_supersede s WHERE s.old_id = m.id) \
         AND NOT EXISTS (SELECT 1 FROM lethe_archive a WHERE a.memory_id = m.id AND a.restored_at IS NULL)",
    );
    let mut args: Vec<String> = vec![expr];
    if let Some(t) = q.tier {
        args.push(t.as_str().to_string());
        sql.push_str(&format!(" AND m.type = ?{}", args.len()));
    }
    if let Some(p) = q.pinned {
        sql.push_str(if p { " AND m.pinned = 1" } else { " AND COALESCE(m.pinned, 0) = 0" });
    }
    sql.push_str(&format!(" ORDER BY rank LIMIT {CANDIDATES}"));
    let mut stmt = conn.prepare_cached(&sql)?;
    struct Cand {
        id: String,
        tier: Tier,
        content: String,
        created: Option<Instant>,
        importance: f64,
        pinned: bool,
        session: Option<String>,
        project: Option<String>,
        workflow: Option<String>,
        tags: Vec<String>,
        rank: f64,
    }
    let rows = stmt.query_map(params_from_iter(args.iter()), |r| {
        let tier: String = r.get(1)?;
        let created: String = r.get(3)?;
        let tags: Option<String> = r.get(9)?;
        Ok((
            tier,
            Cand {
                id: r.get(0)?,
                tier: Tier::Working,
                content: r.get(2)?,
                created: time::parse_opt(Some(&created)),
                importance: r.get::<_, Option<f64>>(4)?.unwrap_or(0.5),
                pinned: r.get::<_, Option<i64>>(5)?.unwrap_or(0) != 0,
                session: r.get(6)?,
                project: r.get(7)?,
                workflow: r.get(8)?,
                tags: parse_tags(tags.as_deref()),
                rank: r.get(10)?,
            },
        ))
    })?;
    let mut cands = Vec::new();
    for row in rows {
        let (tier, mut c) = row?;
        let Ok(t) = tier.parse::<Tier>() else { continue };
        c.tier = t;
        cands.push(c);
    }
    // S: BM25 relevance (FTS5 gives it negated) normalised by the best candidate.
    let best = cands.iter().map(|c| -c.rank).fold(0.0_f64, f64::max);
    let context: Vec<(&str, &str)> =
        [("session", q.session.as_deref()), ("project", q.project.as_deref()), ("workflow", q.workflow.as_deref())]
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect();
    let ctx_size = context.len() + q.tags.len();
    let mut hits: Vec<Hit> = cands
        .into_iter()
        .map(|c| {
            let sim = if best > 0.0 { (-c.rank / best).clamp(0.0, 1.0) } else { 0.0 };
            let rec = c
                .created
                .map(|t| decay::recency(time::days_between(t, now), settings.half_life_days.get(c.tier)))
                .unwrap_or(0.0);
            let mut matched = 0usize;
            for (k, v) in &context {
                let have = match *k {
                    "session" => c.session.as_deref(),
                    "project" => c.project.as_deref(),
                    _ => c.workflow.as_deref(),
                };
                if have == Some(*v) {
                    matched += 1;
                }
            }
            matched += q.tags.iter().filter(|t| c.tags.iter().any(|ct| ct.eq_ignore_ascii_case(t))).count();
            let scene = if ctx_size == 0 { 0.0 } else { matched as f64 / ctx_size as f64 };
            let pri = (c.importance + if c.pinned { 0.2 } else { 0.0 }).clamp(0.0, 1.0);
            let breakdown = Breakdown { similarity: sim, recency: rec, scene, priority: pri };
            let score = w.similarity * sim + w.recency * rec + w.scene * scene + w.priority * pri;
            Hit { id: c.id, tier: c.tier, content: c.content, score, bm25: c.rank, breakdown }
        })
        .collect();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.bm25.total_cmp(&b.bm25)));
    hits.truncate(limit);
    Ok(hits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::{self, NewMemory};
    use crate::store;

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
}
