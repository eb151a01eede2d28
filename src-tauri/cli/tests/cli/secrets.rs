//! Secrets at the CLI and MCP write paths: `redact` answers what it replaced
//! (kind, offsets, never the value); `refuse` is exit 2 / `isError` with `invalid_input` and
//! writes nothing; `lethe scan --redact` needs `--confirm` (exit 5); a hard delete prints the
//! audit event without text.

use std::path::{Path, PathBuf};
use std::process::Command;

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};

const KEY: &str = "xoxb-2048611423-5178463092145-Kp7Lm2Nq8Rs4Tv6Wx9Yz1Ab";

fn db(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lethe-secrets-{}-{}", std::process::id(), name));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("t.db")
}

fn lethe(db: &Path, args: &[&str]) -> (i32, Value, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lethe")).arg("--db").arg(db).args(args).output().unwrap();
    let parse = |b: &[u8]| serde_json::from_slice(b).unwrap_or(Value::Null);
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), parse(&out.stdout), parse(&out.stderr), all)
}

/// Rows of the tables a write touches: memories, actions, forgetting events, FTS entries.
/// A setting changed by the person: the window does it through the engine, the CLI only on
/// a terminal (tests/trust.rs); agents may not.
fn set_as_person(db: &Path, key: &str, value: &str) {
    let mut conn = lethe_engine::store::open(db).unwrap();
    let s = lethe_engine::Settings::load(&conn).unwrap().with_value(key, value).unwrap();
    lethe_engine::Settings::store(&mut conn, &s, "user", chrono::Utc::now()).unwrap();
}

fn counts(db: &Path) -> Value {
    let (_, s, _, _) = lethe(db, &["stats"]);
    let (_, e, _, _) = lethe(db, &["events", "--limit", "10000"]);
    json!({ "active": s["total_active"], "events": e["items"].as_array().map(|a| a.len()) })
}

#[test]
fn cli_redacts_by_default_refuses_in_refuse_mode_and_scan_needs_confirm() {
    let db = db("cli");
    let content = format!("slack bot {KEY} posts alerts; page ana@example.org");
    let (code, out, _, all) = lethe(&db, &["remember", "--type", "semantic", "--content", &content]);
    assert_eq!(code, 0, "{all}");
    assert!(!all.contains(KEY), "the answer never carries the value: {all}");
    assert_eq!(out["redacted"][0]["kind"], "slack_token");
    assert_eq!(out["redacted"][0]["start"], 10);
    assert_eq!(out["redacted"][0]["end"], 10 + KEY.len());
    assert_eq!(out["pii_tags"], json!(["pii:email"]));
    let id = out["id"].as_str().unwrap().to_string();
    let (_, shown, _, _) = lethe(&db, &["show", &id]);
    assert_eq!(shown["content"], "slack bot [REDACTED:slack_token] posts alerts; page ana@example.org");
    let (_, _, _, all) = lethe(&db, &["export"]);
    assert!(all.contains("[REDACTED:slack_token]") && !all.contains(KEY), "exports hold the redacted text only");

    // edit answers what it redacted too.
    let (code, out, _, all) = lethe(&db, &["edit", &id, "--content", &format!("rotated: new bot token {KEY}")]);
    assert_eq!(code, 0, "{all}");
    assert_eq!(out["redacted"][0]["kind"], "slack_token");
    assert!(!all.contains(KEY));

    // refuse: exit 2, invalid_input naming kind and position, nothing written.
    assert_eq!(lethe(&db, &["settings", "secrets", "refuse"]).0, 6, "settings are the person's");
    set_as_person(&db, "secrets", "refuse");
    let before = counts(&db);
    let (code, _, err, all) = lethe(&db, &["remember", "--type", "semantic", "--content", &content]);
    assert_eq!(code, 2, "{all}");
    assert_eq!(err["error"]["code"], "invalid_input");
    let msg = err["error"]["message"].as_str().unwrap();
    assert!(msg.contains("slack_token at bytes 10.."), "{msg}");
    assert!(!all.contains(KEY), "{all}");
    let (code, _, _, _) = lethe(&db, &["edit", &id, "--content", &content]);
    assert_eq!(code, 2, "edit is refused too");
    assert_eq!(counts(&db), before, "nothing written");

    // scan: the old rows are clean; a memory stored while `allow` is listed and redacted.
    set_as_person(&db, "secrets", "allow");
    let (_, out, _, _) = lethe(&db, &["remember", "--type", "episodic", "--content", &format!("token {KEY}")]);
    let raw_id = out["id"].as_str().unwrap().to_string();
    let (code, out, _, _) = lethe(&db, &["scan"]);
    assert_eq!(code, 0);
    let item = out["items"].as_array().unwrap().iter().find(|i| i["id"] == json!(raw_id)).cloned().unwrap();
    assert!(item["kinds"].as_array().unwrap().contains(&json!("slack_token")), "{item}");
    let (code, _, err, _) = lethe(&db, &["scan", "--redact"]);
    assert_eq!(code, 5, "--redact without --confirm");
    assert_eq!(err["error"]["code"], "confirmation_required");
    let (code, out, _, all) = lethe(&db, &["scan", "--redact", "--confirm"]);
    assert_eq!(code, 0, "{all}");
    assert!(out["redacted"].as_u64().unwrap() >= 1);
    let (_, shown, _, _) = lethe(&db, &["show", &raw_id]);
    assert_eq!(shown["content"], "token [REDACTED:slack_token]");

    // Hard delete (the person's) answers the event: facts, hash and length, no text.
    let mut conn = lethe_engine::store::open(&db).unwrap();
    let ev = serde_json::to_value(
        lethe_engine::lifecycle::hard_delete(&mut conn, &id, true, None, "user", chrono::Utc::now()).unwrap(),
    )
    .unwrap();
    let all = ev.to_string();
    assert_eq!(ev["action"], "hard");
    assert_eq!(ev["metadata"]["content_sha256"].as_str().unwrap().len(), 64);
    assert!(!all.contains("posts alerts") && !all.contains("rotated"), "{all}");
}

