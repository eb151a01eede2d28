//! Tauri commands: take the state, call one engine function, map the error. Database work
//! runs on the blocking pool (`blocking`), never on the main thread nor on one of the async
//! runtime's few workers: a command waiting for a file that is still opening, or for a
//! snapshot that is loading, holds a pool thread while `db_info` and the others answer.
//!
//! No command takes a path from the page. Open, new and export ask the person in a file
//! chooser that Rust shows from a child process (`chooser`); a recent file is picked by its index in the list Rust
//! handed out (`files` checks every path before use).

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use lethe_engine::audit::{self, AuditEvent, EventFilter, ForgettingEvent};
use lethe_engine::forgetting::{self, BatchOptions, BatchReport, Stats, WhatIf};
use lethe_engine::lifecycle::{self, ListQuery, Page};
use lethe_engine::procedural::{ProcedurePage, ProcedureQuery};
use lethe_engine::quarantine_view::{self, QuarantineQuery, QuarantineView};
use lethe_engine::{time, MemoryDetail, Settings};
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Emitter, Manager, State};
use ts_rs::TS;

use crate::chooser;
use crate::error::{ApiError, ApiResult};
use crate::files;
use crate::state::{AppState, OpenMode, Phase};

// Everything done in the window is recorded under `OpenDb::actor`: the person on a file, the
// signed-in role on a team store.

fn at(now: &Option<String>) -> ApiResult<time::Instant> {
    match now {
        Some(n) => Ok(time::parse(n)?),
        None => Ok(chrono::Utc::now()),
    }
}

/// Runs `f` with the state on the blocking pool.
async fn blocking<T: Send + 'static>(
    app: AppHandle,
    f: impl FnOnce(&AppState) -> ApiResult<T> + Send + 'static,
) -> ApiResult<T> {
    tauri::async_runtime::spawn_blocking(move || f(&app.state::<AppState>()))
        .await
        .map_err(|e| ApiError::internal(format!("the command's task failed: {e}")))?
}

/// The person's action `f` on memory `id` at the clock, answered with the memory's detail
/// after it (what pin, unpin, importance, edit and restore return).
async fn act_on<R>(
    app: AppHandle,
    id: String,
    f: impl FnOnce(&mut lethe_engine::store::Connection, &str, &str, time::Instant) -> lethe_engine::Result<R>
        + Send
        + 'static,
) -> ApiResult<MemoryDetail> {
    let now = chrono::Utc::now();
    blocking(app, move |st| {
        st.with_db(|db| f(&mut db.conn, &id, &db.actor, now).map(drop))?;
        // The kept snapshot, patched for this change from the change journal.
        st.with_snapshot(|db, snap| lethe_engine::detail_in(&db.conn, snap, &id, now, None))
    })
    .await
}

/// The open database; `error` says why none could be opened.
#[derive(Debug, Clone, Serialize, TS)]
pub struct DbInfo {
    pub path: Option<String>,
    pub exists: bool,
    pub memento: bool,
    pub schema_version: i64,
    pub error: Option<String>,
    /// True while the file is opening or its first scoring snapshot is loading; a
    /// `db://opened` event follows when either finishes.
    pub loading: bool,
    /// Grows with every change of this information (each open, and each of its steps), so
    /// the window can ignore an answer older than what it already shows: `db_info` and
    /// `db://opened` travel separately and may arrive in either order.
    pub revision: u64,
    /// The file can be read but not written (its permissions, a read-only mount): the window
    /// shows it read-only and offers to open a copy.
    pub read_only: bool,
    /// The newest thing the window should say once (see `state::Notice`).
    pub notice: Option<crate::state::Notice>,
}

/// What `db_info` says, from the state's short lock only: never waits for the file.
pub(crate) fn db_info_of(state: &AppState) -> DbInfo {
    let c = state.info();
    let step = match c.phase {
        Phase::Opening => 0,
        Phase::Open if !c.scored => 1,
        _ => 2,
    };
    let error = match &c.phase {
        Phase::Failed(message) if c.path.is_some() => Some(message.clone()),
        _ => None,
    };
    DbInfo {
        exists: c.path.as_ref().is_some_and(|p| if crate::is_server(p) { c.phase == Phase::Open } else { p.exists() }),
        path: c.path.map(|p| crate::shown(&p)),
        memento: c.memento,
        schema_version: c.schema_version,
        loading: c.phase == Phase::Opening || (c.phase == Phase::Open && !c.scored),
        revision: c.generation * 3 + step,
        error,
        read_only: c.read_only,
        notice: state.notice(),
    }
}

