//! Drives `lethe mcp` as an agent host does: a child process over stdio, through the rmcp
//! client; and as a raw JSON-RPC peer that sends malformed lines.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};

type Client = rmcp::service::RunningService<rmcp::RoleClient, ClientConfig>;

fn db(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lethe-mcp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("mcp.db")
}

fn body(r: &CallToolResult) -> Value {
    let t = r.content[0].as_text().expect("text content").text.clone();
    serde_json::from_str(&t).unwrap()
}

/// The structured result of a successful call; its text content says the same.
fn ok(r: &CallToolResult) -> Value {
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let s = r.structured_content.clone().expect("structuredContent on every JSON result");
    assert_eq!(s, body(r), "text and structured content agree");
    s
}

async fn connect(path: &std::path::Path, name: &str) -> Client {
    let transport = TokioChildProcess::new(tokio::process::Command::new(env!("CARGO_BIN_EXE_lethe")).configure(|c| {
        c.arg("--db").arg(path).arg("mcp");
    }))
    .unwrap();
    ClientConfig::new(ClientCapabilities::default(), Implementation::new(name, "1.0"))
        .serve(transport)
        .await
        .expect("initialize")
}

async fn call(c: &Client, name: &'static str, args: Value) -> CallToolResult {
    c.call_tool(CallToolRequestParams::new(name).with_arguments(args.as_object().cloned().unwrap())).await.unwrap()
}

fn code(r: &CallToolResult) -> String {
    assert_eq!(r.is_error, Some(true), "{r:?}");
    body(r)["error"]["code"].as_str().unwrap().to_string()
}

