//! Opening a database: per-connection PRAGMAs and SQL functions, then the append-only
//! migrations. Works on a fresh file, a Lethe file, and a memento file (docs/data-model.md).

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::path::Path;
use std::time::Duration;

use rusqlite::functions::FunctionFlags;
use rusqlite::OpenFlags;

pub use crate::storage::db::Connection;
use crate::storage::db::{OptionalExtension, Transaction, TransactionBehavior};

use crate::error::{is_busy, Error, Result};

mod file_guard;
mod schema_guard;
pub use file_guard::{close_without_checkpoint, no_checkpoint_on_close, FileGuard, FileTrouble, LockAnchor};
pub use schema_guard::foreign_objects;

/// One migration: a version, the SQL (or Rust) that brings the schema there, and a guard.
struct Migration {
    version: i64,
    name: &'static str,
    apply: fn(&Connection) -> Result<()>,
}

/// Append-only: never edit a migration that has shipped, add a new one.
const MIGRATIONS: &[Migration] = &[
    Migration { version: 1, name: "core", apply: migrate_core },
    Migration {
        version: 2,
        name: "indexes",
        apply: |c| c.execute_batch(include_str!("sqlite/migrations/002_indexes.sql")),
    },
    Migration { version: 3, name: "fts-memento-names", apply: migrate_fts_memento_names },
    Migration {
        version: 4,
        name: "semantic",
        apply: |c| c.execute_batch(include_str!("sqlite/migrations/004_semantic.sql")),
    },
    Migration {
        version: 5,
        name: "sessions",
        apply: |c| c.execute_batch(include_str!("sqlite/migrations/005_sessions.sql")),
    },
    Migration {
        version: 6,
        name: "derived-on-change",
        apply: |c| c.execute_batch(include_str!("sqlite/migrations/006_derived_on_change.sql")),
    },
    Migration {
        version: 7,
        name: "recall-log",
        apply: |c| c.execute_batch(include_str!("sqlite/migrations/007_recall_log.sql")),
    },
    Migration {
        version: 8,
        name: "dismissed-pairs",
        apply: |c| c.execute_batch(include_str!("sqlite/migrations/008_dismissed_pairs.sql")),
    },
    Migration {
        version: 9,
        name: "session-context",
        apply: |c| c.execute_batch(include_str!("sqlite/migrations/009_session_context.sql")),
    },
    Migration {
        version: 10,
        name: "quarantined-context",
        apply: |c| c.execute_batch(include_str!("sqlite/migrations/010_quarantined_context.sql")),
    },
    Migration {
        version: 11,
        name: "cheaper-context",
        apply: |c| c.execute_batch(include_str!("sqlite/migrations/011_cheaper_context.sql")),
    },
];

pub const SCHEMA_VERSION: i64 = 11;
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long [`with_retry`] keeps retrying BUSY/LOCKED before giving up with `Error::Busy`.
pub const RETRY_DEADLINE: Duration = Duration::from_secs(15);

/// Columns Lethe reads, declared exactly as memento's current schema declares them. An older
/// memento file lacks some; they are added (memento's own later versions define every one of
/// them, so the file looks to memento like one its own migrations brought up to date).
const MEMORY_COLUMNS: &[(&str, &str)] = &[
    ("importance", "REAL CHECK (importance >= 0 AND importance <= 1) DEFAULT 0.5"),
    ("privacy_scope", "TEXT CHECK (privacy_scope IN ('private','team','public')) DEFAULT 'private'"),
    ("last_accessed", "TIMESTAMP"),
    ("pinned", "BOOLEAN DEFAULT FALSE"),
    ("tags", "TEXT"),
    ("source", "TEXT"),
    ("view_count", "INTEGER DEFAULT 0"),
    ("cite_count", "INTEGER DEFAULT 0"),
    ("edit_count", "INTEGER DEFAULT 0"),
    ("task_goal", "TEXT"),
    ("steps", "TEXT"),
    ("reflection_notes", "TEXT"),
    ("workflow_name", "TEXT"),
    ("skill_name", "TEXT"),
    ("trigger_conditions", "TEXT"),
    ("version", "INTEGER NULL"),
    ("owner_id", "TEXT NULL"),
    ("session_id", "TEXT NULL"),
    ("project_id", "TEXT"),
    ("is_deleted", "BOOLEAN DEFAULT FALSE NOT NULL"),
    ("deleted_at", "TEXT"),
];

/// memento's own definitions of the two tables of its schema Lethe writes to, used when an
/// older memento file lacks them (Lethe's 001 definitions are looser: nullable reason/policy).
/// Created exactly as memento's later migrations create them, so memento's
/// `CREATE TABLE IF NOT EXISTS` finds what it would have made itself.
const MEMENTO_TABLES: &str = "
CREATE TABLE IF NOT EXISTS memory_forgetting_event (
  id TEXT PRIMARY KEY,
  memory_id TEXT NOT NULL,
  action TEXT NOT NULL CHECK (action IN ('soft', 'hard', 'review')),
  reason TEXT NOT NULL,
  policy TEXT NOT NULL,
  forget_score REAL,
  ttl_days INTEGER,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  metadata_json TEXT
);
CREATE TABLE IF NOT EXISTS meta_memory_stats (
  memory_id TEXT PRIMARY KEY,
  recall_count INTEGER DEFAULT 0 NOT NULL,
  success_count INTEGER DEFAULT 0 NOT NULL,
  failure_count INTEGER DEFAULT 0 NOT NULL,
  avg_confidence REAL DEFAULT 0.0 NOT NULL,
  last_recalled_at TIMESTAMP,
  created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL,
  updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL,
  FOREIGN KEY (memory_id) REFERENCES memory_item(id) ON DELETE CASCADE
);
";

fn migrate_core(conn: &Connection) -> Result<()> {
    let had_memory_table = table_exists(conn, "memory_item")?;
    if had_memory_table {
        // Before 001 so that its IF NOT EXISTS finds memento's shapes, not Lethe's.
        conn.execute_batch(MEMENTO_TABLES)?;
    }
    conn.execute_batch(include_str!("sqlite/migrations/001_core.sql"))?;
    if had_memory_table {
        // A file created by memento: remember that, and add what an older memento lacks.
        conn.execute("INSERT OR REPLACE INTO lethe_meta (key, value) VALUES ('origin', 'memento')", [])?;
        for (col, decl) in MEMORY_COLUMNS {
            if !column_exists(conn, "memory_item", col)? {
                conn.execute_batch(&format!("ALTER TABLE memory_item ADD COLUMN {col} {decl}"))?;
            }
        }
        for (col, decl) in [
            ("success_count", "INTEGER DEFAULT 0 NOT NULL"),
            ("failure_count", "INTEGER DEFAULT 0 NOT NULL"),
            ("avg_confidence", "REAL DEFAULT 0.0 NOT NULL"),
            ("last_recalled_at", "TIMESTAMP"),
        ] {
            if !column_exists(conn, "meta_memory_stats", col)? {
                conn.execute_batch(&format!("ALTER TABLE meta_memory_stats ADD COLUMN {col} {decl}"))?;
            }
        }
    } else {
        conn.execute("INSERT OR REPLACE INTO lethe_meta (key, value) VALUES ('origin', 'lethe')", [])?;
    }
    if !table_exists(conn, "memory_item_fts")? {
        conn.execute_batch(include_str!("sqlite/migrations/001_fts.sql"))?;
    }
    Ok(())
}

