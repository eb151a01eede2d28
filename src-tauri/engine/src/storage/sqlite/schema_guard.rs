//! Foreign logic in a file: triggers and views Lethe did not create. A trigger runs
//! inside every later write, with Lethe's rights and under Lethe's write lock, so one write to
//! the file by anyone (an agent with `sqlite3`, a memento file somebody sent) could rewrite
//! the audit, undo a pin or spin forever. On open, every trigger and view in the file is
//! compared, by name and by its SQL, with the ones Lethe's migrations and memento create; a
//! file with any other is refused before anything is written.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::storage::db::Connection;

use crate::error::{Error, Result};

/// Every trigger (and view) a Lethe or memento schema of any shipped version holds: name →
/// the SQL texts it may have, normalised. Built once from the very SQL the migrations run
/// (and memento's own DDL), so the list cannot drift from the schema.
fn known() -> &'static HashMap<String, Vec<String>> {
    static KNOWN: OnceLock<HashMap<String, Vec<String>>> = OnceLock::new();
    KNOWN.get_or_init(|| {
        let mut known: HashMap<String, Vec<String>> = HashMap::new();
        let scripts: &[&[&str]] = &[
            // Lethe, each shipped migration in order (003 replaces 001's FTS trigger names, so
            // a file from before 003 holds the old ones until it is migrated).
            &[
                include_str!("migrations/001_core.sql"),
                include_str!("migrations/001_fts.sql"),
                include_str!("migrations/002_indexes.sql"),
                include_str!("migrations/003_fts_memento_names.sql"),
                include_str!("migrations/004_semantic.sql"),
                include_str!("migrations/005_sessions.sql"),
                include_str!("migrations/006_derived_on_change.sql"),
                include_str!("migrations/009_session_context.sql"),
                include_str!("migrations/010_quarantined_context.sql"),
                include_str!("migrations/011_cheaper_context.sql"),
            ],
            // memento 1.36's schema (hand-written from its documentation), with sqlite-vec.
            &[
                include_str!("../../../tests/fixtures/memento_1_36.sql"),
                include_str!("../../../tests/fixtures/memento_1_36_vec.sql"),
            ],
            // memento 0.1.0 as released: its own schema.sql at each release tag whose schema
            // differs (copied byte for byte; the DDL its database.ts runs creates the same
            // triggers). Tag 1.5.0's schema needs sqlite-vec to run at all and is not here.
            &[include_str!("../../../tests/fixtures/memento/schema_1_0_0.sql")],
            &[include_str!("../../../tests/fixtures/memento/schema_1_0_1.sql")],
            &[include_str!("../../../tests/fixtures/memento/schema_1_5_1.sql")],
        ];
        for steps in scripts {
            let conn = Connection::open_in_memory().expect("an in-memory database");
            super::register_functions(conn.sqlite().expect("sqlite")).expect("registering SQL functions");
            for sql in *steps {
                conn.execute_batch(sql).expect("a shipped schema script runs on an empty database");
                for (name, sql) in objects(&conn).expect("reading sqlite_master") {
                    let entry = known.entry(name).or_default();
                    let sql = normalise(&sql);
                    if !entry.contains(&sql) {
                        entry.push(sql);
                    }
                }
            }
        }
        known
    })
}

/// The triggers and views of a file: (kind name, SQL). `kind name` is e.g. `trigger x`.
fn objects(conn: &Connection) -> Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare(
        "SELECT type || ' ' || name, COALESCE(sql, '') FROM sqlite_master WHERE type IN ('trigger', 'view') ORDER BY type, name",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    rows.collect::<crate::error::Result<_>>()
}

/// Whitespace runs become one space, `IF NOT EXISTS` and a final `;` go, case is kept: two
/// spellings of the same statement compare equal, a different body does not.
fn normalise(sql: &str) -> String {
    let words: Vec<&str> = sql.split_whitespace().collect();
    let mut out: Vec<&str> = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        if i + 2 < words.len()
            && words[i].eq_ignore_ascii_case("IF")
            && words[i + 1].eq_ignore_ascii_case("NOT")
            && words[i + 2].eq_ignore_ascii_case("EXISTS")
        {
            i += 3;
            continue;
        }
        out.push(words[i]);
        i += 1;
    }
    out.join(" ").trim_end_matches(';').trim_end().to_string()
}

/// The triggers and views in the file that neither Lethe nor memento created (or whose SQL
/// differs from theirs), by kind and name.
pub fn foreign_objects(conn: &Connection) -> Result<Vec<String>> {
    let known = known();
    Ok(objects(conn)?
        .into_iter()
        .filter(|(name, sql)| !known.get(name).is_some_and(|bodies| bodies.contains(&normalise(sql))))
        .map(|(name, _)| name)
        .collect())
}

/// `Error::Foreign` naming the foreign triggers and views, if there are any.
pub fn refuse_foreign_logic(conn: &Connection) -> Result<()> {
    let foreign = foreign_objects(conn)?;
    if foreign.is_empty() {
        return Ok(());
    }
    let shown: Vec<String> = foreign.iter().take(10).map(|n| format!("{n:?}")).collect();
    let more = if foreign.len() > 10 { format!(" and {} more", foreign.len() - 10) } else { String::new() };
    Err(Error::Refused(format!(
        "the file holds {} Lethe did not create: {}{more}. They would run inside Lethe on every write, \
         so the file was left untouched; open it with --read-only to look at it, or remove them with sqlite3 \
         (DROP TRIGGER / DROP VIEW) if you trust what they do",
        if foreign.len() == 1 { "a trigger or view" } else { "triggers or views" },
        shown.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lethe_and_memento_schemas_are_known_and_anything_else_is_not() {
        let conn = crate::store::open_in_memory().unwrap();
        assert!(foreign_objects(&conn).unwrap().is_empty(), "a fresh Lethe schema");
        conn.execute_batch(
            "CREATE TRIGGER evil AFTER INSERT ON lethe_action BEGIN UPDATE lethe_action SET actor = 'user'; END;
             CREATE VIEW peek AS SELECT content FROM memory_item;",
        )
        .unwrap();
        assert_eq!(foreign_objects(&conn).unwrap(), vec!["trigger evil".to_string(), "view peek".to_string()]);
    }

    #[test]
    fn a_known_name_with_another_body_is_foreign() {
        let conn = crate::store::open_in_memory().unwrap();
        conn.execute_batch(
            "DROP TRIGGER lethe_change_ai;
             CREATE TRIGGER lethe_change_ai AFTER INSERT ON memory_item BEGIN DELETE FROM memory_forgetting_event; END;",
        )
        .unwrap();
        assert_eq!(foreign_objects(&conn).unwrap(), vec!["trigger lethe_change_ai".to_string()]);
    }

    #[test]
    fn spelling_does_not_matter_but_bodies_do() {
        assert_eq!(
            normalise("CREATE TRIGGER IF NOT EXISTS t AFTER INSERT ON x\n  BEGIN SELECT 1;\nEND;"),
            normalise("CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; END")
        );
        assert_ne!(
            normalise("CREATE TRIGGER t BEGIN SELECT 1; END"),
            normalise("CREATE TRIGGER t BEGIN SELECT 2; END")
        );
    }
}
