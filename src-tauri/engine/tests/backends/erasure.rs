//! "Delete forever" means forever: after remembering, editing, importing,
//! archiving, reflecting, recalling (the recall log's query and context) and then
//! hard-deleting texts that carry a marker, the marker is in
//! none of the raw bytes of the database, its `-wal` and `-shm`, nor an export; the audit still
//! tells who deleted what and when. And a secret given to `remember` is never written at all.
//!
//! On a PostgreSQL test server (`LETHE_TEST_POSTGRES`) the same steps run on a team store,
//! where there is no file of Lethe's to read: the marker must be in no row of any table
//! (every column as text, binary ones in hex). The server's own files keep dead row versions
//! until `VACUUM`, and its WAL and backups what they recorded: that is the operator's part
//! (README, "A team store on PostgreSQL").

use std::path::{Path, PathBuf};

use crate::support::{now, temp_db};
use lethe_engine::forgetting::{self, BatchOptions};
use lethe_engine::lifecycle::{self, NewMemory, ProcedureFields, RememberOutcome};
use lethe_engine::procedural::{self, ProcedurePatch};
use lethe_engine::recall::{self, RecallQuery};
use lethe_engine::{archive, audit, recall_log, store, time, transfer, Tier};
use lethe_testkit::backend;

/// Every marker starts with this; FTS5 stores a leaf's first term in full, so a surviving
/// token shows this prefix in the bytes even where later terms are prefix-compressed.
const MARK: &str = "zqxj";
const SECRET: &str = "ghp_Rk7Tq2Wm9Xv4Lp8Zs1Nd6Bf3Hj5Cy0Ga2Ue4";

fn put(conn: &mut store::Connection, m: NewMemory) -> String {
    match lifecycle::remember(conn, &m, "user", now()).unwrap() {
        RememberOutcome::Stored { id, .. } => id,
        other => panic!("not stored: {other:?}"),
    }
}

/// The raw bytes of the database and its side files (absent files count as empty).
fn raw(db: &Path) -> Vec<(String, Vec<u8>)> {
    ["", "-wal", "-shm"]
        .iter()
        .map(|suffix| {
            let p = PathBuf::from(format!("{}{suffix}", db.display()));
            (p.display().to_string(), std::fs::read(&p).unwrap_or_default())
        })
        .collect()
}

