//! Trust boundaries through the real binary: time that cannot be forged, actors
//! that cannot claim the person, foreign logic in a file refused, private files, stale edits,
//! mistyped rows. Person-only commands run on a real pseudo-terminal (`script`), the only way
//! the CLI accepts the person.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("lethe-trust-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// `lethe` as an agent would run it: stdin not a terminal.
fn lethe(db: &Path, args: &[&str]) -> (i32, Value, Value) {
    let out =
        Command::new(env!("CARGO_BIN_EXE_lethe")).arg("--db").arg(db).args(args).stdin(Stdio::null()).output().unwrap();
    let parse = |b: &[u8]| serde_json::from_slice(b).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), parse(&out.stdout), parse(&out.stderr))
}

fn ok(db: &Path, args: &[&str]) -> Value {
    let (code, out, err) = lethe(db, args);
    assert_eq!(code, 0, "lethe {args:?}: {err}");
    out
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `lethe` run by the person at a terminal: stdin is a pseudo-terminal (util-linux `script`)
/// that receives `answer`; stdout and stderr go to files so they stay apart.
fn as_person(db: &Path, args: &[&str], answer: &str) -> (i32, Value, String) {
    let dir = db.parent().unwrap();
    let (out, err) = (dir.join("person.out"), dir.join("person.err"));
    let mut cmd =
        format!("exec {} --db {}", shell_quote(env!("CARGO_BIN_EXE_lethe")), shell_quote(db.to_str().unwrap()));
    for a in args {
        cmd.push(' ');
        cmd.push_str(&shell_quote(a));
    }
    cmd.push_str(&format!(" >{} 2>{}", shell_quote(out.to_str().unwrap()), shell_quote(err.to_str().unwrap())));
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &cmd, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("util-linux `script` runs the CLI on a pseudo-terminal");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(format!("{answer}\n").as_bytes()).unwrap();
    let status = child.wait().unwrap();
    let stdout = std::fs::read(&out).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    (status.code().unwrap_or(-1), serde_json::from_slice(&stdout).unwrap_or(Value::Null), stderr)
}

/// What the directory's files hold: name and a hash of the bytes, empty files left out (a
/// reader of a WAL file may create an empty `-wal`; it holds nothing).
fn bytes_of(dir: &Path) -> Vec<(String, u64)> {
    use std::hash::{Hash, Hasher};
    let mut files: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && !p.file_name().unwrap().to_string_lossy().starts_with("person."))
        .filter(|p| !p.to_string_lossy().ends_with("-shm"))
        .filter_map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (!bytes.is_empty()).then(|| {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                bytes.hash(&mut h);
                (p.file_name().unwrap().to_string_lossy().into_owned(), h.finish())
            })
        })
        .collect();
    files.sort();
    files
}

fn remember(db: &Path, content: &str) -> String {
    ok(db, &["remember", "--type", "semantic", "--content", content])["id"].as_str().unwrap().to_string()
}

#[test]
fn now_is_refused_on_every_write_and_accepted_on_reads() {
    let s = scratch("now");
    let db = s.0.join("m.db");
    let id = remember(&db, "the staging database lives in eu-west-1");
    let forged = ["--now", "2000-01-01T00:00:00Z"];
    let before = bytes_of(&s.0);
    for write in [
        vec!["delete", id.as_str()],
        vec!["remember", "--type", "working", "--content", "young for ever"],
        vec!["pin", id.as_str()],
        vec!["forget"],
        vec!["cite", id.as_str()],
        vec!["edit", id.as_str(), "--content", "moved to eu-central-1"],
        vec!["demo", "--count", "10"],
        vec!["mcp"],
    ] {
        let (code, _, err) = lethe(&db, &[&forged[..], &write[..]].concat());
        assert_eq!(code, 2, "{write:?}: {err}");
        assert_eq!(err["error"]["code"], "invalid_input");
        assert!(err["error"]["message"].as_str().unwrap().contains("--now"), "{err}");
    }
    assert_eq!(bytes_of(&s.0), before, "a refused write changes no byte");
    for read in
        [vec!["show", id.as_str()], vec!["stats"], vec!["forget", "--dry-run"], vec!["list"], vec!["recall", "staging"]]
    {
        assert_eq!(lethe(&db, &[&forged[..], &read[..]].concat()).0, 0, "{read:?} evaluates at --now");
    }
    // A soft delete is dated by the clock, so the next batch does not purge it.
    ok(&db, &["delete", &id]);
    let report = ok(&db, &["forget"]);
    assert!(report["purged"].as_array().unwrap().is_empty(), "{report}");
    assert_eq!(ok(&db, &["quarantine"])["items"][0]["id"], id.as_str());
}

