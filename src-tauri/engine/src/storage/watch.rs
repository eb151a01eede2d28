//! Live watch (docs/data-model.md). An SQLite file: its parent directory is watched (db, -wal, -shm),
//! events are debounced (~100 ms), a real change is confirmed with `PRAGMA data_version` and
//! the change journal, and one small event goes to the callback. A team store on PostgreSQL
//! ([`watch_postgres`]): a connection of its own `LISTEN`s to its team's channel (the journal's
//! trigger notifies at every commit) and reads the journal (`lethe_change`) since the last
//! sequence number it saw, so a missed notification costs at most the next poll. When the
//! server goes away it says so ([`WatchEvent::Reconnecting`]), retries every second, and says
//! [`WatchEvent::Back`] once connected again, so that everything is read afresh: nothing
//! written meanwhile is missed. Watching stops when the watcher drops.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use notify::RecursiveMode;
use notify_debouncer_mini::{new_debouncer, DebounceEventResult, Debouncer};

use crate::error::{Error, Result};
use crate::storage::journal::Journal;
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
    /// The file is back after having been missing, or the team server after having been
    /// unreachable; everything should be re-read.
    Back,
    /// The team server cannot be reached (stopped, restarted, the network); retrying.
    Reconnecting(String),
    Error(String),
}