const TOOLS: [&str; 17] = [
    "remember",
    "recall",
    "forget",
    "restore",
    "pin",
    "unpin",
    "feedback",
    "get_memory",
    "get_meta_memory_stats",
    "add_reflection_note",
    "archive_observation",
    "restore_archive",
    "memory_stats",
    "list_memories",
    "similar",
    "end_session",
    "undo_forget_run",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_host_can_use_every_tool() {
    let path = db("tools");
    let client = connect(&path, "test-host").await;
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "lethe");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25, "the 2025-11-25 revision is negotiated");

    let tools = client.list_all_tools().await.unwrap();
    for n in TOOLS {
        let t = tools.iter().find(|t| t.name == n).unwrap_or_else(|| panic!("tool {n} listed"));
        let a = t.annotations.as_ref().unwrap_or_else(|| panic!("{n} has annotations"));
        assert!(a.title.is_some() && a.read_only_hint.is_some() && a.destructive_hint.is_some());
        assert!(a.idempotent_hint.is_some());
        assert_eq!(a.open_world_hint, Some(false), "{n}: a closed world");
        assert_eq!(t.input_schema.get("additionalProperties"), Some(&json!(false)), "{n} rejects unknown keys");
        assert!(t.output_schema.is_some(), "{n} has an output schema");
        let s = Value::Object((*t.input_schema).clone()).to_string();
        assert!(!s.contains("nullable") && !s.contains("\"format\""), "{n}: standard JSON Schema only: {s}");
        for (k, p) in t.input_schema["properties"].as_object().unwrap() {
            assert!(p.get("description").is_some(), "{n}.{k} has a description");
        }
    }
    let remember = tools.iter().find(|t| t.name == "remember").unwrap();
    assert_eq!(
        remember.input_schema["properties"]["type"]["enum"],
        json!(["working", "episodic", "semantic", "procedural"])
    );
    assert_eq!(remember.input_schema["properties"]["importance"]["maximum"], json!(1.0));
    assert!(remember.input_schema["properties"]["supersedes"]["description"].as_str().unwrap().contains("replaces"));
    let forget = tools.iter().find(|t| t.name == "forget").unwrap();
    assert_eq!(forget.annotations.as_ref().unwrap().destructive_hint, Some(true));
    let reflect = tools.iter().find(|t| t.name == "add_reflection_note").unwrap();
    assert_eq!(
        reflect.input_schema["properties"]["failure_type"]["enum"],
        json!(["tool_error", "user_feedback", "metric_failure"])
    );

    let r = ok(&call(
        &client,
        "remember",
        json!({"type": "semantic", "content": "Docker volumes need the container uid", "tags": ["docker"]}),
    )
    .await);
    let id = r["id"].as_str().unwrap().to_string();
    let r = ok(&call(&client, "recall", json!({"query": "docker uid", "limit": 5})).await);
    assert_eq!(r["results"][0]["id"], json!(id));
    assert!(r.get("periods").is_none(), "no period named");
    let r = ok(&call(&client, "get_meta_memory_stats", json!({"memory_id": id})).await);
    assert_eq!(r["recall_count"], json!(1), "pending recall hits are visible at once");
    let r = ok(&call(&client, "recall", json!({"query": "docker uid yesterday", "limit": 5})).await);
    assert_eq!(r["periods"][0]["said"], json!("yesterday"), "the periods a query names are answered");
    let r = ok(&call(&client, "forget", json!({"id": id, "reason": "testing"})).await);
    assert_eq!(r["action"], json!("soft"));
    let r = ok(&call(&client, "recall", json!({"query": "docker uid"})).await);
    assert_eq!(r["results"], json!([]), "forgotten memories leave recall");
    let long: Vec<String> = (0..66).map(|i| format!("w{i}")).collect();
    let r = ok(&call(&client, "recall", json!({"query": format!("docker docker {}", long.join(" "))})).await);
    assert_eq!(r["dropped_words"], json!(["w63", "w64", "w65"]), "a repeated word counts once; the rest is named");
    assert_eq!(ok(&call(&client, "restore", json!({"id": id})).await)["is_deleted"], json!(false));
    assert_eq!(ok(&call(&client, "pin", json!({"id": id})).await)["pinned"], json!(true));
    let r = ok(&call(&client, "list_memories", json!({"pinned": true})).await);
    assert_eq!((r["total"].clone(), r["items"][0]["id"].clone()), (json!(1), json!(id)));
    assert_eq!(ok(&call(&client, "unpin", json!({"id": id})).await)["pinned"], json!(false));
    assert_eq!(ok(&call(&client, "feedback", json!({"memory_id": id, "helpful": true})).await)["cite_count"], json!(1));
    assert_eq!(ok(&call(&client, "get_memory", json!({"id": id})).await)["view_count"], json!(1));
    let r = ok(&call(
        &client,
        "remember",
        json!({"type": "semantic", "content": "Docker volumes need the uid of the container", "supersedes": [id]}),
    )
    .await);
    let newer = r["id"].as_str().unwrap().to_string();
    assert_eq!(ok(&call(&client, "get_memory", json!({"id": id})).await)["superseded_by"], json!([newer]));
    let r = ok(&call(&client, "similar", json!({"memory_id": newer})).await);
    assert!(r["items"].is_array());
    // Another value for the same statement: remember names the older memory as a possible
    // update, with the values that differ (and supersedes nothing by itself).
    let older = "Retry limit for the email sender is 3 attempts.";
    let first = ok(&call(&client, "remember", json!({"type": "semantic", "content": older})).await);
    let newer_value = "Retry limit for the email sender is 5 attempts.";
    let second = ok(&call(&client, "remember", json!({"type": "semantic", "content": newer_value})).await);
    let named = &second["similar"][0];
    assert_eq!(
        (named["id"].clone(), named["kind"].clone()),
        (first["id"].clone(), json!("possible update")),
        "{second}"
    );
    assert_eq!(named["evidence"]["differing"][0], json!({"what": "value", "this": "5", "other": "3"}));
    assert_eq!(ok(&call(&client, "get_memory", json!({"id": first["id"]})).await)["superseded_by"], json!([]));
    let p = ok(&call(
        &client,
        "remember",
        json!({"type": "procedural", "content": "Rotate the signing keys", "steps": ["generate", "publish"]}),
    )
    .await);
    let pid = p["id"].as_str().unwrap().to_string();
    let r = ok(&call(
        &client,
        "add_reflection_note",
        json!({"memory_id": pid, "failure_type": "tool_error", "failure_description": "publish timed out"}),
    )
    .await);
    assert_eq!(r["notes"], json!(1));
    let r = ok(&call(&client, "remember", json!({"type": "procedural", "content": "Rotate the signing keys weekly", "memory_id": pid, "expected_version": r["version"]})).await);
    assert_eq!(r["stored"], json!(true));
    let o = ok(&call(
        &client,
        "remember",
        json!({"type": "episodic", "content": "ls -la printed 400 lines of build output", "source": "tool:bash"}),
    )
    .await);
    let a = ok(&call(&client, "archive_observation", json!({"memory_id": o["id"], "memo": "ls output"})).await);
    let m = ok(&call(&client, "restore_archive", json!({"archive_no": a["archive_no"]})).await);
    assert_eq!(m["content"], json!("ls -la printed 400 lines of build output"), "exact bytes back");
    let s = ok(&call(&client, "memory_stats", json!({})).await);
    assert_eq!(s["total_active"], json!(6), "four, and the two retry limits");

    // Engine errors keep the CLI's codes; a hard delete is the person's, even confirmed.
    assert_eq!(code(&call(&client, "forget", json!({"id": id, "hard": true})).await), "forbidden");
    assert_eq!(code(&call(&client, "forget", json!({"id": id, "hard": true, "confirm": true})).await), "forbidden");
    assert_eq!(code(&call(&client, "get_memory", json!({"id": "mem_missing"})).await), "not_found");
    let r = call(
        &client,
        "add_reflection_note",
        json!({"memory_id": pid, "failure_type": "tool_error", "failure_description": "x", "expected_version": 1}),
    )
    .await;
    assert_eq!(code(&r), "conflict");

    // Unknown tools stay protocol errors.
    let unknown = client.call_tool(CallToolRequestParams::new("no_such_tool")).await;
    assert!(unknown.is_err(), "{unknown:?}");

    client.cancel().await.unwrap();
    // The actor of agent actions is agent:<client name>.
    let out = Command::new(env!("CARGO_BIN_EXE_lethe"))
        .arg("--db")
        .arg(&path)
        .args(["events", "--memory", &id])
        .output()
        .unwrap();
    let ev: Value = serde_json::from_slice(&out.stdout).unwrap();
    let items = ev["items"].as_array().unwrap();
    assert!(items.iter().any(|e| e["actor"] == "agent:test-host" && e["action"] == "pin"), "{ev}");
}

