//! Tauri commands: take the state, call one engine function, map the error. All run off the
//! main thread (`async`) so database work never blocks the window.

use std::sync::atomic::Ordering;

use lethe_engine::audit::{self, AuditEvent, EventFilter, ForgettingEvent};
use lethe_engine::forgetting::{self, BatchOptions, BatchReport, QuarantineItem, Stats, WhatIf};
use lethe_engine::lifecycle::{self, ListQuery, Page};
use lethe_engine::{time, MemoryDetail, Settings};
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Emitter, State};
use ts_rs::TS;

use crate::error::{ApiError, ApiResult};
use crate::state::{lock, AppState};

/// The actor recorded for everything done in the window.
const ACTOR: &str = "user";

fn at(now: &Option<String>) -> ApiResult<time::Instant> {
    match now {
        Some(n) => Ok(time::parse(n)?),
        None => Ok(chrono::Utc::now()),
    }
}

/// The open database; `error` says why none could be opened.
#[derive(Debug, Serialize, TS)]
pub struct DbInfo {
    pub path: Option<String>,
    pub exists: bool,
    pub memento: bool,
    pub schema_version: i64,
    pub error: Option<String>,
}

#[tauri::command(async)]
pub fn db_info(state: State<'_, AppState>) -> DbInfo {
    let path = lock(&state.path).clone();
    let error = lock(&state.open_error).clone();
    let (memento, schema_version) = state
        .with_db(|db| Ok((lethe_engine::store::is_memento(&db.conn)?, lethe_engine::store::schema_version(&db.conn)?)))
        .unwrap_or((false, 0));
    DbInfo {
        exists: path.as_ref().is_some_and(|p| p.exists()),
        path: path.map(|p| p.display().to_string()),
        memento,
        schema_version,
        error,
    }
}

#[tauri::command(async)]
pub fn stats(state: State<'_, AppState>, now: Option<String>) -> ApiResult<Stats> {
    let now = at(&now)?;
    state.with_db(|db| {
        let s = Settings::load(&db.conn)?;
        let snap = db.snapshot()?;
        forgetting::stats(&db.conn, &snap, &s, now)
    })
}

/// The filters of `list_memories`; an empty `tier`, `session` or `project` means "any".
#[derive(Debug, Default, Deserialize, TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
pub struct ListArgs {
    #[ts(as = "Option<lethe_engine::Tier>")]
    pub tier: Option<String>,
    pub deleted: Option<bool>,
    pub pinned: Option<bool>,
    #[ts(as = "Option<lethe_engine::lifecycle::SortBy>")]
    pub sort: Option<String>,
    pub min_score: Option<f64>,
    pub max_score: Option<f64>,
    pub session: Option<String>,
    pub project: Option<String>,
    /// Only memories whose text holds a `[REDACTED:<kind>]` placeholder.
    pub redacted: Option<bool>,
    pub limit: Option<usize>,
    pub offset: Option<usize>,
    pub now: Option<String>,
}

#[tauri::command(async)]
pub fn list_memories(state: State<'_, AppState>, query: ListArgs) -> ApiResult<Page> {
    let now = at(&query.now)?;
    let q = ListQuery {
        tier: query.tier.as_deref().filter(|t| !t.is_empty()).map(str::parse).transpose()?,
        deleted: query.deleted,
        pinned: query.pinned,
        sort: query.sort.as_deref().unwrap_or("created").parse()?,
        min_score: query.min_score,
        max_score: query.max_score,
        session: query.session.filter(|s| !s.is_empty()),
        project: query.project.filter(|s| !s.is_empty()),
        redacted: query.redacted,
        limit: query.limit.unwrap_or(50),
        offset: query.offset.unwrap_or(0),
    };
    state.with_db(|db| {
        let s = Settings::load(&db.conn)?;
        let snap = db.snapshot()?;
        forgetting::list(&db.conn, &snap, &q, &s, now)
    })
}

