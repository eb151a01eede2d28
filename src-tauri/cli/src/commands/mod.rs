//! The subcommands. Each parses its arguments, calls the engine and returns JSON: [`run`]
//! checks what the command may do (`--now`, `--read-only`, who acts), opens the store, and
//! [`dispatch`] hands it to the module of its group.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use lethe_engine::{store, time, Error, Result};
use serde_json::Value;

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

mod admin;
mod archive;
mod forget;
mod memory;
mod open;
mod procedure;
mod recall;
mod session;

pub use lethe_engine::store::default_db_path;

/// What a command runs with besides its arguments: the open store, who acts, the instant it
/// is evaluated at, and how far it may write.
pub(crate) struct Ctx<'a> {
    pub conn: &'a mut store::Connection,
    pub actor: &'a str,
    pub now: time::Instant,
    /// Reads store nothing either: opened with `--read-only`, a team store's reader, or a
    /// file nobody may write (no neighbour lists, no recall statistics).
    pub read_only: bool,
    /// A curator or the owner signed in to a team store off a terminal: the sign-in stands
    /// for the confirmation on the terminal.
    pub signed_in_person: bool,
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

/// Runs one command; a `--read-only` session that ran out of time says so as `refused`.
pub fn run(cli: Cli) -> Result<Option<Value>> {
    let read_only = cli.read_only;
    run_command(cli).map_err(|e| match store::interrupted_message(&e, open::read_only_deadline()) {
        Some(m) if read_only => Error::Refused(m),
        _ => e,
    })
}

fn run_command(cli: Cli) -> Result<Option<Value>> {
    use std::io::IsTerminal;
    if let Some(wait) = open::db_wait(cli.db_wait)? {
        lethe_engine::storage::postgres::set_failover_wait(wait);
    }
    let on_terminal = std::io::stdin().is_terminal();
    let writes = writes(&cli.command);
    let now = open::now_of(cli.now.as_deref(), writes)?;
    if cli.read_only && writes {
        return Err(Error::invalid("--read-only opens the database for viewing; this command writes"));
    }
    let actor = open::resolve_actor(cli.actor.as_deref(), on_terminal)?;
    let actor = actor.as_str();
    if on_terminal && actor == lethe_engine::actor::USER {
        // The audit says the person acted through a terminal (which a program with a
        // pseudo-terminal can be, too).
        lethe_engine::actor::set_via(lethe_engine::actor::Via::Terminal);
    }
    match &cli.command {
        Command::Admin { action } => return admin::admin(&cli.db, action).map(Some),
        Command::Mcp => return crate::mcp::serve(cli.db.clone().unwrap_or_else(default_db_path)).map(|()| None),
        Command::Push { .. } => admin::refuse_push_to_a_file(&cli.db)?,
        _ => {}
    }
    let read_only = cli.read_only;
    let mut conn = open_db(&cli.db, read_only)?;
    let conn = &mut conn;
    if read_only {
        // A file opened for viewing may be hostile: its statements, all together, get a
        // deadline (a view that recurses for ever ends with an error).
        store::session_deadline(conn, open::read_only_deadline());
    }
    // On a team server the database role decides: a reader writes nothing, and an agent role
    // acts as `agent:<role>` whatever it claims (the server's audit triggers enforce the same).
    let (team_actor, reader) = open::team_actor(conn, &cli, writes)?;
    // A curator or the owner signed in to a team store is a person the server authenticated:
    // off a terminal (a script of the team lead's) the sign-in stands for the confirmation.
    let signed_in_person = team_actor.as_deref().is_some_and(lethe_engine::actor::is_person) && !on_terminal;
    let actor = team_actor.as_deref().unwrap_or(actor);
    // A reader's reads store nothing either (no neighbour lists, no recall statistics), nor
    // do reads of a file nobody may write (a read-only mount, an immutable file).
    let read_only = read_only || reader || store::is_read_only(conn)?;
    if !read_only && needs_vectors(&cli.command) {
        open::ensure_vectors(conn)?;
    }
    dispatch(&mut Ctx { conn, actor, now, read_only, signed_in_person }, &cli.command)
}

/// The commands that read or write vectors: memories stored without one get it first.
fn needs_vectors(command: &Command) -> bool {
    matches!(
        command,
        Command::Recall(_)
            | Command::Similar { .. }
            | Command::Remember(_)
            | Command::Forget { undo: None, .. }
            | Command::Meta { query: Some(_), .. }
    )
}