#[tauri::command(async)]
pub fn db_info(state: State<'_, AppState>) -> DbInfo {
    db_info_of(&state)
}

#[tauri::command]
pub async fn stats(app: AppHandle, now: Option<String>) -> ApiResult<Stats> {
    let now = at(&now)?;
    blocking(app, move |st| {
        st.with_snapshot(|db, snap| forgetting::stats(&db.conn, snap, &Settings::load(&db.conn)?, now))
    })
    .await
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
    /// Only semantic and procedural memories that read like dialogue.
    pub needs_extraction: Option<bool>,
    /// Only memories written first by this actor (`agent:claude-code`, `user`).
    pub written_by: Option<String>,
    /// Only memories with this source (`claude-code`, `tool`…).
    pub source: Option<String>,
    /// Only the memories of this Overview health list (`never_recalled`, `forget_soon`,
    /// `pinned_never_recalled`, `low_confidence`), the other filters applying within it.
    pub health: Option<String>,
    pub limit: Option<usize>,
    pub offset: Option<usize>,
    pub now: Option<String>,
}

#[tauri::command]
pub async fn list_memories(app: AppHandle, query: ListArgs) -> ApiResult<Page> {
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
        needs_extraction: query.needs_extraction,
        written_by: query.written_by.filter(|s| !s.is_empty()),
        source: query.source.filter(|s| !s.is_empty()),
        only: None,
        limit: query.limit.unwrap_or(50),
        offset: query.offset.unwrap_or(0),
    };
    let health = query.health.filter(|h| !h.is_empty());
    blocking(app, move |st| {
        st.with_snapshot(|db, snap| {
            let s = Settings::load(&db.conn)?;
            match &health {
                Some(name) => lethe_engine::health::list_page(&db.conn, snap, name, &q, &s, now),
                None => forgetting::list(&db.conn, snap, &q, &s, now),
            }
        })
    })
    .await
}

#[tauri::command]
pub async fn show_memory(app: AppHandle, id: String, now: Option<String>) -> ApiResult<MemoryDetail> {
    let now = at(&now)?;
    blocking(app, move |st| st.with_snapshot(|db, snap| lethe_engine::detail_in(&db.conn, snap, &id, now, None))).await
}

#[tauri::command]
pub async fn pin_memory(app: AppHandle, id: String) -> ApiResult<MemoryDetail> {
    act_on(app, id, lifecycle::pin).await
}

#[tauri::command]
pub async fn unpin_memory(app: AppHandle, id: String) -> ApiResult<MemoryDetail> {
    act_on(app, id, lifecycle::unpin).await
}

#[tauri::command]
pub async fn set_importance(app: AppHandle, id: String, value: f64) -> ApiResult<MemoryDetail> {
    act_on(app, id, move |c, id, actor, now| lifecycle::set_importance(c, id, value, actor, now)).await
}

#[tauri::command]
pub async fn edit_memory(
    app: AppHandle,
    id: String,
    content: String,
    expected_version: Option<i64>,
) -> ApiResult<MemoryDetail> {
    act_on(app, id, move |c, id, actor, now| lifecycle::edit_checked(c, id, &content, expected_version, actor, now))
        .await
}

#[tauri::command]
pub async fn delete_memory(app: AppHandle, id: String, reason: Option<String>) -> ApiResult<ForgettingEvent> {
    blocking(app, move |st| {
        st.with_snapshot(|db, snap| {
            lifecycle::soft_delete_in(&mut db.conn, snap, &id, reason.as_deref(), &db.actor, chrono::Utc::now())
        })
    })
    .await
}

#[tauri::command]
pub async fn restore_memory(app: AppHandle, id: String) -> ApiResult<MemoryDetail> {
    act_on(app, id, lifecycle::restore).await
}