/// Each kind of bad argument is a tool result the model can read, naming what is wrong, and
/// writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_are_invalid_input_results() {
    let path = db("invalid");
    let client = connect(&path, "user").await;
    let cases = [
        ("remember", json!({"type": "semantic", "content": "x y z", "colour": "blue"}), "colour"),
        ("remember", json!({"type": "semantic", "content": "x y z", "importance": 2}), "importance"),
        ("remember", json!({"type": "semantic", "content": "x y z", "importance": "high"}), "importance"),
        ("remember", json!({"type": "semantik", "content": "x y z"}), "semantik"),
        ("remember", json!({"type": "semantic"}), "content"),
        ("recall", json!({"query": "x", "limit": 0}), "limit"),
        ("recall", json!({"query": "x", "limit": 1000}), "limit"),
        ("recall", json!({"query": "x", "type": "nope"}), "nope"),
        ("get_meta_memory_stats", json!({"memory_id": "mem_x", "query": "y"}), "not both"),
        (
            "add_reflection_note",
            json!({"memory_id": "mem_x", "failure_type": "oops", "failure_description": "d"}),
            "oops",
        ),
        ("list_memories", json!({"sort": "random"}), "random"),
        ("list_memories", json!({"limit": -1}), "limit"),
        ("forget", json!({}), "id"),
        ("memory_stats", json!({"x": 1}), "x"),
    ];
    for (tool, args, names) in cases {
        let r = call(&client, tool, args.clone()).await;
        assert_eq!(code(&r), "invalid_input", "{tool} {args}");
        let msg = body(&r)["error"]["message"].as_str().unwrap().to_string();
        assert!(msg.contains(names), "{tool} {args}: {msg}");
    }
    let s = ok(&call(&client, "memory_stats", json!({})).await);
    assert_eq!(s["total_active"], json!(0), "nothing was written");
    client.cancel().await.unwrap();
    // A client calling itself "user" is still an agent.
    let out = Command::new(env!("CARGO_BIN_EXE_lethe")).arg("--db").arg(&path).args(["events"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("\"actor\": \"user\""));
}