#[tauri::command(async)]
pub fn show_memory(state: State<'_, AppState>, id: String, now: Option<String>) -> ApiResult<MemoryDetail> {
    let now = at(&now)?;
    state.with_db(|db| lethe_engine::detail(&db.conn, &id, now, None))
}

#[tauri::command(async)]
pub fn pin_memory(state: State<'_, AppState>, id: String) -> ApiResult<MemoryDetail> {
    let now = chrono::Utc::now();
    state.with_db(|db| {
        lifecycle::pin(&mut db.conn, &id, ACTOR, now)?;
        lethe_engine::detail(&db.conn, &id, now, None)
    })
}

#[tauri::command(async)]
pub fn unpin_memory(state: State<'_, AppState>, id: String) -> ApiResult<MemoryDetail> {
    let now = chrono::Utc::now();
    state.with_db(|db| {
        lifecycle::unpin(&mut db.conn, &id, ACTOR, now)?;
        lethe_engine::detail(&db.conn, &id, now, None)
    })
}

#[tauri::command(async)]
pub fn set_importance(state: State<'_, AppState>, id: String, value: f64) -> ApiResult<MemoryDetail> {
    let now = chrono::Utc::now();
    state.with_db(|db| {
        lifecycle::set_importance(&mut db.conn, &id, value, ACTOR, now)?;
        lethe_engine::detail(&db.conn, &id, now, None)
    })
}

#[tauri::command(async)]
pub fn edit_memory(
    state: State<'_, AppState>,
    id: String,
    content: String,
    expected_version: Option<i64>,
) -> ApiResult<MemoryDetail> {
    let now = chrono::Utc::now();
    state.with_db(|db| {
        lifecycle::edit_checked(&mut db.conn, &id, &content, expected_version, ACTOR, now)?;
        lethe_engine::detail(&db.conn, &id, now, None)
    })
}

#[tauri::command(async)]
pub fn delete_memory(state: State<'_, AppState>, id: String, reason: Option<String>) -> ApiResult<ForgettingEvent> {
    state.with_db(|db| lifecycle::soft_delete(&mut db.conn, &id, reason.as_deref(), ACTOR, chrono::Utc::now()))
}

#[tauri::command(async)]
pub fn restore_memory(state: State<'_, AppState>, id: String) -> ApiResult<MemoryDetail> {
    let now = chrono::Utc::now();
    state.with_db(|db| {
        lifecycle::restore(&mut db.conn, &id, ACTOR, now)?;
        lethe_engine::detail(&db.conn, &id, now, None)
    })
}

#[tauri::command(async)]
pub fn hard_delete_memory(state: State<'_, AppState>, id: String, confirm: bool) -> ApiResult<ForgettingEvent> {
    state.with_db(|db| lifecycle::hard_delete(&mut db.conn, &id, confirm, None, ACTOR, chrono::Utc::now()))
}

#[derive(Debug, Serialize, TS)]
pub struct Items<T> {
    pub items: Vec<T>,
}

#[tauri::command(async)]
pub fn quarantine(state: State<'_, AppState>, now: Option<String>) -> ApiResult<Items<QuarantineItem>> {
    let now = at(&now)?;
    state.with_db(|db| Ok(Items { items: forgetting::quarantine(&db.conn, &Settings::load(&db.conn)?, now)? }))
}

#[tauri::command(async)]
pub fn events(
    state: State<'_, AppState>,
    memory_id: Option<String>,
    action: Option<String>,
    actor: Option<String>,
    limit: Option<usize>,
) -> ApiResult<Items<AuditEvent>> {
    let f = EventFilter { memory_id, action, actor, limit: limit.unwrap_or(200) };
    state.with_db(|db| Ok(Items { items: audit::list_events(&db.conn, &f)? }))
}

#[tauri::command(async)]
pub fn run_forget(app: AppHandle, state: State<'_, AppState>, dry_run: bool) -> ApiResult<BatchReport> {
    state.cancel.store(false, Ordering::Relaxed);
    let cancel = state.cancel.clone();
    let progress = move |done: usize, total: usize| {
        let _ = app.emit(crate::events::FORGET_PROGRESS, crate::events::ForgetProgress { done, total });
    };
    state.with_db(|db| {
        let mut opts = BatchOptions::new(chrono::Utc::now(), dry_run);
        opts.progress = Some(&progress);
        opts.cancel = Some(&cancel);
        forgetting::run_batch(&mut db.conn, &opts)
    })
}

