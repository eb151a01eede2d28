//! `lethe recall --explain` and the recall log through the real binary: explain
//! answers recall's results plus what was declined and writes nothing; a plain recall is logged
//! with its actor, query, context and returned ids and scores; `recall-log` filters.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn db() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lethe-cli-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{}.db", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()))
}

fn lethe(db: &Path, args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_lethe")).arg("--db").arg(db).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn ids(v: &Value, key: &str) -> Vec<String> {
    v[key].as_array().unwrap().iter().map(|h| h["id"].as_str().unwrap().to_string()).collect()
}

#[test]
fn explain_declines_a_quarantined_match_and_counts_nothing() {
    let db = db();
    let keep = lethe(&db, &["remember", "--type", "semantic", "--content", "grafana alerts route to oncall"]);
    let gone = lethe(&db, &["remember", "--type", "semantic", "--content", "grafana alerts used to route to email"]);
    let gone = gone["id"].as_str().unwrap();
    lethe(&db, &["delete", gone]);
    let now = ["--now", "2027-01-01T00:00:00Z"];
    let e = lethe(&db, &[&now[..], &["recall", "grafana alerts", "--explain"]].concat());
    let plain = lethe(&db, &[&now[..], &["--actor", "agent:probe", "recall", "grafana alerts"]].concat());
    assert_eq!(ids(&e, "results"), ids(&plain, "results"), "explain returns recall's results");
    assert_eq!(ids(&e, "results"), vec![keep["id"].as_str().unwrap().to_string()]);
    for (a, b) in e["results"].as_array().unwrap().iter().zip(plain["results"].as_array().unwrap()) {
        assert_eq!(a["breakdown"], b["breakdown"], "the same breakdown");
        assert_eq!(a["score"], b["score"]);
        assert!(a["age_days"].is_number(), "explain adds the age");
    }
    let declined = &e["declined"].as_array().unwrap()[0];
    assert_eq!((declined["id"].as_str().unwrap(), declined["reason"].as_str().unwrap()), (gone, "in quarantine"));
    assert_eq!(declined["kind"], "excluded");
    // The one plain recall is counted and logged; explain is neither.
    let meta = lethe(&db, &["meta", keep["id"].as_str().unwrap()]);
    assert_eq!(meta["recall_count"], 1, "only the plain recall counts");
    let log = lethe(&db, &["recall-log"]);
    let items = log["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "only the plain recall is logged: {log}");
    assert_eq!(items[0]["actor"], "agent:probe");
    assert_eq!(items[0]["query"], "grafana alerts");
    assert_eq!(items[0]["results"][0]["id"], keep["id"]);
    assert_eq!(items[0]["results"][0]["score"], plain["results"][0]["score"]);
}

#[test]
fn the_recall_log_filters_by_actor_and_by_memory() {
    let db = db();
    let a = lethe(&db, &["remember", "--type", "semantic", "--content", "kafka consumer lag alarms"]);
    let b = lethe(&db, &["remember", "--type", "semantic", "--content", "postgres vacuum schedule"]);
    lethe(&db, &["--actor", "agent:one", "recall", "kafka lag", "--limit", "1", "--project", "data", "--tags", "ops"]);
    lethe(&db, &["--actor", "agent:two", "recall", "postgres vacuum", "--limit", "1"]);
    lethe(&db, &["--actor", "agent:two", "recall", "kafka consumer", "--limit", "1"]);
    let one = lethe(&db, &["recall-log", "--actor", "agent:one"]);
    assert_eq!(one["items"].as_array().unwrap().len(), 1);
    assert_eq!(one["items"][0]["context"]["project"], "data");
    assert_eq!(one["items"][0]["context"]["tags"][0], "ops");
    let of_a = lethe(&db, &["recall-log", "--memory", a["id"].as_str().unwrap()]);
    let queries: Vec<&str> = of_a["items"].as_array().unwrap().iter().map(|e| e["query"].as_str().unwrap()).collect();
    assert_eq!(queries, ["kafka consumer", "kafka lag"], "the recalls that returned it, newest first");
    let of_b = lethe(&db, &["recall-log", "--memory", b["id"].as_str().unwrap()]);
    assert_eq!(of_b["items"].as_array().unwrap().len(), 1);
    // The bound (setting recall_log_max_rows, the person's to change) is tested in the engine.
    let all = lethe(&db, &["recall-log", "--limit", "2"]);
    let queries: Vec<&str> = all["items"].as_array().unwrap().iter().map(|e| e["query"].as_str().unwrap()).collect();
    assert_eq!(queries, ["kafka consumer", "postgres vacuum"], "--limit keeps the newest");
}

#[test]
fn a_query_that_names_a_period_says_so_and_ranks_that_time_first() {
    let db = db();
    let march = lethe(
        &db,
        &[
            "remember",
            "--type",
            "episodic",
            "--created-at",
            "2026-03-12T10:00:00Z",
            "--content",
            "rotated the vault tokens",
        ],
    );
    let may = lethe(
        &db,
        &[
            "remember",
            "--type",
            "episodic",
            "--created-at",
            "2026-05-30T10:00:00Z",
            "--content",
            "rotated the vault tokens again",
        ],
    );
    let now = ["--now", "2026-06-01T00:00:00Z"];
    let plain = lethe(&db, &[&now[..], &["recall", "rotated vault tokens"]].concat());
    assert_eq!(ids(&plain, "results")[0], may["id"].as_str().unwrap());
    assert!(plain.get("periods").is_none(), "no period named: {plain}");

    let dated = lethe(&db, &[&now[..], &["recall", "when were the vault tokens rotated in March 2026?"]].concat());
    assert_eq!(ids(&dated, "results")[0], march["id"].as_str().unwrap());
    assert_eq!(
        dated["periods"],
        serde_json::json!([{"said": "March 2026", "from": "2026-03-01T00:00:00.000Z", "until": "2026-04-01T00:00:00.000Z"}])
    );
    assert_eq!(dated["results"][0]["breakdown"]["scene"], 1.0);
    let explained = lethe(&db, &[&now[..], &["recall", "vault tokens rotated last week", "--explain"]].concat());
    assert_eq!(explained["periods"][0]["said"], "last week");
    assert_eq!(explained["periods"][0]["from"], "2026-05-25T00:00:00.000Z");
}
