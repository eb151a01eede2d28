//! The `lethe` contract (DESIGN §10) through the real binary: JSON out, JSON errors,
//! exit codes, nothing written on error.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn db() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lethe-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{}.db", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()))
}

fn lethe(db: &Path, args: &[&str]) -> (i32, Value, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_lethe")).arg("--db").arg(db).args(args).output().unwrap();
    let parse = |b: &[u8]| serde_json::from_slice(b).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), parse(&out.stdout), parse(&out.stderr))
}

#[test]
fn remember_delete_restore_round_trip() {
    let db = db();
    let (code, out, _) = lethe(&db, &["remember", "--type", "semantic", "--content", "Auth uses Ed25519"]);
    assert_eq!(code, 0);
    let id = out["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("mem_") && out["stored"] == true && out["version"] == 1);
    let now = ["--now", "2027-01-01T00:00:00Z"];
    let (_, before, _) = lethe(&db, &[&now[..], &["show", &id]].concat());
    assert_eq!(lethe(&db, &["delete", &id]).0, 0);
    assert_eq!(lethe(&db, &["restore", &id]).0, 0);
    let (_, after, _) = lethe(&db, &[&now[..], &["show", &id]].concat());
    assert_eq!(before, after, "show is identical after delete + restore");
    for key in [
        "features",
        "components",
        "forget_score",
        "threshold",
        "reasons",
        "would_forget",
        "never_forgettable",
        "projected_forget_at",
    ] {
        assert!(after.get(key).is_some(), "show carries {key}");
    }
    let (_, events, _) = lethe(&db, &["events", "--memory", &id]);
    let actions: Vec<&str> =
        events["items"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert!(actions.contains(&"soft") && actions.contains(&"restore"), "{actions:?}");
    // A hard delete is the person's (tests/trust.rs runs it on a terminal); an agent may not.
    let (code, _, err) = lethe(&db, &["delete", &id, "--hard", "--confirm"]);
    assert_eq!(code, 6, "an agent may not delete for ever");
    assert_eq!(err["error"]["code"], "forbidden");
    assert_eq!(lethe(&db, &["show", &id]).0, 0, "still there");
}

#[test]
fn invalid_input_exits_2_with_json_and_leaves_the_file_unchanged() {
    let db = db();
    lethe(&db, &["remember", "--type", "semantic", "--content", "seed"]);
    let snapshot = || {
        let export =
            Command::new(env!("CARGO_BIN_EXE_lethe")).arg("--db").arg(&db).arg("export").output().unwrap().stdout;
        let (_, events, _) = lethe(&db, &["events"]);
        (export, events)
    };
    let before = snapshot();
    let big = "x".repeat(2 * 1024 * 1024);
    let big_file = db.with_extension("big.txt");
    std::fs::write(&big_file, &big).unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["remember", "--type", "foo", "--content", "x"],
        vec!["remember", "--type", "semantic", "--content", "x", "--importance", "2"],
        vec!["remember", "--type", "semantic", "--content", ""],
        vec!["remember", "--type", "semantic", "--content-file", big_file.to_str().unwrap()],
        vec!["remember", "--type", "procedural", "--content", "x", "--steps", "{\"a\":1}"],
        vec!["remember", "--type", "procedural", "--content", "x", "--steps", "not json"],
        vec!["remember", "--type", "semantic", "--content", "x", "--unknown-flag"],
        vec!["importance", "mem_nope", "NaN"],
    ];
    for args in cases {
        let (code, _, err) = lethe(&db, &args);
        assert_eq!(code, 2, "{args:?} → exit 2");
        assert_eq!(err["error"]["code"], "invalid_input", "{args:?}: {err}");
        assert!(err["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    assert_eq!(snapshot(), before, "the file is unchanged");
    assert_eq!(lethe(&db, &["show", "mem_missing"]).0, 4);
}

#[test]
fn procedure_conflict_exits_3_and_trivial_is_not_stored() {
    let db = db();
    let (_, out, _) = lethe(
        &db,
        &["remember", "--type", "procedural", "--content", "Deploy", "--steps", "[\"a\",\"b\"]", "--task-goal", "ship"],
    );
    let id = out["id"].as_str().unwrap().to_string();
    let (code, out, _) = lethe(
        &db,
        &["remember", "--type", "procedural", "--content", "Deploy v2", "--memory-id", &id, "--expected-version", "1"],
    );
    assert_eq!((code, out["version"].as_i64()), (0, Some(2)));
    let (code, _, err) = lethe(
        &db,
        &["remember", "--type", "procedural", "--content", "Deploy v3", "--memory-id", &id, "--expected-version", "1"],
    );
    assert_eq!(code, 3);
    assert!(err["error"]["message"].as_str().unwrap().contains("current version is 2"));
    let (code, out, _) = lethe(&db, &["remember", "--type", "episodic", "--content", "ok"]);
    assert_eq!((code, out["stored"].as_bool()), (0, Some(false)));
    assert!(out["reason"].as_str().unwrap().contains("trivial"));
}

#[test]
fn export_then_import_reproduces_every_field() {
    let src = db();
    assert_eq!(lethe(&src, &["demo", "--count", "60"]).0, 0);
    let out = Command::new(env!("CARGO_BIN_EXE_lethe")).arg("--db").arg(&src).arg("export").output().unwrap();
    assert!(out.status.success());
    let file = src.with_extension("jsonl");
    std::fs::write(&file, &out.stdout).unwrap();
    let dst = db();
    let (code, report, _) = lethe(&dst, &["import", file.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(report["imported"], report["read"]);
    let again = Command::new(env!("CARGO_BIN_EXE_lethe")).arg("--db").arg(&dst).arg("export").output().unwrap();
    assert_eq!(String::from_utf8(again.stdout).unwrap(), String::from_utf8(out.stdout).unwrap(), "field for field");
}

/// A memento file (early and 1.36) opens in the CLI: show, score, pin, soft delete,
/// restore and the audit work, and memento's own FTS still finds the row.
#[test]
fn memento_files_open_and_take_pin_delete_restore() {
    for kind in ["memento-0.1", "memento-1.36"] {
        let db = db();
        let (code, _, err) = lethe(&db, &["fixture", kind, db.to_str().unwrap()]);
        assert_eq!(code, 0, "{kind}: {err}");
        let (code, list, err) = lethe(&db, &["list", "--limit", "5"]);
        assert_eq!(code, 0, "{kind}: {err}");
        let id = list["items"][0]["id"].as_str().unwrap().to_string();
        let (code, shown, _) = lethe(&db, &["show", &id]);
        assert_eq!(code, 0);
        assert!(shown["forget_score"].is_number(), "{kind}: scored");
        for cmd in ["pin", "delete", "restore", "unpin"] {
            let (code, _, err) = lethe(&db, &[cmd, &id]);
            assert_eq!(code, 0, "{kind} {cmd}: {err}");
        }
        let (_, events, _) = lethe(&db, &["events", "--memory", &id]);
        let actions: Vec<&str> =
            events["items"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
        for a in ["pin", "soft", "restore", "unpin"] {
            assert!(actions.contains(&a), "{kind}: {a} audited in {actions:?}");
        }
        let word = shown["content"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .find(|w| w.len() > 4 && w.chars().all(char::is_alphanumeric))
            .unwrap()
            .to_string();
        let (code, hits, _) = lethe(&db, &["recall", &word]);
        assert_eq!(code, 0);
        assert!(
            hits["results"].as_array().unwrap().iter().any(|h| h["id"] == id.as_str()),
            "{kind}: FTS still finds {id} by {word}"
        );
    }
}