#[tauri::command]
pub fn cancel_forget(state: State<'_, AppState>) {
    state.cancel.store(true, Ordering::Relaxed);
}

#[tauri::command(async)]
pub fn get_settings(state: State<'_, AppState>) -> ApiResult<Settings> {
    state.with_db(|db| Settings::load(&db.conn))
}

#[tauri::command(async)]
pub fn set_settings(state: State<'_, AppState>, settings: Settings) -> ApiResult<Settings> {
    state.with_db(|db| Settings::store(&mut db.conn, &settings, ACTOR, chrono::Utc::now()))
}

#[tauri::command(async)]
pub fn what_if(state: State<'_, AppState>, settings: Settings, now: Option<String>) -> ApiResult<WhatIf> {
    let now = at(&now)?;
    state.with_db(|db| {
        let current = Settings::load(&db.conn)?;
        let snap = db.snapshot()?;
        forgetting::what_if(&snap, &current, &settings, now)
    })
}

#[tauri::command(async)]
pub fn open_db(app: AppHandle, state: State<'_, AppState>, path: String) -> ApiResult<DbInfo> {
    crate::open_and_watch(&app, &state, std::path::Path::new(&path)).map_err(ApiError::from)?;
    crate::recent::remember(&path);
    Ok(db_info(state))
}

#[tauri::command(async)]
pub fn new_db(app: AppHandle, state: State<'_, AppState>, path: String) -> ApiResult<DbInfo> {
    if std::path::Path::new(&path).exists() {
        return Err(ApiError::invalid(format!("{path} already exists; use Open")));
    }
    open_db(app, state, path)
}

#[tauri::command(async)]
pub fn recent_files() -> Vec<String> {
    crate::recent::list()
}

#[derive(Debug, Serialize, TS)]
pub struct RecallResults {
    pub results: Vec<lethe_engine::recall::Hit>,
    /// "semantic + lexical (model fingerprint)" or "lexical recall only: why".
    pub recall_mode: String,
}

#[tauri::command(async)]
pub fn recall(
    state: State<'_, AppState>,
    query: String,
    limit: Option<usize>,
    tier: Option<String>,
    weights: Option<lethe_engine::settings::RecallWeights>,
) -> ApiResult<RecallResults> {
    let q = lethe_engine::recall::RecallQuery {
        text: query,
        limit: limit.unwrap_or(50),
        tier: tier.as_deref().filter(|t| !t.is_empty()).map(str::parse).transpose()?,
        weights,
        ..Default::default()
    };
    // A person searching is not an agent recalling: no meta-memory statistics are recorded.
    state.with_db(|db| {
        Ok(RecallResults {
            results: lethe_engine::recall::recall(&db.conn, &q, chrono::Utc::now())?,
            recall_mode: lethe_engine::embed::status(),
        })
    })
}

#[tauri::command(async)]
pub fn workflows(state: State<'_, AppState>) -> ApiResult<Items<MemoryDetail>> {
    let now = chrono::Utc::now();
    state.with_db(|db| {
        let ids: Vec<String> = db
            .conn
            .prepare("SELECT id FROM memory_item WHERE type = 'procedural' AND COALESCE(is_deleted, 0) = 0 ORDER BY workflow_name, skill_name, created_at")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        let items = ids.iter().map(|id| lethe_engine::detail(&db.conn, id, now, None)).collect::<lethe_engine::Result<_>>()?;
        Ok(Items { items })
    })
}

#[tauri::command(async)]
pub fn history(state: State<'_, AppState>, id: String) -> ApiResult<Items<lethe_engine::procedural::Version>> {
    state.with_db(|db| Ok(Items { items: lethe_engine::procedural::history(&db.conn, &id)? }))
}