/// memory_stats and list_memories score with every memory's neighbours; those of memories
/// another program stored (here: imported, then the lists dropped as a program that knows
/// nothing of them would leave the file) are searched by the first call and kept, not
/// searched again at every call.
#[tokio::test]
async fn scoring_reads_keep_the_neighbours_they_searched() {
    let path = db("keep");
    let file = path.with_extension("jsonl");
    let lines: String = (0..300)
        .map(|i| {
            format!(
                "{{\"content\":\"Deploy of service {} failed: a missing env var on host {}\",\"type\":\"episodic\"}}\n",
                i % 7,
                i
            )
        })
        .collect();
    std::fs::write(&file, lines).unwrap();
    let out =
        Command::new(env!("CARGO_BIN_EXE_lethe")).arg("--db").arg(&path).arg("import").arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lists = || -> i64 {
        let c = lethe_engine::store::open(&path).unwrap();
        c.query_row("SELECT COUNT(*) FROM lethe_neighbour", [], |r| r.get(0)).unwrap()
    };
    assert_eq!(lists(), 300, "the import stored every memory's list");
    lethe_engine::storage::db::Connection::open(&path).unwrap().execute_batch("DELETE FROM lethe_neighbour").unwrap();
    assert_eq!(lists(), 0, "dropped, as by another program");
    let client = connect(&path, "keeper").await;
    let page = ok(&call(&client, "list_memories", json!({"sort": "score", "limit": 5})).await);
    assert_eq!(page["total"], json!(300));
    assert_eq!(lists(), 300, "every memory's list is kept");
    let s = ok(&call(&client, "memory_stats", json!({})).await);
    assert_eq!(s["total_active"], json!(300));
    client.cancel().await.unwrap();
}

