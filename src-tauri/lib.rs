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

use events::{DbChanged, DbStatus, LiveState};
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
    state.open(path, watcher)
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