/// Migration 3. Lethe's 001 FTS triggers were named `memory_item_fts_ai/_ad/_au`, memento's are
/// `memory_item_fts_insert/_delete/_update`: memento opening a file whose index Lethe built
/// (a Lethe file, or an early memento file without FTS) would add its own triggers next to
/// Lethe's and index every row twice. Lethe's triggers take memento's names, and because the
/// normalisation of reflection notes now matches memento's, an index Lethe built is rebuilt
/// with it (FTS5 `delete` must see the very tokens that were indexed). An index memento built
/// (its triggers, Lethe's absent) is left as it is.
fn migrate_fts_memento_names(conn: &Connection) -> Result<()> {
    if trigger_exists(conn, "memory_item_fts_ai")? {
        conn.execute_batch(include_str!("sqlite/migrations/003_fts_memento_names.sql"))?;
    }
    Ok(())
}

/// Why rows of `memory_item` cannot be deleted on this connection, if they cannot. A memento
/// file with sqlite-vec tables has a delete trigger on `memory_embedding` (reached through the
/// foreign-key cascade from `memory_item`) that writes to a `vec0` table; without the extension
/// SQLite cannot even compile a `DELETE FROM memory_item`, so a hard delete would fail whole.
/// Preparing (never running) such a statement tells, whatever the reason.
pub fn memory_delete_blocked(conn: &Connection) -> Result<Option<String>> {
    let Some(conn) = conn.sqlite() else { return Ok(None) };
    match conn.prepare("DELETE FROM memory_item WHERE rowid IS NULL") {
        Ok(_) => Ok(None),
        Err(rusqlite::Error::SqliteFailure(_, Some(msg))) => Ok(Some(format!(
            "memories cannot be deleted for ever in this file without an SQLite extension Lethe lacks ({msg}); \
             they stay in quarantine (memento itself can purge them)"
        ))),
        Err(e) => Err(e.into()),
    }
}

pub fn trigger_exists(conn: &Connection, name: &str) -> Result<bool> {
    if conn.is_postgres() {
        return conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = ?1 AND NOT tgisinternal)",
            [name],
            |r| r.get(0),
        );
    }
    Ok(conn
        .query_row("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = ?1", [name], |_| Ok(()))
        .optional()?
        .is_some())
}

pub fn table_exists(conn: &Connection, name: &str) -> Result<bool> {
    if conn.is_postgres() {
        return super::postgres::table_exists(conn, name);
    }
    // Cached: recall asks at every query (one statement prepared per call was ~3 % of a
    // recall at 10k).
    Ok(conn
        .prepare_cached("SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?1")?
        .query_row([name], |_| Ok(()))
        .optional()?
        .is_some())
}

