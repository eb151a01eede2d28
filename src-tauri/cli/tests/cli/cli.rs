//! The `lethe` contract (docs/cli.md) through the real binary: JSON out, JSON errors,
//! exit codes, nothing written on error.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

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
    assert!(report["quarantined"].as_u64().unwrap() > 0, "the demo has quarantined memories: {report}");
    let again = Command::new(env!("CARGO_BIN_EXE_lethe")).arg("--db").arg(&dst).arg("export").output().unwrap();
    // Deleted memories re-enter quarantine as of the import: a file's old
    // deletion date must not let the next batch purge them at once. Everything else is
    // reproduced field for field.
    let lines = |b: &[u8]| -> Vec<Value> {
        String::from_utf8(b.to_vec()).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    let (before, mut after) = (lines(&out.stdout), lines(&again.stdout));
    assert_eq!(before.len(), after.len());
    for (b, a) in before.iter().zip(after.iter_mut()) {
        if a["is_deleted"] == json!(true) {
            let at = a["deleted_at"].as_str().unwrap();
            assert!(at > "2026-11-01", "quarantined as of the import, not {at}");
            a["deleted_at"] = b["deleted_at"].clone();
        }
    }
    assert_eq!(before, after, "field for field");
}

/// Issue #16: a line needs only content and type; everything else is defaulted as remember
/// would, with an id generated; trivial lines are reported, not stored; an existing id is
/// skipped and counted; --dry-run writes nothing.
#[test]
fn import_takes_minimal_lines_and_dry_runs() {
    let dst = db();
    let file = dst.with_extension("jsonl");
    std::fs::write(
        &file,
        concat!(
            "{\"content\":\"Kafka topics are partitioned by tenant id\",\"type\":\"semantic\"}\n",
            "\n",
            "{\"content\":\"thanks\",\"type\":\"episodic\"}\n",
            "{\"id\":\"mem_fixed-1\",\"content\":\"Deploy with make ship\",\"type\":\"procedural\",\"steps\":[\"make ship\"],\"importance\":0.8}\n",
        ),
    )
    .unwrap();
    let (code, dry, _) = lethe(&dst, &["import", "--dry-run", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{dry}");
    assert_eq!((dry["dry_run"].clone(), dry["imported"].clone()), (json!(true), json!(2)));
    assert_eq!(lethe(&dst, &["list"]).1["total"], json!(0), "a dry run writes nothing");
    let (code, r, _) = lethe(&dst, &["import", file.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!((r["read"].clone(), r["imported"].clone(), r["generated_ids"].clone()), (json!(3), json!(2), json!(1)));
    assert_eq!(r["trivial_lines"], json!([3]), "line 3 is a filler phrase");
    let m = lethe(&dst, &["show", "mem_fixed-1"]).1;
    assert_eq!(
        (m["importance"].clone(), m["privacy_scope"].clone(), m["version"].clone()),
        (json!(0.8), json!("private"), json!(1))
    );
    let hits = lethe(&dst, &["recall", "kafka partitions tenant"]).1;
    assert!(hits["results"][0]["content"].as_str().unwrap().starts_with("Kafka"), "searchable: {hits}");
    let (_, r, _) = lethe(&dst, &["import", file.to_str().unwrap()]);
    assert_eq!(
        (r["imported"].clone(), r["skipped_existing"].clone()),
        (json!(1), json!(1)),
        "the new-id line is new again"
    );
}

/// Ten bad lines: each error names its line, and nothing of the file is written (the good
/// lines around them included).
#[test]
fn import_names_every_bad_line_and_writes_nothing() {
    let dst = db();
    let file = dst.with_extension("jsonl");
    let good = r#"{"content":"a good line about postgres vacuum","type":"semantic"}"#;
    let bad = [
        r#"{"content":"no type"}"#,
        r#"{"type":"semantic"}"#,
        r#"{"content":"x y","type":"semantik"}"#,
        r#"{"content":"x y","type":"semantic","colour":"blue"}"#,
        r#"{"content":"x y","type":"semantic","importance":2}"#,
        r#"{"content":"x y","type":"semantic","created_at":"2999-01-01T00:00:00Z"}"#,
        r#"{"content":"x y","type":"semantic","id":"not-a-mem-id"}"#,
        r#"{"content":"x y","type":"semantic","session_id":"SESSION_LONG"}"#,
        r#"{"content":"x y","type":"semantic","task_goal":"only for procedures"}"#,
        "{not json",
    ];
    let long = "s".repeat(300);
    let mut text = format!("{good}\n");
    for b in bad {
        text.push_str(&b.replace("SESSION_LONG", &long));
        text.push('\n');
    }
    text.push_str(good);
    std::fs::write(&file, text).unwrap();
    let (code, _, err) = lethe(&dst, &["import", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    let msg = err["error"]["message"].as_str().unwrap();
    assert!(msg.contains("10 bad lines"), "{msg}");
    for line in 2..=11 {
        assert!(msg.contains(&format!("line {line}: ")), "line {line} named: {msg}");
    }
    assert!(!msg.contains("line 1: ") && !msg.contains("line 12: "), "good lines are not named: {msg}");
    assert_eq!(lethe(&dst, &["list"]).1["total"], json!(0), "nothing written");
}

/// A memento file (early and 1.36) opens in the CLI: show, score, pin, soft delete,
/// restore and the audit work, and memento's own FTS still finds the row.
#[test]
fn memento_files_open_and_take_pin_delete_restore() {
    for kind in ["memento-0.1", "memento-1.36"] {
        let db = db();
        lethe_testkit::fixtures::build_memento(&db, kind.parse().unwrap()).unwrap();
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

/// A memento 0.1.0 file (memento's own schema.sql) holding rows its schema allows but Lethe
/// cannot read — no id, a BLOB content, an integer time — lists, scores, recalls and exports
/// the others and names the three under `mistyped`; none of them is an `internal` error.
#[test]
fn memento_rows_lethe_cannot_read_are_named_and_skipped() {
    use lethe_testkit::fixtures::{build_memento_with, memento_connection, MementoSchema};
    let db = db();
    build_memento_with(&db, MementoSchema::Schema1_5_1, 12).unwrap();
    memento_connection(&db)
        .unwrap()
        .execute_batch(
            "INSERT INTO memory_item (id, type, content, created_at) VALUES (NULL, 'semantic', 'no id topic1', CURRENT_TIMESTAMP);
             INSERT INTO memory_item (id, type, content, created_at) VALUES ('mem_blob', 'semantic', X'746f70696331', CURRENT_TIMESTAMP);
             INSERT INTO memory_item (id, type, content, created_at) VALUES ('mem_int', 'semantic', 'int time topic1', 1735722000);",
        )
        .unwrap();
    for args in
        [&["list", "--limit", "100"][..], &["stats"], &["forget", "--dry-run"], &["recall", "topic1"], &["scan"]]
    {
        let (code, out, err) = lethe(&db, args);
        assert_eq!(code, 0, "{args:?}: {err}");
        if args[0] == "list" {
            assert_eq!(out["total"], 12, "{out}");
        }
        if args[0] == "recall" {
            let ids: Vec<&str> = out["results"].as_array().unwrap().iter().map(|h| h["id"].as_str().unwrap()).collect();
            assert!(!ids.is_empty() && ids.iter().all(|i| i.starts_with("mem_17")), "{ids:?}");
        }
        if args[0] == "list" || args[0] == "stats" {
            let mut found: Vec<String> = out["mistyped"]
                .as_array()
                .unwrap_or_else(|| panic!("{args:?}: {out}"))
                .iter()
                .map(|m| {
                    format!(
                        "{}/{}/{}",
                        m["id"].as_str().unwrap(),
                        m["column"].as_str().unwrap(),
                        m["found"].as_str().unwrap()
                    )
                })
                .collect();
            found.sort();
            assert_eq!(found, ["/id/null", "mem_blob/content/blob", "mem_int/created_at/integer"], "{args:?}");
        }
    }
    for id in ["mem_blob", "mem_int"] {
        let (code, _, err) = lethe(&db, &["show", id]);
        assert_eq!(code, 2, "{id}: a typed error, not an internal one: {err}");
        assert_eq!(err["error"]["code"], "invalid_input", "{err}");
    }
}

/// (memories, stored signatures, stored neighbour lists) of a file.
fn derived_counts(db: &Path) -> (i64, i64, i64) {
    let c = rusqlite::Connection::open(db).unwrap();
    let n = |sql: &str| c.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
    (
        n("SELECT COUNT(*) FROM memory_item"),
        n("SELECT COUNT(*) FROM lethe_signature"),
        n("SELECT COUNT(*) FROM lethe_neighbour"),
    )
}

/// `lethe import` leaves the signatures and neighbour lists of what it imported stored (with
/// progress on stderr), so the first read has nothing to search; a dry run of `forget` keeps
/// what it searched when it may write, and writes nothing under `--read-only`.
#[test]
fn import_and_dry_run_keep_what_they_derived() {
    let src = db();
    for i in 0..30 {
        let content = format!("Deploy of billing v2.{i} failed on a missing env var number {}", i % 7);
        assert_eq!(lethe(&src, &["remember", "--type", "episodic", "--content", &content]).0, 0);
    }
    let dump = src.with_extension("jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_lethe")).arg("--db").arg(&src).arg("export").output().unwrap();
    std::fs::write(&dump, &out.stdout).unwrap();

    let dst = db();
    let out = Command::new(env!("CARGO_BIN_EXE_lethe"))
        .arg("--db")
        .arg(&dst)
        .args(["import", dump.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let progress: Vec<Value> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    assert!(progress.iter().any(|p| p["progress"]["step"] == "import"), "{progress:?}");
    assert!(progress.iter().all(|p| p["progress"]["done"].as_u64() <= p["progress"]["total"].as_u64()));
    let (n, signed, listed) = derived_counts(&dst);
    assert_eq!((n, signed, listed), (30, 30, 30), "every imported memory has its signature and neighbours");

    // memento's rows come without any: a dry run searches them and keeps what it found.
    let m = db();
    lethe_testkit::fixtures::build_memento(&m, "memento-0.1".parse().unwrap()).unwrap();
    assert_eq!(lethe(&m, &["list"]).0, 0, "the file is migrated by a command that may write");
    let plain = rusqlite::Connection::open(&m).unwrap();
    plain.execute_batch("DELETE FROM lethe_neighbour; DELETE FROM lethe_signature;").unwrap();
    assert_eq!(lethe(&m, &["--read-only", "forget", "--dry-run"]).0, 0);
    assert_eq!(derived_counts(&m), (3, 0, 0), "--read-only wrote nothing");
    assert_eq!(lethe(&m, &["forget", "--dry-run"]).0, 0);
    assert_eq!(derived_counts(&m), (3, 3, 3), "the dry run kept the lists it searched");
}

/// A limit far beyond any list (here 10^17) is clamped to 1,000, as recall's is: `similar`
/// answered a panic ("capacity overflow") before.
#[test]
fn similar_takes_a_huge_limit() {
    let db = db();
    let (_, a, _) =
        lethe(&db, &["remember", "--type", "semantic", "--content", "The staging database lives on db-stage-3"]);
    lethe(&db, &["remember", "--type", "semantic", "--content", "Staging DB runs on host db-stage-3"]);
    let id = a["id"].as_str().unwrap();
    let (code, out, err) = lethe(&db, &["similar", id, "--limit", "99999999999999999"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["items"].as_array().map(Vec::len), Some(1), "{out}");
}

/// A person's pin through the CLI: off a terminal the CLI is an agent (`agent:cli`), so its
/// unpin, delete and lowered importance of a memory a person pinned are `forbidden` (exit 6,
/// the JSON error on stderr), change nothing, and `lethe events` shows each refused attempt.
#[test]
fn an_agent_cannot_undo_a_persons_pin_from_the_cli() {
    let db = db();
    let (_, out, _) =
        lethe(&db, &["remember", "--type", "semantic", "--content", "Customer data never leaves the EU region"]);
    let id = out["id"].as_str().unwrap().to_string();
    {
        let mut conn = lethe_engine::store::open(&db).unwrap();
        lethe_engine::lifecycle::pin(&mut conn, &id, "user", chrono::Utc::now()).unwrap();
    }
    let (_, before, _) = lethe(&db, &["show", &id]);
    for args in [
        vec!["unpin", &id],
        vec!["--actor", "agent:cursor", "unpin", &id],
        vec!["delete", &id, "--reason", "stale"],
        vec!["importance", &id, "0.1"],
    ] {
        let (code, out, err) = lethe(&db, &args);
        assert_eq!(code, 6, "{args:?}: {err}");
        assert_eq!(out, Value::Null, "nothing on stdout");
        assert_eq!(err["error"]["code"], "forbidden", "{err}");
        assert!(err["error"]["message"].as_str().unwrap().contains("Customer data never leaves"), "{err}");
    }
    let (code, _, err) =
        lethe(&db, &["remember", "--type", "semantic", "--content", "An agent's own rule", "--pinned"]);
    assert_eq!((code, err["error"]["code"].as_str()), (6, Some("forbidden")), "an agent's pinned remember: {err}");
    let (_, after, _) = lethe(&db, &["show", &id]);
    assert_eq!(before["pinned"], json!(true));
    assert_eq!((after["pinned"].clone(), after["importance"].clone()), (json!(true), before["importance"].clone()));
    let (_, ev, _) = lethe(&db, &["events", "--memory", &id]);
    let refused: Vec<(&str, &str)> = ev["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "refused")
        .map(|e| (e["actor"].as_str().unwrap(), e["after"]["attempted"].as_str().unwrap()))
        .collect();
    assert_eq!(
        refused,
        vec![
            ("agent:cli", "lower the importance of"),
            ("agent:cli", "quarantine"),
            ("agent:cursor", "unpin"),
            ("agent:cli", "unpin")
        ],
        "each attempt audited, newest first"
    );
}

/// A procedure recalls what it says: after an edit that adds a step (a compare-and-swap
/// update of the steps alone), `lethe recall` returns the new steps, in the text and as
/// `steps`; a text a person wrote by hand is not rewritten.
#[test]
fn after_a_procedure_edit_recall_returns_the_new_steps() {
    let db = db();
    let steps = r#"["Freeze the pipeline","kubectl rollout undo deployment/api","Post in #incidents"]"#;
    let (code, out, err) = lethe(
        &db,
        &[
            "remember",
            "--type",
            "procedural",
            "--content",
            "Roll back a failed deploy: Freeze the pipeline; kubectl rollout undo deployment/api; Post in #incidents",
            "--task-goal",
            "Roll back a failed deploy",
            "--steps",
            steps,
            "--workflow-name",
            "deploy-rollback",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let id = out["id"].as_str().unwrap().to_string();
    let new_steps = r#"["Freeze the pipeline","kubectl rollout undo deployment/api","Check /health on every pod","Post in #incidents"]"#;
    let (code, _, err) = lethe(
        &db,
        &["remember", "--type", "procedural", "--memory-id", &id, "--expected-version", "1", "--steps", new_steps],
    );
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = lethe(&db, &["recall", "roll back a failed deploy", "--limit", "1"]);
    assert_eq!(code, 0, "{err}");
    let hit = &out["results"][0];
    assert_eq!(hit["id"], json!(id));
    assert_eq!(
        hit["content"],
        json!(
            "Roll back a failed deploy: Freeze the pipeline; kubectl rollout undo deployment/api; Check /health on every pod; Post in #incidents"
        ),
        "the text follows the new version"
    );
    assert_eq!(hit["steps"], serde_json::from_str::<Value>(new_steps).unwrap(), "the result carries the steps");
    assert_eq!(hit["task_goal"], json!("Roll back a failed deploy"));
    let (_, found, _) = lethe(&db, &["recall", "health on every pod"]);
    assert_eq!(found["results"][0]["id"], json!(id), "the new step's words find it");
}

/// `lethe forget` names its run; `lethe events --runs` lists it; `lethe forget --undo RUN`
/// brings back everything it quarantined and says so; a malformed run id is invalid input.
#[test]
fn a_forget_run_is_listed_and_undone_from_the_cli() {
    let db = db();
    let mut ids = Vec::new();
    for text in ["scratch: staging port is 8081", "scratch: the flaky test is test_login"] {
        let (_, out, _) =
            lethe(&db, &["remember", "--type", "working", "--content", text, "--created-at", "2020-01-01T00:00:00Z"]);
        ids.push(out["id"].as_str().unwrap().to_string());
    }
    let (code, run, err) = lethe(&db, &["forget"]);
    assert_eq!(code, 0, "{err}");
    let mut gated: Vec<String> =
        run["working_gate"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    gated.sort();
    ids.sort();
    assert_eq!(gated, ids, "{run}");
    let run_id = run["run_id"].as_str().unwrap().to_string();
    let (_, runs, _) = lethe(&db, &["events", "--runs"]);
    assert_eq!(runs["items"][0]["run_id"], json!(run_id));
    assert_eq!(runs["items"][0]["quarantined"], json!(2));
    let (code, undo, err) = lethe(&db, &["forget", "--undo", &run_id]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(undo["restored"].as_array().unwrap().len(), 2, "{undo}");
    assert!(undo["restored"][0]["preview"].as_str().unwrap().starts_with("scratch:"));
    for id in &ids {
        assert_eq!(lethe(&db, &["show", id]).1["is_deleted"], json!(false));
    }
    let (_, runs, _) = lethe(&db, &["events", "--runs"]);
    assert_eq!(runs["items"][0]["undone"], json!(true));
    let (code, _, err) = lethe(&db, &["forget", "--undo", "run_nope"]);
    assert_eq!((code, err["error"]["code"].as_str()), (2, Some("invalid_input")), "{err}");
}

/// `lethe list --by ACTOR`: only the memories that actor wrote first, each naming its writer.
#[test]
fn list_by_an_agent_shows_only_what_it_wrote() {
    let db = db();
    for (actor, text) in [
        ("agent:claude-code", "The CI cache lives in the build-cache bucket"),
        ("agent:cursor", "Lint with ruff before every commit"),
        ("agent:claude-code", "Staging deploys need the VPN"),
    ] {
        assert_eq!(lethe(&db, &["--actor", actor, "remember", "--type", "semantic", "--content", text]).0, 0);
    }
    let (code, page, err) = lethe(&db, &["list", "--by", "agent:claude-code"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(page["total"], json!(2), "{page}");
    for item in page["items"].as_array().unwrap() {
        assert_eq!(item["written_by"], json!("agent:claude-code"));
    }
    assert_eq!(lethe(&db, &["list"]).1["total"], json!(3));
}
