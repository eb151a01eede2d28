//! The two audit trails: `memory_forgetting_event` (memento's permanent table: soft, hard,
//! review) and `lethe_action` (person and agent actions with before/after state).

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use crate::storage::db::{params, Connection, OptionalExtension};
use serde::Serialize;

use crate::error::Result;
use crate::time::{self, Instant};

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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

pub fn record_event(conn: &Connection, mut e: EventSpec<'_>, now: Instant) -> Result<ForgettingEvent> {
    // The person's events say through what they acted (`via`: window or terminal).
    if let Some(serde_json::Value::Object(m)) = e.metadata.as_mut() {
        if let Some(via) = m.get("actor").and_then(|a| a.as_str()).and_then(crate::actor::via_of) {
            m.insert("via".into(), via.into());
        }
    }
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

/// The after state of an action as the audit stores it: the person's actions say through
/// what they acted, `via` (window or terminal), in the after state (the table has no column
/// for it; an action without an after state gets one holding `via` alone). `None` when the
/// actor has no `via` (the state is stored as it is).
pub(crate) fn after_with_via(actor: &str, after: Option<&serde_json::Value>) -> Option<serde_json::Value> {
    let via = crate::actor::via_of(actor)?;
    Some(match after {
        Some(serde_json::Value::Object(m)) => {
            let mut m = m.clone();
            m.insert("via".into(), via.into());
            serde_json::Value::Object(m)
        }
        None => serde_json::json!({ "via": via }),
        Some(other) => other.clone(),
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
    let with_via = after_with_via(actor, after);
    let after = with_via.as_ref().or(after);
    let sql = if conn.is_postgres() {
        // The team store's function: Lethe's roles hold no INSERT right on the audit there; the
        // server names the role and stamps its clock.
        "SELECT lethe_action_record(?1, ?2, ?3, ?4, ?5, ?6)"
    } else {
        "INSERT INTO lethe_action (memory_id, action, actor, before_json, after_json, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id"
    };
    conn.prepare_cached(sql)?.query_row(
        params![
            memory_id,
            action,
            actor,
            before.map(|v| v.to_string()),
            after.map(|v| v.to_string()),
            time::format(now)
        ],
        |r| r.get(0),
    )
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
             WHERE (CAST(?1 AS TEXT) IS NULL OR memory_id = ?1) AND (CAST(?2 AS TEXT) IS NULL OR action = ?2) \
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
             WHERE (CAST(?1 AS TEXT) IS NULL OR memory_id = ?1) AND (CAST(?2 AS TEXT) IS NULL OR action = ?2) AND (CAST(?3 AS TEXT) IS NULL OR actor = ?3) \
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
    conn
        .prepare_cached(
            "SELECT reason, forget_score FROM memory_forgetting_event WHERE memory_id = ?1 AND action = 'soft' ORDER BY created_at DESC, rowid DESC LIMIT 1",
        )?
        .query_row([memory_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
}

/// When a memory's quarantine began: the later of its `deleted_at` and its newest `soft`
/// event. Neither a `deleted_at` written into the file by another program nor an old event
/// makes a recent deletion look old, so the purge never comes early.
pub fn quarantined_since(conn: &Connection, memory_id: &str, deleted_at: Option<&str>) -> Result<Option<Instant>> {
    let event: Option<String> = conn
        .prepare_cached("SELECT MAX(created_at) FROM memory_forgetting_event WHERE memory_id = ?1 AND action = 'soft'")?
        .query_row([memory_id], |r| r.get(0))
        .optional()?
        .flatten();
    let a = time::parse_opt(deleted_at);
    let b = time::parse_opt(event.as_deref());
    Ok(match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    })
}

/// Keys of Lethe's own audit JSON whose string values are facts (who, when, what kind), not
/// a memory's text; every other string is text and is erased by [`scrub_memory`].
const FACT_KEYS: &[&str] = &[
    "actor",
    "via",
    "type",
    "deleted_at",
    "created_at",
    "at",
    "timestamp",
    "failure_type",
    "superseded_by",
    "sha256",
    "content_sha256",
    "policy",
    "attempted",
    "run",
    "why",
];

/// A JSON audit value with every piece of text replaced by its length: numbers, booleans
/// and the [`FACT_KEYS`] stay; any other string, array or object becomes
/// `{"erased_bytes": n}` (its length as JSON text). No hash of such fields is kept: the hash
/// of a short field (a tag, a phone number) would give it back to anyone who guesses it.
pub fn scrub_json(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    let erased = |x: &Value| {
        let n = match x {
            Value::String(s) => s.len(),
            other => other.to_string().len(),
        };
        serde_json::json!({ "erased_bytes": n })
    };
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| {
                    let keep = match x {
                        Value::Null | Value::Bool(_) | Value::Number(_) => true,
                        Value::String(_) => FACT_KEYS.contains(&k.as_str()),
                        Value::Object(inner) => inner.len() == 1 && inner.contains_key("erased_bytes"),
                        Value::Array(_) => false,
                    };
                    (k.clone(), if keep { x.clone() } else { erased(x) })
                })
                .collect(),
        ),
        Value::Null | Value::Bool(_) | Value::Number(_) => v.clone(),
        other => erased(other),
    }
}

/// Rewrites every audit row about `memory_id` (its `lethe_action` before/after and its
/// `memory_forgetting_event` metadata) without its text, in the caller's transaction: what
/// stays is who, when, what, why and the score. Returns the rows rewritten.
pub fn scrub_memory(tx: &Connection, memory_id: &str) -> Result<usize> {
    let scrub_raw = |raw: Option<String>| -> Option<String> {
        raw.map(|r| match serde_json::from_str::<serde_json::Value>(&r) {
            Ok(v) => scrub_json(&v).to_string(),
            Err(_) => serde_json::json!({ "erased_bytes": r.len() }).to_string(),
        })
    };
    let mut n = 0;
    // On a team store the rows go to the team lead's `lethe_audit_erase` in one call, which
    // accepts a new value only if it is the old one with values erased.
    let mut on_server: Vec<serde_json::Value> = Vec::new();
    let actions: Vec<(i64, Option<String>, Option<String>)> = tx
        .prepare_cached("SELECT id, before_json, after_json FROM lethe_action WHERE memory_id = ?1")?
        .query_map([memory_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<std::result::Result<_, _>>()?;
    for (id, before, after) in actions {
        let (b, a) = (scrub_raw(before.clone()), scrub_raw(after.clone()));
        if (b != before || a != after) && tx.is_postgres() {
            on_server.push(serde_json::json!({"kind": "action", "id": id.to_string(), "before": b, "after": a}));
            n += 1;
        } else if b != before || a != after {
            tx.prepare_cached("UPDATE lethe_action SET before_json = ?2, after_json = ?3 WHERE id = ?1")?
                .execute(params![id, b, a])?;
            n += 1;
        }
    }
    let events: Vec<(String, Option<String>)> = tx
        .prepare_cached("SELECT id, metadata_json FROM memory_forgetting_event WHERE memory_id = ?1")?
        .query_map([memory_id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<std::result::Result<_, _>>()?;
    for (id, meta) in events {
        let m = scrub_raw(meta.clone());
        if m != meta && tx.is_postgres() {
            on_server.push(serde_json::json!({"kind": "event", "id": id, "metadata": m}));
            n += 1;
        } else if m != meta {
            tx.prepare_cached("UPDATE memory_forgetting_event SET metadata_json = ?2 WHERE id = ?1")?
                .execute(params![id, m])?;
            n += 1;
        }
    }
    if !on_server.is_empty() {
        crate::ops::rows::server_write(
            tx,
            "SELECT lethe_audit_erase(?1, ?2)",
            params![memory_id, serde_json::Value::Array(on_server).to_string()],
        )?;
    }
    Ok(n)
}

/// SHA-256 of a text as lowercase hex (the content hash hard-delete events keep).
pub fn sha256_hex(text: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}
