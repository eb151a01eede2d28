//! The engine's suites that run on both backends: on SQLite files, and with
//! `LETHE_TEST_POSTGRES` set on a throwaway PostgreSQL server (`tests/pg/with-server.sh`).

#[path = "../common/support.rs"]
mod support;

/// Recall keeps one file's in-memory index per process; suites that watch how it is built
/// take this lock so that they do not replace each other's.
static RECALL_CACHE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Holds [`RECALL_CACHE`] for the rest of the caller's scope.
pub fn one_recall_cache_user() -> std::sync::MutexGuard<'static, ()> {
    RECALL_CACHE.lock().unwrap_or_else(|p| p.into_inner())
}

mod concurrency;
mod duplicates;
mod duplication;
mod engine;
mod erasure;
mod fuzz;
mod group_commit;
mod recall_quality;
mod redaction;
mod seeds;
mod semantic;
mod session_context;
