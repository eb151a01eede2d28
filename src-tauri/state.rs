//! The managed state: the open database (one connection behind a blocking mutex), its
//! watcher, a cached scoring snapshot, and the cancel flag of a running forget batch.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};

use lethe_engine::forgetting::Snapshot;
use lethe_engine::store::{self, Connection};
use lethe_engine::watch::DbWatcher;

use crate::error::{ApiError, ApiResult};

/// Up to this many changed memories the snapshot is patched instead of reloaded.
const INCREMENTAL_LIMIT: usize = 200;

pub struct OpenDb {
    pub path: PathBuf,
    pub conn: Connection,
    snapshot: Option<(i64, Arc<Snapshot>)>,
    pub _watcher: Option<DbWatcher>,
}

impl OpenDb {
    /// The scoring snapshot: unchanged while the change journal stands still, patched for
    /// the few memories an agent just wrote, reloaded when many changed.
    pub fn snapshot(&mut self) -> lethe_engine::Result<Arc<Snapshot>> {
        let seq = store::last_change_seq(&self.conn)?;
        if let Some((s, snap)) = &mut self.snapshot {
            if *s == seq {
                return Ok(Arc::clone(snap));
            }
            if let (_, Some(ids)) = store::changes_since(&self.conn, *s, INCREMENTAL_LIMIT)? {
                Arc::make_mut(snap).apply_changes(&self.conn, &ids)?;
                *s = seq;
                return Ok(Arc::clone(snap));
            }
        }
        let snap = Arc::new(Snapshot::load(&self.conn)?);
        self.snapshot = Some((seq, Arc::clone(&snap)));
        Ok(snap)
    }

    /// Forgets the cached snapshot: vectors written by the back-fill change duplication
    /// without touching the change journal.
    pub fn invalidate_snapshot(&mut self) {
        self.snapshot = None;
    }
}

#[derive(Default)]
pub struct AppState {
    pub db: Mutex<Option<OpenDb>>,
    pub path: Mutex<Option<PathBuf>>,
    pub open_error: Mutex<Option<String>>,
    pub cancel: Arc<AtomicBool>,
}

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl AppState {
    /// Runs `f` with the open database, or says why there is none.
    pub fn with_db<T>(&self, f: impl FnOnce(&mut OpenDb) -> lethe_engine::Result<T>) -> ApiResult<T> {
        let mut g = lock(&self.db);
        match g.as_mut() {
            Some(db) => f(db).map_err(ApiError::from),
            None => Err(ApiError::unavailable(
                lock(&self.open_error).clone().unwrap_or_else(|| "no database is open".to_string()),
            )),
        }
    }

    /// Opens `path` (creating it if missing) and replaces the current database.
    pub fn open(&self, path: &Path, watcher: Option<DbWatcher>) -> lethe_engine::Result<()> {
        *lock(&self.path) = Some(path.to_path_buf());
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        match store::open(path) {
            Ok(conn) => {
                *lock(&self.db) = Some(OpenDb { path: path.to_path_buf(), conn, snapshot: None, _watcher: watcher });
                *lock(&self.open_error) = None;
                Ok(())
            }
            Err(e) => {
                *lock(&self.db) = None;
                *lock(&self.open_error) = Some(format!("{}: {e}", path.display()));
                Err(e)
            }
        }
    }
}

/// `--db PATH` / `--db=PATH` from the arguments, else `$LETHE_DB`, else the default path.
pub fn db_path_from(args: &[String]) -> PathBuf {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--db" {
            if let Some(p) = it.next() {
                return PathBuf::from(p);
            }
        } else if let Some(p) = a.strip_prefix("--db=") {
            return PathBuf::from(p);
        }
    }
    default_db_path()
}

pub use lethe_engine::store::default_db_path;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn db_flag_wins_and_unknown_args_are_ignored() {
        let args: Vec<String> = ["app", "--foo", "--db", "/tmp/x.db", "bar"].iter().map(|s| s.to_string()).collect();
        assert_eq!(db_path_from(&args), PathBuf::from("/tmp/x.db"));
        let args: Vec<String> = ["app", "--db=/tmp/y.db"].iter().map(|s| s.to_string()).collect();
        assert_eq!(db_path_from(&args), PathBuf::from("/tmp/y.db"));
    }
}
