//! The policy's side: scores, the forgetting batch and its runs, the quarantine, the audit,
//! the duplicates review, the health lists and the counts.

use std::mem::ManuallyDrop;

use lethe_engine::ops::answers;
use lethe_engine::{audit, forgetting, store, Result, Settings};
use serde_json::{json, Value};

use super::{to_json, Ctx, DuplicatesAction};

/// `lethe score`: the ForgetScores of `ids`, or of every active memory with `--all`.
pub(super) fn score(cx: &mut Ctx, ids: &[String], all: bool) -> Result<Value> {
    let snap = scoring_snapshot(cx)?;
    let ids: &[String] = if all { &[] } else { ids };
    to_json(&answers::score(cx.conn, &snap, &Settings::load(cx.conn)?, ids, cx.now)?)
}

/// `lethe forget --undo RUN`.
pub(super) fn undo(cx: &mut Ctx, run: &str) -> Result<Value> {
    to_json(&lethe_engine::runs::undo(cx.conn, run, cx.actor, cx.now)?)
}

/// `lethe forget`: one policy batch (or what it would do, with `--dry-run`).
pub(super) fn batch(cx: &mut Ctx, dry_run: bool) -> Result<Value> {
    let mut opts = forgetting::BatchOptions::new(cx.now, dry_run);
    opts.keep_derived = !cx.read_only;
    to_json(&forgetting::run_batch(cx.conn, &opts)?)
}

/// `lethe quarantine`.
pub(super) fn quarantine(cx: &mut Ctx) -> Result<Value> {
    let s = Settings::load(cx.conn)?;
    Ok(json!({ "items": forgetting::quarantine(cx.conn, &s, cx.now)? }))
}

/// `lethe events --runs`: the forget runs, newest first.
pub(super) fn runs(cx: &mut Ctx, limit: usize) -> Result<Value> {
    Ok(json!({ "items": lethe_engine::runs::list(cx.conn, limit)? }))
}

/// `lethe events`: the audit log, newest first.
pub(super) fn events(
    cx: &mut Ctx,
    memory: &Option<String>,
    action: &Option<String>,
    by_actor: &Option<String>,
    limit: usize,
) -> Result<Value> {
    let f = audit::EventFilter { memory_id: memory.clone(), action: action.clone(), actor: by_actor.clone(), limit };
    Ok(json!({ "items": audit::list_events(cx.conn, &f)? }))
}

/// `lethe stats`.
pub(super) fn stats(cx: &mut Ctx) -> Result<Value> {
    let snap = scoring_snapshot(cx)?;
    to_json(&answers::stats(cx.conn, &snap, &Settings::load(cx.conn)?, cx.now)?)
}

/// `lethe duplicates`: the review's clusters, or one decision on a pair.
pub(super) fn duplicates(cx: &mut Ctx, action: &Option<DuplicatesAction>, limit: usize) -> Result<Value> {
    match action {
        None => {
            let snap = scoring_snapshot(cx)?;
            let mut v = to_json(&lethe_engine::duplicates::clusters(
                cx.conn,
                &snap,
                &Settings::load(cx.conn)?,
                cx.now,
                limit,
            )?)?;
            v["judgment"] = json!(lethe_engine::sameness::judgment());
            Ok(v)
        }
        Some(DuplicatesAction::Dismiss { a, b }) => {
            to_json(&lethe_engine::duplicates::dismiss(cx.conn, a, b, cx.actor, cx.now)?)
        }
        Some(DuplicatesAction::Supersede { a, b }) => {
            to_json(&lethe_engine::duplicates::supersede(cx.conn, a, b, cx.actor, cx.now)?)
        }
    }
}

/// `lethe health`.
pub(super) fn health(cx: &mut Ctx) -> Result<Value> {
    let snap = scoring_snapshot(cx)?;
    to_json(&lethe_engine::health::health(cx.conn, &snap, &Settings::load(cx.conn)?, cx.now)?)
}

/// Names the memories holding a value of the wrong type (read leniently, not fatal), as
/// `mistyped: [{id, column, found}]` when there are any.
pub(super) fn with_mistyped(snap: &forgetting::Snapshot, v: &mut Value) -> Result<()> {
    if !snap.mistyped.is_empty() {
        v["mistyped"] = to_json(&snap.mistyped)?;
    }
    Ok(())
}

/// After an import or a push: the signatures and neighbour lists of what was written are
/// searched and stored now, so that the first read (`stats`, `list`, the window) finds them
/// instead of searching them itself. Progress goes to stderr as JSON lines
/// (`{"progress":{"step":"import","stage":"reading"|"similar","done":N,"total":M}}`), about
/// every tenth of a stage.
pub(super) fn keep_derived(conn: &mut store::Connection, step: &str) -> Result<()> {
    let last = std::sync::Mutex::new((None::<forgetting::LoadStage>, 0usize));
    let progress = |stage: forgetting::LoadStage, done: usize, total: usize| {
        let mut last = last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let tenth = (done * 10).checked_div(total).unwrap_or(10);
        if last.0 != Some(stage) || tenth > last.1 {
            *last = (Some(stage), tenth);
            let stage = match stage {
                forgetting::LoadStage::Reading => "reading",
                forgetting::LoadStage::Similar => "similar",
            };
            eprintln!("{}", json!({ "progress": { "step": step, "stage": stage, "done": done, "total": total } }));
        }
    };
    forgetting::Snapshot::load_and_keep_with(
        conn,
        &forgetting::Job { progress: Some(&progress), resumable: true, ..Default::default() },
    )?;
    Ok(())
}

/// The scoring snapshot; what it had to compute because the file lacked it (neighbours of
/// memories written since the last time) is stored, so that it is searched once. It is never
/// dropped: a command ends right after its answer, and freeing a million rows one by one took
/// about 0.1 s of a 1.7 s `lethe stats`; the process's end returns the memory at once.
pub(super) fn scoring_snapshot(cx: &mut Ctx) -> Result<ManuallyDrop<forgetting::Snapshot>> {
    forgetting::Snapshot::load_for(cx.conn, !cx.read_only).map(ManuallyDrop::new)
}
