//! About and "Connect an agent": where the `lethe` executable is, the exact MCP configuration
//! each host needs for the open database, and a connection test that runs `lethe mcp` on that
//! database and lists its tools. Nothing here writes another program's configuration.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};
use ts_rs::TS;

/// What the About box shows.
#[derive(Debug, Clone, Serialize, TS)]
pub struct About {
    /// The app's version (the workspace's, as `lethe --version` prints it).
    pub version: String,
    pub db_path: Option<String>,
    /// The model recall runs on (`semantic + lexical (<fingerprint>)`), or why it is lexical only.
    pub recall: String,
    pub semantic: bool,
    /// The `lethe` executable the agent configurations name, when one was found.
    pub lethe: Option<String>,
}

/// One host's configuration, ready to paste.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct HostConfig {
    /// `claude-code`, `claude-desktop`, `cursor` or `generic`.
    pub host: String,
    pub label: String,
    /// Where the text goes, for a person.
    pub hint: String,
    /// `command` (a shell command to run) or `json` (a configuration file's content).
    pub kind: String,
    pub text: String,
}

/// The configurations of every host for the open database.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ConnectInfo {
    /// The `lethe` executable (beside the app, else on PATH), checked to exist.
    pub lethe: Option<String>,
    /// Why no `lethe` was found, when none was.
    pub lethe_error: Option<String>,
    pub db_path: Option<String>,
    pub hosts: Vec<HostConfig>,
}

/// What `Test connection` found.
#[derive(Debug, Clone, Default, Serialize, TS)]
pub struct ConnectionTest {
    pub ok: bool,
    /// The command that was run, as a person would type it.
    pub command: String,
    /// `name version` of the server from its initialize answer.
    pub server: Option<String>,
    pub protocol: Option<String>,
    pub tools: Vec<String>,
    pub elapsed_ms: u64,
    pub error: Option<String>,
}

/// The server name under which hosts know Lethe.
const SERVER: &str = "lethe";
/// How long the whole connection test may take (start, initialize, tools/list).
pub const TEST_TIMEOUT: Duration = Duration::from_secs(15);

/// The `lethe` executable: the one installed beside this app (the package puts both in
/// /usr/bin; a build puts both in target/<profile>), else the first on PATH.
pub fn find_lethe() -> Result<PathBuf, String> {
    let beside = std::env::current_exe().ok().and_then(|exe| exe.parent().map(|d| d.join("lethe")));
    let path_dirs = std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect::<Vec<_>>()).unwrap_or_default();
    let candidates = beside.into_iter().chain(path_dirs.into_iter().map(|d| d.join("lethe")));
    candidates
        .filter(|p| is_executable(p))
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
        .next()
        .ok_or_else(|| "no lethe executable beside the app nor on PATH".to_string())
}

