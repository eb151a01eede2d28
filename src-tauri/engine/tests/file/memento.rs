//! A memento database opens as it is: files made by memento 0.1.0's own SQL (its
//! `schema.sql` and the DDL of its `database.ts`, copied byte for byte from the released source)
//! and a 1.36-style file written by hand from memento's documented schema are opened by Lethe,
//! shown, scored, pinned, soft-deleted and restored — and after each step memento's own
//! queries still work from a connection that knows nothing of Lethe.

use std::collections::BTreeSet;
use std::path::Path;

use lethe_engine::lifecycle;
use lethe_engine::{audit, decay, forgetting, meta, procedural, store, time, Settings, Tier};
use lethe_testkit::fixtures;
use rusqlite::{params, Connection};

/// The SQLite connection under an engine connection (these checks read SQLite's catalogue).
fn raw(conn: &lethe_engine::store::Connection) -> &Connection {
    conn.sqlite().expect("an SQLite file")
}

/// A connection as memento opens one: plain SQLite with `normalize_reflection_notes`
/// registered, and nothing of Lethe.
fn memento_conn(path: &Path) -> Connection {
    fixtures::memento_connection(path).unwrap()
}

/// Every column memento 1.36 defines on memory_item: the only ones Lethe may add.
const MEMENTO_136_COLUMNS: &[&str] = &[
    "id",
    "type",
    "content",
    "importance",
    "privacy_scope",
    "created_at",
    "last_accessed",
    "pinned",
    "tags",
    "source",
    "view_count",
    "cite_count",
    "edit_count",
    "origin_source",
    "task_goal",
    "steps",
    "reflection_notes",
    "workflow_name",
    "skill_name",
    "trigger_conditions",
    "version",
    "version_series_id",
    "owner_id",
    "process_id",
    "session_id",
    "num_times",
    "last_mentioned_at",
    "source_session_id",
    "confidence",
    "recall_count",
    "last_accessed_at",
    "consolidation_score",
    "g_value",
    "subject",
    "predicate",
    "object",
    "is_consolidated",
    "triple_extracted",
    "triple_extracted_status",
    "triple_extraction_metadata",
    "is_deleted",
    "deleted_at",
    "project_id",
];

/// memento 0.1.0 (its own schema.sql at release tag 1.5.1, and three rows): no procedural,
/// versioning or soft-delete columns, `CURRENT_TIMESTAMP` times, an FTS index over content,
/// tags and source kept by memento's triggers, no forgetting or meta tables.
fn build_early() -> crate::support::TempDb {
    let path = named_temp_db("memento-0.1.db");
    fixtures::build_memento(&path, fixtures::MementoKind::Early).unwrap();
    path
}

/// memento 1.36 as its schema.sql writes it (the parts Lethe meets), plus the sqlite-vec parts
/// a plain SQLite cannot create: the `vec0` table itself (written into sqlite_master as
/// sqlite-vec leaves it) and memento's triggers that feed it.
fn build_v136() -> crate::support::TempDb {
    let path = named_temp_db("memento-1.36.db");
    fixtures::build_memento(&path, fixtures::MementoKind::V136).unwrap();
    // The file now looks like one sqlite-vec wrote: a plain SQLite can read its schema but
    // cannot touch the vec0 table.
    let conn = memento_conn(&path);
    let err = conn.query_row("SELECT COUNT(*) FROM memory_item_vec", [], |r| r.get::<_, i64>(0)).unwrap_err();
    assert!(err.to_string().contains("no such module: vec0"), "{err}");
    path
}

/// (type, name, sql) of every schema object.
fn schema(conn: &Connection) -> BTreeSet<(String, String, Option<String>)> {
    let mut stmt = conn.prepare("SELECT type, name, sql FROM sqlite_master").unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect()
}

fn columns(conn: &Connection, table: &str) -> Vec<String> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({table})")).unwrap();
    stmt.query_map([], |r| r.get(1)).unwrap().map(Result::unwrap).collect()
}

/// After Lethe opened a memento file: its own journal triggers plus FTS triggers under
/// memento's names, exactly once.
const EXPECTED_TRIGGERS: [&str; 16] = [
    "lethe_change_ad",
    "lethe_change_ai",
    "lethe_change_au",
    "lethe_derived_au",
    "lethe_fts_ad",
    "lethe_fts_ai",
    "lethe_fts_ai_alone",
    "lethe_fts_au",
    "lethe_fts_bd",
    "lethe_fts_bu",
    "lethe_neighbour_ad",
    "lethe_vector_ad",
    "lethe_vector_au",
    "memory_item_fts_delete",
    "memory_item_fts_insert",
    "memory_item_fts_update",
];