/// A change to a procedure; a missing field stays as it is. The engine rejects `steps` that
/// are not a non-empty list of strings and `triggerConditions` that are not an object.
#[derive(Debug, Default, Deserialize, TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
pub struct ProcedurePatchArgs {
    pub content: Option<String>,
    pub task_goal: Option<String>,
    #[ts(as = "Option<Vec<String>>")]
    pub steps: Option<serde_json::Value>,
    #[ts(as = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub trigger_conditions: Option<serde_json::Value>,
    pub workflow_name: Option<String>,
    pub skill_name: Option<String>,
}

#[tauri::command(async)]
pub fn update_procedure(
    state: State<'_, AppState>,
    id: String,
    expected_version: i64,
    patch: ProcedurePatchArgs,
) -> ApiResult<MemoryDetail> {
    let now = chrono::Utc::now();
    let p = lethe_engine::procedural::ProcedurePatch {
        content: patch.content,
        fields: lifecycle::ProcedureFields {
            task_goal: patch.task_goal,
            steps: patch.steps,
            trigger_conditions: patch.trigger_conditions,
            workflow_name: patch.workflow_name,
            skill_name: patch.skill_name,
        },
    };
    state.with_db(|db| {
        lethe_engine::procedural::update(&mut db.conn, &id, expected_version, &p, ACTOR, now)?;
        lethe_engine::detail(&db.conn, &id, now, None)
    })
}

#[tauri::command(async)]
pub fn load_demo(state: State<'_, AppState>) -> ApiResult<lethe_engine::demo::DemoCounts> {
    state.with_db(|db| lethe_engine::demo::load(&mut db.conn, 7, 120, chrono::Utc::now()))
}

#[tauri::command(async)]
pub fn chart_decay(state: State<'_, AppState>, horizon_days: f64, theme: Option<String>) -> ApiResult<String> {
    let theme = theme.as_deref().unwrap_or("light").parse()?;
    state.with_db(|db| lethe_engine::chart::render_decay(&Settings::load(&db.conn)?, horizon_days, (760, 360), theme))
}

#[tauri::command(async)]
pub fn chart_projection(
    state: State<'_, AppState>,
    id: String,
    theme: Option<String>,
    now: Option<String>,
) -> ApiResult<String> {
    let now = at(&now)?;
    let theme = theme.as_deref().unwrap_or("light").parse()?;
    state.with_db(|db| lethe_engine::projection_chart(&db.conn, &id, now, theme))
}

#[tauri::command(async)]
pub fn chart_distribution(state: State<'_, AppState>, theme: Option<String>, now: Option<String>) -> ApiResult<String> {
    let now = at(&now)?;
    let theme = theme.as_deref().unwrap_or("light").parse()?;
    state.with_db(|db| {
        let snap = db.snapshot()?;
        lethe_engine::distribution_chart(&db.conn, &snap, now, theme)
    })
}

/// Writes a chart to a path the person chose in the save dialog (`.svg` or `.png`).
#[tauri::command(async)]
pub fn export_chart(
    state: State<'_, AppState>,
    chart: String,
    path: String,
    id: Option<String>,
    horizon_days: Option<f64>,
    theme: Option<String>,
    now: Option<String>,
) -> ApiResult<String> {
    let now = at(&now)?;
    let theme = theme.as_deref().unwrap_or("light").parse()?;
    let kind = match (chart.as_str(), id) {
        ("decay", _) => lethe_engine::ChartKind::Decay { horizon_days: horizon_days.unwrap_or(365.0) },
        ("distribution", _) => lethe_engine::ChartKind::Distribution,
        ("projection", Some(id)) => lethe_engine::ChartKind::Projection { id },
        _ => return Err(ApiError::invalid(format!("unknown chart {chart:?} (or projection without id)"))),
    };
    state.with_db(|db| {
        let snap = db.snapshot()?;
        lethe_engine::export_chart(&db.conn, &snap, &kind, now, theme, std::path::Path::new(&path))
    })?;
    Ok(path)
}
