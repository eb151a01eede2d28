//! The row changes every operation shares, below both the memory operations and the
//! forgetting policy: read one memory, move it to quarantine (with its audit event), erase
//! it with every trace. `lifecycle` (people and agents) and `forgetting::run_batch` (the
//! policy) both call these, so neither depends on the other for them.

use crate::storage::db::{params, Connection, OptionalExtension, Transaction};

use crate::audit::{self, EventSpec, ForgettingEvent};
use crate::error::{Error, Result};
use crate::model::{Memory, MEMORY_COLUMNS};
use crate::settings::Settings;
use crate::time::{self, Instant};

/// Reads one memory (does not count as usage).
pub fn get(conn: &Connection, id: &str) -> Result<Memory> {
    conn.prepare_cached(&format!("SELECT {MEMORY_COLUMNS} FROM memory_item WHERE id = ?1"))?
        .query_row([id], Memory::from_row)
        .optional()?
        .ok_or_else(|| Error::NotFound(format!("memory {id}")))
}

pub(crate) fn get_tx(tx: &Transaction, id: &str) -> Result<Memory> {
    get(tx, id)
}

/// Soft delete inside an open transaction: the memory leaves recall at once and is kept in
/// quarantine. Used by people, agents and the policy batch.
#[allow(clippy::too_many_arguments)] // Each argument is a distinct column of the audit event.
pub(crate) fn soft_delete_tx(
    tx: &Transaction,
    id: &str,
    reason: &str,
    policy: &str,
    score: Option<f64>,
    actor: &str,
    settings: &Settings,
    now: Instant,
) -> Result<ForgettingEvent> {
    let n = tx
        .prepare_cached(
            "UPDATE memory_item SET is_deleted = 1, deleted_at = ?2 WHERE id = ?1 AND COALESCE(is_deleted, 0) = 0",
        )?
        .execute(params![id, time::format(now)])?;
    if n == 0 {
        let exists: Option<i64> =
            tx.query_row("SELECT 1 FROM memory_item WHERE id = ?1", [id], |r| r.get(0)).optional()?;
        return Err(match exists {
            None => Error::NotFound(format!("memory {id}")),
            Some(_) => Error::invalid(format!("memory {id} is already in quarantine")),
        });
    }
    tx.prepare_cached("DELETE FROM lethe_review WHERE memory_id = ?1")?.execute([id])?;
    soft_event(tx, id, reason, policy, score, actor, settings, now)
}

/// The audit event of a move to quarantine (the actor goes in the metadata: the table has no
/// actor column).
#[allow(clippy::too_many_arguments)]
pub(crate) fn soft_event(
    tx: &Transaction,
    id: &str,
    reason: &str,
    policy: &str,
    score: Option<f64>,
    actor: &str,
    settings: &Settings,
    now: Instant,
) -> Result<ForgettingEvent> {
    audit::record_event(
        tx,
        EventSpec {
            memory_id: id,
            action: "soft",
            reason: Some(reason),
            policy: Some(policy),
            forget_score: score,
            ttl_days: Some(settings.quarantine_days.round() as i64),
            metadata: Some(serde_json::json!({ "actor": actor })),
        },
        now,
    )
}

/// Removes the row and every trace (FTS via trigger, stats, archive, signature, links,
/// versions, vectors, neighbours) and the text of its earlier audit rows; the new `hard`
/// event keeps who, when, why and the content's SHA-256 and length. The caller then drops
/// the deleted entries from the full-text indexes ([`crate::store::purge_deleted_index_entries`])
/// and truncates the WAL ([`crate::store::checkpoint_truncate`]).
pub(crate) fn hard_delete_tx(
    tx: &Transaction,
    id: &str,
    reason: &str,
    policy: &str,
    actor: &str,
    now: Instant,
) -> Result<ForgettingEvent> {
    let m = get_tx(tx, id)?;
    for sql in [
        "DELETE FROM meta_memory_stats WHERE memory_id = ?1",
        "DELETE FROM lethe_archive WHERE memory_id = ?1",
        "DELETE FROM lethe_signature WHERE memory_id = ?1",
        "DELETE FROM lethe_vector WHERE memory_id = ?1",
        "DELETE FROM lethe_supersede WHERE old_id = ?1 OR new_id = ?1",
        "DELETE FROM lethe_dismissed_pair WHERE a_id = ?1 OR b_id = ?1",
        "DELETE FROM lethe_procedure_version WHERE memory_id = ?1",
        "DELETE FROM lethe_review WHERE memory_id = ?1",
        "DELETE FROM lethe_task_log WHERE memory_id = ?1",
        "DELETE FROM lethe_session_rule WHERE memory_id = ?1",
    ] {
        tx.prepare_cached(sql)?.execute([id])?;
    }
    // A recall that found the memory usually names what it is about: its query and context
    // go too (the entry's actor, time and other results stay).
    crate::recall_log::erase_for_memory(tx, id)?;
    for sql in ["DELETE FROM lethe_recall_log_hit WHERE memory_id = ?1", "DELETE FROM memory_item WHERE id = ?1"] {
        tx.prepare_cached(sql)?.execute([id])?;
    }
    // The earlier audit rows of this memory lose their text in the same transaction; the
    // new event keeps only facts and the content's hash and length.
    audit::scrub_memory(tx, id)?;
    audit::record_event(
        tx,
        EventSpec {
            memory_id: id,
            action: "hard",
            reason: Some(reason),
            policy: Some(policy),
            forget_score: None,
            ttl_days: None,
            metadata: Some(serde_json::json!({
                "actor": actor,
                "type": m.tier,
                "content_sha256": audit::sha256_hex(&m.content),
                "content_bytes": m.content.len(),
            })),
        },
        now,
    )
}
