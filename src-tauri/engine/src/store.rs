//! Opening a database: per-connection PRAGMAs and SQL functions, then the append-only
//! migrations. Works on a fresh file, a Lethe file, and a memento file (DESIGN §2).

use std::path::Path;
use std::time::Duration;

use rusqlite::functions::FunctionFlags;
pub use rusqlite::Connection;
use rusqlite::{OpenFlags, OptionalExtension, TransactionBehavior};

use crate::error::{is_busy, Error, Result};

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
        apply: |c| Ok(c.execute_batch(include_str!("migrations/002_indexes.sql"))?),
    },
];

pub const SCHEMA_VERSION: i64 = 2;
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Columns Lethe reads, with the type memento gives them. An older memento file lacks some;
/// they are added (memento's own later versions define every one of them).
const MEMORY_COLUMNS: &[(&str, &str)] = &[
    ("importance", "REAL DEFAULT 0.5"),
    ("privacy_scope", "TEXT DEFAULT 'private'"),
    ("last_accessed", "TEXT"),
    ("pinned", "INTEGER DEFAULT 0"),
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
    ("version", "INTEGER DEFAULT 1"),
    ("owner_id", "TEXT"),
    ("session_id", "TEXT"),
    ("project_id", "TEXT"),
    ("is_deleted", "INTEGER DEFAULT 0"),
    ("deleted_at", "TEXT"),
];

fn migrate_core(conn: &Connection) -> Result<()> {
    let had_memory_table = table_exists(conn, "memory_item")?;
    conn.execute_batch(include_str!("migrations/001_core.sql"))?;
    if had_memory_table {
        // A file created by memento: remember that, and add what an older memento lacks.
        conn.execute("INSERT OR REPLACE INTO lethe_meta (key, value) VALUES ('origin', 'memento')", [])?;
        for (col, decl) in MEMORY_COLUMNS {
            if !column_exists(conn, "memory_item", col)? {
                conn.execute_batch(&format!("ALTER TABLE memory_item ADD COLUMN {col} {decl}"))?;
            }
        }
        for (col, decl) in [
            ("success_count", "INTEGER NOT NULL DEFAULT 0"),
            ("failure_count", "INTEGER NOT NULL DEFAULT 0"),
            ("avg_confidence", "REAL"),
            ("last_recalled_at", "TEXT"),
        ] {
            if !column_exists(conn, "meta_memory_stats", col)? {
                conn.execute_batch(&format!("ALTER TABLE meta_memory_stats ADD COLUMN {col} {decl}"))?;
            }
        }
    } else {
        conn.execute("INSERT OR REPLACE INTO lethe_meta (key, value) VALUES ('origin', 'lethe')", [])?;
    }
    if !table_exists(conn, "memory_item_fts")? {
        conn.execute_batch(include_str!("migrations/001_fts.sql"))?;
    }
    Ok(())
}

pub fn table_exists(conn: &Connection, name: &str) -> Result<bool> {
    Ok(conn
        .query_row("SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?1", [name], |_| Ok(()))
        .optional()?
        .is_some())
}

pub fn column_exists(conn: &Connection, table: &str, column: &str) -> Result<bool> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({table})"))?;
    let names = stmt.query_map([], |r| r.get::<_, String>(1))?;
    for n in names {
        if n? == column {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Turns a reflection-notes JSON array into searchable text. memento registers a function of
/// this name on every connection and its FTS triggers call it, so Lethe must too.
pub fn normalize_reflection_notes(raw: Option<&str>) -> Option<String> {
    let raw = raw?;
    let Ok(value) = serde_json::from_str::<serde_json::Value>(raw) else {
        return Some(raw.to_string());
    };
    let mut parts = Vec::new();
    collect_strings(&value, &mut parts, 0);
    Some(parts.join(" "))
}

fn collect_strings(v: &serde_json::Value, out: &mut Vec<String>, depth: usize) {
    if depth > 16 {
        return;
    }
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|i| collect_strings(i, out, depth + 1)),
        serde_json::Value::Object(map) => {
            for (k, val) in map {
                // Timestamps and actors are not what people search notes for.
                if k != "timestamp" && k != "actor" {
                    collect_strings(val, out, depth + 1);
                }
            }
        }
        _ => {}
    }
}

fn register_functions(conn: &Connection) -> Result<()> {
    conn.create_scalar_function(
        "normalize_reflection_notes",
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let raw: Option<String> = ctx.get(0)?;
            Ok(normalize_reflection_notes(raw.as_deref()))
        },
    )?;
    Ok(())
}