/// get_meta_memory_stats with {} and with {query} after a known number of recalls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meta_memory_stats_count_exactly() {
    let path = db("meta");
    let c = connect(&path, "meta-host").await;
    let mut ids = Vec::new();
    for content in [
        "React server components render on the server only",
        "React server components cannot use hooks like useState",
        "Postgres vacuum reclaims dead tuples",
        "The office coffee machine is on floor three",
    ] {
        ids.push(
            ok(&call(&c, "remember", json!({"type": "semantic", "content": content})).await)["id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    // Three recalls of the React topic (each hits both React memories, nothing else shares
    // its words), one of Postgres.
    let mut react_hits = 0;
    for _ in 0..3 {
        let r = ok(&call(&c, "recall", json!({"query": "react server components", "limit": 2})).await);
        react_hits += r["results"].as_array().unwrap().len();
    }
    assert_eq!(react_hits, 6);
    let r = ok(&call(&c, "recall", json!({"query": "postgres vacuum", "limit": 1})).await);
    assert_eq!(r["results"][0]["id"], json!(ids[2]));

    let all = ok(&call(&c, "get_meta_memory_stats", json!({})).await);
    assert_eq!(all["memories"], json!(4));
    assert_eq!(all["recalled_memories"], json!(3));
    assert_eq!(all["total_recalls"], json!(7));
    assert_eq!(all["never_recalled"], json!(1), "the coffee machine");
    assert_eq!(all["most_recalled"][0]["recall_count"], json!(3));
    assert_eq!(all["most_recalled"].as_array().unwrap().len(), 3);
    for m in all["lowest_confidence"].as_array().unwrap() {
        assert!(m["avg_confidence"].as_f64().unwrap() < 0.5);
    }

    let topic = ok(&call(&c, "get_meta_memory_stats", json!({"query": "react server components", "limit": 2})).await);
    assert_eq!(topic["query"], json!("react server components"));
    assert_eq!(topic["memories"], json!(2));
    assert_eq!(topic["recalled_memories"], json!(2));
    assert_eq!(topic["total_recalls"], json!(6), "the topic query itself is not a recall");
    assert_eq!(topic["never_recalled"], json!(0));
    let again = ok(&call(&c, "get_meta_memory_stats", json!({})).await);
    assert_eq!(again["total_recalls"], json!(7), "asking about a topic counts no recall");
    c.cancel().await.unwrap();
}

fn raw_server(path: &std::path::Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_lethe"))
        .arg("--db")
        .arg(path)
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Issue #23: ten malformed lines get ten JSON-RPC errors, an over-long line is refused,
/// and the server still answers a tools/call; a clean end of stdin exits 0 quietly.
#[test]
fn malformed_lines_get_errors_and_the_server_keeps_serving() {
    let path = db("raw");
    let mut child = raw_server(&path);
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut next = || {
        let mut l = String::new();
        out.read_line(&mut l).unwrap();
        serde_json::from_str::<Value>(&l).unwrap_or_else(|e| panic!("{e}: {l:?}"))
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    writeln!(stdin, "{init}").unwrap();
    assert_eq!(next()["result"]["protocolVersion"], json!("2025-11-25"));
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
    let bad: [(String, i64, Value); 10] = [
        ("{not json".into(), -32700, Value::Null),
        ("[1, 2".into(), -32700, Value::Null),
        ("\u{1}\u{2}".into(), -32700, Value::Null),
        (json!({"jsonrpc": "2.0", "id": 11, "method": "no/such/method"}).to_string(), -32601, json!(11)),
        (json!({"jsonrpc": "2.0", "id": 12, "method": "bogus", "params": {}}).to_string(), -32601, json!(12)),
        (json!({"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": 5}).to_string(), -32602, json!(13)),
        (
            json!({"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": {"name": 7}}).to_string(),
            -32602,
            json!(14),
        ),
        (
            json!({"jsonrpc": "2.0", "id": "s15", "method": "tools/call", "params": {"arguments": {}}}).to_string(),
            -32602,
            json!("s15"),
        ),
        (json!({"jsonrpc": "2.0", "id": 16, "method": "initialize", "params": "x"}).to_string(), -32602, json!(16)),
        ("[]".into(), -32600, Value::Null),
    ];
    for (line, _, _) in &bad {
        writeln!(stdin, "{line}").unwrap();
    }
    // rmcp answers unknown methods from its own task, so replies may come in any order:
    // match them by id (those without one come from this server's reader, in order).
    let replies: Vec<Value> = (0..bad.len()).map(|_| next()).collect();
    let mut unnamed = replies.iter().filter(|r| r["id"].is_null());
    for (line, code, id) in &bad {
        let r = if id.is_null() {
            unnamed.next().unwrap_or_else(|| panic!("a reply to {line}"))
        } else {
            replies.iter().find(|r| r["id"] == *id).unwrap_or_else(|| panic!("a reply to {line}: {replies:?}"))
        };
        assert_eq!(r["error"]["code"], json!(code), "{line} → {r}");
        assert!(r.as_object().unwrap().contains_key("id"), "JSON-RPC errors always carry an id: {r}");
    }
    // A line over the cap (3 MiB with the default 1 MiB content limit) is refused unread.
    let long = format!("{{\"jsonrpc\":\"2.0\",\"id\":20,\"method\":\"ping\",\"pad\":\"{}\"}}", "x".repeat(4 << 20));
    writeln!(stdin, "{long}").unwrap();
    let r = next();
    assert_eq!(r["error"]["code"], json!(-32600), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("bytes"), "{r}");
    let call = json!({"jsonrpc": "2.0", "id": 30, "method": "tools/call", "params": {"name": "remember", "arguments": {"type": "semantic", "content": "still serving after bad lines"}}});
    writeln!(stdin, "{call}").unwrap();
    let r = next();
    assert_eq!(r["id"], json!(30));
    assert_eq!(r["result"]["structuredContent"]["stored"], json!(true), "{r}");
    drop(stdin);
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success() && err.is_empty(), "a clean end: {status} {err}");
}

/// A request that does not decode (a lone surrogate escape, a `NaN` or `1e999` id) is
/// answered with an error the client can match: its id as the client wrote it, or, when no
/// JSON answer can carry that id, an error with `"id": null` and the end of the session, so
/// the client is never left waiting.
#[test]
fn undecodable_requests_get_an_answer_the_client_can_match() {
    let path = db("undecodable");
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let start = || {
        let mut child = raw_server(&path);
        let mut stdin = child.stdin.take().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        writeln!(stdin, "{init}").unwrap();
        let mut l = String::new();
        out.read_line(&mut l).unwrap();
        writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
        (child, stdin, out)
    };
    let (mut child, mut stdin, mut out) = start();
    let mut line = || {
        let mut l = String::new();
        out.read_line(&mut l).unwrap();
        l
    };
    // A lone surrogate in the arguments: the error names the request's id.
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{{"name":"recall","arguments":{{"query":"\ud800"}}}}}}"#
    )
    .unwrap();
    let r: Value = serde_json::from_str(&line()).unwrap();
    assert_eq!((r["id"].clone(), r["error"]["code"].clone()), (json!(41), json!(-32700)), "{r}");
    // A lone surrogate in the id itself: the answer repeats it as written.
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":"q\udc00","method":"ping"}}"#).unwrap();
    let l = line();
    assert!(l.contains(r#""id":"q\udc00""#) && l.contains("-32700"), "{l}");
    // And the server still serves.
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": 42, "method": "ping"})).unwrap();
    let r: Value = serde_json::from_str(&line()).unwrap();
    assert_eq!(r["id"], json!(42), "{r}");
    drop(stdin);
    child.wait().unwrap();

    for id in ["NaN", "1e999", "Infinity"] {
        let (mut child, mut stdin, mut out) = start();
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#).unwrap();
        let mut l = String::new();
        out.read_line(&mut l).unwrap();
        let r: Value = serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l:?}"));
        assert!(r["id"].is_null() && r["error"]["code"] == json!(-32700), "{id}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("session ends"), "{id}: {r}");
        // The session ends: stdout closes and the process exits, with stdin still open.
        let mut rest = String::new();
        assert_eq!(out.read_line(&mut rest).unwrap(), 0, "{id}: nothing after the end: {rest:?}");
        let started = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            assert!(started.elapsed() < std::time::Duration::from_secs(10), "{id}: the server exits");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        drop(stdin);
    }
}

/// Eight agent processes write 500 memories each while a ninth recalls in a loop: every
/// write lands, no call fails (no "database is locked" reaches a caller), all are findable.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_processes_write_while_another_recalls() {
    let path = db("load");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (path, stop) = (path.clone(), stop.clone());
        tokio::spawn(async move {
            let c = connect(&path, "reader").await;
            let (mut ok, mut errors) = (0u32, 0u32);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                match c
                    .call_tool(
                        CallToolRequestParams::new("recall")
                            .with_arguments(json!({"query": "deploy token"}).as_object().cloned().unwrap()),
                    )
                    .await
                {
                    Ok(r) if r.is_error != Some(true) => ok += 1,
                    _ => errors += 1,
                }
            }
            c.cancel().await.unwrap();
            (ok, errors)
        })
    };
    let writers: Vec<_> = (0..8)
        .map(|p| {
            let path = path.clone();
            tokio::spawn(async move {
                let c = connect(&path, &format!("writer{p}")).await;
                let mut errors = Vec::new();
                for i in 0..500 {
                    let args = json!({"type": "episodic", "content": format!("deploy token w{p}n{i} rotated for service {p}-{i}")});
                    match c.call_tool(CallToolRequestParams::new("remember").with_arguments(args.as_object().cloned().unwrap())).await {
                        Ok(r) if r.is_error != Some(true) && body(&r)["stored"] == json!(true) => {}
                        other => errors.push(format!("{other:?}")),
                    }
                }
                c.cancel().await.unwrap();
                errors
            })
        })
        .collect();
    for w in writers {
        let errors = w.await.unwrap();
        assert!(errors.is_empty(), "writer errors: {:?}", &errors[..errors.len().min(3)]);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (reads, read_errors) = reader.await.unwrap();
    assert_eq!(read_errors, 0, "recall never failed");
    assert!(reads > 0);
    let c = connect(&path, "checker").await;
    let r = call(&c, "memory_stats", json!({})).await;
    assert_eq!(body(&r)["tiers"]["episodic"]["active"], json!(4000), "every write is present");
    for p in 0..8 {
        for i in (0..500).step_by(50) {
            let r = call(&c, "recall", json!({"query": format!("w{p}n{i}"), "limit": 1})).await;
            assert!(
                body(&r)["results"][0]["content"].as_str().unwrap().contains(&format!("w{p}n{i} ")),
                "w{p}n{i} findable"
            );
        }
    }
    c.cancel().await.unwrap();
    println!("load: 8 writers x 500, {reads} recalls during the writes, 0 errors");
}

