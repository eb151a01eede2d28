//! Recall's in-memory stemmed BM25 (`lexical`) against FTS5's own `bm25()` on the same file:
//! the same matches, the same scores to the bit and the same order, for every query of both
//! workloads, before and after writes from other connections, and the same recall results as
//! a connection that asks FTS5.
//!
//! These are SQLite files on purpose: a team store has no FTS5 index to mirror.

use lethe_engine::lexical::{self, LexicalIndex};
use lethe_engine::recall::{self, RecallQuery};
use lethe_engine::{model::Memory, store, time, transfer, Tier};
use lethe_testkit::workload::realistic::RealisticGenerator;
use lethe_testkit::workload::Generator;

fn now() -> time::Instant {
    time::parse("2026-06-01T00:00:00.000Z").unwrap()
}

/// Memories of both workloads (the reference one has many equal scores: ties), and a few
/// that use every indexed column, accents, digits, an empty text and a very long word.
fn memories() -> Vec<Memory> {
    let mut out: Vec<Memory> = RealisticGenerator::new(2_500).map(|m| m.to_memory(now())).collect();
    out.extend(Generator::new(1_500).map(|m| {
        let mut m = m.to_memory(now());
        m.id = format!("mem_ref_{}", &m.id[4..]);
        m
    }));
    let mut special = |id: &str, content: &str| {
        let mut m = out[0].clone();
        m.id = id.into();
        m.content = content.into();
        m.tier = Tier::Procedural;
        m.task_goal = Some("Roll back a broken deploy".into());
        m.workflow_name = Some("deploy-rollback".into());
        m.skill_name = Some("release_engineering".into());
        m.tags = vec!["deploy".into(), "rollback".into()];
        out.push(m);
    };
    special("mem_sp_1", "Café naïve résumé: the CAFÉS were running; runners ran 3 runs in 2026");
    special("mem_sp_3", &format!("{} deploy", "x".repeat(300)));
    special("mem_sp_4", "deploy deploy deploy deploying deployed deploys rollback");
    out
}

fn load(path: &std::path::Path, memories: &[Memory]) -> store::Connection {
    let mut conn = store::open(path).unwrap();
    fill(&mut conn, memories);
    conn
}

fn fill(conn: &mut store::Connection, memories: &[Memory]) {
    let mut jsonl = Vec::new();
    for m in memories {
        serde_json::to_writer(&mut jsonl, m).unwrap();
        jsonl.push(b'\n');
    }
    transfer::import(conn, &jsonl[..], &transfer::ImportOptions::new(now())).unwrap();
    // An empty text counts as a row of no tokens, bytes that are not UTF-8 are tokenized as
    // FTS5 tokenizes them, a number as session is text to scene fit, and steps are indexed
    // too (written as another program would: import refuses such rows).
    conn.execute_batch(
        "INSERT INTO memory_item (id, type, content, created_at) VALUES ('mem_sp_empty', 'episodic', '', '2026-05-01T00:00:00.000Z');
         INSERT INTO memory_item (id, type, content, created_at, session_id) \
         VALUES ('mem_sp_bytes', 'episodic', CAST(x'6465706c6f79ff20636166c3a9' AS TEXT), '2026-05-01T00:00:00.000Z', 42);
         UPDATE memory_item SET steps = '[\"Run the rollback script\", \"Verify the health checks\"]' WHERE id LIKE 'mem_sp_%';",
    )
    .unwrap();
}

fn queries() -> Vec<String> {
    let mut q = lethe_testkit::workload::realistic::queries(150);
    q.extend(Generator::new(10).queries(150));
    q.extend(
        [
            "running runs ran",
            "café cafés naive",
            "how do I undo a broken release",
            "rollback deploy",
            "release_engineering",
            "deploy-rollback steps",
            "2026 3",
            "zzzz nothing matches this",
            "the a of to",
        ]
        .map(String::from),
    );
    q
}

