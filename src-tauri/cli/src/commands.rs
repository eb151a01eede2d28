//! The subcommands. Each parses its arguments, calls the engine and returns JSON.

use std::mem::ManuallyDrop;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use lethe_engine::lifecycle::{self, ListQuery, NewMemory, ProcedureFields, RememberOutcome};
use lethe_engine::ops::answers;
use lethe_engine::{
    archive, audit, forgetting, meta, procedural, recall, store, time, transfer, Error, Result, Settings, Tier,
};
use serde_json::{json, Value};

#[derive(Parser, Debug)]
#[command(name = "lethe", version, about = "See and steer what your AI agents remember and forget")]
pub struct Cli {
    /// Database file (default: $LETHE_DB, else the platform data dir).
    #[arg(long, global = true)]
    pub db: Option<PathBuf>,
    /// Evaluate a read-only command as if it were this instant (ISO-8601). Commands that
    /// write refuse it: they always use the clock.
    #[arg(long, global = true)]
    pub now: Option<String>,
    /// Who is acting: `agent:<name>` (name of 1-64 characters from A-Z a-z 0-9 . _ -), or
    /// `user` for the person at an interactive terminal. Default: `user` on a terminal,
    /// `agent:cli` otherwise.
    #[arg(long, global = true)]
    pub actor: Option<String>,
    /// Open the database for viewing only: nothing is written, triggers cannot fire. Opens
    /// files that are otherwise refused for holding triggers or views Lethe did not create.
    #[arg(long, global = true)]
    pub read_only: bool,
    /// On a team server: how many seconds to wait for one of the address's hosts to accept
    /// (writes, with `target_session_attrs=read-write`) when none does, at the start and after
    /// a lost connection (default: $LETHE_DB_WAIT, else 60; 0 tries each host once).
    #[arg(long, global = true, value_name = "SECONDS")]
    pub db_wait: Option<f64>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Store a memory (or CAS-update a procedural one with --memory-id --expected-version).
    Remember(Box<RememberArgs>),
    /// Read one memory with its explained ForgetScore (does not count as usage).
    Show { id: String },
    /// A page of memories.
    List(ListArgs),
    /// Scores without content.
    Score {
        ids: Vec<String>,
        #[arg(long)]
        all: bool,
    },
    /// One policy batch.
    Forget {
        #[arg(long, conflicts_with = "undo")]
        dry_run: bool,
        /// Restore everything run RUN quarantined (its id from `lethe forget` or `lethe events --runs`).
        #[arg(long, value_name = "RUN")]
        undo: Option<String>,
    },
    /// Soft delete (default) or hard delete with --hard --confirm.
    Delete {
        id: String,
        #[arg(long)]
        reason: Option<String>,
        #[arg(long)]
        hard: bool,
        #[arg(long)]
        confirm: bool,
    },
    /// Bring a memory back from quarantine exactly as it was.
    Restore { id: String },
    /// Pin a memory: the policy never forgets a pinned memory.
    Pin { id: String },
    /// Unpin a memory.
    Unpin { id: String },
    /// Set a memory's importance (0 to 1).
    Importance { id: String, value: f64 },
    /// Replace a memory's content (a new version); `--expected-version` refuses a stale edit.
    Edit {
        id: String,
        #[arg(long, allow_hyphen_values = true)]
        content: String,
        /// The version the edit was prepared from; another edit since then is a conflict (exit 3).
        #[arg(long)]
        expected_version: Option<i64>,
    },
    /// An agent used the memory.
    Cite { id: String },
    /// Soft-deleted memories.
    Quarantine,
    /// The audit log, newest first.
    Events {
        #[arg(long)]
        memory: Option<String>,
        #[arg(long)]
        action: Option<String>,
        #[arg(long = "by")]
        by_actor: Option<String>,
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// The forget runs instead, newest first (id, when, how many quarantined, undone).
        #[arg(long, conflicts_with_all = ["memory", "action", "by_actor"])]
        runs: bool,
    },
    /// Replace tool observations' content by a memo, keeping the bytes; several IDs are one
    /// transaction (all or nothing).
    Archive {
        #[arg(required = true)]
        ids: Vec<String>,
        /// One memo for every ID.
        #[arg(long, allow_hyphen_values = true)]
        memo: Option<String>,
        /// A JSON array of memos, one per ID in the same order; or any other text, one memo
        /// for every ID.
        #[arg(long)]
        memo_file: Option<PathBuf>,
    },
    /// Put back the exact archived bytes of an observation (hash verified); with --lines or
    /// --bytes, print just that span of the archived bytes and restore nothing.
    Unarchive {
        archive_no: i64,
        /// A:B, lines A to B (1-based, both included).
        #[arg(long)]
        lines: Option<String>,
        /// A:B, bytes A to B (0-based, end excluded).
        #[arg(long)]
        bytes: Option<String>,
    },
    /// End a session: its working memories become task logs of KIND; the rules of
    /// --rules (JSONL of {content, importance?, tags?, supersedes?}) become semantic memories.
    EndSession {
        session: String,
        #[arg(long)]
        task_kind: String,
        #[arg(long)]
        rules: Option<PathBuf>,
    },
    /// Every session (what it wrote, its task logs, its rules) and each task kind's logs.
    Sessions {
        #[arg(long, default_value_t = 200)]
        limit: usize,
    },
    /// Counts per tier and meta-memory summary.
    Stats,
    /// Recall statistics: of one memory (ID), of the memories recall finds for a topic
    /// (--query, not counted as recalls), or of every active memory.
    Meta {
        id: Option<String>,
        #[arg(long, allow_hyphen_values = true)]
        query: Option<String>,
        /// How many memories recall may find for --query.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Read or change policy settings.
    Settings { key: Option<String>, value: Option<String> },
    /// Ranked search with a breakdown per result (hits go to meta-memory statistics only).
    Recall(RecallArgs),
    /// The recall log: agents' recalls newest first (all, one actor's, or those that
    /// returned one memory).
    RecallLog {
        #[arg(long)]
        actor: Option<String>,
        #[arg(long)]
        memory: Option<String>,
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// The duplicates review: clusters of near-duplicates, the dominant member first; `dismiss A
    /// B` keeps both (the pair is no duplicate any more), `supersede A B` supersedes the older
    /// of the two by the newer.
    Duplicates {
        #[command(subcommand)]
        action: Option<DuplicatesAction>,
        /// How many clusters to list.
        #[arg(long, default_value_t = lethe_engine::duplicates::DEFAULT_LIMIT)]
        limit: usize,
    },
    /// The health lists: never recalled and older than 30 days, crossing the forget threshold
    /// within 7 days, pinned but never recalled, often recalled with low confidence.
    Health,
    /// The nearest active memories of a memory, by meaning and by words.
    Similar {
        id: String,
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// Append a reflection note to a procedure.
    Reflect {
        id: String,
        #[arg(long)]
        note: String,
        #[arg(long)]
        expected_version: Option<i64>,
    },
    /// Versions of a procedure, oldest first; `--notes` lists its reflection notes instead.
    History {
        id: String,
        #[arg(long)]
        notes: bool,
    },
    /// Make a new version of a procedure from an old snapshot.
    Rollback {
        id: String,
        #[arg(long)]
        to: i64,
        #[arg(long)]
        expected_version: i64,
    },
    /// Memories holding secrets or personal data; `--redact --confirm` redacts them in place.
    Scan {
        #[arg(long)]
        redact: bool,
        #[arg(long)]
        confirm: bool,
    },
    /// Import memories from JSONL, one per line; only `content` and `type` are required
    /// (README.md, "Importing memories"). One bad line and nothing is written.
    Import {
        file: PathBuf,
        /// Validate every line and report what would happen; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Export every memory as JSONL on stdout.
    Export,
    /// Move a local SQLite store into the team store (`--db postgres://…`, as a curator or
    /// the owner), keeping ids, counters, versions and audit. A second push adds nothing.
    Push { file: PathBuf },
    /// MCP server on stdio for agent hosts.
    Mcp,
    /// Team server administration (`--db postgres://…`, as the role that owns the database).
    Admin {
        #[command(subcommand)]
        action: AdminAction,
    },
    /// Load realistic demo data.
    Demo {
        #[arg(long, default_value_t = 120)]
        count: usize,
        #[arg(long, default_value_t = 7)]
        seed: u32,
    },
}

#[derive(Args, Debug)]
pub struct RecallArgs {
    #[arg(allow_hyphen_values = true)]
    pub query: String,
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    #[arg(long = "type")]
    pub tier: Option<String>,
    #[arg(long)]
    pub session: Option<String>,
    #[arg(long)]
    pub project: Option<String>,
    #[arg(long)]
    pub workflow: Option<String>,
    #[arg(long)]
    pub tags: Option<String>,
    #[arg(long)]
    pub pinned: bool,
    /// sim,rec,scene,pri
    #[arg(long)]
    pub weights: Option<String>,
    /// The caller's task kind: task logs of this kind are recalled too (never without it).
    #[arg(long)]
    pub task_kind: Option<String>,
    /// Explain: each result with its age, plus `declined` (the next candidates that ranked
    /// out and the matches excluded by state, each with its reason). Reads only: not counted
    /// in the recall statistics.
    #[arg(long)]
    pub explain: bool,
}

#[derive(Args, Debug)]
pub struct RememberArgs {
    #[arg(long = "type")]
    pub tier: Option<String>,
    #[arg(long, allow_hyphen_values = true)]
    pub content: Option<String>,
    #[arg(long)]
    pub content_file: Option<PathBuf>,
    #[arg(long)]
    pub importance: Option<f64>,
    #[arg(long)]
    pub tags: Option<String>,
    #[arg(long)]
    pub source: Option<String>,
    #[arg(long)]
    pub pinned: bool,
    #[arg(long)]
    pub session: Option<String>,
    #[arg(long)]
    pub project: Option<String>,
    #[arg(long)]
    pub created_at: Option<String>,
    #[arg(long)]
    pub task_goal: Option<String>,
    #[arg(long)]
    pub steps: Option<String>,
    #[arg(long)]
    pub trigger_conditions: Option<String>,
    #[arg(long)]
    pub workflow_name: Option<String>,
    #[arg(long)]
    pub skill_name: Option<String>,
    #[arg(long)]
    pub supersedes: Option<String>,
    #[arg(long)]
    pub memory_id: Option<String>,
    #[arg(long)]
    pub expected_version: Option<i64>,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    #[arg(long = "type")]
    pub tier: Option<String>,
    #[arg(long)]
    pub deleted: bool,
    #[arg(long)]
    pub pinned: bool,
    #[arg(long, default_value = "created")]
    pub sort: String,
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    #[arg(long)]
    pub session: Option<String>,
    #[arg(long)]
    pub project: Option<String>,
    /// Only memories whose text holds a `[REDACTED:<kind>]` placeholder.
    #[arg(long)]
    pub redacted: bool,
    /// Only semantic and procedural memories that read like dialogue (the lint flags them).
    #[arg(long)]
    pub needs_extraction: bool,
    /// Only memories written first by this actor (`agent:claude-code`, `user`).
    #[arg(long = "by", value_name = "ACTOR")]
    pub written_by: Option<String>,
}

pub use lethe_engine::store::default_db_path;

/// Opens the database (creating it, 0600 in a 0700 directory, when missing).
pub fn open_db(path: &Option<PathBuf>, read_only: bool) -> Result<rusqlite_conn::Connection> {
    let path = path.clone().unwrap_or_else(default_db_path);
    if read_only {
        store::open_read_only(&path)
    } else {
        store::open(&path)
    }
}

/// The file `lethe push` reads: opened for viewing only, so the push never changes it; a
/// file at an older schema is brought to this Lethe's first (as any command would).
fn open_push_source(file: &std::path::Path) -> Result<rusqlite_conn::Connection> {
    if !file.is_file() {
        return Err(Error::invalid(format!("{}: no such file", file.display())));
    }
    match store::open_read_only(file) {
        Err(Error::Foreign(m)) if m.contains("schema") => {
            drop(store::open(file)?);
            store::open_read_only(file)
        }
        other => other,
    }
}

/// Whether a command writes to the database. `--now` and `--read-only` are for the others.
/// Recall counts: its hits go to the meta-memory statistics (stamped with the clock).
fn writes(command: &Command) -> bool {
    match command {
        Command::Show { .. }
        | Command::List(_)
        | Command::Score { .. }
        | Command::Quarantine
        | Command::Events { .. }
        | Command::Stats
        | Command::Sessions { .. }
        | Command::Meta { .. }
        | Command::Similar { .. }
        | Command::RecallLog { .. }
        | Command::Duplicates { action: None, .. }
        | Command::Health
        | Command::History { .. }
        | Command::Export
        | Command::Recall(_) => false,
        Command::Forget { undo: Some(_), .. } => true,
        Command::Forget { dry_run, .. } | Command::Import { dry_run, .. } => !dry_run,
        Command::Scan { redact, .. } => *redact,
        Command::Settings { value, .. } => value.is_some(),
        Command::Unarchive { lines, bytes, .. } => lines.is_none() && bytes.is_none(),
        Command::Duplicates { action: Some(_), .. } => true,
        Command::Admin { .. } | Command::Push { .. } => true,
        Command::Remember(_)
        | Command::Delete { .. }
        | Command::Restore { .. }
        | Command::Pin { .. }
        | Command::Unpin { .. }
        | Command::Importance { .. }
        | Command::Edit { .. }
        | Command::Cite { .. }
        | Command::Archive { .. }
        | Command::EndSession { .. }
        | Command::Reflect { .. }
        | Command::Rollback { .. }
        | Command::Demo { .. }
        // Agents write through it, always at the clock.
        | Command::Mcp => true,
    }
}

/// Who acts: `user` only for a person at an interactive terminal, never claimed
/// by a process whose input is not one; `agent:cli` by default otherwise.
fn resolve_actor(claimed: Option<&str>, on_terminal: bool) -> Result<String> {
    use lethe_engine::actor;
    match claimed {
        None if on_terminal => Ok(actor::USER.to_string()),
        None => Ok(actor::CLI_AGENT.to_string()),
        Some(a) => {
            let a = actor::parse(a)?;
            if actor::is_person(a) && !on_terminal {
                return Err(Error::Forbidden(
                    "`--actor user` is the person at an interactive terminal; this lethe's input is not a terminal \
                     (agents act as `agent:<name>`)"
                        .into(),
                ));
            }
            Ok(a.to_string())
        }
    }
}

/// The actor a team server's role imposes, if any (see [`run`]).
fn team_actor(conn: &store::Connection, cli: &Cli, writes: bool) -> Result<(Option<String>, bool)> {
    use lethe_engine::storage::postgres::{self, Role};
    if !conn.is_postgres() {
        return Ok((None, false));
    }
    let (name, role) = postgres::role_of(conn)?;
    match role {
        Role::Reader if writes => Err(Error::Forbidden(format!(
            "the role {name} reads the team store and writes nothing (a curator or an agent role writes)"
        ))),
        Role::Agent => {
            let own = format!("agent:{name}");
            match cli.actor.as_deref() {
                Some(claimed) if claimed != own => {
                    Err(Error::Forbidden(format!("the role {name} acts as {own} on the team store, not as {claimed}")))
                }
                _ => Ok((Some(own), false)),
            }
        }
        Role::Reader => Ok((None, true)),
        // The team lead or the owner: a person the server signed in, named in the audit by
        // the role (a claimed actor is not taken: the role is who acts).
        Role::Curator | Role::Owner => {
            let own = lethe_engine::actor::person_named(&name);
            match cli.actor.as_deref() {
                Some(claimed) if claimed != own && claimed != lethe_engine::actor::USER => {
                    Err(Error::Forbidden(format!("the role {name} acts as {own} on the team store, not as {claimed}")))
                }
                _ => Ok((Some(own), false)),
            }
        }
        Role::Other => Ok((None, false)),
    }
}

/// The person's confirmation on the terminal: `question` on stderr, `yes` or `y` on stdin.
fn confirm_on_terminal(question: &str) -> Result<()> {
    use std::io::{BufRead, Write};
    let mut err = std::io::stderr();
    let _ = write!(err, "{question} [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => Err(Error::ConfirmationRequired(format!("{question} — not confirmed, nothing was changed"))),
    }
}

/// Re-exported so this crate does not name rusqlite directly.
pub mod rusqlite_conn {
    pub type Connection = lethe_engine::store::Connection;
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<Value> {
    Ok(serde_json::to_value(v)?)
}

pub fn parse_json_arg(name: &str, raw: &Option<String>) -> Result<Option<Value>> {
    match raw {
        None => Ok(None),
        Some(r) => {
            serde_json::from_str(r).map(Some).map_err(|e| Error::invalid(format!("--{name} is not valid JSON: {e}")))
        }
    }
}

pub fn split_list(raw: &Option<String>) -> Vec<String> {
    raw.as_deref()
        .map(|s| s.split(',').map(|t| t.trim().to_string()).filter(|t| !t.is_empty()).collect())
        .unwrap_or_default()
}

fn remember(conn: &mut rusqlite_conn::Connection, a: &RememberArgs, actor: &str, now: time::Instant) -> Result<Value> {
    let content = match (&a.content, &a.content_file) {
        (Some(c), None) => c.clone(),
        (None, Some(f)) => {
            let bytes = std::fs::read(f)?;
            String::from_utf8(bytes).map_err(|_| Error::invalid(format!("{} is not valid UTF-8 text", f.display())))?
        }
        (Some(_), Some(_)) => return Err(Error::invalid("give --content or --content-file, not both")),
        // A procedure's update may change its steps alone: its text then follows them.
        (None, None) if a.memory_id.is_some() => String::new(),
        (None, None) => return Err(Error::invalid("--content or --content-file is required")),
    };
    let content_given = a.content.is_some() || a.content_file.is_some();
    let tier: Tier = a.tier.as_deref().ok_or_else(|| Error::invalid("--type is required"))?.parse()?;
    let m = NewMemory {
        tier,
        content,
        importance: a.importance,
        tags: split_list(&a.tags),
        source: a.source.clone(),
        pinned: a.pinned,
        privacy_scope: None,
        owner_id: Some(actor.to_string()),
        session_id: a.session.clone(),
        project_id: a.project.clone(),
        created_at: a.created_at.as_deref().map(time::parse).transpose()?,
        procedure: ProcedureFields {
            task_goal: a.task_goal.clone(),
            steps: parse_json_arg("steps", &a.steps)?,
            trigger_conditions: parse_json_arg("trigger-conditions", &a.trigger_conditions)?,
            workflow_name: a.workflow_name.clone(),
            skill_name: a.skill_name.clone(),
        },
        supersedes: split_list(&a.supersedes),
    };
    if a.memory_id.is_some() || a.expected_version.is_some() {
        let (Some(id), Some(v)) = (&a.memory_id, a.expected_version) else {
            return Err(Error::invalid("--memory-id and --expected-version go together"));
        };
        let patch = procedural::ProcedurePatch { content: content_given.then_some(m.content), fields: m.procedure };
        return to_json(&procedural::update_answer(conn, id, v, &patch, actor, now)?);
    }
    let out: RememberOutcome = lifecycle::remember(conn, &m, actor, now)?;
    to_json(&out)
}

/// How long a `--read-only` session may run its statements in all: `$LETHE_READ_ONLY_DEADLINE_SECS`,
/// else 30 s (a list or recall of a big store takes well under a second).
fn read_only_deadline() -> std::time::Duration {
    let secs = std::env::var("LETHE_READ_ONLY_DEADLINE_SECS").ok().and_then(|v| v.parse::<u64>().ok());
    std::time::Duration::from_secs(secs.filter(|s| *s > 0).unwrap_or(30))
}

pub fn run(cli: Cli) -> Result<Option<Value>> {
    let read_only = cli.read_only;
    run_command(cli).map_err(|e| match store::interrupted_message(&e, read_only_deadline()) {
        Some(m) if read_only => Error::Refused(m),
        _ => e,
    })
}

/// `--db-wait`, else `$LETHE_DB_WAIT`, else the engine's default.
fn db_wait(flag: Option<f64>) -> Result<Option<std::time::Duration>> {
    let (secs, from) = match flag {
        Some(s) => (s, "--db-wait"),
        None => match std::env::var("LETHE_DB_WAIT").ok().filter(|v| !v.trim().is_empty()) {
            Some(v) => (
                v.trim()
                    .parse::<f64>()
                    .map_err(|_| Error::invalid(format!("LETHE_DB_WAIT={v:?}: a number of seconds")))?,
                "LETHE_DB_WAIT",
            ),
            None => return Ok(None),
        },
    };
    if !secs.is_finite() || !(0.0..=86_400.0).contains(&secs) {
        return Err(Error::invalid(format!("{from} {secs}: seconds from 0 to 86400")));
    }
    Ok(Some(std::time::Duration::from_secs_f64(secs)))
}

fn run_command(cli: Cli) -> Result<Option<Value>> {
    use std::io::IsTerminal;
    if let Some(wait) = db_wait(cli.db_wait)? {
        lethe_engine::storage::postgres::set_failover_wait(wait);
    }
    let on_terminal = std::io::stdin().is_terminal();
    let writes = writes(&cli.command);
    let now = match &cli.now {
        Some(n) => {
            let t = time::parse(n)?;
            if writes {
                return Err(Error::invalid(
                    "--now is only for commands that read; commands that write use the clock, so no date in the store can be forged",
                ));
            }
            t
        }
        None => chrono::Utc::now(),
    };
    if cli.read_only && writes {
        return Err(Error::invalid("--read-only opens the database for viewing; this command writes"));
    }
    let actor = resolve_actor(cli.actor.as_deref(), on_terminal)?;
    let actor = actor.as_str();
    if on_terminal && actor == lethe_engine::actor::USER {
        // The audit says the person acted through a terminal (which a program with a
        // pseudo-terminal can be, too).
        lethe_engine::actor::set_via(lethe_engine::actor::Via::Terminal);
    }
    if let Command::Admin { action } = &cli.command {
        use lethe_engine::storage::postgres::{self, Role};
        let db = cli.db.clone().unwrap_or_else(default_db_path);
        let url = db.to_str().filter(|d| postgres::is_url(d)).ok_or_else(|| {
            Error::invalid("`lethe admin` is for a team server: --db postgres://USER@HOST:PORT/DB (an SQLite file sets itself up when opened)")
        })?;
        let password = std::env::var("LETHE_ROLE_PASSWORD").ok().filter(|p| !p.is_empty());
        let report = match action {
            AdminAction::Setup => to_json(&postgres::setup(url)?)?,
            AdminAction::AddAgent { name, team } => {
                to_json(&postgres::add_role(url, name, Role::Agent, team, password.as_deref())?)?
            }
            AdminAction::AddCurator { name, team } => {
                to_json(&postgres::add_role(url, name, Role::Curator, team, password.as_deref())?)?
            }
            AdminAction::AddReader { name, team } => {
                to_json(&postgres::add_role(url, name, Role::Reader, team, password.as_deref())?)?
            }
        };
        return Ok(Some(report));
    }
    if let Command::Mcp = cli.command {
        let path = cli.db.clone().unwrap_or_else(default_db_path);
        crate::mcp::serve(path)?;
        return Ok(None);
    }
    let read_only = cli.read_only;
    if matches!(cli.command, Command::Push { .. })
        && !cli.db.clone().unwrap_or_else(default_db_path).to_str().is_some_and(lethe_engine::storage::postgres::is_url)
    {
        // Refused before anything is opened: no file is created at the path given.
        return Err(Error::invalid(
            "lethe push moves a local file into a team store: lethe --db postgres://USER@HOST:PORT/DB push FILE.db",
        ));
    }
    let mut conn = open_db(&cli.db, read_only)?;
    let conn = &mut conn;
    if read_only {
        // A file opened for viewing may be hostile: its statements, all together, get a
        // deadline (a view that recurses for ever ends with an error).
        store::session_deadline(conn, read_only_deadline());
    }
    // On a team server the database role decides: a reader writes nothing, and an agent role
    // acts as `agent:<role>` whatever it claims (the server's audit triggers enforce the same).
    let (team_actor, reader) = team_actor(conn, &cli, writes)?;
    // A curator or the owner signed in to a team store is a person the server authenticated:
    // off a terminal (a script of the team lead's) the sign-in stands for the confirmation.
    let signed_in_person = team_actor.as_deref().is_some_and(lethe_engine::actor::is_person) && !on_terminal;
    let actor = team_actor.as_deref().unwrap_or(actor);
    // A reader's reads store nothing either (no neighbour lists, no recall statistics), nor
    // do reads of a file nobody may write (a read-only mount, an immutable file).
    let read_only = read_only || reader || store::is_read_only(conn)?;
    if !read_only
        && matches!(
            cli.command,
            Command::Recall(_)
                | Command::Similar { .. }
                | Command::Remember(_)
                | Command::Forget { undo: None, .. }
                | Command::Meta { query: Some(_), .. }
        )
    {
        ensure_vectors(conn)?;
    }
    let v = match &cli.command {
        Command::Remember(a) => remember(conn, a, actor, now)?,
        Command::Show { id } => to_json(&lethe_engine::detail(conn, id, now, None)?)?,
        Command::List(a) => {
            let q = ListQuery {
                tier: a.tier.as_deref().map(str::parse).transpose()?,
                deleted: Some(a.deleted),
                pinned: a.pinned.then_some(true),
                sort: a.sort.parse()?,
                min_score: None,
                max_score: None,
                session: a.session.clone(),
                project: a.project.clone(),
                redacted: a.redacted.then_some(true),
                needs_extraction: a.needs_extraction.then_some(true),
                written_by: a.written_by.clone(),
                source: None,
                only: None,
                limit: a.limit,
                offset: a.offset,
            };
            let s = Settings::load(conn)?;
            let snap = scoring_snapshot(conn, read_only)?;
            let mut v = to_json(&forgetting::list(conn, &snap, &q, &s, now)?)?;
            with_mistyped(&snap, &mut v)?;
            v
        }
        Command::Score { ids, all } => {
            let snap = scoring_snapshot(conn, read_only)?;
            let ids: &[String] = if *all { &[] } else { ids };
            to_json(&answers::score(conn, &snap, &Settings::load(conn)?, ids, now)?)?
        }
        Command::Forget { undo: Some(run), .. } => to_json(&lethe_engine::runs::undo(conn, run, actor, now)?)?,
        Command::Forget { dry_run, .. } => {
            let mut opts = forgetting::BatchOptions::new(now, *dry_run);
            opts.keep_derived = !read_only;
            to_json(&forgetting::run_batch(conn, &opts)?)?
        }
        Command::Delete { id, reason, hard, confirm } => {
            if *hard {
                to_json(&lifecycle::hard_delete(conn, id, *confirm, reason.as_deref(), actor, now)?)?
            } else {
                to_json(&lifecycle::soft_delete(conn, id, reason.as_deref(), actor, now)?)?
            }
        }
        Command::Restore { id } => {
            lifecycle::restore(conn, id, actor, now)?;
            to_json(&lethe_engine::detail(conn, id, now, None)?)?
        }
        Command::Pin { id } => {
            lifecycle::pin(conn, id, actor, now)?;
            to_json(&lethe_engine::detail(conn, id, now, None)?)?
        }
        Command::Unpin { id } => {
            lifecycle::unpin(conn, id, actor, now)?;
            to_json(&lethe_engine::detail(conn, id, now, None)?)?
        }
        Command::Importance { id, value } => {
            lifecycle::set_importance(conn, id, *value, actor, now)?;
            to_json(&lethe_engine::detail(conn, id, now, None)?)?
        }
        Command::Edit { id, content, expected_version } => {
            to_json(&lethe_engine::edit(conn, id, content, *expected_version, actor, now)?)?
        }
        Command::Scan { redact, confirm } => match (redact, confirm) {
            (false, false) => json!({ "items": lethe_engine::scan::scan(conn)? }),
            (true, _) => to_json(&lethe_engine::scan::redact_in_place(conn, *confirm, actor, now)?)?,
            (false, true) => return Err(Error::invalid("--confirm goes with --redact")),
        },
        Command::Cite { id } => {
            lifecycle::cite(conn, id, actor, now)?;
            to_json(&lethe_engine::detail(conn, id, now, None)?)?
        }
        Command::Quarantine => {
            let s = Settings::load(conn)?;
            json!({ "items": forgetting::quarantine(conn, &s, now)? })
        }
        Command::Events { runs: true, limit, .. } => json!({ "items": lethe_engine::runs::list(conn, *limit)? }),
        Command::Events { memory, action, by_actor, limit, .. } => {
            let f = audit::EventFilter {
                memory_id: memory.clone(),
                action: action.clone(),
                actor: by_actor.clone(),
                limit: *limit,
            };
            json!({ "items": audit::list_events(conn, &f)? })
        }
        Command::Archive { ids, memo, memo_file } => {
            let memos = archive_memos(ids.len(), memo, memo_file)?;
            let items: Vec<(String, String)> = ids.iter().cloned().zip(memos).collect();
            let receipts = lethe_engine::archive::archive_batch(conn, &items, actor, now)?;
            if ids.len() == 1 && memo_file.is_none() {
                to_json(&receipts[0])?
            } else {
                json!({ "items": receipts })
            }
        }
        Command::Unarchive { archive_no, lines, bytes } => match (lines, bytes) {
            (None, None) => to_json(&lethe_engine::archive::unarchive(conn, *archive_no, actor, now)?)?,
            (Some(l), None) => {
                to_json(&lethe_engine::archive::read_span(conn, *archive_no, archive::Span::parse("lines", l)?)?)?
            }
            (None, Some(b)) => {
                to_json(&lethe_engine::archive::read_span(conn, *archive_no, archive::Span::parse("bytes", b)?)?)?
            }
            (Some(_), Some(_)) => return Err(Error::invalid("give --lines or --bytes, not both")),
        },
        Command::EndSession { session, task_kind, rules } => {
            let rules = match rules {
                None => Vec::new(),
                Some(f) => {
                    let bytes = std::fs::read(f)?;
                    let text = String::from_utf8(bytes)
                        .map_err(|_| Error::invalid(format!("{} is not valid UTF-8 text", f.display())))?;
                    lethe_engine::session::parse_rules_jsonl(&text)?
                }
            };
            to_json(&lethe_engine::session::end_session(conn, session, task_kind, &rules, actor, now)?)?
        }
        Command::Sessions { limit } => to_json(&lethe_engine::session::overview(conn, *limit)?)?,
        Command::Stats => {
            let snap = scoring_snapshot(conn, read_only)?;
            to_json(&answers::stats(conn, &snap, &Settings::load(conn)?, now)?)?
        }
        Command::Meta { id, query, limit } => match (id, query) {
            (Some(id), None) => {
                lifecycle::get(conn, id)?;
                to_json(
                    &meta::read_stored(conn, id)?
                        .unwrap_or(meta::MetaStats { memory_id: id.clone(), ..Default::default() }),
                )?
            }
            (None, Some(q)) => {
                let ids = recall::topic_ids(conn, q, *limit, now)?;
                let mut v = to_json(&meta::overview(conn, Some(&ids), &Default::default())?)?;
                v["query"] = json!(q);
                v
            }
            (None, None) => to_json(&meta::overview(conn, None, &Default::default())?)?,
            (Some(_), Some(_)) => return Err(Error::invalid("give an ID or --query, not both")),
        },
        Command::Recall(a) => {
            let q = recall::RecallQuery {
                text: a.query.clone(),
                limit: a.limit,
                tier: a.tier.as_deref().map(str::parse).transpose()?,
                session: a.session.clone(),
                project: a.project.clone(),
                workflow: a.workflow.clone(),
                tags: split_list(&a.tags),
                pinned: a.pinned.then_some(true),
                weights: a.weights.as_deref().map(recall::parse_weights).transpose()?,
                task_kind: a.task_kind.clone(),
            };
            if a.explain {
                return Ok(Some(to_json(&recall::explain_answer(conn, &q, now, recall::DECLINED)?)?));
            }
            let answer = recall::answer(conn, &q, now)?;
            if !read_only {
                // A one-shot process has nothing to coalesce with: its hits go out in one
                // transaction of additive upserts, the same path the flusher uses. Stamped
                // with the clock even under --now: the statistics say when the recall really
                // happened.
                let clock = time::format(chrono::Utc::now());
                let deltas = meta::Delta::of_hits(answer.results.iter().map(|h| (h.id.as_str(), h.score)), &clock);
                // The recall log entry goes in the same transaction as the statistics.
                let entry = lethe_engine::recall_log::NewEntry::of(actor, &clock, &q, &answer.results);
                meta::write_batch(conn, &deltas, &[entry])?;
            }
            to_json(&answer)?
        }
        Command::RecallLog { actor, memory, limit } => {
            let f =
                lethe_engine::recall_log::LogFilter { actor: actor.clone(), memory_id: memory.clone(), limit: *limit };
            json!({ "items": lethe_engine::recall_log::list(conn, &f)? })
        }
        Command::Duplicates { action: None, limit } => {
            let snap = scoring_snapshot(conn, read_only)?;
            let mut v =
                to_json(&lethe_engine::duplicates::clusters(conn, &snap, &Settings::load(conn)?, now, *limit)?)?;
            v["judgment"] = json!(lethe_engine::sameness::judgment());
            v
        }
        Command::Duplicates { action: Some(DuplicatesAction::Dismiss { a, b }), .. } => {
            to_json(&lethe_engine::duplicates::dismiss(conn, a, b, actor, now)?)?
        }
        Command::Duplicates { action: Some(DuplicatesAction::Supersede { a, b }), .. } => {
            to_json(&lethe_engine::duplicates::supersede(conn, a, b, actor, now)?)?
        }
        Command::Health => {
            let snap = scoring_snapshot(conn, read_only)?;
            to_json(&lethe_engine::health::health(conn, &snap, &Settings::load(conn)?, now)?)?
        }
        Command::Similar { id, limit } => {
            json!({
                "items": lethe_engine::semantic::similar(conn, id, *limit)?,
                "recall_mode": lethe_engine::embed::status(),
                "judgment": lethe_engine::sameness::judgment(),
            })
        }
        Command::Reflect { id, note, expected_version } => {
            let note: Value =
                serde_json::from_str(note).map_err(|e| Error::invalid(format!("--note is not valid JSON: {e}")))?;
            to_json(&procedural::reflect(conn, id, &note, *expected_version, actor, now)?)?
        }
        Command::History { id, notes } => {
            if *notes {
                json!({ "items": procedural::notes(conn, id)? })
            } else {
                json!({ "items": procedural::history(conn, id)? })
            }
        }
        Command::Rollback { id, to, expected_version } => {
            to_json(&procedural::rollback_answer(conn, id, *to, *expected_version, actor, now)?)?
        }
        Command::Import { file, dry_run } => {
            let f = std::fs::File::open(file)?;
            let opts = transfer::ImportOptions { now, dry_run: *dry_run };
            let report = transfer::import(conn, std::io::BufReader::new(f), &opts)?;
            if !*dry_run && report.imported > 0 {
                keep_derived(conn, "import")?;
            }
            to_json(&report)?
        }
        Command::Push { file } => {
            let (name, role) = lethe_engine::storage::postgres::role_of(conn)?;
            use lethe_engine::storage::postgres::Role;
            if !matches!(role, Role::Owner | Role::Curator) {
                return Err(Error::Forbidden(format!(
                    "the role {name} is not a curator; a push carries pins and other actors' audit, so a curator or the owner pushes"
                )));
            }
            let src = open_push_source(file)?;
            let report = lethe_engine::push::push(&src, conn, &file.display().to_string(), actor, now)?;
            keep_derived(conn, "push")?;
            to_json(&report)?
        }
        Command::Export => {
            let stdout = std::io::stdout();
            let mut lock = std::io::BufWriter::new(stdout.lock());
            use std::io::Write;
            // A reader that stops early (`lethe export | head`) ends the export, not in error.
            match transfer::export(conn, &mut lock).and_then(|_| Ok(lock.flush()?)) {
                Err(e) if is_broken_pipe(&e) => {}
                other => other?,
            }
            return Ok(None);
        }
        Command::Mcp | Command::Admin { .. } => {
            unreachable!("handled before opening the database")
        }
        Command::Demo { count, seed } => to_json(&lethe_engine::demo::load(conn, *seed, *count, now)?)?,
        Command::Settings { key, value } => {
            let s = Settings::load(conn)?;
            match (key, value) {
                (None, _) => to_json(&s)?,
                (Some(k), None) => {
                    let all = to_json(&s)?;
                    let mut slot = &all;
                    for part in k.split('.') {
                        slot = slot.get(part).ok_or_else(|| Error::invalid(format!("unknown setting {k:?}")))?;
                    }
                    json!({ k.clone(): slot.clone() })
                }
                (Some(k), Some(v)) => {
                    let new = s.with_value(k, v)?;
                    lethe_engine::actor::require_person_with(actor, "changing settings", s.person_ops_window_only)?;
                    let old = to_json(&s)?;
                    let mut slot = &old;
                    for part in k.split('.') {
                        slot = slot.get(part).unwrap_or(&Value::Null);
                    }
                    if !signed_in_person {
                        confirm_on_terminal(&format!("Change setting {k} from {slot} to {v}?"))?;
                    }
                    to_json(&Settings::store(conn, &new, actor, now)?)?
                }
            }
        }
    };
    Ok(Some(v))
}

/// The memos of `lethe archive`: `--memo` for all, or `--memo-file` (a JSON array with one memo
/// per ID, or any other text as the memo of all).
fn archive_memos(n: usize, memo: &Option<String>, memo_file: &Option<PathBuf>) -> Result<Vec<String>> {
    match (memo, memo_file) {
        (Some(m), None) => Ok(vec![m.clone(); n]),
        (None, Some(f)) => {
            let bytes = std::fs::read(f)?;
            let text = String::from_utf8(bytes)
                .map_err(|_| Error::invalid(format!("{} is not valid UTF-8 text", f.display())))?;
            if text.trim_start().starts_with('[') {
                let memos: Vec<String> = serde_json::from_str(&text).map_err(|e| {
                    Error::invalid(format!(
                        "{}: a memo file starting with [ must be a JSON array of strings: {e}",
                        f.display()
                    ))
                })?;
                if memos.len() != n {
                    return Err(Error::invalid(format!(
                        "{} holds {} memos for {n} IDs; give one per ID, in the same order",
                        f.display(),
                        memos.len()
                    )));
                }
                Ok(memos)
            } else {
                Ok(vec![text; n])
            }
        }
        (Some(_), Some(_)) => Err(Error::invalid("give --memo or --memo-file, not both")),
        (None, None) => Err(Error::invalid("--memo or --memo-file is required")),
    }
}

/// Whether an error is a write to a reader that went away.
fn is_broken_pipe(e: &Error) -> bool {
    match e {
        Error::Io(io) => io.kind() == std::io::ErrorKind::BrokenPipe,
        Error::Json(j) => j.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe),
        _ => false,
    }
}

/// Names the memories holding a value of the wrong type (read leniently, not fatal), as
/// `mistyped: [{id, column, found}]` when there are any.
fn with_mistyped(snap: &forgetting::Snapshot, v: &mut Value) -> Result<()> {
    if !snap.mistyped.is_empty() {
        v["mistyped"] = to_json(&snap.mistyped)?;
    }
    Ok(())
}

/// Embeds the memories another program (or a build without the model) stored without a
/// vector, so that recall and duplication see them; resumable, a no-op when all have one.
fn ensure_vectors(conn: &mut store::Connection) -> Result<()> {
    if let Some(e) = lethe_engine::embed::shared() {
        let never = std::sync::atomic::AtomicBool::new(false);
        lethe_engine::semantic::backfill(conn, e, |_, _| {}, &never)?;
    }
    Ok(())
}

/// The scoring snapshot; what it had to compute because the file lacked it (neighbours of
/// memories written since the last time) is stored, so that it is searched once. It is never
/// dropped: a command ends right after its answer, and freeing a million rows one by one took
/// about 0.1 s of a 1.7 s `lethe stats`; the process's end returns the memory at once.
/// After an import or a push: the signatures and neighbour lists of what was written are
/// searched and stored now, so that the first read (`stats`, `list`, the window) finds them
/// instead of searching them itself. Progress goes to stderr as JSON lines
/// (`{"progress":{"step":"import","stage":"reading"|"similar","done":N,"total":M}}`), about
/// every tenth of a stage.
fn keep_derived(conn: &mut store::Connection, step: &str) -> Result<()> {
    let last = std::sync::Mutex::new((None::<forgetting::LoadStage>, 0usize));
    let progress = |stage: forgetting::LoadStage, done: usize, total: usize| {
        let mut last = last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let tenth = (done * 10).checked_div(total).unwrap_or(10);
        if last.0 != Some(stage) || tenth > last.1 {
            *last = (Some(stage), tenth);
            let stage = match stage {
                forgetting::LoadStage::Reading => "reading",
                forgetting::LoadStage::Similar => "similar",
            };
            eprintln!("{}", json!({ "progress": { "step": step, "stage": stage, "done": done, "total": total } }));
        }
    };
    forgetting::Snapshot::load_and_keep_with(conn, &forgetting::Job { progress: Some(&progress), cancel: None })?;
    Ok(())
}

fn scoring_snapshot(conn: &mut store::Connection, read_only: bool) -> Result<ManuallyDrop<forgetting::Snapshot>> {
    forgetting::Snapshot::load_for(conn, !read_only).map(ManuallyDrop::new)
}

/// What `lethe admin` does on a team server.
#[derive(Debug, Subcommand)]
pub enum AdminAction {
    /// Create or migrate the team store's schema (idempotent; agents never need DDL rights).
    Setup,
    /// A login role for an agent: writes memories under its own name, never hard-deletes,
    /// pins or changes settings. Its password, if any, comes from $LETHE_ROLE_PASSWORD.
    AddAgent {
        name: String,
        /// The team whose memories the role sees and writes (row-level security).
        #[arg(long, default_value = "default")]
        team: String,
    },
    /// A login role for a team lead: an agent's rights plus hard delete, pin, importance and
    /// settings.
    AddCurator {
        name: String,
        /// The team whose memories the role sees and writes (row-level security).
        #[arg(long, default_value = "default")]
        team: String,
    },
    /// A login role that reads only (an inspector).
    AddReader {
        name: String,
        /// The team whose memories the role sees and writes (row-level security).
        #[arg(long, default_value = "default")]
        team: String,
    },
}

/// What `lethe duplicates` does besides listing.
#[derive(Debug, Subcommand)]
pub enum DuplicatesAction {
    /// Keep both: the pair is no near-duplicate any more (not listed, not counted in
    /// duplication); audited; dismissing again writes nothing.
    Dismiss { a: String, b: String },
    /// Supersede the older of the two by the newer: the older leaves recall; audited.
    Supersede { a: String, b: String },
}
