//! The Lethe desktop shell: a thin Tauri layer over lethe-engine. The only place that knows
//! Tauri events; commands live in `commands`.

#[cfg(test)]
mod bindings;
mod commands;
mod error;
mod events;
mod recent;
mod state;

use std::path::Path;

use events::{DbChanged, DbStatus, LiveState, VectorsProgress};
use lethe_engine::watch::{self, WatchEvent};
use tauri::{AppHandle, Emitter, Manager};

pub use state::AppState;

/// Opens the database and starts watching it; watcher callbacks become small events.
pub(crate) fn open_and_watch(app: &AppHandle, state: &AppState, path: &Path) -> lethe_engine::Result<()> {
    let handle = app.clone();
    let status = |state, message: &str| DbStatus { state, message: message.to_string() };
    let watcher = watch::watch(path, move |ev| {
        let _ = match ev {
            WatchEvent::Changed { data_version, ids } => {
                handle.emit(events::DB_CHANGED, DbChanged { data_version, ids })
            }
            WatchEvent::Missing => handle.emit(
                events::DB_STATUS,
                status(LiveState::Missing, "the database file is gone (deleted or being replaced)"),
            ),
            WatchEvent::Back => {
                // Reopen on the new file, then tell the UI to re-read everything.
                if let Some(st) = handle.try_state::<AppState>() {
                    if let Some(p) = state::lock(&st.path).clone() {
                        if let Some(db) = state::lock(&st.db).as_mut() {
                            if let Ok(conn) = lethe_engine::store::open(&p) {
                                db.conn = conn;
                            }
                        }
                    }
                }
                let _ = handle.emit(events::DB_STATUS, status(LiveState::Live, "the database is back"));
                handle.emit(events::DB_CHANGED, DbChanged { data_version: 0, ids: None })
            }
            WatchEvent::Error(message) => handle.emit(events::DB_STATUS, status(LiveState::Error, &message)),
        };
    })
    .ok();
    state.open(path, watcher)?;
    spawn_backfill(app, path);
    Ok(())
}

/// Embeds, on its own thread and connection, the memories that have no vector of this model
/// yet (a memento file, an older Lethe, another model), in short transactions so the window
/// keeps reading meanwhile; reports `vectors://progress` and, when vectors were written,
/// reloads the scoring snapshot and asks the window to re-read.
fn spawn_backfill(app: &AppHandle, path: &Path) {
    let Some(e) = lethe_engine::embed::shared() else { return };
    let (handle, path) = (app.clone(), path.to_path_buf());
    std::thread::spawn(move || {
        let shown = path.display().to_string();
        let progress = |done, total, finished, error: Option<String>| {
            let p = VectorsProgress { path: shown.clone(), done, total, finished, error };
            let _ = handle.emit(events::VECTORS_PROGRESS, p);
        };
        let never = std::sync::atomic::AtomicBool::new(false);
        let result = lethe_engine::store::open(&path).and_then(|mut conn| {
            let total = lethe_engine::semantic::pending(&conn, e)?;
            if total > 0 {
                progress(0, total, false, None);
            }
            let done = lethe_engine::semantic::backfill(&mut conn, e, |d, t| progress(d, t, false, None), &never)?;
            Ok((done, total))
        });
        match result {
            Ok((0, 0)) => {}
            Ok((done, total)) => {
                if let Some(st) = handle.try_state::<AppState>() {
                    if let Some(db) = state::lock(&st.db).as_mut().filter(|db| db.path == path) {
                        db.invalidate_snapshot();
                    }
                }
                progress(done, total.max(done), true, None);
                let _ = handle.emit(events::DB_CHANGED, DbChanged { data_version: 0, ids: None });
            }
            Err(err) => {
                eprintln!("lethe: back-filling vectors of {}: {err}", path.display());
                progress(0, 0, true, Some(err.to_string()));
            }
        }
    });
}

pub fn run() {
    let args: Vec<String> = std::env::args().collect();
    let db_path = state::db_path_from(&args);
    tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .manage(AppState::default())
        .setup(move |app| {
            let handle = app.handle().clone();
            let st = app.state::<AppState>();
            // A database that cannot be opened is reported in the window, not a crash.
            if let Err(e) = open_and_watch(&handle, &st, &db_path) {
                eprintln!("lethe: cannot open {}: {e}", db_path.display());
            } else {
                recent::remember(&db_path.display().to_string());
            }
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![
            commands::db_info,
            commands::stats,
            commands::list_memories,
            commands::show_memory,
            commands::pin_memory,
            commands::unpin_memory,
            commands::set_importance,
            commands::edit_memory,
            commands::delete_memory,
            commands::restore_memory,
            commands::hard_delete_memory,
            commands::quarantine,
            commands::events,
            commands::run_forget,
            commands::cancel_forget,
            commands::get_settings,
            commands::set_settings,
            commands::what_if,
            commands::open_db,
            commands::new_db,
            commands::recent_files,
            commands::recall,
            commands::workflows,
            commands::history,
            commands::update_procedure,
            commands::load_demo,
            commands::chart_decay,
            commands::chart_projection,
            commands::chart_distribution,
            commands::export_chart,
        ])
        .run(tauri::generate_context!())
        .expect("error while running the Lethe window");
}
