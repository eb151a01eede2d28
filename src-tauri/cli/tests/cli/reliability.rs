//! Reliability of the `lethe` binary (issue 10): the policy batch racing agents, `kill -9` of
//! the batch and of the importer at random points, hostile arguments, and files that are not
//! (or no longer, or not yet) a Lethe database. RELIABILITY.md lists what each test proves and
//! the figures of the last run; run with `-- --nocapture` to see them.
//!
//! The short variants always run; `LETHE_LONG=1` runs the long ones (bigger files, more
//! trials). `LETHE_SEED=N` replays the random kill points of an earlier run.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lethe_engine::store::Connection;
use lethe_engine::transfer::CHUNK;
use serde_json::{json, Value};

use crate::hostile;

const NOW: &str = "2026-06-01T00:00:00.000Z";

fn long() -> bool {
    std::env::var("LETHE_LONG").is_ok_and(|v| v == "1")
}

/// A fresh directory per test (tests of this file run in parallel), removed when the test
/// passes and kept for inspection when it fails.
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("lethe-reliability-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

fn command(db: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lethe"));
    // A panic anywhere would print its backtrace: the error checks below look for one.
    cmd.env("RUST_BACKTRACE", "1").arg("--db").arg(db).args(args);
    cmd
}

struct Run {
    code: i32,
    out: Value,
    err: String,
    elapsed: Duration,
}

fn lethe(db: &Path, args: &[&str]) -> Run {
    let started = Instant::now();
    let out = command(db, args).stdin(Stdio::null()).output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        out: serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

/// `lethe` at the clock: writes refuse `--now`, and the data these tests make is
/// dated in 2024, old by any clock after [`NOW`].
fn at(db: &Path, args: &[&str]) -> Run {
    lethe(db, args)
}

fn ok(db: &Path, args: &[&str]) -> Value {
    let r = at(db, args);
    assert_eq!(r.code, 0, "lethe {args:?} failed: {}", r.err);
    r.out
}

/// The CLI's error contract: a non-zero exit, exactly one JSON document on stderr with a code
/// from `codes` and a readable message, and no panic or backtrace.
fn assert_clean_error(r: &Run, what: &str, exit: i32, codes: &[&str]) -> String {
    assert_eq!(r.code, exit, "{what}: exit code (stderr: {})", r.err);
    let err: Value = serde_json::from_str(r.err.trim())
        .unwrap_or_else(|e| panic!("{what}: stderr must be one JSON document ({e}): {:?}", r.err));
    let code = err["error"]["code"].as_str().unwrap_or_default();
    assert!(codes.contains(&code), "{what}: code {code:?} not in {codes:?}: {err}");
    let message = err["error"]["message"].as_str().unwrap_or_default();
    assert!(message.len() > 10, "{what}: a readable message: {err}");
    for sign in ["panicked", "backtrace", "RUST_BACKTRACE", "stack overflow"] {
        assert!(!r.err.contains(sign), "{what}: no panic on stderr: {}", r.err);
    }
    assert_eq!(r.out, Value::Null, "{what}: nothing on stdout");
    message.to_string()
}

/// A plain SQLite connection (no Lethe migrations) for inspecting a file after a crash.
fn inspect(db: &Path) -> Connection {
    Connection::open(db).unwrap()
}

fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// `PRAGMA integrity_check` (b-trees, indexes) and FTS5's own check of the index against the
/// content table: both must be clean after any crash.
fn assert_intact(db: &Path, what: &str) {
    let conn = inspect(db);
    let rows: Vec<String> = conn
        .prepare("PRAGMA integrity_check")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows, vec!["ok".to_string()], "{what}: integrity_check");
    conn.execute("INSERT INTO memory_item_fts (memory_item_fts) VALUES ('integrity-check')", [])
        .unwrap_or_else(|e| panic!("{what}: the FTS index matches the table: {e}"));
}

/// Folds the WAL into the main file and leaves no sidecar, so the file can be copied alone.
fn checkpoint(db: &Path) {
    let conn = inspect(db);
    let (busy, _, _): (i64, i64, i64) =
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap();
    assert_eq!(busy, 0, "checkpoint complete");
}

fn remove_db(db: &Path) {
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", db.display()));
    }
}

