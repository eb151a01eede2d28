//! Live watch (DESIGN §9): the DB's parent directory is watched (db, -wal, -shm), events are
//! debounced (~100 ms), a real change is confirmed with `PRAGMA data_version` and the change
//! journal, and one small event goes to the callback. Watching stops when the watcher drops.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use notify::RecursiveMode;
use notify_debouncer_mini::{new_debouncer, DebounceEventResult, Debouncer};

use crate::error::{Error, Result};
use crate::store;

#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent {
    /// Committed changes; `ids` are the memories touched, `None` when too many to list.
    Changed {
        data_version: i64,
        ids: Option<Vec<String>>,
    },
    /// The file disappeared (deleted or being replaced).
    Missing,
    /// The file is back after having been missing; everything should be re-read.
    Back,
    Error(String),
}

pub struct DbWatcher {
    _debouncer: Debouncer<notify::RecommendedWatcher>,
}

fn related(db: &Path, p: &Path) -> bool {
    let (Some(name), Some(db_name)) = (p.file_name(), db.file_name()) else { return false };
    let name = name.to_string_lossy();
    let db_name = db_name.to_string_lossy();
    name == db_name
        || name.strip_prefix(db_name.as_ref()).is_some_and(|rest| ["-wal", "-shm", "-journal"].contains(&rest))
}

struct Probe {
    path: PathBuf,
    conn: Option<store::Connection>,
    data_version: i64,
    seq: i64,
    missing: bool,
}

impl Probe {
    fn connect(&mut self) -> Result<()> {
        let conn = store::open(&self.path)?;
        self.data_version = store::data_version(&conn)?;
        self.seq = store::last_change_seq(&conn)?;
        self.conn = Some(conn);
        Ok(())
    }

    fn check(&mut self) -> Option<WatchEvent> {
        if !self.path.exists() {
            if self.missing {
                return None;
            }
            self.missing = true;
            self.conn = None;
            return Some(WatchEvent::Missing);
        }
        if self.missing || self.conn.is_none() {
            return match self.connect() {
                Ok(()) => {
                    self.missing = false;
                    Some(WatchEvent::Back)
                }
                Err(e) => Some(WatchEvent::Error(e.to_string())),
            };
        }
        let conn = self.conn.as_ref()?;
        let dv = store::data_version(conn).ok()?;
        let (seq, ids) = store::changes_since(conn, self.seq, 500).ok()?;
        if dv == self.data_version && seq == self.seq {
            return None;
        }
        self.data_version = dv;
        self.seq = seq;
        Some(WatchEvent::Changed { data_version: dv, ids })
    }
}

/// Starts watching `db_path`; `on_event` runs on a background thread.
pub fn watch(db_path: impl Into<PathBuf>, on_event: impl Fn(WatchEvent) + Send + 'static) -> Result<DbWatcher> {
    let path: PathBuf = db_path.into();
    let path = if path.is_absolute() { path } else { std::env::current_dir()?.join(path) };
    let dir = path.parent().map(Path::to_path_buf).ok_or_else(|| Error::invalid("database path has no directory"))?;
    let (tx, rx) = mpsc::channel::<()>();
    let db_for_filter = path.clone();
    let mut debouncer = new_debouncer(Duration::from_millis(100), move |res: DebounceEventResult| {
        if let Ok(events) = res {
            if events.iter().any(|e| related(&db_for_filter, &e.path)) {
                let _ = tx.send(());
            }
        }
    })
    .map_err(|e| Error::Io(std::io::Error::other(e.to_string())))?;
    debouncer
        .watcher()
        .watch(&dir, RecursiveMode::NonRecursive)
        .map_err(|e| Error::Io(std::io::Error::other(e.to_string())))?;
    let mut probe = Probe { path, conn: None, data_version: 0, seq: 0, missing: false };
    if probe.path.exists() {
        probe.connect()?;
    } else {
        probe.missing = true;
    }
    std::thread::Builder::new().name("lethe-db-watch".into()).spawn(move || {
        // Ends when the debouncer (and with it the sender) is dropped.
        while rx.recv().is_ok() {
            while rx.try_recv().is_ok() {}
            if let Some(ev) = probe.check() {
                on_event(ev);
            }
        }
    })?;
    Ok(DbWatcher { _debouncer: debouncer })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::{self, NewMemory};
    use crate::model::Tier;

    #[test]
    fn a_commit_from_another_connection_is_reported_with_its_id() {
        let dir = std::env::temp_dir().join(format!("lethe-watch-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("w.db");
        drop(store::open(&db).unwrap());
        let (tx, rx) = mpsc::channel();
        let _w = watch(&db, move |e| {
            let _ = tx.send(e);
        })
        .unwrap();
        let mut conn = store::open(&db).unwrap();
        let out = lifecycle::remember(
            &mut conn,
            &NewMemory::new(Tier::Semantic, "watched write"),
            "user",
            chrono::Utc::now(),
        )
        .unwrap();
        let id = out.id().unwrap().to_string();
        let ev = rx.recv_timeout(Duration::from_secs(5)).expect("an event within 5 s");
        match ev {
            WatchEvent::Changed { ids: Some(ids), .. } => assert!(ids.contains(&id), "the new id is named"),
            other => panic!("unexpected {other:?}"),
        }
        drop(conn);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).ok(), Some(WatchEvent::Missing), "deletion is reported");
    }
}
