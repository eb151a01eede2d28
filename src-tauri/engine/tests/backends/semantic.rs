//! Recall and similarity by meaning (docs/recall.md): the model is the pinned potion-base-8M that
//! `make model` fetches; these tests fail with that instruction when it is missing.

use std::sync::atomic::AtomicBool;

use crate::support::temp_db;
use lethe_engine::embed;
use lethe_engine::lifecycle::{self, NewMemory, RememberOutcome};
use lethe_engine::recall::{self, RecallQuery};
use lethe_engine::store::Connection;
use lethe_engine::{demo, forgetting, neighbours, semantic, Tier};

fn model() -> &'static embed::Embedder {
    embed::shared().unwrap_or_else(|| panic!("{} (run `make model`)", embed::status()))
}

fn put(conn: &mut Connection, tier: Tier, content: &str) -> (String, RememberOutcome) {
    let out = lifecycle::remember(conn, &NewMemory::new(tier, content), "agent:test", chrono::Utc::now()).unwrap();
    (out.id().expect("stored").to_string(), out)
}

fn vector_of(conn: &Connection, id: &str) -> Option<(String, Vec<u8>)> {
    conn.query_row("SELECT model, vec FROM lethe_vector WHERE memory_id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?)))
        .ok()
}

#[test]
fn the_demo_rollback_procedure_is_found_by_words_it_does_not_use() {
    model();
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let now = chrono::Utc::now();
    demo::load(&mut conn, 7, 300, now).unwrap();
    let rollback: String = conn
        .query_row(
            "SELECT id FROM memory_item WHERE type = 'procedural' AND content LIKE 'Roll back a failed deploy%'",
            [],
            |r| r.get(0),
        )
        .expect("the demo has the rollback procedure");
    for text in ["rollback deploy", "how do I undo a broken release"] {
        let hits =
            recall::recall(&conn, &RecallQuery { text: text.into(), limit: 3, ..Default::default() }, now).unwrap();
        let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
        assert!(
            ids.contains(&rollback.as_str()),
            "{text:?}: the rollback procedure is in the top 3, got {:?}",
            hits.iter().map(|h| (&h.content, h.score, h.breakdown)).collect::<Vec<_>>()
        );
        let b = hits.iter().find(|h| h.id == rollback).unwrap().breakdown;
        let sem = b.semantic.expect("a semantic part with a model");
        assert!(
            (b.similarity - (recall::LEXICAL_SHARE * b.lexical + (1.0 - recall::LEXICAL_SHARE) * sem)).abs() < 1e-9,
            "S is the stated mix of its two parts: {b:?}"
        );
    }
}

#[test]
fn vectors_follow_the_memory_through_edit_and_hard_delete() {
    let e = model();
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let now = chrono::Utc::now();
    let (id, _) = put(&mut conn, Tier::Semantic, "The auth API allows 600 requests per minute per key");
    let (fp, before) = vector_of(&conn, &id).expect("remember stores the vector in the same transaction");
    assert_eq!(fp, e.fingerprint(), "stored with the model's fingerprint");
    assert_eq!(before.len(), embed::VECTOR_BYTES);
    lifecycle::edit(&mut conn, &id, "Postgres backups run nightly at 2am", "user", now).unwrap();
    let (_, after) = vector_of(&conn, &id).expect("edit re-embeds");
    assert_ne!(before, after, "the vector is the new content's");
    assert_eq!(embed::Vector::from_bytes(&after).unwrap(), e.embed("Postgres backups run nightly at 2am"));
    lifecycle::hard_delete(&mut conn, &id, true, None, "user", now).unwrap();
    assert!(vector_of(&conn, &id).is_none(), "hard delete removes the vector");
}

#[test]
fn backfill_embeds_rows_written_without_a_vector_and_replaces_another_models() {
    let e = model();
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let (a, _) = put(&mut conn, Tier::Semantic, "Use snake_case for database column names");
    let (b, _) = put(&mut conn, Tier::Semantic, "Deploy notifications go to the releases channel");
    // Another program's rows: no vector, or one of another model.
    conn.execute("DELETE FROM lethe_vector WHERE memory_id = ?1", [&a]).unwrap();
    conn.execute("UPDATE lethe_vector SET model = 'other-model/256/abc' WHERE memory_id = ?1", [&b]).unwrap();
    assert_eq!(semantic::pending(&conn, e).unwrap(), 2);
    let mut seen = Vec::new();
    let n = semantic::backfill(&mut conn, e, |done, total| seen.push((done, total)), &AtomicBool::new(false)).unwrap();
    assert_eq!(n, 2);
    assert_eq!(seen.last(), Some(&(2, 2)), "progress reaches the total");
    assert_eq!(semantic::pending(&conn, e).unwrap(), 0);
    for id in [&a, &b] {
        assert_eq!(vector_of(&conn, id).unwrap().0, e.fingerprint());
    }
    assert_eq!(
        semantic::backfill(&mut conn, e, |_, _| {}, &AtomicBool::new(false)).unwrap(),
        0,
        "resumable: nothing left"
    );
    // Cancelled before it starts: nothing written, still pending.
    conn.execute("DELETE FROM lethe_vector", []).unwrap();
    assert_eq!(semantic::backfill(&mut conn, e, |_, _| {}, &AtomicBool::new(true)).unwrap(), 0);
    assert_eq!(semantic::pending(&conn, e).unwrap(), 2);
}

#[test]
fn a_store_embedded_under_another_model_is_embedded_and_searched_once_by_a_writing_read() {
    let e = model();
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let now = chrono::Utc::now();
    demo::load(&mut conn, 3, 60, now).unwrap();
    forgetting::Snapshot::load_and_keep(&mut conn).unwrap();
    let stored = |conn: &Connection, model: &str| -> i64 {
        conn.query_row("SELECT COUNT(*) FROM lethe_neighbour WHERE model = ?1", [model], |r| r.get(0)).unwrap()
    };
    let active: i64 =
        conn.query_row("SELECT COUNT(*) FROM memory_item WHERE COALESCE(is_deleted, 0) = 0", [], |r| r.get(0)).unwrap();
    assert!(active > 50);
    assert_eq!(stored(&conn, &neighbours::made_with(e.fingerprint())), active, "every active memory's list is stored");
    let before = forgetting::Snapshot::load(&conn).unwrap().pairs();
    // The file as another model (an older Lethe) left it: its vectors and lists are that
    // model's, so every memory must be embedded and searched again.
    conn.execute_batch(
        "UPDATE lethe_vector SET model = 'potion-base-8M/256/older'; \
         UPDATE lethe_neighbour SET model = 'potion-base-8M/256/older';",
    )
    .unwrap();
    // A read that may not write stores nothing.
    forgetting::Snapshot::load(&conn).unwrap();
    assert_eq!(stored(&conn, &neighbours::made_with(e.fingerprint())), 0);
    // A writing read embeds first, then stores what it searched: the next read searches nothing.
    let kept = forgetting::Snapshot::load_and_keep(&mut conn).unwrap();
    assert_eq!(semantic::pending(&conn, e).unwrap(), 0, "every memory has this model's vector");
    assert_eq!(stored(&conn, &neighbours::made_with(e.fingerprint())), active, "every searched list is stored");
    let again = forgetting::Snapshot::load(&conn).unwrap();
    assert_eq!(again.searched, 0, "nothing is searched again");
    // Lists an older Lethe stored under the earlier duplicate judgment (the model's
    // fingerprint alone) are searched again under this one by the first writing read.
    conn.execute("UPDATE lethe_neighbour SET model = ?1", [e.fingerprint()]).unwrap();
    assert_eq!(stored(&conn, &neighbours::made_with(e.fingerprint())), 0);
    let rejudged = forgetting::Snapshot::load_and_keep(&mut conn).unwrap();
    assert!(rejudged.searched > 0, "the lists of the earlier judgment are not current");
    assert_eq!(stored(&conn, &neighbours::made_with(e.fingerprint())), active, "every list is judged again");
    assert_eq!(rejudged.pairs(), before, "the same judgment as a fresh search");
    assert_eq!(kept.pairs(), before, "the same pairs as before the model's vectors were dropped");
    assert_eq!(again.pairs(), before);
}

#[test]
fn remember_names_the_paraphrase_already_stored_and_similar_ranks_it_first() {
    model();
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let (rule, _) = put(&mut conn, Tier::Semantic, "Use snake_case for database column names");
    let (_, _) = put(&mut conn, Tier::Semantic, "Deploy notifications go to the releases Slack channel");
    let (para, out) = put(&mut conn, Tier::Semantic, "Database columns are named in snake_case");
    let RememberOutcome::Stored { similar, .. } = out else { panic!("stored") };
    assert_eq!(similar.first().map(|s| s.id.as_str()), Some(rule.as_str()), "the paraphrase is named: {similar:?}");
    assert_eq!(similar[0].kind, "duplicate", "{similar:?}");
    assert!(similar[0].evidence.differing.is_empty() && !similar[0].evidence.matching.is_empty(), "{similar:?}");
    assert!(similar.iter().all(|s| s.kind != "related" || s.similarity >= lifecycle::SIMILAR_ON_WRITE));
    let near = semantic::similar(&conn, &rule, 5).unwrap();
    assert_eq!(near[0].id, para, "similar finds it from the other side");
    assert!(near.iter().all(|s| s.id != rule), "a memory is not its own neighbour");
    lifecycle::soft_delete(&mut conn, &para, None, "user", chrono::Utc::now()).unwrap();
    assert!(semantic::similar(&conn, &rule, 5).unwrap().iter().all(|s| s.id != para), "only active neighbours");
    let err = semantic::similar(&conn, "mem_missing", 5).unwrap_err();
    assert!(matches!(err, lethe_engine::Error::NotFound(_)), "{err}");
}

#[test]
fn semantic_similarity_separates_paraphrases_from_shared_topic_words() {
    let e = model();
    let cos = |a: &str, b: &str| f64::from(e.embed(a).cosine(&e.embed(b)));
    let paraphrase = lethe_engine::sameness::semantic(cos(
        "Roll back a failed deploy: run kubectl rollout undo, then check the health endpoint",
        "To undo a broken release, revert the deployment with kubectl rollout undo and verify health",
    ));
    assert!(paraphrase >= 0.5, "a paraphrase is a duplicate by meaning: {paraphrase}");
    for (a, b) in [
        ("The deploy pipeline uses GitHub Actions", "Deploy notifications go to the releases Slack channel"),
        ("Postgres backups run nightly at 2am", "Postgres connection pool size is 20"),
    ] {
        let s = lethe_engine::sameness::semantic(cos(a, b));
        assert!(s < 0.4, "{a:?} / {b:?} share a topic word, not a meaning: {s}");
    }
}

#[test]
fn a_paraphrase_carries_duplication_by_meaning_and_shared_topic_words_do_not() {
    model();
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let now = chrono::Utc::now();
    let s = lethe_engine::Settings::default();
    let older = NewMemory {
        created_at: Some(now - chrono::Duration::days(3)),
        ..NewMemory::new(
            Tier::Procedural,
            "Roll back a failed deploy: run kubectl rollout undo, then check the health endpoint",
        )
    };
    let a = lifecycle::remember(&mut conn, &older, "agent:test", now).unwrap().id().unwrap().to_string();
    let (b, _) = put(
        &mut conn,
        Tier::Procedural,
        "To undo a broken release, revert the deployment with kubectl rollout undo and verify health",
    );
    let (c, _) = put(&mut conn, Tier::Semantic, "The deploy pipeline uses GitHub Actions");
    let (d, _) = put(&mut conn, Tier::Semantic, "Deploy notifications go to the releases Slack channel");
    let snap = lethe_engine::forgetting::Snapshot::load(&conn).unwrap();
    let f = snap.score_of(&b, &s, now).unwrap();
    assert!(f.features.duplication >= 0.5, "the younger paraphrase is a duplicate: {f:?}");
    assert_eq!(f.duplicate_of.as_deref(), Some(a.as_str()), "of the older one");
    assert_eq!(f.duplicate_kind.as_deref(), Some("same meaning"));
    if f.features.duplication > s.duplicate_reason_above {
        assert!(f.reasons.contains(&format!("duplicate of {a} (same meaning)")), "{:?}", f.reasons);
    }
    assert_eq!(snap.score_of(&a, &s, now).unwrap().features.duplication, 0.0, "the one it copies keeps D = 0");
    for id in [&c, &d] {
        let f = snap.score_of(id, &s, now).unwrap();
        assert!(f.features.duplication < 0.3, "shared topic words are not a duplicate: {f:?}");
    }
    // The explained score of `show` says the same.
    let shown = lethe_engine::detail(&conn, &b, now, None).unwrap();
    assert_eq!(shown.score.duplicate_of.as_deref(), Some(a.as_str()));
}

/// The semantic candidates are the nearest stored vectors: from Lethe's own exact scan on a
/// file, from pgvector's HNSW index on a team server that has it. Either way the memories a
/// query by meaning ranks first are exactly the nearest ones, with the same cosines, with a
/// tier filter too.
#[test]
fn recall_by_meaning_ranks_the_nearest_stored_vectors_first_on_every_backend() {
    let e = model();
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let now = chrono::Utc::now();
    let (things, states) = (
        ["the billing service", "the search index", "the auth gateway", "the nightly job", "the mobile app", "the CDN"],
        ["ran out of memory", "was slow after midnight", "lost its cache", "restarted twice", "logged timeouts"],
    );
    let mut n = 0;
    for round in 0..60 {
        for (t, thing) in things.iter().enumerate() {
            let state = states[(round + t) % states.len()];
            let tier = if (round + t) % 4 == 0 { Tier::Episodic } else { Tier::Semantic };
            let text = format!("On day {round}, {thing} {state} (ticket {}).", 1000 + n);
            lifecycle::remember(&mut conn, &NewMemory::new(tier, text), "agent:test", now).unwrap();
            n += 1;
        }
    }
    // Every stored vector, for the exact answer.
    let mut stmt = conn
        .prepare(
            "SELECT m.id, m.type, v.vec FROM lethe_vector v JOIN memory_item m ON m.id = v.memory_id \
             WHERE v.model = ?1",
        )
        .unwrap();
    let stored: Vec<(String, String, embed::Vector)> = stmt
        .query_map([e.fingerprint()], |r| {
            let bytes: Vec<u8> = r.get(2)?;
            Ok((r.get(0)?, r.get(1)?, embed::Vector::from_bytes(&bytes).expect("a vector")))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    drop(stmt);
    assert_eq!(stored.len(), n);
    let by_meaning = lethe_engine::settings::RecallWeights { similarity: 1.0, recency: 0.0, scene: 0.0, priority: 0.0 };
    // No word of these queries is in any memory: only the vectors find anything.
    for (text, tier) in [("why were users unable to sign in", None), ("purchases stalled", Some(Tier::Episodic))] {
        let qv = e.embed(text);
        let mut exact: Vec<(f32, &str)> = stored
            .iter()
            .filter(|(_, t, _)| tier.is_none_or(|want| want.to_string() == *t))
            .map(|(id, _, v)| (qv.cosine(v), id.as_str()))
            .collect();
        exact.sort_by(|a, b| b.0.total_cmp(&a.0));
        let q =
            RecallQuery { text: text.into(), limit: 10, tier, weights: Some(by_meaning.clone()), ..Default::default() };
        let hits = recall::recall(&conn, &q, now).unwrap();
        assert_eq!(hits.len(), 10, "{text:?}");
        for (h, (cos, id)) in hits.iter().zip(&exact) {
            let got = h.breakdown.cosine.expect("a cosine") as f32;
            // Equal cosines may come in either order: compare the cosine at each rank, and the
            // id where the cosine is not tied.
            assert!((got - cos).abs() < 1e-5, "{text:?}: rank of {id} has cosine {got}, exact {cos}");
            if exact.iter().filter(|(c, _)| (c - cos).abs() < 1e-6).count() == 1 {
                assert_eq!(h.id, *id, "{text:?}");
            }
            assert!(tier.is_none_or(|t| h.tier == t));
        }
    }
    if lethe_testkit::backend::is_postgres() {
        let has_pgvector: bool = conn
            .query_row("SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')", [], |r| r.get(0))
            .unwrap();
        assert_eq!(conn.vector_search_on_server(), has_pgvector, "a server with pgvector searches with it");
    }
}
