//! Tool observations: archived behind a memo, and their bytes put back or read.

use std::path::PathBuf;

use lethe_engine::ops::answers;
use lethe_engine::{archive, Error, Result};
use serde_json::Value;

use super::{read_text, to_json, Ctx};

/// `lethe archive`: one receipt for one ID and `--memo`, else `{items: [receipt…]}`.
pub(super) fn archive(
    cx: &mut Ctx,
    ids: &[String],
    memo: &Option<String>,
    memo_file: &Option<PathBuf>,
) -> Result<Value> {
    let memos = archive_memos(ids.len(), memo, memo_file)?;
    let items: Vec<(String, String)> = ids.iter().cloned().zip(memos).collect();
    let receipts = archive::archive_batch(cx.conn, &items, cx.actor, cx.now)?;
    let answer = if ids.len() == 1 && memo_file.is_none() {
        answers::ArchiveAnswer::One(receipts.into_iter().next().expect("one receipt per ID"))
    } else {
        answers::ArchiveAnswer::Many { items: receipts }
    };
    to_json(&answer)
}

/// `lethe unarchive`: the bytes put back, or with `--lines`/`--bytes` a span read and nothing
/// restored.
pub(super) fn unarchive(
    cx: &mut Ctx,
    archive_no: i64,
    lines: &Option<String>,
    bytes: &Option<String>,
) -> Result<Value> {
    match (lines, bytes) {
        (None, None) => {
            to_json(&answers::UnarchiveAnswer::Restored(archive::unarchive(cx.conn, archive_no, cx.actor, cx.now)?))
        }
        (Some(l), None) => span(cx, archive_no, archive::Span::parse("lines", l)?),
        (None, Some(b)) => span(cx, archive_no, archive::Span::parse("bytes", b)?),
        (Some(_), Some(_)) => Err(Error::invalid("give --lines or --bytes, not both")),
    }
}

fn span(cx: &mut Ctx, archive_no: i64, span: archive::Span) -> Result<Value> {
    to_json(&answers::UnarchiveAnswer::Span(archive::read_span(cx.conn, archive_no, span)?))
}

/// The memos of `lethe archive`: `--memo` for all, or `--memo-file` (a JSON array with one memo
/// per ID, or any other text as the memo of all).
fn archive_memos(n: usize, memo: &Option<String>, memo_file: &Option<PathBuf>) -> Result<Vec<String>> {
    match (memo, memo_file) {
        (Some(m), None) => Ok(vec![m.clone(); n]),
        (None, Some(f)) => {
            let text = read_text(f)?;
            if text.trim_start().starts_with('[') {
                let memos: Vec<String> = serde_json::from_str(&text).map_err(|e| {
                    Error::invalid(format!(
                        "{}: a memo file starting with [ must be a JSON array of strings: {e}",
                        f.display()
                    ))
                })?;
                if memos.len() != n {
                    return Err(Error::invalid(format!(
                        "{} holds {} memos for {n} IDs; give one per ID, in the same order",
                        f.display(),
                        memos.len()
                    )));
                }
                Ok(memos)
            } else {
                Ok(vec![text; n])
            }
        }
        (Some(_), Some(_)) => Err(Error::invalid("give --memo or --memo-file, not both")),
        (None, None) => Err(Error::invalid("--memo or --memo-file is required")),
    }
}
