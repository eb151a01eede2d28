//! Recall and what it leaves behind: the ranked search, the recall log, the recall
//! statistics.

use lethe_engine::ops::answers;
use lethe_engine::{lifecycle, meta, recall, time, Error, Result};
use serde_json::{json, Value};

use super::{split_list, to_json, Ctx, RecallArgs};

/// `lethe recall`: the ranked answer (explained with `--explain`); its hits go to the recall
/// statistics and the recall log unless the store is read only.
pub(super) fn recall(cx: &mut Ctx, a: &RecallArgs) -> Result<Value> {
    let q = recall::RecallQuery {
        text: a.query.clone(),
        limit: a.limit,
        tier: a.tier.as_deref().map(str::parse).transpose()?,
        session: a.session.clone(),
        project: a.project.clone(),
        workflow: a.workflow.clone(),
        tags: split_list(&a.tags),
        pinned: a.pinned.then_some(true),
        weights: a.weights.as_deref().map(recall::parse_weights).transpose()?,
        task_kind: a.task_kind.clone(),
    };
    if a.explain {
        return to_json(&recall::explain_answer(cx.conn, &q, cx.now, recall::DECLINED)?);
    }
    let answer = recall::answer(cx.conn, &q, cx.now)?;
    if !cx.read_only {
        // A one-shot process has nothing to coalesce with: its hits go out in one
        // transaction of additive upserts, the same path the flusher uses. Stamped
        // with the clock even under --now: the statistics say when the recall really
        // happened.
        let clock = time::format(chrono::Utc::now());
        let deltas = meta::Delta::of_hits(answer.results.iter().map(|h| (h.id.as_str(), h.score)), &clock);
        // The recall log entry goes in the same transaction as the statistics.
        let entry = lethe_engine::recall_log::NewEntry::of(cx.actor, &clock, &q, &answer.results);
        meta::write_batch(cx.conn, &deltas, &[entry])?;
    }
    to_json(&answer)
}

/// `lethe recall-log`.
pub(super) fn log(cx: &mut Ctx, actor: &Option<String>, memory: &Option<String>, limit: usize) -> Result<Value> {
    let f = lethe_engine::recall_log::LogFilter { actor: actor.clone(), memory_id: memory.clone(), limit };
    Ok(json!({ "items": lethe_engine::recall_log::list(cx.conn, &f)? }))
}

/// `lethe meta`: one memory's recall statistics, a topic's, or every active memory's.
pub(super) fn meta(cx: &mut Ctx, id: &Option<String>, query: &Option<String>, limit: usize) -> Result<Value> {
    match (id, query) {
        (Some(id), None) => {
            lifecycle::get(cx.conn, id)?;
            let stats = meta::read_stored(cx.conn, id)?
                .unwrap_or(meta::MetaStats { memory_id: id.clone(), ..Default::default() });
            to_json(&answers::MetaAnswer::One(stats))
        }
        (None, Some(q)) => {
            let ids = recall::topic_ids(cx.conn, q, limit, cx.now)?;
            let overview = meta::overview(cx.conn, Some(&ids), &Default::default())?;
            to_json(&answers::MetaAnswer::Topic { query: q.clone(), overview })
        }
        (None, None) => to_json(&answers::MetaAnswer::All(meta::overview(cx.conn, None, &Default::default())?)),
        (Some(_), Some(_)) => Err(Error::invalid("give an ID or --query, not both")),
    }
}
