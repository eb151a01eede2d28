//! `lethe` on a team server: `--db postgres://…` for the same commands, the same
//! JSON and exit codes, `lethe admin setup` before anything else. Needs a server: `make test`
//! starts one (tests/pg/with-server.sh) and sets `LETHE_TEST_POSTGRES`; without it these
//! tests say so and do nothing.

use std::process::Command;

use serde_json::Value;

#[path = "../common/hostile.rs"]
mod hostile;

/// Attacks by a role that writes raw SQL with its own password.
mod raw_sql;

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
    assert_eq!(
        v["applied"],
        serde_json::json!([
            "001_schema",
            "002_roles",
            "003_teams",
            "004_agent_pins",
            "006_raw_sql",
            "007_session_context",
            "008_definer_role",
            "009_audited_writes",
            "010_plans",
            "011_write_functions",
            "012_insert_functions",
            "013_record_functions",
            "014_derived_functions"
        ])
    );
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

fn with_role(url: &str, role: &str, password: &str) -> String {
    url.replacen("postgres://postgres@", &format!("postgres://{role}:{password}@"), 1)
}

/// Rows of every memory and audit table (what a refused write must leave unchanged).
fn rows(url: &str) -> i64 {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    c.query_one(
        "SELECT (SELECT COUNT(*) FROM memory_item) + (SELECT COUNT(*) FROM lethe_action) \
         + (SELECT COUNT(*) FROM memory_forgetting_event) + (SELECT COUNT(*) FROM lethe_settings) \
         + (SELECT COUNT(*) FROM memory_item WHERE pinned = 1)",
        &[],
    )
    .unwrap()
    .get(0)
}

#[test]
fn roles_decide_what_a_connection_may_do_and_the_audit_names_the_role() {
    let Some(server) = server() else { return };
    let db = new_database(&server);
    assert_eq!(lethe(&db, &["admin", "setup"]).0, 0);
    let suffix = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let (agent, reader) = (format!("agent_{suffix}"), format!("reader_{suffix}"));
    let out = Command::new(env!("CARGO_BIN_EXE_lethe"))
        .args(["--db", &db, "admin", "add-agent", &agent])
        .env("LETHE_ROLE_PASSWORD", "s3cret-pw")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("s3cret-pw"), "the password is never printed");
    assert_eq!(lethe(&db, &["admin", "add-reader", &reader]).0, 0);
    let as_agent = with_role(&db, &agent, "s3cret-pw");
    let as_reader = with_role(&db, &reader, "x");

    // Only the owner adds roles.
    let (code, v) = lethe(&as_agent, &["admin", "add-agent", "mallory"]);
    assert_eq!((code, v["error"]["code"].as_str()), (6, Some("forbidden")), "{v}");

    let (code, v) =
        lethe(&as_agent, &["remember", "--type", "semantic", "--content", "The staging cluster drains at 02:00 UTC."]);
    assert_eq!(code, 0, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    let before = rows(&db);
    for (args, what) in [
        (
            vec!["--actor", "agent:someone-else", "remember", "--type", "semantic", "--content", "forged"],
            "another actor",
        ),
        (vec!["delete", &id, "--hard", "--confirm"], "a hard delete"),
        (vec!["pin", &id], "a pin"),
        (vec!["remember", "--type", "semantic", "--content", "Pinned by an agent.", "--pinned"], "a pinned remember"),
        (vec!["settings", "quarantine_days", "3"], "a settings change"),
    ] {
        let (code, v) = lethe(&as_agent, &args);
        assert_eq!((code, v["error"]["code"].as_str()), (6, Some("forbidden")), "an agent role's {what}: {v}");
    }
    let (code, v) = lethe(&as_reader, &["remember", "--type", "semantic", "--content", "a reader's note"]);
    assert_eq!((code, v["error"]["code"].as_str()), (6, Some("forbidden")), "{v}");
    let (code, v) = lethe(&as_reader, &["stats"]);
    assert_eq!(code, 0, "a reader reads: {v}");
    assert_eq!(v["total_active"], 1);
    assert_eq!(rows(&db), before, "nothing refused was written");

    // The audit names the role even when the agent writes an action by hand (through the
    // server's function: it holds no INSERT right on the audit).
    let mut c = postgres::Client::connect(&as_agent, postgres::NoTls).unwrap();
    assert!(
        c.batch_execute(
            "INSERT INTO lethe_action (memory_id, action, actor, created_at) VALUES (NULL, 'note', 'user', '2026-12-01T00:00:00.000Z')",
        )
        .is_err(),
        "agents insert no audit row directly"
    );
    c.batch_execute("SELECT lethe_action_record(NULL, 'note', 'user', NULL, NULL, '2026-12-01T00:00:00.000Z')")
        .unwrap();
    let actors: Vec<String> =
        c.query("SELECT DISTINCT actor FROM lethe_action", &[]).unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(actors, vec![format!("agent:{agent}")], "every audit row of the agent names its role");
    assert!(c.batch_execute("UPDATE lethe_action SET actor = 'user'").is_err(), "the audit is append-only for agents");
    assert!(c.batch_execute("DELETE FROM memory_item").is_err(), "agents never delete memories for ever");
}

fn add(db: &str, kind: &str, name: &str) {
    add_to(db, kind, name, "default")
}

fn add_to(db: &str, kind: &str, name: &str, team: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_lethe"))
        .args(["--db", db, "admin", kind, name, "--team", team])
        .env("LETHE_ROLE_PASSWORD", "pw")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["role"].as_str(), v["team"].as_str()), (Some(name), Some(team)), "{v}");
}

