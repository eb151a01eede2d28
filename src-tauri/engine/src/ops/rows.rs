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
    if tx.is_postgres() {
        return soft_delete_on_server(tx, id, reason, policy, score, actor, settings, now);
    }
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
    leave_review(tx, &[id], false)?;
    soft_event(tx, id, reason, policy, score, actor, settings, now)
}

/// [`soft_delete_tx`] on a team store: one call of the server's `lethe_memory_quarantine`,
/// which checks the role and team, stamps the server's clock, writes the `soft` event under
/// the role's name and takes the memory out of the review band (Lethe's roles hold no UPDATE
/// right on memory_item there). The event returned is the one the engine asked for.
#[allow(clippy::too_many_arguments)]
fn soft_delete_on_server(
    tx: &Transaction,
    id: &str,
    reason: &str,
    policy: &str,
    score: Option<f64>,
    actor: &str,
    settings: &Settings,
    now: Instant,
) -> Result<ForgettingEvent> {
    let mut metadata = serde_json::json!({ "actor": actor });
    if let Some(via) = crate::actor::via_of(actor) {
        metadata["via"] = via.into();
    }
    let ev = format!("fev_{}", uuid::Uuid::now_v7());
    let ttl = settings.quarantine_days.round() as i64;
    let created_at = time::format(now);
    get_tx(tx, id)?;
    let n = server_write(
        tx,
        "SELECT lethe_memory_quarantine(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![id, ev, reason, policy, score, ttl, metadata.to_string(), created_at],
    )?;
    if n == 0 {
        return Err(Error::invalid(format!("memory {id} is already in quarantine")));
    }
    Ok(ForgettingEvent {
        id: ev,
        memory_id: id.to_string(),
        action: "soft".into(),
        reason: Some(reason.to_string()),
        policy: Some(policy.to_string()),
        forget_score: score,
        ttl_days: Some(ttl),
        created_at,
        metadata: Some(metadata),
    })
}

/// Calls one of the team store's write functions (`SELECT lethe_…(…)`, returning the rows it
/// changed). On a team store Lethe's roles hold no UPDATE or DELETE right on a memory, the
/// audit, archives, procedure versions or the recall log: each change is a function that
/// checks the role and team, validates and stamps the server's clock.
pub(crate) fn server_write<P: crate::storage::db::Params>(tx: &Connection, sql: &str, params: P) -> Result<i64> {
    tx.prepare_cached(sql)?.query_row(params, |r| r.get::<_, i64>(0))
}

/// New memories on a team store, through the server's `lethe_memory_insert` (Lethe's roles
/// hold no INSERT right on memory_item there): `rows` hold the values of [`MEMORY_COLUMNS`]
/// in order; with `remember`, each row's after state of its `remember` action, which the
/// server checks against the row and writes with the role as the actor. Returns the rowids
/// of the memories stored, in order (a row whose id the team holds already is skipped).
pub(crate) fn insert_memories_on_server(
    tx: &Connection,
    rows: &[&[crate::storage::db::Value]],
    remember: Option<&[serde_json::Value]>,
    actor: &str,
    now: Instant,
) -> Result<Vec<i64>> {
    use crate::storage::db::Value;
    let columns: Vec<&str> = MEMORY_COLUMNS.split(',').map(str::trim).collect();
    let mut out = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        if row.len() != columns.len() {
            return Err(Error::invalid(format!("a memory row has {} values, not {}", row.len(), columns.len())));
        }
        let mut o = serde_json::Map::with_capacity(columns.len() + 1);
        for (c, v) in columns.iter().zip(row.iter()) {
            let v = match v {
                Value::Null => serde_json::Value::Null,
                Value::Integer(n) => (*n).into(),
                Value::Real(x) => (*x).into(),
                Value::Text(t) => t.as_str().into(),
                Value::Blob(_) => return Err(Error::invalid(format!("memory column {c} holds bytes, not text"))),
            };
            o.insert((*c).to_string(), v);
        }
        if let Some(r) = remember.and_then(|r| r.get(i)) {
            o.insert("remember".into(), r.clone());
        }
        out.push(serde_json::Value::Object(o));
    }
    let json = serde_json::Value::Array(out).to_string();
    let mut stmt = tx.prepare_cached("SELECT lethe_memory_insert(?1, ?2, ?3)")?;
    let ids = stmt.query_map(params![json, actor, time::format(now)], |r| r.get::<_, i64>(0))?;
    ids.collect()
}

/// A memory's tags (the engine's JSON array), on either store.
pub(crate) fn set_tags(tx: &Connection, id: &str, tags: &[String]) -> Result<()> {
    let json = serde_json::to_string(tags)?;
    if tx.is_postgres() {
        server_write(tx, "SELECT lethe_memory_tags(?1, ?2)", params![id, json])?;
    } else {
        tx.execute("UPDATE memory_item SET tags = ?2 WHERE id = ?1", params![id, json])?;
    }
    Ok(())
}

