//! The engine's suites about SQLite files only: FTS5 and the in-memory index that mirrors it,
//! memento's files, the write path's checkpoints, the detector's labelled set.

#[path = "../common/support.rs"]
mod support;

/// Recall keeps one file's in-memory index per process; suites that watch how it is built, or
/// recall from several files, take this lock so that they do not replace each other's.
static RECALL_CACHE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Holds [`RECALL_CACHE`] for the rest of the caller's scope.
pub fn one_recall_cache_user() -> std::sync::MutexGuard<'static, ()> {
    RECALL_CACHE.lock().unwrap_or_else(|p| p.into_inner())
}

mod function_words;
mod lexical;
mod memento;
mod secrets_labelled;
mod write_path;