/// FTS5's answer: `recall::LEXICAL_SQL` with every word (`all`) or any, at most `limit`.
fn fts5(conn: &store::Connection, text: &str, all: bool, limit: i64) -> Vec<(i64, u64)> {
    let expr = if all { recall::match_all_expression(text) } else { recall::match_expression(text) };
    let Some(expr) = expr else { return Vec::new() };
    let mut stmt = conn.prepare(recall::LEXICAL_SQL).unwrap();
    stmt.query_map(lethe_engine::params![expr, limit], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?.to_bits())))
        .unwrap()
        .collect::<lethe_engine::Result<_>>()
        .unwrap()
}

fn in_memory(
    ix: &LexicalIndex,
    conn: &store::Connection,
    text: &str,
    all: bool,
    limit: i64,
) -> Option<Vec<(i64, u64)>> {
    let phrases = ix.phrases(conn, &recall::searched_words(text)).unwrap()?;
    let mut m = ix.search(&phrases, all);
    lexical::best(&mut m, usize::try_from(limit).ok());
    Some(m.into_iter().map(|(r, s)| (r, s.to_bits())).collect())
}

/// Every query, both searches, top 400 and all: bit-identical to FTS5. Returns how many
/// query searches were compared.
fn assert_same_as_fts5(ix: &LexicalIndex, conn: &store::Connection, when: &str) -> usize {
    let mut compared = 0;
    for q in queries() {
        for all in [true, false] {
            for limit in [recall::INNER, -1] {
                let Some(mine) = in_memory(ix, conn, &q, all, limit) else { continue };
                let theirs = fts5(conn, &q, all, limit);
                assert_eq!(mine, theirs, "{when}: {q:?} (every word: {all}, limit {limit})");
                compared += 1;
            }
        }
    }
    compared
}

/// Every live row's facts as the index keeps them equal what recall's statement reads now.
fn assert_same_facts(ix: &LexicalIndex, conn: &store::Connection, when: &str) {
    let mut stmt = conn.prepare(&format!("SELECT {}, m.rowid, m.id FROM memory_item m", recall::FACT_COLUMNS)).unwrap();
    let mut rows = stmt.query([]).unwrap();
    let mut n = 0;
    while let Some(r) = rows.next().unwrap() {
        let rowid: i64 = r.get(9).unwrap();
        let want = recall::facts_of(&r, 0).unwrap();
        assert_eq!(ix.facts(rowid), Some(&want), "{when}: facts of rowid {rowid}");
        assert_eq!(ix.id(rowid), r.get::<_, String>(10).unwrap());
        n += 1;
    }
    assert_eq!(n, ix.len(), "{when}");
}

/// Recall (and its explanation) through the process's copy equals recall on `copy`, which
/// only the file serves, for queries with every kind of filter and context.
fn assert_same_recall(conn: &store::Connection, copy: &store::Connection, session: &str, when: &str) {
    for (k, text) in queries().into_iter().step_by(5).enumerate() {
        let mut q = RecallQuery { text: text.clone(), limit: 10, ..Default::default() };
        match k % 6 {
            1 => q.tier = Some(Tier::Semantic),
            2 => q.pinned = Some(false),
            3 => q.session = Some(session.to_string()),
            4 => q.tags = vec!["deploy".into()],
            5 => q.task_kind = Some("deploy".into()),
            _ => {}
        }
        let a = recall::recall(conn, &q, now()).unwrap();
        let b = recall::recall(copy, &q, now()).unwrap();
        assert_eq!(a, b, "{when}: recall of {q:?}");
        if k % 4 == 0 {
            let a = recall::explain(conn, &q, now(), 10).unwrap();
            let b = recall::explain(copy, &q, now(), 10).unwrap();
            assert_eq!(a, b, "{when}: explain of {q:?}");
        }
    }
}