/// `lethe mcp` on a team server under an agent role: the tools work, the audit and the
/// engine's own checks name the role (not the client's self-chosen name), and the server
/// ends cleanly when the host closes stdin.
#[test]
fn mcp_on_a_team_server_acts_as_the_agent_role() {
    use std::io::Write;
    let Some(server) = server() else { return };
    let db = new_database(&server);
    assert_eq!(lethe(&db, &["admin", "setup"]).0, 0);
    let bot = format!("bot_{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    add(&db, "add-agent", &bot);
    let mut child = Command::new(env!("CARGO_BIN_EXE_lethe"))
        .args(["--db", &with_role(&db, &bot, "pw"), "mcp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claude","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remember","arguments":{"type":"semantic","content":"Ops rotates the pager on Mondays."}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"forget","arguments":{"id":"mem_x","hard":true,"confirm":true}}}"#,
    ];
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let answers: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let by_id =
        |id: i64| answers.iter().find(|a| a["id"] == id).unwrap_or_else(|| panic!("no answer {id}: {answers:?}"));
    assert_eq!(by_id(2)["result"]["structuredContent"]["stored"], true, "{answers:?}");
    let refused = by_id(3)["result"]["content"][0]["text"].as_str().unwrap().to_string();
    assert!(refused.contains("forbidden") && refused.contains(&format!("agent:{bot}")), "{refused}");
    let (_, v) = lethe(&db, &["events", "--action", "remember"]);
    assert_eq!(v["items"][0]["actor"], format!("agent:{bot}"), "{v}");
}

/// One `lethe mcp` process under `url` making `n` remember calls; the number that stored.
fn mcp_writer(url: &str, tag: &str, n: usize) -> usize {
    use std::io::{BufRead, BufReader, Write};
    let mut child = Command::new(env!("CARGO_BIN_EXE_lethe"))
        .args(["--db", url, "mcp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"w","version":"1"}}}}}}"#).unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
    let mut stored = 0;
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.next().unwrap().unwrap().contains("protocolVersion"));
    for i in 1..=n {
        // One call at a time, as an agent does: each waits for the previous answer.
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"remember","arguments":{{"type":"episodic","content":"{tag} wrote note {i} about build {}"}}}}}}"#,
            i * 7919 % 1000
        )
        .unwrap();
        let answer: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        if answer["result"]["structuredContent"]["stored"] == true {
            stored += 1;
        } else {
            eprintln!("{tag} call {i}: {answer}");
        }
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{tag}: {}", String::from_utf8_lossy(&out.stderr));
    stored
}

/// Issue #20's load on a team server: 8 `lethe mcp` processes under 2 agent roles write 200
/// memories each (25 unless LETHE_LONG=1) — every row lands, no call fails, the audit names
/// each role for its own rows; then 16 `lethe` processes race a compare-and-swap on one
/// procedure, round after round: exactly one winner per version, 15 conflicts (exit 3).
#[test]
fn eight_writers_under_two_roles_lose_nothing_and_cas_has_one_winner() {
    let Some(server) = server() else { return };
    let db = new_database(&server);
    assert_eq!(lethe(&db, &["admin", "setup"]).0, 0);
    let s = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let roles = [format!("w1_{s}"), format!("w2_{s}")];
    for r in &roles {
        add(&db, "add-agent", r);
    }
    let n = if std::env::var("LETHE_LONG").is_ok_and(|v| v == "1") { 200 } else { 25 };
    let started = std::time::Instant::now();
    let writers: Vec<_> = (0..8)
        .map(|p| {
            let url = with_role(&db, &roles[p % 2], "pw");
            std::thread::spawn(move || mcp_writer(&url, &format!("writer {p}"), n))
        })
        .collect();
    let stored: usize = writers.into_iter().map(|w| w.join().unwrap()).sum();
    eprintln!("8 mcp writers x {n} remembers on PostgreSQL: {:.1} s", started.elapsed().as_secs_f64());
    assert_eq!(stored, 8 * n, "every call stored");
    let mut c = postgres::Client::connect(&db, postgres::NoTls).unwrap();
    let count: i64 = c.query_one("SELECT COUNT(*) FROM memory_item", &[]).unwrap().get(0);
    assert_eq!(count as usize, 8 * n, "every row is there");
    for r in &roles {
        let audited: i64 = c
            .query_one(
                "SELECT COUNT(*) FROM lethe_action WHERE action = 'remember' AND actor = $1",
                &[&format!("agent:{r}")],
            )
            .unwrap()
            .get(0);
        assert_eq!(audited as usize, 4 * n, "{r}'s remembers are audited under its name");
    }

    let as_w1 = with_role(&db, &roles[0], "pw");
    let (code, v) = lethe(
        &as_w1,
        &[
            "remember",
            "--type",
            "procedural",
            "--content",
            "Deploy",
            "--steps",
            r#"["build","ship"]"#,
            "--task-goal",
            "ship it",
        ],
    );
    assert_eq!(code, 0, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    for round in 1..=2i64 {
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(16));
        let racers: Vec<_> = (0..16)
            .map(|p| {
                let (url, id, barrier) = (with_role(&db, &roles[p % 2], "pw"), id.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lethe"));
                    cmd.args(["--db", &url, "remember", "--type", "procedural", "--content", &format!("racer {p}")]);
                    cmd.args(["--memory-id", &id, "--expected-version", &round.to_string()]);
                    barrier.wait();
                    cmd.output().unwrap().status.code().unwrap()
                })
            })
            .collect();
        let codes: Vec<i32> = racers.into_iter().map(|r| r.join().unwrap()).collect();
        let wins = codes.iter().filter(|c| **c == 0).count();
        let conflicts = codes.iter().filter(|c| **c == 3).count();
        assert_eq!((wins, conflicts), (1, 15), "round {round}: exit codes {codes:?}");
        let version: i64 = c.query_one("SELECT version FROM memory_item WHERE id = $1", &[&id]).unwrap().get(0);
        assert_eq!(version, round + 1);
    }
}

