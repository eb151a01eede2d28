//! The recall log: every agent recall through the CLI or `lethe mcp` — who, when,
//! the query, the context, and what came back with its score — in a bounded Lethe table
//! (`recall_log_max_rows`, oldest dropped, and at most [`MAX_LOG_BYTES`] of text). Entries
//! reach the file through the same coalescing flusher as the meta statistics
//! ([`crate::meta::MetaBuffer`]), in the same transaction, so a recall never waits on the log.
//! The window's own Recall view never logs.
//!
//! What is written passes the secrets/PII guard first (a secret is redacted even where the
//! setting is `refuse`: the recall was answered, only its log line is kept without it), a
//! query keeps at most [`MAX_QUERY_BYTES`] and the context at most [`MAX_TAGS`] tags. A query
//! that found a memory usually names what the memory is about, so deleting the memory for ever
//! erases the query and context of every entry that returned it ([`erase_for_memory`]).

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use crate::storage::db::{params, Connection, Transaction};
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::recall::{Hit, RecallQuery};
use crate::redact::{Guard, PiiMode, Policy, SecretsMode};

/// The most bytes of a query an entry keeps; a longer one is cut (at a character boundary)
/// and says so.
pub const MAX_QUERY_BYTES: usize = 4096;
/// The most tags of a context an entry keeps, and the most bytes of each label.
pub const MAX_TAGS: usize = 64;
pub const MAX_LABEL_BYTES: usize = 256;
/// The most bytes of text (query, context and results) the whole log keeps; the oldest
/// entries beyond it are dropped, whatever `recall_log_max_rows` allows.
pub const MAX_LOG_BYTES: i64 = 8 << 20;
/// The context stored for an entry whose query and context were erased.
const ERASED_CONTEXT: &str = r#"{"query_erased":true}"#;

/// The caller's context of a recall, as it asked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RecallContext {
    pub session: Option<String>,
    pub project: Option<String>,
    pub workflow: Option<String>,
    pub tags: Vec<String>,
    pub task_kind: Option<String>,
}

/// One returned memory of a logged recall.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LoggedHit {
    pub id: String,
    pub score: f64,
}

/// A recall to be logged (not yet written).
#[derive(Debug, Clone, PartialEq)]
pub struct NewEntry {
    pub actor: String,
    pub at: String,
    pub query: String,
    pub context: RecallContext,
    pub results: Vec<LoggedHit>,
}

impl NewEntry {
    /// The entry of a recall by `actor` at `at` (ISO time) that returned `hits`.
    pub fn of(actor: &str, at: &str, q: &RecallQuery, hits: &[Hit]) -> NewEntry {
        NewEntry {
            actor: actor.to_string(),
            at: at.to_string(),
            query: q.text.clone(),
            context: RecallContext {
                session: q.session.clone(),
                project: q.project.clone(),
                workflow: q.workflow.clone(),
                tags: q.tags.clone(),
                task_kind: q.task_kind.clone(),
            },
            results: hits.iter().map(|h| LoggedHit { id: h.id.clone(), score: h.score }).collect(),
        }
    }
}

/// A logged recall.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RecallLogEntry {
    pub id: i64,
    pub actor: String,
    pub at: String,
    pub query: String,
    pub context: RecallContext,
    pub results: Vec<LoggedHit>,
    /// The query and context were erased because a memory it returned was deleted for ever
    /// (the query is then empty, the context default).
    #[cfg_attr(feature = "ts", ts(skip))]
    pub query_erased: bool,
}

