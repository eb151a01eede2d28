//! `lethe` on a team server (issue #20): `--db postgres://…` for the same commands, the same
//! JSON and exit codes, `lethe admin setup` before anything else. Needs a server: `make test`
//! starts one (tests/pg/with-server.sh) and sets `LETHE_TEST_POSTGRES`; without it these
//! tests say so and do nothing.

use std::process::Command;

use serde_json::Value;

fn server() -> Option<String> {
    let s = std::env::var("LETHE_TEST_POSTGRES").ok().filter(|s| !s.is_empty());
    if s.is_none() {
        eprintln!("LETHE_TEST_POSTGRES is not set: no team server to test against (make test starts one)");
    }
    s
}

/// A new, empty database on the server; its URL.
fn new_database(server: &str) -> String {
    let name = format!("lethe_cli_{}", uuid::Uuid::new_v4().simple());
    let mut admin = postgres::Client::connect(&format!("{server}/postgres"), postgres::NoTls).unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
    format!("{server}/{name}")
}

fn lethe(db: &str, args: &[&str]) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_lethe")).arg("--db").arg(db).args(args).output().unwrap();
    let text = if out.stdout.is_empty() { &out.stderr } else { &out.stdout };
    let v = serde_json::from_slice(text).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(text).into()));
    (out.status.code().unwrap_or(-1), v)
}

#[test]
fn a_team_server_needs_setup_then_serves_the_same_commands() {
    let Some(server) = server() else { return };
    let db = new_database(&server);
    // Before setup: a clear refusal, nothing created.
    let (code, v) = lethe(&db, &["stats"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["error"]["code"], "db_unavailable", "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("admin setup"), "{v}");

    let (code, v) = lethe(&db, &["admin", "setup"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["applied"], serde_json::json!(["001_schema"]));
    let (code, v) = lethe(&db, &["admin", "setup"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["applied"], serde_json::json!([]), "a second setup changes nothing");

    let (code, v) = lethe(
        &db,
        &[
            "remember",
            "--type",
            "semantic",
            "--content",
            "Rate limit on the auth API is 600 requests per minute per key.",
        ],
    );
    assert_eq!(code, 0, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    lethe(&db, &["remember", "--type", "episodic", "--content", "Deploy of billing v2.2 failed: a missing env var."]);

    let (code, v) = lethe(&db, &["recall", "auth API rate limit", "--limit", "1"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["results"][0]["id"], id.as_str(), "{v}");

    let (code, v) = lethe(&db, &["stats"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["total_active"], 2, "{v}");

    // Quarantine and restore, audited, with the contract's exit codes.
    let (code, _) = lethe(&db, &["delete", &id, "--reason", "test"]);
    assert_eq!(code, 0);
    let (code, v) = lethe(&db, &["delete", &id]);
    assert_eq!(code, 2, "already in quarantine: invalid input ({v})");
    let (code, v) = lethe(&db, &["restore", &id]);
    assert_eq!(code, 0, "{v}");
    let (code, v) = lethe(&db, &["show", "mem_does_not_exist"]);
    assert_eq!(code, 4, "{v}");
    let (code, v) = lethe(&db, &["events", "--memory", &id]);
    assert_eq!(code, 0, "{v}");
    assert!(v.to_string().contains("\"soft\""), "{v}");
}

#[test]
fn passwords_never_appear_in_what_lethe_prints() {
    let Some(server) = server() else { return };
    // A wrong password to a server that trusts loopback still connects; the address shown
    // must not carry it either way.
    let db = new_database(&server).replacen("postgres://postgres@", "postgres://postgres:hunter2secret@", 1);
    let (_, v) = lethe(&db, &["stats"]);
    assert!(!v.to_string().contains("hunter2secret"), "{v}");
    let (_, v) = lethe(&db, &["admin", "setup"]);
    assert!(!v.to_string().contains("hunter2secret"), "{v}");
    assert!(v["server"].as_str().unwrap().starts_with("postgres://postgres@127.0.0.1:"), "{v}");
}
