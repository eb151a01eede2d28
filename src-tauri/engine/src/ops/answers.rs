//! The answers that are more than one engine call's value, or one of several shapes: built
//! here once; the CLI prints them and MCP returns them, its output schemas generated from
//! these types (`score`, `stats`, `remember`, `meta`, `archive`, `unarchive`, `feedback`,
//! `similar`).

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::collections::HashMap;

use serde::Serialize;

use crate::archive::{ArchiveReceipt, SpanRead};
use crate::decay::{Components, Features};
use crate::error::Result;
use crate::forgetting::{self, Snapshot, Stats};
use crate::lifecycle::RememberOutcome;
use crate::meta::{MetaOverview, MetaStats};
use crate::model::Memory;
use crate::settings::Settings;
use crate::storage::db::Connection;
use crate::store::Mistyped;
use crate::time::Instant;

/// One memory's ForgetScore, explained, as `lethe score` answers it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoreItem {
    pub id: String,
    pub features: Features,
    pub components: Components,
    pub forget_score: f64,
    pub reasons: Vec<String>,
    pub would_forget: bool,
}

/// `lethe score`: the asked memories' ForgetScores, in the order asked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoreAnswer {
    pub items: Vec<ScoreItem>,
}

/// More than this many memories asked are scored all at once (one pass over the similar
/// pairs); fewer one at a time.
const SCORE_ALL_AT_ONCE: usize = 8;

/// The ForgetScores of `ids` (every active memory when `ids` is empty) from `snap`; a memory
/// the snapshot does not hold (written since) is scored from the store.
pub fn score(conn: &Connection, snap: &Snapshot, s: &Settings, ids: &[String], now: Instant) -> Result<ScoreAnswer> {
    let ids: Vec<String> = if ids.is_empty() {
        snap.rows.iter().filter(|r| !r.is_deleted).map(|r| r.id.clone()).collect()
    } else {
        ids.to_vec()
    };
    let all_scores = (ids.len() > SCORE_ALL_AT_ONCE).then(|| snap.forget_scores(s, now));
    let at: HashMap<&str, usize> = snap.rows.iter().enumerate().map(|(i, r)| (r.id.as_str(), i)).collect();
    let mut items = Vec::with_capacity(ids.len());
    for id in ids {
        let found = match (at.get(id.as_str()), &all_scores) {
            (Some(&i), Some(all)) => Some(all[i].clone()),
            (Some(_), None) => snap.score_of(&id, s, now),
            (None, _) => None,
        };
        let f = match found {
            Some(f) => f,
            None => forgetting::score_one(conn, &id, s, now)?,
        };
        items.push(ScoreItem {
            id,
            features: f.features,
            components: f.components,
            forget_score: f.forget_score,
            reasons: f.reasons,
            would_forget: f.would_forget,
        });
    }
    Ok(ScoreAnswer { items })
}

/// `lethe stats` and MCP's `memory_stats`: the counts, how recall finds memories, and the
/// rows another program stored with values of the wrong type (when there are any).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StatsAnswer {
    #[serde(flatten)]
    pub stats: Stats,
    /// "semantic + lexical (model)" or "lexical recall only: why".
    pub recall_mode: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mistyped: Vec<Mistyped>,
}

/// The [`StatsAnswer`] of the store `snap` was read from.
pub fn stats(conn: &Connection, snap: &Snapshot, s: &Settings, now: Instant) -> Result<StatsAnswer> {
    Ok(StatsAnswer {
        stats: forgetting::stats(conn, snap, s, now)?,
        recall_mode: crate::embed::status(),
        mistyped: snap.mistyped.clone(),
    })
}

/// MCP's `feedback`: whether the memory helped as reported, and its cites now.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FeedbackAnswer {
    pub memory_id: String,
    /// As reported.
    pub helpful: bool,
    /// Its cites now (a helpful memory's feedback counts as a cite).
    pub cite_count: i64,
}

/// A memory helped (a cite, which keeps it from decaying) or did not (nothing is written).
pub fn feedback(conn: &mut Connection, id: &str, helpful: bool, actor: &str, now: Instant) -> Result<FeedbackAnswer> {
    // The count the cite wrote, read in its transaction (not the explained detail, which
    // cost a cite ten times its write at 100k).
    let m = if helpful { crate::lifecycle::cite(conn, id, actor, now)? } else { crate::lifecycle::get(conn, id)? };
    Ok(FeedbackAnswer { memory_id: m.id, helpful, cite_count: m.cite_count })
}

/// `lethe meta` and MCP's `get_meta_memory_stats`: one memory's recall statistics, the
/// summary over the memories recall finds for a topic, or over every active memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum MetaAnswer {
    One(MetaStats),
    Topic {
        /// The topic.
        query: String,
        #[serde(flatten)]
        overview: MetaOverview,
    },
    All(MetaOverview),
}

/// `lethe archive` and MCP's `archive_observation`: one receipt, or one per observation of
/// a batch.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum ArchiveAnswer {
    One(ArchiveReceipt),
    Many {
        /// One receipt per observation, in order.
        items: Vec<ArchiveReceipt>,
    },
}

/// `lethe unarchive` and MCP's `restore_archive`: the memory with its bytes put back, or a
/// span of them read without restoring.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
// Built once per call and serialised at once: boxing the memory would save nothing.
#[allow(clippy::large_enum_variant)]
pub enum UnarchiveAnswer {
    Restored(Memory),
    Span(SpanRead),
}

/// `remember`'s answer: a new memory stored (or why not), or a procedure's compare-and-swap
/// update.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum RememberAnswer {
    Remembered(RememberOutcome),
    Updated(crate::procedural::Updated),
}

/// MCP's `similar`: the nearest active memories, nearest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SimilarAnswer {
    pub items: Vec<crate::semantic::Similar>,
}