fn triggers_on_memory_item(conn: &Connection) -> BTreeSet<String> {
    let mut stmt =
        conn.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'memory_item'").unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

/// memento's full-text search: ids whose row matches `q`.
fn fts_ids(conn: &Connection, q: &str) -> Vec<String> {
    let mut stmt = conn
        .prepare(
            "SELECT m.id FROM memory_item_fts f JOIN memory_item m ON m.rowid = f.rowid \
             WHERE memory_item_fts MATCH ?1 ORDER BY m.id",
        )
        .unwrap();
    stmt.query_map([q], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

/// The columns of memento's full-text index (three in memento 0.1.0, four with reflection notes
/// in 1.36).
fn fts_columns(conn: &Connection) -> Vec<String> {
    columns(conn, "memory_item_fts")
}

/// The FTS index holds exactly what a fresh index of the current rows would hold: no row
/// indexed twice, no stale token left behind by a `delete` with the wrong tokens.
fn assert_fts_exact(conn: &Connection) {
    conn.execute("INSERT INTO memory_item_fts (memory_item_fts) VALUES ('integrity-check')", []).unwrap();
    let cols = fts_columns(conn);
    let values: Vec<String> = cols
        .iter()
        .map(|c| if c == "reflection_notes" { format!("normalize_reflection_notes({c})") } else { c.clone() })
        .collect();
    conn.execute_batch(&format!(
        "DROP TABLE IF EXISTS temp.got_vocab; DROP TABLE IF EXISTS temp.want_vocab; DROP TABLE IF EXISTS temp.want_fts;
         CREATE VIRTUAL TABLE temp.want_fts USING fts5({cols});
         INSERT INTO temp.want_fts (rowid, {cols}) SELECT rowid, {values} FROM main.memory_item;
         CREATE VIRTUAL TABLE temp.got_vocab USING fts5vocab(main, memory_item_fts, instance);
         CREATE VIRTUAL TABLE temp.want_vocab USING fts5vocab(temp, want_fts, instance);",
        cols = cols.join(", "),
        values = values.join(", ")
    ))
    .unwrap();
    let read = |t: &str| -> Vec<(String, i64, String, i64)> {
        let mut stmt =
            conn.prepare(&format!("SELECT term, doc, col, offset FROM temp.{t} ORDER BY 1, 2, 3, 4")).unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).unwrap().map(Result::unwrap).collect()
    };
    let (got, want) = (read("got_vocab"), read("want_vocab"));
    assert!(!want.is_empty());
    assert_eq!(got, want, "the FTS index must hold each row exactly once, with the current tokens");
    // The averages record (row count, tokens per column) and the per-row sizes: a row indexed
    // twice counts twice there even where the token positions coincide.
    let blob = |sql: &str| -> Vec<Vec<u8>> {
        let mut stmt = conn.prepare(sql).unwrap();
        stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
    };
    assert_eq!(
        blob("SELECT block FROM main.memory_item_fts_data WHERE id = 1"),
        blob("SELECT block FROM temp.want_fts_data WHERE id = 1"),
        "FTS row count and token totals"
    );
    assert_eq!(
        blob("SELECT sz FROM main.memory_item_fts_docsize ORDER BY id"),
        blob("SELECT sz FROM temp.want_fts_docsize ORDER BY id"),
        "FTS per-row sizes"
    );
    conn.execute_batch("DROP TABLE temp.got_vocab; DROP TABLE temp.want_vocab; DROP TABLE temp.want_fts;").unwrap();
}

/// What memento itself does with the file, from a connection that knows nothing of Lethe:
/// select by id, full-text search, and a new memory written through its triggers.
fn memento_still_works(path: &Path, id: &str, search: &str, step: &str) {
    let conn = memento_conn(path);
    let (got_id, content): (String, String) = conn
        .query_row("SELECT id, content FROM memory_item WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap_or_else(|e| panic!("{step}: memento's select by id failed: {e}"));
    assert_eq!(got_id, id);
    assert!(!content.is_empty());
    assert!(fts_ids(&conn, search).contains(&id.to_string()), "{step}: FTS MATCH {search:?} must find {id}");

    let new_id = format!("mem_{}", uuid::Uuid::new_v4());
    let word = format!("zebra{}", uuid::Uuid::new_v4().simple());
    conn.execute(
        "INSERT INTO memory_item (id, type, content, importance, privacy_scope, created_at, tags, source) \
         VALUES (?1, 'semantic', ?2, 0.5, 'private', CURRENT_TIMESTAMP, '[\"memento\"]', 'memento')",
        params![new_id, format!("memento wrote this after {step}: {word}")],
    )
    .unwrap_or_else(|e| panic!("{step}: memento's insert failed: {e}"));
    assert_eq!(fts_ids(&conn, &word), vec![new_id.clone()], "{step}: the new row is indexed once");
    let journal: i64 = conn
        .query_row("SELECT COUNT(*) FROM lethe_change WHERE memory_id = ?1 AND kind = 'insert'", [&new_id], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(journal, 1, "{step}: Lethe's journal trigger saw memento's insert");
    assert_fts_exact(&conn);
}

/// Pin, soft delete, restore through the engine; memento keeps working after each step, and
/// each step has its audit row.
fn pin_delete_restore(path: &Path, id: &str, search: &str) {
    let mut conn = store::open(path).unwrap();
    let before = lifecycle::get(&conn, id).unwrap();

    let pinned = lifecycle::pin(&mut conn, id, "user", now()).unwrap();
    assert!(pinned.pinned);
    memento_still_works(path, id, search, "pin");

    lifecycle::soft_delete(&mut conn, id, Some("not needed"), "user", now()).unwrap();
    assert!(lifecycle::get(&conn, id).unwrap().is_deleted);
    assert!(forgetting::quarantine(&conn, &Settings::default(), now()).unwrap().iter().any(|q| q.id == id));
    memento_still_works(path, id, search, "soft delete");
    {
        let m = memento_conn(path);
        let (deleted, at): (i64, Option<String>) = m
            .query_row("SELECT is_deleted, deleted_at FROM memory_item WHERE id = ?1", [id], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!(deleted, 1, "memento sees the soft delete in its own column");
        assert!(at.is_some());
    }

    let restored = lifecycle::restore(&mut conn, id, "user", now()).unwrap();
    assert!(!restored.is_deleted && restored.pinned);
    assert_eq!(restored.content, before.content);
    assert_eq!(restored.created_at, before.created_at, "memento's timestamp is kept as memento wrote it");
    memento_still_works(path, id, search, "restore");

    let events =
        audit::list_events(&conn, &audit::EventFilter { memory_id: Some(id.into()), ..Default::default() }).unwrap();
    let actions: BTreeSet<&str> = events.iter().map(|e| e.action.as_str()).collect();
    for a in ["pin", "soft", "restore"] {
        assert!(actions.contains(a), "audit must have {a}: {actions:?}");
    }
    let soft: (String, String) = conn
        .query_row(
            "SELECT reason, policy FROM memory_forgetting_event WHERE memory_id = ?1 AND action = 'soft'",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(soft, ("not needed".to_string(), "manual".to_string()));
}

fn expected_recency(created: &str, tier: Tier) -> f64 {
    let age = time::days_between(time::parse(created).unwrap(), now());
    decay::recency(age, Settings::default().half_life_days.get(tier))
}

#[test]
fn early_memento_file_opens_scores_and_keeps_working_with_memento() {
    let path = build_early();
    let before = schema(&memento_conn(&path));

    let conn = store::open(&path).unwrap();
    assert!(store::is_memento(&conn).unwrap());
    assert_eq!(store::schema_version(&conn).unwrap(), store::SCHEMA_VERSION);

    // Only columns memento's later versions define were added, and only lethe_ tables plus
    // the memento tables Lethe writes to (created as memento creates them) are new.
    for c in columns(raw(&conn), "memory_item") {
        assert!(MEMENTO_136_COLUMNS.contains(&c.as_str()), "column {c} is not one of memento's");
    }
    let after = schema(raw(&conn));
    for (ty, name, sql) in after.difference(&before) {
        let ok = name.starts_with("lethe_")
            || name.starts_with("sqlite_autoindex_lethe_")
            || name.starts_with("memory_item_fts")
            || (ty == "table" && name == "memory_item")
            || [
                "memory_forgetting_event",
                "meta_memory_stats",
                "sqlite_autoindex_memory_forgetting_event_1",
                "sqlite_autoindex_meta_memory_stats_1",
            ]
            .contains(&name.as_str());
        assert!(ok, "Lethe added or changed {ty} {name}: {sql:?}");
    }
    for (ty, name, _) in before.difference(&after) {
        assert!(ty == "table" && name == "memory_item", "only memory_item's columns may change, not {ty} {name}");
    }
    let forgetting_sql: String = conn
        .query_row("SELECT sql FROM sqlite_master WHERE name = 'memory_forgetting_event'", [], |r| r.get(0))
        .unwrap();
    assert!(forgetting_sql.contains("reason TEXT NOT NULL"), "memento's own definition: {forgetting_sql}");

    // memento 0.1.0's own FTS (content, tags, source) is used as it is.
    assert_eq!(fts_columns(raw(&conn)), ["content", "tags", "source"]);
    assert_eq!(fts_ids(raw(&conn), "deploy"), vec!["mem_early_2".to_string()]);
    assert_eq!(fts_ids(raw(&conn), "postgresql"), vec!["mem_early_1".to_string()]);
    assert_eq!(triggers_on_memory_item(raw(&conn)).into_iter().collect::<Vec<_>>(), EXPECTED_TRIGGERS);
    assert_fts_exact(&memento_conn(&path));

    // Show and score: a CURRENT_TIMESTAMP-style time reads as UTC, NULL version counts as 1.
    let d = lethe_engine::detail(&conn, "mem_early_1", now(), None).unwrap();
    assert_eq!(d.memory.created_at, "2025-01-02 03:04:05");
    assert_eq!(d.memory.version, 1);
    assert!(!d.memory.is_deleted);
    let want = expected_recency("2025-01-02T03:04:05Z", Tier::Semantic);
    assert!((d.score.features.recency - want).abs() < 1e-12, "{} vs {want}", d.score.features.recency);
    assert!(d.score.reasons.iter().any(|r| r == "old"), "{:?}", d.score.reasons);
    let e2 = lethe_engine::detail(&conn, "mem_early_2", now(), None).unwrap();
    assert!(e2.score.features.usage > 0.0, "views count toward usage");
    let snap = forgetting::Snapshot::load(&conn).unwrap();
    let q = lifecycle::ListQuery { limit: 50, ..Default::default() };
    let listed = forgetting::list(&conn, &snap, &q, &Settings::default(), now()).unwrap();
    assert_eq!(listed.total, 3, "all three early rows are scored and listed");
    drop(conn);

    pin_delete_restore(&path, "mem_early_1", "postgresql");
    pin_delete_restore(&path, "mem_early_2", "deploy");

    // memento's own tables are untouched by all this.
    let m = memento_conn(&path);
    let tagged: i64 =
        m.query_row("SELECT COUNT(*) FROM memory_item_tag WHERE memory_id = 'mem_early_2'", [], |r| r.get(0)).unwrap();
    assert_eq!(tagged, 1);
    eprintln!("early memento fixture: {}", path.display());
}

#[test]
fn memento_136_file_opens_and_its_tables_stay_memento_s() {
    let path = build_v136();
    let (before, user_version) = {
        let m = memento_conn(&path);
        (schema(&m), m.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0)).unwrap())
    };

    let mut conn = store::open(&path).unwrap();
    assert!(store::is_memento(&conn).unwrap());
    // Nothing of memento's schema changed (every column Lethe reads exists already), the vec0
    // table was left alone, and user_version is still memento's.
    let after = schema(raw(&conn));
    let changed: Vec<_> = before.difference(&after).collect();
    assert!(changed.is_empty(), "Lethe changed or removed memento's {changed:?}");
    for (ty, name, sql) in after.difference(&before) {
        assert!(
            name.starts_with("lethe_") || name.starts_with("sqlite_autoindex_lethe_"),
            "Lethe added {ty} {name}: {sql:?}"
        );
    }
    assert_eq!(conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0)).unwrap(), user_version);

    // memento's FTS is used as it is: no second set of triggers, no double indexing.
    assert_eq!(triggers_on_memory_item(raw(&conn)).into_iter().collect::<Vec<_>>(), EXPECTED_TRIGGERS);
    assert_fts_exact(&memento_conn(&path));
    assert_eq!(fts_ids(raw(&conn), "snapshot"), vec!["mem_new_3".to_string()], "reflection notes are searchable");
    assert_eq!(fts_ids(raw(&conn), "timed"), vec!["mem_new_3".to_string()]);

    // Show and score, both timestamp formats.
    let d1 = lethe_engine::detail(&conn, "mem_new_1", now(), None).unwrap();
    let want = expected_recency("2025-01-02T03:04:05Z", Tier::Semantic);
    assert!((d1.score.features.recency - want).abs() < 1e-12);
    assert_eq!(d1.meta.recall_count, 2, "memento's meta_memory_stats is read");
    let d2 = lethe_engine::detail(&conn, "mem_new_2", now(), None).unwrap();
    assert!((d2.score.features.recency - expected_recency("2026-05-20T08:00:00.000Z", Tier::Episodic)).abs() < 1e-12);
    let p = lethe_engine::detail(&conn, "mem_new_3", now(), None).unwrap();
    assert_eq!(p.memory.version, 1, "version NULL counts as 1");
    assert_eq!(p.memory.reflection_notes.as_ref().unwrap()[0]["lessons_learned"], "raise the timeout");
    let q = forgetting::quarantine(&conn, &Settings::default(), now()).unwrap();
    assert!(q.iter().any(|q| q.id == "mem_new_4"), "memento's own soft delete shows in quarantine");
    let ev =
        audit::list_events(&conn, &audit::EventFilter { memory_id: Some("mem_new_4".into()), ..Default::default() })
            .unwrap();
    assert!(ev.iter().any(|e| e.id == "fev_memento_1"), "memento's forgetting events are in the audit log");

    // A procedural update on a NULL version expects 1 and writes 2.
    let patch = procedural::ProcedurePatch {
        content: Some("How to roll back a failed deploy, safely".into()),
        ..Default::default()
    };
    let updated = procedural::update(&mut conn, "mem_new_3", 1, &patch, "user", now()).unwrap();
    assert_eq!(updated.version, 2);
    assert_fts_exact(&memento_conn(&path));

    // Recall statistics go into memento's meta_memory_stats (NOT NULL avg_confidence).
    let mut deltas = std::collections::HashMap::new();
    deltas.insert(
        "mem_new_2".to_string(),
        meta::Delta {
            count: 1,
            success: 1,
            failure: 0,
            confidence_sum: 0.5,
            last_recalled_at: Some(time::format(now())),
        },
    );
    meta::write_deltas(&mut conn, &deltas).unwrap();
    drop(conn);

    pin_delete_restore(&path, "mem_new_1", "postgresql");
    pin_delete_restore(&path, "mem_new_3", "snapshot");
    pin_delete_restore(&path, "mem_new_2", "deploy");

    // Reopening changes nothing more, and the vec0 table is still memento's, unread.
    let conn = store::open(&path).unwrap();
    let vec_sql: String =
        conn.query_row("SELECT sql FROM sqlite_master WHERE name = 'memory_item_vec'", [], |r| r.get(0)).unwrap();
    assert_eq!(vec_sql, "CREATE VIRTUAL TABLE memory_item_vec USING vec0(embedding float[384])");
    eprintln!("memento 1.36 fixture: {}", path.display());
}

#[test]
fn memento_insert_needs_the_function_and_lethe_registers_it() {
    let path = build_v136();
    store::open(&path).unwrap();
    // A plain connection without memento's function cannot write memory_item at all (this is
    // memento's design); Lethe's connections can.
    let plain = Connection::open(&path).unwrap();
    let err = plain
        .execute("INSERT INTO memory_item (id, type, content) VALUES ('mem_plain', 'semantic', 'x')", [])
        .unwrap_err();
    assert!(err.to_string().contains("normalize_reflection_notes"), "{err}");
    let conn = store::open(&path).unwrap();
    conn.execute(
        "INSERT INTO memory_item (id, type, content) VALUES ('mem_lethe_sql', 'semantic', 'written by Lethe')",
        [],
    )
    .unwrap();
    assert_fts_exact(&memento_conn(&path));
}

#[test]
fn without_sqlite_vec_nothing_is_deleted_for_ever_and_the_batch_still_runs() {
    // memento's embeddings cascade from memory_item, and its delete trigger on memory_embedding
    // writes to the vec0 table: without sqlite-vec SQLite cannot compile any DELETE FROM
    // memory_item, for a memory with a vector or without. The delete fails whole, with a
    // clear error, and the policy batch leaves expired quarantine in place instead of failing.
    let path = build_v136();
    let mut conn = store::open(&path).unwrap();
    assert!(store::memory_delete_blocked(&conn).unwrap().is_some());
    for id in ["mem_new_2", "mem_new_1"] {
        let err = lifecycle::hard_delete(&mut conn, id, true, None, "user", now()).unwrap_err();
        assert!(err.to_string().contains("vec0"), "{err}");
        assert!(lifecycle::get(&conn, id).is_ok(), "nothing was deleted");
    }
    let embeddings: i64 = conn.query_row("SELECT COUNT(*) FROM memory_embedding", [], |r| r.get(0)).unwrap();
    assert_eq!(embeddings, 1);

    // mem_new_4 has been in quarantine (memento's soft delete) for more than 30 days by then.
    let later = time::parse("2026-08-01T00:00:00.000Z").unwrap();
    forgetting::run_batch(&mut conn, &forgetting::BatchOptions::new(later, false)).unwrap();
    assert!(lifecycle::get(&conn, "mem_new_4").unwrap().is_deleted, "kept in quarantine, not purged");
    memento_still_works(&path, "mem_new_1", "postgresql", "batch");

    // A Lethe file (no vec tables) deletes as before.
    let conn = store::open_in_memory().unwrap();
    assert_eq!(store::memory_delete_blocked(&conn).unwrap(), None);
}

#[test]
fn a_lethe_file_from_schema_2_gets_memento_s_trigger_names_and_a_consistent_index() {
    // Rebuild the state a Lethe file had before migration 3: Lethe's 001 trigger names and an
    // index built with the old normalisation (which also indexed "actor" differently).
    let path = named_temp_db("lethe-v2.db");
    {
        let mut conn = store::open(&path).unwrap();
        let id = match lifecycle::remember(
            &mut conn,
            &lifecycle::NewMemory::new(Tier::Procedural, "Deploy with care"),
            "user",
            now(),
        )
        .unwrap()
        {
            lifecycle::RememberOutcome::Stored { id, .. } => id,
            other => panic!("{other:?}"),
        };
        conn.execute_batch(
            "DROP TRIGGER memory_item_fts_insert; DROP TRIGGER memory_item_fts_delete; DROP TRIGGER memory_item_fts_update;
             DELETE FROM lethe_schema WHERE version >= 3;",
        )
        .unwrap();
        let old_triggers: String = include_str!("../../src/storage/sqlite/migrations/001_fts.sql")
            .split("CREATE TRIGGER")
            .skip(1)
            .map(|t| format!("CREATE TRIGGER{t}"))
            .collect();
        conn.execute_batch(&old_triggers).unwrap();
        // A row indexed the old way: the notes' text without key prefixes.
        conn.execute(
            "UPDATE memory_item SET reflection_notes = ?2 WHERE id = ?1",
            lethe_engine::params![
                id,
                r#"[{"failure_type":"tool_error","failure_description":"kubectl hung","actor":"agent:ops"}]"#
            ],
        )
        .unwrap();
        conn.execute("INSERT INTO memory_item_fts (memory_item_fts) VALUES ('delete-all')", []).unwrap();
        conn.execute(
            "INSERT INTO memory_item_fts (rowid, content, tags, source, reflection_notes) \
             SELECT rowid, content, tags, source, 'tool_error kubectl hung' FROM memory_item",
            [],
        )
        .unwrap();
        assert!(store::trigger_exists(&conn, "memory_item_fts_ai").unwrap());
    }
    let conn = store::open(&path).unwrap();
    assert_eq!(store::schema_version(&conn).unwrap(), store::SCHEMA_VERSION);
    assert_eq!(triggers_on_memory_item(raw(&conn)).into_iter().collect::<Vec<_>>(), EXPECTED_TRIGGERS);
    assert_fts_exact(&memento_conn(&path));
    assert_eq!(fts_ids(raw(&conn), "kubectl").len(), 1);
}

#[test]
fn the_index_check_catches_double_indexing() {
    // The checker used above is only worth something if it fails when a row is indexed twice
    // (memento's triggers next to Lethe's 001 ones, the risk migration 3 removes).
    let path = named_temp_db("double.db");
    let conn = memento_conn(&path);
    // The schema and rows of the 1.36 fixture, without its sqlite-vec parts.
    conn.execute_batch(include_str!("../fixtures/memento_1_36.sql")).unwrap();
    let old_triggers: String = include_str!("../../src/storage/sqlite/migrations/001_fts.sql")
        .split("CREATE TRIGGER")
        .skip(1)
        .map(|t| format!("CREATE TRIGGER{t}"))
        .collect();
    conn.execute_batch(&old_triggers).unwrap();
    conn.execute("INSERT INTO memory_item (id, type, content) VALUES ('mem_twice', 'semantic', 'indexed twice')", [])
        .unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| assert_fts_exact(&conn)));
    assert!(caught.is_err(), "a row indexed twice must fail the check");
}