fn is_executable(p: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(p) else { return false };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// The arguments `lethe` gets from every host: the database named explicitly, so the agent
/// writes exactly where the window looks, whatever `LETHE_DB` the host has.
fn server_args(db: &str) -> Vec<String> {
    vec!["--db".into(), db.into(), "mcp".into()]
}

/// Quotes `s` for a POSIX shell when it holds anything but safe characters.
fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A JSON string literal.
fn js(s: &str) -> String {
    Value::from(s).to_string()
}

/// `["--db", "<db>", "mcp"]` on one line, so the configuration reads at a glance.
fn args_json(db: &str) -> String {
    format!("[{}]", server_args(db).iter().map(|a| js(a)).collect::<Vec<_>>().join(", "))
}

/// The `mcpServers` document Claude Desktop and Cursor read, `command` before `args`.
fn mcp_servers_json(lethe: &str, db: &str) -> String {
    format!(
        "{{\n  \"mcpServers\": {{\n    \"{SERVER}\": {{\n      \"command\": {},\n      \"args\": {}\n    }}\n  }}\n}}",
        js(lethe),
        args_json(db)
    )
}

fn generic_json(lethe: &str, db: &str) -> String {
    format!("{{\n  \"type\": \"stdio\",\n  \"command\": {},\n  \"args\": {}\n}}", js(lethe), args_json(db))
}

/// The configuration of each host, with `lethe` and the database filled in.
pub fn host_configs(lethe: &str, db: &str) -> Vec<HostConfig> {
    let host = |host: &str, label: &str, hint: &str, kind: &str, text: String| HostConfig {
        host: host.into(),
        label: label.into(),
        hint: hint.into(),
        kind: kind.into(),
        text,
    };
    let mut claude = vec!["claude", "mcp", "add", "--transport", "stdio", "--scope", "user", SERVER, "--", lethe]
        .into_iter()
        .map(shell_quote)
        .collect::<Vec<_>>();
    claude.extend(server_args(db).iter().map(|a| shell_quote(a)));
    vec![
        host(
            "claude-code",
            "Claude Code",
            "Run in a terminal (--scope user: in every project).",
            "command",
            claude.join(" "),
        ),
        host(
            "claude-desktop",
            "Claude Desktop",
            "Settings → Developer → Edit Config: merge into claude_desktop_config.json, then restart Claude Desktop.",
            "json",
            mcp_servers_json(lethe, db),
        ),
        host(
            "cursor",
            "Cursor",
            "Merge into ~/.cursor/mcp.json (every project) or .cursor/mcp.json in one project.",
            "json",
            mcp_servers_json(lethe, db),
        ),
        host(
            "generic",
            "Any MCP host (stdio)",
            "Start this command and speak MCP on its standard input and output.",
            "json",
            generic_json(lethe, db),
        ),
    ]
}

pub fn connect_info(db: Option<&Path>) -> ConnectInfo {
    let db_path = db.map(|p| p.display().to_string());
    let (lethe, lethe_error) = match find_lethe() {
        Ok(p) => (Some(p.display().to_string()), None),
        Err(e) => (None, Some(e)),
    };
    // Without a found executable the configurations still name `lethe`, for a PATH the
    // host may have; the window says that none was found here.
    let hosts = match &db_path {
        Some(db) => host_configs(lethe.as_deref().unwrap_or("lethe"), db),
        None => Vec::new(),
    };
    ConnectInfo { lethe, lethe_error, db_path, hosts }
}

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `lethe --db DB mcp`, as a host would, and performs `initialize`, `initialized` and
/// `tools/list` over its stdio within `timeout`.
///
/// A team server's address holds its password: the child gets it through its environment
/// (`LETHE_DB`, which no other user can read, unlike the arguments `ps` shows), and the
/// command shown names the server without the password.
pub fn test_connection(lethe: &Path, db: &Path, timeout: Duration) -> ConnectionTest {
    let start = Instant::now();
    let db = db.display().to_string();
    let (args, env, shown_args) = if lethe_engine::storage::postgres::is_url(&db) {
        let shown = format!("LETHE_DB={}", shell_quote(&lethe_engine::storage::postgres::display(&db)));
        (vec!["mcp".to_string()], Some(db), vec![shown])
    } else {
        (server_args(&db), None, Vec::new())
    };
    let command = shown_args
        .into_iter()
        .chain(std::iter::once(shell_quote(&lethe.display().to_string())))
        .chain(args.iter().map(|a| shell_quote(a)));
    let mut report = ConnectionTest { command: command.collect::<Vec<_>>().join(" "), ..Default::default() };
    match exchange(lethe, &args, env.as_deref(), timeout, &mut report) {
        Ok(()) => report.ok = true,
        Err(e) => report.error = Some(e),
    }
    report.elapsed_ms = start.elapsed().as_millis() as u64;
    report
}

fn exchange(
    lethe: &Path,
    args: &[String],
    db_env: Option<&str>,
    timeout: Duration,
    report: &mut ConnectionTest,
) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    let mut command = Command::new(lethe);
    if let Some(db) = db_env {
        command.env("LETHE_DB", db);
    }
    let child = command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", lethe.display()))?;
    let mut server = Server(child);
    let mut stdin = server.0.stdin.take().ok_or("no stdin")?;
    let stdout = server.0.stdout.take().ok_or("no stdout")?;
    let stderr = server.0.stderr.take().ok_or("no stderr")?;
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let (etx, erx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        let mut text = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok).take(20) {
            text.push_str(&line);
            text.push('\n');
        }
        let _ = etx.send(text);
    });
    let mut send = |v: Value| -> Result<(), String> {
        writeln!(stdin, "{v}").and_then(|()| stdin.flush()).map_err(|e| format!("cannot write to lethe mcp: {e}"))
    };
    let server_failed = |what: &str| {
        let said = erx.recv_timeout(Duration::from_millis(500)).unwrap_or_default();
        format!("{what}{}", if said.trim().is_empty() { String::new() } else { format!(": {}", said.trim()) })
    };
    let version = env!("CARGO_PKG_VERSION");
    send(json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": { "name": "lethe-app-connection-test", "version": version }
        }
    }))?;
    let init = answer(&rx, 1, deadline).map_err(|e| server_failed(&e))?;
    let result = &init["result"];
    report.protocol = result["protocolVersion"].as_str().map(str::to_string);
    report.server = result["serverInfo"]["name"].as_str().map(|name| match result["serverInfo"]["version"].as_str() {
        Some(v) => format!("{name} {v}"),
        None => name.to_string(),
    });
    send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))?;
    send(json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {} }))?;
    let list = answer(&rx, 2, deadline).map_err(|e| server_failed(&e))?;
    let tools = list["result"]["tools"].as_array().ok_or("tools/list answered without tools")?;
    report.tools = tools.iter().filter_map(|t| t["name"].as_str().map(str::to_string)).collect();
    if report.tools.is_empty() {
        return Err("the server lists no tools".into());
    }
    Ok(())
}