pub fn column_exists(conn: &Connection, table: &str, column: &str) -> Result<bool> {
    if conn.is_postgres() {
        return super::postgres::column_exists(conn, table, column);
    }
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({table})"))?;
    let names = stmt.query_map([], |r| r.get::<_, String>(1))?;
    for n in names {
        if n? == column {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Turns reflection notes (JSON) into the text the FTS index holds. memento registers a
/// function of this name on every connection and its FTS triggers call it; Lethe registers the
/// same function, and it must return exactly what memento's returns: an external-content FTS5
/// index is updated by `delete` with the old values re-normalised, and tokens that differ from
/// the ones indexed leave the index inconsistent.
///
/// memento's rules (`normalizeReflectionNotes`): NULL, empty or invalid JSON gives `''`; an
/// array is normalised item by item (items that are not objects give nothing) and joined with
/// spaces; an object gives `type:<failure_type>` and `phase:<phase>` first, then every other
/// value in key order except `timestamp` — strings trimmed (empty ones skipped), numbers and
/// booleans as JavaScript prints them, nested objects and arrays skipped.
pub fn normalize_reflection_notes(raw: Option<&str>) -> Option<String> {
    let Some(raw) = raw.filter(|r| !r.is_empty()) else { return Some(String::new()) };
    let Ok(value) = serde_json::from_str::<Js>(raw) else { return Some(String::new()) };
    Some(match value {
        Js::Arr(items) => items.iter().map(note_text).filter(|t| !t.is_empty()).collect::<Vec<_>>().join(" "),
        v @ Js::Obj(_) => note_text(&v),
        _ => String::new(),
    })
}

/// A JSON value as JavaScript's `JSON.parse` sees it: numbers are doubles and object keys keep
/// JavaScript's property order (integer keys ascending, then the others as written).
#[derive(Debug, Clone)]
enum Js {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Js>),
    Obj(Vec<(String, Js)>),
}

impl<'de> serde::Deserialize<'de> for Js {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Js;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> std::result::Result<Js, E> {
                Ok(Js::Null)
            }
            fn visit_none<E>(self) -> std::result::Result<Js, E> {
                Ok(Js::Null)
            }
            fn visit_bool<E>(self, v: bool) -> std::result::Result<Js, E> {
                Ok(Js::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> std::result::Result<Js, E> {
                Ok(Js::Num(v as f64))
            }
            fn visit_u64<E>(self, v: u64) -> std::result::Result<Js, E> {
                Ok(Js::Num(v as f64))
            }
            fn visit_f64<E>(self, v: f64) -> std::result::Result<Js, E> {
                Ok(Js::Num(v))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Js, E> {
                Ok(Js::Str(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> std::result::Result<Js, E> {
                Ok(Js::Str(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> std::result::Result<Js, A::Error> {
                let mut items = Vec::new();
                while let Some(v) = a.next_element()? {
                    items.push(v);
                }
                Ok(Js::Arr(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> std::result::Result<Js, A::Error> {
                let mut entries: Vec<(String, Js)> = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, Js>()? {
                    // JSON.parse keeps the last value of a repeated key, at the first position.
                    match entries.iter_mut().find(|(key, _)| *key == k) {
                        Some(e) => e.1 = v,
                        None => entries.push((k, v)),
                    }
                }
                // Array-index keys ("0", "17"; canonical, below 2^32 - 1) come first, ascending.
                let index = |k: &str| k.parse::<u32>().ok().filter(|n| *n != u32::MAX && n.to_string() == k);
                entries.sort_by_key(|(k, _)| index(k).map_or((1, 0), |n| (0, n)));
                Ok(Js::Obj(entries))
            }
        }
        d.deserialize_any(V)
    }
}

fn js_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
}

/// `String(n)` in JavaScript.
fn js_number(n: f64) -> String {
    if n == 0.0 {
        return "0".into();
    }
    if n.is_nan() {
        return "NaN".into();
    }
    let a = n.abs();
    if (1e-6..1e21).contains(&a) {
        return format!("{n}");
    }
    // Exponent form: Rust prints "1.5e21" / "1e-7", JavaScript "1.5e+21" / "1e-7".
    let s = format!("{n:e}");
    match s.split_once('e') {
        Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
        _ => s,
    }
}

/// `String(v)` in JavaScript, for the key-token fields.
fn js_string(v: &Js) -> String {
    match v {
        Js::Null => String::new(),
        Js::Bool(b) => b.to_string(),
        Js::Num(n) => js_number(*n),
        Js::Str(s) => s.clone(),
        Js::Arr(items) => items
            .iter()
            .map(|i| if matches!(i, Js::Null) { String::new() } else { js_string(i) })
            .collect::<Vec<_>>()
            .join(","),
        Js::Obj(_) => "[object Object]".into(),
    }
}

/// memento's `normalizeReflectionNoteObject`.
fn note_text(note: &Js) -> String {
    let owned;
    let entries: &[(String, Js)] = match note {
        Js::Obj(e) => e,
        // `typeof [] === 'object'`: an array item is walked by its indices.
        Js::Arr(items) => {
            owned = items.iter().enumerate().map(|(i, v)| (i.to_string(), v.clone())).collect::<Vec<_>>();
            &owned
        }
        _ => return String::new(),
    };
    let get = |k: &str| entries.iter().find(|(key, _)| key == k).map(|(_, v)| v);
    let mut tokens = Vec::new();
    for (key, prefix) in [("failure_type", "type"), ("phase", "phase")] {
        if let Some(v) = get(key).filter(|v| !matches!(v, Js::Null)) {
            let text = js_string(v);
            let text = js_trim(&text);
            if !text.is_empty() {
                tokens.push(format!("{prefix}:{text}"));
            }
        }
    }
    for (key, v) in entries {
        if matches!(key.as_str(), "failure_type" | "phase" | "timestamp") {
            continue;
        }
        match v {
            Js::Str(s) if !js_trim(s).is_empty() => tokens.push(js_trim(s).to_string()),
            Js::Num(n) => tokens.push(js_number(*n)),
            Js::Bool(b) => tokens.push(b.to_string()),
            _ => {}
        }
    }
    tokens.join(" ")
}

fn register_functions(conn: &rusqlite::Connection) -> Result<()> {
    conn.create_scalar_function(
        "normalize_reflection_notes",
        1,
        // Innocuous: with `trusted_schema = OFF` only such functions may run inside triggers
        // (memento's FTS triggers call this one); it reads its argument and nothing else.
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC | FunctionFlags::SQLITE_INNOCUOUS,
        |ctx| {
            // memento's function never fails and gives '' for anything that is not JSON text;
            // a failure here would fail memento's trigger and so the write.
            let raw = match ctx.get_raw(0) {
                rusqlite::types::ValueRef::Text(t) => std::str::from_utf8(t).ok(),
                _ => None,
            };
            Ok(normalize_reflection_notes(raw))
        },
    )?;
    Ok(())
}

fn configure(conn: &Connection) -> Result<()> {
    let raw = conn.sqlite().expect("an SQLite connection");
    raw.busy_timeout(BUSY_TIMEOUT)?;
    // Triggers and views in the file may call only functions flagged innocuous, and never
    // virtual tables' side effects: the file's schema is data somebody else may have written.
    conn.execute_batch("PRAGMA trusted_schema = OFF")?;
    register_functions(raw)?;
    // Reading the header first makes a foreign file fail here, before any write touches it.
    raw.query_row("PRAGMA schema_version", [], |r| r.get::<_, i64>(0)).map_err(|e| match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) | Some(rusqlite::ErrorCode::DatabaseCorrupt) => {
            Error::Foreign("the file is not a SQLite database (or is damaged)".into())
        }
        _ => Error::Db(e),
    })?;
    refuse_other_programs_file(raw)?;
    schema_guard::refuse_foreign_logic(conn)?;
    // Switching to WAL needs a lock that the busy timeout does not always wait for when
    // several processes open a new file at once, so BUSY is retried here too.
    let mode: String = with_retry(|| conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)))?;
    if mode != "wal" && mode != "memory" {
        return Err(Error::Foreign(format!("could not switch the database to WAL (journal mode {mode})")));
    }
    // temp_store in memory: sorting and FTS merges need no temp files (import +15%,
    // forgetting batch −16% at 100k, 40% fewer bytes written; see BENCHMARKS.md).
    // secure_delete: freed space is overwritten with zeros, so a hard-deleted memory (or the
    // old text of a redacted one) leaves no bytes in free pages or cells.
    conn.execute_batch(
        "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY; PRAGMA secure_delete = ON;",
    )?;
    Ok(())
}

/// The full-text indexes Lethe keeps in sync with `memory_item` (memento's and Lethe's own).
const FTS_TABLES: &[&str] = &["memory_item_fts", "lethe_fts"];

/// Merges every full-text index into one segment, which drops the entries FTS5 keeps for
/// deleted rows (a 'delete' only adds a tombstone; the old tokens stay in older segments
/// until a merge). With `secure_delete` the old segments' pages are zeroed as they are freed.
/// Costs a rewrite of the indexes (BENCHMARKS.md), so it runs once per hard delete or purge
/// batch, inside the caller's transaction.
pub fn purge_deleted_index_entries(tx: &Connection) -> Result<()> {
    // PostgreSQL's index is a column of the row: a deleted row takes its entries with it.
    if tx.is_postgres() {
        return Ok(());
    }
    for t in FTS_TABLES {
        if table_exists(tx, t)? {
            tx.execute_batch(&format!("INSERT INTO {t} ({t}) VALUES ('optimize')"))?;
        }
    }
    Ok(())
}

/// `PRAGMA wal_checkpoint(TRUNCATE)`: copies the WAL into the file and truncates it to zero
/// bytes, so that page images holding erased text do not survive in `-wal`. Another process
/// reading at that moment makes it BUSY; retried for up to two seconds. Returns whether the
/// WAL was truncated (false: a reader kept it; the text then leaves at the next checkpoint).
pub fn checkpoint_truncate(conn: &Connection) -> Result<bool> {
    let Some(conn) = conn.sqlite() else { return Ok(true) };
    let started = std::time::Instant::now();
    loop {
        let busy: i64 = match conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0)) {
            Ok(b) => b,
            Err(e) if is_busy(&e) => 1,
            Err(e) => return Err(e.into()),
        };
        if busy == 0 {
            return Ok(true);
        }
        if started.elapsed() >= Duration::from_secs(2) {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Moves a long-running process's WAL checkpoints off its writer.
///
/// By default SQLite checkpoints inside the `COMMIT` that takes the WAL past
/// `wal_autocheckpoint` (1,000 pages): that one call then copies the WAL into the database and
/// syncs both files (`synchronous = NORMAL` syncs at checkpoints), which stalls the writer for
/// milliseconds every few dozen writes. After this call the writer's commits only nudge a
/// thread, which runs a `PASSIVE` checkpoint on its own connection (it never takes the write
/// lock and never waits for readers), every [`CHECKPOINT_EVERY_COMMITS`] commits. The writer
/// keeps an automatic checkpoint at [`WRITER_FALLBACK_PAGES`] in case the thread falls behind,
/// so the WAL stays bounded. The thread lives as long as the writer's commit hook (this call
/// replaces any commit hook the connection had): it ends when the connection closes. Other
/// processes keep SQLite's default. A database in memory needs none; nothing is done.
pub fn checkpoint_off_the_writer(writer: &Connection) -> Result<()> {
    let Some(checkpoints) = CheckpointThread::start(writer)? else { return Ok(()) };
    let Some(writer) = writer.sqlite() else { return Ok(()) };
    writer.pragma_update(None, "wal_autocheckpoint", WRITER_FALLBACK_PAGES)?;
    let mut commits = 0u32;
    writer.commit_hook(Some(move || {
        commits = commits.wrapping_add(1);
        if commits.is_multiple_of(CHECKPOINT_EVERY_COMMITS) {
            checkpoints.nudge();
        }
        false
    }));
    Ok(())
}

/// A thread that runs `PASSIVE` checkpoints of one SQLite file on its own connection when
/// nudged, so that a writer's commits never copy the WAL into the file themselves (see
/// [`checkpoint_off_the_writer`]). A `PASSIVE` checkpoint never takes the write lock and never
/// waits for readers. Dropping it ends the thread after the checkpoint in progress.
pub struct CheckpointThread {
    /// A request: `None` a nudge, `Some(done)` a checkpoint to be waited for.
    nudge: Option<std::sync::mpsc::SyncSender<Option<std::sync::mpsc::Sender<()>>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl CheckpointThread {
    /// `None` for a database in memory or on a server: nothing to checkpoint.
    pub fn start(writer: &Connection) -> Result<Option<CheckpointThread>> {
        let path = match writer.sqlite().and_then(|c| c.path()) {
            Some(p) if !p.is_empty() => p.to_string(),
            _ => return Ok(None),
        };
        let conn = open(&path)?;
        let (nudge, wake) = std::sync::mpsc::sync_channel::<Option<std::sync::mpsc::Sender<()>>>(1);
        let thread = std::thread::Builder::new().name("lethe-checkpoint".into()).spawn(move || {
            while let Ok(request) = wake.recv() {
                // BUSY (another checkpoint running, e.g. another process's) is no failure: the
                // next nudge tries again.
                let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(0));
                if let Some(done) = request {
                    let _ = done.send(());
                }
            }
        })?;
        Ok(Some(CheckpointThread { nudge: Some(nudge), thread: Some(thread) }))
    }

    /// Asks for a checkpoint; returns at once. A checkpoint already pending takes this one's
    /// frames too.
    pub fn nudge(&self) {
        if let Some(n) = &self.nudge {
            let _ = n.try_send(None);
        }
    }

    /// A checkpoint of everything committed so far, waited for. A writer that never waits
    /// keeps appending to the WAL while the thread copies it, so the WAL never starts over and
    /// grows with everything written (a 1M-memory import left 3.9 GB of it); the first commit
    /// after this call starts it over.
    pub fn catch_up(&self) {
        if let Some(n) = &self.nudge {
            let (done, wait) = std::sync::mpsc::channel();
            if n.send(Some(done)).is_ok() {
                let _ = wait.recv();
            }
        }
    }

    /// One last checkpoint of everything committed so far, waited for.
    pub fn finish(mut self) {
        if let Some(n) = self.nudge.take() {
            let _ = n.send(None);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for CheckpointThread {
    fn drop(&mut self) {
        self.nudge.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Checkpoints kept away from a writer that commits many times in a row (a bulk import, the
/// forgetting batch): a [`CheckpointThread`] copies the WAL into the file while the writer
/// goes on, and every `per_wal` commits the writer waits for it, so that the WAL starts over.
/// The writer keeps an automatic checkpoint at [`WRITER_FALLBACK_PAGES`] meanwhile, in case
/// the thread falls behind; [`CheckpointsAside::finish`] restores its own setting.
pub struct CheckpointsAside {
    thread: CheckpointThread,
    autocheckpoint_was: Option<i64>,
    per_wal: usize,
    commits: usize,
}

impl CheckpointsAside {
    /// `None` for a database in memory or on a server: nothing to checkpoint.
    pub fn start(writer: &Connection, per_wal: usize) -> Result<Option<CheckpointsAside>> {
        let Some(thread) = CheckpointThread::start(writer)? else { return Ok(None) };
        let autocheckpoint_was = match writer.sqlite() {
            Some(c) => {
                let was: i64 = c.query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))?;
                c.pragma_update(None, "wal_autocheckpoint", WRITER_FALLBACK_PAGES)?;
                Some(was)
            }
            None => None,
        };
        Ok(Some(CheckpointsAside { thread, autocheckpoint_was, per_wal: per_wal.max(1), commits: 0 }))
    }

    /// After each of the writer's commits.
    pub fn committed(&mut self) {
        self.commits += 1;
        if self.commits.is_multiple_of(self.per_wal) {
            self.thread.catch_up();
        } else {
            self.thread.nudge();
        }
    }

    /// The last checkpoint, waited for; the writer's automatic checkpoint as it was.
    pub fn finish(self, writer: &Connection) -> Result<()> {
        self.thread.finish();
        if let (Some(was), Some(c)) = (self.autocheckpoint_was, writer.sqlite()) {
            c.pragma_update(None, "wal_autocheckpoint", was)?;
        }
        Ok(())
    }
}

/// Pages a long-running process keeps in SQLite's cache per connection: [`serve_many_reads`].
pub const LONG_RUNNING_CACHE_MIB: i64 = 64;

/// For a connection that serves many requests (`lethe mcp`, the window): SQLite's default
/// page cache (2 MiB) holds a small part of a 10k-memory file, so every recall re-read its
/// candidates' pages through `pread` (a fifth of a recall's time at 10k). The cache grows
/// only as pages are read, up to [`LONG_RUNNING_CACHE_MIB`]; one-shot CLI commands keep the
/// default, since a scan that fills a big cache once costs more than it saves.
pub fn serve_many_reads(conn: &Connection) -> Result<()> {
    let Some(conn) = conn.sqlite() else { return Ok(()) };
    conn.pragma_update(None, "cache_size", -LONG_RUNNING_CACHE_MIB * 1024)?;
    Ok(())
}

/// Commits of the writer between two nudges of the checkpoint thread.
pub const CHECKPOINT_EVERY_COMMITS: u32 = 16;
/// The writer's own automatic checkpoint once [`checkpoint_off_the_writer`] runs (pages of
/// 4 KiB: 80 MiB).
pub const WRITER_FALLBACK_PAGES: i64 = 20_000;

/// A SQLite file with tables but neither Lethe's nor memento's belongs to another program:
/// migrating it would add Lethe's schema to someone else's data (and switch it to WAL), so it
/// is refused before anything is written.
fn refuse_other_programs_file(conn: &rusqlite::Connection) -> Result<()> {
    // One statement, so one snapshot: checked in separate statements, another process's
    // migration could commit in between and its first table look like someone else's.
    let (ours, other): (bool, Option<String>) = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name IN ('lethe_schema', 'memory_item')), \
                (SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' \
                 ORDER BY name LIMIT 1)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    match other {
        Some(t) if !ours => Err(Error::Foreign(format!(
            "the file belongs to another program (it has a table {t:?} and no memories); it was left untouched"
        ))),
        _ => Ok(()),
    }
}

/// A value of the wrong type in a memory's column: read leniently (see
/// [`crate::model::lenient`]) and reported here, so a person can see which row another
/// program damaged.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Mistyped {
    /// The memory's id; empty when the id itself is missing (`column` is then `id`).
    pub id: String,
    /// The column that holds the wrong type.
    pub column: String,
    /// SQLite's `typeof` of the stored value.
    pub found: String,
}

/// Columns and the storage classes Lethe expects in them (NULL is always fine).
pub(crate) const TYPED_COLUMNS: &[(&str, &[&str])] = &[
    ("view_count", &["integer"]),
    ("cite_count", &["integer"]),
    ("edit_count", &["integer"]),
    ("version", &["integer"]),
    ("importance", &["real", "integer"]),
    ("pinned", &["integer"]),
    ("is_deleted", &["integer"]),
    ("content", &["text"]),
    ("created_at", &["text"]),
    ("last_accessed", &["text"]),
    ("deleted_at", &["text"]),
];

/// The memories (at most `limit` findings) holding a value of the wrong type.
pub fn mistyped_rows(conn: &Connection, limit: usize) -> Result<Vec<Mistyped>> {
    // PostgreSQL's columns hold only values of their declared type.
    if conn.is_postgres() {
        return Ok(Vec::new());
    }
    // An id that is not text (memento's `id TEXT PRIMARY KEY` takes NULL) is the one case
    // where NULL is wrong too.
    let mut cols: Vec<(&str, String)> = vec![("id", "typeof(id) <> 'text'".into())];
    for (col, ok) in TYPED_COLUMNS {
        if column_exists(conn, "memory_item", col)? {
            let allowed = ok.iter().map(|t| format!("'{t}'")).collect::<Vec<_>>().join(", ");
            cols.push((col, format!("typeof({col}) NOT IN ('null', {allowed})")));
        }
    }
    // One scan of the table, whatever the number of columns checked (`typeof` reads only the
    // record header, not the values).
    let sql = format!(
        "SELECT id, {} FROM memory_item WHERE {} LIMIT {limit}",
        cols.iter().map(|(c, _)| format!("typeof({c})")).collect::<Vec<_>>().join(", "),
        cols.iter().map(|(_, w)| w.as_str()).collect::<Vec<_>>().join(" OR ")
    );
    let allowed = |col: &str, found: &str| {
        if col == "id" {
            return found == "text";
        }
        found == "null" || TYPED_COLUMNS.iter().any(|(c, ok)| *c == col && ok.contains(&found))
    };
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let id = model_text(&r, 0)?;
        for (i, (col, _)) in cols.iter().enumerate() {
            let found: String = r.get(i + 1)?;
            if !allowed(col, &found) && out.len() < limit {
                out.push(Mistyped { id: id.clone(), column: col.to_string(), found });
            }
        }
    }
    Ok(out)
}

fn model_text(r: &crate::storage::db::Row<'_>, i: usize) -> crate::error::Result<String> {
    Ok(crate::model::lenient::text(r, i)?.unwrap_or_default())
}

/// Where the database lives unless `--db` says otherwise: `$LETHE_DB`, else
/// `$XDG_DATA_HOME/lethe/memory.db`, else `~/.local/share/lethe/memory.db`. The CLI, the MCP
/// server and the window share this one rule.
pub fn default_db_path() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("LETHE_DB").filter(|p| !p.is_empty()) {
        return std::path::PathBuf::from(p);
    }
    data_dir().join("memory.db")
}

/// Lethe's data directory: `$XDG_DATA_HOME/lethe`, else `~/.local/share/lethe` (whatever
/// `$LETHE_DB` says: the window's own files, such as its recent list, live here).
pub fn data_dir() -> std::path::PathBuf {
    use std::path::PathBuf;
    std::env::var_os("XDG_DATA_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("lethe")
}

/// How long opening may take before it is abandoned with a clear error (the checks of the
/// header and schema read a few pages; a file that makes them spin is hostile or broken).
pub const OPEN_DEADLINE: Duration = Duration::from_secs(2);
/// How long the migrations may take (they rebuild full-text indexes of big memento files).
pub const MIGRATION_DEADLINE: Duration = Duration::from_secs(600);

/// Prepared statements a connection keeps.
const STATEMENT_CACHE: usize = 64;

/// Opens (creating if missing) a database file and brings its schema up to date. A new file
/// is created readable by its owner only (0600, and SQLite gives its `-wal` and `-shm` the
/// same mode), in a directory created 0700.
pub fn open(path: impl AsRef<Path>) -> Result<Connection> {
    let path = path.as_ref();
    if let Some(url) = path.to_str().filter(|p| super::postgres::is_url(p)) {
        return super::postgres::connect(url);
    }
    refuse_unpersisted(path)?;
    create_private(path)?;
    let raw = rusqlite::Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| Error::Foreign(format!("cannot open {}: {e}", path.display())))?;
    // Room for every statement one `remember` runs (with its write-time `similar`), so a
    // long-running writer prepares each once: with rusqlite's 16, statements of the write
    // pushed each other out and were compiled again, triggers and all, at every call.
    raw.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    let conn = Connection::from(raw);
    let raw = conn.sqlite().expect("an SQLite connection");
    with_deadline(raw, OPEN_DEADLINE, "opening the database", || configure(&conn))?;
    with_deadline(raw, MIGRATION_DEADLINE, "upgrading the database's schema", || migrate(&conn))?;
    Ok(conn)
}

/// Opens a file for viewing only: nothing is written (no migration, no WAL switch,
/// `query_only`), so triggers in it cannot fire. For files [`open`] refuses because they
/// hold foreign triggers, and for looking at a store without any risk of changing it. A file
/// nobody may write (a read-only mount, an immutable file), which SQLite cannot open in WAL
/// mode without creating its `-shm`, is opened as immutable instead.
pub fn open_read_only(path: impl AsRef<Path>) -> Result<Connection> {
    let path = path.as_ref();
    if let Some(url) = path.to_str().filter(|p| super::postgres::is_url(p)) {
        let conn = super::postgres::connect(url)?;
        // Kept on a connection made anew after a failover too.
        conn.postgres().expect("a server connection").session("SET default_transaction_read_only = on")?;
        return Ok(conn);
    }
    refuse_unpersisted(path)?;
    match open_read_only_as(path, false) {
        Err(e) if !matches!(e, Error::Foreign(ref m) if m.contains("schema")) && !writable(path) => {
            open_read_only_as(path, true).map_err(|_| e)
        }
        other => other,
    }
}

/// Whether the file can be opened for writing (it is not on a read-only mount, not
/// immutable, and its mode lets this user write); opening it so changes nothing.
fn writable(path: &Path) -> bool {
    std::fs::OpenOptions::new().write(true).open(path).is_ok()
}

/// `file:` URI of an absolute path, every byte outside the unreserved set and `/` escaped.
fn immutable_uri(path: &Path) -> Result<String> {
    let abs = std::fs::canonicalize(path)?;
    let mut uri = String::from("file:");
    for &b in abs.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.' | b'~') {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    Ok(uri)
}

fn open_read_only_as(path: &Path, immutable: bool) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let raw = if immutable {
        rusqlite::Connection::open_with_flags(immutable_uri(path)?, flags | OpenFlags::SQLITE_OPEN_URI)
    } else {
        rusqlite::Connection::open_with_flags(path, flags)
    }
    .map_err(|e| Error::Foreign(format!("cannot open {}: {e}", path.display())))?;
    let conn = Connection::from(raw);
    let raw = conn.sqlite().expect("an SQLite connection");
    with_deadline(raw, OPEN_DEADLINE, "opening the database", || {
        let conn_ = &conn;
        let conn = raw;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.execute_batch("PRAGMA trusted_schema = OFF; PRAGMA query_only = ON;")?;
        register_functions(conn)?;
        conn.query_row("PRAGMA schema_version", [], |r| r.get::<_, i64>(0)).map_err(|e| {
            match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::NotADatabase) | Some(rusqlite::ErrorCode::DatabaseCorrupt) => {
                    Error::Foreign("the file is not a SQLite database (or is damaged)".into())
                }
                _ => Error::Db(e),
            }
        })?;
        let version = schema_version(conn_)?;
        if version != SCHEMA_VERSION {
            return Err(Error::Foreign(format!(
                "--read-only needs a file at this Lethe's schema ({SCHEMA_VERSION}); this one is at {version}"
            )));
        }
        Ok(())
    })?;
    Ok(conn)
}

/// A second, read-only connection to the file `conn` has open, for a scan on another core;
/// `None` for PostgreSQL, an in-memory database, or a file that cannot be opened again.
pub fn second_reader(conn: &Connection) -> Option<Connection> {
    let path = conn.sqlite()?.path().filter(|p| !p.is_empty())?;
    open_read_only(path).ok()
}

/// Runs `f` with a deadline on every statement it runs: past it, SQLite interrupts the
/// statement and the error says what took too long.
fn with_deadline<T>(
    conn: &rusqlite::Connection,
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let deadline = std::time::Instant::now() + limit;
    conn.progress_handler(10_000, Some(move || std::time::Instant::now() > deadline));
    let out = f();
    conn.progress_handler(0, None::<fn() -> bool>);
    out.map_err(|e| match e {
        Error::Db(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted) => Error::Refused(
            format!("{what} took longer than {} s and was stopped; the file is left as it was", limit.as_secs()),
        ),
        other => other,
    })
}

/// A store is a file: `:memory:`, an empty path and SQLite URIs (`file:…?mode=memory`,
/// `file::memory:`, a `vfs=memdb`) would take writes and keep nothing, so they are refused.
fn refuse_unpersisted(path: &Path) -> Result<()> {
    let s = path.to_string_lossy();
    if s.is_empty() || s == ":memory:" || s.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("file:")) {
        return Err(Error::invalid(format!(
            "{s:?} is not a file path: SQLite URIs (file:…) and :memory: are refused, since what is written there may \
             not persist; name the database file itself"
        )));
    }
    Ok(())
}

/// A statement deadline for a whole read-only session: past `limit` from now, every
/// statement is interrupted (a file whose views recurse for ever ends with an error instead
/// of spinning). The error a statement then fails with is `OperationInterrupted`, which
/// [`interrupted_message`] words.
pub fn session_deadline(conn: &Connection, limit: Duration) {
    if let Some(raw) = conn.sqlite() {
        let deadline = std::time::Instant::now() + limit;
        raw.progress_handler(10_000, Some(move || std::time::Instant::now() > deadline));
    }
}

/// The message for a statement stopped by [`session_deadline`], if `e` is one.
pub fn interrupted_message(e: &Error, limit: Duration) -> Option<String> {
    match e {
        Error::Db(d) if d.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted) => Some(format!(
            "reading the file took longer than {} s and was stopped (a view or trigger in it may never end); the \
             file is left as it was",
            limit.as_secs()
        )),
        _ => None,
    }
}

/// Creates a missing parent directory (0700) and a missing database file (0600) before
/// SQLite opens it; an existing file keeps its mode. A symbolic link to a missing file is
/// refused: SQLite would create its target with the default mode (0644), wherever it points.
fn create_private(path: &Path) -> Result<()> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) && std::fs::metadata(path).is_err() {
        return Err(Error::invalid(format!(
            "{} is a symbolic link to a file that does not exist; Lethe does not create a store through it (create \
             the target first, or name it directly)",
            path.display()
        )));
    }
    if path.as_os_str().is_empty() || path.to_str().is_some_and(|p| p == ":memory:" || p.starts_with("file:")) {
        return Ok(());
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(parent)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::Foreign(format!("cannot create {}: {e}", path.display()))),
    }
}

