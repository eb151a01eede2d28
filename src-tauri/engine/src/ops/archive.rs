//! Reversible archive of bulky tool observations (docs/lifecycle.md): the content is
//! replaced in place by a one-line memo and the original bytes are kept with their SHA-256.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use crate::storage::db::{params, Connection, OptionalExtension};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::audit;
use crate::error::{Error, Result};
use crate::model::{self, Memory};
use crate::store::write_tx;
use crate::time::{self, Instant};

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ArchiveReceipt {
    pub archive_no: i64,
    pub memory_id: String,
    pub bytes: i64,
    pub sha256: String,
    pub memo: String,
    /// Bytes the content shrank by.
    pub bytes_saved: i64,
    /// Spans of the memo replaced by `[REDACTED:<kind>]` (never the values).
    pub redacted: Vec<crate::redact::Finding>,
}

/// Whether a memory's source marks it as a tool observation (the only archivable kind).
pub fn is_tool_observation(source: Option<&str>) -> bool {
    let Some(s) = source else { return false };
    let s = s.to_ascii_lowercase();
    s == "tool"
        || s.starts_with("tool:")
        || s.starts_with("tool_")
        || s == "observation"
        || s.starts_with("observation:")
        || s == "tool_observation"
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

pub fn is_archived(conn: &Connection, memory_id: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM lethe_archive WHERE memory_id = ?1 AND restored_at IS NULL")?
        .query_row([memory_id], |_| Ok(()))
        .optional()?
        .is_some())
}

pub fn active_archive_no(conn: &Connection, memory_id: &str) -> Result<Option<i64>> {
    conn.prepare_cached("SELECT archive_no FROM lethe_archive WHERE memory_id = ?1 AND restored_at IS NULL")?
        .query_row([memory_id], |r| r.get(0))
        .optional()
}

/// One memo, guarded and reduced to one line, before any transaction opens.
fn prepare_memo(settings: &crate::Settings, memo: &str) -> Result<(String, Vec<crate::redact::Finding>)> {
    // The memo is new text in the row, the index and the audit: it goes through the guard.
    let mut g = crate::redact::Guard::new(crate::redact::Policy::of(settings));
    let memo = &g.text("memo", memo)?;
    let redacted: Vec<crate::redact::Finding> = g.findings.iter().filter(|f| f.action == "redacted").cloned().collect();
    let memo_line = memo.split_whitespace().collect::<Vec<_>>().join(" ");
    if memo_line.is_empty() || memo_line.len() > 500 {
        return Err(Error::invalid("memo must be 1–500 bytes of text"));
    }
    Ok((memo_line, redacted))
}

pub fn archive(
    conn: &mut Connection,
    memory_id: &str,
    memo: &str,
    actor: &str,
    now: Instant,
) -> Result<ArchiveReceipt> {
    let mut out = archive_batch(conn, &[(memory_id.to_string(), memo.to_string())], actor, now)?;
    Ok(out.remove(0))
}

/// At most this many observations in one batch.
pub const MAX_BATCH: usize = 10_000;

/// Archives several observations in one transaction (a batch archival tool): each
/// gets its memo in place; if any one cannot be archived (unknown, protected, in quarantine,
/// already archived, named twice) nothing is written and the error names it.
pub fn archive_batch(
    conn: &mut Connection,
    items: &[(String, String)],
    actor: &str,
    now: Instant,
) -> Result<Vec<ArchiveReceipt>> {
    model::validate_actor(actor)?;
    if items.is_empty() || items.len() > MAX_BATCH {
        return Err(Error::invalid(format!("a batch archives 1–{MAX_BATCH} observations")));
    }
    let settings = crate::Settings::load(conn)?;
    let prepared: Vec<(&str, String, Vec<crate::redact::Finding>)> = items
        .iter()
        .enumerate()
        .map(|(i, (id, memo))| {
            let (line, red) = prepare_memo(&settings, memo).map_err(|e| match e {
                Error::Invalid(m) if items.len() > 1 => Error::invalid(format!("item {i} ({id}): {m}")),
                e => e,
            })?;
            Ok((id.as_str(), line, red))
        })
        .collect::<Result<_>>()?;
    write_tx(conn, |tx| prepared.iter().map(|(id, line, red)| archive_tx(tx, id, line, red, actor, now)).collect())
}