#[tauri::command]
pub async fn hard_delete_memory(app: AppHandle, id: String, confirm: bool) -> ApiResult<ForgettingEvent> {
    blocking(app, move |st| {
        st.with_db(|db| lifecycle::hard_delete(&mut db.conn, &id, confirm, None, &db.actor, chrono::Utc::now()))
    })
    .await
}

/// Restores a selection from quarantine in one action (one transaction; all or nothing).
#[tauri::command]
pub async fn restore_memories(app: AppHandle, ids: Vec<String>) -> ApiResult<Items<String>> {
    blocking(app, move |st| {
        st.with_db(|db| {
            let done = lifecycle::restore_many(&mut db.conn, &ids, &db.actor, chrono::Utc::now())?;
            Ok(Items { items: done.into_iter().map(|m| m.id).collect() })
        })
    })
    .await
}

/// Deletes a selection for ever in one action (a person's, confirmed; all or nothing).
#[tauri::command]
pub async fn hard_delete_memories(app: AppHandle, ids: Vec<String>, confirm: bool) -> ApiResult<Items<String>> {
    blocking(app, move |st| {
        st.with_db(|db| {
            let done = lifecycle::hard_delete_many(&mut db.conn, &ids, confirm, &db.actor, chrono::Utc::now())?;
            Ok(Items { items: done.into_iter().map(|e| e.memory_id).collect() })
        })
    })
    .await
}

#[derive(Debug, Serialize, TS)]
pub struct Items<T> {
    pub items: Vec<T>,
}

#[tauri::command]
pub async fn quarantine(app: AppHandle, now: Option<String>, query: QuarantineQuery) -> ApiResult<QuarantineView> {
    let now = at(&now)?;
    blocking(app, move |st| st.with_db(|db| quarantine_view::view(&db.conn, &Settings::load(&db.conn)?, now, &query)))
        .await
}

#[tauri::command]
pub async fn events(
    app: AppHandle,
    memory_id: Option<String>,
    action: Option<String>,
    actor: Option<String>,
    limit: Option<usize>,
) -> ApiResult<Items<AuditEvent>> {
    let f = EventFilter { memory_id, action, actor, limit: limit.unwrap_or(200) };
    blocking(app, move |st| st.with_db(|db| Ok(Items { items: audit::list_events(&db.conn, &f)? }))).await
}

#[tauri::command]
/// `only`: a run reviewed item by item quarantines only these memories (those a person
/// approved in the dry run's list).
pub async fn run_forget(app: AppHandle, dry_run: bool, only: Option<Vec<String>>) -> ApiResult<BatchReport> {
    let emitter = app.clone();
    let only: Option<std::collections::HashSet<String>> = only.map(|ids| ids.into_iter().collect());
    blocking(app, move |st| {
        st.cancel.store(false, Ordering::Relaxed);
        let cancel = st.cancel.clone();
        let progress = move |done: usize, total: usize| {
            let _ = emitter.emit(crate::events::FORGET_PROGRESS, crate::events::ForgetProgress { done, total });
        };
        // The batch plans from the window's snapshot (loaded once, kept current with the change
        // journal), so a dry run after the Overview has loaded costs only the planning.
        st.with_snapshot_at(Some(&cancel), |db, snap, journal| {
            let mut opts = BatchOptions::new(chrono::Utc::now(), dry_run);
            opts.progress = Some(&progress);
            opts.cancel = Some(&cancel);
            opts.snapshot = Some((snap, journal));
            // The window's snapshot keeps what it searched when it is loaded (`keep_searched`).
            opts.keep_derived = false;
            opts.only = only.as_ref();
            forgetting::run_batch(&mut db.conn, &opts)
        })
    })
    .await
}

/// Restores everything a forget run quarantined, audited as one action.
#[tauri::command]
pub async fn undo_forget_run(app: AppHandle, run_id: String) -> ApiResult<lethe_engine::runs::UndoReport> {
    blocking(app, move |st| {
        st.with_db(|db| lethe_engine::runs::undo(&mut db.conn, &run_id, &db.actor, chrono::Utc::now()))
    })
    .await
}

#[tauri::command]
pub fn cancel_forget(state: State<'_, AppState>) {
    state.cancel.store(true, Ordering::Relaxed);
}

