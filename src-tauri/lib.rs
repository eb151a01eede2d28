//! The Lethe desktop shell: a thin Tauri layer over lethe-engine. The only place that knows
//! Tauri events; commands live in `commands`.

#[cfg(test)]
mod bindings;
mod chooser;
mod commands;
mod connect;
mod error;
mod events;
mod files;
mod recent;
mod state;
#[cfg(test)]
mod window_commands;

use std::path::{Path, PathBuf};

use events::{DbChanged, DbStatus, LiveState, VectorsProgress};
use lethe_engine::store::FileTrouble;
use lethe_engine::watch::{self, WatchEvent};
use state::{FileFacts, OpenDb, OpenMode};
use tauri::{AppHandle, Emitter, Manager};

pub use state::AppState;

/// When the process was started as the window's file chooser: shows it, prints the answer and
/// returns the exit code (see `chooser`).
pub fn file_chooser(args: &[String]) -> Option<i32> {
    chooser::child_main(args)
}

/// Starts opening `path` on a background thread and returns at once with what the window
/// should show meanwhile (the path, `loading`). When the connection is ready, and again when
/// the first scoring snapshot is loaded, `db://opened` carries the new `DbInfo`; until the
/// connection is ready, commands wait for it (off the main thread, see `state`).
pub(crate) fn start_open(app: &AppHandle, path: PathBuf, mode: OpenMode) -> commands::DbInfo {
    start_open_saying(app, path, mode, None)
}

/// [`start_open`] of an open the person did not ask for: `notice` says why (the window shows
/// it once).
pub(crate) fn start_open_saying(
    app: &AppHandle,
    path: PathBuf,
    mode: OpenMode,
    notice: Option<String>,
) -> commands::DbInfo {
    let st = app.state::<AppState>();
    // After trouble with the file's locks the new connection must take them afresh.
    let fresh_locks = notice.is_some();
    let generation = st.begin_open_saying(&path, mode, notice);
    let info = commands::db_info_of(&st);
    let handle = app.clone();
    let spawned = std::thread::Builder::new()
        .name("lethe-open".into())
        .spawn(move || open_in_background(&handle, generation, &path, mode, fresh_locks));
    if let Err(e) = spawned {
        st.finish_open(generation, Err(format!("cannot start opening: {e}")));
        return commands::db_info_of(&st);
    }
    info
}

/// How long an open the person did not ask for keeps trying before it reports its error.
const AUTO_REOPEN_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