/// The files of a directory with their bytes: "untouched" means this is identical.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    out.sort();
    out
}

/// xorshift64*: enough randomness for kill points, replayable with `LETHE_SEED`.
struct Rng(u64);

impl Rng {
    fn new(what: &str) -> Rng {
        let seed = std::env::var("LETHE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
        });
        println!("{what}: kill points seeded with LETHE_SEED={seed}");
        Rng(seed | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "deploy",
    "docker",
    "build",
    "cache",
    "token",
    "auth",
    "key",
    "rust",
    "sqlite",
    "agent",
    "memory",
    "branch",
    "release",
    "staging",
    "prod",
    "latency",
    "retry",
    "timeout",
    "config",
    "schema",
    "index",
    "query",
    "user",
    "session",
    "project",
    "pipeline",
    "test",
    "flaky",
    "merge",
    "review",
    "ticket",
    "alert",
    "metric",
    "log",
    "trace",
    "queue",
    "worker",
    "cron",
    "backup",
    "restore",
    "secret",
    "vault",
    "region",
    "cluster",
    "node",
    "disk",
    "network",
    "proxy",
    "certificate",
    "domain",
];

/// `n` memories as JSONL, deterministic: all created in 2024 (old by [`NOW`]), most with
/// importance 0 so the policy forgets them, some in the review band, some important or
/// pinned, every fifth a near-duplicate of the one before (one word changed), a tenth working
/// memories in sessions (the dual gate) and a tenth procedures.
fn jsonl(n: usize, prefix: &str) -> String {
    let mut rng = Rng(0x5eed_1e7e);
    let base = lethe_engine::time::parse("2024-01-01T00:00:00Z").unwrap();
    let mut out = String::with_capacity(n * 900);
    let mut prev: Vec<&str> = Vec::new();
    for i in 0..n {
        let words: Vec<&str> = if i % 5 == 4 {
            let mut w = prev.clone();
            let k = rng.below(w.len());
            w[k] = WORDS[rng.below(WORDS.len())];
            w
        } else {
            (0..24).map(|_| WORDS[rng.below(WORDS.len())]).collect()
        };
        let content = format!("{} n{i}", words.join(" "));
        prev = words;
        let tier = match i % 10 {
            0..=4 => "episodic",
            5..=7 => "semantic",
            8 => "working",
            _ => "procedural",
        };
        let importance = match i % 20 {
            0..=13 => 0.0,
            14..=16 => 0.3,
            _ => 0.8,
        };
        let created = lethe_engine::time::format(base - chrono::Duration::minutes((i % 5000) as i64));
        let line = json!({
            "id": format!("mem_{prefix}_{i:07}"), "type": tier, "content": content, "importance": importance,
            "privacy_scope": "private", "created_at": created, "last_accessed": null, "pinned": i % 97 == 0,
            "tags": ["reliability"], "source": "agent", "view_count": 0, "cite_count": 0, "edit_count": 0,
            "task_goal": if tier == "procedural" { json!("keep the service up") } else { Value::Null },
            "steps": if tier == "procedural" { json!(["check", "fix"]) } else { Value::Null },
            "reflection_notes": null, "workflow_name": null, "skill_name": null, "trigger_conditions": null,
            "version": 1, "owner_id": null,
            "session_id": if tier == "working" { json!(format!("s{}", i % 7)) } else { Value::Null },
            "project_id": null, "is_deleted": false, "deleted_at": null,
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// Builds a database of `n` generated memories through `lethe import`, checkpointed.
fn prepared(dir: &Path, n: usize) -> PathBuf {
    let file = dir.join("memories.jsonl");
    std::fs::write(&file, jsonl(n, "rel")).unwrap();
    let db = dir.join("prepared.db");
    let report = ok(&db, &["import", file.to_str().unwrap()]);
    assert_eq!(report["imported"], n, "{report}");
    checkpoint(&db);
    db
}

fn events(conn: &Connection) -> (i64, i64, i64) {
    (
        count(conn, "SELECT COUNT(*) FROM memory_forgetting_event WHERE action = 'soft'"),
        count(conn, "SELECT COUNT(*) FROM memory_forgetting_event WHERE action = 'review'"),
        count(conn, "SELECT COUNT(*) FROM memory_item WHERE is_deleted = 1"),
    )
}

/// Every memory's audit matches its state: soft events minus restores is 1 in quarantine and
/// 0 when active, never anything else; at most one review event each, and only while the
/// memory is marked in the band or has left it.
fn assert_audit_matches_state(conn: &Connection, what: &str) {
    let bad: Vec<(String, i64, i64, i64)> = conn
        .prepare(
            "SELECT m.id, COALESCE(m.is_deleted, 0), \
               (SELECT COUNT(*) FROM memory_forgetting_event e WHERE e.memory_id = m.id AND e.action = 'soft'), \
               (SELECT COUNT(*) FROM lethe_action a WHERE a.memory_id = m.id AND a.action = 'restore') \
             FROM memory_item m",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .filter(|(_, deleted, soft, restores)| soft - restores != *deleted)
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: soft events − restores ≠ state for {} memories, e.g. {:?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
    let reviewed_twice =
        count(conn, "SELECT COUNT(*) FROM (SELECT memory_id FROM memory_forgetting_event WHERE action = 'review' GROUP BY memory_id HAVING COUNT(*) > 1)");
    assert_eq!(reviewed_twice, 0, "{what}: one review event per entry into the band");
}

// ---------------------------------------------------------------------------------------------
// 1. The policy batch while agents write.

#[test]
fn forget_batches_while_four_agents_write_lose_nothing() {
    let dir = scratch("concurrent");
    let seed = dir.join("seed.jsonl");
    std::fs::write(&seed, jsonl(if long() { 5000 } else { 1500 }, "seed")).unwrap();
    let db = dir.join("c.db");
    ok(&db, &["import", seed.to_str().unwrap()]);
    let per_writer = if long() { 150 } else { 40 };
    let writers_done = Arc::new(AtomicBool::new(false));
    // The batch's last runs start only once the restorer has stopped, so nothing it restores
    // escapes them.
    let restorer_done = Arc::new(AtomicBool::new(false));
    let failures: Arc<Mutex<Vec<String>>> = Arc::default();
    let started = Instant::now();

    let batch = {
        let (db, done, failures) = (db.clone(), restorer_done.clone(), failures.clone());
        std::thread::spawn(move || {
            let (mut runs, mut forgotten) = (0, 0);
            // At least two runs after the writers stop, so the last memories meet the policy.
            let mut after = 0;
            while after < 2 {
                if done.load(Ordering::SeqCst) {
                    after += 1;
                }
                let r = at(&db, &["forget"]);
                runs += 1;
                if r.code != 0 {
                    failures.lock().unwrap().push(format!("forget: {}", r.err));
                }
                for key in ["soft_deleted", "working_gate"] {
                    forgotten += r.out[key].as_array().map_or(0, Vec::len);
                }
            }
            (runs, forgotten)
        })
    };
    // A person restoring from quarantine meanwhile: the batch will forget those again.
    let restorer = {
        let (db, done, failures, restorer_done) =
            (db.clone(), writers_done.clone(), failures.clone(), restorer_done.clone());
        std::thread::spawn(move || {
            let mut restored = 0;
            while !done.load(Ordering::SeqCst) {
                let q = at(&db, &["quarantine"]);
                let ids: Vec<String> = q.out["items"]
                    .as_array()
                    .map(|a| a.iter().rev().take(2).filter_map(|i| i["id"].as_str().map(str::to_string)).collect())
                    .unwrap_or_default();
                for id in ids {
                    let r = at(&db, &["restore", &id]);
                    if r.code != 0 {
                        failures.lock().unwrap().push(format!("restore {id}: {}", r.err));
                    }
                    restored += 1;
                }
                std::thread::sleep(Duration::from_millis(30));
            }
            restorer_done.store(true, Ordering::SeqCst);
            restored
        })
    };
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (db, failures) = (db.clone(), failures.clone());
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                for k in 0..per_writer {
                    let content =
                        format!("agent {w} observation {k}: the {} is {}", WORDS[(w * 7 + k) % 50], k * 31 + w);
                    let (actor, session) = (format!("agent:writer{w}"), format!("writer{w}"));
                    // So old and unimportant that every tier's score reaches the threshold
                    // (working memories meet the dual gate instead).
                    let mut args = vec!["--actor", &actor, "remember", "--content", &content, "--importance", "0"];
                    args.extend(["--created-at", "2000-01-01T00:00:00Z", "--type"]);
                    args.extend(match k % 3 {
                        0 => vec!["episodic"],
                        1 => vec!["semantic"],
                        _ => vec!["working", "--session", &session],
                    });
                    let r = at(&db, &args);
                    match (r.code, r.out["id"].as_str()) {
                        (0, Some(id)) => ids.push(id.to_string()),
                        _ => failures.lock().unwrap().push(format!("remember: {} {}", r.out, r.err)),
                    }
                }
                ids
            })
        })
        .collect();
    let written: Vec<String> = writers.into_iter().flat_map(|h| h.join().unwrap()).collect();
    writers_done.store(true, Ordering::SeqCst);
    let restored = restorer.join().unwrap();
    let (runs, forgotten) = batch.join().unwrap();
    let elapsed = started.elapsed();
    let failures = failures.lock().unwrap().clone();
    assert!(failures.is_empty(), "no call failed: {failures:#?}");
    assert_eq!(written.len(), 4 * per_writer, "every remember stored its memory");

    assert_intact(&db, "after the race");
    let conn = inspect(&db);
    let mut quarantined_written = 0;
    for id in &written {
        let deleted: Option<i64> =
            conn.query_row("SELECT is_deleted FROM memory_item WHERE id = ?1", [id], |r| r.get(0)).ok();
        assert!(deleted.is_some(), "written memory {id} exists (active or quarantined)");
        quarantined_written += deleted.unwrap_or(0);
    }
    assert_audit_matches_state(&conn, "after the race");
    // The last runs saw every write: old, unimportant memories all end in quarantine, so the
    // batch really did race the writers rather than run before or after them.
    assert_eq!(quarantined_written, written.len() as i64, "the policy reached every written memory");
    println!(
        "race: {} remembers by 4 writers, {runs} forget runs ({forgotten} soft deletes), {restored} restores, \
         {:.1} s, no failed call",
        written.len(),
        elapsed.as_secs_f64()
    );
}

// ---------------------------------------------------------------------------------------------
// 2. kill -9 of the forgetting batch.

/// Runs the batch until nothing is left to do: the run must succeed, and the one after it
/// must write no event at all.
fn assert_settles(db: &Path, what: &str) {
    let r = at(db, &["forget"]);
    assert_eq!(r.code, 0, "{what}: the re-run completes: {}", r.err);
    let before = events(&inspect(db));
    let r = at(db, &["forget"]);
    assert_eq!(r.code, 0, "{what}: a further run completes: {}", r.err);
    for key in ["soft_deleted", "review", "working_gate", "purged"] {
        assert_eq!(r.out[key].as_array().map(Vec::len), Some(0), "{what}: a further run has nothing to {key}");
    }
    assert_eq!(events(&inspect(db)), before, "{what}: a further run writes no event");
}

#[test]
fn kill_9_of_the_forgetting_batch_leaves_a_consistent_file() {
    let n = if long() { 100_000 } else { 10_000 };
    let trials = if long() { 40 } else { 10 };
    let dir = scratch("kill-forget");
    let t = Instant::now();
    let prepared = prepared(&dir, n);
    let prepare_s = t.elapsed().as_secs_f64();

    // An uninterrupted run first: its duration and that of a dry run (everything but the
    // writes) spread the kill points, its events classify them.
    let full = dir.join("full.db");
    std::fs::copy(&prepared, &full).unwrap();
    let dry = at(&full, &["forget", "--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.err);
    let scan_time = dry.elapsed;
    // The uninterrupted run, watched: when its first and its last decision chunks commit.
    // Before the first come the scan and the store of the neighbour lists (which a dry run
    // does not write), after the last the process's end; so the writing phase is measured,
    // not taken as "run minus dry run" (the batch's writes are a short part of the run, and
    // kills aimed at the rest land before or after them).
    let mut child: Child = command(&full, &["forget"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let started = Instant::now();
    let reader = inspect(&full);
    let (mut first_commit, mut last_commit, mut seen): (Option<Duration>, Option<Duration>, i64) = (None, None, 0);
    let status = loop {
        let now = count(&reader, "SELECT COUNT(*) FROM memory_forgetting_event");
        if now != seen {
            seen = now;
            first_commit.get_or_insert(started.elapsed());
            last_commit = Some(started.elapsed());
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    drop(reader);
    assert!(status.success(), "the uninterrupted forget failed: {status}");
    let run_time = started.elapsed();
    let write_time = match (first_commit, last_commit) {
        (Some(first), Some(last)) => (last - first).max(Duration::from_millis(5)),
        _ => run_time.saturating_sub(scan_time),
    };
    let full_events = events(&inspect(&full));
    assert!(full_events.2 > (n as i64) / 2, "most memories are forgotten: {full_events:?}");
    assert_audit_matches_state(&inspect(&full), "uninterrupted");
    assert_settles(&full, "uninterrupted");
    let full_quarantined = events(&inspect(&full)).2;
    remove_db(&full);

    let mut rng = Rng::new("kill -9 of `lethe forget`");
    let (mut before_first, mut mid, mut after_last, mut finished) = (0, 0, 0, 0);
    let mut points = Vec::new();
    let mut max_drift = 0i64;
    for trial in 0..trials {
        let db = dir.join(format!("trial-{trial}.db"));
        std::fs::copy(&prepared, &db).unwrap();
        let mut child: Child = command(&db, &["forget"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let started = Instant::now();
        // Even trials: a random delay across the whole uninterrupted run time, startup and
        // scan included. Odd trials aim at the writing phase, whose start moves with the load
        // of the machine: they wait until a reader sees the first chunk committed, then kill
        // after a random part of the time from the first commit to the last (measured in the
        // uninterrupted run).
        if trial % 2 == 0 {
            std::thread::sleep(run_time.mul_f64(rng.unit() * 1.1));
        } else {
            let reader = inspect(&db);
            while started.elapsed() < run_time * 4
                && count(&reader, "SELECT COUNT(*) FROM memory_forgetting_event") == 0
                && child.try_wait().unwrap().is_none()
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            drop(reader);
            std::thread::sleep(write_time.mul_f64(rng.unit()));
        }
        let delay = started.elapsed();
        let _ = child.kill();
        let status = child.wait().unwrap();
        let what = format!("trial {trial} (kill after {} ms)", delay.as_millis());
        assert_intact(&db, &what);
        let conn = inspect(&db);
        let (soft, review, _) = events(&conn);
        assert_audit_matches_state(&conn, &what);
        drop(conn);
        let kind = if status.signal() != Some(9) {
            assert!(status.success(), "{what}: {status}");
            finished += 1;
            "finished"
        } else if soft + review == 0 {
            before_first += 1;
            "before the first commit"
        } else if (soft, review) == (full_events.0, full_events.1) {
            after_last += 1;
            "after the last commit"
        } else {
            mid += 1;
            "mid-batch"
        };
        points.push(format!(
            "{}ms:{kind}({}/{} events)",
            delay.as_millis(),
            soft + review,
            full_events.0 + full_events.1
        ));
        assert_settles(&db, &what);
        let conn = inspect(&db);
        assert_audit_matches_state(&conn, &what);
        max_drift = max_drift.max((events(&conn).2 - full_quarantined).abs());
        drop(conn);
        remove_db(&db);
    }
    println!(
        "kill -9 of `lethe forget`: N = {n} (prepared by import in {prepare_s:.1} s), uninterrupted run {} ms \
         (dry run {} ms, first to last commit {} ms; {} soft + {} review events), {trials} trials: {mid} mid-batch, {before_first} before the first commit, \
         {after_last} after the last commit, {finished} finished before the kill; quarantine after recovery \
         differs from the uninterrupted run by at most {max_drift} memories\n  kill points: {}",
        run_time.as_millis(),
        scan_time.as_millis(),
        write_time.as_millis(),
        full_events.0,
        full_events.1,
        points.join(", ")
    );
    assert!(mid >= trials / 4, "enough kills land mid-batch to mean something ({mid} of {trials})");
}

// ---------------------------------------------------------------------------------------------
// 3. kill -9 of the importer.

#[test]
fn kill_9_of_the_importer_keeps_whole_chunks_and_resumes() {
    let n = if long() { 200_000 } else { 20_000 };
    let max_trials = if long() { 25 } else { 6 };
    let dir = scratch("kill-import");
    let file = dir.join("big.jsonl");
    std::fs::write(&file, jsonl(n, "imp")).unwrap();
    let file_arg = file.to_str().unwrap();

    // Uninterrupted, then again (every id skipped): the two durations spread the kill points.
    let scratch_db = dir.join("uninterrupted.db");
    let r = at(&scratch_db, &["import", file_arg]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!((r.out["imported"].as_u64(), r.out["chunks"].as_u64()), (Some(n as u64), Some((n / CHUNK) as u64)));
    let full_time = r.elapsed;
    let r = at(&scratch_db, &["import", file_arg]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!((r.out["imported"].as_u64(), r.out["skipped_existing"].as_u64()), (Some(0), Some(n as u64)));
    assert_eq!(count(&inspect(&scratch_db), "SELECT COUNT(*) FROM memory_item"), n as i64, "never duplicated");
    let skip_time = r.elapsed;
    remove_db(&scratch_db);

    let db = dir.join("killed.db");
    let mut rng = Rng::new("kill -9 of `lethe import`");
    let mut rows = 0i64;
    let (mut trials, mut mid, mut nothing, mut finished) = (0, 0, 0, false);
    let mut points = Vec::new();
    while trials < max_trials && !finished {
        trials += 1;
        // Reading and validating the whole file takes about as long as the all-skipped run;
        // then chunks commit. Each kill lands after a random part of the parse plus up to a
        // third of the remaining writes, so several kills hit one file before it completes.
        let remaining = (n as i64 - rows) as f64 / n as f64;
        let writes = full_time.saturating_sub(skip_time).mul_f64(remaining);
        let delay = skip_time.mul_f64(0.5 + 0.6 * rng.unit()) + writes.mul_f64(0.35 * rng.unit());
        let mut child =
            command(&db, &["import", file_arg]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        let status = child.wait().unwrap();
        let what = format!("import trial {trials} (kill after {} ms)", delay.as_millis());
        if status.signal() != Some(9) {
            assert!(status.success(), "{what}: {status}");
            finished = true;
        }
        if !db.exists() {
            nothing += 1;
            points.push(format!("{}ms:before the file existed", delay.as_millis()));
            continue;
        }
        assert_intact(&db, &what);
        let conn = inspect(&db);
        let now_rows = count(&conn, "SELECT COUNT(*) FROM memory_item");
        assert_eq!(now_rows % CHUNK as i64, 0, "{what}: whole chunks only, {now_rows} rows");
        assert!(now_rows >= rows, "{what}: committed chunks stay");
        assert_eq!(
            count(&conn, "SELECT COUNT(*) FROM lethe_signature"),
            now_rows,
            "{what}: each row's similarity signature committed with it"
        );
        drop(conn);
        if now_rows == rows {
            nothing += 1;
        } else if !finished {
            mid += 1;
        }
        points.push(format!("{}ms:{rows}→{now_rows}", delay.as_millis()));
        rows = now_rows;
    }
    // Whatever the kills left, one more run completes the rest and skips what is there.
    let r = at(&db, &["import", file_arg]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(r.out["skipped_existing"].as_i64(), Some(rows), "existing ids are skipped: {}", r.out);
    assert_eq!(r.out["imported"].as_i64(), Some(n as i64 - rows), "the rest is imported: {}", r.out);
    let conn = inspect(&db);
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM memory_item"), n as i64);
    assert_eq!(count(&conn, "SELECT COUNT(DISTINCT id) FROM memory_item"), n as i64, "never duplicated");
    drop(conn);
    assert_intact(&db, "after the resumed import");
    println!(
        "kill -9 of `lethe import`: {n} lines in chunks of {CHUNK}, uninterrupted {} ms, all-skipped re-run {} ms; \
         {trials} kills on one file: {mid} mid-import, {nothing} before any chunk, finished: {finished}; \
         the resumed import added {} rows\n  kill points: {}",
        full_time.as_millis(),
        skip_time.as_millis(),
        n as i64 - rows,
        points.join(", ")
    );
    assert!(mid >= 1, "at least one kill landed between chunks");
}

// ---------------------------------------------------------------------------------------------
// 4. Hostile arguments.

/// A memory and a procedure in a checkpointed file, for "nothing written" comparisons.
fn seeded(dir: &Path) -> (PathBuf, String) {
    let db = dir.join("seeded.db");
    ok(&db, &["remember", "--type", "semantic", "--content", "the staging database lives in eu-west-1"]);
    let out =
        ok(&db, &["remember", "--type", "procedural", "--content", "ship a release", "--steps", r#"["build","tag"]"#]);
    checkpoint(&db);
    (db, out["id"].as_str().unwrap().to_string())
}

#[test]
fn hostile_arguments_exit_2_and_write_nothing() {
    let dir = scratch("args");
    let (db, procedure) = seeded(&dir);
    let before = files(&dir);
    let inputs = hostile::Inputs::write(&dir);
    let before_inputs = files(&dir);
    let mut checked = 0;
    for (what, args) in hostile::cases(&inputs, &procedure) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = lethe(&db, &args);
        assert_clean_error(&r, what, 2, &["invalid_input"]);
        assert_eq!(files(&dir), before_inputs, "{what}: nothing written (every file byte for byte)");
        checked += 1;
    }
    // The same inputs did not leave the database changed in any way the engine can see.
    inputs.remove();
    assert_eq!(files(&dir), before, "the database file is byte for byte what it was");
    println!("hostile arguments: {checked} cases, each exit 2 with code invalid_input, database byte-identical");
}

// ---------------------------------------------------------------------------------------------
// 5. Files that are not a Lethe database.

fn real_db(dir: &Path) -> PathBuf {
    let db = dir.join("real.db");
    ok(&db, &["remember", "--type", "semantic", "--content", "a memory in a real file"]);
    checkpoint(&db);
    db
}

/// Runs a read and a write command against `db` and checks both refuse it cleanly with one of
/// `codes`, leaving every file in its directory byte for byte as it was.
fn assert_refused_untouched(db: &Path, what: &str, codes: &[&str]) -> String {
    let dir = db.parent().unwrap();
    let before = files(dir);
    let mut message = String::new();
    for args in [&["stats"][..], &["remember", "--type", "semantic", "--content", "must not land"][..]] {
        let r = at(db, args);
        message = assert_clean_error(&r, &format!("{what}: {args:?}"), 1, codes);
        assert_eq!(files(dir), before, "{what}: {args:?} left every file untouched (no -wal/-shm either)");
    }
    message
}

#[test]
fn foreign_files_are_refused_and_left_untouched() {
    let mut seen = Vec::new();
    let dir = scratch("foreign-random");
    let db = dir.join("random.db");
    let mut rng = Rng(42);
    std::fs::write(&db, (0..65_536).map(|_| rng.next() as u8).collect::<Vec<u8>>()).unwrap();
    seen.push(("random bytes", assert_refused_untouched(&db, "random bytes", &["db_unavailable"])));

    let dir = scratch("foreign-text");
    let db = dir.join("notes.txt");
    std::fs::write(&db, "Shopping list\n- milk\n- eggs\n".repeat(200)).unwrap();
    seen.push(("text file", assert_refused_untouched(&db, "text file", &["db_unavailable"])));

    let dir = scratch("foreign-truncated");
    let real = real_db(&dir);
    let bytes = std::fs::read(&real).unwrap();
    let db = dir.join("truncated.db");
    std::fs::write(&db, &bytes[..1000]).unwrap();
    remove_db(&real);
    seen.push(("truncated", assert_refused_untouched(&db, "truncated DB", &["db_unavailable"])));

    let dir = scratch("foreign-newer");
    let db = real_db(&dir);
    inspect(&db)
        .execute("INSERT INTO lethe_schema (version, name, applied_at) VALUES (99, 'future', ?1)", [NOW])
        .unwrap();
    checkpoint(&db);
    let message = assert_refused_untouched(&db, "newer schema", &["db_unavailable"]);
    assert!(message.contains("newer"), "the message says why: {message}");
    seen.push(("newer schema", message));

    let dir = scratch("foreign-other-app");
    let db = dir.join("other.db");
    let other = inspect(&db);
    other
        .execute_batch(
            "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL); INSERT INTO invoices VALUES (1, 9.5);",
        )
        .unwrap();
    drop(other);
    seen.push(("another program's SQLite file", assert_refused_untouched(&db, "other app", &["db_unavailable"])));

    let dir = scratch("foreign-directory");
    let db = dir.join("a-directory.db");
    std::fs::create_dir(&db).unwrap();
    let r = at(&db, &["stats"]);
    seen.push(("a directory", assert_clean_error(&r, "a directory", 1, &["db_unavailable"])));

    for (what, message) in &seen {
        println!("foreign file, {what}: {message}");
    }
}

#[test]
fn a_database_deleted_between_two_commands_is_recreated_empty() {
    let dir = scratch("deleted");
    let db = dir.join("gone.db");
    let id = ok(&db, &["remember", "--type", "semantic", "--content", "soon gone"])["id"].as_str().unwrap().to_string();
    remove_db(&db);
    // The path names a database that does not exist: exactly what a first run sees, so the
    // command starts a new, empty one, and the memory is reported missing, cleanly.
    let r = at(&db, &["show", &id]);
    let message = assert_clean_error(&r, "show after delete", 4, &["not_found"]);
    assert!(message.contains(&id), "{message}");
    assert_eq!(ok(&db, &["stats"])["total_active"].as_i64(), Some(0), "a new, empty file");
    // And a directory that went away with it is made again.
    std::fs::remove_dir_all(&*dir).unwrap();
    assert_eq!(at(&db, &["stats"]).code, 0, "the parent directory is recreated");
    println!("deleted database: next command starts an empty file; show says: {message}");
}

/// Holds `BEGIN EXCLUSIVE` on `db` from another connection until `release` is set or `max`
/// passes.
fn hold_exclusive(db: &Path, release: Arc<AtomicBool>, max: Duration) -> std::thread::JoinHandle<()> {
    let db = db.to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        let conn = inspect(&db);
        conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
        tx.send(()).unwrap();
        let started = Instant::now();
        while !release.load(Ordering::SeqCst) && started.elapsed() < max {
            std::thread::sleep(Duration::from_millis(20));
        }
        conn.execute_batch("ROLLBACK").unwrap();
    });
    rx.recv().unwrap();
    h
}

#[test]
fn a_lock_held_by_another_program_ends_in_busy_or_waits_it_out() {
    let dir = scratch("locked");
    let db = real_db(&dir);
    let before = files(&dir);

    // Held for good (longer than the CLI's 15 s retry deadline): a clean `busy` error.
    let release = Arc::new(AtomicBool::new(false));
    let holder = hold_exclusive(&db, release.clone(), Duration::from_secs(40));
    let r = at(&db, &["remember", "--type", "semantic", "--content", "must wait"]);
    release.store(true, Ordering::SeqCst);
    holder.join().unwrap();
    let message = assert_clean_error(&r, "locked for good", 1, &["busy"]);
    let gave_up = r.elapsed;
    assert!(
        r.elapsed >= Duration::from_secs(14) && r.elapsed < Duration::from_secs(30),
        "gives up after the retry deadline, not at once and not never: {:?}",
        r.elapsed
    );
    assert_eq!(files(&dir), before, "the locked file is untouched");

    // Held briefly: the CLI waits and succeeds.
    let release = Arc::new(AtomicBool::new(false));
    let holder = hold_exclusive(&db, release, Duration::from_secs(2));
    let r = at(&db, &["remember", "--type", "semantic", "--content", "waited for the lock"]);
    holder.join().unwrap();
    assert_eq!(r.code, 0, "a short lock is waited out: {}", r.err);
    assert!(r.elapsed >= Duration::from_millis(1500), "it did wait: {:?}", r.elapsed);
    println!(
        "lock held by another connection: gave up after {:.1} s with: {message}; a 2 s lock was waited out in {:.1} s",
        gave_up.as_secs_f64(),
        r.elapsed.as_secs_f64()
    );
}