#[tauri::command]
pub async fn get_settings(app: AppHandle) -> ApiResult<Settings> {
    blocking(app, |st| st.with_db(|db| Settings::load(&db.conn))).await
}

#[tauri::command]
pub async fn set_settings(app: AppHandle, settings: Settings) -> ApiResult<Settings> {
    blocking(app, move |st| st.with_db(|db| Settings::store(&mut db.conn, &settings, &db.actor, chrono::Utc::now())))
        .await
}

#[tauri::command]
pub async fn what_if(app: AppHandle, settings: Settings, now: Option<String>) -> ApiResult<WhatIf> {
    let now = at(&now)?;
    blocking(app, move |st| {
        st.cancel.store(false, Ordering::Relaxed);
        let cancel = st.cancel.clone();
        st.with_snapshot_at(Some(&cancel), |db, snap, _| {
            forgetting::what_if(snap, &Settings::load(&db.conn)?, &settings, now)
        })
    })
    .await
}

const DB_EXTENSIONS: &[&str] = &["db", "sqlite", "sqlite3"];
const DB_FILTER: &str = "Lethe / memento database";

/// Asks in a file chooser (shown by a child process: see `chooser`) on the blocking pool.
/// `None` when the person cancelled.
async fn ask(request: chooser::Request) -> ApiResult<Option<PathBuf>> {
    tauri::async_runtime::spawn_blocking(move || chooser::ask(&request))
        .await
        .map_err(|e| ApiError::internal(format!("the file dialog failed: {e}")))?
}

/// A chooser for database files that starts in the open store's folder.
fn db_request(app: &AppHandle, save: bool, title: &str) -> chooser::Request {
    let current = app.state::<AppState>().info().path;
    chooser::Request {
        save,
        title: title.into(),
        directory: chooser::folder_of(current.as_deref()),
        file_name: save.then(|| "memory.db".to_string()),
        filters: vec![(DB_FILTER.into(), DB_EXTENSIONS.iter().map(|e| e.to_string()).collect())],
    }
}

/// Asks for a database file in the native dialog and starts opening it; `null` when the
/// person cancelled. Returns at once with the path and `loading`; `db://opened` follows.
#[tauri::command]
pub async fn open_db(app: AppHandle) -> ApiResult<Option<DbInfo>> {
    let Some(path) = ask(db_request(&app, false, "Open a Lethe or memento database")).await? else {
        return Ok(None);
    };
    Ok(Some(crate::start_open(&app, path, OpenMode::Existing)))
}

/// Asks where to create a new database in the native save dialog; refuses anything that is
/// already there (the file is created with O_EXCL, 0600), then opens it like `open_db`.
#[tauri::command]
pub async fn new_db(app: AppHandle) -> ApiResult<Option<DbInfo>> {
    let Some(path) = ask(db_request(&app, true, "Create a new database")).await? else {
        return Ok(None);
    };
    files::create_new_db_file(&path)?;
    Ok(Some(crate::start_open(&app, path, OpenMode::Existing)))
}

/// Opens the current file (or team server) again ("Try again" after it could not be opened).
#[tauri::command(async)]
pub fn reopen_db(app: AppHandle) -> ApiResult<DbInfo> {
    let c = app.state::<AppState>().info();
    let path = c.path.ok_or_else(|| ApiError::invalid("no database to open again"))?;
    let path = if crate::is_server(&path) { path } else { files::plain_absolute(&path)? };
    Ok(crate::start_open(&app, path, c.mode))
}

/// "Open a copy" of a read-only file: asks where to put the copy (a save dialog that starts in
/// the person's home folder), writes it there with SQLite's `VACUUM INTO` (a consistent copy,
/// WAL included, that never writes to the original) and opens it. `null` when cancelled.
#[tauri::command]
pub async fn open_copy(app: AppHandle) -> ApiResult<Option<DbInfo>> {
    let current = app.state::<AppState>().info().path;
    let name = current.as_deref().and_then(|p| p.file_stem()).map(|s| s.to_string_lossy().into_owned());
    let mut request = db_request(&app, true, "Save a copy to work on");
    request.directory = std::env::var_os("HOME").map(PathBuf::from);
    request.file_name = Some(format!("{}-copy.db", name.unwrap_or_else(|| "memory".into())));
    let Some(path) = ask(request).await? else {
        return Ok(None);
    };
    if std::fs::symlink_metadata(&path).is_ok() {
        return Err(ApiError::invalid(format!("{} already exists; choose a new name", path.display())));
    }
    let target = path.clone();
    blocking(app.clone(), move |st| st.with_db(|db| lethe_engine::store::copy_to(&db.conn, &target))).await?;
    Ok(Some(crate::start_open(&app, path, OpenMode::Existing)))
}