fn configure(conn: &Connection) -> Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    register_functions(conn)?;
    // Reading the header first makes a foreign file fail here, before any write touches it.
    conn.query_row("PRAGMA schema_version", [], |r| r.get::<_, i64>(0)).map_err(|e| match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) | Some(rusqlite::ErrorCode::DatabaseCorrupt) => {
            Error::Foreign("the file is not a SQLite database (or is damaged)".into())
        }
        _ => Error::Db(e),
    })?;
    // Switching to WAL needs a lock that the busy timeout does not always wait for when
    // several processes open a new file at once, so BUSY is retried here too.
    let mode: String = with_retry(|| Ok(conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?))?;
    if mode != "wal" && mode != "memory" {
        return Err(Error::Foreign(format!("could not switch the database to WAL (journal mode {mode})")));
    }
    conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")?;
    Ok(())
}

/// Opens (creating if missing) a database file and brings its schema up to date.
pub fn open(path: impl AsRef<Path>) -> Result<Connection> {
    let path = path.as_ref();
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| Error::Foreign(format!("cannot open {}: {e}", path.display())))?;
    configure(&conn)?;
    migrate(&conn)?;
    Ok(conn)
}

/// An in-memory database with the full schema, for tests.
pub fn open_in_memory() -> Result<Connection> {
    let conn = Connection::open_in_memory()?;
    configure(&conn)?;
    migrate(&conn)?;
    Ok(conn)
}

/// The schema version recorded in the file (0 for a file Lethe never opened).
pub fn schema_version(conn: &Connection) -> Result<i64> {
    if !table_exists(conn, "lethe_schema")? {
        return Ok(0);
    }
    Ok(conn.query_row("SELECT COALESCE(MAX(version), 0) FROM lethe_schema", [], |r| r.get(0))?)
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
    // Our own version table instead of `PRAGMA user_version`: a memento file may use that
    // pragma for its own purposes, and Lethe must leave memento's bookkeeping alone.
    with_retry(|| {
        conn.execute_batch("BEGIN IMMEDIATE")?;
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
                    rusqlite::params![m.version, m.name, crate::time::format(chrono::Utc::now())],
                )?;
            }
            Ok(())
        })();
        match result {
            Ok(()) => {
                conn.execute_batch("COMMIT")?;
                Ok(())
            }
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    })
}

/// Retries an operation while SQLite reports BUSY/LOCKED (beyond the busy timeout, which
/// does not cover every case, e.g. a read transaction upgrading to write).
pub fn with_retry<T>(mut f: impl FnMut() -> Result<T>) -> Result<T> {
    let mut delay = Duration::from_millis(2);
    for attempt in 0.. {
        match f() {
            Err(Error::Db(e)) if is_busy(&e) && attempt < 50 => {
                std::thread::sleep(delay);
                delay = (delay * 2).min(Duration::from_millis(200));
            }
            other => return other,
        }
    }
    unreachable!("the loop returns")
}

/// Runs `f` in an IMMEDIATE write transaction, retrying the whole transaction on BUSY.
pub fn write_tx<T>(conn: &mut Connection, mut f: impl FnMut(&rusqlite::Transaction) -> Result<T>) -> Result<T> {
    with_retry(|| {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    })
}

/// `PRAGMA data_version`: changes when another connection commits.
pub fn data_version(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row("PRAGMA data_version", [], |r| r.get(0))?)
}

/// The newest change-journal sequence number.
pub fn last_change_seq(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row("SELECT COALESCE(MAX(seq), 0) FROM lethe_change", [], |r| r.get(0))?)
}

/// Memory ids changed after `seq` (deduplicated, at most `limit`; `None` when more changed).
pub fn changes_since(conn: &Connection, seq: i64, limit: usize) -> Result<(i64, Option<Vec<String>>)> {
    let mut stmt =
        conn.prepare_cached("SELECT seq, memory_id FROM lethe_change WHERE seq > ?1 ORDER BY seq LIMIT ?2")?;
    let rows: Vec<(i64, Option<String>)> = stmt
        .query_map(rusqlite::params![seq, (limit + 1) as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
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
        assert!(text.contains("docker failed") && text.contains("tool_error"));
        assert!(!text.contains("2026"), "timestamps are not indexed");
        assert_eq!(normalize_reflection_notes(None), None);
    }
}
