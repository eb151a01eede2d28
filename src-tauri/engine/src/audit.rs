//! The two audit trails: `memory_forgetting_event` (memento's permanent table: soft, hard,
//! review) and `lethe_action` (person and agent actions with before/after state).

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

use crate::error::Result;
use crate::time::{self, Instant};

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ForgettingEvent {
    pub id: String,
    pub memory_id: String,
    pub action: String,
    pub reason: Option<String>,
    pub policy: Option<String>,
    pub forget_score: Option<f64>,
    pub ttl_days: Option<i64>,
    pub created_at: String,
    pub metadata: Option<serde_json::Value>,
}

pub struct EventSpec<'a> {
    pub memory_id: &'a str,
    pub action: &'a str,
    pub reason: Option<&'a str>,
    pub policy: Option<&'a str>,
    pub forget_score: Option<f64>,
    pub ttl_days: Option<i64>,
    pub metadata: Option<serde_json::Value>,
}

pub fn record_event(conn: &Connection, e: EventSpec<'_>, now: Instant) -> Result<ForgettingEvent> {
    let id = format!("fev_{}", uuid::Uuid::now_v7());
    let created_at = time::format(now);
    let metadata_json = e.metadata.as_ref().map(|m| m.to_string());
    conn.prepare_cached(
        "INSERT INTO memory_forgetting_event (id, memory_id, action, reason, policy, forget_score, ttl_days, created_at, metadata_json) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![id, e.memory_id, e.action, e.reason, e.policy, e.forget_score, e.ttl_days, created_at, metadata_json])?;
    Ok(ForgettingEvent {
        id,
        memory_id: e.memory_id.to_string(),
        action: e.action.to_string(),
        reason: e.reason.map(str::to_string),
        policy: e.policy.map(str::to_string),
        forget_score: e.forget_score,
        ttl_days: e.ttl_days,
        created_at,
        metadata: e.metadata,
    })
}

pub fn record_action(
    conn: &Connection,
    memory_id: Option<&str>,
    action: &str,
    actor: &str,
    before: Option<&serde_json::Value>,
    after: Option<&serde_json::Value>,
    now: Instant,
) -> Result<i64> {
    conn.prepare_cached(
        "INSERT INTO lethe_action (memory_id, action, actor, before_json, after_json, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![memory_id, action, actor, before.map(|v| v.to_string()), after.map(|v| v.to_string()), time::format(now)])?;
    Ok(conn.last_insert_rowid())
}

/// One row of the combined audit log.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct AuditEvent {
    pub id: String,
    /// `forgetting` (memory_forgetting_event) or `action` (lethe_action).
    pub kind: String,
    pub memory_id: Option<String>,
    pub action: String,
    pub actor: String,
    pub reason: Option<String>,
    pub policy: Option<String>,
    pub forget_score: Option<f64>,
    pub ttl_days: Option<i64>,
    pub created_at: String,
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
    pub metadata: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    pub memory_id: Option<String>,
    pub action: Option<String>,
    pub actor: Option<String>,
    pub limit: usize,
}

fn parse_json(raw: Option<String>) -> Option<serde_json::Value> {
    raw.map(|r| serde_json::from_str(&r).unwrap_or(serde_json::Value::String(r)))
}

/// Both trails merged, newest first.
pub fn list_events(conn: &Connection, f: &EventFilter) -> Result<Vec<AuditEvent>> {
    let limit = if f.limit == 0 { 100 } else { f.limit.min(10_000) } as i64;
    let mut out = Vec::new();
    {
        let mut stmt = conn.prepare(
            "SELECT id, memory_id, action, reason, policy, forget_score, ttl_days, created_at, metadata_json, rowid \
             FROM memory_forgetting_event \
             WHERE (?1 IS NULL OR memory_id = ?1) AND (?2 IS NULL OR action = ?2) \
             ORDER BY created_at DESC, rowid DESC LIMIT ?3",
        )?;
        let actor_is_policy = f.actor.as_deref().map(|a| a == "policy");
        if actor_is_policy != Some(false) || f.actor.is_none() {
            let rows = stmt.query_map(params![f.memory_id, f.action, limit], |r| {
                let metadata = parse_json(r.get(8)?);
                let actor = metadata
                    .as_ref()
                    .and_then(|m| m.get("actor"))
                    .and_then(|a| a.as_str())
                    .unwrap_or("policy")
                    .to_string();
                Ok((
                    r.get::<_, i64>(9)?,
                    AuditEvent {
                        id: r.get(0)?,
                        kind: "forgetting".into(),
                        memory_id: r.get(1)?,
                        action: r.get(2)?,
                        actor,
                        reason: r.get(3)?,
                        policy: r.get(4)?,
                        forget_score: r.get(5)?,
                        ttl_days: r.get(6)?,
                        created_at: r.get(7)?,
                        before: None,
                        after: None,
                        metadata,
                    },
                ))
            })?;
            for row in rows {
                let (_, ev) = row?;
                if f.actor.as_deref().is_none_or(|a| a == ev.actor) {
                    out.push(ev);
                }
            }
        }
    }
    {
        let mut stmt = conn.prepare(
            "SELECT id, memory_id, action, actor, before_json, after_json, created_at FROM lethe_action \
             WHERE (?1 IS NULL OR memory_id = ?1) AND (?2 IS NULL OR action = ?2) AND (?3 IS NULL OR actor = ?3) \
             ORDER BY id DESC LIMIT ?4",
        )?;
        let rows = stmt.query_map(params![f.memory_id, f.action, f.actor, limit], |r| {
            Ok(AuditEvent {
                id: format!("act_{}", r.get::<_, i64>(0)?),
                kind: "action".into(),
                memory_id: r.get(1)?,
                action: r.get(2)?,
                actor: r.get(3)?,
                reason: None,
                policy: None,
                forget_score: None,
                ttl_days: None,
                created_at: r.get(6)?,
                before: parse_json(r.get(4)?),
                after: parse_json(r.get(5)?),
                metadata: None,
            })
        })?;
        for row in rows {
            out.push(row?);
        }
    }
    // Stable newest-first order across both tables; equal timestamps keep insertion order.
    out.sort_by(|a, b| b.created_at.cmp(&a.created_at));
    out.truncate(limit as usize);
    Ok(out)
}

/// The latest soft-delete event of a memory (its reason and score, for the quarantine view).
pub fn last_soft_event(conn: &Connection, memory_id: &str) -> Result<Option<(Option<String>, Option<f64>)>> {
    Ok(conn
        .prepare_cached(
            "SELECT reason, forget_score FROM memory_forgetting_event WHERE memory_id = ?1 AND action = 'soft' ORDER BY created_at DESC, rowid DESC LIMIT 1",
        )?
        .query_row([memory_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}
