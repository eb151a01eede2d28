//! The end of a session (the task-log tier): the session's working memories
//! leave working memory and become **task logs** of a task kind, and the rules the agent drew
//! from the session become semantic memories linked to it.
//!
//! Mapping onto the four tiers and memento's columns: a task log is an `episodic` memory
//! (memento's own tier, so memento reads it as what it is: a record of what happened) with a
//! row in Lethe's `lethe_task_log` (memory id, session, task kind, end time). That row is what
//! makes it a task log: recall leaves it out unless the caller names the same task kind, and
//! its recency uses the `task_log_half_life_days` setting. Its `session_id` column is kept, so
//! the session still names what it wrote. A rule is a `semantic` memory written through
//! `remember`'s path (guard, filters, embedding, supersede) with the session's id in
//! `session_id` and a row in `lethe_session_rule`. `lethe_session_end` records each ended
//! session with its answer, so ending it again returns that answer and writes nothing.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use crate::storage::db::{params, Connection, OptionalExtension, Transaction};
use serde::{Deserialize, Serialize};

use crate::audit;
use crate::error::{Error, Result};
use crate::lifecycle::{self, NewMemory};
use crate::model::{self, Tier};
use crate::settings::Settings;
use crate::store::write_tx;
use crate::time::{self, Instant};

/// A rule the agent extracted from the session (one line of `--rules FILE.jsonl`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub content: String,
    pub importance: Option<f64>,
    #[serde(default)]
    pub tags: Vec<String>,
    /// Memories this rule replaces (they leave recall, linked to it).
    #[serde(default)]
    pub supersedes: Vec<String>,
}

/// At most this many rules per session.
pub const MAX_RULES: usize = 1000;

/// Parses the rules file: one JSON object per non-blank line. Every line is checked before
/// anything is written; the first bad one is named.
pub fn parse_rules_jsonl(text: &str) -> Result<Vec<Rule>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: Rule = serde_json::from_str(line).map_err(|e| Error::invalid(format!("rules line {}: {e}", i + 1)))?;
        out.push(r);
    }
    if out.len() > MAX_RULES {
        return Err(Error::invalid(format!("at most {MAX_RULES} rules per session")));
    }
    Ok(out)
}

/// What became of one rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RuleOutcome {
    /// The new semantic memory, when stored.
    pub id: Option<String>,
    pub stored: bool,
    /// Why not (trivial, duplicate).
    pub reason: Option<String>,
    pub existing_id: Option<String>,
    pub supersedes: Vec<String>,
}

/// The answer of `end-session`: what moved where.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SessionEnd {
    pub session_id: String,
    pub task_kind: String,
    pub ended_at: String,
    /// True when the session had already ended: nothing was written, this is the first answer.
    pub already_ended: bool,
    /// Working memories that became task logs (now episodic, kind `task_kind`).
    pub task_logs: Vec<String>,
    pub rules: Vec<RuleOutcome>,
}

fn validate_name(name: &str, v: &str) -> Result<()> {
    if v.trim().is_empty() || v.len() > 200 || v.chars().any(char::is_control) {
        return Err(Error::invalid(format!("{name} must be 1–200 printable characters")));
    }
    Ok(())
}