#[test]
fn created_at_in_the_future_is_refused_and_back_dating_is_audited() {
    let s = scratch("created");
    let db = s.0.join("m.db");
    let future = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let (code, _, err) =
        lethe(&db, &["remember", "--type", "working", "--content", "from the future", "--created-at", &future]);
    assert_eq!((code, err["error"]["code"].as_str()), (2, Some("invalid_input")), "{err}");
    let out = ok(
        &db,
        &["remember", "--type", "episodic", "--content", "an old note", "--created-at", "2025-01-01T00:00:00Z"],
    );
    let id = out["id"].as_str().unwrap();
    let events = ok(&db, &["events", "--memory", id]);
    let after = &events["items"][0]["after"];
    assert_eq!(after["backdated"]["created_at"], "2025-01-01T00:00:00.000Z", "{events}");
    assert!(after["backdated"]["recorded_at"].as_str().unwrap() > "2026", "{events}");
    assert_eq!(ok(&db, &["show", id])["created_at"], "2025-01-01T00:00:00.000Z");
}

#[test]
fn agents_are_named_agents_and_may_not_do_what_only_the_person_may() {
    let s = scratch("actors");
    let db = s.0.join("m.db");
    let id = remember(&db, "the deploy key rotates every 90 days");
    let events = ok(&db, &["events", "--memory", &id]);
    assert_eq!(events["items"][0]["actor"], "agent:cli", "off a terminal the CLI is an agent");

    for bad in [
        "agent:user",
        "policy",
        "agent:a\u{202e}b",
        "agent:a\u{200b}b",
        "agent:",
        "someone",
        "agent:x y",
        "agent:.",
        "agent:..",
    ] {
        let (code, _, err) = lethe(&db, &["--actor", bad, "pin", &id]);
        assert_eq!((code, err["error"]["code"].as_str()), (2, Some("invalid_input")), "{bad:?}: {err}");
    }
    let before = bytes_of(&s.0);
    for (what, args) in [
        ("claiming the person", vec!["--actor", "user", "pin", id.as_str()]),
        ("settings", vec!["settings", "quarantine_days", "0"]),
        ("settings as a named agent", vec!["--actor", "agent:ops", "settings", "threshold", "0.9"]),
        ("hard delete", vec!["delete", id.as_str(), "--hard", "--confirm"]),
    ] {
        let (code, _, err) = lethe(&db, &args);
        assert_eq!((code, err["error"]["code"].as_str()), (6, Some("forbidden")), "{what}: {err}");
    }
    assert_eq!(bytes_of(&s.0), before, "nothing written by a forbidden command");
    assert_eq!(ok(&db, &["settings", "quarantine_days"])["quarantine_days"], 30.0);
    ok(&db, &["--actor", "agent:reviewer-1.2", "pin", &id]);
    assert_eq!(ok(&db, &["events", "--memory", &id])["items"][0]["actor"], "agent:reviewer-1.2");
}

#[test]
fn the_person_at_a_terminal_confirms_settings_and_hard_deletes() {
    let s = scratch("person");
    let db = s.0.join("m.db");
    let id = remember(&db, "a memory the person will erase");
    let (code, _, err) = as_person(&db, &["settings", "quarantine_days", "7"], "no");
    assert_eq!(code, 5, "declined: {err}");
    assert!(err.contains("quarantine_days from 30"), "the question names the change: {err}");
    assert_eq!(ok(&db, &["settings", "quarantine_days"])["quarantine_days"], 30.0, "nothing changed");
    let (code, out, err) = as_person(&db, &["settings", "quarantine_days", "7"], "yes");
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["quarantine_days"], 7.0);
    let events = ok(&db, &["events", "--action", "settings"]);
    assert_eq!(events["items"][0]["actor"], "user");
    let (code, _, err) = as_person(&db, &["delete", &id, "--hard"], "");
    assert_eq!(code, 5, "a hard delete still needs --confirm: {err}");
    let (code, _, err) = as_person(&db, &["delete", &id, "--hard", "--confirm"], "");
    assert_eq!(code, 0, "{err}");
    assert_eq!(lethe(&db, &["show", &id]).0, 4);
}

