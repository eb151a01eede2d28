//! Test support: memento database files. The memento 0.1.0 files are made by running memento's
//! own SQL (its `schema.sql`, copied byte for byte into `engine/tests/fixtures/memento/`, and the
//! DDL its `src/utils/database.ts` runs) on an empty file the way memento runs it; the 1.36 file
//! is still written by hand from memento's documented schema (no later source was available).
//! The engine's, the CLI's and the window's tests open the same files. Not part of the
//! product's behaviour; the CLI exposes it only as a hidden `fixture` command.

use std::path::Path;

use rusqlite::functions::FunctionFlags;
use rusqlite::{params, Connection};

use lethe_engine::error::{Error, Result};
use lethe_engine::store;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MementoKind {
    /// memento 0.1.0 as released (tag 1.5.1, commit 4964c2f): its `schema.sql` run verbatim,
    /// with three memento-shaped rows.
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

/// A released memento schema: which of memento's own files made it, at which release tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MementoSchema {
    /// `src/database/schema.sql` at tag 1.0.0: an `embedding BLOB` column on memory_item.
    Schema1_0_0,
    /// `src/database/schema.sql` at tags 1.0.1 to 1.4.0: embeddings in their own table, tags
    /// as (memory_id, tag) rows.
    Schema1_0_1,
    /// `src/database/schema.sql` at tag 1.5.1 (commit 4964c2f, package version 0.1.0).
    Schema1_5_1,
    /// The DDL `DatabaseUtils.initializeDatabase` in `src/utils/database.ts` runs at tag 1.5.1.
    DatabaseTs1_5_1,
}

impl MementoSchema {
    pub const ALL: [MementoSchema; 4] = [
        MementoSchema::Schema1_0_0,
        MementoSchema::Schema1_0_1,
        MementoSchema::Schema1_5_1,
        MementoSchema::DatabaseTs1_5_1,
    ];

    /// The fixture file as committed: a header naming its source, then memento's text.
    pub fn file(self) -> &'static str {
        match self {
            MementoSchema::Schema1_0_0 => include_str!("../../engine/tests/fixtures/memento/schema_1_0_0.sql"),
            MementoSchema::Schema1_0_1 => include_str!("../../engine/tests/fixtures/memento/schema_1_0_1.sql"),
            MementoSchema::Schema1_5_1 => include_str!("../../engine/tests/fixtures/memento/schema_1_5_1.sql"),
            MementoSchema::DatabaseTs1_5_1 => include_str!("../../engine/tests/fixtures/memento/database_1_5_1.ts"),
        }
    }

    /// memento's own text: everything after the header's line of dashes.
    pub fn source(self) -> &'static str {
        let file = self.file();
        let dashes = file.find(" ---------------").expect("the fixture's header ends with a line of dashes");
        let line_end = file[dashes..].find('\n').expect("a newline after the header") + dashes + 1;
        &file[line_end..]
    }

    /// The sha256 the header records for [`MementoSchema::source`] (the text as fetched).
    pub fn recorded_sha256(self) -> &'static str {
        let file = self.file();
        let at = file.find("sha256 of the copied text ").expect("the header records a sha256") + 26;
        &file[at..at + 64]
    }
}

/// The SQL statements `DatabaseUtils.initializeDatabase` hands to `this.run(db, …)`, in order,
/// taken from memento's TypeScript as it is (each is one string literal, quoted with `'` or
/// a backtick, without escapes).
pub fn database_ts_statements() -> Vec<&'static str> {
    let src = MementoSchema::DatabaseTs1_5_1.source();
    let start = src.find("static async initializeDatabase").expect("initializeDatabase in database.ts");
    let mut rest = &src[start..];
    let mut out = Vec::new();
    const CALL: &str = "this.run(db, ";
    while let Some(i) = rest.find(CALL) {
        rest = &rest[i + CALL.len()..];
        let quote = rest.chars().next().expect("a string after this.run(db, ");
        assert!(quote == '\'' || quote == '`', "a literal SQL string: {}", &rest[..40.min(rest.len())]);
        let end = rest[1..].find(quote).expect("the string's closing quote") + 1;
        out.push(&rest[1..end]);
        rest = &rest[end + 1..];
    }
    out
}

/// Creates a released memento schema in an empty database, as memento does: `schema.sql`
/// through one `db.exec` after `journal_mode = WAL` and `foreign_keys = ON` (its
/// `src/database/init.ts`), `database.ts`'s statements one by one. (better-sqlite3's `run`
/// would refuse the statements that return rows, the PRAGMAs; here they run and their rows
/// are dropped, so every statement of the function takes effect.)
pub fn create_memento_schema(conn: &Connection, schema: MementoSchema) -> Result<()> {
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;")?;
    match schema {
        MementoSchema::DatabaseTs1_5_1 => {
            for sql in database_ts_statements() {
                let mut stmt = conn.prepare(sql)?;
                let mut rows = stmt.raw_query();
                while rows.next()?.is_some() {}
            }
        }
        other => conn.execute_batch(other.source())?,
    }
    Ok(())
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
        MementoKind::Early => {
            create_memento_schema(&conn, MementoSchema::Schema1_5_1)?;
            conn.execute_batch(include_str!("../../engine/tests/fixtures/memento/rows_0_1.sql"))?;
        }
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

/// memento's remember tool's INSERT (`src/tools/remember-tool.ts` at 4964c2f), with the time
/// given instead of `CURRENT_TIMESTAMP` so that ages differ.
const MEMENTO_REMEMBER: &str =
    "INSERT INTO memory_item (id, type, content, importance, privacy_scope, tags, source, created_at) \
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)";

/// Writes a memento 0.1.0 file at `path` (which must not exist yet) with `schema` and `n`
/// memories stored the way memento's remember tool stores them: ids `mem_<n>_<suffix>`, the
/// four tiers in turn, JSON tag arrays, `YYYY-MM-DD HH:MM:SS` times a day apart. Memory `i`
/// says "memory number i" and names a topic word (`topic{i % 10}`), so searches can find it.
pub fn build_memento_with(path: &Path, schema: MementoSchema, n: usize) -> Result<()> {
    if path.exists() {
        return Err(Error::invalid(format!("{} already exists", path.display())));
    }
    let conn = memento_connection(path)?;
    create_memento_schema(&conn, schema)?;
    let tiers = ["working", "episodic", "semantic", "procedural"];
    let base = lethe_engine::time::parse("2025-01-01T09:00:00Z")?;
    conn.execute_batch("BEGIN")?;
    {
        let mut stmt = conn.prepare(MEMENTO_REMEMBER)?;
        for i in 0..n {
            let at = lethe_engine::time::add_days(base, (i % 500) as f64 + i as f64 / 1440.0);
            stmt.execute(params![
                format!("mem_{}_{:09x}", 1_735_722_000_000u64 + i as u64, i * 7919),
                tiers[i % 4],
                format!(
                    "memory number {i} about topic{} and the {} service",
                    i % 10,
                    ["billing", "search", "deploy"][i % 3]
                ),
                0.3 + (i % 5) as f64 / 10.0,
                "private",
                format!("[\"topic{}\",\"memento\"]", i % 10),
                "memento",
                at.format("%Y-%m-%d %H:%M:%S").to_string(),
            ])?;
        }
    }
    conn.execute_batch("COMMIT; PRAGMA wal_checkpoint(TRUNCATE);")?;
    Ok(())
}
