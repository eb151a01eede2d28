//! Issue #21 through the real binary: end-session (+ recall --task-kind), the dialogue lint
//! in show/list, batch archive and partial restore.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use sha2::{Digest, Sha256};

fn db() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lethe-cli-seeds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{}.db", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()))
}

fn lethe(db: &Path, args: &[&str]) -> (i32, Value, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_lethe")).arg("--db").arg(db).args(args).output().unwrap();
    let parse = |b: &[u8]| serde_json::from_slice(b).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), parse(&out.stdout), parse(&out.stderr))
}

fn ok(db: &Path, args: &[&str]) -> Value {
    let (code, out, err) = lethe(db, args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

fn ids(v: &Value) -> Vec<String> {
    v["results"].as_array().unwrap().iter().map(|h| h["id"].as_str().unwrap().to_string()).collect()
}

#[test]
fn end_session_then_recall_with_and_without_the_task_kind() {
    let db = db();
    let w = ok(
        &db,
        &[
            "remember",
            "--type",
            "working",
            "--session",
            "s9",
            "--content",
            "the flaky migration test needs a fresh schema",
        ],
    );
    let w = w["id"].as_str().unwrap().to_string();
    let rules = db.with_extension("rules.jsonl");
    std::fs::write(
        &rules,
        "{\"content\":\"Migration tests start from a fresh schema\",\"importance\":0.7,\"tags\":[\"ci\"]}\n",
    )
    .unwrap();
    // A bad rules file: exit 2, nothing written.
    let bad = db.with_extension("bad.jsonl");
    std::fs::write(&bad, "{\"content\":\"fine\"}\n{\"content\":\"x\",\"unknown\":true}\n").unwrap();
    let (code, _, err) = lethe(&db, &["end-session", "s9", "--task-kind", "ci-fix", "--rules", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(err["error"]["code"], "invalid_input");
    assert_eq!(ok(&db, &["show", &w])["type"], "working", "nothing moved");

    let out = ok(&db, &["end-session", "s9", "--task-kind", "ci-fix", "--rules", rules.to_str().unwrap()]);
    assert_eq!(out["task_logs"], serde_json::json!([w]));
    assert_eq!(out["already_ended"], false);
    let rule = out["rules"][0]["id"].as_str().unwrap().to_string();
    let shown = ok(&db, &["show", &w]);
    assert_eq!(shown["type"], "episodic");
    assert_eq!(shown["task_kind"], "ci-fix");
    assert_eq!(ok(&db, &["show", &rule])["type"], "semantic");

    let global = ids(&ok(&db, &["recall", "flaky migration fresh schema"]));
    assert!(!global.contains(&w) && global.contains(&rule), "{global:?}");
    let same = ids(&ok(&db, &["recall", "flaky migration fresh schema", "--task-kind", "ci-fix"]));
    assert!(same.contains(&w), "{same:?}");

    let again = ok(&db, &["end-session", "s9", "--task-kind", "ci-fix", "--rules", rules.to_str().unwrap()]);
    assert_eq!(again["already_ended"], true);
    assert_eq!(again["rules"], out["rules"]);
    let (_, ev, _) = lethe(&db, &["events", "--action", "end_session"]);
    assert_eq!(ev["items"].as_array().unwrap().len(), 1, "the second end wrote no event");
    let sessions = ok(&db, &["sessions"]);
    assert_eq!(sessions["task_kinds"][0]["task_kind"], "ci-fix");
    // Writes refuse --now; so does end-session.
    assert_eq!(lethe(&db, &["--now", "2026-01-01T00:00:00Z", "end-session", "s9", "--task-kind", "x"]).0, 2);
}

#[test]
fn show_and_list_carry_the_dialogue_lint() {
    let db = db();
    let chat = ok(&db, &["remember", "--type", "semantic", "--content", "User: hi! can you tell me how you deploy?"]);
    let chat = chat["id"].as_str().unwrap().to_string();
    let rule = ok(&db, &["remember", "--type", "semantic", "--content", "Deploys go through staging first."]);
    let shown = ok(&db, &["show", &chat]);
    assert_eq!(shown["dialogue"]["flagged"], true);
    assert!(shown["dialogue"]["reasons"].as_array().unwrap().iter().any(|r| r == "speaker prefix"));
    assert_eq!(ok(&db, &["show", rule["id"].as_str().unwrap()])["dialogue"]["flagged"], false);
    let list = ok(&db, &["list", "--needs-extraction"]);
    assert_eq!(list["total"], 1);
    assert_eq!(list["items"][0]["id"], chat.as_str());
}

#[test]
fn batch_archive_and_partial_restore_on_the_command_line() {
    let db = db();
    let mut obs = Vec::new();
    for i in 0..3 {
        let text = format!("line 1 of {i}\nline 2 of {i}\nline 3 of {i}\n");
        let v = ok(&db, &["remember", "--type", "episodic", "--source", "tool:bash", "--content", &text]);
        obs.push((v["id"].as_str().unwrap().to_string(), text));
    }
    let memos = db.with_extension("memos.json");
    std::fs::write(&memos, "[\"first\", \"second\"]").unwrap();
    let (code, _, err) =
        lethe(&db, &["archive", &obs[0].0, &obs[1].0, &obs[2].0, "--memo-file", memos.to_str().unwrap()]);
    assert_eq!(code, 2, "two memos for three ids: {err}");
    let (code, _, _) = lethe(&db, &["archive", &obs[0].0, "mem_nope", "--memo", "x"]);
    assert_eq!(code, 4);
    assert!(ok(&db, &["show", &obs[0].0])["archive_no"].is_null(), "all or nothing");
    std::fs::write(&memos, "[\"first\", \"second\", \"third\"]").unwrap();
    let out = ok(&db, &["archive", &obs[0].0, &obs[1].0, &obs[2].0, "--memo-file", memos.to_str().unwrap()]);
    let items = out["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    let no = items[1]["archive_no"].as_i64().unwrap().to_string();
    let span = ok(&db, &["unarchive", &no, "--lines", "2:3"]);
    let want = "line 2 of 1\nline 3 of 1\n";
    assert_eq!(span["text"], want);
    let sha: String = Sha256::digest(want.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(span["sha256"], sha);
    assert_eq!(span["start"], 12);
    let bytes = ok(&db, &["unarchive", &no, "--bytes", "0:4"]);
    assert_eq!(bytes["text"], "line");
    assert!(ok(&db, &["show", &obs[1].0])["content"].as_str().unwrap().starts_with("[Archive#"), "not restored");
    // A span is a read: --now is allowed; a full restore is a write.
    assert_eq!(lethe(&db, &["--now", "2026-01-01T00:00:00Z", "unarchive", &no, "--lines", "1:1"]).0, 0);
    assert_eq!(lethe(&db, &["unarchive", &no, "--lines", "9:9"]).0, 2);
    let back = ok(&db, &["unarchive", &no]);
    assert_eq!(back["content"], obs[1].1.as_str(), "full restore byte-exact");
}