/// Whether the file can only be read through `conn` (its permissions, a read-only mount):
/// SQLite opens such a file read-only without an error, and every write then fails.
pub fn is_read_only(conn: &Connection) -> Result<bool> {
    match conn.sqlite() {
        Some(raw) => Ok(raw.is_readonly(rusqlite::MAIN_DB)?),
        None => Ok(false),
    }
}

/// Writes a consistent copy of the file (what its WAL holds included) to `path`, a new file
/// private to its owner, with `VACUUM INTO`: nothing is written to the original, so this
/// works on a read-only file. `path` must not exist.
pub fn copy_to(conn: &Connection, path: &Path) -> Result<()> {
    let raw = conn.sqlite_only("a copy of the store")?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).map_err(|e| Error::invalid(format!("cannot create {}: {e}", path.display())))?;
    let target = path.to_str().ok_or_else(|| Error::invalid("the copy's path is not valid UTF-8"))?;
    if let Err(e) = raw.execute("VACUUM INTO ?1", [target]) {
        let _ = std::fs::remove_file(path);
        return Err(e.into());
    }
    Ok(())
}

/// An in-memory database with the full schema, for tests.
pub fn open_in_memory() -> Result<Connection> {
    let conn = Connection::from(rusqlite::Connection::open_in_memory()?);
    configure(&conn)?;
    migrate(&conn)?;
    Ok(conn)
}

