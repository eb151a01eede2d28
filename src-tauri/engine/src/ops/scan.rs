//! `lethe scan`: memories already stored with secrets or personal data (a memento file, an
//! import made before the guard existed, the `allow` setting), and their redaction in place.
//! A redaction is audited as an edit that records only the kinds, and the superseded text is
//! erased like a hard delete erases (audit rows scrubbed, version snapshots and archived
//! originals redacted, full-text entries merged away, WAL truncated).

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use crate::storage::db::{params, Connection, Transaction};
use serde::Serialize;

use crate::audit;
use crate::error::{Error, Result};
use crate::model::{Memory, MEMORY_COLUMNS};
use crate::redact::{Guard, Kind, PiiMode, Policy, SecretsMode};
use crate::settings::Settings;
use crate::store::write_tx;
use crate::time::Instant;

/// One memory holding secrets or personal data: its id and the kinds found (never values).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ScanItem {
    pub id: String,
    pub kinds: Vec<Kind>,
    /// The fields they were found in (`content`, `tags[0]`, `steps[2]`, `archive`, …).
    pub fields: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScanReport {
    pub items: Vec<ScanItem>,
    /// Memories rewritten by `--redact --confirm` (0 for a listing).
    pub redacted: usize,
    /// Whether the WAL was truncated after the redaction (false: another process was reading).
    pub wal_truncated: Option<bool>,
}

/// Every field of a memory through `g`; the memory as it would be stored (scan and import).
pub(crate) fn guard_memory(g: &mut Guard, m: &Memory) -> Result<Memory> {
    let mut out = m.clone();
    out.content = g.text("content", &m.content)?;
    out.source = g.opt("source", &m.source)?;
    out.task_goal = g.opt("task_goal", &m.task_goal)?;
    out.workflow_name = g.opt("workflow_name", &m.workflow_name)?;
    out.skill_name = g.opt("skill_name", &m.skill_name)?;
    out.steps = g.opt_json("steps", &m.steps)?;
    out.trigger_conditions = g.opt_json("trigger_conditions", &m.trigger_conditions)?;
    out.reflection_notes = g.opt_json("reflection_notes", &m.reflection_notes)?;
    let tags = g.tags(&m.tags)?;
    out.tags = g.with_pii_tags(tags);
    Ok(out)
}

/// What a listing finds: every kind, whatever the settings say.
const FIND_ALL: Policy = Policy { secrets: SecretsMode::Redact, pii: PiiMode::Redact };

fn archived_originals(conn: &Connection, id: &str) -> Result<Vec<(i64, Vec<u8>)>> {
    conn.prepare_cached("SELECT archive_no, original FROM lethe_archive WHERE memory_id = ?1")?
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<std::result::Result<_, _>>()
}

fn delete_reasons(conn: &Connection, id: &str) -> Result<Vec<String>> {
    conn.prepare_cached("SELECT reason FROM memory_forgetting_event WHERE memory_id = ?1 AND reason IS NOT NULL")?
        .query_map([id], |r| r.get(0))?
        .collect::<std::result::Result<_, _>>()
}

fn item_of(conn: &Connection, m: &Memory) -> Result<Option<ScanItem>> {
    let mut g = Guard::new(FIND_ALL);
    guard_memory(&mut g, m)?;
    for (_, original) in archived_originals(conn, &m.id)? {
        g.text("archive", &String::from_utf8_lossy(&original))?;
    }
    // Its labels and the reasons given for deleting it are text a person or agent typed too.
    g.opt("session_id", &m.session_id)?;
    g.opt("project_id", &m.project_id)?;
    if let Some(kind) = crate::session::task_kind_of(conn, &m.id)? {
        g.text("task_kind", &kind)?;
    }
    for reason in delete_reasons(conn, &m.id)? {
        g.text("reason", &reason)?;
    }
    if g.findings.is_empty() {
        return Ok(None);
    }
    let mut kinds: Vec<Kind> = g.findings.iter().map(|f| f.kind).collect();
    kinds.sort();
    kinds.dedup();
    let mut fields: Vec<String> = g.findings.iter().map(|f| f.field.clone()).collect();
    fields.dedup();
    Ok(Some(ScanItem { id: m.id.clone(), kinds, fields }))
}

/// Lists the memories (active and in quarantine) that hold secrets or personal data.
pub fn scan(conn: &Connection) -> Result<Vec<ScanItem>> {
    let mut stmt =
        conn.prepare(&format!("SELECT {MEMORY_COLUMNS} FROM memory_item WHERE id IS NOT NULL ORDER BY rowid"))?;
    let memories: Vec<Memory> = stmt.query_map([], Memory::from_row)?.collect::<std::result::Result<_, _>>()?;
    let mut out = Vec::new();
    for m in &memories {
        if let Some(item) = item_of(conn, m)? {
            out.push(item);
        }
    }
    Ok(out)
}

/// Redacts every listed memory in place: secrets always (the person asked), personal data
/// per the `pii` setting (`tag` adds tags, `redact` replaces, `allow` leaves it). Needs
/// `confirm`, because the old text is erased for ever.
pub fn redact_in_place(conn: &mut Connection, confirm: bool, actor: &str, now: Instant) -> Result<ScanReport> {
    crate::model::validate_actor(actor)?;
    let items = scan(conn)?;
    if !confirm {
        return Err(Error::ConfirmationRequired(format!(
            "redacting {} memories erases their original text for ever; pass confirm to proceed",
            items.len()
        )));
    }
    let settings = Settings::load(conn)?;
    let policy = Policy { secrets: SecretsMode::Redact, pii: settings.pii };
    let mut redacted = 0;
    for item in &items {
        if write_tx(conn, |tx| redact_one(tx, &item.id, policy, actor, now))? {
            redacted += 1;
        }
    }
    let mut wal_truncated = None;
    if redacted > 0 {
        write_tx(conn, |tx| crate::store::purge_deleted_index_entries(tx))?;
        wal_truncated = Some(crate::store::checkpoint_truncate(conn)?);
    }
    Ok(ScanReport { items, redacted, wal_truncated })
}