/// A file as Lethe leaves it, then `sql` run on it by another program.
fn tampered(dir: &Path, name: &str, sql: &str) -> PathBuf {
    let db = dir.join(name);
    remember(&db, "a memory in a tampered file");
    let conn = lethe_engine::store::Connection::open(&db).unwrap();
    conn.execute_batch(sql).unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
    drop(conn);
    db
}

#[test]
fn files_with_foreign_triggers_are_refused_untouched_and_open_read_only() {
    let s = scratch("foreign");
    let db = tampered(
        &s.0,
        "m.db",
        "CREATE TRIGGER rewrite_actor AFTER INSERT ON lethe_action BEGIN UPDATE lethe_action SET actor = 'user' WHERE id = new.id; END;
         CREATE TRIGGER undo_pin AFTER UPDATE OF pinned ON memory_item BEGIN UPDATE memory_item SET pinned = 0 WHERE id = new.id; END;",
    );
    let before = bytes_of(&s.0);
    for args in
        [vec!["stats"], vec!["remember", "--type", "semantic", "--content", "must not be stored"], vec!["forget"]]
    {
        let (code, _, err) = lethe(&db, &args);
        let msg = err["error"]["message"].as_str().unwrap_or_default();
        assert_eq!((code, err["error"]["code"].as_str()), (1, Some("db_unavailable")), "{args:?}: {err}");
        assert!(msg.contains("rewrite_actor") && msg.contains("undo_pin") && msg.contains("--read-only"), "{msg}");
    }
    assert_eq!(bytes_of(&s.0), before, "the refused file is byte for byte as it was");
    let listed = ok(&db, &["--read-only", "list"]);
    assert_eq!(listed["total"], 1, "{listed}");
    let (code, _, err) = lethe(&db, &["--read-only", "pin", listed["items"][0]["id"].as_str().unwrap()]);
    assert_eq!(code, 2, "--read-only refuses writes: {err}");
    assert_eq!(bytes_of(&s.0), before, "viewing wrote nothing");
}

#[test]
fn a_recursive_trigger_with_a_lowered_schema_ends_in_a_clear_error_at_once() {
    let s = scratch("recursive");
    let db = tampered(
        &s.0,
        "m.db",
        "CREATE TRIGGER spin AFTER INSERT ON lethe_schema BEGIN
           INSERT INTO lethe_schema (version, name, applied_at) VALUES (new.version + 100, 'x', 'y');
         END;
         DELETE FROM lethe_schema WHERE version > 1;",
    );
    let started = Instant::now();
    let (code, _, err) = lethe(&db, &["stats"]);
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
    assert_eq!((code, err["error"]["code"].as_str()), (1, Some("db_unavailable")), "{err}");
    assert!(err["error"]["message"].as_str().unwrap().contains("spin"), "{err}");
}

#[test]
fn a_new_store_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let s = scratch("perm");
    let db = s.0.join("nested").join("lethe").join("memory.db");
    remember(&db, "private by default");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(db.parent().unwrap()), 0o700);
    assert_eq!(mode(&s.0.join("nested")), 0o700, "every directory Lethe created");
    for f in std::fs::read_dir(db.parent().unwrap()).unwrap() {
        let p = f.unwrap().path();
        assert_eq!(mode(&p), 0o600, "{}", p.display());
    }
}

#[test]
fn a_stale_edit_is_a_conflict_and_every_edit_is_a_version() {
    let s = scratch("edit");
    let db = s.0.join("m.db");
    let id = remember(&db, "the API rate limit is 100 requests per minute");
    assert_eq!(ok(&db, &["show", &id])["version"], 1);
    let a = ok(
        &db,
        &[
            "--actor",
            "agent:a",
            "edit",
            &id,
            "--content",
            "the API rate limit is 200 per minute",
            "--expected-version",
            "1",
        ],
    );
    assert_eq!(a["version"], 2);
    let (code, _, err) = lethe(
        &db,
        &["--actor", "agent:b", "edit", &id, "--content", "the API rate limit is 50", "--expected-version", "1"],
    );
    assert_eq!((code, err["error"]["code"].as_str()), (3, Some("conflict")), "{err}");
    assert!(err["error"]["message"].as_str().unwrap().contains("current version is 2"), "{err}");
    assert_eq!(ok(&db, &["show", &id])["content"], "the API rate limit is 200 per minute", "the correction stands");
    assert_eq!(ok(&db, &["edit", &id, "--content", "the API rate limit is 300 per minute"])["version"], 3);
}