/// File → Connect to a team server…: opens the team store at `url`
/// (`postgres://USER[:PASSWORD]@HOST:PORT/DB`) as the window's database. The address is the
/// only thing the page names, never a path; its password stays in memory, never in the
/// recent list or on screen.
#[tauri::command(async)]
pub fn connect_server(app: AppHandle, url: String) -> ApiResult<DbInfo> {
    let url = url.trim();
    if !lethe_engine::storage::postgres::is_url(url) {
        return Err(ApiError::invalid(
            "a team server's address starts with postgres:// (postgres://USER:PASSWORD@HOST:PORT/DB)",
        ));
    }
    Ok(crate::start_open(&app, PathBuf::from(url), OpenMode::Existing))
}

/// The recent files, newest first. The page opens one by its index in this list.
#[tauri::command(async)]
pub fn recent_files(state: State<'_, AppState>) -> Vec<String> {
    let list = crate::recent::list();
    let shown = list.iter().map(|p| p.display().to_string()).collect();
    state.set_recent_shown(list);
    shown
}

/// Opens entry `index` of the list `recent_files` last returned.
#[tauri::command(async)]
pub fn open_recent(app: AppHandle, index: usize) -> ApiResult<DbInfo> {
    let st = app.state::<AppState>();
    let path = st.recent_shown(index).ok_or_else(|| ApiError::invalid(format!("no recent file number {index}")))?;
    if crate::is_server(&path) {
        return Ok(crate::start_open(&app, path, OpenMode::Existing));
    }
    let path = files::plain_absolute(&path)?;
    if !path.is_file() {
        return Err(ApiError::invalid(format!("{} no longer exists", path.display())));
    }
    Ok(crate::start_open(&app, path, OpenMode::Existing))
}

#[tauri::command]
pub async fn recall(
    app: AppHandle,
    query: String,
    limit: Option<usize>,
    tier: Option<String>,
    weights: Option<lethe_engine::settings::RecallWeights>,
) -> ApiResult<lethe_engine::recall::Answer> {
    let q = lethe_engine::recall::RecallQuery {
        text: query,
        limit: limit.unwrap_or(50),
        tier: tier.as_deref().filter(|t| !t.is_empty()).map(str::parse).transpose()?,
        weights,
        ..Default::default()
    };
    // A person searching is not an agent recalling: no meta-memory statistics are recorded.
    blocking(app, move |st| st.with_db(|db| lethe_engine::recall::answer(&db.conn, &q, chrono::Utc::now()))).await
}

/// The Recall view's query: what an agent would pass, plus the weights the person tries.
#[derive(Debug, Clone, Default, Deserialize, TS)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct RecallExplainArgs {
    pub query: String,
    pub limit: Option<usize>,
    pub session: Option<String>,
    pub project: Option<String>,
    pub workflow: Option<String>,
    pub tags: Option<Vec<String>>,
    pub weights: Option<lethe_engine::settings::RecallWeights>,
    pub now: Option<String>,
}

/// The Recall view: results with their breakdown and what was declined. A person trying a
/// query is not an agent recalling: it writes nothing and counts in no statistics.
#[tauri::command]
pub async fn recall_explain(app: AppHandle, args: RecallExplainArgs) -> ApiResult<lethe_engine::recall::ExplainAnswer> {
    let now = at(&args.now)?;
    let q = lethe_engine::recall::RecallQuery {
        text: args.query,
        limit: args.limit.unwrap_or(10),
        session: args.session.filter(|s| !s.is_empty()),
        project: args.project.filter(|s| !s.is_empty()),
        workflow: args.workflow.filter(|s| !s.is_empty()),
        tags: args.tags.unwrap_or_default(),
        weights: args.weights,
        ..Default::default()
    };
    blocking(app, move |st| {
        st.with_db(|db| lethe_engine::recall::explain_answer(&db.conn, &q, now, lethe_engine::recall::DECLINED))
    })
    .await
}

