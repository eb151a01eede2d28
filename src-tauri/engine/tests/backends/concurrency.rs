//! Changes made while the forgetting batch runs win over its plan: a pin, an
//! edit or a restore made between the batch's scan and its write of that row makes the batch
//! leave the row alone; a pinned memory is never purged.

use std::sync::Mutex;

use chrono::{Duration, Utc};
use lethe_engine::forgetting::{self, BatchOptions};
use lethe_engine::{lifecycle, time};

/// `n` working memories far past the working window (all forgotten by the gate), written
/// with SQL.
fn forgettable_store(path: &std::path::Path, n: usize) {
    let mut conn = lethe_testkit::backend::open(path).unwrap();
    let created = time::format(Utc::now() - Duration::days(400));
    let tx = conn.transaction().unwrap();
    {
        let mut stmt = tx
            .prepare(
                "INSERT INTO memory_item (id, type, content, importance, created_at, tags, version) \
                 VALUES (?1, 'working', ?2, 0.0, ?3, '[]', 1)",
            )
            .unwrap();
        for i in 0..n {
            stmt.execute(rusqlite_params(i, &created)).unwrap();
        }
    }
    tx.commit().unwrap();
}

/// Row `i`: eight pseudo-random words of a 50,000-word vocabulary, so that no two rows are
/// near-copies (duplication is not what this test is about).
fn rusqlite_params(i: usize, created: &str) -> [String; 3] {
    let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let words: Vec<String> = (0..8)
        .map(|_| {
            x ^= x >> 29;
            x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
            format!("w{}", x % 50_000)
        })
        .collect();
    [format!("mem_{i:07}"), words.join(" "), created.to_string()]
}

#[test]
fn a_pin_made_while_a_20k_batch_runs_survives_it() {
    let dir = tempdir("pin");
    let path = dir.join("m.db");
    // Ten chunks of the batch's 2,000 actions: the pin lands between the first and the last.
    let n = 20_000;
    forgettable_store(&path, n);
    let last = format!("mem_{:07}", n - 1);
    let edited = format!("mem_{:07}", n - 2);
    let done = Mutex::new(false);
    let progress = |written: usize, total: usize| {
        let mut done = done.lock().unwrap();
        // After the first chunk is written and before the last: a person pins one memory of
        // the plan and an agent edits another, from their own connections.
        if !*done && written < total {
            let mut other = lethe_testkit::backend::open(&path).unwrap();
            lifecycle::pin(&mut other, &last, "user", Utc::now()).unwrap();
            lifecycle::edit(&mut other, &edited, "note: build finished, kept by the agent", "agent:ci", Utc::now())
                .unwrap();
            *done = true;
        }
    };
    let mut conn = lethe_testkit::backend::open(&path).unwrap();
    let mut opts = BatchOptions::new(Utc::now(), false);
    opts.progress = Some(&progress);
    let report = forgetting::run_batch(&mut conn, &opts).unwrap();
    assert!(*done.lock().unwrap(), "the pin happened during the batch");
    assert!(
        report.working_gate.len() == n - 2,
        "the rest was forgotten: {} gated, {} skipped, {} review, {} scanned",
        report.working_gate.len(),
        report.changed_since_plan.len(),
        report.review.len(),
        report.scanned
    );
    assert!(
        !report.working_gate.contains(&last) && !report.working_gate.contains(&edited),
        "the report tells the truth"
    );
    assert!(report.changed_since_plan.contains(&last) && report.changed_since_plan.contains(&edited));
    let pinned = lifecycle::get(&conn, &last).unwrap();
    assert!(pinned.pinned && !pinned.is_deleted, "the pin wins: pinned and active");
    let kept = lifecycle::get(&conn, &edited).unwrap();
    assert!(!kept.is_deleted && kept.version == 2, "the edit wins");
    // No soft event for either: the audit does not claim a deletion that did not happen.
    let events: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM memory_forgetting_event WHERE memory_id IN (?1, ?2) AND action = 'soft'",
            [&last, &edited],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(events, 0);
}

#[test]
fn a_pinned_memory_in_quarantine_is_never_purged() {
    let dir = tempdir("purge");
    let path = dir.join("m.db");
    forgettable_store(&path, 3);
    let mut conn = lethe_testkit::backend::open(&path).unwrap();
    let long_ago = Utc::now() - Duration::days(90);
    for id in ["mem_0000000", "mem_0000001"] {
        lifecycle::soft_delete(&mut conn, id, Some("test"), "user", long_ago).unwrap();
    }
    lifecycle::pin(&mut conn, "mem_0000000", "user", Utc::now()).unwrap();
    let report = forgetting::run_batch(&mut conn, &BatchOptions::new(Utc::now(), false)).unwrap();
    assert_eq!(report.purged, vec!["mem_0000001".to_string()], "only the unpinned one is purged");
    assert!(lifecycle::get(&conn, "mem_0000000").unwrap().is_deleted, "still in quarantine, restorable");
}

#[test]
fn a_deleted_at_rewritten_into_the_past_does_not_bring_the_purge_forward() {
    let dir = tempdir("forged");
    let path = dir.join("m.db");
    forgettable_store(&path, 2);
    let mut conn = lethe_testkit::backend::open(&path).unwrap();
    lifecycle::soft_delete(&mut conn, "mem_0000000", Some("test"), "user", Utc::now()).unwrap();
    // Another program dates the deletion to 1970 behind Lethe's back.
    conn.execute("UPDATE memory_item SET deleted_at = '1970-01-01T00:00:00.000Z' WHERE id = 'mem_0000000'", [])
        .unwrap();
    let report = forgetting::run_batch(&mut conn, &BatchOptions::new(Utc::now(), false)).unwrap();
    assert!(report.purged.is_empty(), "the soft event of today dates the quarantine: {:?}", report.purged);
    let q = forgetting::quarantine(&conn, &lethe_engine::Settings::load(&conn).unwrap(), Utc::now()).unwrap();
    assert!(q.iter().any(|i| i.id == "mem_0000000" && i.days_left > 29.0), "30 days left, not 0");
    // 31 days later by the clock the purge comes as it should.
    let later = Utc::now() + Duration::days(31);
    let report = forgetting::run_batch(&mut conn, &BatchOptions::new(later, false)).unwrap();
    assert!(report.purged.contains(&"mem_0000000".to_string()));
}

/// A scratch directory, removed when the test ends (150k rows are ~140 MB).
struct TempDir(std::path::PathBuf);

impl std::ops::Deref for TempDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir(name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("lethe-concurrency-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}