#[test]
fn one_mistyped_row_does_not_break_the_store_and_is_named() {
    let s = scratch("mistyped");
    let db = s.0.join("m.db");
    let bad = remember(&db, "a row another program damaged");
    for i in 0..4 {
        remember(&db, &format!("healthy memory number {i} about topic {}", i * 7));
    }
    let conn = lethe_engine::store::Connection::open(&db).unwrap();
    conn.execute("UPDATE memory_item SET view_count = 1.5, pinned = 'true' WHERE id = ?1", [&bad]).unwrap();
    drop(conn);
    let listed = ok(&db, &["list"]);
    assert_eq!(listed["total"], 5, "{listed}");
    let named: Vec<(&str, &str)> = listed["mistyped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_str().unwrap(), m["column"].as_str().unwrap()))
        .collect();
    assert!(named.contains(&(bad.as_str(), "view_count")) && named.contains(&(bad.as_str(), "pinned")), "{named:?}");
    let stats = ok(&db, &["stats"]);
    assert_eq!(stats["mistyped"][0]["id"], bad.as_str());
    assert_eq!(ok(&db, &["show", &bad])["view_count"], 1);
    let out = Command::new(env!("CARGO_BIN_EXE_lethe")).arg("--db").arg(&db).arg("export").output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 5);
    ok(&db, &["forget", "--dry-run"]);
}

#[test]
fn recall_counts_repeated_words_once_and_says_what_it_dropped() {
    let s = scratch("words");
    let db = s.0.join("m.db");
    remember(&db, "zebra crossings are painted white");
    // 70 copies of one word and then the word that matters: one distinct word each.
    let query = format!("{} zebra", "the ".repeat(70));
    let out = ok(&db, &["recall", &query]);
    assert!(out.get("dropped_words").is_none(), "{out}");
    assert_eq!(out["results"].as_array().unwrap().len(), 1);
    let long: Vec<String> = (0..70).map(|i| format!("w{i}")).collect();
    let out = ok(&db, &["recall", &long.join(" ")]);
    assert_eq!(out["dropped_words"], serde_json::json!(["w64", "w65", "w66", "w67", "w68", "w69"]));
    assert!(out["notice"].as_str().unwrap().contains("64"));
}

#[test]
fn import_refuses_future_dates_and_quarantines_deleted_lines_as_of_now() {
    let s = scratch("import");
    let db = s.0.join("m.db");
    remember(&db, "a memory before the import");
    let future = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let file = s.0.join("lines.jsonl");
    std::fs::write(
        &file,
        format!("{{\"type\":\"semantic\",\"content\":\"fine line\"}}\n{{\"type\":\"working\",\"content\":\"young for ever\",\"created_at\":\"{future}\"}}\n"),
    )
    .unwrap();
    let before = bytes_of(&s.0);
    let (code, _, err) = lethe(&db, &["import", file.to_str().unwrap()]);
    assert_eq!((code, err["error"]["code"].as_str()), (2, Some("invalid_input")), "{err}");
    let msg = err["error"]["message"].as_str().unwrap();
    assert!(msg.contains("line 2") && msg.contains("future"), "{msg}");
    assert_eq!(bytes_of(&s.0), before, "nothing of the rejected file is written");
    std::fs::write(
        &file,
        "{\"type\":\"episodic\",\"content\":\"deleted long ago elsewhere\",\"is_deleted\":true,\"deleted_at\":\"1970-01-01T00:00:00Z\"}\n",
    )
    .unwrap();
    ok(&db, &["import", file.to_str().unwrap()]);
    let q = ok(&db, &["quarantine"]);
    assert!(q["items"][0]["days_left"].as_f64().unwrap() > 29.0, "quarantined as of now: {q}");
    assert!(ok(&db, &["forget"])["purged"].as_array().unwrap().is_empty());
}