/// Waits for the answer to request `id`, skipping notifications and other lines.
fn answer(rx: &mpsc::Receiver<String>, id: u64, deadline: Instant) -> Result<Value, String> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match rx.recv_timeout(left) {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Timeout) => return Err("lethe mcp did not answer in time".into()),
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err("lethe mcp ended without answering".into()),
        };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else { continue };
        if msg["id"].as_u64() != Some(id) {
            continue;
        }
        if let Some(err) = msg.get("error") {
            return Err(format!("lethe mcp refused: {}", err["message"].as_str().unwrap_or("an error")));
        }
        return Ok(msg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_names_the_executable_and_the_database() {
        let hosts = host_configs("/usr/bin/lethe", "/home/me/my memories.db");
        let names: Vec<&str> = hosts.iter().map(|h| h.host.as_str()).collect();
        assert_eq!(names, ["claude-code", "claude-desktop", "cursor", "generic"]);
        assert_eq!(
            hosts[0].text,
            "claude mcp add --transport stdio --scope user lethe -- /usr/bin/lethe --db '/home/me/my memories.db' mcp",
            "a shell command, the path with a space quoted"
        );
        for h in &hosts[1..3] {
            let v: Value = serde_json::from_str(&h.text).unwrap();
            assert_eq!(v["mcpServers"]["lethe"]["command"], "/usr/bin/lethe", "{}", h.host);
            assert_eq!(v["mcpServers"]["lethe"]["args"], json!(["--db", "/home/me/my memories.db", "mcp"]));
        }
        assert!(hosts[1].text.contains(r#""args": ["--db", "/home/me/my memories.db", "mcp"]"#), "{}", hosts[1].text);
        let g: Value = serde_json::from_str(&hosts[3].text).unwrap();
        assert_eq!(
            g,
            json!({"type": "stdio", "command": "/usr/bin/lethe", "args": ["--db", "/home/me/my memories.db", "mcp"]})
        );
    }

    #[test]
    fn shell_quoting_survives_quotes() {
        assert_eq!(shell_quote("/a/b.db"), "/a/b.db");
        assert_eq!(shell_quote("it's.db"), r"'it'\''s.db'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn a_missing_executable_is_a_failed_test_not_a_hang() {
        let r = test_connection(Path::new("/nonexistent/lethe"), Path::new("/tmp/x.db"), Duration::from_secs(2));
        assert!(!r.ok);
        assert!(r.error.as_deref().unwrap_or("").contains("cannot start"), "{r:?}");
    }

    #[test]
    fn a_server_that_never_answers_times_out() {
        // `sleep` reads nothing and answers nothing: the test gives up at the deadline.
        let Some(sleep) = ["/bin/sleep", "/usr/bin/sleep"].into_iter().map(Path::new).find(|p| p.exists()) else {
            return;
        };
        let t = Instant::now();
        let r = exchange(sleep, &["30".into()], None, Duration::from_millis(300), &mut ConnectionTest::default());
        assert!(r.unwrap_err().contains("in time"));
        assert!(t.elapsed() < Duration::from_secs(5), "the server was killed, not waited for");
    }

    /// A team server's password reaches the child through its environment only: not its
    /// arguments (which `ps` shows every user), not the command the window shows.
    #[cfg(unix)]
    #[test]
    fn a_team_servers_password_is_in_the_childs_environment_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("lethe-connect-pw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let seen = dir.join("seen.txt");
        let fake = dir.join("lethe");
        std::fs::write(
            &fake,
            format!(
                "#!/bin/sh\necho \"args: $*\" > '{}'\necho \"env: $LETHE_DB\" >> '{}'\n",
                seen.display(),
                seen.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let url = "postgres://ci-bot:hunter2secret@db.example:5432/lethe";
        let r = test_connection(&fake, Path::new(url), Duration::from_secs(5));
        let text = std::fs::read_to_string(&seen).unwrap();
        assert!(text.contains("args: mcp\n"), "{text}");
        assert!(text.contains(&format!("env: {url}")), "{text}");
        assert!(!r.command.contains("hunter2secret"), "{}", r.command);
        assert!(r.command.contains("postgres://ci-bot@db.example:5432/lethe"), "{}", r.command);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The real server of this build, when it is built (cargo builds the app's tests without
    /// the CLI, so this checks only what is there).
    #[test]
    fn the_built_lethe_lists_its_tools() {
        let exe = std::env::current_exe().unwrap();
        let Some(lethe) = exe.parent().and_then(|d| d.parent()).map(|d| d.join("lethe")).filter(|p| p.exists()) else {
            return;
        };
        let dir = std::env::temp_dir().join(format!("lethe-connect-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let r = test_connection(&lethe, &dir.join("t.db"), TEST_TIMEOUT);
        assert!(r.ok, "{r:?}");
        assert!(r.tools.iter().any(|t| t == "recall") && r.tools.iter().any(|t| t == "remember"), "{:?}", r.tools);
        assert_eq!(r.protocol.as_deref(), Some("2025-11-25"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
