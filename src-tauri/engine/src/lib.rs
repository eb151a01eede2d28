//! lethe-engine: the whole memory engine of Lethe, without any Tauri or IPC dependency.
//!
//! Pure functions take `now` as an argument; nothing here reads the clock except where a
//! caller passes `chrono::Utc::now()`.
//!
//! The crate's folders are its layers, bottom up:
//! - foundation: `error`, `time`, `model` (the row types), `actor` (who writes);
//! - [`storage`]: the SQLite backend and its watcher;
//! - [`similarity`]: same words, same meaning, neighbour lists;
//! - [`policy`]: settings, decay, forgetting, the redaction guard, the dialogue lint;
//! - [`ops`]: the memory operations people and agents call;
//! - [`io`]: import, export, demo data; `chart`: the plotters charts;
//! - this file: the memory detail and the charts of one memory, built from all of them.
//!
//! Benchmark and test support (workloads, memento fixture files) lives in the
//! `lethe-testkit` crate, not here. The modules are also re-exported at the crate root
//! (`lethe_engine::lifecycle`, `lethe_engine::store`, …): those are the paths the CLI, the
//! app and the tests use.

#![warn(missing_docs)]

pub mod actor;
pub mod chart;
pub mod error;
pub mod io;
pub mod model;
pub mod ops;
pub mod policy;
pub mod similarity;
pub mod storage;
pub mod time;

pub use io::{demo, push, transfer};
pub use ops::{
    archive, audit, duplicates, group_commit, health, lifecycle, meta, pins, procedural, quarantine_view, recall,
    recall_log, runs, scan, session,
};
pub use policy::{decay, dialogue, forgetting, redact, settings};
pub use similarity::{dedup, embed, lexical, neighbours, sameness, semantic};
pub use storage::sqlite as store;
pub use storage::watch;

pub use error::{Error, Result};
pub use model::{Memory, Tier};
pub use settings::Settings;

use crate::storage::db::Connection;
use serde::Serialize;

/// Everything a person needs to judge one memory: its fields, its explained ForgetScore,
/// links, archive state and recall statistics.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct MemoryDetail {
    /// The memory's columns.
    #[serde(flatten)]
    pub memory: Memory,
    /// The memories this one replaced.
    pub supersedes: Vec<String>,
    /// The memories that replaced this one.
    pub superseded_by: Vec<String>,
    /// The archive holding its original, when it is archived.
    pub archive_no: Option<i64>,
    /// Its ForgetScore now, with the features and the reasons.
    #[serde(flatten)]
    pub score: decay::ForgetScore,
    /// Why the policy never forgets it (pinned, a rule), when it does not.
    pub never_forgettable_why: Option<String>,
    /// Its recall statistics.
    pub meta: meta::MetaStats,
    /// The reads-like-dialogue lint, for semantic and procedural memories.
    pub dialogue: Option<dialogue::DialogueLint>,
    /// The task kind when the memory is a task log (an ended session's working memory).
    pub task_kind: Option<String>,
    /// Why it is a duplicate of `duplicate_of`: the values and words both hold (plain text).
    pub duplicate_evidence: Option<sameness::Evidence>,
}

fn links(conn: &Connection, sql: &str, id: &str) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map([id], |r| r.get(0))?;
    rows.collect::<std::result::Result<_, _>>()
}

/// The projected-ForgetScore chart of one memory.
pub fn projection_chart(conn: &Connection, id: &str, now: time::Instant, theme: chart::Theme) -> Result<String> {
    projection_chart_fit(conn, id, now, theme, None)
}

/// [`projection_chart`] drawn at the size the window shows it (`None`: the default size).
pub fn projection_chart_fit(
    conn: &Connection,
    id: &str,
    now: time::Instant,
    theme: chart::Theme,
    fit: Option<chart::Fit>,
) -> Result<String> {
    projection_chart_in(conn, &forgetting::Snapshot::load(conn)?, id, now, theme, fit)
}

/// [`projection_chart_fit`] scored from a snapshot the caller keeps (the window's), so one
/// chart does not load the whole store.
pub fn projection_chart_in(
    conn: &Connection,
    snap: &forgetting::Snapshot,
    id: &str,
    now: time::Instant,
    theme: chart::Theme,
    fit: Option<chart::Fit>,
) -> Result<String> {
    let d = detail_in(conn, snap, id, now, None)?;
    let settings = Settings::load(conn)?;
    let input = input_of(&d.memory, &d.score, d.task_kind.is_some())?;
    let horizon = projection_horizon(&input, &settings, now, d.memory.tier);
    match fit {
        Some(f) => chart::render_projection_fit(&input, &settings, now, horizon, f, theme),
        None => chart::render_projection(&input, &settings, now, horizon, (560, 380), theme),
    }
}