/// Issue #19: the remember calls one client sends at once are written together (group commit)
/// and each still gets its own answer, error and audit row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_remembers_of_one_client_each_get_their_own_answer() {
    let path = db("group");
    let c = connect(&path, "group-writer").await;
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..60 {
        let args = match i {
            // The same text twice: one is stored, the other names it.
            20 | 21 => json!({"type": "semantic", "content": "Every migration ships with a rollback script"}),
            // A supersede of a memory that does not exist: an error for this call alone.
            30 => json!({"type": "semantic", "content": "Exports moved to 03:00 UTC", "supersedes": ["mem_missing"]}),
            _ => {
                json!({"type": "episodic", "content": format!("build {i} on runner {} took {} seconds", i % 4, 40 + i)})
            }
        };
        let peer = c.peer().clone();
        calls.spawn(async move {
            let r = peer
                .call_tool(CallToolRequestParams::new("remember").with_arguments(args.as_object().cloned().unwrap()));
            (i, r.await.unwrap())
        });
    }
    let mut answers = std::collections::BTreeMap::new();
    while let Some(done) = calls.join_next().await {
        let (i, r) = done.unwrap();
        answers.insert(i, r);
    }
    assert_eq!(code(&answers[&30]), "not_found");
    let (a, b) = (ok(&answers[&20]), ok(&answers[&21]));
    let (kept, dup) = if a["stored"] == json!(true) { (a, b) } else { (b, a) };
    assert_eq!(dup["stored"], json!(false), "{dup}");
    assert_eq!(dup["existing_id"], kept["id"], "the duplicate names the one stored");
    let mut ids: Vec<String> = answers
        .iter()
        .filter(|(i, _)| ![21, 20, 30].contains(*i))
        .map(|(_, r)| ok(r)["id"].as_str().expect("stored").to_string())
        .collect();
    ids.push(kept["id"].as_str().unwrap().to_string());
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 58, "58 memories, each its own id");
    c.cancel().await.unwrap();
    let conn = lethe_engine::store::open(&path).unwrap();
    let f = lethe_engine::audit::EventFilter { action: Some("remember".into()), limit: 1000, ..Default::default() };
    let mut audited: Vec<String> =
        lethe_engine::audit::list_events(&conn, &f).unwrap().into_iter().map(|e| e.memory_id.unwrap()).collect();
    audited.sort();
    assert_eq!(audited, ids, "one audit row per stored memory");
    let n: i64 = conn.query_row("SELECT COUNT(*) FROM memory_item", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 58, "the failed call wrote nothing");
}