fn open_in_background(app: &AppHandle, generation: u64, path: &Path, mode: OpenMode, fresh_locks: bool) {
    let st = app.state::<AppState>();
    st.retire_previous(generation);
    let attempt = || {
        open_file(path, mode).and_then(|conn| {
            let conn = if fresh_locks { with_fresh_locks(conn, path, mode)? } else { conn };
            let facts = FileFacts {
                memento: lethe_engine::store::is_memento(&conn)?,
                schema_version: lethe_engine::store::schema_version(&conn)?,
                read_only: lethe_engine::store::is_read_only(&conn)?,
            };
            Ok((conn, facts))
        })
    };
    let mut opened = attempt();
    // An open the person did not ask for (the file came back, was replaced, lost its locks)
    // races with the program that caused it, which may still be writing or closing: it is
    // tried again for a while before the window shows an error, since no one will click.
    let retry_until = std::time::Instant::now() + AUTO_REOPEN_PATIENCE;
    while fresh_locks
        && opened.is_err()
        && !is_server(path)
        && path.is_file()
        && std::time::Instant::now() < retry_until
        && st.info().generation == generation
    {
        if let Err(e) = &opened {
            eprintln!("lethe: opening {} again: {e}; trying again", shown(path));
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
        opened = attempt();
    }
    let result = match opened {
        Ok((conn, facts)) => {
            st.anchor(path, &conn);
            let watcher = watch_file(app, generation, path);
            Ok((OpenDb::new(generation, path.to_path_buf(), conn, watcher), facts))
        }
        Err(e) => {
            eprintln!("lethe: cannot open {}: {e}", shown(path));
            Err(format!("{}: {e}", shown(path)))
        }
    };
    let ok = result.is_ok();
    if !st.finish_open(generation, result) {
        return; // A newer open took over; it reports for itself.
    }
    let _ = app.emit(events::DB_OPENED, commands::db_info_of(&st));
    if !ok {
        return;
    }
    // A team server is kept without its password (it is asked again next time).
    recent::remember(Path::new(&shown(path)));
    // The first scoring snapshot, loaded here rather than by the first view that asks, so
    // it starts at once; the reads that need it wait for it, the others do not.
    if let Err(e) = st.snapshot() {
        eprintln!("lethe: scoring {}: {}", shown(path), e.message);
    }
    st.mark_scored(generation);
    let _ = app.emit(events::DB_OPENED, commands::db_info_of(&st));
    spawn_backfill(app, generation, path);
}

/// The open file's files are in trouble (`store::FileTrouble`, found by a command or the
/// watcher): the window's writes stop (every command checks first), the dot turns red with
/// the reason, and the file is opened again, which closes every connection of this process to
/// it and so takes SQLite's locks afresh. A file that is gone waits for the watcher to see it
/// back; another file at the path is opened as a new store.
fn on_file_trouble(app: &AppHandle, generation: u64, trouble: FileTrouble, after_a_call: bool) {
    let st = app.state::<AppState>();
    let current = st.info();
    let Some(path) = current.path.filter(|_| current.generation == generation) else { return };
    let status = |state, message: String| {
        let _ = app.emit(events::DB_STATUS, DbStatus { state, message });
    };
    let notice = match trouble {
        FileTrouble::Missing => {
            status(LiveState::Missing, format!("{trouble}: nothing can be changed until a file is back at its path"));
            return;
        }
        FileTrouble::Replaced => {
            format!("Another file took the place of {}; Lethe shows it as a new store.", path.display())
        }
        FileTrouble::WalReplaced | FileTrouble::LocksLost => {
            let kept = if after_a_call && trouble == FileTrouble::WalReplaced {
                " The last change made in the window may not have been kept: please check it."
            } else {
                " No change the window confirmed was lost."
            };
            format!(
                "Lethe opened {} again: {trouble}. Everything shown was read again from the file.{kept}",
                path.display()
            )
        }
    };
    status(LiveState::Error, format!("{trouble}. Lethe stopped writing and is opening the file again."));
    start_open_saying(app, path, OpenMode::Existing, Some(notice));
}

/// `conn`, once it holds this process's locks on the file anew. SQLite asks the kernel for
/// them only when no other connection of the process has the file open; one that is still
/// closing (a background task of the previous open) is waited for, up to a few seconds.
fn with_fresh_locks(
    mut conn: lethe_engine::store::Connection,
    path: &Path,
    mode: OpenMode,
) -> lethe_engine::Result<lethe_engine::store::Connection> {
    if !cfg!(target_os = "linux") {
        return Ok(conn);
    }
    for _ in 0..50 {
        match lethe_engine::store::FileGuard::capture(&conn)? {
            Some(guard) if !guard.locks_seen() => {}
            _ => return Ok(conn),
        }
        lethe_engine::store::close_without_checkpoint(conn);
        std::thread::sleep(std::time::Duration::from_millis(100));
        conn = open_file(path, mode)?;
    }
    Err(lethe_engine::Error::invalid(
        "another part of Lethe still has the file open, so its locks cannot be taken afresh; try again in a moment",
    ))
}

/// Whether `path` is a team server's address (`postgres://…`) rather than a file.
pub(crate) fn is_server(path: &Path) -> bool {
    path.to_str().is_some_and(lethe_engine::storage::postgres::is_url)
}

/// `path` as the window shows it: a team server's address never with its password.
pub(crate) fn shown(path: &Path) -> String {
    match path.to_str().filter(|p| lethe_engine::storage::postgres::is_url(p)) {
        Some(url) => lethe_engine::storage::postgres::display(url),
        None => path.display().to_string(),
    }
}

/// Opens the file; only the launch path is created (with its directory) when missing. A team
/// server is connected to (it has to be set up already: `lethe admin setup`).
fn open_file(path: &Path, mode: OpenMode) -> lethe_engine::Result<lethe_engine::store::Connection> {
    if is_server(path) {
        return open_for_the_window(path);
    }
    match mode {
        OpenMode::Launch => {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)?;
            }
        }
        OpenMode::Existing => {
            if !path.is_file() {
                return Err(lethe_engine::Error::NotFound(format!("no database file at {}", path.display())));
            }
        }
    }
    open_for_the_window(path)
}

/// The window's connection: a long-running reader, so it keeps a server's page cache.
fn open_for_the_window(path: &Path) -> lethe_engine::Result<lethe_engine::store::Connection> {
    let conn = lethe_engine::store::open(path)?;
    lethe_engine::store::serve_many_reads(&conn)?;
    Ok(conn)
}