/// Which chart to export (see [`export_chart`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ChartKind {
    /// The decay curves of the tiers over `horizon_days`.
    Decay {
        /// How many days the curves run.
        horizon_days: f64,
    },
    /// One memory's projected ForgetScore.
    Projection {
        /// The memory.
        id: String,
    },
    /// The ForgetScore distribution of the active memories.
    Distribution,
}

/// The ForgetScore distribution chart of the active memories at `now`.
pub fn distribution_chart(
    conn: &Connection,
    snap: &forgetting::Snapshot,
    now: time::Instant,
    theme: chart::Theme,
) -> Result<String> {
    distribution_chart_fit(conn, snap, now, theme, None, None)
}

/// [`distribution_chart`] under `settings` (`None`: the stored policy; a what-if passes its
/// proposal) and at the size the window shows it (`None`: the default size).
pub fn distribution_chart_fit(
    conn: &Connection,
    snap: &forgetting::Snapshot,
    now: time::Instant,
    theme: chart::Theme,
    settings: Option<&Settings>,
    fit: Option<chart::Fit>,
) -> Result<String> {
    let settings = match settings {
        Some(s) => s.clone(),
        None => Settings::load(conn)?,
    };
    let scores = active_scores(snap, &settings, now);
    match fit {
        Some(f) => chart::render_distribution_fit(&scores, &settings, f, theme),
        None => chart::render_distribution(&scores, &settings, (760, 340), theme),
    }
}

fn active_scores(snap: &forgetting::Snapshot, settings: &Settings, now: time::Instant) -> Vec<(Tier, f64)> {
    snap.rows
        .iter()
        .zip(snap.scores(settings, now))
        .filter(|(r, _)| !r.is_deleted)
        .map(|(r, sc)| (r.tier, sc))
        .collect()
}

/// A chart as the bytes of an SVG or PNG file, larger than the window shows it.
pub fn export_chart(
    conn: &Connection,
    snap: &forgetting::Snapshot,
    kind: &ChartKind,
    now: time::Instant,
    theme: chart::Theme,
    format: chart::ChartFormat,
) -> Result<Vec<u8>> {
    let settings = Settings::load(conn)?;
    match kind {
        ChartKind::Decay { horizon_days } => chart::encode(
            &chart::ChartSpec::Decay { settings: &settings, horizon_days: *horizon_days },
            format,
            (1200, 600),
            theme,
        ),
        ChartKind::Distribution => {
            let scores = active_scores(snap, &settings, now);
            chart::encode(
                &chart::ChartSpec::Distribution { scores: &scores, settings: &settings },
                format,
                (1200, 560),
                theme,
            )
        }
        ChartKind::Projection { id } => {
            let d = detail(conn, id, now, None)?;
            let input = input_of(&d.memory, &d.score, d.task_kind.is_some())?;
            let horizon = projection_horizon(&input, &settings, now, d.memory.tier);
            chart::encode(
                &chart::ChartSpec::Projection { input: &input, settings: &settings, now, horizon_days: horizon },
                format,
                (1100, 520),
                theme,
            )
        }
    }
}

fn projection_horizon(input: &decay::ScoreInput, settings: &Settings, now: time::Instant, tier: Tier) -> f64 {
    match decay::projected_forget_at(input, settings, now) {
        Some(at) => (time::days_between(now, at) * 1.5).clamp(30.0, 3650.0),
        None => (settings.half_life_days.get(tier) * 4.0).clamp(30.0, 3650.0),
    }
}

fn input_of(memory: &Memory, score: &decay::ForgetScore, task_log: bool) -> Result<decay::ScoreInput> {
    Ok(decay::ScoreInput {
        tier: memory.tier,
        created_at: time::parse(&memory.created_at)?,
        last_accessed: time::parse_opt(memory.last_accessed.as_deref()),
        views: memory.view_count,
        cites: memory.cite_count,
        edits: memory.edit_count,
        importance: memory.importance,
        pinned: memory.pinned,
        duplication: score.features.duplication,
        duplicate_of: score.duplicate_of.clone(),
        duplicate_kind: match score.duplicate_kind.as_deref() {
            Some("same meaning") => Some(neighbours::kind_name(neighbours::SAME_MEANING)),
            Some(_) => Some(neighbours::kind_name(neighbours::SAME_WORDS)),
            None => None,
        },
        task_log,
    })
}

