//! Recall (DESIGN §6): FTS5 BM25 candidates re-ranked by
//! `w_sim·S + w_rec·R + w_scene·C + w_pri·Pr`, each term in [0, 1], with a breakdown per
//! result. Any user text is a safe query: it is reduced to quoted words joined by OR.

use rusqlite::Connection;
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
    quoted_words(text).map(|w| w.join(" OR "))
}

/// The same words, all required (FTS5's implicit AND).
pub fn match_all_expression(text: &str) -> Option<String> {
    quoted_words(text).map(|w| w.join(" "))
}

fn quoted_words(text: &str) -> Option<Vec<String>> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .take(64)
        .map(|w| format!("\"{}\"", w.to_lowercase()))
        .collect();
    (!words.is_empty()).then_some(words)
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
/// How many top BM25 matches FTS5 hands over before filters apply (more are fetched when
/// filters leave too few).
const INNER: i64 = 400;

pub fn recall(conn: &Connection, q: &RecallQuery, now: Instant) -> Result<Vec<Hit>> {
    // One read transaction for the handful of statements: a consistent view, and one shared
    // lock instead of one per statement.
    crate::store::read_tx(conn, || recall_in_tx(conn, q, now))
}

/// A BM25 candidate: the FTS5 match joined with the columns the ranking needs.
struct Cand {
    rowid: i64,
    rank: f64,
    tier: Tier,
    created: Option<Instant>,
    importance: f64,
    pinned: bool,
    session: Option<String>,
    project: Option<String>,
    workflow: Option<String>,
    tags: Vec<String>,
}

