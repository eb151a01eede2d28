//! Bulk import and export: JSONL, one memory per line. An export line carries every field,
//! so that an export imported into an empty file reproduces every memory field for field
//! (deleted ones re-enter quarantine as of the import); an import line needs only `content`
//! and `type`, and is validated as `remember` validates.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::collections::HashSet;
use std::io::{BufRead, Write};

use crate::storage::db::Value;
use crate::storage::db::{params_from_iter, Connection, OptionalExtension, Transaction};
use serde::{Deserialize, Serialize};

use crate::dedup;
use crate::error::{Error, Result};
use crate::model::{self, Memory, Tier, MEMORY_COLUMNS};
use crate::ops::validate::{self, NewMemory, ProcedureFields};
use crate::procedural;
use crate::redact::{Guard, Policy};
use crate::settings::Settings;
use crate::store::write_tx;
use crate::time;

/// Lines per transaction: a crash loses at most the chunk in progress, never half of one.
pub const CHUNK: usize = 1000;

/// Bad lines named one by one in an import's error; the rest are counted.
const MAX_LISTED_ERRORS: usize = 100;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ImportReport {
    /// Non-empty lines read.
    pub read: usize,
    /// Memories stored (with `dry_run`: that would be stored).
    pub imported: usize,
    /// Lines whose id is already in the file (or earlier in the import): never overwritten.
    pub skipped_existing: usize,
    /// Line numbers (1-based) whose content is a filler phrase: reported, not stored.
    pub trivial_lines: Vec<usize>,
    /// Lines without an `id` that got a new one.
    pub generated_ids: usize,
    /// Lines marked deleted: quarantined as of the import, not as of the file's date.
    pub quarantined: usize,
    pub chunks: usize,
    /// Spans replaced by `[REDACTED:<kind>]` before anything was written, and the number of
    /// memories they were in (per the `secrets` and `pii` settings).
    pub redacted_spans: usize,
    pub redacted_memories: usize,
    /// Memories that got `pii:<kind>` tags.
    pub pii_tagged_memories: usize,
    /// Nothing was written: the figures say what an import would do.
    pub dry_run: bool,
}

/// How [`import`] runs.
#[derive(Debug, Clone, Copy)]
pub struct ImportOptions {
    /// The import's instant: the default `created_at`, the quarantine start of deleted lines,
    /// and the bound past which a date is in the future.
    pub now: time::Instant,
    /// Validate every line and count what would happen; write nothing.
    pub dry_run: bool,
}

impl ImportOptions {
    pub fn new(now: time::Instant) -> Self {
        ImportOptions { now, dry_run: false }
    }
}

/// One line of an import file. Only `content` and `type` are required; every other field
/// defaults as `remember` would (a new id, importance 0.5, private, created now, not pinned,
/// no tags, zero counters, version 1). Lethe's own export lines carry every field.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ImportLine {
    id: Option<String>,
    #[serde(rename = "type")]
    tier: Tier,
    content: String,
    importance: Option<f64>,
    privacy_scope: Option<String>,
    created_at: Option<String>,
    last_accessed: Option<String>,
    pinned: Option<bool>,
    tags: Option<Vec<String>>,
    source: Option<String>,
    view_count: Option<i64>,
    cite_count: Option<i64>,
    edit_count: Option<i64>,
    task_goal: Option<String>,
    steps: Option<serde_json::Value>,
    reflection_notes: Option<serde_json::Value>,
    workflow_name: Option<String>,
    skill_name: Option<String>,
    trigger_conditions: Option<serde_json::Value>,
    version: Option<i64>,
    owner_id: Option<String>,
    session_id: Option<String>,
    project_id: Option<String>,
    is_deleted: Option<bool>,
    deleted_at: Option<String>,
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
    let mut stmt =
        conn.prepare(&format!("SELECT {MEMORY_COLUMNS} FROM memory_item WHERE id IS NOT NULL ORDER BY rowid"))?;
    let mut rows = stmt.query([])?;
    let mut n = 0;
    while let Some(r) = rows.next()? {
        let m = Memory::from_row(&r)?;
        serde_json::to_writer(&mut *out, &m)?;
        out.write_all(b"\n")?;
        n += 1;
    }
    Ok(n)
}