/// One redacted column of a memory: on a team store through the team lead's function
/// `lethe_memory_redact` (Lethe's roles hold no UPDATE right on a memory there).
fn set_column(tx: &Transaction, id: &str, col: &str, value: Option<String>) -> Result<()> {
    if tx.is_postgres() {
        crate::ops::rows::server_write(tx, "SELECT lethe_memory_redact(?1, ?2, ?3)", params![id, col, value])?;
    } else {
        tx.execute(&format!("UPDATE memory_item SET {col} = ?2 WHERE id = ?1"), params![id, value])?;
    }
    Ok(())
}

fn redact_one(tx: &Transaction, id: &str, policy: Policy, actor: &str, now: Instant) -> Result<bool> {
    let m = crate::ops::rows::get_tx(tx, id)?;
    let mut g = Guard::new(policy);
    let new = guard_memory(&mut g, &m)?;
    let json = |v: &Option<serde_json::Value>| v.as_ref().map(|v| v.to_string());
    let mut changed = false;
    if new.content != m.content {
        set_column(tx, id, "content", Some(new.content.clone()))?;
        crate::dedup::store_signature(tx, id, &new.content)?;
        crate::semantic::refresh(tx, id, &new.content)?;
        changed = true;
    }
    if new.tags != m.tags {
        set_column(tx, id, "tags", Some(serde_json::to_string(&new.tags)?))?;
        changed = true;
    }
    for (col, old, new) in [
        ("source", m.source.clone(), new.source.clone()),
        ("task_goal", m.task_goal.clone(), new.task_goal.clone()),
        ("workflow_name", m.workflow_name.clone(), new.workflow_name.clone()),
        ("skill_name", m.skill_name.clone(), new.skill_name.clone()),
        ("steps", json(&m.steps), json(&new.steps)),
        ("trigger_conditions", json(&m.trigger_conditions), json(&new.trigger_conditions)),
        ("reflection_notes", json(&m.reflection_notes), json(&new.reflection_notes)),
    ] {
        if old != new {
            set_column(tx, id, col, new)?;
            changed = true;
        }
    }
    // Old procedure versions and archived originals hold old text too.
    let versions: Vec<(i64, String)> = tx
        .prepare_cached("SELECT version, snapshot_json FROM lethe_procedure_version WHERE memory_id = ?1")?
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<std::result::Result<_, _>>()?;
    for (v, snap) in versions {
        let parsed: serde_json::Value = serde_json::from_str(&snap)?;
        let clean = g.json("version", &parsed)?;
        if clean != parsed && tx.is_postgres() {
            crate::ops::rows::server_write(
                tx,
                "SELECT lethe_procedure_version_redact(?1, ?2, ?3)",
                params![id, v, clean.to_string()],
            )?;
            changed = true;
        } else if clean != parsed {
            tx.execute(
                "UPDATE lethe_procedure_version SET snapshot_json = ?3 WHERE memory_id = ?1 AND version = ?2",
                params![id, v, clean.to_string()],
            )?;
            changed = true;
        }
    }
    for (no, original) in archived_originals(tx, id)? {
        let text = String::from_utf8_lossy(&original).into_owned();
        let clean = g.text("archive", &text)?;
        if clean != text && tx.is_postgres() {
            // The server computes the SHA-256 and length of the new original itself.
            crate::ops::rows::server_write(tx, "SELECT lethe_archive_redact(?1, ?2)", params![no, clean.as_bytes()])?;
            changed = true;
        } else if clean != text {
            tx.execute(
                "UPDATE lethe_archive SET original = ?2, sha256 = ?3, bytes = ?4 WHERE archive_no = ?1",
                params![no, clean.as_bytes(), audit::sha256_hex(&clean), clean.len() as i64],
            )?;
            changed = true;
        }
    }
    if !changed {
        return Ok(false);
    }
    audit::scrub_memory(tx, id)?;
    let mut kinds: Vec<&str> = g.findings.iter().filter(|f| f.action == "redacted").map(|f| f.kind.as_str()).collect();
    kinds.sort();
    kinds.dedup();
    audit::record_action(
        tx,
        Some(id),
        "edit",
        actor,
        None,
        Some(
            &serde_json::json!({ "redacted_kinds": kinds, "pii_tags": g.pii_kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>() }),
        ),
        now,
    )?;
    Ok(true)
}

/// Whether a memory's text carries a redaction placeholder (the window's "redacted" badge).
pub fn is_redacted(text: &str) -> bool {
    text.contains("[REDACTED:")
}

/// The rowids of memories whose text holds a redaction placeholder (the window's filter).
pub fn redacted_rowids(conn: &Connection) -> Result<std::collections::HashSet<i64>> {
    conn.prepare_cached("SELECT rowid FROM memory_item WHERE instr(content, '[REDACTED:') > 0")?
        .query_map([], |r| r.get(0))?
        .collect::<std::result::Result<_, _>>()
}