// ---- memento 0.1.0's own SQL ------------------------------------------------------------------

use crate::support::{named_temp_db, now};
use lethe_testkit::fixtures::MementoSchema;

/// (name, declared type, not null, default, primary key) of every column of a table.
fn column_decls(conn: &Connection, table: &str) -> Vec<(String, String, i64, Option<String>, i64)> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({table})")).unwrap();
    stmt.query_map([], |r| Ok((r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// memento's search (`src/algorithms/search-engine.ts` at 4964c2f), its FTS branch: the ids
/// of the rows `MATCH` finds, by rank.
fn memento_search(conn: &Connection, q: &str) -> Vec<String> {
    let mut stmt = conn
        .prepare(
            "SELECT
            m.id, m.content, m.type, m.importance, m.created_at,
            m.last_accessed, m.pinned, m.tags, m.source,
            memory_item_fts.rank as fts_rank
          FROM memory_item_fts
          JOIN memory_item m ON memory_item_fts.rowid = m.rowid
          WHERE memory_item_fts MATCH ?
          ORDER BY fts_rank",
        )
        .unwrap();
    stmt.query_map([q], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

/// The (name, sql) of every trigger and view, with whitespace runs made one space.
fn logic(conn: &Connection) -> Vec<(String, String)> {
    let mut stmt =
        conn.prepare("SELECT name, sql FROM sqlite_master WHERE type IN ('trigger', 'view') ORDER BY name").unwrap();
    stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
        .map(|r| {
            let (n, s) = r.unwrap();
            (n, s.split_whitespace().collect::<Vec<_>>().join(" "))
        })
        .collect()
}

#[test]
fn the_memento_fixtures_are_memento_s_text_unchanged() {
    use sha2::{Digest, Sha256};
    for schema in MementoSchema::ALL {
        let got = format!("{:x}", Sha256::digest(schema.source().as_bytes()));
        assert_eq!(got, schema.recorded_sha256(), "{schema:?}: the copy differs from memento's file as fetched");
    }
    // The statements database.ts runs: its PRAGMAs, seven tables, nineteen indexes, the FTS
    // table and its three triggers.
    let stmts = lethe_testkit::fixtures::database_ts_statements();
    assert_eq!(stmts.iter().filter(|s| s.trim_start().starts_with("CREATE TABLE")).count(), 7, "{stmts:#?}");
    assert_eq!(stmts.iter().filter(|s| s.contains("CREATE TRIGGER")).count(), 3);
    assert_eq!(stmts.iter().filter(|s| s.contains("CREATE INDEX")).count(), 19);
}

#[test]
fn every_released_memento_schema_opens_and_its_search_keeps_working() {
    for schema in MementoSchema::ALL {
        let path = named_temp_db("memento-real.db");
        lethe_testkit::fixtures::build_memento_with(&path, schema, 40).unwrap();
        let before_logic = logic(&memento_conn(&path));
        assert!(
            before_logic.iter().any(|(n, _)| n == "memory_item_fts_update"),
            "{schema:?}: memento created its FTS triggers"
        );
        let conn = store::open(&path).unwrap_or_else(|e| panic!("{schema:?}: {e}"));
        assert!(store::is_memento(&conn).unwrap());
        assert!(store::foreign_objects(&conn).unwrap().is_empty());
        // memento's triggers stay as memento wrote them; Lethe's own come next to them.
        let after_logic = logic(raw(&conn));
        for t in &before_logic {
            assert!(after_logic.contains(t), "{schema:?}: Lethe changed memento's {t:?}");
        }
        let mut conn = conn;
        let id: String = conn.query_row("SELECT id FROM memory_item ORDER BY rowid LIMIT 1", [], |r| r.get(0)).unwrap();
        lifecycle::pin(&mut conn, &id, "user", now()).unwrap();
        drop(conn);
        let m = memento_conn(&path);
        assert_eq!(memento_search(&m, "topic3").len(), 4, "{schema:?}: memento's search finds what it stored");
        assert_fts_exact(&m);
    }
    // database.ts makes the same triggers as schema.sql at the same tag.
    let (a, b) = (named_temp_db("schema.db"), named_temp_db("database-ts.db"));
    lethe_testkit::fixtures::build_memento_with(&a, MementoSchema::Schema1_5_1, 0).unwrap();
    lethe_testkit::fixtures::build_memento_with(&b, MementoSchema::DatabaseTs1_5_1, 0).unwrap();
    assert_eq!(logic(&memento_conn(&a)), logic(&memento_conn(&b)));
}

#[test]
fn a_memento_0_1_file_with_500_memories_works_in_lethe_and_in_memento() {
    let _cache = crate::one_recall_cache_user();
    use lethe_engine::recall::{self, RecallQuery};
    let path = named_temp_db("memento-0.1.0-500.db");
    lethe_testkit::fixtures::build_memento_with(&path, MementoSchema::Schema1_5_1, 500).unwrap();
    let memento_columns = column_decls(&memento_conn(&path), "memory_item");
    let sample = "mem_1735722000007_00000d889"; // memory number 7 (7 * 7919 = 0xd889)

    let mut conn = store::open(&path).unwrap();
    // memento's columns are all there, declared as memento declared them, in memento's order;
    // Lethe only adds columns after them.
    let now_columns = column_decls(raw(&conn), "memory_item");
    assert_eq!(&now_columns[..memento_columns.len()], &memento_columns[..]);

    // List: every memory, scored.
    let snap = forgetting::Snapshot::load(&conn).unwrap();
    assert!(snap.mistyped.is_empty());
    let q = lifecycle::ListQuery { limit: 1000, ..Default::default() };
    let listed = forgetting::list(&conn, &snap, &q, &Settings::default(), now()).unwrap();
    assert_eq!(listed.total, 500);
    assert!(listed.items.iter().any(|i| i.id == sample));

    // Show, with a score whose recency is the one of memento's CURRENT_TIMESTAMP-style time.
    let d = lethe_engine::detail(&conn, sample, now(), None).unwrap();
    assert_eq!(d.memory.content, "memory number 7 about topic7 and the search service");
    assert_eq!(d.memory.tier, Tier::Procedural);
    let created = time::parse(&d.memory.created_at.replace(' ', "T")).unwrap();
    let want =
        decay::recency(time::days_between(created, now()), Settings::default().half_life_days.get(Tier::Procedural));
    assert!((d.score.features.recency - want).abs() < 1e-12, "{} vs {want}", d.score.features.recency);

    // Pin and unpin, in memento's own column.
    lifecycle::pin(&mut conn, sample, "user", now()).unwrap();
    let pinned: i64 =
        memento_conn(&path).query_row("SELECT pinned FROM memory_item WHERE id = ?1", [sample], |r| r.get(0)).unwrap();
    assert_eq!(pinned, 1);
    lifecycle::unpin(&mut conn, sample, "user", now()).unwrap();
    assert!(!lifecycle::get(&conn, sample).unwrap().pinned);

    // Recall finds it by its words.
    let hits = recall::recall(
        &conn,
        &RecallQuery { text: "memory number 7 topic7".into(), limit: 5, ..Default::default() },
        now(),
    )
    .unwrap();
    assert_eq!(hits.first().map(|h| h.id.as_str()), Some(sample), "{hits:?}");

    // Delete and restore.
    lifecycle::soft_delete(&mut conn, sample, Some("not needed"), "user", now()).unwrap();
    assert!(forgetting::quarantine(&conn, &Settings::default(), now()).unwrap().iter().any(|q| q.id == sample));
    let restored = lifecycle::restore(&mut conn, sample, "user", now()).unwrap();
    assert_eq!(restored.content, d.memory.content);
    assert_eq!(restored.created_at, d.memory.created_at, "memento's time is kept as memento wrote it");
    drop(conn);

    // memento: its search still answers (every tenth memory names topic7), its index is exact,
    // its remember tool's INSERT still works and is searchable, its columns are as it made them.
    let m = memento_conn(&path);
    let found = memento_search(&m, "topic7");
    assert_eq!(found.len(), 50);
    assert!(found.contains(&sample.to_string()));
    m.execute(
        "INSERT INTO memory_item (id, type, content, importance, privacy_scope, tags, source, created_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, CURRENT_TIMESTAMP)",
        params![
            "mem_after_lethe",
            "semantic",
            "written by memento after Lethe: walrus",
            0.5,
            "private",
            "[\"x\"]",
            "memento"
        ],
    )
    .unwrap();
    assert_eq!(memento_search(&m, "walrus"), ["mem_after_lethe"]);
    assert_fts_exact(&m);
    assert_eq!(&column_decls(&m, "memory_item")[..memento_columns.len()], &memento_columns[..]);
    drop(m);

    // Deleted for ever: gone from memento's search too.
    let mut conn = store::open(&path).unwrap();
    lifecycle::hard_delete(&mut conn, sample, true, None, "user", now()).unwrap();
    drop(conn);
    let m = memento_conn(&path);
    assert_eq!(memento_search(&m, "topic7").len(), 49);
    assert_fts_exact(&m);
}

#[test]
fn a_real_memento_file_with_one_more_trigger_or_view_is_refused_untouched() {
    for extra in [
        "CREATE TRIGGER audit_me AFTER INSERT ON memory_item BEGIN SELECT 1; END;",
        "CREATE VIEW recent AS SELECT id FROM memory_item;",
        // memento's own name with another body.
        "DROP TRIGGER memory_item_fts_insert;
         CREATE TRIGGER memory_item_fts_insert AFTER INSERT ON memory_item BEGIN DELETE FROM memory_link; END;",
    ] {
        let path = named_temp_db("memento-extra.db");
        lethe_testkit::fixtures::build_memento_with(&path, MementoSchema::Schema1_5_1, 10).unwrap();
        memento_conn(&path).execute_batch(extra).unwrap();
        let before = schema(&memento_conn(&path));
        let err = store::open(&path).unwrap_err();
        assert!(matches!(err, lethe_engine::Error::Refused(_)), "{extra}: {err:?}");
        assert!(err.to_string().contains("Lethe did not create"), "{err}");
        assert_eq!(schema(&memento_conn(&path)), before, "{extra}: nothing was written");
    }
}

#[test]
fn rows_memento_allows_but_lethe_cannot_read_are_reported_and_skipped() {
    let _cache = crate::one_recall_cache_user();
    use lethe_engine::recall::{self, RecallQuery};
    let path = named_temp_db("memento-odd-rows.db");
    lethe_testkit::fixtures::build_memento_with(&path, MementoSchema::Schema1_5_1, 30).unwrap();
    // memento's schema allows all three: `id TEXT PRIMARY KEY` takes NULL (not an INTEGER
    // primary key), and its columns have no STRICT types.
    let m = memento_conn(&path);
    m.execute(
        "INSERT INTO memory_item (id, type, content, created_at) VALUES (NULL, 'semantic', 'a row without an id about topic1', CURRENT_TIMESTAMP)",
        [],
    )
    .unwrap();
    m.execute(
        "INSERT INTO memory_item (id, type, content, created_at) VALUES ('mem_blob', 'semantic', X'746f70696331206279746573', CURRENT_TIMESTAMP)",
        [],
    )
    .unwrap();
    m.execute(
        "INSERT INTO memory_item (id, type, content, created_at) VALUES ('mem_int_time', 'semantic', 'an integer time about topic1', 1735722000)",
        [],
    )
    .unwrap();
    drop(m);

    let conn = store::open(&path).unwrap();
    let snap = forgetting::Snapshot::load(&conn).unwrap();
    let found: BTreeSet<(String, String, String)> =
        snap.mistyped.iter().map(|x| (x.id.clone(), x.column.clone(), x.found.clone())).collect();
    let want: BTreeSet<(String, String, String)> =
        [("", "id", "null"), ("mem_blob", "content", "blob"), ("mem_int_time", "created_at", "integer")]
            .iter()
            .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
            .collect();
    assert_eq!(found, want);
    assert_eq!(store::mistyped_rows(&conn, 100).unwrap().len(), 3, "the direct check names the same three");

    // The 30 readable memories are listed, scored and recalled; the three are skipped.
    let q = lifecycle::ListQuery { limit: 100, ..Default::default() };
    let listed = forgetting::list(&conn, &snap, &q, &Settings::default(), now()).unwrap();
    assert_eq!(listed.total, 30, "{:?}", listed.items.iter().map(|i| &i.id).collect::<Vec<_>>());
    let hits =
        recall::recall(&conn, &RecallQuery { text: "topic1".into(), limit: 50, ..Default::default() }, now()).unwrap();
    assert_eq!(hits.len(), 3, "memories 1, 11 and 21: {hits:?}");
    let stats = forgetting::stats(&conn, &snap, &Settings::default(), now()).unwrap();
    assert_eq!(stats.total_active, 30);
}