/// Issue #23: an abnormal end is reported. Here the host stops reading (stdout closed): the
/// answer cannot be written, and the server says so on stderr and exits non-zero.
#[test]
fn a_closed_stdout_is_an_abnormal_end() {
    let path = db("closed");
    let mut child = raw_server(&path);
    let mut stdin = child.stdin.take().unwrap();
    drop(child.stdout.take());
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    writeln!(stdin, "{init}").unwrap();
    let _ = writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
    drop(stdin);
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!status.success(), "non-zero exit: {status}");
    assert!(err.contains("\"error\"") && err.contains("Broken pipe"), "reported on stderr: {err}");
}

/// Older hosts keep working: each revision rmcp knows up to 2025-11-25 is echoed; a newer
/// or unknown one is answered with 2025-11-25.
#[test]
fn older_protocol_revisions_are_negotiated() {
    let path = db("versions");
    for (asked, answered) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let mut child = raw_server(&path);
        let mut stdin = child.stdin.take().unwrap();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}});
        writeln!(stdin, "{init}").unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        drop(stdin);
        let r: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(r["result"]["protocolVersion"], json!(answered), "{asked}");
        assert!(child.wait().unwrap().success());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_session_batch_archive_and_partial_restore_over_mcp() {
    let path = db("seeds");
    let client = connect(&path, "seed-host").await;
    let w = ok(&call(
        &client,
        "remember",
        json!({"type": "working", "session_id": "m1", "content": "the nightly export job ran out of memory"}),
    )
    .await);
    let w = w["id"].as_str().unwrap().to_string();
    let args = json!({"session_id": "m1", "task_kind": "export", "rules": [{"content": "The nightly export needs 4 GB of memory", "importance": 0.9}]});
    let end = ok(&call(&client, "end_session", args.clone()).await);
    assert_eq!(end["task_logs"], json!([w]));
    assert_eq!(end["already_ended"], false);
    assert_eq!(ok(&call(&client, "end_session", args).await)["already_ended"], true, "a second end is a no-op");
    let global = ok(&call(&client, "recall", json!({"query": "nightly export memory"})).await);
    assert!(!global["results"].as_array().unwrap().iter().any(|h| h["id"] == w.as_str()), "not in global recall");
    let same = ok(&call(&client, "recall", json!({"query": "nightly export memory", "task_kind": "export"})).await);
    assert!(same["results"].as_array().unwrap().iter().any(|h| h["id"] == w.as_str()), "recalled for its task kind");
    let bad = call(
        &client,
        "end_session",
        json!({"session_id": "m1", "task_kind": "x", "rules": [{"content": "y", "extra": 1}]}),
    )
    .await;
    assert_eq!(code(&bad), "invalid_input");

    let mut items = Vec::new();
    for i in 0..3 {
        let o = ok(&call(
            &client,
            "remember",
            json!({"type": "episodic", "source": "tool:bash", "content": format!("a\nb{i}\nc\n")}),
        )
        .await);
        items.push(json!({"memory_id": o["id"], "memo": format!("output {i}")}));
    }
    let mut broken = items.clone();
    broken[2]["memory_id"] = json!("mem_missing");
    assert_eq!(code(&call(&client, "archive_observation", json!({"items": broken})).await), "not_found");
    let both = json!({"items": items.clone(), "memory_id": "x", "memo": "y"});
    assert_eq!(code(&call(&client, "archive_observation", both).await), "invalid_input");
    let r = ok(&call(&client, "archive_observation", json!({"items": items})).await);
    let no = r["items"][2]["archive_no"].clone();
    let span = ok(&call(&client, "restore_archive", json!({"archive_no": no, "lines": "2:2"})).await);
    assert_eq!(span["text"], "b2\n");
    let span = ok(&call(&client, "restore_archive", json!({"archive_no": no, "bytes": "0:1"})).await);
    assert_eq!(span["text"], "a");
    let back = ok(&call(&client, "restore_archive", json!({"archive_no": no})).await);
    assert_eq!(back["content"], "a\nb2\nc\n");
    client.cancel().await.unwrap();
}