/// Watches the file (or team server) of `generation`; watcher callbacks become small events.
fn watch_file(app: &AppHandle, generation: u64, path: &Path) -> Option<watch::DbWatcher> {
    let handle = app.clone();
    let reopen = path.to_path_buf();
    let status = |state, message: &str| DbStatus { state, message: message.to_string() };
    let server = is_server(path);
    let on_event = move |ev| {
        let _ = match ev {
            WatchEvent::Changed { data_version, ids } => {
                // Another program wrote: the moment a lost lock starts to matter.
                if let Some(st) = handle.try_state::<AppState>() {
                    st.check_files(generation);
                }
                handle.emit(events::DB_CHANGED, DbChanged { data_version, ids })
            }
            WatchEvent::Back if !server => {
                // A file at the path again: whatever it holds, it is not what the window
                // showed, so it is opened as a new store (nothing held over from the old one).
                let notice =
                    format!("A database file appeared again at {}; Lethe shows it as a new store.", reopen.display());
                start_open_saying(&handle, reopen.clone(), OpenMode::Existing, Some(notice));
                Ok(())
            }
            WatchEvent::Missing => handle.emit(
                events::DB_STATUS,
                status(LiveState::Missing, "the database file is gone (deleted or being replaced)"),
            ),
            WatchEvent::Reconnecting(message) => {
                handle.emit(events::DB_STATUS, status(LiveState::Reconnecting, &message))
            }
            WatchEvent::Back => {
                // Reopen on the new file or server connection (without holding any lock while
                // opening), then tell the UI to re-read everything: what was written while
                // the server was away is read with the rest.
                if let Ok(conn) = open_for_the_window(&reopen) {
                    if let Some(st) = handle.try_state::<AppState>() {
                        st.reconnect(generation, conn);
                    }
                }
                let _ = handle.emit(events::DB_STATUS, status(LiveState::Live, "the database is back"));
                handle.emit(events::DB_CHANGED, DbChanged { data_version: 0, ids: None })
            }
            WatchEvent::Error(message) => handle.emit(events::DB_STATUS, status(LiveState::Error, &message)),
        };
    };
    let watcher = match path.to_str().filter(|_| is_server(path)) {
        Some(url) => watch::watch_postgres(url, on_event),
        None => watch::watch(path, on_event),
    };
    watcher.map_err(|e| eprintln!("lethe: live updates of {} are off: {e}", shown(path))).ok()
}

/// Embeds, on its own thread and connection, the memories that have no vector of this model
/// yet (a memento file, an older Lethe, another model), in short transactions so the window
/// keeps reading meanwhile; reports `vectors://progress` and, when vectors were written,
/// reloads the scoring snapshot and asks the window to re-read. Then reads the vector index.
fn spawn_backfill(app: &AppHandle, generation: u64, path: &Path) {
    let Some(e) = lethe_engine::embed::shared() else { return };
    let (handle, path) = (app.clone(), path.to_path_buf());
    std::thread::spawn(move || {
        let shown = shown(&path);
        let progress = |done, total, finished, error: Option<String>| {
            let p = VectorsProgress { path: shown.clone(), done, total, finished, error };
            let _ = handle.emit(events::VECTORS_PROGRESS, p);
        };
        let stop = handle.state::<AppState>().background_stop();
        let result = lethe_engine::store::open(&path).and_then(|mut conn| {
            lethe_engine::store::no_checkpoint_on_close(&conn);
            let total = lethe_engine::semantic::pending(&conn, e)?;
            if total > 0 {
                progress(0, total, false, None);
            }
            let done = lethe_engine::semantic::backfill(&mut conn, e, |d, t| progress(d, t, false, None), &stop)?;
            // The process's vector index, which recall and a memory's similar memories search,
            // read here rather than by the first of them, which would hold the window's
            // connection meanwhile (≈ 0.2 s at 100k memories: the scroll after the first
            // memory opened waited for it).
            if let Err(err) = lethe_engine::semantic::index(&conn, e) {
                eprintln!("lethe: reading the vectors of {shown}: {err}");
            }
            Ok((done, total))
        });
        match result {
            Ok((0, 0)) => {}
            Ok((done, total)) => {
                if let Some(st) = handle.try_state::<AppState>() {
                    st.invalidate_snapshot(generation);
                }
                progress(done, total.max(done), true, None);
                let _ = handle.emit(events::DB_CHANGED, DbChanged { data_version: 0, ids: None });
            }
            Err(err) => {
                eprintln!("lethe: back-filling vectors of {shown}: {err}");
                progress(0, 0, true, Some(err.to_string()));
            }
        }
    });
}