/// A neighbour of a memory as its detail lists it.
#[derive(Debug, Serialize, TS)]
pub struct SimilarMemory {
    pub id: String,
    #[serde(rename = "type")]
    pub tier: lethe_engine::Tier,
    pub preview: String,
    pub similarity: f64,
    /// "duplicate", "possible update" or "related".
    pub kind: String,
    /// Why: the values and words both hold and those that differ (plain text).
    pub evidence: lethe_engine::sameness::Evidence,
}

/// The five nearest active memories of `id` (the engine's `similar`, as `lethe similar`).
#[tauri::command]
pub async fn similar_memories(app: AppHandle, id: String) -> ApiResult<Items<SimilarMemory>> {
    blocking(app, move |st| {
        st.with_db(|db| {
            let near = lethe_engine::semantic::similar(&db.conn, &id, 5)?;
            let items = near
                .into_iter()
                .map(|s| {
                    let m = lifecycle::get(&db.conn, &s.id)?;
                    let (tier, preview) = (m.tier, m.preview(160));
                    let (similarity, kind, evidence) = (s.similarity, s.kind.to_string(), s.evidence);
                    Ok(SimilarMemory { id: s.id, tier, preview, similarity, kind, evidence })
                })
                .collect::<lethe_engine::Result<_>>()?;
            Ok(Items { items })
        })
    })
    .await
}

/// A page of the recall log and every actor in it (for the filter).
#[derive(Debug, Serialize, TS)]
pub struct RecallLogPage {
    pub items: Vec<lethe_engine::recall_log::RecallLogEntry>,
    pub actors: Vec<String>,
}

/// The agents' recalls, newest first: all of them, one actor's, or those that returned one
/// memory.
#[tauri::command]
pub async fn recall_log(
    app: AppHandle,
    actor: Option<String>,
    memory_id: Option<String>,
    limit: Option<usize>,
) -> ApiResult<RecallLogPage> {
    let f = lethe_engine::recall_log::LogFilter {
        actor: actor.filter(|a| !a.is_empty()),
        memory_id,
        limit: limit.unwrap_or(200),
    };
    blocking(app, move |st| {
        st.with_db(|db| {
            let items = lethe_engine::recall_log::list(&db.conn, &f)?;
            Ok(RecallLogPage { items, actors: lethe_engine::recall_log::actors(&db.conn)? })
        })
    })
    .await
}

#[tauri::command]
pub async fn workflows(app: AppHandle, query: ProcedureQuery) -> ApiResult<ProcedurePage> {
    blocking(app, move |st| st.with_db(|db| lethe_engine::procedural::page(&db.conn, &query))).await
}

/// The Sessions view: every session (what it wrote, its task logs, its rules) and each task
/// kind's logs over time.
#[tauri::command]
pub async fn sessions(app: AppHandle) -> ApiResult<lethe_engine::session::SessionsOverview> {
    blocking(app, move |st| st.with_db(|db| lethe_engine::session::overview(&db.conn, 500))).await
}

