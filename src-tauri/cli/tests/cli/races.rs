//! Races across processes on one file: compare-and-swap on a procedure from 16 writers
//! (8 threads in this process + 8 `lethe` processes), pin/unpin/delete/restore of one memory
//! from two processes.

use std::process::Command;
use std::sync::{Arc, Barrier};

use lethe_engine::lifecycle::{self, NewMemory, ProcedureFields};
use lethe_engine::procedural::{self, ProcedurePatch};
use lethe_engine::{store, Tier};

fn db(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lethe-race-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("race.db")
}

#[test]
fn cas_from_threads_and_processes_has_exactly_one_winner_per_round() {
    let path = db("cas");
    let mut conn = store::open(&path).unwrap();
    let m = NewMemory {
        procedure: ProcedureFields {
            steps: Some(serde_json::json!(["a", "b"])),
            task_goal: Some("goal".into()),
            ..Default::default()
        },
        ..NewMemory::new(Tier::Procedural, "the procedure")
    };
    let id = lifecycle::remember(&mut conn, &m, "user", chrono::Utc::now()).unwrap().id().unwrap().to_string();
    for round in 1..=2i64 {
        let barrier = Arc::new(Barrier::new(16));
        let mut handles = Vec::new();
        for t in 0..8 {
            let (path, id, barrier) = (path.clone(), id.clone(), barrier.clone());
            handles.push(std::thread::spawn(move || {
                let mut c = store::open(&path).unwrap();
                let patch = ProcedurePatch {
                    content: None,
                    fields: ProcedureFields { task_goal: Some(format!("thread {t}")), ..Default::default() },
                };
                barrier.wait();
                match procedural::update(&mut c, &id, round, &patch, "agent:thread", chrono::Utc::now()) {
                    Ok(_) => 0,
                    Err(e) => e.exit_code(),
                }
            }));
        }
        for p in 0..8 {
            let (path, id, barrier) = (path.clone(), id.clone(), barrier.clone());
            handles.push(std::thread::spawn(move || {
                let mut cmd = Command::new(env!("CARGO_BIN_EXE_lethe"));
                cmd.arg("--db").arg(&path).args(["--actor", "agent:proc", "remember", "--type", "procedural"]);
                cmd.args([
                    "--content",
                    &format!("process {p}"),
                    "--memory-id",
                    &id,
                    "--expected-version",
                    &round.to_string(),
                ]);
                barrier.wait();
                cmd.output().unwrap().status.code().unwrap()
            }));
        }
        let codes: Vec<i32> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let wins = codes.iter().filter(|c| **c == 0).count();
        let conflicts = codes.iter().filter(|c| **c == 3).count();
        assert_eq!((wins, conflicts), (1, 15), "round {round}: exit codes {codes:?}");
        assert_eq!(lifecycle::get(&conn, &id).unwrap().version, round + 1, "final version");
    }
}

#[test]
fn pin_unpin_delete_restore_from_two_processes_keep_audit_consistent() {
    let path = db("pin");
    let mut conn = store::open(&path).unwrap();
    let id =
        lifecycle::remember(&mut conn, &NewMemory::new(Tier::Semantic, "contended memory"), "user", chrono::Utc::now())
            .unwrap()
            .id()
            .unwrap()
            .to_string();
    let run = |cmds: Vec<&'static str>, path: std::path::PathBuf, id: String| {
        std::thread::spawn(move || {
            let mut ok = 0;
            for _ in 0..15 {
                for c in &cmds {
                    let out = Command::new(env!("CARGO_BIN_EXE_lethe"))
                        .arg("--db")
                        .arg(&path)
                        .args([c, id.as_str()])
                        .output()
                        .unwrap();
                    match out.status.code().unwrap() {
                        0 => ok += 1,
                        // Deleting what is already deleted or restoring what is active is a
                        // typed refusal, not a failure of the race.
                        2 => {}
                        other => panic!("{c}: exit {other}: {}", String::from_utf8_lossy(&out.stderr)),
                    }
                }
            }
            ok
        })
    };
    let a = run(vec!["pin", "delete", "unpin", "restore"], path.clone(), id.clone());
    let b = run(vec!["delete", "pin", "restore", "unpin"], path.clone(), id.clone());
    let _ = (a.join().unwrap(), b.join().unwrap());
    // Audit consistent with state: soft events minus restores equals "is deleted now".
    let soft: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM memory_forgetting_event WHERE memory_id = ?1 AND action = 'soft'",
            [&id],
            |r| r.get(0),
        )
        .unwrap();
    let restores: i64 = conn
        .query_row("SELECT COUNT(*) FROM lethe_action WHERE memory_id = ?1 AND action = 'restore'", [&id], |r| r.get(0))
        .unwrap();
    let m = lifecycle::get(&conn, &id).unwrap();
    assert_eq!(
        soft - restores,
        i64::from(m.is_deleted),
        "every state change audited exactly once ({soft} soft, {restores} restores)"
    );
    let last_pin: Option<String> = conn
        .query_row("SELECT action FROM lethe_action WHERE memory_id = ?1 AND action IN ('pin','unpin') ORDER BY id DESC LIMIT 1", [&id], |r| r.get(0))
        .ok();
    assert_eq!(last_pin.as_deref() == Some("pin"), m.pinned, "the last audited pin action matches the state");
}

/// Recall statistics are exact across threads and processes: 4 threads × 2,500 hits through
/// the coalescing buffer while a second process runs 40 `lethe recall`s of the same memory.
#[test]
fn meta_statistics_are_exact_across_threads_and_a_second_process() {
    use lethe_engine::meta;
    let path = db("meta");
    let mut conn = store::open(&path).unwrap();
    let id = lifecycle::remember(
        &mut conn,
        &NewMemory::new(Tier::Semantic, "alpha beta gamma rollout"),
        "user",
        chrono::Utc::now(),
    )
    .unwrap()
    .id()
    .unwrap()
    .to_string();
    let buf = Arc::new(meta::MetaBuffer::start(&path, std::time::Duration::from_millis(100)).unwrap());
    let other = {
        let path = path.clone();
        std::thread::spawn(move || {
            for _ in 0..40 {
                let out = Command::new(env!("CARGO_BIN_EXE_lethe"))
                    .arg("--db")
                    .arg(&path)
                    .args(["recall", "alpha rollout"])
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            }
        })
    };
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (buf, id) = (buf.clone(), id.clone());
            std::thread::spawn(move || {
                for _ in 0..2500 {
                    buf.record_hit(&id, 0.9, chrono::Utc::now());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    other.join().unwrap();
    Arc::try_unwrap(buf).ok().expect("last handle").shutdown();
    let stored = meta::read_stored(&conn, &id).unwrap().unwrap();
    assert_eq!(stored.recall_count, 10_040, "no increment lost between the buffer and the other process");
}
