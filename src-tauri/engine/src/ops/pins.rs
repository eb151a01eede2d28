//! A person's pin is a person's decision. Pinning a rule is how a team lead keeps it beyond
//! the policy's reach, so an agent may not undo it: it may not unpin a memory a person pinned,
//! quarantine or delete it, lower its importance or supersede it (`forbidden`, exit 6). Each
//! refused attempt is audited (`lethe_action` row `refused`, naming what was attempted), so the
//! window can tell the person an agent tried. An agent may not write a pinned memory either
//! (`remember --pinned`), as on the team store, where an agent role never pins.
//!
//! Who pinned a memory comes from the audit: the newest `pin` action names its actor. A memory
//! pinned without a `pin` action (written pinned by a person, imported, or pinned by another
//! program) counts as the person's, so that a pin is never taken to be an agent's on a guess.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use crate::storage::db::{params, Connection, OptionalExtension};

use crate::audit;
use crate::error::{Error, Result};
use crate::model;
use crate::store::write_tx;
use crate::time::Instant;

/// What an agent attempted on a person's pin, as the audit and the message name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    Unpin,
    Quarantine,
    DeleteForEver,
    LowerImportance,
    Supersede,
}

impl Attempt {
    pub fn as_str(self) -> &'static str {
        match self {
            Attempt::Unpin => "unpin",
            Attempt::Quarantine => "quarantine",
            Attempt::DeleteForEver => "delete for ever",
            Attempt::LowerImportance => "lower the importance of",
            Attempt::Supersede => "supersede",
        }
    }
}

/// The audit action of a refused attempt.
pub const REFUSED: &str = "refused";

/// Whether the memory is pinned by a person: pinned, and its newest `pin` action (if any) was
/// not an agent's. `None` when there is no such memory.
pub fn pinned_by_person(conn: &Connection, id: &str) -> Result<Option<bool>> {
    let pinned: Option<bool> = conn
        .prepare_cached("SELECT COALESCE(pinned, 0) <> 0 FROM memory_item WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?;
    let Some(pinned) = pinned else { return Ok(None) };
    if !pinned {
        return Ok(Some(false));
    }
    let pinner: Option<String> = conn
        .prepare_cached(
            "SELECT actor FROM lethe_action WHERE memory_id = ?1 AND action = 'pin' ORDER BY id DESC LIMIT 1",
        )?
        .query_row([id], |r| r.get(0))
        .optional()?;
    Ok(Some(pinner.is_none_or(|a| crate::actor::is_person(&a))))
}

/// `forbidden` when `actor` is an agent and the memory is pinned by a person; the attempt is
/// then audited in a transaction of its own (the refused change writes nothing else). A
/// person, an agent's own pin, an unpinned or an unknown memory pass (the operation itself
/// then answers `not_found`).
pub fn refuse_agent_on_person_pin(
    conn: &mut Connection,
    id: &str,
    actor: &str,
    attempt: Attempt,
    now: Instant,
) -> Result<()> {
    if crate::actor::is_person(actor) || pinned_by_person(conn, id)? != Some(true) {
        return Ok(());
    }
    let content = crate::ops::rows::get(conn, id)?.content;
    let what = attempt.as_str();
    write_tx(conn, |tx| {
        audit::record_action(
            tx,
            Some(id),
            REFUSED,
            actor,
            None,
            Some(&serde_json::json!({
                "attempted": what,
                "why": "pinned by a person",
                "content_preview": model::preview(&content, 120),
            })),
            now,
        )
        .map(|_| ())
    })?;
    Err(Error::Forbidden(format!(
        "{actor} may not {what} \"{}\": a person pinned it, and only a person can undo a person's pin",
        model::preview(&content, 80)
    )))
}

/// `forbidden` when an agent writes a pinned memory: a pin is the person's (as on the team
/// store, where an agent role never pins). Nothing is written.
pub fn refuse_agent_pinned_write(actor: &str, pinned: bool) -> Result<()> {
    if pinned && !crate::actor::is_person(actor) {
        return Err(Error::Forbidden(format!(
            "{actor} may not write a pinned memory: a pin is the person's decision (write it unpinned; a person can pin it)"
        )));
    }
    Ok(())
}

/// Agents' refused attempts on people's pins, newest first, with a row id above `after` (the
/// window asks with the highest id it has shown, so each attempt alerts once).
pub fn refused_attempts(conn: &Connection, after: i64, limit: usize) -> Result<Vec<RefusedAttempt>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, memory_id, actor, after_json, created_at FROM lethe_action WHERE action = ?1 AND id > ?2 \
         ORDER BY id DESC LIMIT ?3",
    )?;
    let rows = stmt.query_map(params![REFUSED, after, limit.clamp(1, 1000) as i64], |r| {
        let after: Option<String> = r.get(3)?;
        let after: serde_json::Value = after.and_then(|a| serde_json::from_str(&a).ok()).unwrap_or_default();
        let text = |k: &str| after.get(k).and_then(|v| v.as_str()).unwrap_or_default().to_string();
        Ok(RefusedAttempt {
            id: r.get(0)?,
            memory_id: r.get(1)?,
            actor: r.get(2)?,
            attempted: text("attempted"),
            content_preview: text("content_preview"),
            at: r.get(4)?,
        })
    })?;
    rows.collect::<std::result::Result<_, _>>()
}

/// One refused attempt of an agent on a person's pin.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RefusedAttempt {
    /// The audit row's id (`act_<id>` in `lethe events`).
    pub id: i64,
    pub memory_id: Option<String>,
    pub actor: String,
    /// `unpin`, `quarantine`, `delete for ever`, `lower the importance of`, `supersede`.
    pub attempted: String,
    /// The memory's text as the attempt found it (120 characters at most).
    pub content_preview: String,
    pub at: String,
}