#[tauri::command]
pub async fn history(app: AppHandle, id: String) -> ApiResult<Items<lethe_engine::procedural::Version>> {
    blocking(app, move |st| st.with_db(|db| Ok(Items { items: lethe_engine::procedural::history(&db.conn, &id)? })))
        .await
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

#[tauri::command]
pub async fn update_procedure(
    app: AppHandle,
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
    blocking(app, move |st| {
        st.with_db(|db| {
            lethe_engine::procedural::update(&mut db.conn, &id, expected_version, &p, &db.actor, now).map(drop)
        })?;
        st.with_snapshot(|db, snap| lethe_engine::detail_in(&db.conn, snap, &id, now, None))
    })
    .await
}

#[tauri::command]
pub async fn load_demo(app: AppHandle) -> ApiResult<lethe_engine::demo::DemoCounts> {
    blocking(app, |st| st.with_db(|db| lethe_engine::demo::load(&mut db.conn, 7, 120, chrono::Utc::now()))).await
}

#[tauri::command]
pub async fn chart_decay(
    app: AppHandle,
    horizon_days: f64,
    theme: Option<String>,
    width: Option<f64>,
    dpr: Option<f64>,
    settings: Option<Settings>,
) -> ApiResult<String> {
    let theme = theme.as_deref().unwrap_or("light").parse()?;
    let fit = fit_of(width, dpr);
    blocking(app, move |st| {
        st.with_db(|db| {
            let s = match settings {
                Some(s) => s,
                None => Settings::load(&db.conn)?,
            };
            match fit {
                Some(f) => lethe_engine::chart::render_decay_fit(&s, horizon_days, f, theme),
                None => lethe_engine::chart::render_decay(&s, horizon_days, (760, 360), theme),
            }
        })
    })
    .await
}

/// The window's chart size: `width` CSS pixels at `dpr` device pixels each (both optional).
fn fit_of(width: Option<f64>, dpr: Option<f64>) -> Option<lethe_engine::chart::Fit> {
    width.map(|w| lethe_engine::chart::Fit::new(w, dpr.unwrap_or(1.0)))
}

#[tauri::command]
pub async fn chart_projection(
    app: AppHandle,
    id: String,
    theme: Option<String>,
    now: Option<String>,
    width: Option<f64>,
    dpr: Option<f64>,
) -> ApiResult<String> {
    let now = at(&now)?;
    let theme = theme.as_deref().unwrap_or("light").parse()?;
    let fit = fit_of(width, dpr);
    blocking(app, move |st| {
        st.with_snapshot(|db, snap| lethe_engine::projection_chart_in(&db.conn, snap, &id, now, theme, fit))
    })
    .await
}

#[tauri::command]
pub async fn chart_distribution(
    app: AppHandle,
    theme: Option<String>,
    now: Option<String>,
    width: Option<f64>,
    dpr: Option<f64>,
    settings: Option<Settings>,
) -> ApiResult<String> {
    let now = at(&now)?;
    let theme = theme.as_deref().unwrap_or("light").parse()?;
    let fit = fit_of(width, dpr);
    blocking(app, move |st| {
        st.with_snapshot(|db, snap| {
            lethe_engine::distribution_chart_fit(&db.conn, snap, now, theme, settings.as_ref(), fit)
        })
    })
    .await
}

/// Asks in the native save dialog where to write a chart (`.svg` or `.png`) and writes it
/// there, never through a symbolic link; resolves to the path written, `null` when cancelled.
#[tauri::command]
pub async fn export_chart(
    app: AppHandle,
    chart: String,
    id: Option<String>,
    horizon_days: Option<f64>,
    theme: Option<String>,
    now: Option<String>,
) -> ApiResult<Option<String>> {
    let now = at(&now)?;
    let theme = theme.as_deref().unwrap_or("light").parse()?;
    let kind = match (chart.as_str(), id) {
        ("decay", _) => lethe_engine::ChartKind::Decay { horizon_days: horizon_days.unwrap_or(365.0) },
        ("distribution", _) => lethe_engine::ChartKind::Distribution,
        ("projection", Some(id)) => lethe_engine::ChartKind::Projection { id },
        _ => return Err(ApiError::invalid(format!("unknown chart {chart:?} (or projection without id)"))),
    };
    let name = files::chart_file_name(&kind);
    let request = chooser::Request {
        save: true,
        title: "Export chart".into(),
        directory: chooser::folder_of(app.state::<AppState>().info().path.as_deref()),
        file_name: Some(name),
        filters: vec![("SVG image".into(), vec!["svg".into()]), ("PNG image".into(), vec!["png".into()])],
    };
    let Some(path) = ask(request).await? else {
        return Ok(None);
    };
    let format = lethe_engine::chart::ChartFormat::from_path(&path)?;
    files::refuse_store_files(&path, app.state::<AppState>().info().path.as_deref())?;
    blocking(app, move |st| {
        let bytes =
            st.with_snapshot(|db, snap| lethe_engine::export_chart(&db.conn, snap, &kind, now, theme, format))?;
        files::write_export(&path, &bytes)?;
        Ok(Some(path.display().to_string()))
    })
    .await
}

#[tauri::command]
pub async fn about(app: AppHandle) -> ApiResult<crate::connect::About> {
    blocking(app, |st| {
        let db_path = st.info().path.map(|p| crate::shown(&p));
        let semantic = lethe_engine::embed::shared().is_some();
        let lethe = crate::connect::find_lethe().ok().map(|p| p.display().to_string());
        let (version, recall) = (env!("CARGO_PKG_VERSION").to_string(), lethe_engine::embed::status());
        Ok(crate::connect::About { version, db_path, recall, semantic, lethe })
    })
    .await
}

/// The MCP configuration of each agent host for the open database (nothing is written).
#[tauri::command]
pub async fn connect_info(app: AppHandle) -> ApiResult<crate::connect::ConnectInfo> {
    // A team server's address without its password: each agent signs in as its own role.
    blocking(app, |st| {
        let shown = st.info().path.map(|p| PathBuf::from(crate::shown(&p)));
        Ok(crate::connect::connect_info(shown.as_deref()))
    })
    .await
}

/// Starts `lethe --db <open db> mcp` as a host would and lists its tools.
#[tauri::command]
pub async fn test_connection(app: AppHandle) -> ApiResult<crate::connect::ConnectionTest> {
    blocking(app, |st| {
        let db = st.info().path.ok_or_else(|| ApiError::unavailable("no database is open"))?;
        let lethe = crate::connect::find_lethe().map_err(ApiError::internal)?;
        Ok(crate::connect::test_connection(&lethe, &db, crate::connect::TEST_TIMEOUT))
    })
    .await
}

/// The duplicates review: clusters of near-duplicates at `now`, the dominant
/// member first, from the window's cached snapshot.
#[tauri::command]
pub async fn duplicates(
    app: AppHandle,
    limit: Option<usize>,
    now: Option<String>,
) -> ApiResult<lethe_engine::duplicates::Clusters> {
    let now = at(&now)?;
    let limit = limit.unwrap_or(lethe_engine::duplicates::DEFAULT_LIMIT);
    blocking(app, move |st| {
        st.with_snapshot(|db, snap| {
            lethe_engine::duplicates::clusters(&db.conn, snap, &Settings::load(&db.conn)?, now, limit)
        })
    })
    .await
}

/// "Keep both": the pair is dismissed (no cluster, no duplication), audited.
#[tauri::command]
pub async fn keep_both(app: AppHandle, a: String, b: String) -> ApiResult<lethe_engine::duplicates::Dismissal> {
    blocking(app, move |st| {
        st.with_db(|db| lethe_engine::duplicates::dismiss(&mut db.conn, &a, &b, &db.actor, chrono::Utc::now()))
    })
    .await
}

/// Supersedes the older of the two memories by the newer, audited.
#[tauri::command]
pub async fn supersede_duplicate(
    app: AppHandle,
    a: String,
    b: String,
) -> ApiResult<lethe_engine::duplicates::Superseded> {
    blocking(app, move |st| {
        st.with_db(|db| lethe_engine::duplicates::supersede(&mut db.conn, &a, &b, &db.actor, chrono::Utc::now()))
    })
    .await
}

/// Agents' refused attempts on the person's pins with an audit id above `after`, newest
/// first (the window alerts once per attempt).
#[tauri::command]
pub async fn pin_refusals(app: AppHandle, after: Option<i64>) -> ApiResult<Items<lethe_engine::pins::RefusedAttempt>> {
    blocking(app, move |st| {
        st.with_db(|db| Ok(Items { items: lethe_engine::pins::refused_attempts(&db.conn, after.unwrap_or(0), 20)? }))
    })
    .await
}

/// The Overview's health lists at `now`, from the window's cached snapshot.
#[tauri::command]
pub async fn health(app: AppHandle, now: Option<String>) -> ApiResult<lethe_engine::health::Health> {
    let now = at(&now)?;
    blocking(app, move |st| {
        st.with_snapshot(|db, snap| lethe_engine::health::health(&db.conn, snap, &Settings::load(&db.conn)?, now))
    })
    .await
}
