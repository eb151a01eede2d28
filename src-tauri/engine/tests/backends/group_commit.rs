//! Group commit: `remember` calls written in one transaction answer exactly as
//! the same calls one after the other, each with its own result, error and audit row; the
//! queue of a long-running writer groups only calls that were waiting for the connection.
//! On SQLite files, or with `LETHE_TEST_POSTGRES` on a PostgreSQL test server.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::temp_db;
use lethe_engine::audit::{self, EventFilter};
use lethe_engine::group_commit::{GroupCounts, RememberQueue};
use lethe_engine::lifecycle::{self, NewMemory, RememberCall, RememberOutcome};
use lethe_engine::store::Connection;
use lethe_engine::{Result, Tier};
use lethe_testkit::backend;

/// A fresh SQLite store and a second connection holding its write lock (`None` on the
/// PostgreSQL test server, which has no file lock).
fn write_locked_by_another() -> Option<(Connection, Connection)> {
    if backend::is_postgres() {
        return None;
    }
    let db = temp_db();
    let conn = backend::open(&db).unwrap();
    let other = backend::open(&db).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    Some((conn, other))
}

fn audited(conn: &Connection, action: &str) -> Vec<(Option<String>, String)> {
    let f = EventFilter { action: Some(action.into()), limit: 10_000, ..Default::default() };
    audit::list_events(conn, &f).unwrap().into_iter().map(|e| (e.memory_id, e.actor)).collect()
}

/// An answer with the ids replaced by the position of the call that wrote them, so that two
/// runs (with their own random ids) compare.
fn shape(answer: &Result<RememberOutcome>, ids: &[Option<String>]) -> String {
    let pos = |id: &str| ids.iter().position(|i| i.as_deref() == Some(id)).map_or("?".into(), |p| format!("#{p}"));
    match answer {
        Ok(RememberOutcome::Stored { id, similar, redacted, pii_tags, .. }) => {
            let sim: Vec<String> =
                similar.iter().map(|s| format!("{}:{}:{:?}", pos(&s.id), s.similarity, s.kind)).collect();
            format!("stored {} similar {sim:?} redacted {} pii {pii_tags:?}", pos(id), redacted.len())
        }
        Ok(RememberOutcome::Skipped { reason, existing_id, .. }) => {
            format!("skipped ({reason}) existing {:?}", existing_id.as_deref().map(pos))
        }
        Err(e) => format!("error {}", e.code()),
    }
}

fn ids_of(answers: &[Result<RememberOutcome>]) -> Vec<Option<String>> {
    answers.iter().map(|a| a.as_ref().ok().and_then(|o| o.id()).map(str::to_string)).collect()
}