/// Brings a memory back from quarantine (the caller has checked that it is there).
pub(crate) fn restore_tx(tx: &Connection, id: &str) -> Result<bool> {
    if tx.is_postgres() {
        return Ok(server_write(tx, "SELECT lethe_memory_restore(ARRAY[?1::TEXT])", [id])? > 0);
    }
    Ok(tx.prepare_cached("UPDATE memory_item SET is_deleted = 0, deleted_at = NULL WHERE id = ?1")?.execute([id])? > 0)
}

/// Takes memories out of the review band (with `only_quarantined`, those now in quarantine
/// only). On a team store through the server's function: Lethe's roles hold no DELETE right
/// on any table there, since a DELETE right lets a role lock the whole table against every
/// team.
pub(crate) fn leave_review(tx: &Connection, ids: &[&str], only_quarantined: bool) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    if tx.is_postgres() {
        let ids = serde_json::to_string(ids)?;
        tx.prepare_cached(
            "SELECT lethe_review_leave(ARRAY(SELECT json_array_elements_text(?1::TEXT::JSON)), ?2::BOOLEAN)",
        )?
        .query_row(params![ids, only_quarantined], |r| r.get::<_, i64>(0))?;
        return Ok(());
    }
    let sql = if only_quarantined {
        "DELETE FROM lethe_review WHERE memory_id = ?1 \
         AND EXISTS (SELECT 1 FROM memory_item m WHERE m.id = ?1 AND COALESCE(m.is_deleted, 0) <> 0)"
    } else {
        "DELETE FROM lethe_review WHERE memory_id = ?1"
    };
    let mut stmt = tx.prepare_cached(sql)?;
    for id in ids {
        stmt.execute([id])?;
    }
    Ok(())
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
    if tx.is_postgres() {
        return hard_delete_on_server(tx, id, reason, policy, actor, &m, now);
    }
    hard_delete_rows_in_file(tx, id)?;
    // The earlier audit rows of this memory lose their text in the same transaction; the
    // new event keeps only facts and the content's hash and length.
    audit::scrub_memory(tx, id)?;
    hard_event(tx, id, reason, policy, actor, &m, now)
}

/// [`hard_delete_tx`] on a team store: the recall log and the earlier audit rows lose the
/// memory's text first (the team lead's functions), then one call of the server's
/// `lethe_memory_erase` removes every row of the memory and writes the `hard` event, whose
/// type, hash and length it reads from the row (Lethe's roles hold no DELETE right on any
/// table there, nor INSERT on the events). The event returned is the one the engine asked for.
fn hard_delete_on_server(
    tx: &Transaction,
    id: &str,
    reason: &str,
    policy: &str,
    actor: &str,
    m: &Memory,
    now: Instant,
) -> Result<ForgettingEvent> {
    crate::recall_log::erase_for_memory(tx, id)?;
    audit::scrub_memory(tx, id)?;
    let ev = format!("fev_{}", uuid::Uuid::now_v7());
    let via = crate::actor::via_of(actor);
    let created_at = time::format(now);
    let n = server_write(
        tx,
        "SELECT lethe_memory_erase(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![id, ev, reason, policy, actor, via, created_at],
    )?;
    if n == 0 {
        return Err(Error::NotFound(format!("memory {id}")));
    }
    let mut metadata = hard_metadata(actor, m);
    if let Some(via) = via {
        metadata["via"] = via.into();
    }
    Ok(ForgettingEvent {
        id: ev,
        memory_id: id.to_string(),
        action: "hard".into(),
        reason: Some(reason.to_string()),
        policy: Some(policy.to_string()),
        forget_score: None,
        ttl_days: None,
        created_at,
        metadata: Some(metadata),
    })
}

/// The metadata of a `hard` event: who, the memory's type, its text's SHA-256 and length.
fn hard_metadata(actor: &str, m: &Memory) -> serde_json::Value {
    serde_json::json!({
        "actor": actor,
        "type": m.tier,
        "content_sha256": audit::sha256_hex(&m.content),
        "content_bytes": m.content.len(),
    })
}

/// The rows a hard delete removes from a file (the team store's function removes the same).
fn hard_delete_rows_in_file(tx: &Transaction, id: &str) -> Result<()> {
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
    Ok(())
}

/// The `hard` event: who, when, why, and the content's hash and length (never its text).
fn hard_event(
    tx: &Transaction,
    id: &str,
    reason: &str,
    policy: &str,
    actor: &str,
    m: &Memory,
    now: Instant,
) -> Result<ForgettingEvent> {
    audit::record_event(
        tx,
        EventSpec {
            memory_id: id,
            action: "hard",
            reason: Some(reason),
            policy: Some(policy),
            forget_score: None,
            ttl_days: None,
            metadata: Some(hard_metadata(actor, m)),
        },
        now,
    )
}