/// A past-or-present instant: an import may keep original dates (a migration), never
/// invent future ones (a future date would keep a memory from decaying).
fn past_instant(name: &str, raw: &str, now: time::Instant) -> Result<time::Instant> {
    let t = time::parse(raw).map_err(|e| Error::invalid(format!("{name}: {e}")))?;
    if (t - now).num_seconds() > validate::FUTURE_SLACK_SECS {
        return Err(Error::invalid(format!("{name} {raw} lies in the future")));
    }
    Ok(t)
}

/// The memory a line describes, validated exactly as `remember` validates a new memory
/// (plus the fields only an import carries), after the secrets guard. Ok(None): trivial.
fn memory_of(l: ImportLine, s: &Settings, now: time::Instant, report: &mut ImportReport) -> Result<Option<Memory>> {
    let generated = l.id.is_none();
    let id = match l.id {
        Some(id) => {
            let valid = id.len() <= 100
                && id.strip_prefix("mem_").is_some_and(|rest| {
                    !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
                });
            if !valid {
                return Err(Error::invalid(format!(
                    "id {id:?} must be mem_ followed by 1-96 characters from A-Z a-z 0-9 - _"
                )));
            }
            id
        }
        None => model::new_memory_id(),
    };
    let created_at = match &l.created_at {
        Some(c) => past_instant("created_at", c, now)?,
        None => now,
    };
    let last_accessed = l.last_accessed.as_deref().map(|t| past_instant("last_accessed", t, now)).transpose()?;
    let counters = [("view_count", l.view_count), ("cite_count", l.cite_count), ("edit_count", l.edit_count)];
    for (name, v) in counters {
        if v.is_some_and(|v| v < 0) {
            return Err(Error::invalid(format!("{name} must not be negative")));
        }
    }
    if l.version.is_some_and(|v| v < 1) {
        return Err(Error::invalid("version must be at least 1"));
    }
    if let Some(notes) = &l.reflection_notes {
        let arr = notes.as_array().ok_or_else(|| Error::invalid("reflection_notes must be an array of notes"))?;
        if arr.len() > procedural::MAX_NOTES {
            return Err(Error::invalid(format!(
                "{} reflection notes, more than the cap of {}",
                arr.len(),
                procedural::MAX_NOTES
            )));
        }
        for (i, n) in arr.iter().enumerate() {
            procedural::parse_note(n).map_err(|e| Error::invalid(format!("reflection_notes[{i}]: {e}")))?;
        }
        if l.tier != Tier::Procedural && !arr.is_empty() {
            return Err(Error::invalid("reflection_notes are for procedural memories"));
        }
    }
    let deleted = l.is_deleted.unwrap_or(false);
    if !deleted && l.deleted_at.is_some() {
        return Err(Error::invalid("deleted_at is set but is_deleted is not"));
    }
    if let Some(d) = &l.deleted_at {
        time::parse(d).map_err(|e| Error::invalid(format!("deleted_at: {e}")))?;
    }
    let m = Memory {
        id,
        tier: l.tier,
        content: l.content,
        importance: l.importance.unwrap_or(0.5),
        privacy_scope: l.privacy_scope.unwrap_or_else(|| "private".into()),
        created_at: time::format(created_at),
        last_accessed: last_accessed.map(time::format),
        pinned: l.pinned.unwrap_or(false),
        tags: l.tags.unwrap_or_default(),
        source: l.source,
        view_count: l.view_count.unwrap_or(0),
        cite_count: l.cite_count.unwrap_or(0),
        edit_count: l.edit_count.unwrap_or(0),
        task_goal: l.task_goal,
        steps: l.steps,
        reflection_notes: l.reflection_notes,
        workflow_name: l.workflow_name,
        skill_name: l.skill_name,
        trigger_conditions: l.trigger_conditions,
        version: l.version.unwrap_or(1),
        owner_id: l.owner_id,
        session_id: l.session_id,
        project_id: l.project_id,
        is_deleted: deleted,
        // Quarantine starts now: a file's old deletion date would let the next batch purge
        // the memory at once, skipping the 30 days a person has to restore it.
        deleted_at: deleted.then(|| time::format(now)),
    };
    let m = guard(m, report, s)?;
    let as_new = NewMemory {
        tier: m.tier,
        content: m.content.clone(),
        importance: Some(m.importance),
        tags: m.tags.clone(),
        source: m.source.clone(),
        pinned: m.pinned,
        privacy_scope: Some(m.privacy_scope.clone()),
        owner_id: m.owner_id.clone(),
        session_id: m.session_id.clone(),
        project_id: m.project_id.clone(),
        created_at: Some(created_at),
        procedure: ProcedureFields {
            task_goal: m.task_goal.clone(),
            steps: m.steps.clone(),
            trigger_conditions: m.trigger_conditions.clone(),
            workflow_name: m.workflow_name.clone(),
            skill_name: m.skill_name.clone(),
        },
        supersedes: Vec::new(),
    };
    validate::validate_new(&as_new, s, now)?;
    if validate::is_trivial(&m.content, s) {
        return Ok(None);
    }
    report.quarantined += usize::from(deleted);
    report.generated_ids += usize::from(generated);
    Ok(Some(m))
}

