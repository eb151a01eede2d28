//! Health lists for the Overview: memories a person should look at, each list
//! bounded (the first [`LIST_LIMIT`] and the total). Computed from the scoring snapshot and
//! one read of the recall statistics, never a query per memory; only the listed memories'
//! previews are read.
//!
//! - `never_recalled`: active, never returned by an agent's recall, older than
//!   [`NEVER_RECALLED_AFTER_DAYS`] — recall has effectively forgotten them. Oldest first.
//! - `forget_soon`: below the forget threshold now, at or above it within [`SOON_DAYS`] days
//!   (the ForgetScore only grows while nothing happens to a memory). Highest score then first.
//! - `pinned_never_recalled`: pinned, so the policy keeps them, yet no agent ever recalled
//!   them. Oldest first.
//! - `low_confidence`: recalled at least [`OFTEN_RECALLED`] times with an average confidence
//!   below [`LOW_CONFIDENCE`] — used a lot, matched poorly. Most recalled first.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::collections::HashMap;

use crate::storage::db::{params, Connection, OptionalExtension};
use serde::Serialize;

use crate::decay;
use crate::error::Result;
use crate::forgetting::Snapshot;
use crate::model::{self, Tier};
use crate::settings::Settings;
use crate::time::{self, Instant};

pub const LIST_LIMIT: usize = 20;
pub const NEVER_RECALLED_AFTER_DAYS: f64 = 30.0;
pub const SOON_DAYS: f64 = 7.0;
pub const OFTEN_RECALLED: i64 = 3;
pub const LOW_CONFIDENCE: f64 = 0.5;