fn archive_tx(
    tx: &crate::storage::db::Transaction,
    memory_id: &str,
    memo_line: &str,
    redacted: &[crate::redact::Finding],
    actor: &str,
    now: Instant,
) -> Result<ArchiveReceipt> {
    let m = crate::ops::rows::get_tx(tx, memory_id)?;
    if !is_tool_observation(m.source.as_deref()) {
        return Err(Error::invalid(format!(
            "protected: memory {memory_id} is not a tool observation (source {:?}); system, user and assistant text cannot be archived",
            m.source.as_deref().unwrap_or("none")
        )));
    }
    if m.is_deleted {
        return Err(Error::invalid(format!("memory {memory_id} is in quarantine")));
    }
    if is_archived(tx, memory_id)? {
        return Err(Error::invalid(format!("memory {memory_id} is already archived")));
    }
    let original = m.content.as_bytes().to_vec();
    let sha = sha256_hex(&original);
    let no: i64 = if tx.is_postgres() {
        // The team store's function reads the original, its SHA-256 and size from the memory
        // and names the role (Lethe's roles hold no INSERT right on archives there).
        crate::ops::rows::server_write(
            tx,
            "SELECT lethe_archive_insert(?1, ?2, ?3, ?4)",
            params![memory_id, memo_line, actor, time::format(now)],
        )?
    } else {
        tx.prepare_cached(
            "INSERT INTO lethe_archive (memory_id, memo, original, sha256, bytes, actor, archived_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
             RETURNING archive_no",
        )?
        .query_row(params![memory_id, memo_line, original, sha, original.len() as i64, actor, time::format(now)], |r| {
            r.get(0)
        })?
    };
    let placeholder = format!("[Archive#{no}: {memo_line}]");
    if tx.is_postgres() {
        // The server checks that the archive row holds the memory's text and that the
        // placeholder is the row's own (Lethe's roles hold no UPDATE right on a memory there).
        // It writes the `archive` action too, its receipt built from the archive row.
        crate::ops::rows::server_write(
            tx,
            "SELECT lethe_memory_archive(?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                no,
                placeholder,
                serde_json::to_string(redacted)?,
                actor,
                crate::actor::via_of(actor),
                time::format(now)
            ],
        )?;
    } else {
        tx.prepare_cached("UPDATE memory_item SET content = ?2 WHERE id = ?1")?
            .execute(params![memory_id, placeholder])?;
    }
    crate::dedup::store_signature(tx, memory_id, &placeholder)?;
    crate::semantic::refresh(tx, memory_id, &placeholder)?;
    let receipt = ArchiveReceipt {
        archive_no: no,
        memory_id: memory_id.to_string(),
        bytes: original.len() as i64,
        sha256: sha.clone(),
        bytes_saved: original.len() as i64 - placeholder.len() as i64,
        memo: placeholder,
        redacted: redacted.to_vec(),
    };
    if !tx.is_postgres() {
        audit::record_action(tx, Some(memory_id), "archive", actor, None, Some(&serde_json::to_value(&receipt)?), now)?;
    }
    Ok(receipt)
}

/// Which part of an archived original to read: `Lines(a, b)` the lines a..=b (1-based, each
/// with its line ending), `Bytes(a, b)` the bytes a..b (0-based, end exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    Lines(usize, usize),
    Bytes(usize, usize),
}

impl Span {
    /// Parses `A:B` for `--lines` or `--bytes`.
    pub fn parse(kind: &str, raw: &str) -> Result<Span> {
        let bad = || Error::invalid(format!("--{kind} must be A:B with whole numbers A ≤ B, got {raw:?}"));
        let (a, b) = raw.split_once(':').ok_or_else(bad)?;
        let a: usize = a.trim().parse().map_err(|_| bad())?;
        let b: usize = b.trim().parse().map_err(|_| bad())?;
        match kind {
            "lines" => Ok(Span::Lines(a, b)),
            "bytes" => Ok(Span::Bytes(a, b)),
            _ => Err(Error::invalid(format!("unknown span kind {kind:?}"))),
        }
    }