/// Ends a session in one write transaction (see the module comment). Idempotent: a second call
/// with the same task kind returns the first answer with `already_ended` and writes nothing; a
/// different kind is refused.
pub fn end_session(
    conn: &mut Connection,
    session_id: &str,
    task_kind: &str,
    rules: &[Rule],
    actor: &str,
    now: Instant,
) -> Result<SessionEnd> {
    model::validate_actor(actor)?;
    validate_name("session", session_id)?;
    validate_name("task_kind", task_kind)?;
    if rules.len() > MAX_RULES {
        return Err(Error::invalid(format!("at most {MAX_RULES} rules per session")));
    }
    let settings = Settings::load(conn)?;
    // The labels through the same guard as a memory's text.
    let session_id: &str = &crate::ops::validate::guard_label(&settings, "session", session_id)?;
    let task_kind: &str = &crate::ops::validate::guard_label(&settings, "task_kind", task_kind)?;
    let prepared = prepare_rules(rules, &settings, session_id, task_kind, actor, now)?;
    let ended_at = time::format(now);
    write_tx(conn, |tx| {
        let previous: Option<(String, String)> = tx
            .query_row("SELECT task_kind, answer FROM lethe_session_end WHERE session_id = ?1", [session_id], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?;
        if let Some((kind, answer)) = previous {
            if kind != task_kind {
                return Err(Error::invalid(format!(
                    "session {session_id} already ended as task kind {kind:?}; it cannot end again as {task_kind:?}"
                )));
            }
            let mut first: SessionEnd = serde_json::from_str(&answer)?;
            first.already_ended = true;
            return Ok(first);
        }
        let known: bool =
            tx.query_row("SELECT EXISTS (SELECT 1 FROM memory_item WHERE session_id = ?1)", [session_id], |r| {
                r.get(0)
            })?;
        if !known && rules.is_empty() {
            return Err(Error::NotFound(format!("session {session_id} (no memory names it)")));
        }
        let ids = log_working_memories(tx, session_id, task_kind, &ended_at, actor, now)?;
        let outcomes = store_rules(tx, &prepared, session_id, &ended_at, actor, now)?;
        let answer = SessionEnd {
            session_id: session_id.to_string(),
            task_kind: task_kind.to_string(),
            ended_at: ended_at.clone(),
            already_ended: false,
            task_logs: ids,
            rules: outcomes,
        };
        if tx.is_postgres() {
            // The team store's function writes the ended session and its `end_session` action,
            // whose task logs and rules it reads from the rows, under the role's name.
            crate::ops::rows::server_write(
                tx,
                "SELECT lethe_session_end_record(?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    session_id,
                    task_kind,
                    serde_json::to_string(&answer)?,
                    actor,
                    crate::actor::via_of(actor),
                    time::format(now)
                ],
            )?;
            return Ok(answer);
        }
        tx.execute(
            "INSERT INTO lethe_session_end (session_id, task_kind, ended_at, actor, answer) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![session_id, task_kind, ended_at, actor, serde_json::to_string(&answer)?],
        )?;
        audit::record_action(
            tx,
            None,
            "end_session",
            actor,
            None,
            Some(&serde_json::json!({
                "session_id": session_id, "task_kind": task_kind,
                "task_logs": answer.task_logs,
                "rules": answer.rules.iter().filter_map(|r| r.id.clone()).collect::<Vec<_>>(),
            })),
            now,
        )?;
        Ok(answer)
    })
}

/// Every rule through remember's guard and validation, before the transaction opens.
fn prepare_rules(
    rules: &[Rule],
    settings: &Settings,
    session_id: &str,
    task_kind: &str,
    actor: &str,
    now: Instant,
) -> Result<Vec<lifecycle::Prepared>> {
    let mut prepared = Vec::with_capacity(rules.len());
    for (i, r) in rules.iter().enumerate() {
        let mut m = NewMemory::new(Tier::Semantic, r.content.clone());
        m.importance = r.importance;
        m.tags = r.tags.clone();
        m.session_id = Some(session_id.to_string());
        m.owner_id = Some(actor.to_string());
        m.source = Some(format!("end-session:{task_kind}"));
        m.supersedes = r.supersedes.clone();
        let p = lifecycle::prepare_new(&m, settings, now).map_err(|e| match e {
            Error::Invalid(msg) => Error::invalid(format!("rule {}: {msg}", i + 1)),
            e => e,
        })?;
        prepared.push(p);
    }
    Ok(prepared)
}