/// The schema version recorded in the file (0 for a file Lethe never opened).
pub fn schema_version(conn: &Connection) -> Result<i64> {
    if !table_exists(conn, "lethe_schema")? {
        return Ok(0);
    }
    conn.query_row("SELECT COALESCE(MAX(version), 0) FROM lethe_schema", [], |r| r.get(0))
}

pub fn is_memento(conn: &Connection) -> Result<bool> {
    Ok(conn
        .query_row("SELECT value FROM lethe_meta WHERE key = 'origin'", [], |r| r.get::<_, String>(0))
        .optional()?
        .as_deref()
        == Some("memento"))
}

/// Applies the pending migrations in one IMMEDIATE transaction, so two processes opening a
/// new file at once cannot both migrate it.
fn migrate(conn: &Connection) -> Result<()> {
    // A file already at this schema needs no write lock: reads then never wait behind another
    // program's writer (WAL lets them proceed). The check is repeated inside the transaction.
    if with_retry(|| schema_version(conn))? == SCHEMA_VERSION {
        return Ok(());
    }
    // Our own version table instead of `PRAGMA user_version`: a memento file may use that
    // pragma for its own purposes, and Lethe must leave memento's bookkeeping alone.
    with_retry(|| {
        conn.begin(TransactionBehavior::Immediate)?;
        let result = (|| {
            conn.execute_batch(
                "CREATE TABLE IF NOT EXISTS lethe_schema (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
            )?;
            let current = schema_version(conn)?;
            if current > SCHEMA_VERSION {
                return Err(Error::Foreign(format!(
                    "the database was written by a newer Lethe (schema {current}, this build knows {SCHEMA_VERSION}); it was left untouched"
                )));
            }
            for m in MIGRATIONS.iter().filter(|m| m.version > current) {
                (m.apply)(conn)?;
                conn.execute(
                    "INSERT INTO lethe_schema (version, name, applied_at) VALUES (?1, ?2, ?3)",
                    crate::storage::db::params![m.version, m.name, crate::time::format(chrono::Utc::now())],
                )?;
            }
            Ok(())
        })();
        match result {
            Ok(()) => {
                conn.commit()?;
                Ok(())
            }
            Err(e) => {
                let _ = conn.rollback();
                Err(e)
            }
        }
    })
}