pub struct DbWatcher {
    inner: Option<Inner>,
    /// A file watcher's thread, waited for on drop: it holds a connection to the file, and a
    /// process that reopens a file after losing its locks must have closed every connection
    /// to it first (see `store::FileGuard`).
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for DbWatcher {
    fn drop(&mut self) {
        drop(self.inner.take());
        if let Some(thread) = self.thread.take() {
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

// Held for their drop only: the debouncer stops watching, the flag stops the thread.
#[allow(dead_code)]
enum Inner {
    File(Box<Debouncer<notify::RecommendedWatcher>>),
    /// Set on drop: the server watcher's thread ends within one poll.
    Server(StopOnDrop),
}

struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
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
    /// The last attempt to open the file (it was there) failed.
    failed: bool,
}

impl Probe {
    fn connect(&mut self) -> Result<()> {
        let conn = store::open(&self.path)?;
        // A watcher only reads: its close never needs to checkpoint (and must not after the
        // process lost its locks, see `store::FileGuard`).
        store::no_checkpoint_on_close(&conn);
        self.data_version = store::data_version(&conn)?;
        self.seq = store::last_change_seq(&conn)?;
        self.conn = Some(conn);
        Ok(())
    }

    /// Whether the file is at its path but could not be opened yet.
    fn waiting(&self) -> bool {
        self.conn.is_none() && self.failed
    }

    fn check(&mut self) -> Option<WatchEvent> {
        if !self.path.exists() {
            if self.missing {
                return None;
            }
            self.missing = true;
            self.failed = false;
            self.conn = None;
            return Some(WatchEvent::Missing);
        }
        if self.missing || self.conn.is_none() {
            return match self.connect() {
                Ok(()) => {
                    self.missing = false;
                    self.failed = false;
                    Some(WatchEvent::Back)
                }
                // Said once, not at every try.
                Err(e) => (!std::mem::replace(&mut self.failed, true)).then(|| WatchEvent::Error(e.to_string())),
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

/// How often a file that is there but could not be opened is tried again.
const FILE_RETRY: Duration = Duration::from_millis(500);

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
    let mut probe = Probe { path, conn: None, data_version: 0, seq: 0, missing: false, failed: false };
    if probe.path.exists() {
        probe.connect()?;
    } else {
        probe.missing = true;
    }
    let thread = std::thread::Builder::new().name("lethe-db-watch".into()).spawn(move || {
        // Ends when the debouncer (and with it the sender) is dropped. A file that is there
        // but could not be opened (another program is still creating or closing it) is
        // tried again on a timer: the program's last write may be its last event.
        loop {
            let woken = if probe.waiting() { rx.recv_timeout(FILE_RETRY) } else { rx.recv().map_err(Into::into) };
            match woken {
                Ok(()) => while rx.try_recv().is_ok() {},
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if let Some(ev) = probe.check() {
                on_event(ev);
            }
        }
    })?;
    Ok(DbWatcher { inner: Some(Inner::File(Box::new(debouncer))), thread: Some(thread) })
}

/// How often the server watcher reads the journal without a notification, and how soon after
/// the server goes away it notices.
const SERVER_POLL: Duration = Duration::from_millis(500);
/// Listens on the team store's connection until `stop`, the connection fails (Err) or a
/// notification or the poll interval asks for a read of the journal.
fn serve(
    conn: &store::Connection,
    journal: &mut Journal,
    stop: &AtomicBool,
    on_event: &dyn Fn(WatchEvent),
) -> Result<()> {
    let pg = conn.postgres().ok_or_else(|| Error::invalid("not a team store"))?;
    // The team's own channel (its name derived on the server from a secret no role reads):
    // a notification carries nothing, and no other team's writes wake this listener.
    let channel: String = conn.query_row("SELECT lethe_channel()", [], |r| r.get(0))?;
    pg.batch(&format!("LISTEN \"{}\"", channel.replace('"', "\"\"")))?;
    let epoch = pg.epoch.get();
    loop {
        if stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        {
            let mut client = pg.client.borrow_mut();
            let mut notes = client.notifications();
            use postgres::fallible_iterator::FallibleIterator;
            notes.timeout_iter(SERVER_POLL).next()?;
            // Several commits in a row: one read for all of them.
            while notes.iter().next()?.is_some() {}
        }
        if let Some(ids) = journal.read(conn)? {
            on_event(WatchEvent::Changed { data_version: journal.high(), ids });
        }
        // The connection was made anew (a failover) while reading: its LISTEN went with the
        // old one, so the watcher starts over and everything is read afresh.
        if pg.epoch.get() != epoch {
            return Err(Error::Unavailable(format!("the team server {} changed hosts", pg.display)));
        }
    }
}

/// Watches a team store at `url` (see the module's documentation); `on_event` runs on a
/// background thread. Fails only when the first connection fails.
pub fn watch_postgres(url: &str, on_event: impl Fn(WatchEvent) + Send + 'static) -> Result<DbWatcher> {
    let conn = super::postgres::connect(url)?;
    let mut journal = Journal::at(&conn)?;
    let stop = Arc::new(AtomicBool::new(false));
    let (url, stop_flag) = (url.to_string(), stop.clone());
    std::thread::Builder::new().name("lethe-server-watch".into()).spawn(move || {
        let mut conn = Some(conn);
        let mut down = false;
        while !stop_flag.load(Ordering::SeqCst) {
            let Some(c) = conn.take() else {
                match super::postgres::connect(&url).and_then(|c| Journal::at(&c).map(|j| (c, j))) {
                    Ok((c, j)) => {
                        (conn, journal, down) = (Some(c), j, false);
                        on_event(WatchEvent::Back);
                    }
                    Err(_) => std::thread::sleep(Duration::from_secs(1)),
                }
                continue;
            };
            if let Err(e) = serve(&c, &mut journal, &stop_flag, &on_event) {
                if !down {
                    down = true;
                    on_event(WatchEvent::Reconnecting(format!("the team server does not answer ({e}); reconnecting")));
                }
            }
        }
    })?;
    Ok(DbWatcher { inner: Some(Inner::Server(StopOnDrop(stop))), thread: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::{self, NewMemory};
    use crate::model::Tier;

    /// A new store in a directory of its own, watched; its events arrive on the receiver.
    fn watched_store() -> (PathBuf, PathBuf, DbWatcher, mpsc::Receiver<WatchEvent>) {
        let dir = std::env::temp_dir().join(format!("lethe-watch-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("w.db");
        drop(store::open(&db).unwrap());
        let (tx, rx) = mpsc::channel();
        let w = watch(&db, move |e| {
            let _ = tx.send(e);
        })
        .unwrap();
        (dir, db, w, rx)
    }

    #[test]
    fn a_commit_from_another_connection_is_reported_with_its_id() {
        let (dir, db, _w, rx) = watched_store();
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

    /// A file that is at its path but cannot be opened is said once, tried again quietly, and
    /// the store that takes its place is reported back.
    #[test]
    fn a_file_that_cannot_be_opened_is_said_once_and_a_store_in_its_place_is_back() {
        let (dir, db, _w, rx) = watched_store();
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
        }
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).ok(), Some(WatchEvent::Missing));
        std::fs::write(&db, "meeting notes, not a database\n".repeat(100)).unwrap();
        let said = rx.recv_timeout(Duration::from_secs(5)).expect("the foreign file is reported");
        assert!(matches!(said, WatchEvent::Error(_)), "{said:?}");
        // Tried again on a timer (FILE_RETRY) several times meanwhile, without a word.
        assert_eq!(rx.recv_timeout(FILE_RETRY * 4).ok(), None, "the failure is said once");
        std::fs::remove_file(&db).unwrap();
        drop(store::open(&db).unwrap());
        let back = std::iter::from_fn(|| rx.recv_timeout(Duration::from_secs(5)).ok()).find(|e| *e == WatchEvent::Back);
        assert_eq!(back, Some(WatchEvent::Back), "the store in its place is back");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
