//! Issue #21, the seeds' remaining pieces: batch archive and partial restore (seed 004),
//! end of a session into task logs and rules (seed 001), and the reads-like-dialogue lint.

use lethe_engine::archive::{self, Span};
use lethe_engine::lifecycle::{self, NewMemory, RememberOutcome};
use lethe_engine::{store, time, Tier};
use sha2::{Digest, Sha256};

fn temp_db() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lethe-seeds-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("t.db")
}

fn now() -> time::Instant {
    time::parse("2026-06-01T12:00:00.000Z").unwrap()
}

fn put(conn: &mut store::Connection, m: NewMemory) -> String {
    match lifecycle::remember(conn, &m, "user", now()).unwrap() {
        RememberOutcome::Stored { id, .. } => id,
        other => panic!("not stored: {other:?}"),
    }
}

fn observation(conn: &mut store::Connection, content: &str) -> String {
    let mut m = NewMemory::new(Tier::Episodic, content);
    m.source = Some("tool:bash".into());
    put(conn, m)
}

fn count(conn: &store::Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

fn sha_hex(b: &[u8]) -> String {
    Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

/// What the rows of the tables a batch archive writes look like (counts and contents).
fn archive_state(conn: &store::Connection) -> (i64, i64, String) {
    let archives = count(conn, "SELECT COUNT(*) FROM lethe_archive");
    let actions = count(conn, "SELECT COUNT(*) FROM lethe_action");
    let contents: String = conn
        .query_row("SELECT group_concat(content, '|') FROM (SELECT content FROM memory_item ORDER BY id)", [], |r| {
            r.get(0)
        })
        .unwrap();
    (archives, actions, contents)
}

#[test]
fn batch_archive_of_100_is_all_or_nothing() {
    let path = temp_db();
    let mut conn = store::open(&path).unwrap();
    let ids: Vec<String> =
        (0..100).map(|i| observation(&mut conn, &format!("output of run {i}\nline two of {i}\n"))).collect();
    let before = archive_state(&conn);
    store::checkpoint_truncate(&conn).unwrap();
    let wal = path.with_extension("db-wal");
    let files = || (std::fs::read(&path).unwrap(), std::fs::read(&wal).unwrap_or_default());
    let file_before = files();
    // The 100th names a memory that does not exist: nothing of the 99 before it is written.
    let mut items: Vec<(String, String)> = ids.iter().map(|id| (id.clone(), format!("memo of {id}"))).collect();
    items[99].0 = "mem_does_not_exist".into();
    let err = archive::archive_batch(&mut conn, &items, "agent:x", now()).unwrap_err();
    assert_eq!(err.code(), "not_found", "{err}");
    assert_eq!(archive_state(&conn), before, "a failure in the 100th writes nothing");
    assert!(files() == file_before, "the database file and its WAL are unchanged");
    // A protected text as the 100th fails the same way.
    let user = put(&mut conn, NewMemory::new(Tier::Semantic, "the user said: always ask before deploying"));
    items[99].0 = user;
    assert_eq!(archive::archive_batch(&mut conn, &items, "agent:x", now()).unwrap_err().code(), "invalid_input");
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM lethe_archive"), 0);
    // All valid: one call, 100 memos in place, each restorable byte for byte.
    items[99].0 = ids[99].clone();
    let receipts = archive::archive_batch(&mut conn, &items, "agent:x", now()).unwrap();
    assert_eq!(receipts.len(), 100);
    for (r, id) in receipts.iter().zip(&ids) {
        assert_eq!(&r.memory_id, id, "receipts in the order given");
        let m = lifecycle::get(&conn, id).unwrap();
        assert_eq!(m.content, format!("[Archive#{}: memo of {id}]", r.archive_no), "memo in place");
    }
    let back = archive::unarchive(&mut conn, receipts[42].archive_no, "user", now()).unwrap();
    assert_eq!(back.content, "output of run 42\nline two of 42\n", "full restore stays byte-exact");
}

#[test]
fn batch_archive_in_one_transaction_counts_one_write() {
    let mut conn = store::open(temp_db()).unwrap();
    let ids: Vec<String> = (0..100).map(|i| observation(&mut conn, &format!("payload {i}"))).collect();
    let items: Vec<(String, String)> = ids.iter().map(|id| (id.clone(), "done".to_string())).collect();
    let version_before = count(&conn, "SELECT COUNT(*) FROM lethe_action");
    archive::archive_batch(&mut conn, &items, "agent:x", now()).unwrap();
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM lethe_action") - version_before, 100, "one audit row each");
    // The same id twice fails (the second sees the first's archive in the same transaction).
    let again = vec![(ids[0].clone(), "x".to_string())];
    assert_eq!(archive::archive_batch(&mut conn, &again, "agent:x", now()).unwrap_err().code(), "invalid_input");
}

#[test]
fn partial_restore_returns_exactly_the_span_and_restores_nothing() {
    let mut conn = store::open(temp_db()).unwrap();
    let original = "line one\nzwei – ünïcode\nthree\nfour without newline";
    let id = observation(&mut conn, original);
    let r = archive::archive(&mut conn, &id, "four lines", "agent:x", now()).unwrap();
    let memo = lifecycle::get(&conn, &id).unwrap().content;
    let lines: Vec<&str> = original.split_inclusive('\n').collect();
    for (a, b) in [(1, 1), (2, 3), (1, 4), (4, 4)] {
        let s = archive::read_span(&conn, r.archive_no, Span::Lines(a, b)).unwrap();
        let want: String = lines[a - 1..b].concat();
        assert_eq!(s.text, want, "lines {a}:{b}");
        assert_eq!(&original.as_bytes()[s.start..s.end], want.as_bytes());
        assert_eq!(s.sha256, sha_hex(want.as_bytes()), "the span's hash is the hash of the slice of the original");
    }
    let s = archive::read_span(&conn, r.archive_no, Span::Bytes(5, 20)).unwrap();
    assert_eq!(s.text.as_bytes(), &original.as_bytes()[5..20]);
    assert_eq!(s.sha256, sha_hex(&original.as_bytes()[5..20]));
    assert_eq!(lifecycle::get(&conn, &id).unwrap().content, memo, "the memory keeps its memo");
    assert!(archive::is_archived(&conn, &id).unwrap());
    for bad in [Span::Lines(0, 1), Span::Lines(2, 1), Span::Lines(1, 5), Span::Bytes(3, 2), Span::Bytes(0, 999)] {
        assert_eq!(archive::read_span(&conn, r.archive_no, bad).unwrap_err().code(), "invalid_input", "{bad:?}");
    }
    // A byte span splitting 'ü' (two bytes) is refused rather than returning other bytes.
    let u = original.find('ü').unwrap();
    assert_eq!(archive::read_span(&conn, r.archive_no, Span::Bytes(u, u + 1)).unwrap_err().code(), "invalid_input");
    assert_eq!(archive::read_span(&conn, 999, Span::Lines(1, 1)).unwrap_err().code(), "not_found");
    assert_eq!(Span::parse("lines", "2:3").unwrap(), Span::Lines(2, 3));
    assert_eq!(Span::parse("bytes", "x").unwrap_err().code(), "invalid_input");
    let back = archive::unarchive(&mut conn, r.archive_no, "user", now()).unwrap();
    assert_eq!(back.content, original, "full restore stays byte-exact");
}