/// Retries an operation while SQLite reports BUSY/LOCKED (beyond the busy timeout, which
/// does not cover every case, e.g. a read transaction upgrading to write).
pub fn with_retry<T>(mut f: impl FnMut() -> Result<T>) -> Result<T> {
    let started = std::time::Instant::now();
    let mut delay = Duration::from_millis(2);
    loop {
        match f() {
            Err(Error::ConnectionLost(m)) if started.elapsed() >= RETRY_DEADLINE => {
                return Err(Error::Unavailable(m));
            }
            Err(e) if e.is_retryable() => {
                // Bounded: another program holding a write lock for good must end in a clear
                // error, not an endless wait.
                if started.elapsed() >= RETRY_DEADLINE {
                    return Err(Error::Busy(format!(
                        "another program has held a lock on the database for more than {} s ({e})",
                        RETRY_DEADLINE.as_secs()
                    )));
                }
                std::thread::sleep(delay);
                delay = (delay * 2).min(Duration::from_millis(200));
            }
            other => return other,
        }
    }
}

/// Runs `f` in an IMMEDIATE write transaction, retrying the whole transaction on BUSY.
pub fn write_tx<T>(conn: &mut Connection, mut f: impl FnMut(&Transaction) -> Result<T>) -> Result<T> {
    with_retry(|| {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    })
}