/// The session's active working memories become episodic task logs, each with its audit
/// row; their ids, oldest first.
fn log_working_memories(
    tx: &Transaction,
    session_id: &str,
    task_kind: &str,
    ended_at: &str,
    actor: &str,
    now: Instant,
) -> Result<Vec<String>> {
    let ids: Vec<String> = tx
        .prepare(
            "SELECT id FROM memory_item WHERE session_id = ?1 AND type = 'working' AND COALESCE(is_deleted, 0) = 0 \
             ORDER BY created_at, rowid",
        )?
        .query_map([session_id], |r| r.get(0))?
        .collect::<std::result::Result<_, _>>()?;
    for id in &ids {
        if tx.is_postgres() {
            // The server's function writes the task log and the `task_log` action too, from the row.
            crate::ops::rows::server_write(
                tx,
                "SELECT lethe_memory_episodic(?1, ?2, ?3, ?4, ?5)",
                params![id, task_kind, actor, crate::actor::via_of(actor), time::format(now)],
            )?;
            continue;
        }
        tx.prepare_cached("UPDATE memory_item SET type = 'episodic' WHERE id = ?1")?.execute([id])?;
        tx.prepare_cached(
            "INSERT INTO lethe_task_log (memory_id, session_id, task_kind, ended_at) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![id, session_id, task_kind, ended_at])?;
        audit::record_action(
            tx,
            Some(id),
            "task_log",
            actor,
            Some(&serde_json::json!({"type": "working", "session_id": session_id})),
            Some(
                &serde_json::json!({"type": "episodic", "task_log": true, "session_id": session_id, "task_kind": task_kind}),
            ),
            now,
        )?;
    }
    Ok(ids)
}

/// The session's rules, stored as remember stores a memory (a duplicate is skipped, with
/// why), each named in the session's rule table.
fn store_rules(
    tx: &Transaction,
    prepared: &[lifecycle::Prepared],
    session_id: &str,
    ended_at: &str,
    actor: &str,
    now: Instant,
) -> Result<Vec<RuleOutcome>> {
    let mut outcomes = Vec::with_capacity(prepared.len());
    for p in prepared {
        let supersedes = p.memory.supersedes.clone();
        match lifecycle::insert_prepared_tx(tx, p, actor, now)? {
            Ok(id) => {
                if tx.is_postgres() {
                    // The team store's function checks that the rule is of this session.
                    crate::ops::rows::server_write(
                        tx,
                        "SELECT lethe_session_rule_add(?1, ?2, ?3)",
                        params![id, session_id, ended_at],
                    )?;
                } else {
                    tx.prepare_cached(
                        "INSERT INTO lethe_session_rule (memory_id, session_id, created_at) VALUES (?1, ?2, ?3)",
                    )?
                    .execute(params![id, session_id, ended_at])?;
                }
                outcomes.push(RuleOutcome { id: Some(id), stored: true, reason: None, existing_id: None, supersedes });
            }
            Err(skipped) => outcomes.push(RuleOutcome {
                id: None,
                stored: false,
                reason: Some(skipped.0),
                existing_id: skipped.1,
                supersedes,
            }),
        }
    }
    Ok(outcomes)
}

/// Whether the file has the session tables (migration 5). Defensive: `open` migrates and
/// `open_read_only` refuses older schemas, so a reader only meets a file without them if
/// that ever changes; then it simply has no task logs.
pub fn has_tables(conn: &Connection) -> Result<bool> {
    crate::store::table_exists(conn, "lethe_task_log")
}

/// The task kind of a memory when it is a task log.
pub fn task_kind_of(conn: &Connection, memory_id: &str) -> Result<Option<String>> {
    if !has_tables(conn)? {
        return Ok(None);
    }
    conn.prepare_cached("SELECT task_kind FROM lethe_task_log WHERE memory_id = ?1")?
        .query_row([memory_id], |r| r.get(0))
        .optional()
}

/// One memory as the Sessions view lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SessionMemory {
    pub id: String,
    #[serde(rename = "type")]
    pub tier: Tier,
    pub preview: String,
    pub created_at: String,
    pub is_deleted: bool,
    /// `task_log`, `rule`, or `written` (anything else the session wrote).
    pub role: String,
}

/// One session: what it wrote, what became task log, which rules it produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SessionSummary {
    pub session_id: String,
    pub task_kind: Option<String>,
    pub ended_at: Option<String>,
    pub first_at: String,
    pub last_at: String,
    pub memories: Vec<SessionMemory>,
}

