//! The write path: checkpoints off the writer, and the per-step timing of
//! `remember` that lethe-bench prints.

use std::time::{Duration, Instant};

use crate::support::named_temp_db;
use lethe_engine::lifecycle::{self, NewMemory, Step, StepTimes};
use lethe_engine::{store, Tier};

fn size(p: &std::path::Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

#[test]
fn checkpoints_run_on_their_own_thread_and_the_writer_keeps_a_bounded_fallback() {
    let db = named_temp_db("memory.db");
    let mut conn = store::open(&db).unwrap();
    store::checkpoint_off_the_writer(&conn).unwrap();
    let fallback: i64 = conn.query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0)).unwrap();
    assert_eq!(fallback, store::WRITER_FALLBACK_PAGES, "the writer keeps an automatic checkpoint, far out");
    let before = size(&db);
    let now = chrono::Utc::now();
    // Far fewer pages than the writer's fallback: only the thread can have copied them into
    // the database file.
    for i in 0..(store::CHECKPOINT_EVERY_COMMITS as usize * 4) {
        let m = NewMemory::new(Tier::Semantic, format!("fact number {i} about the staging cluster in zone {}", i * 7));
        lifecycle::remember(&mut conn, &m, "agent:test", now).unwrap();
    }
    let wal_pages = size(&std::path::PathBuf::from(format!("{}-wal", db.display()))) / 4096;
    assert!((wal_pages as i64) < store::WRITER_FALLBACK_PAGES, "{wal_pages} pages: the fallback never fired");
    let deadline = Instant::now() + Duration::from_secs(10);
    while size(&db) <= before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(size(&db) > before, "the checkpoint thread copied the WAL into the file ({} → {})", before, size(&db));
    // The file is whole, read by another connection.
    let other = store::open(&db).unwrap();
    let n: i64 = other.query_row("SELECT COUNT(*) FROM memory_item", [], |r| r.get(0)).unwrap();
    assert_eq!(n, store::CHECKPOINT_EVERY_COMMITS as i64 * 4);
    let ok: String = other.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    drop(conn);
    drop(other);
    let _ = std::fs::remove_dir_all(db.parent().unwrap());
}

#[test]
fn a_timed_remember_stores_what_remember_stores_and_times_every_step_it_ran() {
    let mut conn = store::open_in_memory().unwrap();
    let now = chrono::Utc::now();
    let mut times = StepTimes::default();
    let m = NewMemory::new(Tier::Episodic, "the nightly backup of the billing database failed at 02:10");
    let out = lifecycle::remember_timed(&mut conn, &m, "agent:test", now, &mut times).unwrap();
    let id = out.id().expect("stored").to_string();
    assert_eq!(lifecycle::get(&conn, &id).unwrap().content, m.content);
    for s in [Step::Settings, Step::Guard, Step::Begin, Step::DuplicateCheck, Step::Row, Step::Audit, Step::Commit] {
        assert!(times.of(s) > Duration::ZERO, "{} was timed", s.name());
    }
    // The same content again is the exact-duplicate filter's, timed or not.
    let again = lifecycle::remember_timed(&mut conn, &m, "agent:test", now, &mut times).unwrap();
    assert_eq!(again.id(), None, "{again:?}");
    let plain = lifecycle::remember(&mut conn, &m, "agent:test", now).unwrap();
    assert_eq!(plain.id(), None, "{plain:?}");
}
