//! Bulk import and export: JSONL, one memory per line with every field, so that an export
//! imported into an empty file reproduces every memory field for field.

use std::io::{BufRead, Write};

use rusqlite::{params, Connection};
use serde::Serialize;

use crate::dedup;
use crate::error::{Error, Result};
use crate::lifecycle;
use crate::model::{Memory, MEMORY_COLUMNS};
use crate::settings::Settings;
use crate::store::write_tx;
use crate::time;

/// Lines per transaction: a crash loses at most the chunk in progress, never half of one.
pub const CHUNK: usize = 1000;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ImportReport {
    pub read: usize,
    pub imported: usize,
    pub skipped_existing: usize,
    pub chunks: usize,
}

pub fn export(conn: &Connection, out: &mut impl Write) -> Result<usize> {
    let mut stmt = conn.prepare(&format!("SELECT {MEMORY_COLUMNS} FROM memory_item ORDER BY rowid"))?;
    let mut rows = stmt.query([])?;
    let mut n = 0;
    while let Some(r) = rows.next()? {
        let m = Memory::from_row(r)?;
        serde_json::to_writer(&mut *out, &m)?;
        out.write_all(b"\n")?;
        n += 1;
    }
    Ok(n)
}

fn validate(m: &Memory, s: &Settings, line: usize) -> Result<()> {
    let at = |e: Error| Error::invalid(format!("line {line}: {e}"));
    if !m.id.starts_with("mem_") || m.id.len() > 100 {
        return Err(at(Error::invalid("id must start with mem_")));
    }
    lifecycle::validate_content(&m.content, s).map_err(at)?;
    lifecycle::validate_importance(m.importance).map_err(at)?;
    lifecycle::validate_tags(&m.tags).map_err(at)?;
    time::parse(&m.created_at).map_err(at)?;
    for t in [&m.last_accessed, &m.deleted_at].into_iter().flatten() {
        time::parse(t).map_err(at)?;
    }
    if m.view_count < 0 || m.cite_count < 0 || m.edit_count < 0 || m.version < 1 {
        return Err(at(Error::invalid("counters must be non-negative and version ≥ 1")));
    }
    Ok(())
}

/// Imports JSONL. Every line is validated first; then chunks of [`CHUNK`] lines commit one
/// transaction each. Ids already present are skipped (never overwritten).
pub fn import(conn: &mut Connection, input: impl BufRead) -> Result<ImportReport> {
    let s = Settings::load(conn)?;
    let mut items = Vec::new();
    for (i, line) in input.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let m: Memory = serde_json::from_str(&line).map_err(|e| Error::invalid(format!("line {}: {e}", i + 1)))?;
        validate(&m, &s, i + 1)?;
        items.push(m);
    }
    let mut report = ImportReport { read: items.len(), ..Default::default() };
    for chunk in items.chunks(CHUNK) {
        let (imported, skipped) = write_tx(conn, |tx| {
            let mut ins = tx.prepare_cached(&format!(
                "INSERT OR IGNORE INTO memory_item ({MEMORY_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)"
            ))?;
            let mut sig = tx.prepare_cached(
                "INSERT OR REPLACE INTO lethe_signature (memory_id, content_hash, bands) VALUES (?1, ?2, ?3)",
            )?;
            let (mut imported, mut skipped) = (0, 0);
            for m in chunk {
                let json = |v: &Option<serde_json::Value>| v.as_ref().map(|v| v.to_string());
                let n = ins.execute(params![
                    m.id,
                    m.tier.as_str(),
                    m.content,
                    m.importance,
                    m.privacy_scope,
                    m.created_at,
                    m.last_accessed,
                    m.pinned as i64,
                    serde_json::to_string(&m.tags)?,
                    m.source,
                    m.view_count,
                    m.cite_count,
                    m.edit_count,
                    m.task_goal,
                    json(&m.steps),
                    json(&m.reflection_notes),
                    m.workflow_name,
                    m.skill_name,
                    json(&m.trigger_conditions),
                    m.version,
                    m.owner_id,
                    m.session_id,
                    m.project_id,
                    m.is_deleted as i64,
                    m.deleted_at,
                ])?;
                if n == 0 {
                    skipped += 1;
                } else {
                    imported += 1;
                    sig.execute(params![m.id, dedup::content_hash(&m.content), dedup::band_keys(&m.content)])?;
                }
            }
            Ok((imported, skipped))
        })?;
        report.imported += imported;
        report.skipped_existing += skipped;
        report.chunks += 1;
    }
    Ok(report)
}
