//! Tool-call throughput of `lethe mcp`: one server process on a fresh database,
//! driven over raw JSON-RPC lines the way an agent host drives it. Measures `remember` and
//! `recall` calls per second, sequential (one call in flight, a host waiting on each answer)
//! and pipelined (all calls written at once, answers read as they come).
//!
//! lethe-mcp-bench [--lethe PATH] [--calls N] [--db PATH]
//! Prints one JSON document. PATH defaults to the `lethe` beside this binary.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

struct Server {
    child: Child,
    input: BufWriter<ChildStdin>,
    output: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn start(lethe: &str, db: &str) -> Result<Server> {
        let mut child = Command::new(lethe)
            .args(["--db", db, "mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {lethe}"))?;
        let input = BufWriter::new(child.stdin.take().context("stdin")?);
        let output = BufReader::new(child.stdout.take().context("stdout")?);
        Ok(Server { child, input, output, next_id: 1 })
    }

    fn send(&mut self, method: &str, params: Value) -> Result<u64> {
        let id = self.next_id;
        self.next_id += 1;
        writeln!(self.input, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    fn read(&mut self) -> Result<Value> {
        let mut line = String::new();
        if self.output.read_line(&mut line)? == 0 {
            bail!("the server closed stdout");
        }
        let v: Value = serde_json::from_str(&line)?;
        if v.get("error").is_some() || v["result"]["isError"] == json!(true) {
            bail!("call failed: {v}");
        }
        Ok(v)
    }

    fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        self.send(method, params)?;
        self.input.flush()?;
        self.read()
    }
}

fn tool(name: &str, args: Value) -> Value {
    json!({"name": name, "arguments": args})
}

fn content(i: usize) -> String {
    format!("bench note {i}: service {} rotated its deploy token after incident {}", i % 37, i * 7919 % 10007)
}

fn per_s(n: usize, t: Instant) -> f64 {
    (n as f64 / t.elapsed().as_secs_f64()).round()
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mut lethe = std::env::current_exe()?.with_file_name("lethe").to_string_lossy().into_owned();
    let mut calls = 500usize;
    let mut db = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--lethe" => lethe = args.next().context("--lethe PATH")?,
            "--calls" => calls = args.next().context("--calls N")?.parse()?,
            "--db" => db = Some(args.next().context("--db PATH")?),
            other => bail!("unknown argument {other}"),
        }
    }
    let dir = std::env::temp_dir().join(format!("lethe-mcp-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let db = db.unwrap_or_else(|| dir.join("bench.db").to_string_lossy().into_owned());
    let mut s = Server::start(&lethe, &db)?;
    let init = s.call(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
    )?;
    writeln!(s.input, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;

    let t = Instant::now();
    for i in 0..calls {
        s.call("tools/call", tool("remember", json!({"type": "episodic", "content": content(i)})))?;
    }
    let remember_seq = per_s(calls, t);
    let t = Instant::now();
    for i in 0..calls {
        s.call("tools/call", tool("recall", json!({"query": format!("service {} deploy token", i % 37), "limit": 5})))?;
    }
    let recall_seq = per_s(calls, t);

    let t = Instant::now();
    for i in calls..2 * calls {
        s.send("tools/call", tool("remember", json!({"type": "episodic", "content": content(i)})))?;
    }
    s.input.flush()?;
    for _ in 0..calls {
        s.read()?;
    }
    let remember_pipe = per_s(calls, t);
    let t = Instant::now();
    for i in 0..calls {
        s.send("tools/call", tool("recall", json!({"query": format!("incident {} token", i % 101), "limit": 5})))?;
    }
    s.input.flush()?;
    for _ in 0..calls {
        s.read()?;
    }
    let recall_pipe = per_s(calls, t);

    drop(s.input);
    s.child.wait()?;
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({
            "lethe": lethe,
            "protocol": init["result"]["protocolVersion"],
            "calls": calls,
            "sequential": {"remember_per_s": remember_seq, "recall_per_s": recall_seq},
            "pipelined": {"remember_per_s": remember_pipe, "recall_per_s": recall_pipe},
        }))?
    );
    Ok(())
}