/// Imports JSONL, one memory per line (the format is in README.md). Every line is validated
/// first and every bad line named; one bad line and nothing is written. Then chunks of
/// [`CHUNK`] lines commit one transaction each. Ids already present are skipped (never
/// overwritten); trivial lines are reported, not stored.
///
/// Built for large files: lines are checked on every core, a second thread
/// computes each chunk's signatures and vectors while the writer stores the chunk before it,
/// and WAL checkpoints run on a thread of their own, so the writer only runs SQL.
pub fn import(conn: &mut Connection, input: impl BufRead, opts: &ImportOptions) -> Result<ImportReport> {
    let s = Settings::load(conn)?;
    let mut items = Vec::new();
    let mut report = ImportReport { dry_run: opts.dry_run, ..Default::default() };
    let mut errors: Vec<String> = Vec::new();
    let mut bad = 0usize;
    let mut lines: Vec<(usize, String)> = Vec::with_capacity(CHECK_BATCH);
    let mut check = |lines: &mut Vec<(usize, String)>, report: &mut ImportReport| {
        for (n, outcome) in check_lines(std::mem::take(lines), &s, opts.now, report) {
            match outcome {
                Ok(Some(m)) => items.push(m),
                Ok(None) => report.trivial_lines.push(n),
                Err(e) => {
                    bad += 1;
                    if errors.len() < MAX_LISTED_ERRORS {
                        let msg = e.to_string();
                        errors.push(format!("line {n}: {}", msg.strip_prefix("invalid input: ").unwrap_or(&msg)));
                    }
                }
            }
        }
    };
    for (i, line) in input.lines().enumerate() {
        let n = i + 1;
        let line = line.map_err(|e| Error::invalid(format!("line {n}: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        report.read += 1;
        lines.push((n, line));
        if lines.len() == CHECK_BATCH {
            check(&mut lines, &mut report);
        }
    }
    check(&mut lines, &mut report);
    if bad > 0 {
        let more =
            if bad > errors.len() { format!("; and {} more bad lines", bad - errors.len()) } else { String::new() };
        return Err(Error::invalid(format!(
            "{bad} bad line{} (nothing imported): {}{more}",
            if bad == 1 { "" } else { "s" },
            errors.join("; ")
        )));
    }
    // Ids already in the file are skipped (never overwritten) before anything is prepared, so
    // that resuming a large import after a crash costs a lookup per line, not an embedding.
    // The writer looks again inside each chunk's transaction.
    let listed = items.len();
    items = {
        let mut stored = conn.prepare_cached("SELECT 1 FROM memory_item WHERE id = ?1")?;
        let mut fresh = Vec::with_capacity(items.len());
        for m in items {
            if !stored.exists([&m.id])? {
                fresh.push(m);
            }
        }
        fresh
    };
    report.skipped_existing = listed - items.len();
    if opts.dry_run {
        let mut seen: HashSet<&str> = HashSet::with_capacity(items.len());
        for m in &items {
            if seen.insert(m.id.as_str()) {
                report.imported += 1;
            } else {
                report.skipped_existing += 1;
            }
        }
        report.chunks = report.imported.div_ceil(CHUNK);
        return Ok(report);
    }
    // Checkpoints aside only when there is more than one commit to keep them away from.
    let mut checkpoints =
        if items.len() > CHUNK { crate::store::CheckpointsAside::start(conn, CHUNKS_PER_WAL)? } else { None };
    let written = std::thread::scope(|scope| -> Result<()> {
        // One chunk prepared ahead: the writer never waits for the model, and the preparing
        // thread stops as soon as the writer does (an error drops the receiver).
        let (send, prepared) = std::sync::mpsc::sync_channel::<Vec<PreparedRow>>(1);
        let items = &items;
        scope.spawn(move || {
            for chunk in items.chunks(CHUNK) {
                if send.send(prepare_chunk(chunk)).is_err() {
                    break;
                }
            }
        });
        for rows in prepared {
            let (imported, skipped) = write_tx(conn, |tx| import_chunk(tx, &rows))?;
            report.imported += imported;
            report.skipped_existing += skipped;
            report.chunks += 1;
            if let Some(c) = &mut checkpoints {
                c.committed();
            }
        }
        Ok(())
    });
    if let Some(c) = checkpoints {
        c.finish(conn)?;
    }
    written?;
    Ok(report)
}

/// Chunks between two waits of the writer for the checkpoint thread: about 16 × 4 MB of WAL
/// at most (a chunk of 1,000 memories writes 2–4 MB of pages).
const CHUNKS_PER_WAL: usize = 64;

/// Lines checked together, split over the cores; the lines of one batch are all that is held
/// as text at a time.
const CHECK_BATCH: usize = 16_384;

/// Below this many lines a batch is checked on the calling thread; above, in parts of this
/// many lines.
const CHECK_ALONE: usize = 512;

/// Parses and checks a batch of lines on every core (in contiguous parts put back together in
/// line order), adding each part's counts to `report`.
fn check_lines(
    lines: Vec<(usize, String)>,
    s: &Settings,
    now: time::Instant,
    report: &mut ImportReport,
) -> Vec<(usize, Result<Option<Memory>>)> {
    let check_part = |part: &[(usize, String)]| {
        let mut counts = ImportReport::default();
        let outcomes: Vec<_> = part
            .iter()
            .map(|(n, line)| {
                let outcome = serde_json::from_str::<ImportLine>(line)
                    .map_err(|e| Error::invalid(e.to_string()))
                    .and_then(|l| memory_of(l, s, now, &mut counts));
                (*n, outcome)
            })
            .collect();
        (outcomes, counts)
    };
    let parts: Vec<_> = if lines.len() < CHECK_ALONE {
        vec![check_part(&lines)]
    } else {
        use rayon::prelude::*;
        lines.par_chunks(CHECK_ALONE).map(check_part).collect()
    };
    let mut all = Vec::with_capacity(lines.len());
    for (outcomes, counts) in parts {
        report.generated_ids += counts.generated_ids;
        report.quarantined += counts.quarantined;
        report.redacted_spans += counts.redacted_spans;
        report.redacted_memories += counts.redacted_memories;
        report.pii_tagged_memories += counts.pii_tagged_memories;
        all.extend(outcomes);
    }
    all
}

/// A memory's values for the three INSERTs, computed off the writer.
struct PreparedRow {
    id: String,
    row: [Value; COLS],
    signature: [Value; 3],
    vector: Option<[Value; 3]>,
}

/// A memory of a local file on its way into a team store (`lethe push`): the checks, the
/// secrets guard and the date rules of [`import`] (no future date; quarantined as of now),
/// as if the file had been exported and imported. Ok(None): trivial, not stored.
pub(crate) fn checked_for_push(
    m: &Memory,
    s: &Settings,
    now: time::Instant,
    report: &mut ImportReport,
) -> Result<Option<Memory>> {
    let named = |e: Error| match e {
        Error::Invalid(msg) => Error::invalid(format!("memory {} of the file: {msg}", m.id)),
        other => other,
    };
    let line: ImportLine = serde_json::from_value(serde_json::to_value(m)?)
        .map_err(|e| Error::invalid(format!("memory {} of the file: {e}", m.id)))?;
    memory_of(line, s, now, report).map_err(named)
}

/// The values of a memory in [`MEMORY_COLUMNS`]' order.
pub(crate) fn memory_values(m: &Memory) -> Vec<Value> {
    let json =
        |v: &Option<serde_json::Value>| -> Value { v.as_ref().map_or(Value::Null, |v| Value::Text(v.to_string())) };
    let text = |v: &Option<String>| -> Value { v.clone().map_or(Value::Null, Value::Text) };
    vec![
        Value::Text(m.id.clone()),
        Value::Text(m.tier.as_str().to_string()),
        Value::Text(m.content.clone()),
        Value::Real(m.importance),
        Value::Text(m.privacy_scope.clone()),
        Value::Text(m.created_at.clone()),
        text(&m.last_accessed),
        Value::Integer(m.pinned as i64),
        Value::Text(serde_json::to_string(&m.tags).unwrap_or_else(|_| "[]".into())),
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
    ]
}

/// Signatures and vectors of a chunk (the model spreads its part over the cores), and every
/// value the writer binds.
fn prepare_chunk(chunk: &[Memory]) -> Vec<PreparedRow> {
    let vectors: Option<(String, Vec<crate::embed::Vector>)> = crate::embed::shared().map(|e| {
        let texts: Vec<String> = chunk.iter().map(|m| m.content.clone()).collect();
        (e.fingerprint().to_string(), e.embed_many(&texts))
    });
    chunk
        .iter()
        .enumerate()
        .map(|(i, m)| PreparedRow {
            id: m.id.clone(),
            row: memory_values(m).try_into().expect("one value per memory column"),
            signature: [
                Value::Text(m.id.clone()),
                Value::Text(dedup::content_hash(&m.content)),
                Value::Blob(dedup::band_keys(&m.content)),
            ],
            vector: vectors.as_ref().map(|(fingerprint, vs)| {
                [Value::Text(m.id.clone()), Value::Text(fingerprint.clone()), Value::Blob(vs[i].to_bytes())]
            }),
        })
        .collect()
}

/// Columns per memory row in the multi-row INSERT.
const COLS: usize = 25;

/// `INSERT … VALUES (?, …), (?, …), …` for `rows` rows of `cols` values.
pub fn multi_row_sql(head: &str, rows: usize, cols: usize) -> String {
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
/// skipped; the new rows go in with one multi-row INSERT, their signatures and vectors with
/// one each. One statement per chunk rather than per row matters: FTS5 flushes its pending
/// index data to a new segment at every statement savepoint, so a statement per row wrote one
/// FTS segment per row and then merged them (measured: ~12× slower imports, BENCHMARKS.md).
fn import_chunk(tx: &Transaction, chunk: &[PreparedRow]) -> Result<(usize, usize)> {
    let mut exists = tx.prepare_cached("SELECT 1 FROM memory_item WHERE id = ?1")?;
    let mut seen: HashSet<&str> = HashSet::with_capacity(chunk.len());
    let mut new: Vec<&PreparedRow> = Vec::with_capacity(chunk.len());
    for r in chunk {
        let stored = exists.query_row([&r.id], |_| Ok(())).optional()?.is_some();
        if !stored && seen.insert(r.id.as_str()) {
            new.push(r);
        }
    }
    let skipped = chunk.len() - new.len();
    if new.is_empty() {
        return Ok((0, skipped));
    }
    let n = if tx.is_postgres() {
        // The team store's function checks every row as the engine does and stamps the role
        // (Lethe's roles hold no INSERT right on memory_item there).
        let rows: Vec<&[Value]> = new.iter().map(|r| &r.row[..]).collect();
        crate::ops::rows::insert_memories_on_server(tx, &rows, None, "", chrono::Utc::now())?.len()
    } else {
        tx.prepare_cached(&multi_row_sql(
            &format!("INSERT OR IGNORE INTO memory_item ({MEMORY_COLUMNS})"),
            new.len(),
            COLS,
        ))?
        .execute(params_from_iter(new.iter().flat_map(|r| r.row.iter())))?
    };
    if n != new.len() {
        return Err(Error::invalid(format!("import: {} of {} rows were stored", n, new.len())));
    }
    // Vectors in the same transaction (prepared with the chunk when the model is present).
    let vectors: Vec<&[Value; 3]> = new.iter().filter_map(|r| r.vector.as_ref()).collect();
    if tx.is_postgres() {
        // The team store's functions check each row (Lethe's roles hold no write right there).
        crate::storage::postgres::store_derived(tx, "lethe_signatures_store", new.iter().map(|r| &r.signature[..]))?;
        crate::storage::postgres::store_derived(tx, "lethe_vectors_store", vectors.iter().map(|v| &v[..]))?;
        return Ok((new.len(), skipped));
    }
    tx.prepare_cached(&multi_row_sql(
        "INSERT OR REPLACE INTO lethe_signature (memory_id, content_hash, bands)",
        new.len(),
        3,
    ))?
    .execute(params_from_iter(new.iter().flat_map(|r| r.signature.iter())))?;
    if !vectors.is_empty() {
        tx.prepare_cached(&multi_row_sql(
            "INSERT OR REPLACE INTO lethe_vector (memory_id, model, vec)",
            vectors.len(),
            3,
        ))?
        .execute(params_from_iter(vectors.into_iter().flatten()))?;
    }
    Ok((new.len(), skipped))
}