#[test]
fn a_group_answers_each_call_as_the_same_calls_one_after_the_other() {
    let now = chrono::Utc::now();
    let mut supersedes_missing = NewMemory::new(Tier::Semantic, "The nightly export moved to 03:00 UTC");
    supersedes_missing.supersedes = vec!["mem_does_not_exist".into()];
    let mut pinned = NewMemory::new(Tier::Semantic, "Deploys to production need two approvals from the platform team");
    pinned.pinned = true;
    let memories: Vec<(NewMemory, &str)> = vec![
        (
            NewMemory::new(Tier::Semantic, "The staging database lives on host db-stage-3 in the eu-west zone"),
            "agent:a",
        ),
        // An exact duplicate of the first call of the same group.
        (
            NewMemory::new(Tier::Semantic, "The staging database lives on host db-stage-3 in the eu-west zone"),
            "agent:b",
        ),
        // Names a memory that does not exist: an error, and nothing of it is written.
        (supersedes_missing, "agent:a"),
        // An actor that is not one.
        (NewMemory::new(Tier::Semantic, "Lint runs before every push"), ""),
        // Trivial.
        (NewMemory::new(Tier::Episodic, "ok"), "agent:a"),
        // A near copy of the first: its `similar` names it.
        (NewMemory::new(Tier::Semantic, "The staging database lives on the host db-stage-3 in eu-west"), "agent:c"),
        // The same words in another tier are stored.
        (
            NewMemory::new(Tier::Episodic, "The staging database lives on host db-stage-3 in the eu-west zone"),
            "agent:a",
        ),
        (pinned, "user:lead"),
        // A secret, redacted as on its own.
        (
            NewMemory::new(Tier::Semantic, "CI uses the token ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5 for releases"),
            "agent:b",
        ),
    ];
    let calls: Vec<RememberCall> = memories.iter().map(|(m, actor)| RememberCall { memory: m, actor, now }).collect();

    let grouped_db = temp_db();
    let mut grouped = backend::open(&grouped_db).unwrap();
    let together = lifecycle::remember_many(&mut grouped, &calls);
    let one_db = temp_db();
    let mut one = backend::open(&one_db).unwrap();
    let apart: Vec<_> = calls.iter().map(|c| lifecycle::remember(&mut one, c.memory, c.actor, c.now)).collect();

    assert_eq!(together.len(), calls.len(), "one answer per call");
    let (ids_t, ids_a) = (ids_of(&together), ids_of(&apart));
    let shapes_t: Vec<String> = together.iter().map(|a| shape(a, &ids_t)).collect();
    let shapes_a: Vec<String> = apart.iter().map(|a| shape(a, &ids_a)).collect();
    assert_eq!(shapes_t, shapes_a, "grouped answers equal one-by-one answers");

    println!("{shapes_t:#?}");
    // What the answers say, spelled out.
    assert!(shapes_t[0].starts_with("stored #0"), "{}", shapes_t[0]);
    assert!(shapes_t[1].contains("duplicate") && shapes_t[1].ends_with("existing Some(\"#0\")"), "{}", shapes_t[1]);
    assert_eq!(shapes_t[2], "error not_found");
    assert_eq!(shapes_t[3], "error invalid_input");
    assert!(shapes_t[4].starts_with("skipped (trivial"), "{}", shapes_t[4]);
    assert!(shapes_t[5].starts_with("stored #5 similar [\"#0:"), "the near copy names the first: {}", shapes_t[5]);
    assert!(shapes_t[6].starts_with("stored #6"), "{}", shapes_t[6]);
    assert!(shapes_t[7].starts_with("stored #7"), "{}", shapes_t[7]);
    assert!(shapes_t[8].contains("redacted 1"), "{}", shapes_t[8]);

    // Each stored call has its own audit row, with its own actor; nothing else was written.
    let stored: Vec<(String, &str)> =
        ids_t.iter().zip(&memories).filter_map(|(id, (_, actor))| id.as_ref().map(|id| (id.clone(), *actor))).collect();
    let mut rows = audited(&grouped, "remember");
    rows.sort();
    let mut expected: Vec<(Option<String>, String)> =
        stored.iter().map(|(id, actor)| (Some(id.clone()), actor.to_string())).collect();
    expected.sort();
    assert_eq!(rows, expected);
    let count: i64 = grouped.query_row("SELECT COUNT(*) FROM memory_item", [], |r| r.get(0)).unwrap();
    assert_eq!(count, stored.len() as i64);
    let moved: i64 = grouped
        .query_row("SELECT COUNT(*) FROM memory_item WHERE content LIKE '%nightly export%'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(moved, 0, "the failed call left nothing");
    let pinned: i64 = grouped.query_row("SELECT COUNT(*) FROM memory_item WHERE pinned = 1", [], |r| r.get(0)).unwrap();
    assert_eq!(pinned, 1);
    // Recall finds what the group wrote.
    let hits = lethe_engine::recall::recall(
        &grouped,
        &lethe_engine::recall::RecallQuery { text: "staging database host".into(), limit: 10, ..Default::default() },
        now,
    )
    .unwrap();
    assert!(hits.iter().any(|h| Some(&h.id) == ids_t[0].as_ref()), "recall finds the group's rows");
}

#[test]
fn the_queue_writes_the_waiting_calls_in_one_transaction() {
    let db = temp_db();
    let conn = Arc::new(Mutex::new(backend::open(&db).unwrap()));
    let queue = Arc::new(RememberQueue::new());
    let now = chrono::Utc::now();
    // A lone call is written at once, alone.
    let first =
        queue.remember(&conn, NewMemory::new(Tier::Semantic, "Release notes live in docs/releases"), "agent:a", now);
    assert!(matches!(first, Ok(RememberOutcome::Stored { .. })), "{first:?}");
    assert_eq!(queue.counts(), GroupCounts { groups: 1, calls: 1, largest: 1 });

    // Four calls arrive while the connection is busy: the first to get it writes all four.
    let held = conn.lock().unwrap();
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let (conn, queue) = (Arc::clone(&conn), Arc::clone(&queue));
            std::thread::spawn(move || {
                let m = NewMemory::new(Tier::Episodic, format!("Incident {i}: the cache node {i} restarted at night"));
                queue.remember(&conn, m, &format!("agent:w{i}"), now)
            })
        })
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while queue.waiting() < 4 {
        assert!(std::time::Instant::now() < deadline, "the four calls never queued");
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(held);
    let answers: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(queue.counts(), GroupCounts { groups: 2, calls: 5, largest: 4 });
    let mut ids: Vec<String> = answers.iter().map(|a| a.as_ref().unwrap().id().unwrap().to_string()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "four memories, four ids");
    let c = conn.lock().unwrap();
    let rows = audited(&c, "remember");
    for (i, id) in ids.iter().enumerate() {
        let row = rows.iter().find(|(m, _)| m.as_deref() == Some(id.as_str())).expect("an audit row per call");
        assert!(row.1.starts_with("agent:w"), "call {i} audited with its own actor: {row:?}");
    }
}

