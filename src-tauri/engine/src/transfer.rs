//! Bulk import and export: JSONL, one memory per line with every field, so that an export
//! imported into an empty file reproduces every memory field for field.

use std::collections::HashSet;
use std::io::{BufRead, Write};

use rusqlite::types::Value;
use rusqlite::{params_from_iter, Connection, OptionalExtension, Transaction};
use serde::Serialize;

use crate::dedup;
use crate::error::{Error, Result};
use crate::lifecycle;
use crate::model::{Memory, MEMORY_COLUMNS};
use crate::redact::{Guard, Policy};
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
    /// Spans replaced by `[REDACTED:<kind>]` before anything was written, and the number of
    /// memories they were in (per the `secrets` and `pii` settings).
    pub redacted_spans: usize,
    pub redacted_memories: usize,
    /// Memories that got `pii:<kind>` tags.
    pub pii_tagged_memories: usize,
}

/// Every text field of an imported memory through the secrets and personal-data guard.
fn guard(m: Memory, report: &mut ImportReport, s: &Settings) -> Result<Memory> {
    let mut g = Guard::new(Policy::of(s));
    let m = crate::scan::guard_memory(&mut g, &m)?;
    let redacted = g.findings.iter().filter(|f| f.action == "redacted").count();
    report.redacted_spans += redacted;
    report.redacted_memories += usize::from(redacted > 0);
    report.pii_tagged_memories += usize::from(!g.pii_kinds.is_empty());
    Ok(m)
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
    let mut report = ImportReport::default();
    for (i, line) in input.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let m: Memory = serde_json::from_str(&line).map_err(|e| Error::invalid(format!("line {}: {e}", i + 1)))?;
        let m = guard(m, &mut report, &s).map_err(|e| Error::invalid(format!("line {}: {e}", i + 1)))?;
        validate(&m, &s, i + 1)?;
        items.push(m);
    }
    report.read = items.len();
    for chunk in items.chunks(CHUNK) {
        let (imported, skipped) = write_tx(conn, |tx| import_chunk(tx, chunk))?;
        report.imported += imported;
        report.skipped_existing += skipped;
        report.chunks += 1;
    }
    Ok(report)
}

/// Columns per memory row in the multi-row INSERT.
const COLS: usize = 25;

/// `INSERT … VALUES (?, …), (?, …), …` for `rows` rows of `cols` values.
fn multi_row_sql(head: &str, rows: usize, cols: usize) -> String {
    let mut sql = String::with_capacity(head.len() + rows * (cols * 2 + 4));
    sql.push_str(head);
    sql.push_str(" VALUES ");
    for r in 0..rows {
        if r > 0 {
            sql.push(',');
        }
        sql.push('(');
        for c in 0..cols {
            sql.push_str(if c == 0 { "?" } else { ",?" });
        }
        sql.push(')');
    }
    sql
}

/// One chunk in one transaction. Ids already stored (or repeated earlier in the chunk) are
/// skipped; the new rows go in with one multi-row INSERT and their signatures with another.
/// One statement per chunk rather than per row matters: FTS5 flushes its pending index data
/// to a new segment at every statement savepoint, so a statement per row wrote one FTS
/// segment per row and then merged them (measured: ~12× slower imports, BENCHMARKS.md).
fn import_chunk(tx: &Transaction, chunk: &[Memory]) -> Result<(usize, usize)> {
    let mut exists = tx.prepare_cached("SELECT 1 FROM memory_item WHERE id = ?1")?;
    let mut seen: HashSet<&str> = HashSet::with_capacity(chunk.len());
    let mut new: Vec<&Memory> = Vec::with_capacity(chunk.len());
    for m in chunk {
        let stored = exists.query_row([&m.id], |_| Ok(())).optional()?.is_some();
        if !stored && seen.insert(m.id.as_str()) {
            new.push(m);
        }
    }
    let skipped = chunk.len() - new.len();
    if new.is_empty() {
        return Ok((0, skipped));
    }
    let json =
        |v: &Option<serde_json::Value>| -> Value { v.as_ref().map_or(Value::Null, |v| Value::Text(v.to_string())) };
    let text = |v: &Option<String>| -> Value { v.clone().map_or(Value::Null, Value::Text) };
    let mut values: Vec<Value> = Vec::with_capacity(new.len() * COLS);
    let mut sigs: Vec<Value> = Vec::with_capacity(new.len() * 3);
    for m in &new {
        values.extend([
            Value::Text(m.id.clone()),
            Value::Text(m.tier.as_str().to_string()),
            Value::Text(m.content.clone()),
            Value::Real(m.importance),
            Value::Text(m.privacy_scope.clone()),
            Value::Text(m.created_at.clone()),
            text(&m.last_accessed),
            Value::Integer(m.pinned as i64),
            Value::Text(serde_json::to_string(&m.tags)?),
            text(&m.source),
            Value::Integer(m.view_count),
            Value::Integer(m.cite_count),
            Value::Integer(m.edit_count),
            text(&m.task_goal),
            json(&m.steps),
            json(&m.reflection_notes),
            text(&m.workflow_name),
            text(&m.skill_name),
            json(&m.trigger_conditions),
            Value::Integer(m.version),
            text(&m.owner_id),
            text(&m.session_id),
            text(&m.project_id),
            Value::Integer(m.is_deleted as i64),
            text(&m.deleted_at),
        ]);
        sigs.extend([
            Value::Text(m.id.clone()),
            Value::Text(dedup::content_hash(&m.content)),
            Value::Blob(dedup::band_keys(&m.content)),
        ]);
    }
    let n = tx
        .prepare_cached(&multi_row_sql(
            &format!("INSERT OR IGNORE INTO memory_item ({MEMORY_COLUMNS})"),
            new.len(),
            COLS,
        ))?
        .execute(params_from_iter(values))?;
    if n != new.len() {
        return Err(Error::invalid(format!("import: {} of {} rows were stored", n, new.len())));
    }
    tx.prepare_cached(&multi_row_sql(
        "INSERT OR REPLACE INTO lethe_signature (memory_id, content_hash, bands)",
        new.len(),
        3,
    ))?
    .execute(params_from_iter(sigs))?;
    // Vectors in the same transaction, embedded in one call (the model spreads it over cores).
    if let Some(e) = crate::embed::shared() {
        let texts: Vec<String> = new.iter().map(|m| m.content.clone()).collect();
        let vecs = e.embed_many(&texts);
        let mut vals: Vec<Value> = Vec::with_capacity(new.len() * 3);
        for (m, v) in new.iter().zip(vecs) {
            vals.extend([
                Value::Text(m.id.clone()),
                Value::Text(e.fingerprint().to_string()),
                Value::Blob(v.to_bytes()),
            ]);
        }
        tx.prepare_cached(&multi_row_sql("INSERT OR REPLACE INTO lethe_vector (memory_id, model, vec)", new.len(), 3))?
            .execute(params_from_iter(vals))?;
    }
    Ok((new.len(), skipped))
}