/// One memory of a health list.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct HealthItem {
    pub id: String,
    #[serde(rename = "type")]
    pub tier: Tier,
    pub preview: String,
    pub created_at: String,
    pub age_days: f64,
    pub importance: f64,
    pub pinned: bool,
    pub forget_score: f64,
    pub would_forget: bool,
    pub recall_count: i64,
    pub avg_confidence: Option<f64>,
    /// Days until the ForgetScore reaches the threshold (`forget_soon` only).
    pub crosses_in_days: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct HealthList {
    /// `never_recalled`, `forget_soon`, `pinned_never_recalled` or `low_confidence`.
    pub name: String,
    /// How many memories the list has (items holds at most [`LIST_LIMIT`]).
    pub total: usize,
    pub items: Vec<HealthItem>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Health {
    pub lists: Vec<HealthList>,
}

/// The names of the health lists, in the order [`health`] returns them.
pub const LISTS: [&str; 4] = ["never_recalled", "forget_soon", "pinned_never_recalled", "low_confidence"];

/// Every member of each list, in its order, with the scores they were chosen by.
struct Members {
    stats: HashMap<String, (i64, Option<f64>)>,
    inputs: Vec<decay::ScoreInput>,
    scores: Vec<f64>,
    lists: [Vec<usize>; 4],
}

fn members(conn: &Connection, snap: &Snapshot, s: &Settings, now: Instant) -> Result<Members> {
    let stats = recall_stats(conn)?;
    // One duplication pass for `now` (scores and, for the few listed, the projected date) and
    // one for a week later.
    let inputs = snap.inputs(s, now);
    let scores: Vec<f64> = inputs.iter().map(|m| decay::score_value(m, s, now)).collect();
    let later = snap.scores(s, time::add_days(now, SOON_DAYS));
    let age = |i: usize| time::days_between(snap.rows[i].created_at, now);
    let recalls = |i: usize| stats.get(snap.rows[i].id.as_str()).map_or(0, |x| x.0);
    let active: Vec<usize> = (0..snap.rows.len()).filter(|&i| !snap.rows[i].is_deleted).collect();
    let by_id = |i: &usize, j: &usize| snap.rows[*i].id.cmp(&snap.rows[*j].id);

    let mut never: Vec<usize> =
        active.iter().copied().filter(|&i| recalls(i) == 0 && age(i) > NEVER_RECALLED_AFTER_DAYS).collect();
    never.sort_by(|i, j| age(*j).total_cmp(&age(*i)).then_with(|| by_id(i, j)));

    let mut soon: Vec<usize> = active
        .iter()
        .copied()
        .filter(|&i| !decay::would_forget(scores[i], s) && decay::would_forget(later[i], s))
        .collect();
    soon.sort_by(|i, j| scores[*j].total_cmp(&scores[*i]).then_with(|| by_id(i, j)));

    let mut pinned: Vec<usize> = active.iter().copied().filter(|&i| snap.rows[i].pinned && recalls(i) == 0).collect();
    pinned.sort_by(|i, j| age(*j).total_cmp(&age(*i)).then_with(|| by_id(i, j)));

    let mut shaky: Vec<usize> = active
        .iter()
        .copied()
        .filter(|&i| {
            stats
                .get(snap.rows[i].id.as_str())
                .is_some_and(|&(n, c)| n >= OFTEN_RECALLED && c.is_some_and(|c| c < LOW_CONFIDENCE))
        })
        .collect();
    shaky.sort_by(|i, j| recalls(*j).cmp(&recalls(*i)).then_with(|| by_id(i, j)));
    Ok(Members { stats, inputs, scores, lists: [never, soon, pinned, shaky] })
}

/// A page of one health list's memories as the Memories view lists them (its filters and
/// order apply within the list): where a person goes from "and N more". An unknown list
/// name is invalid input.
pub fn list_page(
    conn: &Connection,
    snap: &Snapshot,
    name: &str,
    q: &crate::forgetting::ListQuery,
    s: &Settings,
    now: Instant,
) -> Result<crate::forgetting::Page> {
    let Some(k) = LISTS.iter().position(|l| *l == name) else {
        return Err(crate::error::Error::invalid(format!(
            "unknown health list {name:?} (expected one of {})",
            LISTS.join(", ")
        )));
    };
    let m = members(conn, snap, s, now)?;
    let only = m.lists[k].iter().map(|&i| snap.rows[i].id.clone()).collect();
    crate::forgetting::list(conn, snap, &crate::forgetting::ListQuery { only: Some(only), ..q.clone() }, s, now)
}

/// The four health lists at `now`.
pub fn health(conn: &Connection, snap: &Snapshot, s: &Settings, now: Instant) -> Result<Health> {
    let Members { stats, inputs, scores, lists } = members(conn, snap, s, now)?;
    let age = |i: usize| time::days_between(snap.rows[i].created_at, now);
    let [never, soon, pinned, shaky] = lists;
    let mut preview = conn.prepare_cached("SELECT content FROM memory_item WHERE rowid = ?1 AND id = ?2")?;
    let mut list = |name: &str, all: Vec<usize>, soon_list: bool| -> Result<HealthList> {
        let mut items = Vec::with_capacity(all.len().min(LIST_LIMIT));
        for &i in all.iter().take(LIST_LIMIT) {
            let r = &snap.rows[i];
            let content: Option<Option<String>> =
                preview.query_row(params![r.rowid, r.id], |q| model::lenient::text(q, 0)).optional()?;
            let stat = stats.get(r.id.as_str());
            let crosses_in_days = if soon_list {
                decay::projected_forget_at(&inputs[i], s, now).map(|at| time::days_between(now, at))
            } else {
                None
            };
            items.push(HealthItem {
                id: r.id.clone(),
                tier: r.tier,
                preview: model::preview(content.flatten().as_deref().unwrap_or(""), 160),
                created_at: time::format(r.created_at),
                age_days: age(i),
                importance: r.importance,
                pinned: r.pinned,
                forget_score: scores[i],
                would_forget: decay::would_forget(scores[i], s),
                recall_count: stat.map_or(0, |x| x.0),
                avg_confidence: stat.and_then(|x| x.1),
                crosses_in_days,
            });
        }
        Ok(HealthList { name: name.to_string(), total: all.len(), items })
    };
    Ok(Health {
        lists: vec![
            list(LISTS[0], never, false)?,
            list(LISTS[1], soon, true)?,
            list(LISTS[2], pinned, false)?,
            list(LISTS[3], shaky, false)?,
        ],
    })
}

/// Recall count and average confidence of every memory recalled at least once.
fn recall_stats(conn: &Connection) -> Result<HashMap<String, (i64, Option<f64>)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT memory_id, recall_count, avg_confidence FROM meta_memory_stats WHERE recall_count > 0",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, (r.get(1)?, r.get(2)?))))?;
    rows.collect::<std::result::Result<_, _>>()
}
