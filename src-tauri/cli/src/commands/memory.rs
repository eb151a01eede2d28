//! One memory at a time: store, read, list, change and delete.

use lethe_engine::lifecycle::{self, ListQuery, NewMemory, ProcedureFields};
use lethe_engine::ops::answers;
use lethe_engine::{forgetting, procedural, time, Error, Result, Settings, Tier};
use serde_json::{json, Value};

use super::forget::{scoring_snapshot, with_mistyped};
use super::{parse_json_arg, read_text, split_list, to_json, Ctx, ListArgs, RememberArgs};

/// `lethe remember`: a new memory, or a procedure's compare-and-swap update.
pub(super) fn remember(cx: &mut Ctx, a: &RememberArgs) -> Result<Value> {
    let content = match (&a.content, &a.content_file) {
        (Some(c), None) => c.clone(),
        (None, Some(f)) => read_text(f)?,
        (Some(_), Some(_)) => return Err(Error::invalid("give --content or --content-file, not both")),
        // A procedure's update may change its steps alone: its text then follows them.
        (None, None) if a.memory_id.is_some() => String::new(),
        (None, None) => return Err(Error::invalid("--content or --content-file is required")),
    };
    let content_given = a.content.is_some() || a.content_file.is_some();
    let tier: Tier = a.tier.as_deref().ok_or_else(|| Error::invalid("--type is required"))?.parse()?;
    let m = NewMemory {
        tier,
        content,
        importance: a.importance,
        tags: split_list(&a.tags),
        source: a.source.clone(),
        pinned: a.pinned,
        privacy_scope: None,
        owner_id: Some(cx.actor.to_string()),
        session_id: a.session.clone(),
        project_id: a.project.clone(),
        created_at: a.created_at.as_deref().map(time::parse).transpose()?,
        procedure: ProcedureFields {
            task_goal: a.task_goal.clone(),
            steps: parse_json_arg("steps", &a.steps)?,
            trigger_conditions: parse_json_arg("trigger-conditions", &a.trigger_conditions)?,
            workflow_name: a.workflow_name.clone(),
            skill_name: a.skill_name.clone(),
        },
        supersedes: split_list(&a.supersedes),
    };
    if a.memory_id.is_some() || a.expected_version.is_some() {
        let (Some(id), Some(v)) = (&a.memory_id, a.expected_version) else {
            return Err(Error::invalid("--memory-id and --expected-version go together"));
        };
        let patch = procedural::ProcedurePatch { content: content_given.then_some(m.content), fields: m.procedure };
        let updated = procedural::update_answer(cx.conn, id, v, &patch, cx.actor, cx.now)?;
        return to_json(&answers::RememberAnswer::Updated(updated));
    }
    to_json(&answers::RememberAnswer::Remembered(lifecycle::remember(cx.conn, &m, cx.actor, cx.now)?))
}

/// `lethe show`: one memory with its explained ForgetScore.
pub(super) fn show(cx: &mut Ctx, id: &str) -> Result<Value> {
    to_json(&lethe_engine::detail(cx.conn, id, cx.now, None)?)
}

/// `lethe list`: a page of memories with their scores.
pub(super) fn list(cx: &mut Ctx, a: &ListArgs) -> Result<Value> {
    let q = ListQuery {
        tier: a.tier.as_deref().map(str::parse).transpose()?,
        deleted: Some(a.deleted),
        pinned: a.pinned.then_some(true),
        sort: a.sort.parse()?,
        min_score: None,
        max_score: None,
        session: a.session.clone(),
        project: a.project.clone(),
        redacted: a.redacted.then_some(true),
        needs_extraction: a.needs_extraction.then_some(true),
        written_by: a.written_by.clone(),
        source: None,
        only: None,
        limit: a.limit,
        offset: a.offset,
    };
    let s = Settings::load(cx.conn)?;
    let snap = scoring_snapshot(cx)?;
    let mut v = to_json(&forgetting::list(cx.conn, &snap, &q, &s, cx.now)?)?;
    with_mistyped(&snap, &mut v)?;
    Ok(v)
}

/// `lethe delete`: into quarantine, or for ever with `--hard --confirm`.
pub(super) fn delete(cx: &mut Ctx, id: &str, reason: Option<&str>, hard: bool, confirm: bool) -> Result<Value> {
    if hard {
        to_json(&lifecycle::hard_delete(cx.conn, id, confirm, reason, cx.actor, cx.now)?)
    } else {
        to_json(&lifecycle::soft_delete(cx.conn, id, reason, cx.actor, cx.now)?)
    }
}

/// `lethe restore`: back from quarantine; answers the memory as `show` does.
pub(super) fn restore(cx: &mut Ctx, id: &str) -> Result<Value> {
    lifecycle::restore(cx.conn, id, cx.actor, cx.now)?;
    show(cx, id)
}

/// `lethe pin`.
pub(super) fn pin(cx: &mut Ctx, id: &str) -> Result<Value> {
    lifecycle::pin(cx.conn, id, cx.actor, cx.now)?;
    show(cx, id)
}

/// `lethe unpin`.
pub(super) fn unpin(cx: &mut Ctx, id: &str) -> Result<Value> {
    lifecycle::unpin(cx.conn, id, cx.actor, cx.now)?;
    show(cx, id)
}

/// `lethe importance`.
pub(super) fn importance(cx: &mut Ctx, id: &str, value: f64) -> Result<Value> {
    lifecycle::set_importance(cx.conn, id, value, cx.actor, cx.now)?;
    show(cx, id)
}

/// `lethe cite`: an agent used the memory.
pub(super) fn cite(cx: &mut Ctx, id: &str) -> Result<Value> {
    lifecycle::cite(cx.conn, id, cx.actor, cx.now)?;
    show(cx, id)
}

/// `lethe edit`: a new version of the content.
pub(super) fn edit(cx: &mut Ctx, id: &str, content: &str, expected_version: Option<i64>) -> Result<Value> {
    to_json(&lethe_engine::edit(cx.conn, id, content, expected_version, cx.actor, cx.now)?)
}

/// `lethe similar`: the nearest active memories.
pub(super) fn similar(cx: &mut Ctx, id: &str, limit: usize) -> Result<Value> {
    Ok(json!({
        "items": lethe_engine::semantic::similar(cx.conn, id, limit)?,
        "recall_mode": lethe_engine::embed::status(),
        "judgment": lethe_engine::sameness::judgment(),
    }))
}
