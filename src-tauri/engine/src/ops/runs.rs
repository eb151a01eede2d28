//! Forget runs a person can review and undo. Each policy run that quarantines anything gets an
//! id (`run_<32 hex digits>`): every soft event it writes names it in its metadata, and one
//! `forget_run` action (listed by `lethe events`) says what it did. [`undo`] restores what
//! the run quarantined, in one transaction audited as one `undo_forget_run` action, and
//! says what it could not restore and why: already restored, quarantined again since (by a
//! later run or a person), or deleted for ever (purged, or by a person). Nothing is skipped
//! silently.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use crate::storage::db::{params, Connection, OptionalExtension};
use serde::Serialize;

use crate::audit;
use crate::error::{Error, Result};
use crate::forgetting::BatchReport;
use crate::model;
use crate::store::write_tx;
use crate::time::Instant;

/// The audit action of a run, and of its undo.
pub const RUN_ACTION: &str = "forget_run";
pub const UNDO_ACTION: &str = "undo_forget_run";

/// A new run id: `run_` and a time-ordered UUID in 32 hex digits.
pub fn new_run_id() -> String {
    format!("run_{}", uuid::Uuid::now_v7().simple())
}

/// Checks a run id's form (`run_` and 32 lowercase hex digits).
pub fn parse_run_id(run: &str) -> Result<&str> {
    match run.strip_prefix("run_") {
        Some(hex) if hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) => {
            Ok(run)
        }
        _ => Err(Error::invalid(format!(
            "invalid run id {run:?}: expected run_ and 32 hex digits, as `lethe forget` and `lethe events` print it"
        ))),
    }
}

/// The run's `forget_run` action: how many memories each rule quarantined and how many were
/// purged, with the run id (the ids stay in the soft events).
pub(crate) fn record_run(conn: &mut Connection, run: &str, report: &BatchReport, now: Instant) -> Result<()> {
    let after = serde_json::json!({
        "run": run,
        "quarantined": report.soft_deleted.len() + report.working_gate.len(),
        "forget_score": report.soft_deleted.len(),
        "working_gate": report.working_gate.len(),
        "purged": report.purged.len(),
        "review": report.review.len(),
    });
    write_tx(conn, |tx| audit::record_action(tx, None, RUN_ACTION, crate::actor::POLICY, None, Some(&after), now))?;
    Ok(())
}

/// What an undo did, each memory in one list.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct UndoReport {
    pub run_id: String,
    /// Back from quarantine, exactly as they were.
    pub restored: Vec<UndoItem>,
    /// Already active again (restored by a person or an agent since the run).
    pub already_restored: Vec<UndoItem>,
    /// In quarantine again by a later decision (another run, a person or an agent): left there.
    pub quarantined_again: Vec<UndoItem>,
    /// Gone for ever (purged after the quarantine days, or deleted by a person): only the
    /// audit's facts remain, so nothing can come back.
    pub deleted_for_ever: Vec<UndoItem>,
}

/// One memory of an undo: its id, and its text's first words while it still exists.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct UndoItem {
    pub id: String,
    pub preview: Option<String>,
    /// Why the run quarantined it (the soft event's reason).
    pub reason: Option<String>,
}