/// Runs `f` in one read transaction (a consistent snapshot, and one shared lock for all its
/// statements), or inside the caller's transaction if one is open. Ended with COMMIT, which
/// for a read leaves any statement the caller still has open undisturbed.
pub fn read_tx<T>(conn: &Connection, f: impl FnOnce() -> Result<T>) -> Result<T> {
    if !conn.is_autocommit() {
        return f();
    }
    conn.begin(TransactionBehavior::Deferred)?;
    let out = f();
    let end = conn.commit();
    let out = out?;
    end?;
    Ok(out)
}

/// `PRAGMA data_version`: changes when another connection commits.
pub fn data_version(conn: &Connection) -> Result<i64> {
    let Some(conn) = conn.sqlite() else { return last_change_seq(conn) };
    Ok(conn.query_row("PRAGMA data_version", [], |r| r.get(0))?)
}

/// The newest change-journal sequence number.
pub fn last_change_seq(conn: &Connection) -> Result<i64> {
    conn.prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM lethe_change")?.query_row([], |r| r.get(0))
}

/// Memory ids changed after `seq` (deduplicated, at most `limit`; `None` when more changed).
pub fn changes_since(conn: &Connection, seq: i64, limit: usize) -> Result<(i64, Option<Vec<String>>)> {
    let mut stmt =
        conn.prepare_cached("SELECT seq, memory_id FROM lethe_change WHERE seq > ?1 ORDER BY seq LIMIT ?2")?;
    let rows: Vec<(i64, Option<String>)> = stmt
        .query_map(crate::storage::db::params![seq, (limit + 1) as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<std::result::Result<_, _>>()?;
    let last = last_change_seq(conn)?;
    if rows.len() > limit {
        return Ok((last, None));
    }
    let mut ids: Vec<String> = rows.into_iter().filter_map(|(_, id)| id).collect();
    ids.sort();
    ids.dedup();
    Ok((last, Some(ids)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose checkpoints run on the thread keeps appending to the WAL; after
    /// `catch_up` the next commits write the WAL from its start again instead of growing it.
    #[test]
    fn catching_up_with_the_checkpoint_thread_starts_the_wal_over() {
        let dir = std::env::temp_dir().join(format!("lethe-ckpt-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.db");
        let conn = open(&path).unwrap();
        conn.execute_batch("CREATE TABLE t (x BLOB)").unwrap();
        let checkpoints = CheckpointThread::start(&conn).unwrap().expect("a file has a thread");
        let raw = conn.sqlite().unwrap();
        raw.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        let wal = || std::fs::metadata(dir.join("c.db-wal")).unwrap().len();
        let write = || raw.execute("INSERT INTO t VALUES (zeroblob(20000))", []).unwrap();
        for _ in 0..50 {
            write();
        }
        let grown = wal();
        assert!(grown > 1_000_000, "50 commits of 20 kB: {grown} bytes of WAL");
        checkpoints.catch_up();
        for _ in 0..10 {
            write();
        }
        assert_eq!(wal(), grown, "ten more commits went to the start of the WAL");
        checkpoints.finish();
        drop(conn);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn read_tx_leaves_open_statements_and_outer_transactions_alone() {
        let conn = open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2), (3);").unwrap();
        let mut stmt = conn.prepare("SELECT x FROM t ORDER BY x").unwrap();
        let mut rows = stmt.query([]).unwrap();
        assert_eq!(rows.next().unwrap().unwrap().get::<_, i64>(0).unwrap(), 1);
        let n: i64 = read_tx(&conn, || conn.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))).unwrap();
        assert_eq!(n, 3);
        assert_eq!(rows.next().unwrap().unwrap().get::<_, i64>(0).unwrap(), 2, "the caller's statement goes on");
        drop(rows);
        conn.execute_batch("BEGIN").unwrap();
        let e = read_tx(&conn, || -> Result<()> { Err(Error::invalid("inner")) }).unwrap_err();
        assert!(matches!(e, Error::Invalid(_)), "{e:?}");
        assert!(!conn.is_autocommit(), "the caller's transaction is still open");
        conn.execute_batch("COMMIT").unwrap();
        assert!(conn.is_autocommit());
    }

    #[test]
    fn migrations_apply_on_memory_and_are_idempotent() {
        let conn = open_in_memory().unwrap();
        assert_eq!(schema_version(&conn).unwrap(), SCHEMA_VERSION);
        // Running again must be a no-op, not an error (every process migrates on open).
        migrate(&conn).unwrap();
        assert_eq!(schema_version(&conn).unwrap(), SCHEMA_VERSION);
        for t in [
            "memory_item",
            "memory_forgetting_event",
            "meta_memory_stats",
            "memory_item_fts",
            "lethe_settings",
            "lethe_action",
            "lethe_change",
        ] {
            assert!(table_exists(&conn, t).unwrap(), "{t} must exist after migration");
        }
        assert!(!is_memento(&conn).unwrap());
        // FTS triggers carry memento's names (migration 3), Lethe's 001 names are gone.
        for t in ["memory_item_fts_insert", "memory_item_fts_delete", "memory_item_fts_update"] {
            assert!(trigger_exists(&conn, t).unwrap(), "{t}");
        }
        for t in ["memory_item_fts_ai", "memory_item_fts_ad", "memory_item_fts_au"] {
            assert!(!trigger_exists(&conn, t).unwrap(), "{t}");
        }
        let versions: Vec<i64> = MIGRATIONS.iter().map(|m| m.version).collect();
        let mut sorted = versions.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(versions, sorted, "migrations are append-only and strictly increasing");
        assert_eq!(*versions.last().unwrap(), SCHEMA_VERSION);
    }

    #[test]
    fn newer_schema_is_refused_untouched() {
        let conn = open_in_memory().unwrap();
        conn.execute("INSERT INTO lethe_schema VALUES (99, 'future', 'x')", []).unwrap();
        let err = migrate(&conn).unwrap_err();
        assert_eq!(err.code(), "db_unavailable", "{err}");
    }

    #[test]
    fn normalizes_notes_to_text() {
        let raw = r#"[{"failure_type":"tool_error","failure_description":"docker failed","timestamp":"2026-01-01T00:00:00Z"}]"#;
        let text = normalize_reflection_notes(Some(raw)).unwrap();
        assert_eq!(text, "type:tool_error docker failed");
        assert!(!text.contains("2026"), "timestamps are not indexed");
        assert_eq!(normalize_reflection_notes(None).as_deref(), Some(""));
    }

    #[test]
    fn normalizes_notes_exactly_like_memento() {
        let n = |s: &str| normalize_reflection_notes(Some(s)).unwrap();
        // The examples of memento's own documentation of normalizeReflectionNotes.
        assert_eq!(
            n(r#"{"failure_type": "tool_error", "failure_description": "API timeout"}"#),
            "type:tool_error API timeout"
        );
        assert_eq!(
            n(r#"[{"failure_description": "API timeout"}, {"lessons_learned": "retry needed"}]"#),
            "API timeout retry needed"
        );
        // Key tokens first, then values in JavaScript property order, timestamp skipped, strings
        // trimmed, numbers and booleans as JavaScript prints them, nested values skipped.
        assert_eq!(
            n(
                r#"{"z":" last ","phase":"manual","2":"two","failure_type":"metric_failure","a":1.0,"b":true,"c":{"x":"no"},"d":[1],"e":"  ","timestamp":"t","actor":"agent:x","n":0.0000001,"m":1e21}"#
            ),
            "type:metric_failure phase:manual two last 1 true agent:x 1e-7 1e+21"
        );
        assert_eq!(n(r#"{"failure_type":["a",null,2]}"#), "type:a,,2");
        assert_eq!(n(r#"{"failure_type":{"k":1}}"#), "type:[object Object]");
        assert_eq!(n(r#"{"a":"x","a":"y"}"#), "y", "a repeated key keeps the last value");
        assert_eq!(
            n(r#"[["s", 2], "plain", 3, null, {"k":"v"}]"#),
            "s 2 v",
            "arrays are walked by index, scalars give nothing"
        );
        for empty in ["", "not json", "\"just a string\"", "42", "null", "[]", "{}"] {
            assert_eq!(n(empty), "", "{empty:?}");
        }
    }

    #[test]
    fn the_sql_function_never_fails_on_odd_values() {
        let conn = open_in_memory().unwrap();
        for v in ["NULL", "42", "x'00ff'", "'[{\"failure_type\":\"tool_error\"}]'"] {
            let out: String =
                conn.query_row(&format!("SELECT normalize_reflection_notes({v})"), [], |r| r.get(0)).unwrap();
            assert!(out.is_empty() || out == "type:tool_error", "{v}: {out}");
        }
    }
}