fn text(r: &rmcp::model::CallToolResult) -> Value {
    serde_json::from_str(&r.content[0].as_text().expect("text content").text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_redacts_and_refuse_mode_is_a_tool_error_that_writes_nothing() {
    let path = db("mcp");
    let transport = TokioChildProcess::new(tokio::process::Command::new(env!("CARGO_BIN_EXE_lethe")).configure(|c| {
        c.arg("--db").arg(&path).arg("mcp");
    }))
    .unwrap();
    let info = ClientConfig::new(ClientCapabilities::default(), Implementation::new("secret-host", "1.0"));
    let client = info.serve(transport).await.expect("initialize");
    let call = |name: &'static str, args: Value| {
        let client = &client;
        async move {
            client.call_tool(CallToolRequestParams::new(name).with_arguments(args.as_object().cloned().unwrap())).await
        }
    };
    let r = call("remember", json!({"type": "semantic", "content": format!("bot {KEY} for alerts")})).await.unwrap();
    assert_ne!(r.is_error, Some(true));
    let out = text(&r);
    assert_eq!(out["redacted"][0]["kind"], "slack_token");
    assert!(!out.to_string().contains(KEY));

    // The procedure paths: a reflection note with a secret is redacted as well.
    let r = call(
        "remember",
        json!({"type": "procedural", "content": "deploy the bot", "task_goal": "deploy", "steps": ["build", "ship"]}),
    )
    .await
    .unwrap();
    let pid = text(&r)["id"].as_str().unwrap().to_string();
    let r = call(
        "add_reflection_note",
        json!({"memory_id": pid, "failure_type": "tool_error", "failure_description": format!("login with password={KEY} failed")}),
    )
    .await
    .unwrap();
    assert_eq!(text(&r)["redacted"][0]["field"], "failure_description");

    set_as_person(&path, "secrets", "refuse");
    let before = counts(&path);
    let r = call("remember", json!({"type": "semantic", "content": format!("bot {KEY} again")})).await.unwrap();
    assert_eq!(r.is_error, Some(true), "refuse is a tool error, not a protocol error");
    let e = text(&r);
    assert_eq!(e["error"]["code"], "invalid_input");
    assert!(e["error"]["message"].as_str().unwrap().contains("slack_token at bytes 4.."), "{e}");
    assert!(!e.to_string().contains(KEY));
    assert_eq!(counts(&path), before, "nothing written");
    client.cancel().await.unwrap();
}

/// Secrets written the ways the older detector let through, stored while `secrets` was
/// `allow` (as an older version stored them): `lethe scan` lists them by kind, and
/// `scan --redact --confirm` takes them out.
#[test]
fn scan_finds_disguised_secrets_older_versions_let_through() {
    let db = db("disguised");
    set_as_person(&db, "secrets", "allow");
    set_as_person(&db, "pii", "allow");
    let cases = [
        ("backup key AKIA\u{200b}Z7QX4ZL2M5N8P3RS in the runbook", "aws_access_key", "Z7QX4ZL2M5N8P3RS"),
        ("The root password for db01 is Tr0ub4dor&3", "password_assignment", "Tr0ub4dor&3"),
        ("GET /login?user=ana&password%3DHunter2%21x", "password_assignment", "Hunter2"),
        ("datadog api key 3f9a8c7e6d5b4a3f2e1d0c9b8a7f6e5d", "password_assignment", "3f9a8c7e6d5b4a3f2e1d0c9b8a7f6e5d"),
        ("card 4111.1111.1111.1111 exp 09/28", "card_number", "4111.1111.1111.1111"),
        ("SSN 078-05-1120 on the form", "ssn", "078-05-1120"),
        ("write to alice [at] example [dot] com", "email", "alice [at] example"),
    ];
    let mut ids = Vec::new();
    for (content, _, _) in &cases {
        let (code, out, _, all) = lethe(&db, &["remember", "--type", "semantic", "--content", content]);
        assert_eq!(code, 0, "{all}");
        assert!(out["redacted"].as_array().is_none_or(|a| a.is_empty()), "allow stores as given: {out}");
        ids.push(out["id"].as_str().unwrap().to_string());
    }
    set_as_person(&db, "secrets", "redact");
    // Personal data is redacted in place when the setting says so (tag mode keeps the text).
    set_as_person(&db, "pii", "redact");
    let (code, out, _, _) = lethe(&db, &["scan"]);
    assert_eq!(code, 0);
    for ((content, kind, _), id) in cases.iter().zip(&ids) {
        let item = out["items"].as_array().unwrap().iter().find(|i| i["id"] == json!(id));
        let kinds = item.map(|i| i["kinds"].clone()).unwrap_or(Value::Null);
        assert!(kinds.as_array().is_some_and(|k| k.contains(&json!(kind))), "{content:?}: {kinds}");
    }
    let (code, _, _, all) = lethe(&db, &["scan", "--redact", "--confirm"]);
    assert_eq!(code, 0, "{all}");
    for ((content, _, value), id) in cases.iter().zip(&ids) {
        let (_, shown, _, _) = lethe(&db, &["show", id]);
        let text = shown["content"].as_str().unwrap();
        assert!(!text.contains(value) && text.contains("[REDACTED:"), "{content:?} -> {text:?}");
    }
}