fn holds(bytes: &[u8], needle: &str) -> bool {
    bytes.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// Where `needle` is stored: the files (database, `-wal`, `-shm`) of an SQLite store, read
/// with the connection open, or the tables of a team store whose rows hold it.
fn files_holding(conn: &store::Connection, db: &Path, needle: &str) -> Vec<String> {
    if !conn.is_postgres() {
        return raw(db).into_iter().filter(|(_, b)| holds(b, needle)).map(|(p, _)| p).collect();
    }
    let tables = backend::tables(conn).unwrap();
    tables
        .into_iter()
        .filter(|t| {
            let sql = format!(
                "SELECT COUNT(*) FROM \"{t}\" t WHERE strpos(lower(t::TEXT), lower(?1)) > 0 \
                 OR strpos(lower(t::TEXT), encode(convert_to(lower(?1), 'UTF8'), 'hex')) > 0"
            );
            conn.query_row(&sql, [needle], |r| r.get::<_, i64>(0)).unwrap() > 0
        })
        .collect()
}

fn export_of(conn: &store::Connection) -> String {
    let mut out = Vec::new();
    transfer::export(conn, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn hard_delete_and_purge_leave_no_byte_of_the_text_and_keep_the_facts() {
    let db = temp_db();
    let mut conn = backend::open(&db).unwrap();
    // Unrelated memories, so that the file has other pages and index segments too.
    for i in 0..40 {
        put(&mut conn, NewMemory::new(Tier::Semantic, format!("ordinary fact number {i} about the build cache")));
    }

    // remember: content, tags, source; in a session, between two memories that keep its text
    // as their recall context until it is erased.
    let chat = |text: &str, minute: i64| {
        let mut m = NewMemory::new(Tier::Semantic, text);
        m.session_id = Some("erasure-chat".into());
        m.created_at = Some(time::add_days(now(), -1.0) + chrono::Duration::minutes(minute));
        m
    };
    put(&mut conn, chat("the support call started at nine", 0));
    let mut m = chat(&format!("the customer {MARK}remember lives in Lyon"), 1);
    m.tags = vec![format!("{MARK}tag")];
    m.source = Some(format!("chat:{MARK}source"));
    let remembered = put(&mut conn, m);
    put(&mut conn, chat("the support call ended with a refund", 2));

    // edit: the text before and after the edit both carry markers.
    let edited = put(&mut conn, NewMemory::new(Tier::Episodic, format!("first draft {MARK}draft of the plan")));
    lifecycle::edit(&mut conn, &edited, &format!("edited plan {MARK}edited with details"), "user", now()).unwrap();

    // import: content and procedural fields of a line.
    let line = serde_json::json!({
        "id": "mem_00000000-0000-4000-8000-00000000abcd", "type": "procedural",
        "content": format!("imported runbook {MARK}imported"), "importance": 0.5, "privacy_scope": "private",
        "created_at": "2026-05-01T00:00:00.000Z", "last_accessed": null, "pinned": false,
        "tags": [format!("{MARK}importtag")], "source": null, "view_count": 0, "cite_count": 0, "edit_count": 0,
        "task_goal": format!("{MARK}importgoal"), "steps": [format!("{MARK}importstep")], "reflection_notes": null,
        "workflow_name": null, "skill_name": null, "trigger_conditions": null, "version": 1,
        "owner_id": null, "session_id": null, "project_id": null, "is_deleted": false, "deleted_at": null
    });
    transfer::import(&mut conn, std::io::Cursor::new(format!("{line}\n")), &transfer::ImportOptions::new(now()))
        .unwrap();
    let imported = "mem_00000000-0000-4000-8000-00000000abcd".to_string();

    // archive: the original goes to lethe_archive, the memo into the content.
    let mut obs = NewMemory::new(Tier::Episodic, format!("grep output {MARK}observed 120 lines of logs"));
    obs.source = Some("tool:grep".into());
    let archived = put(&mut conn, obs);
    archive::archive(&mut conn, &archived, &format!("grep run {MARK}memo"), "user", now()).unwrap();

    // procedure: fields, a version snapshot (CAS update) and a reflection note.
    // The procedure has a session neighbour too: its text leaves the neighbour's context when
    // it goes to quarantine, and the purge erases it.
    let mut before = NewMemory::new(Tier::Episodic, "the release train leaves on thursdays");
    before.session_id = Some("erasure-release".into());
    before.created_at = Some(time::add_days(now(), -1.0));
    put(&mut conn, before);
    let mut p = NewMemory::new(Tier::Procedural, format!("deploy procedure {MARK}procedure"));
    p.session_id = Some("erasure-release".into());
    p.procedure = ProcedureFields {
        task_goal: Some(format!("ship {MARK}goal")),
        steps: Some(serde_json::json!([format!("run {MARK}step one"), "verify"])),
        trigger_conditions: Some(serde_json::json!({ "when": format!("{MARK}trigger") })),
        workflow_name: Some(format!("{MARK}workflow")),
        skill_name: None,
    };
    let procedure = put(&mut conn, p);
    procedural::update(
        &mut conn,
        &procedure,
        1,
        &ProcedurePatch { content: Some(format!("deploy procedure v2 {MARK}version")), ..Default::default() },
        "user",
        now(),
    )
    .unwrap();
    procedural::reflect(
        &mut conn,
        &procedure,
        &serde_json::json!({ "failure_type": "tool_error", "failure_description": format!("it broke {MARK}note"),
                             "lessons_learned": format!("{MARK}lesson") }),
        None,
        "agent:test",
        now(),
    )
    .unwrap();

    // recall: an agent's queries that found the memories name what they are about, and the
    // context says where it worked; both are in the recall log.
    let logged = |conn: &mut store::Connection, text: String, want: &str| {
        let q = RecallQuery {
            text,
            limit: 5,
            project: Some(format!("{MARK}project")),
            tags: vec![format!("{MARK}ctxtag")],
            ..Default::default()
        };
        let hits = recall::recall(conn, &q, now()).unwrap();
        assert!(hits.iter().any(|h| h.id == want), "the recall finds {want}: {hits:?}");
        recall_log::append(conn, &[recall_log::NewEntry::of("agent:seeker", "2026-06-01T12:00:00.000Z", &q, &hits)])
            .unwrap();
    };
    logged(&mut conn, format!("customer Lyon {MARK}askedabout"), &remembered);
    logged(&mut conn, format!("deploy procedure {MARK}purgequery"), &procedure);

    // A secret given to remember is never written, not even before any delete.
    let with_secret = put(&mut conn, NewMemory::new(Tier::Semantic, format!("ci token {SECRET} for the bot")));

    // Sanity: the markers are in the files now (so the final check can fail).
    store::checkpoint_truncate(&conn).unwrap();
    assert!(!files_holding(&conn, &db, MARK).is_empty(), "the test sees the marker while the memories exist");
    assert!(export_of(&conn).contains(MARK), "and in an export");
    if !conn.is_postgres() {
        let in_context: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM lethe_fts WHERE lethe_fts MATCH ?1",
                [format!("context : \"{MARK}remember\"")],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(in_context, 2, "both session neighbours hold the text as their recall context");
    }
    assert!(files_holding(&conn, &db, SECRET).is_empty(), "the secret was redacted before anything was written");
    assert!(!export_of(&conn).contains(SECRET));

    // A person deletes four for ever; the fifth goes through quarantine and the policy purge.
    for id in [&remembered, &edited, &imported, &archived] {
        lifecycle::hard_delete(&mut conn, id, true, Some("customer asked"), "user", now()).unwrap();
    }
    lifecycle::soft_delete(&mut conn, &procedure, Some("obsolete"), "user", now()).unwrap();
    let later = time::parse("2026-08-01T12:00:00.000Z").unwrap();
    let report = forgetting::run_batch(&mut conn, &BatchOptions::new(later, false)).unwrap();
    assert!(report.purged.contains(&procedure), "the quarantine expired: {report:?}");
    lifecycle::hard_delete(&mut conn, &with_secret, true, None, "user", now()).unwrap();

    // The raw bytes: database, WAL and shared memory, with the connection still open.
    let left = files_holding(&conn, &db, MARK);
    assert!(left.is_empty(), "no byte of the erased text is left, found {MARK} in {left:?}");
    assert!(!export_of(&conn).contains(MARK), "nor in an export");
    assert!(files_holding(&conn, &db, "ghp_").is_empty());

    // The audit still tells who deleted what and when, with the content's hash and length.
    for (id, actor, policy) in [
        (&remembered, "user", "manual"),
        (&edited, "user", "manual"),
        (&imported, "user", "manual"),
        (&archived, "user", "manual"),
        (&procedure, "policy", "quarantine-expired"),
    ] {
        let ev = audit::list_events(&conn, &audit::EventFilter { memory_id: Some(id.clone()), ..Default::default() })
            .unwrap();
        let hard = ev.iter().find(|e| e.action == "hard").unwrap_or_else(|| panic!("a hard event for {id}"));
        assert_eq!(hard.actor, actor);
        assert_eq!(hard.policy.as_deref(), Some(policy));
        assert!(!hard.created_at.is_empty());
        let meta = hard.metadata.as_ref().unwrap();
        assert_eq!(meta["content_sha256"].as_str().unwrap().len(), 64, "{meta}");
        assert!(meta["content_bytes"].as_u64().unwrap() > 0);
        // Earlier rows stay (who did what when) without their text; an import writes none.
        let earlier = if id == &imported { 1 } else { 2 };
        assert!(ev.len() >= earlier, "earlier audit rows of {id} are kept: {ev:?}");
        for e in &ev {
            let text = serde_json::to_string(e).unwrap();
            assert!(!text.contains(MARK), "audit row without text: {text}");
        }
    }
    let ev =
        audit::list_events(&conn, &audit::EventFilter { memory_id: Some(remembered.clone()), ..Default::default() })
            .unwrap();
    // The recall log keeps who recalled when, without the query or context that found them.
    let log = recall_log::list(&conn, &recall_log::LogFilter::default()).unwrap();
    assert_eq!(log.len(), 2, "{log:?}");
    for e in &log {
        assert!(e.query_erased && e.query.is_empty(), "{e:?}");
        assert_eq!(e.actor, "agent:seeker");
        assert_eq!(e.at, "2026-06-01T12:00:00.000Z");
        assert_eq!(e.context, recall_log::RecallContext::default());
        assert!(e.results.iter().all(|h| h.id != remembered && h.id != procedure), "{e:?}");
    }
    let hard = ev.iter().find(|e| e.action == "hard").unwrap();
    let content = format!("the customer {MARK}remember lives in Lyon");
    assert_eq!(hard.metadata.as_ref().unwrap()["content_sha256"], audit::sha256_hex(&content));
    assert_eq!(hard.reason.as_deref(), Some("customer asked"), "why stays");
    assert!(ev.iter().any(|e| e.action == "remember" && e.actor == "user"), "who remembered it stays");
}

#[test]
fn soft_delete_and_restore_stay_byte_identical_with_secure_delete_on() {
    let tmp = temp_db();
    let mut conn = backend::open(&tmp).unwrap();
    let id = put(&mut conn, NewMemory::new(Tier::Semantic, "Auth uses Ed25519 keys"));
    let before = lifecycle::get(&conn, &id).unwrap();
    lifecycle::soft_delete(&mut conn, &id, None, "user", now()).unwrap();
    lifecycle::restore(&mut conn, &id, "user", now()).unwrap();
    assert_eq!(lifecycle::get(&conn, &id).unwrap(), before);
    if let Some(sqlite) = conn.sqlite() {
        let on: i64 = sqlite.query_row("PRAGMA secure_delete", [], |r| r.get(0)).unwrap();
        assert_eq!(on, 1, "every connection zeroes freed space");
    }
}

#[test]
fn scan_lists_and_redacts_in_place_erasing_the_old_text() {
    let db = temp_db();
    let mut conn = backend::open(&db).unwrap();
    // A memento-written row holds a secret (written behind Lethe's back).
    conn.execute(
        "INSERT INTO memory_item (id, type, content, created_at, tags) VALUES \
         ('mem_00000000-0000-4000-8000-0000000000aa', 'semantic', ?1, '2026-05-01T00:00:00.000Z', '[]')",
        [format!("db login postgres://app:{MARK}Pw9x@db.local/app and mail ana@example.org")],
    )
    .unwrap();
    put(&mut conn, NewMemory::new(Tier::Semantic, "nothing to see here"));
    let items = lethe_engine::scan::scan(&conn).unwrap();
    assert_eq!(items.len(), 1, "{items:?}");
    let kinds: Vec<&str> = items[0].kinds.iter().map(|k| k.as_str()).collect();
    assert_eq!(kinds, vec!["url_password", "email"]);

    let err = lethe_engine::scan::redact_in_place(&mut conn, false, "user", now()).unwrap_err();
    assert_eq!(err.code(), "confirmation_required");
    let r = lethe_engine::scan::redact_in_place(&mut conn, true, "user", now()).unwrap();
    assert_eq!(r.redacted, 1);
    let m = lifecycle::get(&conn, "mem_00000000-0000-4000-8000-0000000000aa").unwrap();
    assert_eq!(m.content, "db login postgres://app:[REDACTED:url_password]@db.local/app and mail ana@example.org");
    assert_eq!(m.tags, vec!["pii:email".to_string()], "pii=tag keeps the address and tags it");
    assert!(files_holding(&conn, &db, MARK).is_empty(), "the old text is erased from the file");
    let ev =
        audit::list_events(&conn, &audit::EventFilter { memory_id: Some(m.id.clone()), ..Default::default() }).unwrap();
    let edit = ev.iter().find(|e| e.action == "edit").expect("audited as an edit");
    assert_eq!(edit.after.as_ref().unwrap()["redacted_kinds"], serde_json::json!(["url_password"]));
    // Nothing left to redact: the listing now shows only the personal data that stays tagged.
    let again = lethe_engine::scan::scan(&conn).unwrap();
    assert_eq!(again[0].kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>(), vec!["email"]);
}

/// Bad input to the recall log: a 1 MB query is answered and logged cut to a few KB (saying
/// so), a secret in a query or its context is logged redacted (even where the secrets setting
/// refuses: the recall was answered), a context keeps at most 64 tags, and the whole log
/// stays within its byte bound.
#[test]
fn the_recall_log_is_guarded_and_bounded() {
    let db = temp_db();
    let mut conn = backend::open(&db).unwrap();
    let id = put(&mut conn, NewMemory::new(Tier::Semantic, "the billing service retries webhooks three times"));
    let s = lethe_engine::Settings { secrets: lethe_engine::redact::SecretsMode::Refuse, ..Default::default() };
    lethe_engine::Settings::store(&mut conn, &s, "user", now()).unwrap();

    let huge = format!("billing webhooks {}", "retry ".repeat(1 << 20).trim_end());
    assert!(huge.len() > 1 << 20);
    let q = RecallQuery { text: huge.clone(), limit: 5, ..Default::default() };
    let hits = recall::recall(&conn, &q, now()).unwrap();
    assert_eq!(hits.first().map(|h| h.id.as_str()), Some(id.as_str()), "a 1 MB query is answered");
    let secret_q = RecallQuery {
        text: format!("billing token {SECRET}"),
        limit: 5,
        project: Some(format!("proj {SECRET}")),
        tags: (0..100).map(|i| format!("tag{i}")).chain([SECRET.to_string()]).collect(),
        ..Default::default()
    };
    let secret_hits = recall::recall(&conn, &secret_q, now()).unwrap();
    recall_log::append(
        &mut conn,
        &[
            recall_log::NewEntry::of("agent:a", "2026-06-01T12:00:00.000Z", &q, &hits),
            recall_log::NewEntry::of("agent:a", "2026-06-01T12:00:01.000Z", &secret_q, &secret_hits),
        ],
    )
    .unwrap();
    let log = recall_log::list(&conn, &recall_log::LogFilter::default()).unwrap();
    let (secret, cut) = (&log[0], &log[1]);
    assert!(cut.query.len() <= recall_log::MAX_QUERY_BYTES, "{}", cut.query.len());
    assert!(cut.query.starts_with("billing webhooks retry"));
    assert!(
        cut.query.ends_with(&format!("[truncated from {} bytes]", huge.len())),
        "{}",
        &cut.query[cut.query.len() - 60..]
    );
    assert!(!secret.query.contains(SECRET) && secret.query.contains("[REDACTED:"), "{}", secret.query);
    assert!(secret.context.project.as_deref().is_some_and(|p| p.contains("[REDACTED:")));
    assert_eq!(secret.context.tags.len(), recall_log::MAX_TAGS, "at most 64 tags");
    assert!(files_holding(&conn, &db, "ghp_").is_empty(), "the secret is in no byte of the store");

    // Bounded in bytes: entries with large results (1,000 ids each) past the bound push the
    // oldest out even though the row bound (10,000) is far away.
    let many: Vec<recall_log::LoggedHit> =
        (0..1000).map(|i| recall_log::LoggedHit { id: format!("mem_{i:032}"), score: 0.5 }).collect();
    let big = recall_log::NewEntry {
        actor: "agent:b".into(),
        at: "2026-06-01T12:00:02.000Z".into(),
        query: "x".repeat(recall_log::MAX_QUERY_BYTES),
        context: Default::default(),
        results: many,
    };
    for _ in 0..20 {
        recall_log::append(&mut conn, &vec![big.clone(); 10]).unwrap();
    }
    let bytes: i64 = conn
        .query_row(
            "SELECT SUM(octet_length(query) + octet_length(context_json) + octet_length(results_json)) FROM lethe_recall_log",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let rows: i64 = conn.query_row("SELECT COUNT(*) FROM lethe_recall_log", [], |r| r.get(0)).unwrap();
    assert!(bytes <= recall_log::MAX_LOG_BYTES, "{bytes} bytes in {rows} rows");
    assert!(rows < 200, "the oldest went: {rows} rows kept");
    assert!(rows > 50, "and not more than needed: {rows}");
}