/// One command, on an open store.
fn dispatch(cx: &mut Ctx, command: &Command) -> Result<Option<Value>> {
    let v = match command {
        Command::Remember(a) => memory::remember(cx, a)?,
        Command::Show { id } => memory::show(cx, id)?,
        Command::List(a) => memory::list(cx, a)?,
        Command::Score { ids, all } => forget::score(cx, ids, *all)?,
        Command::Forget { undo: Some(run), .. } => forget::undo(cx, run)?,
        Command::Forget { dry_run, .. } => forget::batch(cx, *dry_run)?,
        Command::Delete { id, reason, hard, confirm } => memory::delete(cx, id, reason.as_deref(), *hard, *confirm)?,
        Command::Restore { id } => memory::restore(cx, id)?,
        Command::Pin { id } => memory::pin(cx, id)?,
        Command::Unpin { id } => memory::unpin(cx, id)?,
        Command::Importance { id, value } => memory::importance(cx, id, *value)?,
        Command::Edit { id, content, expected_version } => memory::edit(cx, id, content, *expected_version)?,
        Command::Scan { redact, confirm } => admin::scan(cx, *redact, *confirm)?,
        Command::Cite { id } => memory::cite(cx, id)?,
        Command::Quarantine => forget::quarantine(cx)?,
        Command::Events { runs: true, limit, .. } => forget::runs(cx, *limit)?,
        Command::Events { memory, action, by_actor, limit, .. } => {
            forget::events(cx, memory, action, by_actor, *limit)?
        }
        Command::Archive { ids, memo, memo_file } => archive::archive(cx, ids, memo, memo_file)?,
        Command::Unarchive { archive_no, lines, bytes } => archive::unarchive(cx, *archive_no, lines, bytes)?,
        Command::EndSession { session, task_kind, rules } => session::end(cx, session, task_kind, rules)?,
        Command::Sessions { limit } => session::overview(cx, *limit)?,
        Command::Stats => forget::stats(cx)?,
        Command::Meta { id, query, limit } => recall::meta(cx, id, query, *limit)?,
        Command::Recall(a) => recall::recall(cx, a)?,
        Command::RecallLog { actor, memory, limit } => recall::log(cx, actor, memory, *limit)?,
        Command::Duplicates { action, limit } => forget::duplicates(cx, action, *limit)?,
        Command::Health => forget::health(cx)?,
        Command::Similar { id, limit } => memory::similar(cx, id, *limit)?,
        Command::Reflect { id, note, expected_version } => procedure::reflect(cx, id, note, *expected_version)?,
        Command::History { id, notes } => procedure::history(cx, id, *notes)?,
        Command::Rollback { id, to, expected_version } => procedure::rollback(cx, id, *to, *expected_version)?,
        Command::Import { file, dry_run } => admin::import(cx, file, *dry_run)?,
        Command::Push { file } => admin::push(cx, file)?,
        Command::Export => return admin::export(cx).map(|()| None),
        Command::Mcp | Command::Admin { .. } => unreachable!("handled before opening the database"),
        Command::Demo { count, seed } => admin::demo(cx, *count, *seed)?,
        Command::Settings { key, value } => admin::settings(cx, key, value)?,
    };
    Ok(Some(v))
}

/// Opens the database (creating it, 0600 in a 0700 directory, when missing).
pub fn open_db(path: &Option<PathBuf>, read_only: bool) -> Result<store::Connection> {
    let path = path.clone().unwrap_or_else(default_db_path);
    if read_only {
        store::open_read_only(&path)
    } else {
        store::open(&path)
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<Value> {
    Ok(serde_json::to_value(v)?)
}

fn parse_json_arg(name: &str, raw: &Option<String>) -> Result<Option<Value>> {
    match raw {
        None => Ok(None),
        Some(r) => {
            serde_json::from_str(r).map(Some).map_err(|e| Error::invalid(format!("--{name} is not valid JSON: {e}")))
        }
    }
}

fn split_list(raw: &Option<String>) -> Vec<String> {
    raw.as_deref()
        .map(|s| s.split(',').map(|t| t.trim().to_string()).filter(|t| !t.is_empty()).collect())
        .unwrap_or_default()
}

/// A file given as an argument, as UTF-8 text.
fn read_text(f: &std::path::Path) -> Result<String> {
    let bytes = std::fs::read(f)?;
    String::from_utf8(bytes).map_err(|_| Error::invalid(format!("{} is not valid UTF-8 text", f.display())))
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
