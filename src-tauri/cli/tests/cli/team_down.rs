//! A team store's address whose hosts are all down: `db_unavailable` within the wait the caller
//! set (`--db-wait`, `LETHE_DB_WAIT`), nothing written anywhere. Needs no server: the ports
//! are free ones on the loopback interface.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Two loopback ports nothing listens on (bound for a moment, then released).
fn free_ports() -> (u16, u16) {
    let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let b = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    (a.local_addr().unwrap().port(), b.local_addr().unwrap().port())
}

fn url() -> String {
    let (p1, p2) = free_ports();
    format!("postgres://agent@127.0.0.1:{p1},127.0.0.1:{p2}/lethe?target_session_attrs=read-write")
}

/// `lethe ARGS` with a home of its own (so any file it wrote would show), timed.
fn run(home: &Path, env: &[(&str, &str)], args: &[&str]) -> (Output, Duration) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lethe"));
    cmd.env_remove("LETHE_DB").env_remove("LETHE_DB_WAIT");
    cmd.env("HOME", home).env("XDG_DATA_HOME", home.join("data")).env("XDG_CONFIG_HOME", home.join("config"));
    cmd.envs(env.iter().copied()).args(args);
    let started = Instant::now();
    let out = cmd.output().unwrap();
    (out, started.elapsed())
}

fn error(out: &Output) -> (i32, Value) {
    let v: Value = serde_json::from_slice(&out.stderr)
        .unwrap_or_else(|_| panic!("an error as JSON on stderr: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), v)
}

fn home(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lethe-team-down-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn assert_untouched(home: &Path) {
    let left: Vec<_> = std::fs::read_dir(home).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "nothing is written when the team server is unreachable: {left:?}");
    std::fs::remove_dir_all(home).unwrap();
}

#[test]
fn a_team_address_whose_hosts_are_all_down_answers_db_unavailable_within_the_wait() {
    let dir = home("wait");
    let db = url();
    for args in [
        vec!["--db", &db, "--db-wait", "2", "remember", "--type", "semantic", "--content", "The retry limit is 5."],
        vec!["--db", &db, "--db-wait", "2", "recall", "retry limit"],
        vec!["--db", &db, "--db-wait", "2", "stats"],
    ] {
        let (out, took) = run(&dir, &[], &args);
        let (code, v) = error(&out);
        assert_eq!((code, v["error"]["code"].as_str()), (1, Some("db_unavailable")), "{args:?}: {v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains("accepted writes within"), "the message says what was waited for: {message}");
        assert!(!message.contains("agent:") && message.contains("127.0.0.1"), "hosts shown, no secret: {message}");
        // It tried again until the wait was over, and not much longer (one attempt is
        // refused at once on the loopback interface).
        assert!(
            took >= Duration::from_millis(1500) && took < Duration::from_secs(6),
            "{args:?}: answered after {took:?} with a 2 s wait"
        );
    }
    assert_untouched(&dir);
}

#[test]
fn the_wait_comes_from_the_environment_and_zero_tries_once() {
    let dir = home("env");
    let db = url();
    let (out, took) = run(&dir, &[("LETHE_DB", &db), ("LETHE_DB_WAIT", "1")], &["stats"]);
    assert_eq!(error(&out).1["error"]["code"], "db_unavailable");
    assert!(took >= Duration::from_millis(700) && took < Duration::from_secs(5), "LETHE_DB_WAIT=1: {took:?}");

    let (out, took) = run(&dir, &[("LETHE_DB_WAIT", "30")], &["--db", &db, "--db-wait", "0", "stats"]);
    assert_eq!(error(&out).1["error"]["code"], "db_unavailable");
    assert!(took < Duration::from_millis(1500), "--db-wait 0 (over the environment's 30): one try, {took:?}");

    for bad in ["-1", "soon", "NaN", "1e9"] {
        let (out, _) = run(&dir, &[], &["--db", &db, "--db-wait", bad, "stats"]);
        let (code, v) = error(&out);
        assert_eq!((code, v["error"]["code"].as_str()), (2, Some("invalid_input")), "--db-wait {bad}: {v}");
    }
    let (out, _) = run(&dir, &[("LETHE_DB_WAIT", "later")], &["--db", &db, "stats"]);
    assert_eq!(error(&out).1["error"]["code"], "invalid_input", "LETHE_DB_WAIT=later");
    assert_untouched(&dir);
}

#[test]
fn lethe_mcp_on_an_unreachable_team_address_says_so() {
    let dir = home("mcp");
    let db = url();
    let (out, took) = run(&dir, &[], &["--db", &db, "--db-wait", "1", "mcp"]);
    let (code, v) = error(&out);
    assert_eq!((code, v["error"]["code"].as_str()), (1, Some("db_unavailable")), "{v}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_untouched(&dir);
}