fn recall_in_tx(conn: &Connection, q: &RecallQuery, now: Instant) -> Result<Vec<Hit>> {
    let limit = if q.limit == 0 { 10 } else { q.limit.min(1000) };
    let (Some(any), Some(all)) = (match_expression(&q.text), match_all_expression(&q.text)) else {
        return Ok(Vec::new());
    };
    let settings = Settings::load(conn)?;
    let w = q.weights.clone().unwrap_or_else(|| settings.recall_weights.clone());
    let context: Vec<(&str, &str)> =
        [("session", q.session.as_deref()), ("project", q.project.as_deref()), ("workflow", q.workflow.as_deref())]
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect();
    let ctx_size = context.len() + q.tags.len();
    // Superseded memories and archived payloads leave recall. Most files have neither; then
    // the per-candidate checks are skipped.
    let excluding: bool = conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM lethe_supersede) \
             OR EXISTS (SELECT 1 FROM lethe_archive WHERE restored_at IS NULL)",
        )?
        .query_row([], |r| r.get(0))?;
    // Candidates: the best BM25 matches found by FTS5 alone (ranking inside the index before
    // any join), then the filters. Memories matching every word come first; only when they
    // are fewer than asked for does the search widen to any word. bm25() sums over all the
    // query's words either way, so a memory scores the same under both expressions. The
    // scene columns are read only when the caller gave a context to match.
    let sql = format!(
        "SELECT f.rowid, f.rank, m.type, m.created_at, m.importance, m.pinned, COALESCE(m.is_deleted, 0), {} , {} \
         FROM (SELECT rowid, bm25(memory_item_fts) AS rank FROM memory_item_fts WHERE memory_item_fts MATCH ?1 \
               ORDER BY rank LIMIT ?2) f \
         JOIN memory_item m ON m.rowid = f.rowid",
        if ctx_size > 0 { "m.session_id, m.project_id, m.workflow_name, m.tags" } else { "NULL, NULL, NULL, NULL" },
        if excluding {
            "EXISTS (SELECT 1 FROM lethe_supersede s WHERE s.old_id = m.id) \
             OR EXISTS (SELECT 1 FROM lethe_archive a WHERE a.memory_id = m.id AND a.restored_at IS NULL)"
        } else {
            "0"
        },
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let wanted = CANDIDATES.min(limit.max(1) * 4);
    // The final score of a candidate given the best BM25 among the candidates.
    let score_of = |c: &Cand, best: f64| -> (f64, Breakdown) {
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
        let score = w.similarity * sim + w.recency * rec + w.scene * scene + w.priority * pri;
        (score, Breakdown { similarity: sim, recency: rec, scene, priority: pri })
    };
    // The most any candidate can gain beyond its similarity term (every other term is ≤ 1).
    let bonus = w.recency + w.priority + if ctx_size > 0 { w.scene } else { 0.0 };
    // The eligible candidates among the top `inner` matches, and whether FTS5 may have more.
    let mut fetch = |expr: &str, inner: i64| -> Result<(Vec<Cand>, bool)> {
        let mut out = Vec::new();
        let mut raw = 0i64;
        // FTS5 hands the matches over best first. While that order holds, the rest of the
        // matches are not joined once CANDIDATES eligible ones are in, or once even a perfect
        // recency, scene and priority could not lift the next one to the `limit` best scores
        // so far (its similarity can only be lower): the result is the same as ranking all.
        let mut in_order = true;
        let mut last = f64::NEG_INFINITY;
        let mut best = 0.0;
        let mut top: Vec<f64> = Vec::with_capacity(limit + 1);
        let mut rows = stmt.query(rusqlite::params![expr, inner])?;
        while let Some(r) = rows.next()? {
            raw += 1;
            let rank: f64 = r.get(1)?;
            in_order &= rank >= last;
            last = rank;
            if in_order && out.len() >= CANDIDATES {
                return Ok((out, false));
            }
            if in_order && top.len() == limit {
                let sim = if best > 0.0 { (-rank / best).clamp(0.0, 1.0) } else { 0.0 };
                if w.similarity * sim + bonus < top[limit - 1] - 1e-9 {
                    return Ok((out, false));
                }
            }
            let deleted = r.get::<_, i64>(6)? != 0;
            let excluded = r.get::<_, bool>(11)?;
            let Ok(tier) = r.get_ref(2)?.as_str().map_err(rusqlite::Error::from)?.parse::<Tier>() else { continue };
            let pinned = r.get::<_, Option<i64>>(5)?.unwrap_or(0) != 0;
            if deleted || excluded || q.tier.is_some_and(|t| t != tier) || q.pinned.is_some_and(|p| p != pinned) {
                continue;
            }
            let created = time::parse_opt(r.get_ref(3)?.as_str_or_null().map_err(rusqlite::Error::from)?);
            let tags: Option<String> = r.get(10)?;
            out.push(Cand {
                rowid: r.get(0)?,
                rank,
                tier,
                created,
                importance: r.get::<_, Option<f64>>(4)?.unwrap_or(0.5),
                pinned,
                session: r.get(7)?,
                project: r.get(8)?,
                workflow: r.get(9)?,
                tags: parse_tags(tags.as_deref()),
            });
            if in_order {
                if out.len() == 1 {
                    best = -rank;
                }
                let score = score_of(&out[out.len() - 1], best).0;
                let at = top.partition_point(|&t| t >= score);
                if at < limit {
                    top.insert(at, score);
                    top.truncate(limit);
                }
            }
        }
        // Stable: equal ranks keep FTS5's order.
        out.sort_by(|a, b| a.rank.total_cmp(&b.rank));
        Ok((out, inner >= 0 && raw >= inner))
    };
    let mut fetch_enough = |expr: &str| -> Result<Vec<Cand>> {
        let (mut got, more) = fetch(expr, INNER)?;
        // Deleted, superseded or filtered-out rows crowded the first matches out: the whole
        // match set is used (inner limit −1 = none).
        if got.len() < wanted && more {
            got = fetch(expr, -1)?.0;
        }
        got.truncate(CANDIDATES);
        Ok(got)
    };
    let mut cands = fetch_enough(&all)?;
    if cands.len() < limit && all != any {
        cands = fetch_enough(&any)?;
    }
    // S: BM25 relevance (FTS5 gives it negated) normalised by the best candidate.
    let best = cands.iter().map(|c| -c.rank).fold(0.0_f64, f64::max);
    let mut hits: Vec<(i64, Hit)> = cands
        .into_iter()
        .map(|c| {
            let (score, breakdown) = score_of(&c, best);
            (c.rowid, Hit { id: String::new(), tier: c.tier, content: String::new(), score, bm25: c.rank, breakdown })
        })
        .collect();
    hits.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then(a.1.bm25.total_cmp(&b.1.bm25)));
    hits.truncate(limit);
    // Id and content are read only for the memories returned, not for every candidate.
    let mut content = conn.prepare_cached("SELECT id, content FROM memory_item WHERE rowid = ?1")?;
    hits.into_iter()
        .map(|(rowid, mut h)| {
            (h.id, h.content) = content.query_row([rowid], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(h)
        })
        .collect()
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
        // A clock skew of half a day (created_at slightly in the future) is accepted by
        // remember; recency must still not exceed 1.
        let mut future = NewMemory::new(Tier::Working, "kafka lag seen from a skewed clock");
        future.created_at = Some(time::add_days(now, 0.5));
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
        assert_eq!(hits.len(), 6);
        for h in &hits {
            let b = h.breakdown;
            for (name, v) in
                [("similarity", b.similarity), ("recency", b.recency), ("scene", b.scene), ("priority", b.priority)]
            {
                assert!((0.0..=1.0).contains(&v), "{name} = {v} out of [0, 1] for {}", h.content);
            }
            let expected =
                w.similarity * b.similarity + w.recency * b.recency + w.scene * b.scene + w.priority * b.priority;
            assert!((h.score - expected).abs() < 1e-12, "score {} is the weighted sum {expected}", h.score);
        }
        assert!(hits.iter().any(|h| h.breakdown.similarity == 1.0), "the best BM25 candidate has S = 1");
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

    #[test]
    fn ranks_exactly_like_the_reference_implementation() {
        let mut conn = store::open_in_memory().unwrap();
        let now = crate::time::parse("2026-06-01T00:00:00.000Z").unwrap();
        let mut ids = Vec::new();
        for item in crate::workload::Generator::new(1_500) {
            if let Some(id) = lifecycle::remember(&mut conn, &item.to_new_memory(now), "user", now).unwrap().id() {
                ids.push(id.to_string());
            }
        }
        // Scene columns, pins, deletions, supersessions and archived payloads on a spread of rows.
        for (i, id) in ids.iter().enumerate() {
            let set = |sql: &str| conn.execute(sql, [id]).unwrap();
            match i % 11 {
                0 => set("UPDATE memory_item SET session_id = 's1', project_id = 'p1' WHERE id = ?1"),
                1 => set("UPDATE memory_item SET pinned = 1, workflow_name = 'wf' WHERE id = ?1"),
                2 => set("UPDATE memory_item SET is_deleted = 1, deleted_at = '2026-05-01T00:00:00.000Z' WHERE id = ?1"),
                3 => set("INSERT INTO lethe_supersede (old_id, new_id, actor, created_at) VALUES (?1, 'x', 'user', '2026-05-01T00:00:00.000Z')"),
                4 => set("INSERT INTO lethe_archive (memory_id, memo, original, sha256, bytes, actor, archived_at) \
                          VALUES (?1, 'm', x'00', 'h', 1, 'user', '2026-05-01T00:00:00.000Z')"),
                5 => set("UPDATE memory_item SET session_id = 's1' WHERE id = ?1"),
                _ => 0,
            };
        }
        // Workload queries (2–3 words), and single words that match more memories than the
        // 200 candidates re-ranked.
        let mut queries = crate::workload::Generator::new(1_500).queries(120);
        queries.extend(crate::workload::VOCABULARY.iter().take(30).map(|w| w.to_string()));
        let variants: Vec<RecallQuery> = vec![
            RecallQuery { limit: 10, ..Default::default() },
            RecallQuery { limit: 3, tier: Some(Tier::Semantic), ..Default::default() },
            RecallQuery { limit: 50, pinned: Some(true), ..Default::default() },
            RecallQuery { limit: 10, pinned: Some(false), session: Some("s1".into()), ..Default::default() },
            RecallQuery {
                limit: 20,
                project: Some("p1".into()),
                workflow: Some("wf".into()),
                tags: vec!["docker".into(), "RUST".into()],
                ..Default::default()
            },
        ];
        let mut compared = 0;
        for (n, text) in queries.iter().enumerate() {
            let mut q = variants[n % variants.len()].clone();
            q.text = text.clone();
            let got = recall(&conn, &q, now).unwrap();
            let want = reference::recall(&conn, &q, now).unwrap();
            assert_eq!(got, want, "query {text:?} {q:?}");
            compared += got.len();
        }
        assert!(compared > 500, "the comparison covered {compared} hits");
    }

    /// The implementation before candidates were filtered in Rust and joined lazily; the
    /// current one must rank exactly like it.
    mod reference {
        use super::super::*;

        pub fn recall(conn: &Connection, q: &RecallQuery, now: Instant) -> Result<Vec<Hit>> {
            let limit = if q.limit == 0 { 10 } else { q.limit.min(1000) };
            let (Some(any), Some(all)) = (match_expression(&q.text), match_all_expression(&q.text)) else {
                return Ok(Vec::new());
            };
            let settings = Settings::load(conn)?;
            let w = q.weights.clone().unwrap_or_else(|| settings.recall_weights.clone());
            // Candidates: the best BM25 matches found by FTS5 alone (ranking inside the index before
            // any join), then the filters. Memories matching every word come first; only when they
            // are fewer than asked for does the search widen to any word. bm25() sums over all the
            // query's words either way, so a memory scores the same under both expressions.
            let mut sql = String::from(
                "SELECT m.id, m.type, m.rowid, m.created_at, m.importance, m.pinned, m.session_id, m.project_id, m.workflow_name, m.tags, \
                 f.rank \
                 FROM (SELECT rowid, bm25(memory_item_fts) AS rank FROM memory_item_fts WHERE memory_item_fts MATCH ?1 \
                       ORDER BY rank LIMIT ?2) f \
                 JOIN memory_item m ON m.rowid = f.rowid \
                 WHERE COALESCE(m.is_deleted, 0) = 0 \
                 AND NOT EXISTS (SELECT 1 FROM lethe_supersede s WHERE s.old_id = m.id) \
                 AND NOT EXISTS (SELECT 1 FROM lethe_archive a WHERE a.memory_id = m.id AND a.restored_at IS NULL)",
            );
            if let Some(t) = q.tier {
                sql.push_str(&format!(" AND m.type = '{}'", t.as_str()));
            }
            if let Some(p) = q.pinned {
                sql.push_str(if p { " AND m.pinned = 1" } else { " AND COALESCE(m.pinned, 0) = 0" });
            }
            sql.push_str(&format!(" ORDER BY f.rank LIMIT {CANDIDATES}"));
            let mut stmt = conn.prepare_cached(&sql)?;
            struct Cand {
                id: String,
                tier: Tier,
                rowid: i64,
                created: Option<Instant>,
                importance: f64,
                pinned: bool,
                session: Option<String>,
                project: Option<String>,
                workflow: Option<String>,
                tags: Vec<String>,
                rank: f64,
            }
            let read = |r: &rusqlite::Row<'_>| {
                let tier: String = r.get(1)?;
                let created: String = r.get(3)?;
                let tags: Option<String> = r.get(9)?;
                Ok((
                    tier,
                    Cand {
                        id: r.get(0)?,
                        tier: Tier::Working,
                        rowid: r.get(2)?,
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
            };
            let mut fetch = |expr: &str, inner: i64| -> Result<Vec<Cand>> {
                let mut out = Vec::new();
                for row in stmt.query_map(rusqlite::params![expr, inner], read)? {
                    let (tier, mut c) = row?;
                    let Ok(t) = tier.parse::<Tier>() else { continue };
                    c.tier = t;
                    out.push(c);
                }
                Ok(out)
            };
            // Deleted, superseded or filtered-out rows can crowd the first matches out; then the
            // whole match set is used (inner limit −1 = none).
            let mut count = conn.prepare_cached(
                "SELECT COUNT(*) FROM (SELECT rowid FROM memory_item_fts WHERE memory_item_fts MATCH ?1 LIMIT ?2)",
            )?;
            let mut fetch_enough = |expr: &str| -> Result<Vec<Cand>> {
                let got = fetch(expr, INNER)?;
                // Fewer than wanted: if FTS had more matches than it handed over, filtered-out rows
                // crowded the rest out, so the whole match set is used (inner limit −1 = none).
                if got.len() < CANDIDATES.min(limit.max(1) * 4) {
                    let matches: i64 = count.query_row(rusqlite::params![expr, INNER + 1], |r| r.get(0))?;
                    if matches > INNER {
                        return fetch(expr, -1);
                    }
                }
                Ok(got)
            };
            let mut cands = fetch_enough(&all)?;
            if cands.len() < limit && all != any {
                cands = fetch_enough(&any)?;
            }
            // S: BM25 relevance (FTS5 gives it negated) normalised by the best candidate.
            let best = cands.iter().map(|c| -c.rank).fold(0.0_f64, f64::max);
            let context: Vec<(&str, &str)> = [
                ("session", q.session.as_deref()),
                ("project", q.project.as_deref()),
                ("workflow", q.workflow.as_deref()),
            ]
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect();
            let ctx_size = context.len() + q.tags.len();
            let mut hits: Vec<(i64, Hit)> = cands
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
                    (c.rowid, Hit { id: c.id, tier: c.tier, content: String::new(), score, bm25: c.rank, breakdown })
                })
                .collect();
            hits.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then(a.1.bm25.total_cmp(&b.1.bm25)));
            hits.truncate(limit);
            // Content is read only for the memories returned, not for every candidate.
            let mut content = conn.prepare_cached("SELECT content FROM memory_item WHERE rowid = ?1")?;
            hits.into_iter()
                .map(|(rowid, mut h)| {
                    h.content = content.query_row([rowid], |r| r.get(0))?;
                    Ok(h)
                })
                .collect()
        }
    }
}
