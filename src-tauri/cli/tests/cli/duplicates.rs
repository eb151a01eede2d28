//! `lethe duplicates`, `lethe duplicates dismiss|supersede` and `lethe health` through the real
//! binary: the JSON contract, exit codes of bad ids, and that a refused call writes
//! nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn db() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lethe-cli-dupes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{}.db", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()))
}

fn run(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lethe")).arg("--db").arg(db).args(args).output().unwrap()
}

fn lethe(db: &Path, args: &[&str]) -> Value {
    let out = run(db, args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

const TEXT: &str = "the staging deploy of the billing service needs the feature flag turned off before the database migration runs, otherwise the workers crash on start";
const NEAR: &str = "the staging deploy of the billing service needs the feature flag turned off before the database migration runs, otherwise the workers crash on start again";

fn pair(db: &Path) -> (String, String) {
    let old = lethe(
        db,
        &[
            "remember",
            "--type",
            "semantic",
            "--content",
            TEXT,
            "--importance",
            "0.8",
            "--created-at",
            "2026-01-01T00:00:00Z",
        ],
    );
    let new = lethe(
        db,
        &[
            "remember",
            "--type",
            "semantic",
            "--content",
            NEAR,
            "--importance",
            "0.3",
            "--created-at",
            "2026-02-01T00:00:00Z",
        ],
    );
    (old["id"].as_str().unwrap().into(), new["id"].as_str().unwrap().into())
}

#[test]
fn duplicates_lists_the_cluster_and_dismiss_hides_it_once() {
    let db = db();
    let (old, new) = pair(&db);
    let c = lethe(&db, &["--now", "2026-03-01T00:00:00Z", "duplicates"]);
    assert_eq!(c["total"], 1, "{c}");
    assert_eq!(c["threshold"], 0.7);
    assert_eq!(c["items"][0]["dominant"], old.as_str(), "the more important one dominates");
    assert_eq!(c["items"][0]["members"][1]["id"], new.as_str());
    assert_eq!(c["items"][0]["members"][0]["dominant"], true);
    let d = lethe(&db, &["duplicates", "dismiss", &new, &old]);
    assert_eq!(d["dismissed"], true);
    assert_eq!(d["actor"], "agent:cli", "a program is an agent");
    assert_eq!(lethe(&db, &["duplicates"])["total"], 0);
    let again = lethe(&db, &["duplicates", "dismiss", &old, &new]);
    assert_eq!(again["dismissed"], false);
    let events = lethe(&db, &["events", "--memory", &old]);
    let kept = events["items"].as_array().unwrap().iter().filter(|e| e["action"] == "keep_both").count();
    assert_eq!(kept, 1, "audited once: {events}");
    assert_eq!(lethe(&db, &["show", &new])["features"]["duplication"], 0.0, "no longer counted");
}

#[test]
fn supersede_takes_the_older_out_of_recall() {
    let db = db();
    let (old, new) = pair(&db);
    let s = lethe(&db, &["duplicates", "supersede", &new, &old]);
    assert_eq!(
        (s["old"].as_str().unwrap(), s["new"].as_str().unwrap(), &s["superseded"]),
        (old.as_str(), new.as_str(), &Value::Bool(true))
    );
    let hits = lethe(&db, &["recall", "billing feature flag migration"]);
    let ids: Vec<&str> = hits["results"].as_array().unwrap().iter().map(|h| h["id"].as_str().unwrap()).collect();
    assert!(!ids.contains(&old.as_str()) && ids.contains(&new.as_str()), "{ids:?}");
    assert_eq!(lethe(&db, &["duplicates"])["total"], 0);
}

#[test]
fn bad_ids_exit_with_their_code_and_write_nothing() {
    let db = db();
    let (old, _) = pair(&db);
    let before = lethe(&db, &["events", "--limit", "1000"])["items"].as_array().unwrap().len();
    let out = run(&db, &["duplicates", "dismiss", &old, "mem_missing"]);
    assert_eq!(out.status.code(), Some(4), "not found");
    let err: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(err["error"]["code"], "not_found");
    assert_eq!(run(&db, &["duplicates", "supersede", &old, &old]).status.code(), Some(2), "the same id twice");
    assert_eq!(
        run(&db, &["--now", "2026-03-01T00:00:00Z", "duplicates", "dismiss", &old, "mem_x"]).status.code(),
        Some(2),
        "a write refuses --now"
    );
    assert_eq!(
        lethe(&db, &["events", "--limit", "1000"])["items"].as_array().unwrap().len(),
        before,
        "nothing audited"
    );
}

#[test]
fn health_names_its_four_lists() {
    let db = db();
    // Off a terminal the CLI is an agent, which may not write a pinned memory, but may pin one.
    let id = lethe(&db, &["remember", "--type", "semantic", "--content", "never force push to main"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    lethe(&db, &["pin", &id]);
    let h = lethe(&db, &["health"]);
    let names: Vec<&str> = h["lists"].as_array().unwrap().iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["never_recalled", "forget_soon", "pinned_never_recalled", "low_confidence"]);
    assert_eq!(h["lists"][2]["total"], 1, "the pinned memory was never recalled: {h}");
}

/// A model directory whose weights do not match their pinned sum: the judgment falls back to
/// words and values, says so and why, and writes no vector of the corrupt model.
#[test]
fn a_corrupt_model_gives_the_word_and_value_judgment_and_says_why() {
    let model = std::env::temp_dir().join(format!("lethe-corrupt-model-{}", std::process::id()));
    std::fs::create_dir_all(&model).unwrap();
    for f in ["model.int8.safetensors", "tokenizer.json", "config.json"] {
        std::fs::write(model.join(f), b"not the pinned model").unwrap();
    }
    let db = db();
    let with_model = |args: &[&str]| -> Value {
        let out = Command::new(env!("CARGO_BIN_EXE_lethe"))
            .env("LETHE_MODEL_DIR", &model)
            .arg("--db")
            .arg(&db)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let a =
        with_model(&["remember", "--type", "semantic", "--content", "Retry limit for the email sender is 3 attempts."]);
    let b =
        with_model(&["remember", "--type", "semantic", "--content", "Retry limit for the email sender is 5 attempts."]);
    assert_eq!(b["similar"][0]["id"], a["id"], "{b}");
    assert_eq!(b["similar"][0]["kind"], "possible update", "values are compared without a model: {b}");
    let c = with_model(&[
        "remember",
        "--type",
        "semantic",
        "--content",
        "Retry limit for the email sender is 3 attempts (confirmed).",
    ]);
    assert_eq!(c["similar"][0]["kind"], "duplicate", "a near-copy is one by its words: {c}");
    let s = with_model(&["similar", a["id"].as_str().unwrap()]);
    let judgment = s["judgment"].as_str().unwrap();
    assert!(judgment.starts_with("words and values only, no sentence model:"), "{judgment}");
    assert!(judgment.contains("model.int8.safetensors"), "the message names the file: {judgment}");
    let d = with_model(&["duplicates"]);
    assert_eq!(d["judgment"], s["judgment"]);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let vectors: i64 = conn.query_row("SELECT COUNT(*) FROM lethe_vector", [], |r| r.get(0)).unwrap();
    assert_eq!(vectors, 0, "nothing of the corrupt model is written");
    let _ = std::fs::remove_dir_all(&model);
}