#[test]
fn team_a_never_reads_or_writes_team_b() {
    let Some(server) = server() else { return };
    let db = new_database(&server);
    assert_eq!(lethe(&db, &["admin", "setup"]).0, 0);
    let s = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let (a, b, b_reader, a_curator) = (format!("a_{s}"), format!("b_{s}"), format!("br_{s}"), format!("ac_{s}"));
    add_to(&db, "add-agent", &a, "alpha");
    add_to(&db, "add-agent", &b, "beta");
    add_to(&db, "add-reader", &b_reader, "beta");
    add_to(&db, "add-curator", &a_curator, "alpha");
    let (as_a, as_b, as_br, as_ac) = (
        with_role(&db, &a, "pw"),
        with_role(&db, &b, "pw"),
        with_role(&db, &b_reader, "pw"),
        with_role(&db, &a_curator, "pw"),
    );
    let (bad, v) = lethe(&db, &["admin", "add-agent", "c1", "--team", "no spaces"]);
    assert_eq!((bad, v["error"]["code"].as_str()), (2, Some("invalid_input")), "{v}");

    let (code, v) =
        lethe(&as_a, &["remember", "--type", "semantic", "--content", "Alpha's launch codename is Bluefin."]);
    assert_eq!(code, 0, "{v}");
    let alpha_id = v["id"].as_str().unwrap().to_string();
    let (code, v) = lethe(&as_b, &["remember", "--type", "semantic", "--content", "Beta deploys on Thursdays."]);
    assert_eq!(code, 0, "{v}");

    // Beta's agent and reader see beta's memory only, through every read.
    for url in [&as_b, &as_br] {
        let (_, v) = lethe(url, &["stats"]);
        assert_eq!(v["total_active"], 1, "{v}");
        let (_, v) = lethe(url, &["list"]);
        assert!(!v.to_string().contains("Bluefin"), "{v}");
        let (_, v) = lethe(url, &["recall", "launch codename Bluefin"]);
        assert!(!v.to_string().contains("Bluefin"), "{v}");
        let (code, v) = lethe(url, &["show", &alpha_id]);
        assert_eq!((code, v["error"]["code"].as_str()), (4, Some("not_found")), "{v}");
        let (_, v) = lethe(url, &["events", "--limit", "100"]);
        assert!(!v.to_string().contains(&alpha_id), "{v}");
    }
    // Nor can beta change alpha's memory.
    let (code, v) = lethe(&as_b, &["delete", &alpha_id]);
    assert_eq!((code, v["error"]["code"].as_str()), (4, Some("not_found")), "{v}");
    let (code, v) = lethe(&as_b, &["edit", &alpha_id, "--content", "overwritten"]);
    assert_eq!(code, 4, "{v}");

    // Below the CLI too: the server's row-level security, whatever SQL beta writes.
    let mut c = postgres::Client::connect(&as_b, postgres::NoTls).unwrap();
    for table in ["memory_item", "lethe_action", "lethe_change", "lethe_vector", "lethe_signature", "meta_memory_stats"]
    {
        let rows: Vec<String> =
            c.query(&format!("SELECT DISTINCT team FROM {table}"), &[]).unwrap().iter().map(|r| r.get(0)).collect();
        assert!(rows.iter().all(|t| t == "beta"), "{table}: {rows:?}");
    }
    let forged = c.batch_execute(
        "INSERT INTO memory_item (id, type, content, created_at, team) VALUES ('x1', 'semantic', 'planted', '2026-12-01T00:00:00.000Z', 'alpha')",
    );
    assert!(forged.is_err(), "beta cannot plant a memory in alpha");
    assert!(
        c.execute("UPDATE memory_item SET content = 'x' WHERE team = 'alpha'", &[]).is_err(),
        "no Lethe role updates a memory directly"
    );
    let mut owner = postgres::Client::connect(&db, postgres::NoTls).unwrap();
    let content: String =
        owner.query_one("SELECT content FROM memory_item WHERE id = $1", &[&alpha_id]).unwrap().get(0);
    assert_eq!(content, "Alpha's launch codename is Bluefin.");

    // Settings are per team: alpha's team lead lowers alpha's quarantine; beta keeps 30 days.
    // The team lead is a person the server signed in: the settings change is theirs, by name.
    let (code, v) = lethe(&as_ac, &["settings", "quarantine_days", "7"]);
    assert_eq!(code, 0, "{v}");
    let changes = lethe(&as_ac, &["events", "--action", "settings"]).1;
    assert_eq!(changes["items"][0]["actor"], format!("user:{a_curator}"), "{changes}");
    let (code, v) = lethe(&as_ac, &["--actor", "agent:someone", "settings", "quarantine_days", "8"]);
    assert_eq!((code, v["error"]["code"].as_str()), (6, Some("forbidden")), "a curator acts as itself: {v}");
    let (_, v) = lethe(&as_a, &["settings", "quarantine_days"]);
    assert_eq!(v["quarantine_days"], 7.0, "{v}");
    let (_, v) = lethe(&as_b, &["settings", "quarantine_days"]);
    assert_eq!(v["quarantine_days"], 30.0, "{v}");
}