/// WebKit draws the page in a process of its own. When that process ends (it ran out of
/// memory, it crashed, it was killed), the window would stay on its last picture and ignore
/// every click; instead the page is loaded again, the store stays open, and the page says so.
#[cfg(target_os = "linux")]
fn reload_when_the_page_dies(window: &tauri::WebviewWindow, app: AppHandle) {
    let watched = window.with_webview(move |webview| {
        use webkit2gtk::WebViewExt;
        webview.inner().connect_web_process_terminated(move |view, reason| {
            let why = match reason {
                webkit2gtk::WebProcessTerminationReason::ExceededMemoryLimit => "it ran out of memory",
                webkit2gtk::WebProcessTerminationReason::Crashed => "it crashed or was stopped",
                _ => "it ended",
            };
            eprintln!("lethe: the window's page process ended ({why}); loading the page again");
            app.state::<AppState>().set_notice(format!(
                "The window's page stopped ({why}) and was loaded again; the database stayed open and nothing was lost."
            ));
            view.reload();
        });
    });
    if let Err(e) = watched {
        eprintln!("lethe: the window cannot watch its page process: {e}");
    }
}

/// Writes the window's size and position half a second after it stops moving or resizing.
/// The plugin writes them when the app exits normally; this keeps them when it does not (a
/// session ending, a kill) — and a drag of many events writes the file once.
fn save_window_state_soon(app: &AppHandle) {
    use std::sync::atomic::{AtomicU64, Ordering};
    use tauri_plugin_window_state::{AppHandleExt, StateFlags};
    static LATEST: AtomicU64 = AtomicU64::new(0);
    let mine = LATEST.fetch_add(1, Ordering::SeqCst) + 1;
    let app = app.clone();
    // Off the main thread: saving asks the window (on the main thread) for its geometry.
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(500));
        if LATEST.load(Ordering::SeqCst) == mine {
            if let Err(e) = app.save_window_state(StateFlags::all()) {
                eprintln!("lethe: cannot keep the window's size and position: {e}");
            }
        }
    });
}

/// WebKitGTK composites the page with OpenGL. Without a GPU (a virtual machine, a remote
/// desktop, Xvfb) that is Mesa's software rasteriser, and a frame then costs hundreds of
/// milliseconds of both cores: at 100k memories (`make bench-window`) the Overview took
/// 3.0 s from the app's start instead of 1.0 s, a scroll page up to 695 ms instead of 295,
/// and the window used 44 % of a core for seconds after each change. Lethe's pages need no
/// compositing (no video, no 3D, no animation but a fade), so WebKit draws them on the CPU
/// unless the person chose: their own
/// `WEBKIT_DISABLE_COMPOSITING_MODE`, or `LETHE_WEBVIEW_GPU=1` to let WebKit use the GPU.
fn draw_on_the_cpu() {
    if cfg!(target_os = "linux")
        && disable_compositing(
            std::env::var_os("WEBKIT_DISABLE_COMPOSITING_MODE").as_deref(),
            std::env::var_os("LETHE_WEBVIEW_GPU").as_deref(),
        )
    {
        // Before the first thread and the first webview: WebKit reads it when it starts.
        std::env::set_var("WEBKIT_DISABLE_COMPOSITING_MODE", "1");
    }
}

/// Whether to turn WebKit's compositing off, given the person's own setting of it and of
/// `LETHE_WEBVIEW_GPU`.
fn disable_compositing(theirs: Option<&std::ffi::OsStr>, gpu: Option<&std::ffi::OsStr>) -> bool {
    theirs.is_none() && gpu.is_none_or(|g| g != "1")
}

