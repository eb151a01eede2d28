//! Recall quality on the labelled set in `tests/data/recall_set.json` (docs/recall.md): the
//! default weights must never rank worse than BM25 alone, measured as recall@10 and MRR@10.
//!
//! Run with `cargo test -p lethe-engine --test backends recall_quality:: -- --nocapture` to see the
//! figures and the queries where the two rankings differ.

use std::collections::HashMap;

use crate::support::now;
use lethe_engine::lifecycle::{self, NewMemory, RememberOutcome};
use lethe_engine::recall::{self, RecallQuery};
use lethe_engine::settings::RecallWeights;
use lethe_engine::{store, time, Tier};
use serde::Deserialize;

const K: usize = 10;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecallSet {
    #[allow(dead_code)]
    about: String,
    memories: Vec<LabelledMemory>,
    queries: Vec<LabelledQuery>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelledMemory {
    key: String,
    tier: Tier,
    age_days: f64,
    importance: f64,
    #[serde(default)]
    pinned: bool,
    #[serde(default)]
    tags: Vec<String>,
    session: Option<String>,
    project: Option<String>,
    content: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelledQuery {
    key: String,
    text: String,
    session: Option<String>,
    project: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    relevant: Vec<String>,
    #[allow(dead_code)]
    note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Figures {
    recall_at_k: f64,
    mrr: f64,
}

fn load_set() -> RecallSet {
    let raw = include_str!("../data/recall_set.json");
    serde_json::from_str(raw).expect("recall_set.json parses")
}

/// Stores every labelled memory with `created_at = now − age` and returns key → memory id.
fn load_db(conn: &mut store::Connection, set: &RecallSet) -> HashMap<String, String> {
    let mut ids = HashMap::new();
    for m in &set.memories {
        let mut new = NewMemory::new(m.tier, m.content.clone());
        new.importance = Some(m.importance);
        new.pinned = m.pinned;
        new.tags = m.tags.clone();
        new.session_id = m.session.clone();
        new.project_id = m.project.clone();
        new.created_at = Some(time::add_days(now(), -m.age_days));
        // The pinned rules are a person's (an agent may not write a pinned memory).
        let actor = if m.pinned { "user" } else { "agent:eval" };
        match lifecycle::remember(conn, &new, actor, now()).unwrap() {
            RememberOutcome::Stored { id, .. } => {
                assert!(ids.insert(m.key.clone(), id).is_none(), "duplicate key {}", m.key);
            }
            other => panic!("{} was not stored: {other:?}", m.key),
        }
    }
    ids
}

/// Ranks every query with `weights` (None: the stored settings, i.e. the defaults) and
/// returns the mean figures plus, per query, the 1-based rank of each relevant memory.
fn evaluate(
    conn: &store::Connection,
    set: &RecallSet,
    ids: &HashMap<String, String>,
    weights: Option<RecallWeights>,
) -> (Figures, Vec<Vec<Option<usize>>>) {
    let mut recall_sum = 0.0;
    let mut rr_sum = 0.0;
    let mut ranks = Vec::new();
    for q in &set.queries {
        let query = RecallQuery {
            text: q.text.clone(),
            limit: K,
            session: q.session.clone(),
            project: q.project.clone(),
            tags: q.tags.clone(),
            weights: weights.clone(),
            ..Default::default()
        };
        let hits = recall::recall(conn, &query, now()).unwrap();
        let got: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
        let rel_ranks: Vec<Option<usize>> = q
            .relevant
            .iter()
            .map(|k| {
                let id = ids.get(k).unwrap_or_else(|| panic!("{} names unknown memory {k}", q.key));
                got.iter().position(|g| g == id).map(|p| p + 1)
            })
            .collect();
        let found = rel_ranks.iter().flatten().count();
        recall_sum += found as f64 / q.relevant.len() as f64;
        rr_sum += rel_ranks.iter().flatten().min().map_or(0.0, |r| 1.0 / *r as f64);
        ranks.push(rel_ranks);
    }
    let n = set.queries.len() as f64;
    (Figures { recall_at_k: recall_sum / n, mrr: rr_sum / n }, ranks)
}

fn show(ranks: &[Option<usize>]) -> String {
    ranks.iter().map(|r| r.map_or("-".to_string(), |r| r.to_string())).collect::<Vec<_>>().join(",")
}

#[test]
fn the_recall_set_is_well_formed() {
    let set = load_set();
    assert!(set.memories.len() >= 300, "a few hundred memories, got {}", set.memories.len());
    assert!(set.queries.len() >= 50, "at least 50 queries, got {}", set.queries.len());
    for t in Tier::ALL {
        assert!(set.memories.iter().any(|m| m.tier == t), "the set covers the {t} tier");
    }
    let max_age = set.memories.iter().map(|m| m.age_days).fold(0.0, f64::max);
    assert!(max_age >= 300.0 && set.memories.iter().all(|m| (0.0..=365.0).contains(&m.age_days)), "ages span a year");
    let keys: std::collections::HashSet<&str> = set.memories.iter().map(|m| m.key.as_str()).collect();
    assert_eq!(keys.len(), set.memories.len(), "memory keys are unique");
    for q in &set.queries {
        assert!(!q.relevant.is_empty(), "{} has relevant memories", q.key);
        for k in &q.relevant {
            assert!(keys.contains(k.as_str()), "{} names unknown memory {k}", q.key);
        }
    }
}

#[test]
fn default_weights_rank_no_worse_than_bm25_alone() {
    let set = load_set();
    let dir = std::env::temp_dir().join(format!("lethe-recall-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut conn = lethe_testkit::backend::open(dir.join("recall.db")).unwrap();
    let ids = load_db(&mut conn, &set);

    let bm25_only = RecallWeights { similarity: 1.0, recency: 0.0, scene: 0.0, priority: 0.0 };
    let (bm25, bm25_ranks) = evaluate(&conn, &set, &ids, Some(bm25_only));
    // `None` exercises the path every caller takes: the weights stored in the settings,
    // which for a fresh file are `RecallWeights::default()`.
    let (default, default_ranks) = evaluate(&conn, &set, &ids, None);
    let d = RecallWeights::default();

    println!("recall set: {} memories, {} queries, k = {K}", set.memories.len(), set.queries.len());
    println!("BM25 alone (1,0,0,0):      recall@{K} = {:.4}  MRR@{K} = {:.4}", bm25.recall_at_k, bm25.mrr);
    println!(
        "default ({},{},{},{}): recall@{K} = {:.4}  MRR@{K} = {:.4}",
        d.similarity, d.recency, d.scene, d.priority, default.recall_at_k, default.mrr
    );
    for (q, (b, r)) in set.queries.iter().zip(bm25_ranks.iter().zip(&default_ranks)) {
        if b != r {
            println!("  {} {:?}: ranks of relevant bm25 [{}] default [{}]", q.key, q.text, show(b), show(r));
        }
    }
    drop(conn);
    let _ = std::fs::remove_dir_all(&dir);

    let figures = format!("BM25 alone {bm25:?}, default weights {d:?} {default:?}");
    assert!(default.recall_at_k >= bm25.recall_at_k, "default recall@{K} is below BM25 alone: {figures}");
    assert!(default.mrr >= bm25.mrr, "default MRR@{K} is below BM25 alone: {figures}");
}

/// The lexical search's matches for `text` (every word of it with `every`, else any), at most
/// `bound` (-1: all), as recall reads them.
fn lexical_matches(conn: &store::Connection, text: &str, every: bool, bound: i64) -> Vec<(i64, f64)> {
    let expr = if every { recall::match_all_expression(text) } else { recall::match_expression(text) };
    let expr = expr.expect("a searchable query");
    let mut stmt = conn.prepare(recall::lexical_sql(conn)).unwrap();
    let rows = stmt
        .query_map(lethe_engine::params![recall::lexical_param(conn, &expr), bound], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    rows.map(Result::unwrap).collect()
}

/// As FTS5 hands over its best `INNER` matches, the team store ranks a bounded set: the search
/// hands over at most its bound, each match with the rank it has without the bound, best first;
/// and when the matches are fewer than the bound, the same matches in the same order.
#[test]
fn the_lexical_search_hands_over_at_most_its_bound_each_ranked_as_without_it() {
    let db = crate::support::temp_db();
    let mut conn = lethe_testkit::backend::open(&db).unwrap();
    let fillers = ["harbour", "orchard", "granite", "meadow", "copper", "willow", "saffron"];
    for i in 0..450 {
        // Every memory holds "lantern"; one in fifteen "amber" too; lengths and repeats vary.
        let extra = if i % 15 == 0 { " amber amber" } else { "" };
        let repeat = if i % 4 == 0 { " lantern" } else { "" };
        let filler = fillers[i % fillers.len()].repeat(1 + i % 3);
        let text = format!("Lantern {i} hangs by the {filler} gate{repeat}{extra}, row {}.", i * 7);
        let m = NewMemory::new(Tier::Semantic, &text);
        match lifecycle::remember(&mut conn, &m, "user", now()).unwrap() {
            RememberOutcome::Stored { .. } => {}
            other => panic!("not stored: {other:?}"),
        }
    }
    let bound = recall::INNER;
    let all = lexical_matches(&conn, "lantern", false, -1);
    assert_eq!(all.len(), 450, "without a bound every match is handed over");
    let bounded = lexical_matches(&conn, "lantern", false, bound);
    assert_eq!(bounded.len() as i64, bound, "the bound is kept");
    let unbounded: HashMap<i64, f64> = all.iter().copied().collect();
    for (rowid, rank) in &bounded {
        let without = unbounded[rowid];
        assert!((rank - without).abs() < 1e-9, "row {rowid}: rank {rank} within the bound, {without} without it");
    }
    assert!(bounded.windows(2).all(|w| w[0].1 <= w[1].1), "best (lowest) first");
    // Fewer matches than the bound: the same matches, the same order.
    let few = lexical_matches(&conn, "lantern amber", true, bound);
    assert_eq!(few.len(), 30, "one memory in fifteen holds both words");
    let few_all = lexical_matches(&conn, "lantern amber", true, -1);
    assert_eq!(few.iter().map(|m| m.0).collect::<Vec<_>>(), few_all.iter().map(|m| m.0).collect::<Vec<_>>());
}