/// `lethe push FILE.db`: a local store moves into the team store with its ids,
/// counters, versions, quarantine and audit; a second push adds nothing; only a curator or
/// the owner pushes, and only into a team store.
#[test]
fn push_moves_a_local_store_whole_and_a_second_push_adds_nothing() {
    let Some(server) = server() else { return };
    let db = new_database(&server);
    assert_eq!(lethe(&db, &["admin", "setup"]).0, 0);
    let lead = format!("lead_{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let bot = format!("bot_{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    add(&db, "add-curator", &lead);
    add(&db, "add-agent", &bot);
    let (lead_url, bot_url) = (with_role(&db, &lead, "pw"), with_role(&db, &bot, "pw"));

    // A local store with a memory of each kind of history.
    let dir = std::env::temp_dir().join(format!("lethe-push-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("laptop.db");
    let local = file.to_str().unwrap();
    let id_of = |v: Value| v["id"].as_str().unwrap().to_string();
    let kept = id_of(
        lethe(local, &["remember", "--type", "semantic", "--content", "The staging cluster runs on k3s 1.29."]).1,
    );
    lethe(local, &["cite", &kept]);
    lethe(local, &["cite", &kept]);
    assert_eq!(lethe(local, &["edit", &kept, "--content", "The staging cluster runs on k3s 1.30."]).0, 0);
    // Off a terminal the CLI is an agent, which may not write a pinned memory but may pin one.
    let pinned = id_of(lethe(local, &["remember", "--type", "semantic", "--content", "Never deploy on Fridays."]).1);
    assert_eq!(lethe(local, &["pin", &pinned]).0, 0);
    let quarantined = id_of(
        lethe(local, &["remember", "--type", "episodic", "--content", "Lunch order for the offsite was pizza."]).1,
    );
    assert_eq!(lethe(local, &["delete", &quarantined, "--reason", "stale"]).0, 0);
    let erased = id_of(lethe(local, &["remember", "--type", "semantic", "--content", "Temporary note to erase."]).1);
    {
        // The person deletes it for ever (the window's path; off a terminal the CLI may not).
        let mut conn = lethe_engine::store::open(&file).unwrap();
        lethe_engine::lifecycle::hard_delete(&mut conn, &erased, true, Some("test"), "user", chrono::Utc::now())
            .unwrap();
    }
    let output = "total 8\ndrwxr-xr-x  2 root root 4096 .\n-rw-r--r--  1 root root  220 .bashrc\n";
    let tool = id_of(lethe(local, &["remember", "--type", "episodic", "--content", output, "--source", "tool:ls"]).1);
    let (code, v) = lethe(local, &["archive", &tool, "--memo", "ls of the home directory"]);
    assert_eq!(code, 0, "{v}");
    let procedure = id_of(
        lethe(
            local,
            &[
                "remember",
                "--type",
                "procedural",
                "--content",
                "Roll back a failed deploy",
                "--steps",
                "[\"helm rollback\",\"check health\"]",
                "--task-goal",
                "rollback",
            ],
        )
        .1,
    );
    let note = r#"{"failure_type":"tool_error","failure_description":"helm timed out"}"#;
    assert_eq!(lethe(local, &["reflect", &procedure, "--note", note]).0, 0);
    assert_eq!(lethe(local, &["recall", "staging cluster k3s"]).0, 0);
    let before: Vec<(String, Value)> = [&kept, &pinned, &quarantined, &procedure]
        .iter()
        .map(|id| ((*id).clone(), lethe(local, &["show", id]).1))
        .collect();
    let local_events = |id: &str| lethe(local, &["events", "--memory", id]).1["items"].as_array().unwrap().len();
    let file_bytes = std::fs::read(&file).unwrap();

    // Nobody but a curator or the owner pushes, and only into a team store.
    let (code, v) = lethe(&bot_url, &["push", local]);
    assert_eq!((code, v["error"]["code"].as_str()), (6, Some("forbidden")), "{v}");
    let (code, v) = lethe(dir.join("other.db").to_str().unwrap(), &["push", local]);
    assert_eq!(code, 2, "{v}");
    assert!(!dir.join("other.db").exists(), "a refused push creates no file");
    let (code, v) = lethe(&lead_url, &["push", "/no/such/file.db"]);
    assert_eq!(code, 2, "{v}");

    let (code, v) = lethe(&lead_url, &["push", local]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        (v["read"].as_u64(), v["pushed"].as_u64(), v["skipped_existing"].as_u64()),
        (Some(5), Some(5), Some(0)),
        "{v}"
    );
    assert_eq!(v["quarantined"], 1, "{v}");
    assert_eq!(v["archives"], 1, "{v}");
    assert!(v["audit_actions"].as_u64().unwrap() >= 8 && v["audit_events"].as_u64().unwrap() >= 2, "{v}");
    assert_eq!(std::fs::read(&file).unwrap(), file_bytes, "a push only reads the file");

    // Every field the file had, on the server: ids, counters, versions, pins; a quarantine
    // starts at the push, as an import's does (the file's date would let the next batch purge
    // the memory at once).
    for (id, local_view) in &before {
        let (code, team_view) = lethe(&lead_url, &["show", id]);
        assert_eq!(code, 0, "{team_view}");
        for field in [
            "type",
            "content",
            "created_at",
            "version",
            "view_count",
            "cite_count",
            "edit_count",
            "pinned",
            "is_deleted",
            "importance",
            "reflection_notes",
            "steps",
        ] {
            assert_eq!(team_view[field], local_view[field], "{id}: {field}");
        }
        let team_events = lethe(&lead_url, &["events", "--memory", id]).1["items"].as_array().unwrap().len();
        assert_eq!(team_events, local_events(id), "{id}: the audit moved with the memory");
    }
    let local_start = lethe(local, &["show", &quarantined]).1["deleted_at"].as_str().unwrap().to_string();
    let team_start = lethe(&lead_url, &["show", &quarantined]).1["deleted_at"].as_str().unwrap().to_string();
    assert!(team_start > local_start, "quarantined as of the push: {team_start} after {local_start}");
    assert_eq!(lethe(&lead_url, &["show", &kept]).1["version"], 2);
    // The history moved; who did what is recorded as brought by the push.
    let team_history = lethe(&lead_url, &["history", &procedure]).1.to_string();
    assert!(team_history.contains("pushed:"), "{team_history}");
    assert_eq!(team_history.replace("pushed:", ""), lethe(local, &["history", &procedure]).1.to_string());
    // The erased memory's text is nowhere; its record moved.
    assert_eq!(lethe(&lead_url, &["show", &erased]).0, 4);
    let erased_audit = lethe(&lead_url, &["events", "--memory", &erased]).1;
    assert!(erased_audit["items"].as_array().unwrap().iter().any(|e| e["action"] == "hard"), "{erased_audit}");
    assert!(!erased_audit.to_string().contains("Temporary note"), "{erased_audit}");
    // The archived output comes back byte for byte under the team store's number, which the
    // memo names.
    let memo = lethe(&lead_url, &["show", &tool]).1["content"].as_str().unwrap().to_string();
    let no: String = memo.trim_start_matches("[Archive#").chars().take_while(char::is_ascii_digit).collect();
    assert!(memo.ends_with(": ls of the home directory]"), "{memo}");
    let (code, v) = lethe(&lead_url, &["unarchive", &no]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(lethe(&lead_url, &["show", &tool]).1["content"], output);
    // The push itself is in the audit, under the curator's name.
    let pushes = lethe(&lead_url, &["events", "--action", "push"]).1;
    assert_eq!(pushes["items"].as_array().unwrap().len(), 1, "{pushes}");
    assert_eq!(pushes["items"][0]["actor"], format!("user:{lead}"), "{pushes}");

    // Idempotent: a second push adds nothing at all, audit included.
    let count = rows(&db);
    let (code, v) = lethe(&lead_url, &["push", local]);
    assert_eq!(code, 0, "{v}");
    assert_eq!((v["pushed"].as_u64(), v["skipped_existing"].as_u64()), (Some(0), Some(5)), "{v}");
    assert_eq!((v["audit_actions"].as_u64(), v["audit_events"].as_u64()), (Some(0), Some(0)), "{v}");
    assert_eq!(rows(&db), count, "a second push added rows");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `n` old memories as JSONL for the batch to work on: created in 2024, most of importance 0
/// (forgotten), some in the review band, a few pinned, every fifth a near-copy of the one
/// before, a tenth working memories in sessions.
fn old_memories(n: usize) -> String {
    const WORDS: &[&str] = &[
        "deploy", "docker", "build", "cache", "token", "auth", "billing", "invoice", "queue", "retry", "timeout",
        "schema", "index", "replica", "backup", "restore", "cluster", "node", "pod", "helm", "chart", "alert",
        "metric", "trace", "span", "log", "rotate", "secret", "vault", "policy",
    ];
    let mut state = 0x5eed_1e7e_u64;
    let mut next = move |k: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % k as u64) as usize
    };
    let mut out = String::new();
    let mut prev = String::new();
    for i in 0..n {
        // Every fifth memory is a near-copy of the one before ("… again"): a duplicate.
        let content = if i % 5 == 4 {
            format!("{prev} again")
        } else {
            let words: Vec<&str> = (0..16).map(|_| WORDS[next(WORDS.len())]).collect();
            format!("{} n{i}", words.join(" "))
        };
        let tier = [
            "episodic", "episodic", "episodic", "semantic", "semantic", "working", "episodic", "semantic", "episodic",
            "semantic",
        ][i % 10];
        let importance = [0.0, 0.0, 0.0, 0.0, 0.3, 0.0, 0.8, 0.0, 0.0, 0.3][i % 10];
        let line = serde_json::json!({
            "id": format!("mem_old_{i:06}"), "type": tier, "content": content,
            "importance": importance,
            "created_at": format!("2024-0{}-1{}T08:00:00Z", 1 + i % 9, i % 10),
            "pinned": i % 97 == 0,
            "session_id": if tier == "working" { Value::String(format!("s{}", i % 7)) } else { Value::Null },
        });
        out.push_str(&line.to_string());
        out.push('\n');
        prev = content;
    }
    out
}

fn count(c: &mut postgres::Client, sql: &str) -> i64 {
    c.query_one(sql, &[]).unwrap().get(0)
}

/// Every memory's audit matches its state (soft events − restores = 1 in quarantine, 0 when
/// active) and no memory has two review events, once no other session is left (a killed client's
/// included); the soft and review counts.
fn audit_matches_state(url: &str, what: &str) -> (i64, i64) {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    // The server ends a killed client's session (rolling its transaction back) when it next
    // reads from the closed socket: at once when idle, after the statement in progress.
    let sessions =
        "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()";
    let started = std::time::Instant::now();
    while count(&mut c, sessions) > 0 && started.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(count(&mut c, sessions), 0, "{what}: the killed client's session is ended, holding nothing");
    let bad = count(
        &mut c,
        "SELECT COUNT(*) FROM memory_item m WHERE \
           (SELECT COUNT(*) FROM memory_forgetting_event e WHERE e.memory_id = m.id AND e.action = 'soft') \
         - (SELECT COUNT(*) FROM lethe_action a WHERE a.memory_id = m.id AND a.action = 'restore') \
         <> COALESCE(m.is_deleted, 0)",
    );
    assert_eq!(bad, 0, "{what}: memories whose soft events − restores differ from their state");
    let twice = count(
        &mut c,
        "SELECT COUNT(*) FROM (SELECT memory_id FROM memory_forgetting_event WHERE action = 'review' \
         GROUP BY memory_id HAVING COUNT(*) > 1) t",
    );
    assert_eq!(twice, 0, "{what}: one review event per entry into the band");

    (
        count(&mut c, "SELECT COUNT(*) FROM memory_forgetting_event WHERE action = 'soft'"),
        count(&mut c, "SELECT COUNT(*) FROM memory_forgetting_event WHERE action = 'review'"),
    )
}

/// `kill -9` of `lethe forget` on a team store at random points (RELIABILITY.md, guarantee 2
/// on PostgreSQL): each decision chunk is one server transaction, so a kill leaves whole
/// chunks; the audit matches every memory's state, the re-run completes, and a further run
/// writes no event.
#[test]
fn kill_9_of_the_forgetting_batch_on_a_team_store_leaves_it_consistent() {
    use std::os::unix::process::ExitStatusExt;
    use std::time::{Duration, Instant};
    let Some(server) = server() else { return };
    let long = std::env::var("LETHE_LONG").is_ok_and(|v| v == "1");
    let (n, trials) = if long { (20_000, 20) } else { (4_000, 4) };
    // The prepared store: a local file pushed in, then used as the template of every trial.
    let template = new_database(&server);
    assert_eq!(lethe(&template, &["admin", "setup"]).0, 0);
    let dir = std::env::temp_dir().join(format!("lethe-pg-kill-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let (jsonl, file) = (dir.join("old.jsonl"), dir.join("old.db"));
    std::fs::write(&jsonl, old_memories(n)).unwrap();
    let (code, v) = lethe(file.to_str().unwrap(), &["import", jsonl.to_str().unwrap()]);
    assert_eq!((code, v["imported"].as_u64()), (0, Some(n as u64)), "{v}");
    let (code, v) = lethe(&template, &["push", file.to_str().unwrap()]);
    assert_eq!((code, v["pushed"].as_u64()), (0, Some(n as u64)), "{v}");
    std::fs::remove_dir_all(&dir).unwrap();
    let template_name = template.rsplit('/').next().unwrap().to_string();
    let trial_db = |k: &str| {
        let name = format!("{template_name}_{k}");
        let mut admin = postgres::Client::connect(&format!("{server}/postgres"), postgres::NoTls).unwrap();
        admin.batch_execute(&format!("CREATE DATABASE {name} TEMPLATE {template_name}")).unwrap();
        format!("{server}/{name}")
    };
    let spawn = |db: &str| {
        Command::new(env!("CARGO_BIN_EXE_lethe"))
            .args(["--db", db, "forget"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let settles = |db: &str, what: &str| {
        let (code, v) = lethe(db, &["forget"]);
        assert_eq!(code, 0, "{what}: the re-run completes: {v}");
        let before = audit_matches_state(db, what);
        let (code, v) = lethe(db, &["forget"]);
        assert_eq!(code, 0, "{what}: a further run completes: {v}");
        for key in ["soft_deleted", "review", "working_gate", "purged"] {
            assert_eq!(v[key].as_array().map(Vec::len), Some(0), "{what}: a further run has nothing to {key}: {v}");
        }
        assert_eq!(audit_matches_state(db, what), before, "{what}: a further run writes no event");
    };

    let events_so_far = |db: &str| {
        let mut c = postgres::Client::connect(db, postgres::NoTls).unwrap();
        count(&mut c, "SELECT COUNT(*) FROM memory_forgetting_event")
    };
    // The uninterrupted run, watched for its first committed chunk: the kill points of odd
    // trials fall in the writing phase that follows.
    let full = trial_db("full");
    let started = Instant::now();
    let mut child = spawn(&full);
    let mut first_commit = None;
    let status = loop {
        if first_commit.is_none() && events_so_far(&full) > 0 {
            first_commit = Some(started.elapsed());
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let run_time = started.elapsed();
    let write_time = run_time.saturating_sub(first_commit.unwrap_or(run_time / 2));
    assert!(status.success());
    let full_events = audit_matches_state(&full, "uninterrupted");
    assert!(full_events.0 > n as i64 / 2, "most memories are forgotten: {full_events:?}");
    settles(&full, "uninterrupted");

    let mut seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    println!("kill -9 on PostgreSQL: seed {seed}");
    let (mut before_first, mut mid, mut after_last, mut finished) = (0, 0, 0, 0);
    let mut points = Vec::new();
    for trial in 0..trials {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let unit = (seed % 1000) as f64 / 1000.0;
        let db = trial_db(&format!("t{trial}"));
        let mut child = spawn(&db);
        let started = Instant::now();
        // Even trials: anywhere in the run; odd ones: after the first chunk committed.
        if trial % 2 == 0 {
            std::thread::sleep(run_time.mul_f64(unit * 1.1));
        } else {
            while started.elapsed() < run_time * 4 && events_so_far(&db) == 0 && child.try_wait().unwrap().is_none() {
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(write_time.mul_f64(unit));
        }
        let delay = started.elapsed();
        let _ = child.kill();
        let status = child.wait().unwrap();
        let what = format!("trial {trial} (kill after {} ms)", delay.as_millis());
        let (soft, review) = audit_matches_state(&db, &what);
        let kind = if status.signal() != Some(9) {
            finished += 1;
            "finished"
        } else if soft + review == 0 {
            before_first += 1;
            "before the first commit"
        } else if (soft, review) == full_events {
            after_last += 1;
            "after the last commit"
        } else {
            mid += 1;
            "mid-batch"
        };
        points.push(format!("{}ms:{kind}({}/{})", delay.as_millis(), soft + review, full_events.0 + full_events.1));
        settles(&db, &what);
    }
    println!(
        "kill -9 of `lethe forget` on PostgreSQL: N = {n}, uninterrupted run {} ms ({} soft + {} review events), \
         {trials} trials: {mid} mid-batch, {before_first} before the first commit, {after_last} after the last commit, \
         {finished} finished\n  kill points: {}",
        run_time.as_millis(),
        full_events.0,
        full_events.1,
        points.join(", ")
    );
    assert!(mid >= trials / 4, "enough kills land mid-batch to mean something ({mid} of {trials})");
}

/// The window's live updates on a team store: the server watcher reports a write
/// by another role's `lethe` process, by id, well within a second.
#[test]
fn the_server_watcher_reports_another_roles_write_within_a_second() {
    let Some(server) = server() else { return };
    let db = new_database(&server);
    assert_eq!(lethe(&db, &["admin", "setup"]).0, 0);
    let bot = format!("bot_{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    add(&db, "add-agent", &bot);
    let (tx, rx) = std::sync::mpsc::channel();
    let _w = lethe_engine::watch::watch_postgres(&db, move |e| {
        let _ = tx.send((std::time::Instant::now(), e));
    })
    .unwrap();
    for k in 0..3 {
        let (code, v) = lethe(
            &with_role(&db, &bot, "pw"),
            &["remember", "--type", "semantic", "--content", &format!("Watched write number {k} on the team store.")],
        );
        assert_eq!(code, 0, "{v}");
        let committed = std::time::Instant::now();
        let id = v["id"].as_str().unwrap().to_string();
        let (at, ev) = loop {
            let (at, ev) = rx.recv_timeout(std::time::Duration::from_secs(5)).expect("an event within 5 s");
            match &ev {
                lethe_engine::watch::WatchEvent::Changed { ids: Some(ids), .. } if ids.contains(&id) => break (at, ev),
                lethe_engine::watch::WatchEvent::Changed { .. } => continue,
                other => panic!("unexpected {other:?}"),
            }
        };
        let after = at.saturating_duration_since(committed);
        println!("write {k}: reported {} ms after the writer exited ({ev:?})", after.as_millis());
        assert!(after < std::time::Duration::from_secs(1), "reported {} ms after the commit", after.as_millis());
    }
}

/// `kill -9` of `lethe import` into a team store: each chunk of [`CHUNK`] lines is one server
/// transaction, so a kill leaves whole chunks (each row with its signature), the killed
/// session's open transaction rolls back, and a re-run imports exactly the rest.
#[test]
fn kill_9_of_the_importer_on_a_team_store_keeps_whole_chunks_and_resumes() {
    use lethe_engine::transfer::CHUNK;
    use std::os::unix::process::ExitStatusExt;
    use std::time::{Duration, Instant};
    let Some(server) = server() else { return };
    let long = std::env::var("LETHE_LONG").is_ok_and(|v| v == "1");
    let (n, max_trials) = if long { (40 * CHUNK, 20) } else { (8 * CHUNK, 4) };
    let dir = std::env::temp_dir().join(format!("lethe-pg-import-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("big.jsonl");
    std::fs::write(&file, old_memories(n)).unwrap();
    let file_arg = file.to_str().unwrap();
    // Uninterrupted, once, for the kill points.
    let scratch = new_database(&server);
    assert_eq!(lethe(&scratch, &["admin", "setup"]).0, 0);
    let started = Instant::now();
    let (code, v) = lethe(&scratch, &["import", file_arg]);
    assert_eq!((code, v["imported"].as_u64()), (0, Some(n as u64)), "{v}");
    let full = started.elapsed();

    let db = new_database(&server);
    assert_eq!(lethe(&db, &["admin", "setup"]).0, 0);
    let mut c = postgres::Client::connect(&db, postgres::NoTls).unwrap();
    let mut state = 0x0dd_ba11_u64;
    let mut unit = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % 10_000) as f64 / 10_000.0
    };
    let (mut rows, mut trials, mut mid, mut finished) = (0i64, 0, 0, false);
    let mut points = Vec::new();
    while trials < max_trials && !finished {
        trials += 1;
        let remaining = (n as i64 - rows) as f64 / n as f64;
        let delay = full.mul_f64(0.1 + 0.6 * remaining * unit());
        let mut child = Command::new(env!("CARGO_BIN_EXE_lethe"))
            .args(["--db", &db, "import", file_arg])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        let status = child.wait().unwrap();
        let what = format!("import trial {trials} (kill after {} ms)", delay.as_millis());
        if status.signal() != Some(9) {
            assert!(status.success(), "{what}: {status}");
            finished = true;
        }
        // The killed session goes away; its open transaction with it.
        let gone = Instant::now();
        while count(
            &mut c,
            "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
        ) > 0
        {
            assert!(gone.elapsed() < Duration::from_secs(20), "{what}: the killed session is still on the server");
            std::thread::sleep(Duration::from_millis(50));
        }
        let now_rows = count(&mut c, "SELECT COUNT(*) FROM memory_item");
        assert_eq!(now_rows % CHUNK as i64, 0, "{what}: whole chunks only, {now_rows} rows");
        assert!(now_rows >= rows, "{what}: committed chunks stay");
        assert_eq!(count(&mut c, "SELECT COUNT(*) FROM lethe_signature"), now_rows, "{what}: signatures with rows");
        if now_rows > rows && !finished {
            mid += 1;
        }
        points.push(format!("{}ms:{rows}→{now_rows}", delay.as_millis()));
        rows = now_rows;
    }
    let (code, v) = lethe(&db, &["import", file_arg]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["skipped_existing"].as_i64(), Some(rows), "existing ids are skipped: {v}");
    assert_eq!(v["imported"].as_i64(), Some(n as i64 - rows), "the rest is imported: {v}");
    assert_eq!(count(&mut c, "SELECT COUNT(*) FROM memory_item"), n as i64);
    assert_eq!(count(&mut c, "SELECT COUNT(DISTINCT id) FROM memory_item"), n as i64, "never duplicated");
    std::fs::remove_dir_all(&dir).unwrap();
    println!(
        "kill -9 of `lethe import` on a team store: {n} lines, uninterrupted {} ms; {trials} kills: {mid} mid-import, \
         finished: {finished}\n  kill points: {}",
        full.as_millis(),
        points.join(", ")
    );
    assert!(mid >= 1, "at least one kill landed between chunks");
}

/// Every row of every table and every sequence's position, for "nothing written" on a server
/// (the counterpart of comparing an SQLite file byte for byte).
fn contents(url: &str) -> Vec<(String, i64, String)> {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let tables: Vec<String> = c
        .query(
            "SELECT tablename::TEXT FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema') \
             ORDER BY tablename",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut out: Vec<(String, i64, String)> = tables
        .into_iter()
        .map(|t| {
            let r = c
                .query_one(
                    &format!(
                        "SELECT COUNT(*), md5(COALESCE(string_agg(t::TEXT, E'\\n' ORDER BY t::TEXT), '')) FROM \"{t}\" t"
                    ),
                    &[],
                )
                .unwrap();
            (t, r.get(0), r.get(1))
        })
        .collect();
    for r in c.query("SELECT sequencename::TEXT, COALESCE(last_value, 0) FROM pg_sequences ORDER BY 1", &[]).unwrap() {
        out.push((r.get(0), r.get(1), "sequence".into()));
    }
    out
}

#[test]
fn hostile_arguments_on_a_team_store_exit_2_and_write_nothing() {
    let Some(server) = server() else { return };
    let db = new_database(&server);
    assert_eq!(lethe(&db, &["admin", "setup"]).0, 0);
    let suffix = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let agent = format!("agent_{suffix}");
    add(&db, "add-agent", &agent);
    let as_agent = with_role(&db, &agent, "pw");
    let (code, v) =
        lethe(&db, &["remember", "--type", "semantic", "--content", "the staging database lives in eu-west-1"]);
    assert_eq!(code, 0, "{v}");
    let (code, v) = lethe(
        &db,
        &["remember", "--type", "procedural", "--content", "ship a release", "--steps", r#"["build","tag"]"#],
    );
    assert_eq!(code, 0, "{v}");
    let procedure = v["id"].as_str().unwrap().to_string();
    let dir = std::env::temp_dir().join(format!("lethe-team-hostile-{suffix}"));
    std::fs::create_dir_all(&dir).unwrap();
    let inputs = hostile::Inputs::write(&dir);
    let before = contents(&db);
    let mut checked = 0;
    // The owner (what a curator's script runs as) and an agent role, whose writes pass the
    // server's own triggers as well.
    for (who, url) in [("owner", &db), ("agent", &as_agent)] {
        for (what, args) in hostile::cases(&inputs, &procedure) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = Command::new(env!("CARGO_BIN_EXE_lethe"))
                .env("RUST_BACKTRACE", "1")
                .arg("--db")
                .arg(url)
                .args(&args)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{who}, {what}: exit code (stderr: {err})");
            let e: Value = serde_json::from_str(err.trim())
                .unwrap_or_else(|e| panic!("{who}, {what}: stderr must be one JSON document ({e}): {err:?}"));
            assert_eq!(e["error"]["code"], "invalid_input", "{who}, {what}: {e}");
            assert!(e["error"]["message"].as_str().is_some_and(|m| m.len() > 10), "{who}, {what}: a message: {e}");
            assert!(!err.contains("panicked") && !err.contains("backtrace"), "{who}, {what}: no panic: {err}");
            assert!(out.stdout.is_empty(), "{who}, {what}: nothing on stdout");
            assert_eq!(contents(&db), before, "{who}, {what}: nothing written (every table and sequence as before)");
            checked += 1;
        }
    }
    inputs.remove();
    std::fs::remove_dir_all(&dir).unwrap();
    println!("hostile arguments on a team store: {checked} cases, each exit 2 with invalid_input, nothing written");
}