/// A person's pin over MCP: an agent's unpin, forget (quarantine) and supersede of a memory a
/// person pinned are tool errors with code `forbidden`, and its pinned remember too; the pin
/// stays, and each refused attempt is in the audit under the agent's name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_cannot_undo_a_persons_pin_over_mcp() {
    let path = db("pins");
    let id = {
        let mut conn = lethe_engine::store::open(&path).unwrap();
        let m = lethe_engine::lifecycle::NewMemory::new(
            lethe_engine::Tier::Semantic,
            "Customer data never leaves the EU region",
        );
        let now = chrono::Utc::now();
        let id = lethe_engine::lifecycle::remember(&mut conn, &m, "user", now).unwrap().id().unwrap().to_string();
        lethe_engine::lifecycle::pin(&mut conn, &id, "user", now).unwrap();
        id
    };
    let client = connect(&path, "cursor").await;
    assert_eq!(code(&call(&client, "unpin", json!({"id": id})).await), "forbidden");
    assert_eq!(code(&call(&client, "forget", json!({"id": id, "reason": "stale"})).await), "forbidden");
    let r = call(
        &client,
        "remember",
        json!({"type": "semantic", "content": "Customer data may live in any region", "supersedes": [id]}),
    )
    .await;
    assert_eq!(code(&r), "forbidden");
    let r = call(&client, "remember", json!({"type": "semantic", "content": "My own rule", "pinned": true})).await;
    assert_eq!(code(&r), "forbidden");
    let m = ok(&call(&client, "get_memory", json!({"id": id})).await);
    assert_eq!((m["pinned"].clone(), m["is_deleted"].clone()), (json!(true), json!(false)), "{m}");
    client.cancel().await.unwrap();
    let conn = lethe_engine::store::open(&path).unwrap();
    let refused = lethe_engine::pins::refused_attempts(&conn, 0, 10).unwrap();
    let seen: Vec<(&str, &str)> = refused.iter().map(|r| (r.actor.as_str(), r.attempted.as_str())).collect();
    assert_eq!(
        seen,
        vec![("agent:cursor", "supersede"), ("agent:cursor", "quarantine"), ("agent:cursor", "unpin")],
        "each attempt audited under the agent's name"
    );
}