#[test]
fn the_in_memory_index_scores_and_orders_every_query_as_fts5_does() {
    let dir = std::env::temp_dir().join(format!("lethe-lex-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let conn = load(&dir.join("a.db"), &memories());
    let ix = LexicalIndex::load(&conn).unwrap();
    assert_eq!(ix.len(), memories().len() + 2);
    let compared = assert_same_as_fts5(&ix, &conn, "loaded");
    let fell_back: Vec<String> =
        queries().into_iter().filter(|q| ix.phrases(&conn, &recall::searched_words(q)).unwrap().is_none()).collect();
    assert!(fell_back.is_empty(), "left to FTS5: {fell_back:?}");
    assert_eq!(compared, 4 * queries().len());
    // Ties are common in the reference workload: the comparison above covered their order.
    let ties = fts5(&conn, "react", false, -1);
    assert!(ties.windows(2).any(|w| w[0].1 == w[1].1), "the reference workload has equal scores");
    // Identifiers are phrases of several tokens (`release_engineering` is two for unicode61),
    // matched at consecutive places of one column.
    let phrases = ix.phrases(&conn, &recall::searched_words("CDN_BASE_URL release_engineering")).unwrap().unwrap();
    assert_eq!(phrases.iter().map(Vec::len).collect::<Vec<_>>(), vec![3, 2]);
    assert!(!fts5(&conn, "release_engineering", false, -1).is_empty());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_process_index_follows_every_write_and_recall_answers_as_fts5_does() {
    let _one_at_a_time = crate::one_recall_cache_user();
    let dir = std::env::temp_dir().join(format!("lethe-lex-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("b.db");
    let mems = memories();
    let mut conn = load(&path, &mems);
    let other = store::open(&path).unwrap();

    // A one-shot command's single recall asks FTS5; the next one builds the index.
    let first = lexical::index(&conn).unwrap();
    assert!(first.is_none(), "the first recall of a file does not build the index");
    let ix = lexical::index(&conn).unwrap().expect("built at the second recall").index;
    assert_same_as_fts5(&ix, &conn, "built");
    assert_same_facts(&ix, &conn, "built");

    // Recall through the index equals recall on a copy that only FTS5 serves (a file in
    // memory never gets the index).
    let mut copy = store::open_in_memory().unwrap();
    fill(&mut copy, &mems);
    let session: String = conn
        .query_row("SELECT session_id FROM memory_item WHERE session_id IS NOT NULL LIMIT 1", [], |r| r.get(0))
        .unwrap();
    assert_same_recall(&conn, &copy, &session, "built");
    // Superseded, archived and task-log memories leave recall (tables the journal does not
    // cover): the first three hits of a query become one of each, in both files.
    let top =
        recall::recall(&conn, &RecallQuery { text: "deploy rollback".into(), limit: 3, ..Default::default() }, now())
            .unwrap();
    assert_eq!(top.len(), 3);
    for c in [&conn, &copy] {
        c.execute_batch(&format!(
            "INSERT INTO lethe_supersede (old_id, new_id, actor, created_at) VALUES ('{}', '{}', 'test', '2026-05-01T00:00:00.000Z');
             INSERT INTO lethe_archive (memory_id, memo, original, sha256, bytes, actor, archived_at) \
             VALUES ('{}', 'memo', x'00', 'x', 1, 'test', '2026-05-01T00:00:00.000Z');
             INSERT INTO lethe_task_log (memory_id, session_id, task_kind, ended_at) \
             VALUES ('{}', 's', 'deploy', '2026-05-01T00:00:00.000Z');",
            top[0].id, top[1].id, top[1].id, top[2].id
        ))
        .unwrap();
    }
    assert_same_recall(&conn, &copy, &session, "with exclusions");
    let after =
        recall::recall(&conn, &RecallQuery { text: "deploy rollback".into(), limit: 3, ..Default::default() }, now())
            .unwrap();
    assert!(after.iter().all(|h| top.iter().all(|t| t.id != h.id)), "{after:?}");
    for c in [&conn, &copy] {
        c.execute("UPDATE lethe_archive SET restored_at = '2026-05-02T00:00:00.000Z'", []).unwrap();
    }
    assert_same_recall(&conn, &copy, &session, "after a restore");

    // Writes from another connection: a new memory, an edit by another program, a delete.
    other
        .execute_batch(
            "INSERT INTO memory_item (id, type, content, importance, created_at, version, is_deleted) \
             VALUES ('mem_new_1', 'episodic', 'Café deploy rolled back by the runners', 0.5, '2026-05-01T00:00:00.000Z', 1, 0);
             UPDATE memory_item SET content = 'deploying naïve runners again' WHERE id = 'mem_sp_1';
             UPDATE memory_item SET tags = '[\"café\"]' WHERE id = 'mem_sp_4';
             DELETE FROM memory_item WHERE id = 'mem_sp_3';",
        )
        .unwrap();
    let ix = lexical::index(&conn).unwrap().expect("kept").index;
    assert_same_as_fts5(&ix, &conn, "after writes");
    assert_same_facts(&ix, &conn, "after writes");
    // The deleted memory's only word left the process's vocabulary too.
    let gone = ix.phrases(&conn, &["x".repeat(300)]).unwrap().unwrap();
    assert_eq!(gone, vec![vec![None]], "a deleted memory's word is still held in memory");
    assert_eq!(ix.len(), mems.len() + 2);

    // Many deletes at once: the index drops its dead rows (compaction) and still agrees.
    other
        .execute("DELETE FROM memory_item WHERE rowid IN (SELECT rowid FROM memory_item ORDER BY rowid LIMIT 1500)", [])
        .unwrap();
    let ix = lexical::index(&conn).unwrap().expect("kept").index;
    assert_eq!(ix.len(), mems.len() + 2 - 1500);
    assert_same_as_fts5(&ix, &conn, "after 1,500 deletes");
    assert_same_facts(&ix, &conn, "after 1,500 deletes");

    // A write the journal does not show (its trigger dropped by another program) changes
    // FTS5's totals: the index sees the disagreement and is built again.
    other
        .execute_batch(
            "DROP TRIGGER lethe_change_au;
             UPDATE memory_item SET content = content || ' extra words for the totals' \
             WHERE rowid = (SELECT MAX(rowid) FROM memory_item);",
        )
        .unwrap();
    let ix = lexical::index(&conn).unwrap().expect("rebuilt").index;
    assert_same_as_fts5(&ix, &conn, "after a write outside the journal");

    // The recall path itself still works after all of it.
    let hits =
        recall::recall(&conn, &RecallQuery { text: "café runners".into(), limit: 5, ..Default::default() }, now())
            .unwrap();
    assert!(hits.iter().any(|h| h.id == "mem_new_1"), "{hits:?}");
    drop(conn.transaction().unwrap());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_large_file_gets_its_index_from_a_build_on_the_side_while_fts5_answers() {
    let _one_at_a_time = crate::one_recall_cache_user();
    let dir = std::env::temp_dir().join(format!("lethe-lex-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("c.db");
    let conn = load(&path, &memories()[..600]);
    // Every file counts as large here (limit 0): the second recall starts the build and
    // returns without an index, as do the recalls until it is done.
    assert!(lexical::index_with(&conn, 0).unwrap().is_none());
    assert!(lexical::index_with(&conn, 0).unwrap().is_none(), "the build runs on the side");
    // A write while the build may be running: the index is patched from the journal position
    // it was read at.
    conn.execute(
        "INSERT INTO memory_item (id, type, content, created_at) \
         VALUES ('mem_late', 'semantic', 'a late café deploy note', '2026-05-01T00:00:00.000Z')",
        [],
    )
    .unwrap();
    let start = std::time::Instant::now();
    let kept = loop {
        if let Some(k) = lexical::index_with(&conn, 0).unwrap() {
            break k;
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(60), "the build on the side never finished");
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert_eq!(kept.index.len(), 603);
    assert_same_as_fts5(&kept.index, &conn, "built on the side");
    assert_same_facts(&kept.index, &conn, "built on the side");
    std::fs::remove_dir_all(&dir).ok();
}