/// One task log in its kind's history.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TaskLogEntry {
    pub id: String,
    pub session_id: String,
    pub ended_at: String,
    pub preview: String,
    pub is_deleted: bool,
}

/// A task kind and its task logs, newest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TaskKindGroup {
    pub task_kind: String,
    pub entries: Vec<TaskLogEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SessionsOverview {
    pub sessions: Vec<SessionSummary>,
    pub task_kinds: Vec<TaskKindGroup>,
}

/// Every session (newest activity first, at most `limit`) and every task kind's logs.
pub fn overview(conn: &Connection, limit: usize) -> Result<SessionsOverview> {
    if !has_tables(conn)? {
        return Ok(SessionsOverview { sessions: Vec::new(), task_kinds: Vec::new() });
    }
    crate::store::read_tx(conn, || {
        let mut stmt = conn.prepare(
            "SELECT m.session_id, m.id, m.type, substr(m.content, 1, 400), m.created_at, COALESCE(m.is_deleted, 0), \
             t.memory_id IS NOT NULL, r.memory_id IS NOT NULL, e.task_kind, e.ended_at \
             FROM memory_item m \
             LEFT JOIN lethe_task_log t ON t.memory_id = m.id \
             LEFT JOIN lethe_session_rule r ON r.memory_id = m.id \
             LEFT JOIN lethe_session_end e ON e.session_id = m.session_id \
             WHERE m.session_id IS NOT NULL ORDER BY m.session_id, m.created_at, m.rowid",
        )?;
        let mut sessions: Vec<SessionSummary> = Vec::new();
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let sid: String = r.get(0)?;
            let Ok(tier) = r.get::<_, String>(2)?.parse::<Tier>() else { continue };
            let created: String = r.get(4)?;
            let role = if r.get::<_, bool>(6)? {
                "task_log"
            } else if r.get::<_, bool>(7)? {
                "rule"
            } else {
                "written"
            };
            let mem = SessionMemory {
                id: r.get(1)?,
                tier,
                preview: model::preview(&r.get::<_, String>(3)?, 160),
                created_at: created.clone(),
                is_deleted: r.get::<_, i64>(5)? != 0,
                role: role.to_string(),
            };
            match sessions.last_mut() {
                Some(s) if s.session_id == sid => {
                    s.last_at = created.max(s.last_at.clone());
                    s.memories.push(mem);
                }
                _ => sessions.push(SessionSummary {
                    session_id: sid,
                    task_kind: r.get(8)?,
                    ended_at: r.get(9)?,
                    first_at: created.clone(),
                    last_at: created,
                    memories: vec![mem],
                }),
            }
        }
        sessions.sort_by(|a, b| b.last_at.cmp(&a.last_at).then(a.session_id.cmp(&b.session_id)));
        sessions.truncate(limit.max(1));
        let mut stmt = conn.prepare(
            "SELECT t.task_kind, t.memory_id, t.session_id, t.ended_at, substr(m.content, 1, 400), COALESCE(m.is_deleted, 0) \
             FROM lethe_task_log t JOIN memory_item m ON m.id = t.memory_id \
             ORDER BY t.task_kind, t.ended_at DESC, m.created_at DESC, m.rowid DESC",
        )?;
        let mut groups: Vec<TaskKindGroup> = Vec::new();
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let kind: String = r.get(0)?;
            let e = TaskLogEntry {
                id: r.get(1)?,
                session_id: r.get(2)?,
                ended_at: r.get(3)?,
                preview: model::preview(&r.get::<_, String>(4)?, 160),
                is_deleted: r.get::<_, i64>(5)? != 0,
            };
            match groups.last_mut() {
                Some(g) if g.task_kind == kind => g.entries.push(e),
                _ => groups.push(TaskKindGroup { task_kind: kind, entries: vec![e] }),
            }
        }
        Ok(SessionsOverview { sessions, task_kinds: groups })
    })
}