#[test]
fn the_person_at_a_terminal_is_audited_as_via_terminal() {
    let s = scratch("via");
    let db = s.0.join("m.db");
    let id = remember(&db, "a memory erased from a terminal");
    let (code, _, err) = as_person(&db, &["settings", "quarantine_days", "7"], "yes");
    assert_eq!(code, 0, "{err}");
    let ev = &ok(&db, &["events", "--action", "settings"])["items"][0];
    assert_eq!((ev["actor"].as_str(), ev["after"]["via"].as_str()), (Some("user"), Some("terminal")), "{ev}");
    let (code, _, err) = as_person(&db, &["delete", &id, "--hard", "--confirm"], "");
    assert_eq!(code, 0, "{err}");
    let ev = &ok(&db, &["events", "--action", "hard"])["items"][0];
    assert_eq!((ev["actor"].as_str(), ev["metadata"]["via"].as_str()), (Some("user"), Some("terminal")), "{ev}");
    // An agent's rows carry no `via`: it is the person's channel only.
    let other = remember(&db, "an agent's memory");
    ok(&db, &["pin", &other]);
    let ev = &ok(&db, &["events", "--action", "pin"])["items"][0];
    assert_eq!(ev["actor"], "agent:cli");
    assert!(ev["after"].get("via").is_none(), "{ev}");
}

#[test]
fn with_person_ops_window_only_a_terminal_may_not_change_settings_or_hard_delete() {
    let s = scratch("window-only");
    let db = s.0.join("m.db");
    let id = remember(&db, "a memory only the window may erase");
    // Turning it on is a setting like the others (from the terminal, while it is off).
    let (code, out, err) = as_person(&db, &["settings", "person_ops_window_only", "true"], "yes");
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["person_ops_window_only"], true);
    let ev = &ok(&db, &["events", "--action", "settings"])["items"][0];
    assert_eq!(ev["before"]["person_ops_window_only"], false, "audited like every setting: {ev}");
    assert_eq!(ev["after"]["person_ops_window_only"], true, "{ev}");

    let before = bytes_of(&s.0);
    for (what, args, answer) in [
        ("a setting", vec!["settings", "quarantine_days", "0"], "yes"),
        ("turning the setting off", vec!["settings", "person_ops_window_only", "false"], "yes"),
        ("a hard delete", vec!["delete", id.as_str(), "--hard", "--confirm"], ""),
    ] {
        let (code, _, err) = as_person(&db, &args, answer);
        assert_eq!(code, 6, "{what}: {err}");
        assert!(err.contains("forbidden") && err.contains("person_ops_window_only"), "{what}: {err}");
    }
    assert_eq!(bytes_of(&s.0), before, "nothing written by a refused command");
    assert_eq!(ok(&db, &["show", &id])["id"], id.as_str());

    // The window (this process declares itself the window) still may.
    lethe_engine::actor::set_via(lethe_engine::actor::Via::Window);
    let mut conn = lethe_engine::store::open(&db).unwrap();
    let settings = lethe_engine::Settings::load(&conn).unwrap().with_value("quarantine_days", "7").unwrap();
    lethe_engine::Settings::store(&mut conn, &settings, "user", chrono::Utc::now()).unwrap();
    lethe_engine::lifecycle::hard_delete(&mut conn, &id, true, None, "user", chrono::Utc::now()).unwrap();
    drop(conn);
    let ev = &ok(&db, &["events", "--action", "hard"])["items"][0];
    assert_eq!(ev["metadata"]["via"], "window", "{ev}");
}

#[test]
fn an_agents_soft_delete_without_a_reason_is_recorded_as_the_agents() {
    let s = scratch("agent-delete");
    let db = s.0.join("m.db");
    let id = remember(&db, "a memory an agent deletes");
    ok(&db, &["--actor", "agent:sweeper", "delete", &id]);
    let ev = &ok(&db, &["events", "--action", "soft"])["items"][0];
    assert_eq!(ev["reason"], "deleted by agent:sweeper without a reason", "{ev}");
    assert_eq!(ev["policy"], "agent", "{ev}");
}

