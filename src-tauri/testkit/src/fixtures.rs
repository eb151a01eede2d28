//! Test support: memento database files written by hand from memento's documented schema,
//! so that the engine's, the CLI's and the window's tests open the same files. Not part of
//! the product's behaviour; the CLI exposes it only as a hidden `fixture` command.

use std::path::Path;

use rusqlite::functions::FunctionFlags;
use rusqlite::Connection;

use lethe_engine::error::{Error, Result};
use lethe_engine::store;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MementoKind {
    /// memento 0.1: no procedural, versioning or soft-delete columns; `datetime('now')` times.
    Early,
    /// memento 1.36, including a sqlite-vec `vec0` table a plain SQLite cannot open.
    V136,
}

impl std::str::FromStr for MementoKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "memento-0.1" => Ok(MementoKind::Early),
            "memento-1.36" => Ok(MementoKind::V136),
            o => Err(Error::invalid(format!("unknown fixture {o:?} (memento-0.1 or memento-1.36)"))),
        }
    }
}

/// A connection as memento opens one: plain SQLite with `normalize_reflection_notes`.
pub fn memento_connection(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path)?;
    conn.create_scalar_function(
        "normalize_reflection_notes",
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let raw: Option<String> = ctx.get(0)?;
            Ok(store::normalize_reflection_notes(raw.as_deref()))
        },
    )?;
    conn.execute_batch("PRAGMA foreign_keys = ON")?;
    Ok(conn)
}

/// Writes a memento file at `path` (which must not exist yet).
pub fn build_memento(path: &Path, kind: MementoKind) -> Result<()> {
    if path.exists() {
        return Err(Error::invalid(format!("{} already exists", path.display())));
    }
    let conn = memento_connection(path)?;
    match kind {
        MementoKind::Early => conn.execute_batch(include_str!("../../engine/tests/fixtures/memento_0_1.sql"))?,
        MementoKind::V136 => {
            conn.execute_batch("PRAGMA journal_mode = WAL")?;
            conn.execute_batch(include_str!("../../engine/tests/fixtures/memento_1_36.sql"))?;
            conn.execute_batch(include_str!("../../engine/tests/fixtures/memento_1_36_vec.sql"))?;
        }
    }
    // One self-contained file, as a memento installation leaves it after a checkpoint.
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
    Ok(())
}
