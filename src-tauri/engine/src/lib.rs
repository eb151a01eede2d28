//! lethe-engine: the whole memory engine of Lethe, without any Tauri or IPC dependency.
//!
//! Pure functions take `now` as an argument; nothing here reads the clock except where a
//! caller passes `chrono::Utc::now()`.

pub mod archive;
pub mod audit;
pub mod chart;
pub mod decay;
pub mod dedup;
pub mod demo;
pub mod error;
pub mod forgetting;
pub mod lifecycle;
pub mod meta;
pub mod model;
pub mod procedural;
pub mod recall;
pub mod settings;
pub mod store;
pub mod time;
pub mod transfer;
pub mod watch;
pub mod workload;

pub use error::{Error, Result};
pub use model::{Memory, Tier};
pub use settings::Settings;

use rusqlite::Connection;
use serde::Serialize;

/// Everything a person needs to judge one memory: its fields, its explained ForgetScore,
/// links, archive state and recall statistics.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryDetail {
    #[serde(flatten)]
    pub memory: Memory,
    pub supersedes: Vec<String>,
    pub superseded_by: Vec<String>,
    pub archive_no: Option<i64>,
    #[serde(flatten)]
    pub score: decay::ForgetScore,
    pub never_forgettable_why: Option<String>,
    pub meta: meta::MetaStats,
}

fn links(conn: &Connection, sql: &str, id: &str) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map([id], |r| r.get(0))?;
    Ok(rows.collect::<std::result::Result<_, _>>()?)
}

/// The projected-ForgetScore chart of one memory.
pub fn projection_chart(conn: &Connection, id: &str, now: time::Instant, theme: chart::Theme) -> Result<String> {
    let d = detail(conn, id, now, None)?;
    let settings = Settings::load(conn)?;
    let input = input_of(&d.memory, &d.score)?;
    let horizon = match decay::projected_forget_at(&input, &settings, now) {
        Some(at) => (time::days_between(now, at) * 1.5).clamp(30.0, 3650.0),
        None => (settings.half_life_days.get(d.memory.tier) * 4.0).clamp(30.0, 3650.0),
    };
    chart::render_projection(&input, &settings, now, horizon, (560, 260), theme)
}

fn input_of(memory: &Memory, score: &decay::ForgetScore) -> Result<decay::ScoreInput> {
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
    })
}

/// Builds the detail view of one memory at `now` (reads only).
pub fn detail(
    conn: &Connection,
    id: &str,
    now: time::Instant,
    buffer: Option<&meta::MetaBuffer>,
) -> Result<MemoryDetail> {
    let memory = lifecycle::get(conn, id)?;
    let settings = Settings::load(conn)?;
    let score = forgetting::score_one(conn, id, &settings, now)?;
    let input = input_of(&memory, &score)?;
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
        score,
        meta,
        memory,
    })
}