    /// The byte range `[start, end)` of this span in `bytes`.
    pub fn range(self, bytes: &[u8]) -> Result<(usize, usize)> {
        match self {
            Span::Bytes(a, b) => {
                if a > b || b > bytes.len() {
                    return Err(Error::invalid(format!(
                        "bytes {a}:{b} lie outside the archived {} bytes (0-based, end exclusive)",
                        bytes.len()
                    )));
                }
                Ok((a, b))
            }
            Span::Lines(a, b) => {
                // Line starts: 0 and every byte after a '\n'.
                let mut starts = vec![0usize];
                starts.extend(bytes.iter().enumerate().filter(|(_, c)| **c == b'\n').map(|(i, _)| i + 1));
                if starts.last() == Some(&bytes.len()) && !bytes.is_empty() {
                    starts.pop();
                }
                let n = if bytes.is_empty() { 0 } else { starts.len() };
                if a == 0 || a > b || b > n {
                    return Err(Error::invalid(format!(
                        "lines {a}:{b} lie outside the archived {n} lines (1-based, both included)"
                    )));
                }
                let end = starts.get(b).copied().unwrap_or(bytes.len());
                Ok((starts[a - 1], end))
            }
        }
    }
}

/// A span of an archived original, read without restoring the memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SpanRead {
    pub archive_no: i64,
    pub memory_id: String,
    /// Byte offsets in the original, `[start, end)`.
    pub start: usize,
    pub end: usize,
    /// SHA-256 of exactly these bytes.
    pub sha256: String,
    pub text: String,
}

/// Reads a span of an archived original (hash of the whole original checked first); the
/// memory keeps its memo, nothing is written.
pub fn read_span(conn: &Connection, archive_no: i64, span: Span) -> Result<SpanRead> {
    let row: Option<(String, Vec<u8>, String)> = conn
        .query_row("SELECT memory_id, original, sha256 FROM lethe_archive WHERE archive_no = ?1", [archive_no], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?;
    let (memory_id, original, sha) = row.ok_or_else(|| Error::NotFound(format!("archive #{archive_no}")))?;
    if sha256_hex(&original) != sha {
        return Err(Error::Integrity(archive_no));
    }
    let (start, end) = span.range(&original)?;
    let slice = &original[start..end];
    let text = std::str::from_utf8(slice)
        .map_err(|_| {
            Error::invalid(format!(
                "bytes {start}:{end} split a UTF-8 character; choose a span on character boundaries"
            ))
        })?
        .to_string();
    Ok(SpanRead { archive_no, memory_id, start, end, sha256: sha256_hex(slice), text })
}

/// Puts back the exact original bytes, after checking their hash.
pub fn unarchive(conn: &mut Connection, archive_no: i64, actor: &str, now: Instant) -> Result<Memory> {
    model::validate_actor(actor)?;
    write_tx(conn, |tx| {
        let row: Option<(String, Vec<u8>, String, Option<String>)> = tx
            .query_row(
                "SELECT memory_id, original, sha256, restored_at FROM lethe_archive WHERE archive_no = ?1",
                [archive_no],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        let (memory_id, original, sha, restored) =
            row.ok_or_else(|| Error::NotFound(format!("archive #{archive_no}")))?;
        if restored.is_some() {
            return Err(Error::invalid(format!("archive #{archive_no} was already restored")));
        }
        if sha256_hex(&original) != sha {
            return Err(Error::Integrity(archive_no));
        }
        let text = String::from_utf8(original).map_err(|_| Error::Integrity(archive_no))?;
        if tx.is_postgres() {
            // The server takes the text from the archive row itself (its SHA-256 checked),
            // marks the row restored at its own clock and writes the `unarchive` action.
            crate::ops::rows::server_write(
                tx,
                "SELECT lethe_memory_unarchive(?1, ?2, ?3, ?4)",
                params![archive_no, actor, crate::actor::via_of(actor), time::format(now)],
            )?;
        } else {
            tx.execute("UPDATE memory_item SET content = ?2 WHERE id = ?1", params![memory_id, text])?;
        }
        crate::dedup::store_signature(tx, &memory_id, &text)?;
        crate::semantic::refresh(tx, &memory_id, &text)?;
        if !tx.is_postgres() {
            tx.execute(
                "UPDATE lethe_archive SET restored_at = ?2 WHERE archive_no = ?1",
                params![archive_no, time::format(now)],
            )?;
            audit::record_action(
                tx,
                Some(&memory_id),
                "unarchive",
                actor,
                None,
                Some(&serde_json::json!({"archive_no": archive_no, "sha256": sha})),
                now,
            )?;
        }
        crate::ops::rows::get_tx(tx, &memory_id)
    })
}