#[test]
fn many_writers_through_one_queue_lose_nothing() {
    let db = temp_db();
    let conn = Arc::new(Mutex::new(backend::open(&db).unwrap()));
    let queue = Arc::new(RememberQueue::new());
    let now = chrono::Utc::now();
    let (writers, each) = (6, 40);
    let threads: Vec<_> = (0..writers)
        .map(|w| {
            let (conn, queue) = (Arc::clone(&conn), Arc::clone(&queue));
            std::thread::spawn(move || {
                (0..each)
                    .map(|i| {
                        // Every writer also writes one text all the others write: one is stored.
                        let text = match i {
                            0 => "Shared rule: every migration needs a rollback script".to_string(),
                            _ => {
                                format!("writer {w} note {i}: build {} took {} seconds on runner {}", i * 7, 30 + i, w)
                            }
                        };
                        queue.remember(&conn, NewMemory::new(Tier::Semantic, text), &format!("agent:w{w}"), now)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let answers: Vec<_> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    assert_eq!(answers.len(), writers * each);
    let stored = answers.iter().filter(|a| matches!(a, Ok(RememberOutcome::Stored { .. }))).count();
    let dup = answers.iter().filter(|a| matches!(a, Ok(RememberOutcome::Skipped { .. }))).count();
    assert_eq!((stored, dup), (writers * (each - 1) + 1, writers - 1), "{:?}", answers.iter().find(|a| a.is_err()));
    let counts = queue.counts();
    assert_eq!(counts.calls, (writers * each) as u64);
    println!("{} calls in {} transactions, the largest {}", counts.calls, counts.groups, counts.largest);
    let c = conn.lock().unwrap();
    let n: i64 = c.query_row("SELECT COUNT(*) FROM memory_item", [], |r| r.get(0)).unwrap();
    assert_eq!(n as usize, stored);
    assert_eq!(audited(&c, "remember").len(), stored);
}

#[test]
fn a_group_waits_out_another_program_holding_the_write_lock() {
    // SQLite's file lock; PostgreSQL has none to hold.
    let Some((mut conn, other)) = write_locked_by_another() else { return };
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        other.execute_batch("COMMIT").unwrap();
    });
    let now = chrono::Utc::now();
    let a = NewMemory::new(Tier::Semantic, "Backups are encrypted with the ops team's age key");
    let b = NewMemory::new(Tier::Semantic, "The on-call rotation changes every Monday at 09:00");
    let answers = lifecycle::remember_many(
        &mut conn,
        &[RememberCall { memory: &a, actor: "agent:a", now }, RememberCall { memory: &b, actor: "agent:b", now }],
    );
    releaser.join().unwrap();
    assert!(answers.iter().all(|a| matches!(a, Ok(RememberOutcome::Stored { .. }))), "{answers:?}");
    assert_eq!(audited(&conn, "remember").len(), 2);
}

#[test]
fn calls_with_nothing_to_write_answer_without_the_write_lock() {
    // SQLite's file lock; PostgreSQL has none to hold.
    let Some((mut conn, other)) = write_locked_by_another() else { return };
    let now = chrono::Utc::now();
    let bad = NewMemory::new(Tier::Semantic, "Lint runs before every push");
    let trivial = NewMemory::new(Tier::Episodic, "thanks");
    let started = std::time::Instant::now();
    let alone = lifecycle::remember(&mut conn, &bad, "", now);
    assert_eq!(alone.map_err(|e| e.code()).err(), Some("invalid_input"));
    let answers = lifecycle::remember_many(
        &mut conn,
        &[RememberCall { memory: &bad, actor: "", now }, RememberCall { memory: &trivial, actor: "agent:a", now }],
    );
    assert!(started.elapsed() < Duration::from_secs(1), "no call waited for the lock: {:?}", started.elapsed());
    assert_eq!(answers[0].as_ref().map_err(|e| e.code()).err(), Some("invalid_input"));
    assert!(matches!(answers[1], Ok(RememberOutcome::Skipped { .. })), "{:?}", answers[1]);
    other.execute_batch("ROLLBACK").unwrap();
}