/// What an edit answers (`lethe edit`): the memory's detail after it, and what the secrets
/// and personal-data guard did to the new content.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct EditAnswer {
    /// The memory after the edit.
    #[serde(flatten)]
    pub detail: MemoryDetail,
    /// Spans of the new content the guard replaced by `[REDACTED:<kind>]` (never the value).
    pub redacted: Vec<redact::Finding>,
    /// `pii:<kind>` tags the `pii = tag` setting added.
    pub pii_tags: Vec<String>,
}

/// [`lifecycle::edit_checked`], answered as [`EditAnswer`].
pub fn edit(
    conn: &mut Connection,
    id: &str,
    content: &str,
    expected_version: Option<i64>,
    actor: &str,
    now: time::Instant,
) -> Result<EditAnswer> {
    let (_, r) = lifecycle::edit_checked(conn, id, content, expected_version, actor, now)?;
    Ok(EditAnswer { detail: detail(conn, id, now, None)?, redacted: r.redacted, pii_tags: r.pii_tags })
}

/// Builds the detail view of one memory at `now` (reads only).
pub fn detail(
    conn: &Connection,
    id: &str,
    now: time::Instant,
    buffer: Option<&meta::MetaBuffer>,
) -> Result<MemoryDetail> {
    // Checked first so that a missing id is "not found" without loading the store.
    lifecycle::get(conn, id)?;
    detail_in(conn, &forgetting::Snapshot::load(conn)?, id, now, buffer)
}

/// [`detail`] scored from a snapshot the caller keeps and that is current (the window's,
/// patched from the change journal), instead of loading one: at 100k memories the load is
/// most of the time of opening one memory.
pub fn detail_in(
    conn: &Connection,
    snap: &forgetting::Snapshot,
    id: &str,
    now: time::Instant,
    buffer: Option<&meta::MetaBuffer>,
) -> Result<MemoryDetail> {
    let memory = lifecycle::get(conn, id)?;
    let settings = Settings::load(conn)?;
    let mut score = forgetting::score_in(conn, snap, id, &settings, now)?;
    // (A memory deleted since the snapshot was read gives no evidence rather than an error.)
    let duplicate_evidence = match &score.duplicate_of {
        Some(other) => lifecycle::get(conn, other)
            .ok()
            .map(|other| sameness::judge_texts(&memory.content, &other.content, None).evidence),
        None => None,
    };
    // The reason says why, too: "duplicate of mem_… (same meaning; same: …)".
    if let (Some(of), Some(ev)) = (&score.duplicate_of, &duplicate_evidence) {
        let why = &ev.summary;
        if !why.is_empty() {
            for r in score.reasons.iter_mut().filter(|r| r.starts_with(&format!("duplicate of {of}"))) {
                match r.strip_suffix(')') {
                    Some(open) => *r = format!("{open}; {why})"),
                    None => *r = format!("{r} ({why})"),
                }
            }
        }
    }
    let task_kind = session::task_kind_of(conn, id)?;
    let input = input_of(&memory, &score, task_kind.is_some())?;
    let meta = match buffer {
        Some(b) => b.read(conn, id)?,
        None => {
            meta::read_stored(conn, id)?.unwrap_or(meta::MetaStats { memory_id: id.to_string(), ..Default::default() })
        }
    };
    Ok(MemoryDetail {
        supersedes: links(conn, "SELECT old_id FROM lethe_supersede WHERE new_id = ?1 ORDER BY created_at", id)?,
        superseded_by: links(conn, "SELECT new_id FROM lethe_supersede WHERE old_id = ?1 ORDER BY created_at", id)?,
        archive_no: archive::active_archive_no(conn, id)?,
        never_forgettable_why: decay::explain_never_forgettable(&input, &settings),
        dialogue: dialogue::applies_to(memory.tier).then(|| dialogue::lint(&memory.content)),
        task_kind,
        duplicate_evidence,
        score,
        meta,
        memory,
    })
}
