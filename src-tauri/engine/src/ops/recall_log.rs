//! The recall log (issue #18): every agent recall through the CLI or `lethe mcp` — who, when,
//! the query, the context, and what came back with its score — in a bounded Lethe table
//! (`recall_log_max_rows`, oldest dropped). Entries reach the file through the same
//! coalescing flusher as the meta statistics ([`crate::meta::MetaBuffer`]), in the same
//! transaction, so a recall never waits on the log. The window's own Recall view never logs.

use crate::storage::db::{params, Connection, Transaction};
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::recall::{Hit, RecallQuery};

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
}

/// Appends `entries` inside `tx` and drops the oldest beyond the setting
/// `recall_log_max_rows`.
pub fn append_tx(tx: &Transaction<'_>, entries: &[NewEntry]) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let max_rows = crate::settings::Settings::load(tx)?.recall_log_max_rows;
    if max_rows > 0 {
        let mut log = tx.prepare_cached(
            "INSERT INTO lethe_recall_log (actor, at, query, context_json, results_json) VALUES (?1, ?2, ?3, ?4, ?5) \
             RETURNING id",
        )?;
        let mut hit = tx.prepare_cached(
            "INSERT OR REPLACE INTO lethe_recall_log_hit (memory_id, log_id, score) VALUES (?1, ?2, ?3)",
        )?;
        for e in entries {
            let log_id: i64 = log.query_row(
                params![e.actor, e.at, e.query, serde_json::to_string(&e.context)?, serde_json::to_string(&e.results)?],
                |r| r.get(0),
            )?;
            for h in &e.results {
                hit.execute(params![h.id, log_id, h.score])?;
            }
        }
    }
    // The newest `max_rows` stay: everything older than the max_rows-th newest goes.
    let cutoff: Option<i64> = if max_rows > 0 {
        tx.query_row("SELECT id FROM lethe_recall_log ORDER BY id DESC LIMIT 1 OFFSET ?1", [max_rows - 1], |r| r.get(0))
            .or_else(|e| if matches!(e, crate::Error::NoRows) { Ok(None) } else { Err(e) })?
    } else {
        Some(i64::MAX)
    };
    if let Some(cutoff) = cutoff {
        tx.execute("DELETE FROM lethe_recall_log WHERE id < ?1", [cutoff])?;
        tx.execute("DELETE FROM lethe_recall_log_hit WHERE log_id < ?1", [cutoff])?;
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