pub fn run() {
    draw_on_the_cpu();
    // The person's audit rows say they acted in the window.
    lethe_engine::actor::set_via(lethe_engine::actor::Via::Window);
    let args: Vec<String> = std::env::args().collect();
    let db_path = state::launch_path(&args, recent::list().into_iter().next());
    tauri::Builder::default()
        // Size, position and maximised state come back at the next start (Rust only: the page
        // is granted none of the plugin's commands).
        .plugin(tauri_plugin_window_state::Builder::default().build())
        .on_window_event(|window, event| {
            if matches!(event, tauri::WindowEvent::Moved(_) | tauri::WindowEvent::Resized(_)) {
                save_window_state_soon(window.app_handle());
            }
        })
        .manage(AppState::default())
        .setup(move |app| {
            let handle = app.handle().clone();
            app.state::<AppState>().set_trouble_sink(std::sync::Arc::new(move |generation, trouble, after| {
                on_file_trouble(&handle, generation, trouble, after)
            }));
            #[cfg(target_os = "linux")]
            if let Some(window) = app.get_webview_window("main") {
                reload_when_the_page_dies(&window, app.handle().clone());
            }
            let handle = app.handle().clone();
            app.state::<AppState>().set_progress_sink(std::sync::Arc::new(move |stage, done, total| {
                let _ = handle.emit(events::SCORING_PROGRESS, events::ScoringProgress { stage, done, total });
            }));
            // Opening runs on its own thread: the window appears at once and shows the path;
            // a file that cannot be opened is reported in the window, not a crash.
            start_open(app.handle(), db_path, OpenMode::Launch);
            Ok(())
        })
        // Exactly the commands of src-tauri/window_commands.rs (the app manifest in build.rs,
        // the capability grants each); a test keeps the three lists and api.ts equal.
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
            commands::restore_memories,
            commands::hard_delete_memories,
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
            commands::reopen_db,
            commands::open_copy,
            commands::connect_server,
            commands::open_recent,
            commands::recent_files,
            commands::recall,
            commands::recall_explain,
            commands::recall_log,
            commands::similar_memories,
            commands::duplicates,
            commands::keep_both,
            commands::pin_refusals,
            commands::undo_forget_run,
            commands::supersede_duplicate,
            commands::health,
            commands::workflows,
            commands::sessions,
            commands::history,
            commands::update_procedure,
            commands::load_demo,
            commands::chart_decay,
            commands::chart_projection,
            commands::chart_distribution,
            commands::export_chart,
            commands::about,
            commands::connect_info,
            commands::test_connection,
        ])
        .run(tauri::generate_context!())
        .expect("error while running the Lethe window");
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use crate::window_commands::WINDOW_COMMANDS;

    #[test]
    fn the_page_is_drawn_on_the_cpu_unless_the_person_chose() {
        use std::ffi::OsStr;
        assert!(super::disable_compositing(None, None));
        assert!(super::disable_compositing(None, Some(OsStr::new("0"))));
        assert!(!super::disable_compositing(None, Some(OsStr::new("1"))), "LETHE_WEBVIEW_GPU=1");
        for theirs in ["0", "1", ""] {
            assert!(!super::disable_compositing(Some(OsStr::new(theirs)), None), "their own {theirs:?} stays");
        }
    }

    fn repo_file(path: &str) -> String {
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
    }

    /// The command names `api.ts` passes to `call(...)`, its one wrapper around `invoke`.
    fn invoked_by_the_ui() -> BTreeSet<String> {
        let api = repo_file("ui/src/api.ts");
        assert_eq!(
            api.matches("invoke<").count(),
            1,
            "api.ts invokes only inside call(), so every command name is seen here"
        );
        let mut names = BTreeSet::new();
        for (at, _) in api.match_indices("call<").chain(api.match_indices("call(")) {
            let rest = &api[at..];
            let Some(open) = rest.find("('") else { continue };
            if open > 120 {
                continue;
            }
            let name: String = rest[open + 2..].chars().take_while(|c| *c != '\'').collect();
            names.insert(name);
        }
        names
    }

    #[test]
    fn the_manifest_the_capability_and_the_ui_name_the_same_commands() {
        let manifest: BTreeSet<String> = WINDOW_COMMANDS.iter().map(|c| c.to_string()).collect();
        assert_eq!(manifest.len(), WINDOW_COMMANDS.len(), "no command listed twice");
        assert_eq!(invoked_by_the_ui(), manifest, "the manifest allows exactly what api.ts invokes");
        let cap: serde_json::Value = serde_json::from_str(&repo_file("src-tauri/capabilities/main.json")).unwrap();
        let granted: BTreeSet<String> =
            cap["permissions"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect();
        let mut expected: BTreeSet<String> =
            manifest.iter().map(|c| format!("allow-{}", c.replace('_', "-"))).collect();
        expected.extend(["core:event:allow-listen".to_string(), "core:event:allow-unlisten".to_string()]);
        assert_eq!(
            granted, expected,
            "the window is granted each allowed command and the event listener, nothing else"
        );
        assert!(!granted.iter().any(|p| p.starts_with("dialog:")), "the page never opens a dialog itself");
    }
}