/// The memories a run quarantined, in the order it wrote them: (id, reason).
fn quarantined_by(conn: &Connection, run: &str) -> Result<Vec<(String, Option<String>)>> {
    // The run id is 32 hex digits after `run_` (checked), so it is matched as it is written.
    let pattern = format!("%\"run\":\"{run}\"%");
    let mut stmt = conn.prepare(
        "SELECT memory_id, reason FROM memory_forgetting_event WHERE action = 'soft' AND metadata_json LIKE ?1 \
         ORDER BY created_at, id",
    )?;
    let rows = stmt.query_map([pattern], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect::<std::result::Result<_, _>>()
}

/// Restores everything run `run` quarantined that is still in quarantine because of it, in
/// one transaction audited as one `undo_forget_run` action (with the lists). A second undo
/// of the same run restores nothing and writes nothing. `not_found` for a run that
/// quarantined nothing.
pub fn undo(conn: &mut Connection, run: &str, actor: &str, now: Instant) -> Result<UndoReport> {
    model::validate_actor(actor)?;
    let run = parse_run_id(run)?;
    let items = quarantined_by(conn, run)?;
    if items.is_empty() {
        return Err(Error::NotFound(format!("forget run {run} (no memory was quarantined by it)")));
    }
    let marker = format!("\"run\":\"{run}\"");
    write_tx(conn, |tx| {
        let mut out = UndoReport { run_id: run.to_string(), ..Default::default() };
        let mut state = tx.prepare_cached("SELECT COALESCE(is_deleted, 0), content FROM memory_item WHERE id = ?1")?;
        let mut last_soft = tx.prepare_cached(
            "SELECT metadata_json FROM memory_forgetting_event WHERE memory_id = ?1 AND action = 'soft' \
             ORDER BY created_at DESC, id DESC LIMIT 1",
        )?;
        let mut restore = tx.prepare_cached(
            "UPDATE memory_item SET is_deleted = 0, deleted_at = NULL WHERE id = ?1 AND is_deleted = 1",
        )?;
        let mut seen = std::collections::HashSet::new();
        for (id, reason) in &items {
            if !seen.insert(id.as_str()) {
                continue;
            }
            let row: Option<(i64, Option<String>)> =
                state.query_row([id], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
            let item = |content: Option<&str>| UndoItem {
                id: id.clone(),
                preview: content.map(|c| model::preview(c, 120)),
                reason: reason.clone(),
            };
            let Some((deleted, content)) = row else {
                out.deleted_for_ever.push(item(None));
                continue;
            };
            if deleted == 0 {
                out.already_restored.push(item(content.as_deref()));
                continue;
            }
            let newest: Option<String> = last_soft.query_row([id], |r| r.get(0)).optional()?.flatten();
            if !newest.is_some_and(|m| m.contains(&marker)) {
                out.quarantined_again.push(item(content.as_deref()));
                continue;
            }
            if tx.is_postgres() {
                // The team store's function (no UPDATE right on a memory for Lethe's roles there).
                crate::ops::rows::server_write(tx, "SELECT lethe_memory_restore(ARRAY[?1::TEXT])", [id])?;
            } else {
                restore.execute([id])?;
            }
            out.restored.push(item(content.as_deref()));
        }
        if !out.restored.is_empty() {
            let ids = |v: &[UndoItem]| v.iter().map(|i| i.id.clone()).collect::<Vec<_>>();
            audit::record_action(
                tx,
                None,
                UNDO_ACTION,
                actor,
                None,
                Some(&serde_json::json!({
                    "run": run,
                    "restored": ids(&out.restored),
                    "already_restored": ids(&out.already_restored),
                    "quarantined_again": ids(&out.quarantined_again),
                    "deleted_for_ever": ids(&out.deleted_for_ever),
                })),
                now,
            )?;
        }
        Ok(out)
    })
}

/// One forget run as `lethe events` records it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RunSummary {
    pub run_id: String,
    pub at: String,
    pub quarantined: i64,
    pub purged: i64,
    /// Whether it was undone (an `undo_forget_run` restored some of it).
    pub undone: bool,
}

/// The newest forget runs first.
pub fn list(conn: &Connection, limit: usize) -> Result<Vec<RunSummary>> {
    let mut stmt =
        conn.prepare("SELECT after_json, created_at FROM lethe_action WHERE action = ?1 ORDER BY id DESC LIMIT ?2")?;
    let rows: Vec<(Option<String>, String)> = stmt
        .query_map(params![RUN_ACTION, limit.clamp(1, 10_000) as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<std::result::Result<_, _>>()?;
    let mut undone_stmt =
        conn.prepare("SELECT EXISTS (SELECT 1 FROM lethe_action WHERE action = ?1 AND after_json LIKE ?2)")?;
    let mut out = Vec::with_capacity(rows.len());
    for (after, at) in rows {
        let v: serde_json::Value = after.and_then(|a| serde_json::from_str(&a).ok()).unwrap_or_default();
        let Some(run) = v.get("run").and_then(|r| r.as_str()) else { continue };
        let undone: bool = undone_stmt.query_row(params![UNDO_ACTION, format!("%\"run\":\"{run}\"%")], |r| r.get(0))?;
        out.push(RunSummary {
            run_id: run.to_string(),
            at,
            quarantined: v.get("quarantined").and_then(|n| n.as_i64()).unwrap_or(0),
            purged: v.get("purged").and_then(|n| n.as_i64()).unwrap_or(0),
            undone,
        });
    }
    Ok(out)
}
