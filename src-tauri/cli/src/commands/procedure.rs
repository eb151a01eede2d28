//! Procedures: reflection notes, versions, rollback.

use lethe_engine::{procedural, Error, Result};
use serde_json::{json, Value};

use super::{to_json, Ctx};

/// `lethe reflect`: a reflection note (JSON) appended to a procedure.
pub(super) fn reflect(cx: &mut Ctx, id: &str, note: &str, expected_version: Option<i64>) -> Result<Value> {
    let note: Value =
        serde_json::from_str(note).map_err(|e| Error::invalid(format!("--note is not valid JSON: {e}")))?;
    to_json(&procedural::reflect(cx.conn, id, &note, expected_version, cx.actor, cx.now)?)
}

/// `lethe history`: a procedure's versions, or its reflection notes with `--notes`.
pub(super) fn history(cx: &mut Ctx, id: &str, notes: bool) -> Result<Value> {
    if notes {
        Ok(json!({ "items": procedural::notes(cx.conn, id)? }))
    } else {
        Ok(json!({ "items": procedural::history(cx.conn, id)? }))
    }
}

/// `lethe rollback`: a new version from an old snapshot.
pub(super) fn rollback(cx: &mut Ctx, id: &str, to: i64, expected_version: i64) -> Result<Value> {
    to_json(&procedural::rollback_answer(cx.conn, id, to, expected_version, cx.actor, cx.now)?)
}
