//! What every suite of the engine's test binaries shares: the evaluation time and temporary stores that are
//! removed when the test ends.

use std::ops::Deref;
use std::path::{Path, PathBuf};

use lethe_engine::time;

/// The time the suites evaluate at (fixed, so that ages and scores are the same every run).
pub fn now() -> time::Instant {
    time::parse("2026-06-01T12:00:00.000Z").unwrap()
}

/// A store's path in a directory of its own, removed (with the file's WAL and anything else a
/// test put there) when this is dropped. On a PostgreSQL test server the path names the
/// server's database instead (see `lethe_testkit::backend`).
pub struct TempDb {
    dir: PathBuf,
    path: PathBuf,
}

impl Deref for TempDb {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempDb {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A new store path `t.db` in a new temporary directory.
pub fn temp_db() -> TempDb {
    named_temp_db("t.db")
}

/// A new store path called `name` in a new temporary directory.
pub fn named_temp_db(name: &str) -> TempDb {
    let dir = std::env::temp_dir().join(format!("lethe-test-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    TempDb { path: dir.join(name), dir }
}