/// The first `max` bytes of `text` at most, ending at a character boundary.
fn head(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `original` as the guard returned it (`guarded`, from at most twice `max` bytes of it) cut
/// to at most `max` bytes, saying how long the original was when it was longer.
fn bounded(original: &str, guarded: String, max: usize) -> String {
    if original.len() <= max && guarded.len() <= max {
        return guarded;
    }
    let note = format!(" [truncated from {} bytes]", original.len());
    format!("{}{note}", head(&guarded, max.saturating_sub(note.len())))
}

/// The query and context of `e` as the log may keep them: through the guard (secrets always
/// redacted, never refused), cut to their bounds.
fn guarded(e: &NewEntry, settings: &crate::Settings) -> Result<(String, RecallContext)> {
    let mut policy = Policy::of(settings);
    if policy.secrets == SecretsMode::Refuse {
        policy.secrets = SecretsMode::Redact;
    }
    if policy.pii == PiiMode::Tag {
        // Tagging marks a memory; a log line has nothing to tag, so its text stays.
        policy.pii = PiiMode::Allow;
    }
    let mut g = Guard::new(policy);
    // Cut to twice the bound first so that a secret straddling the bound is still whole when
    // the guard looks, then to the bound.
    let query = bounded(&e.query, g.text("query", head(&e.query, 2 * MAX_QUERY_BYTES))?, MAX_QUERY_BYTES);
    let mut label = |field: &str, t: &Option<String>| -> Result<Option<String>> {
        let Some(t) = t else { return Ok(None) };
        Ok(Some(bounded(t, g.text(field, head(t, 2 * MAX_LABEL_BYTES))?, MAX_LABEL_BYTES)))
    };
    let context = RecallContext {
        session: label("session", &e.context.session)?,
        project: label("project", &e.context.project)?,
        workflow: label("workflow", &e.context.workflow)?,
        task_kind: label("task_kind", &e.context.task_kind)?,
        tags: e
            .context
            .tags
            .iter()
            .take(MAX_TAGS)
            .map(|t| label("tags", &Some(t.clone())).map(Option::unwrap_or_default))
            .collect::<Result<_>>()?,
    };
    Ok((query, context))
}

/// Erases, inside `tx`, the query and context of every logged recall that returned
/// `memory_id`, and drops the memory from its results; actor, time and the other returned
/// ids stay, and the entry is marked `query_erased`. Part of deleting a memory for ever.
pub fn erase_for_memory(tx: &Transaction<'_>, memory_id: &str) -> Result<usize> {
    let entries: Vec<(i64, String)> = {
        let mut stmt = tx.prepare_cached(
            "SELECT l.id, l.results_json FROM lethe_recall_log l JOIN lethe_recall_log_hit h ON h.log_id = l.id \
             WHERE h.memory_id = ?1",
        )?;
        let rows = stmt.query_map([memory_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<Result<_>>()?
    };
    let mut update = tx
        .prepare_cached("UPDATE lethe_recall_log SET query = '', context_json = ?2, results_json = ?3 WHERE id = ?1")?;
    for (id, results) in &entries {
        let mut hits: Vec<LoggedHit> = serde_json::from_str(results).unwrap_or_default();
        hits.retain(|h| h.id != memory_id);
        if tx.is_postgres() {
            // The team lead's function, which accepts only this erased form of the entry.
            crate::ops::rows::server_write(
                tx,
                "SELECT lethe_recall_log_erase(?1, ?2, ?3, ?4)",
                params![id, memory_id, ERASED_CONTEXT, serde_json::to_string(&hits)?],
            )?;
        } else {
            update.execute(params![id, ERASED_CONTEXT, serde_json::to_string(&hits)?])?;
        }
    }
    Ok(entries.len())
}

/// Appends `entries` inside `tx` and drops the oldest beyond the setting
/// `recall_log_max_rows`.
pub fn append_tx(tx: &Transaction<'_>, entries: &[NewEntry]) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let settings = crate::settings::Settings::load(tx)?;
    let max_rows = settings.recall_log_max_rows;
    if max_rows > 0 {
        let mut log = tx.prepare_cached(
            "INSERT INTO lethe_recall_log (actor, at, query, context_json, results_json) VALUES (?1, ?2, ?3, ?4, ?5) \
             RETURNING id",
        )?;
        for e in entries {
            let (query, context) = guarded(e, &settings)?;
            if tx.is_postgres() {
                // The team store's function writes the entry and its hits (from the results,
                // for memories of the caller's team), under the role's name at the server's
                // clock (Lethe's roles hold no INSERT right on the log there).
                tx.prepare_cached("SELECT lethe_recall_log_append(?1, ?2, ?3, ?4, ?5)")?.query_row(
                    params![e.actor, e.at, query, serde_json::to_string(&context)?, serde_json::to_string(&e.results)?],
                    |r| r.get::<_, i64>(0),
                )?;
                continue;
            }
            let log_id: i64 = log.query_row(
                params![e.actor, e.at, query, serde_json::to_string(&context)?, serde_json::to_string(&e.results)?],
                |r| r.get(0),
            )?;
            insert_hits(tx, log_id, &e.results)?;
        }
    }
    // The newest `max_rows` stay: everything older than the max_rows-th newest goes.
    let cutoff: Option<i64> = if max_rows > 0 {
        tx.query_row("SELECT id FROM lethe_recall_log ORDER BY id DESC LIMIT 1 OFFSET ?1", [max_rows - 1], |r| r.get(0))
            .or_else(|e| if matches!(e, crate::Error::NoRows) { Ok(None) } else { Err(e) })?
    } else {
        Some(i64::MAX)
    };
    // And the newest that fit in MAX_LOG_BYTES (sizes in bytes, newest first, until the
    // bound is passed).
    let by_bytes: Option<i64> = {
        let mut stmt = tx.prepare_cached(
            "SELECT id, octet_length(query) + octet_length(context_json) + octet_length(results_json) \
             FROM lethe_recall_log ORDER BY id DESC",
        )?;
        let mut rows = stmt.query([])?;
        let (mut total, mut over) = (0i64, None);
        while let Some(r) = rows.next()? {
            total += r.get::<_, i64>(1)?;
            if total > MAX_LOG_BYTES {
                over = Some(r.get::<_, i64>(0)? + 1);
                break;
            }
        }
        over
    };
    if let Some(cutoff) = cutoff.into_iter().chain(by_bytes).max() {
        if tx.is_postgres() {
            // The team store prunes through the server's function (the caller's team's entries;
            // Lethe's roles hold no DELETE right on any table there).
            tx.query_row("SELECT lethe_recall_log_prune(?1)::TEXT", [cutoff], |r| r.get::<_, Option<String>>(0))?;
        } else {
            tx.execute("DELETE FROM lethe_recall_log WHERE id < ?1", [cutoff])?;
            tx.execute("DELETE FROM lethe_recall_log_hit WHERE log_id < ?1", [cutoff])?;
        }
    }
    Ok(())
}

/// Hits written per statement (three parameters each).
const HITS_PER_STATEMENT: usize = 250;

/// The index of an entry's hits, many to a statement: a team server answers each statement
/// over the network, and an entry may hold a thousand hits. An id given twice keeps its last
/// score, as one `INSERT OR REPLACE` per hit leaves it (PostgreSQL refuses to change a row
/// twice in one statement).
fn insert_hits(tx: &Transaction<'_>, log_id: i64, results: &[LoggedHit]) -> Result<()> {
    let last: std::collections::HashMap<&str, usize> =
        results.iter().enumerate().map(|(i, h)| (h.id.as_str(), i)).collect();
    let hits: Vec<&LoggedHit> =
        results.iter().enumerate().filter(|(i, h)| last[h.id.as_str()] == *i).map(|(_, h)| h).collect();
    for chunk in hits.chunks(HITS_PER_STATEMENT) {
        let rows: Vec<String> =
            (0..chunk.len()).map(|i| format!("(?{}, ?{}, ?{})", 3 * i + 1, 3 * i + 2, 3 * i + 3)).collect();
        let sql = format!(
            "INSERT OR REPLACE INTO lethe_recall_log_hit (memory_id, log_id, score) VALUES {}",
            rows.join(", ")
        );
        let args: Vec<&dyn crate::storage::db::ToSql> =
            chunk.iter().flat_map(|h| [&h.id as &dyn crate::storage::db::ToSql, &log_id, &h.score]).collect();
        tx.prepare_cached(&sql)?.execute(&args[..])?;
    }
    Ok(())
}

/// Appends `entries` in one transaction of their own (a one-shot CLI process).
pub fn append(conn: &mut Connection, entries: &[NewEntry]) -> Result<()> {
    crate::store::write_tx(conn, |tx| append_tx(tx, entries))
}

/// What [`list`] returns.
#[derive(Debug, Clone, Default)]
pub struct LogFilter {
    pub actor: Option<String>,
    /// Only the recalls that returned this memory.
    pub memory_id: Option<String>,
    pub limit: usize,
}

/// The logged recalls, newest first.
pub fn list(conn: &Connection, f: &LogFilter) -> Result<Vec<RecallLogEntry>> {
    let limit = if f.limit == 0 { 100 } else { f.limit.min(10_000) } as i64;
    let sql = match &f.memory_id {
        Some(_) => {
            "SELECT l.id, l.actor, l.at, l.query, l.context_json, l.results_json FROM lethe_recall_log_hit h \
             JOIN lethe_recall_log l ON l.id = h.log_id WHERE h.memory_id = ?2 AND (CAST(?1 AS TEXT) IS NULL OR l.actor = ?1) \
             ORDER BY l.id DESC LIMIT ?3"
        }
        None => {
            "SELECT id, actor, at, query, context_json, results_json FROM lethe_recall_log \
             WHERE (CAST(?1 AS TEXT) IS NULL OR actor = ?1) AND CAST(?2 AS TEXT) IS NULL ORDER BY id DESC LIMIT ?3"
        }
    };
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map(params![f.actor, f.memory_id, limit], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, String>(4)?,
            r.get::<_, String>(5)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, actor, at, query, context, results) = row?;
        out.push(RecallLogEntry {
            id,
            actor,
            at,
            query,
            query_erased: context == ERASED_CONTEXT,
            // A row another program mangled still lists, with what can be read of it.
            context: serde_json::from_str(&context).unwrap_or_default(),
            results: serde_json::from_str(&results).unwrap_or_default(),
        });
    }
    Ok(out)
}

/// The actors that appear in the log, for the window's filter.
pub fn actors(conn: &Connection) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached("SELECT DISTINCT actor FROM lethe_recall_log ORDER BY actor")?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    rows.collect::<std::result::Result<_, _>>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Settings;
    use crate::store;

    fn entry(actor: &str, n: usize, ids: &[&str]) -> NewEntry {
        NewEntry {
            actor: actor.into(),
            at: format!("2026-06-01T00:00:{:02}.000Z", n % 60),
            query: format!("query {n}"),
            context: RecallContext { project: Some("p".into()), tags: vec!["t".into()], ..Default::default() },
            results: ids
                .iter()
                .enumerate()
                .map(|(i, id)| LoggedHit { id: (*id).into(), score: 1.0 - i as f64 / 10.0 })
                .collect(),
        }
    }

    #[test]
    fn entries_list_newest_first_by_actor_and_by_memory() {
        let mut conn = store::open_in_memory().unwrap();
        append(&mut conn, &[entry("agent:a", 1, &["mem_1", "mem_2"]), entry("agent:b", 2, &["mem_2"])]).unwrap();
        append(&mut conn, &[entry("agent:a", 3, &["mem_3"])]).unwrap();
        let all = list(&conn, &LogFilter::default()).unwrap();
        assert_eq!(all.iter().map(|e| e.query.as_str()).collect::<Vec<_>>(), ["query 3", "query 2", "query 1"]);
        assert_eq!(all[2].context.project.as_deref(), Some("p"), "the context is kept");
        assert_eq!(
            all[2].results,
            vec![LoggedHit { id: "mem_1".into(), score: 1.0 }, LoggedHit { id: "mem_2".into(), score: 0.9 }]
        );
        let a = list(&conn, &LogFilter { actor: Some("agent:a".into()), ..Default::default() }).unwrap();
        assert_eq!(a.iter().map(|e| e.query.as_str()).collect::<Vec<_>>(), ["query 3", "query 1"]);
        let two = list(&conn, &LogFilter { memory_id: Some("mem_2".into()), ..Default::default() }).unwrap();
        assert_eq!(
            two.iter().map(|e| e.query.as_str()).collect::<Vec<_>>(),
            ["query 2", "query 1"],
            "recalls that returned mem_2"
        );
        let two_b =
            list(&conn, &LogFilter { memory_id: Some("mem_2".into()), actor: Some("agent:b".into()), limit: 0 })
                .unwrap();
        assert_eq!(two_b.len(), 1);
        assert_eq!(actors(&conn).unwrap(), ["agent:a", "agent:b"]);
    }

    #[test]
    fn an_entrys_hits_are_indexed_many_to_a_statement_and_a_repeated_id_keeps_its_last_score() {
        let mut conn = store::open_in_memory().unwrap();
        let ids: Vec<String> = (0..2 * HITS_PER_STATEMENT + 7).map(|i| format!("mem_{i}")).collect();
        let mut e = entry("agent:a", 1, &ids.iter().map(String::as_str).collect::<Vec<_>>());
        e.results.push(LoggedHit { id: "mem_3".into(), score: 0.25 });
        append(&mut conn, &[e]).unwrap();
        let hits: i64 = conn.query_row("SELECT COUNT(*) FROM lethe_recall_log_hit", [], |r| r.get(0)).unwrap();
        assert_eq!(hits, ids.len() as i64, "every id once, across three statements");
        let score: f64 = conn
            .query_row("SELECT score FROM lethe_recall_log_hit WHERE memory_id = 'mem_3'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(score, 0.25);
        let last = format!("mem_{}", ids.len() - 1);
        let found = list(&conn, &LogFilter { memory_id: Some(last), limit: 10, ..Default::default() }).unwrap();
        assert_eq!(found.len(), 1, "the last chunk's hits are found by memory");
    }

    #[test]
    fn the_log_keeps_the_newest_max_rows_and_the_setting_is_validated() {
        let mut conn = store::open_in_memory().unwrap();
        let now = crate::time::parse("2026-06-01T00:00:00Z").unwrap();
        let s = Settings { recall_log_max_rows: 3, ..Default::default() };
        Settings::store(&mut conn, &s, "user", now).unwrap();
        for n in 0..5 {
            append(&mut conn, &[entry("agent:a", n, &["mem_x"])]).unwrap();
        }
        let kept = list(&conn, &LogFilter::default()).unwrap();
        assert_eq!(kept.iter().map(|e| e.query.as_str()).collect::<Vec<_>>(), ["query 4", "query 3", "query 2"]);
        let hits: i64 = conn.query_row("SELECT COUNT(*) FROM lethe_recall_log_hit", [], |r| r.get(0)).unwrap();
        assert_eq!(hits, 3, "the hits of dropped recalls go with them");
        let off = Settings { recall_log_max_rows: 0, ..Default::default() };
        Settings::store(&mut conn, &off, "user", now).unwrap();
        append(&mut conn, &[entry("agent:a", 9, &["mem_x"])]).unwrap();
        assert!(list(&conn, &LogFilter::default()).unwrap().is_empty(), "0 keeps nothing");
        for bad in [-1, 10_000_001] {
            let err = Settings { recall_log_max_rows: bad, ..Default::default() }.validate().unwrap_err();
            assert!(matches!(err, crate::Error::Invalid(_)), "{bad} is invalid: {err}");
        }
        assert_eq!(Settings::default().recall_log_max_rows, 10_000);
    }
}