#[test]
fn a_read_only_session_whose_view_recurses_ends_with_a_clear_error() {
    let s = scratch("recursive-view");
    let db = tampered(
        &s.0,
        "m.db",
        "ALTER TABLE memory_item RENAME TO memory_item_kept;
         CREATE VIEW memory_item AS
           WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r)
           SELECT m.rowid AS rowid, m.* FROM r, memory_item_kept m WHERE r.x < 0;",
    );
    let before = bytes_of(&s.0);
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_lethe"))
        .env("LETHE_READ_ONLY_DEADLINE_SECS", "2")
        .arg("--db")
        .arg(&db)
        .args(["--read-only", "list"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = started.elapsed();
    let err: Value = serde_json::from_slice(&out.stderr).unwrap_or(Value::Null);
    assert!(took < Duration::from_secs(15), "took {took:?}");
    assert_eq!((out.status.code(), err["error"]["code"].as_str()), (Some(1), Some("db_unavailable")), "{err}");
    assert!(err["error"]["message"].as_str().unwrap().contains("longer than 2 s"), "{err}");
    assert_eq!(bytes_of(&s.0), before, "the file is as it was");
}

#[test]
fn a_dangling_symlink_as_the_store_is_refused_and_nothing_is_created() {
    let s = scratch("dangling");
    let target = s.0.join("elsewhere").join("target.db");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let link = s.0.join("link.db");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let (code, _, err) = lethe(&link, &["remember", "--type", "semantic", "--content", "through a dangling link"]);
    assert_eq!((code, err["error"]["code"].as_str()), (2, Some("invalid_input")), "{err}");
    assert!(err["error"]["message"].as_str().unwrap().contains("symbolic link"), "{err}");
    assert!(!target.exists(), "the link's target was not created");
    // A link to an existing store works as before.
    remember(&target, "the real store");
    assert_eq!(ok(&link, &["list"])["total"], 1);
}

#[test]
fn sqlite_uris_and_memory_databases_are_refused() {
    let s = scratch("uri");
    let in_memory = format!("file:{}?mode=memory", s.0.join("m.db").display());
    for db in [in_memory.as_str(), ":memory:", "file::memory:", "FILE:m.db"] {
        for args in [vec!["remember", "--type", "semantic", "--content", "kept nowhere"], vec!["--read-only", "list"]] {
            let (code, out, err) = lethe(Path::new(db), &args);
            assert_eq!((code, err["error"]["code"].as_str()), (2, Some("invalid_input")), "{db} {args:?}: {out} {err}");
        }
    }
    assert!(std::fs::read_dir(&s.0).unwrap().next().is_none(), "nothing created");
}

/// Removes the immutable attribute however the test ends.
struct Immutable(PathBuf);

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

#[test]
fn an_immutable_file_and_a_read_only_mount_can_be_read() {
    let s = scratch("immutable");
    let db = s.0.join("m.db");
    let id = remember(&db, "a memory on a file nobody may write");
    remember(&db, "another memory, so that scoring has neighbours");
    // Setting the attribute needs CAP_LINUX_IMMUTABLE (root in the test container).
    let set = Command::new("chattr").arg("+i").arg(&db).stderr(Stdio::null()).status();
    if !set.is_ok_and(|st| st.success()) {
        eprintln!("chattr +i is not permitted here: the immutable-file case is not run");
        return;
    }
    let _guard = Immutable(db.clone());
    let listed = ok(&db, &["list"]);
    assert_eq!(listed["total"], 2, "a read command skips storing what it found: {listed}");
    assert_eq!(ok(&db, &["--read-only", "list"])["total"], 2);
    assert_eq!(ok(&db, &["show", &id])["id"], id.as_str());
    drop(_guard);

    // A read-only mount of the store's directory (a mount namespace of its own), without the
    // WAL index SQLite would need to create there.
    let _ = std::fs::remove_file(s.0.join("m.db-shm"));
    let cmd = format!(
        "mount --bind -o ro {dir} {dir} && exec {lethe} --db {db} --read-only list",
        dir = shell_quote(s.0.to_str().unwrap()),
        lethe = shell_quote(env!("CARGO_BIN_EXE_lethe")),
        db = shell_quote(db.to_str().unwrap()),
    );
    let out = Command::new("unshare").args(["-m", "sh", "-c", &cmd]).stdin(Stdio::null()).output();
    match out {
        Ok(out) if !String::from_utf8_lossy(&out.stderr).contains("mount:") => {
            let listed: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(listed["total"], 2, "{listed}");
        }
        _ => eprintln!("a read-only bind mount is not permitted here: that case is not run"),
    }
}
