//! Sessions: ending one, and the overview of all.

use std::path::PathBuf;

use lethe_engine::Result;
use serde_json::Value;

use super::{read_text, to_json, Ctx};

/// `lethe end-session`: its working memories become task logs; the rules of `--rules`
/// (JSONL) become semantic memories.
pub(super) fn end(cx: &mut Ctx, session: &str, task_kind: &str, rules: &Option<PathBuf>) -> Result<Value> {
    let rules = match rules {
        None => Vec::new(),
        Some(f) => lethe_engine::session::parse_rules_jsonl(&read_text(f)?)?,
    };
    to_json(&lethe_engine::session::end_session(cx.conn, session, task_kind, &rules, cx.actor, cx.now)?)
}

/// `lethe sessions`.
pub(super) fn overview(cx: &mut Ctx, limit: usize) -> Result<Value> {
    to_json(&lethe_engine::session::overview(cx.conn, limit)?)
}
