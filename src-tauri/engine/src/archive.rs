//! Reversible archive of bulky tool observations (DESIGN §8, seed 004): the content is
//! replaced in place by a one-line memo and the original bytes are kept with their SHA-256.

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::audit;
use crate::error::{Error, Result};
use crate::lifecycle;
use crate::model::{self, Memory};
use crate::store::write_tx;
use crate::time::{self, Instant};

#[derive(Debug, Clone, PartialEq, Serialize)]
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
    Ok(conn
        .prepare_cached("SELECT archive_no FROM lethe_archive WHERE memory_id = ?1 AND restored_at IS NULL")?
        .query_row([memory_id], |r| r.get(0))
        .optional()?)
}

pub fn archive(
    conn: &mut Connection,
    memory_id: &str,
    memo: &str,
    actor: &str,
    now: Instant,
) -> Result<ArchiveReceipt> {
    model::validate_actor(actor)?;
    // The memo is new text in the row, the index and the audit: it goes through the guard.
    let settings = crate::Settings::load(conn)?;
    let mut g = crate::redact::Guard::new(crate::redact::Policy::of(&settings));
    let memo = &g.text("memo", memo)?;
    let redacted: Vec<crate::redact::Finding> = g.findings.iter().filter(|f| f.action == "redacted").cloned().collect();
    let memo_line = memo.split_whitespace().collect::<Vec<_>>().join(" ");
    if memo_line.is_empty() || memo_line.len() > 500 {
        return Err(Error::invalid("memo must be 1–500 bytes of text"));
    }
    write_tx(conn, |tx| {
        let m = lifecycle::get_tx(tx, memory_id)?;
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
        tx.execute(
            "INSERT INTO lethe_archive (memory_id, memo, original, sha256, bytes, actor, archived_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![memory_id, memo_line, original, sha, original.len() as i64, actor, time::format(now)],
        )?;
        let no = tx.last_insert_rowid();
        let placeholder = format!("[Archive#{no}: {memo_line}]");
        tx.execute("UPDATE memory_item SET content = ?2 WHERE id = ?1", params![memory_id, placeholder])?;
        crate::dedup::store_signature(tx, memory_id, &placeholder)?;
        crate::semantic::refresh(tx, memory_id, &placeholder)?;
        let receipt = ArchiveReceipt {
            archive_no: no,
            memory_id: memory_id.to_string(),
            bytes: original.len() as i64,
            sha256: sha.clone(),
            bytes_saved: original.len() as i64 - placeholder.len() as i64,
            memo: placeholder,
            redacted: redacted.clone(),
        };
        audit::record_action(tx, Some(memory_id), "archive", actor, None, Some(&serde_json::to_value(&receipt)?), now)?;
        Ok(receipt)
    })
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
        tx.execute("UPDATE memory_item SET content = ?2 WHERE id = ?1", params![memory_id, text])?;
        crate::dedup::store_signature(tx, &memory_id, &text)?;
        crate::semantic::refresh(tx, &memory_id, &text)?;
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
        lifecycle::get_tx(tx, &memory_id)
    })
}
