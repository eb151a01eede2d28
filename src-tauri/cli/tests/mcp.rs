//! Drives `lethe mcp` as an agent host does: a child process over stdio, through the rmcp
//! client. initialize, list tools, remember, recall, forget, restore, pin,
//! get_meta_memory_stats, and an unknown key rejected.

use rmcp::model::{CallToolRequestParam, ClientInfo, Implementation};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};

fn db() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lethe-mcp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("mcp.db")
}

fn text(r: &rmcp::model::CallToolResult) -> Value {
    let t = r.content[0].as_text().expect("text content").text.clone();
    serde_json::from_str(&t).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_host_can_use_every_core_tool() {
    let path = db();
    let transport = TokioChildProcess::new(tokio::process::Command::new(env!("CARGO_BIN_EXE_lethe")).configure(|c| {
        c.arg("--db").arg(&path).arg("mcp");
    }))
    .unwrap();
    let info = ClientInfo {
        client_info: Implementation {
            name: "test-host".into(),
            version: "1.0".into(),
            ..Implementation::from_build_env()
        },
        ..Default::default()
    };
    let client = info.serve(transport).await.expect("initialize");
    assert_eq!(client.peer_info().unwrap().server_info.name, "lethe");

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for n in [
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
        "similar",
    ] {
        assert!(names.contains(&n), "tool {n} listed: {names:?}");
    }
    let schema = &tools.iter().find(|t| t.name == "remember").unwrap().input_schema;
    assert_eq!(schema.get("additionalProperties"), Some(&json!(false)), "schemas reject unknown keys");

    let call = |name: &'static str, args: Value| {
        let client = &client;
        async move {
            client.call_tool(CallToolRequestParam { name: name.into(), arguments: args.as_object().cloned() }).await
        }
    };
    let r = call(
        "remember",
        json!({"type": "semantic", "content": "Docker volumes need the container uid", "tags": ["docker"]}),
    )
    .await
    .unwrap();
    let id = text(&r)["id"].as_str().unwrap().to_string();
    let r = call("recall", json!({"query": "docker uid", "limit": 5})).await.unwrap();
    assert_eq!(text(&r)["results"][0]["id"], json!(id));
    let r = call("get_meta_memory_stats", json!({"memory_id": id})).await.unwrap();
    assert_eq!(text(&r)["recall_count"], json!(1), "pending recall hits are visible at once");
    let r = call("forget", json!({"id": id, "reason": "testing"})).await.unwrap();
    assert_eq!(text(&r)["action"], json!("soft"));
    let r = call("recall", json!({"query": "docker uid"})).await.unwrap();
    assert_eq!(text(&r)["results"], json!([]), "forgotten memories leave recall");
    let r = call("restore", json!({"id": id})).await.unwrap();
    assert_eq!(text(&r)["is_deleted"], json!(false));
    let r = call("pin", json!({"id": id})).await.unwrap();
    assert_eq!(text(&r)["pinned"], json!(true));
    let r = call("forget", json!({"id": id, "hard": true})).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    assert_eq!(text(&r)["error"]["code"], json!("forbidden"), "same codes as the CLI: a hard delete is the person's");
    let bad = call("remember", json!({"type": "semantic", "content": "x", "colour": "blue"})).await;
    assert!(bad.is_err(), "an unknown key is rejected: {bad:?}");

    client.cancel().await.unwrap();
    // The actor of agent actions is agent:<client name>.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lethe"))
        .arg("--db")
        .arg(&path)
        .args(["events", "--memory", &id])
        .output()
        .unwrap();
    let ev: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        ev["items"].as_array().unwrap().iter().any(|e| e["actor"] == "agent:test-host" && e["action"] == "pin"),
        "{ev}"
    );
}

async fn connect(path: &std::path::Path, name: &str) -> rmcp::service::RunningService<rmcp::RoleClient, ClientInfo> {
    let transport = TokioChildProcess::new(tokio::process::Command::new(env!("CARGO_BIN_EXE_lethe")).configure(|c| {
        c.arg("--db").arg(path).arg("mcp");
    }))
    .unwrap();
    let info = ClientInfo {
        client_info: Implementation { name: name.into(), version: "1.0".into(), ..Implementation::from_build_env() },
        ..Default::default()
    };
    info.serve(transport).await.expect("initialize")
}

/// Eight agent processes write 500 memories each while a ninth recalls in a loop: every
/// write lands, no call fails (no "database is locked" reaches a caller), all are findable.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_processes_write_while_another_recalls() {
    let dir = std::env::temp_dir().join(format!("lethe-mcp-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("load.db");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (path, stop) = (path.clone(), stop.clone());
        tokio::spawn(async move {
            let c = connect(&path, "reader").await;
            let (mut ok, mut errors) = (0u32, 0u32);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let r = c
                    .call_tool(CallToolRequestParam {
                        name: "recall".into(),
                        arguments: json!({"query": "deploy token"}).as_object().cloned(),
                    })
                    .await;
                match r {
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
                    match c.call_tool(CallToolRequestParam { name: "remember".into(), arguments: args.as_object().cloned() }).await {
                        Ok(r) if r.is_error != Some(true) && text(&r)["stored"] == json!(true) => {}
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
    let r = c
        .call_tool(CallToolRequestParam { name: "memory_stats".into(), arguments: Some(Default::default()) })
        .await
        .unwrap();
    assert_eq!(text(&r)["tiers"]["episodic"]["active"], json!(4000), "every write is present");
    for p in 0..8 {
        for i in (0..500).step_by(50) {
            let q = json!({"query": format!("w{p}n{i}"), "limit": 1});
            let r = c
                .call_tool(CallToolRequestParam { name: "recall".into(), arguments: q.as_object().cloned() })
                .await
                .unwrap();
            assert!(
                text(&r)["results"][0]["content"].as_str().unwrap().contains(&format!("w{p}n{i} ")),
                "w{p}n{i} findable"
            );
        }
    }
    c.cancel().await.unwrap();
    println!("load: 8 writers x 500, {reads} recalls during the writes, 0 errors");
}
