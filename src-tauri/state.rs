//! The managed state, in three parts with a lock each, so that no lock is ever held by one
//! party while another waits for something unrelated:
//!
//! - `current`: what the window shows about the file (path, whether it is still opening,
//!   why it failed). Held only to read or swap a few fields, never across I/O: `db_info`
//!   answers at once, whatever else runs.
//! - `db`: the connection the commands use, behind a blocking mutex.
//! - `snapshot`: the cached scoring snapshot with its own connection, so loading it (tens of
//!   seconds on a large store in a debug build) never holds the connection the cheap reads
//!   need; only the reads that need scores wait for it.
//!
//! Opening a file happens on a background thread (lib.rs): [`AppState::begin_open`] records
//! the path at once, the open runs without any lock, and [`AppState::finish_open`] swaps the
//! result in under a short lock. Commands that arrive meanwhile wait for that swap (on a
//! condition variable, on the blocking pool) instead of seeing the previous file.
//!
//! Lock order, where two are taken: `current` before `db`. Nothing is dropped while a lock is
//! held if dropping it could wait (a watcher, a connection).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use lethe_engine::forgetting::{Job, LoadStage, Snapshot};
use lethe_engine::storage::journal::Journal;
use lethe_engine::store::{self, Connection, FileGuard, FileTrouble, LockAnchor};
use lethe_engine::watch::DbWatcher;

use crate::error::{ApiError, ApiResult};

/// Up to this many changed memories the snapshot is patched instead of reloaded.
const INCREMENTAL_LIMIT: usize = 200;

/// How long a command waits for a file that is still opening before it gives up.
const OPEN_WAIT: Duration = Duration::from_secs(120);

/// How a file may be opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// The launch path (`--db`, `$LETHE_DB` or the default): created with its directory when
    /// missing, as the CLI does.
    Launch,
    /// A file the person picked or created through the dialog, or an entry of the recent
    /// list: it must exist; nothing else is created.
    Existing,
}

/// Where the connection of the current file stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    Opening,
    Open,
    Failed(String),
}

/// What the window shows about the current file; cheap to read.
#[derive(Debug)]
struct Current {
    /// Bumped by every open, so a slow open that was overtaken by a newer one is discarded.
    generation: u64,
    path: Option<PathBuf>,
    mode: OpenMode,
    phase: Phase,
    /// The first scoring snapshot of this generation has been loaded (or failed).
    scored: bool,
    memento: bool,
    schema_version: i64,
    /// The file can be read but not written (its permissions, a read-only mount).
    read_only: bool,
}

impl Default for Current {
    fn default() -> Self {
        Current {
            generation: 0,
            path: None,
            mode: OpenMode::Launch,
            phase: Phase::Failed("no database is open".into()),
            scored: false,
            memento: false,
            schema_version: 0,
            read_only: false,
        }
    }
}

/// A snapshot of what `current` says, for `db_info`.
#[derive(Debug, Clone, PartialEq)]
pub struct CurrentInfo {
    pub generation: u64,
    pub path: Option<PathBuf>,
    pub mode: OpenMode,
    pub phase: Phase,
    pub scored: bool,
    pub memento: bool,
    pub schema_version: i64,
    pub read_only: bool,
}

/// Something the window should say once that the person did not ask for: why the file was
/// opened again, why the page was reloaded. `seq` grows with each, so the page shows each
/// one once, also after it was itself reloaded.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
pub struct Notice {
    pub seq: u64,
    pub text: String,
}

/// The facts about a freshly opened file that `db_info` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileFacts {
    pub memento: bool,
    pub schema_version: i64,
    pub read_only: bool,
}

pub struct OpenDb {
    pub generation: u64,
    pub path: PathBuf,
    pub conn: Connection,
    /// Who the window's writes are by: the person (`user`) on a file; on a team store the
    /// signed-in role (`user:<role>` for a curator or the owner, `agent:<role>` for an agent).
    pub actor: String,
    /// The identity of the file's files when it was opened, and whether this process holds
    /// SQLite's locks on them: checked around every command (`AppState::with_db`).
    guard: Option<FileGuard>,
    _watcher: Option<DbWatcher>,
}

impl OpenDb {
    pub fn new(generation: u64, path: PathBuf, conn: Connection, watcher: Option<DbWatcher>) -> Self {
        let actor = window_actor(&conn);
        // No checkpoint when it closes: after a lost lock or an unlinked WAL it could copy
        // stale pages over newer ones (`store::close_without_checkpoint`); the next
        // checkpoint of any connection copies the WAL all the same.
        store::no_checkpoint_on_close(&conn);
        let guard = FileGuard::capture(&conn).unwrap_or_else(|e| {
            eprintln!("lethe: cannot tell whether {} stays the same file: {e}", crate::shown(&path));
            None
        });
        OpenDb { generation, path, conn, actor, guard, _watcher: watcher }
    }

    /// What is wrong with the files the connection uses, if anything.
    fn file_trouble(&self) -> Option<FileTrouble> {
        self.guard.as_ref().and_then(|g| g.check().err())
    }
}

/// The actor of the window's writes on `conn` (see [`OpenDb::actor`]).
fn window_actor(conn: &Connection) -> String {
    use lethe_engine::storage::postgres::{role_of, Role};
    if !conn.is_postgres() {
        return lethe_engine::actor::USER.to_string();
    }
    match role_of(conn) {
        Ok((name, Role::Owner | Role::Curator)) => lethe_engine::actor::person_named(&name),
        Ok((name, Role::Agent)) => format!("agent:{name}"),
        // A reader writes nothing (the server refuses); the rest act as the person.
        _ => lethe_engine::actor::USER.to_string(),
    }
}

struct SnapshotCache {
    generation: u64,
    conn: Connection,
    /// What the snapshot has seen of the change journal (on a team server a transaction can
    /// commit a lower number after a higher one was read: the journal notices it).
    journal: Journal,
    snap: Arc<Snapshot>,
}

#[derive(Default)]
pub struct AppState {
    current: Mutex<Current>,
    /// Signalled whenever `current` changes phase.
    changed: Condvar,
    db: Mutex<Option<OpenDb>>,
    snapshot: Mutex<Option<SnapshotCache>>,
    /// The recent list as last handed to the page: `open_recent` takes an index into it.
    recent: Mutex<Vec<PathBuf>>,
    /// Set by `cancel_forget`: stops the forget run, dry run or what-if in progress.
    pub cancel: Arc<AtomicBool>,
    /// Where snapshot loads report their progress (the window's `scoring://progress`).
    progress: Mutex<Option<ProgressSink>>,
    /// Where file trouble is reported, and the newest generation it was reported for.
    trouble: Mutex<(Option<TroubleSink>, u64)>,
    notice: Mutex<Option<Notice>>,
    /// Set when the file is opened anew: background work on the previous open (the vector
    /// back-fill) stops and closes its connection.
    background: Mutex<Arc<AtomicBool>>,
    /// The locks that hold the open file for this process whatever else in it closes (see
    /// `store::LockAnchor`); kept across opens of the same file, so a reopen never lets go.
    anchor: Mutex<Option<LockAnchor>>,
}

/// Receives `(stage, done, total)` while a scoring snapshot loads.
pub type ProgressSink = Arc<dyn Fn(LoadStage, usize, usize) + Send + Sync>;

/// Told when a command or the watcher finds the open file's files in trouble:
/// `(generation, what, whether a command had just run on the connection)`. Called at most
/// once per generation; it stops the window's writes and opens the file again (lib.rs).
pub type TroubleSink = Arc<dyn Fn(u64, FileTrouble, bool) + Send + Sync>;

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Stores, on a thread and connection of its own, what a load had to compute because the
/// file lacked it (the neighbours of memories another program or an import wrote, their
/// signatures), so that the next launch reads them instead of searching again (at 100k
/// imported memories, ≈ 15 s at every launch). Lists are stored for the content they were
/// searched for: one changed meanwhile is searched again.
fn keep_searched(path: &Path, read_only: bool, snap: &Arc<Snapshot>) {
    // A file the window may not write keeps nothing (and says nothing of it).
    if read_only || (snap.searched == 0 && snap.unsigned == 0) {
        return;
    }
    let (path, snap) = (path.to_path_buf(), Arc::clone(snap));
    let spawned = std::thread::Builder::new().name("lethe-keep-searched".into()).spawn(move || {
        let kept = store::open(&path).and_then(|mut conn| {
            store::no_checkpoint_on_close(&conn);
            snap.persist(&mut conn)
        });
        if let Err(e) = kept {
            eprintln!("lethe: storing the neighbours found for {}: {e}", crate::shown(&path));
        }
    });
    if let Err(e) = spawned {
        eprintln!("lethe: storing the neighbours found: {e}");
    }
}

impl AppState {
    /// What the window shows about the current file, without waiting for anything.
    pub fn info(&self) -> CurrentInfo {
        let c = lock(&self.current);
        CurrentInfo {
            generation: c.generation,
            path: c.path.clone(),
            mode: c.mode,
            phase: c.phase.clone(),
            scored: c.scored,
            memento: c.memento,
            schema_version: c.schema_version,
            read_only: c.read_only,
        }
    }

    /// Anchors the file `conn` has open, unless it is anchored already. Called once the
    /// previous file's connections are closed (the previous anchor goes now).
    pub fn anchor(&self, path: &Path, conn: &Connection) {
        let mut held = lock(&self.anchor);
        if held.as_ref().is_some_and(|a| a.is_for(path)) {
            return;
        }
        let old = held.take();
        *held = LockAnchor::take(conn).unwrap_or_else(|e| {
            eprintln!("lethe: cannot anchor the locks of {}: {e}", crate::shown(path));
            None
        });
        drop(held);
        drop(old);
    }

    /// The flag background work of the current open stops on (see `AppState::background`).
    pub fn background_stop(&self) -> Arc<AtomicBool> {
        Arc::clone(&lock(&self.background))
    }

    /// The newest notice (see [`Notice`]).
    pub fn notice(&self) -> Option<Notice> {
        lock(&self.notice).clone()
    }

    /// Makes `text` the newest notice.
    pub fn set_notice(&self, text: String) {
        let mut n = lock(&self.notice);
        let seq = n.as_ref().map_or(1, |n| n.seq + 1);
        *n = Some(Notice { seq, text });
    }

    /// Sets who is told of file trouble (see [`TroubleSink`]).
    pub fn set_trouble_sink(&self, sink: TroubleSink) {
        lock(&self.trouble).0 = Some(sink);
    }

    /// Tells the sink of `trouble` on `generation`, once per generation; returns whether this
    /// call was the first for it.
    fn report_trouble(&self, generation: u64, trouble: &FileTrouble, after_a_call: bool) -> bool {
        let sink = {
            let mut t = lock(&self.trouble);
            if t.1 >= generation {
                return false;
            }
            t.1 = generation;
            t.0.clone()
        };
        eprintln!("lethe: {trouble}; the window stops writing and opens the file again");
        if let Some(sink) = sink {
            sink(generation, trouble.clone(), after_a_call);
        }
        true
    }

    /// Checks the open file's files now (the watcher calls this on every change it sees);
    /// skipped while a command holds the connection, which checks after itself.
    pub fn check_files(&self, generation: u64) {
        let trouble = match self.db.try_lock() {
            Ok(g) => g.as_ref().filter(|db| db.generation == generation).and_then(OpenDb::file_trouble),
            Err(_) => None,
        };
        if let Some(trouble) = trouble {
            self.report_trouble(generation, &trouble, false);
        }
    }

    /// Records that `path` is being opened and returns the generation of that open; commands
    /// wait from now on until [`finish_open`](Self::finish_open) of this generation.
    pub fn begin_open(&self, path: &Path, mode: OpenMode) -> u64 {
        self.begin_open_saying(path, mode, None)
    }

    /// [`AppState::begin_open`] of an open the person did not ask for; `notice` says why, and
    /// `db_info` carries it for this generation.
    pub fn begin_open_saying(&self, path: &Path, mode: OpenMode, notice: Option<String>) -> u64 {
        if let Some(text) = notice {
            self.set_notice(text);
        }
        let old = std::mem::take(&mut *lock(&self.background));
        old.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut c = lock(&self.current);
        let generation = c.generation + 1;
        *c = Current { generation, path: Some(path.to_path_buf()), mode, phase: Phase::Opening, ..Current::default() };
        self.changed.notify_all();
        generation
    }

    /// Takes the previous file's connection and snapshot out, unless an open newer than
    /// `generation` already replaced them. Waits for a command still using them (on the
    /// opening thread, not the window's); they are dropped after the locks are released.
    pub fn retire_previous(&self, generation: u64) {
        let old_db = {
            let mut g = lock(&self.db);
            if g.as_ref().is_some_and(|db| db.generation < generation) {
                g.take()
            } else {
                None
            }
        };
        let old_snapshot = {
            let mut g = lock(&self.snapshot);
            if g.as_ref().is_some_and(|s| s.generation < generation) {
                g.take()
            } else {
                None
            }
        };
        drop((old_db, old_snapshot));
    }

    /// Swaps in the result of the open of `generation`; returns false (and drops the result)
    /// when a newer open overtook it.
    pub fn finish_open(&self, generation: u64, result: Result<(OpenDb, FileFacts), String>) -> bool {
        let mut c = lock(&self.current);
        if c.generation != generation {
            drop(c);
            return false;
        }
        let replaced = match result {
            Ok((db, facts)) => {
                c.memento = facts.memento;
                c.schema_version = facts.schema_version;
                c.read_only = facts.read_only;
                c.phase = Phase::Open;
                lock(&self.db).replace(db)
            }
            Err(message) => {
                c.phase = Phase::Failed(message);
                c.scored = true;
                lock(&self.db).take()
            }
        };
        self.changed.notify_all();
        drop(c);
        drop(replaced);
        true
    }

    /// Records that the first scoring snapshot of `generation` finished loading.
    pub fn mark_scored(&self, generation: u64) {
        let mut c = lock(&self.current);
        if c.generation == generation {
            c.scored = true;
            self.changed.notify_all();
        }
    }

    /// Runs `f` with the open database. While the file is still opening this waits (up to
    /// [`OPEN_WAIT`]) for it; a file that could not be opened says why.
    pub fn with_db<T>(&self, f: impl FnOnce(&mut OpenDb) -> lethe_engine::Result<T>) -> ApiResult<T> {
        let deadline = Instant::now() + OPEN_WAIT;
        let mut f = Some(f);
        loop {
            let generation = self.wait_open(deadline)?;
            let mut g = lock(&self.db);
            if let Some(db) = g.as_mut().filter(|db| db.generation == generation) {
                // The files are checked before and after: a write into a file that is gone,
                // replaced or no longer locked by this process would be confirmed and lost.
                if let Some(trouble) = db.file_trouble() {
                    drop(g);
                    self.report_trouble(generation, &trouble, false);
                    return Err(ApiError::unavailable(format!(
                        "{trouble}; nothing was changed. Lethe is opening the file again"
                    )));
                }
                let f = f.take().expect("called once: the loop returns right after");
                let result = f(db);
                let after = db.file_trouble();
                drop(g);
                if let Some(trouble) = after {
                    self.report_trouble(generation, &trouble, true);
                    // With the locks lost but the same WAL, what was written is in the file.
                    if trouble != FileTrouble::LocksLost {
                        return Err(ApiError::unavailable(format!(
                            "{trouble}; what was just done may not have been kept. Lethe is opening the file again"
                        )));
                    }
                }
                return result.map_err(ApiError::from);
            }
            // A newer open began between reading `current` and taking the connection.
            drop(g);
            if Instant::now() >= deadline {
                return Err(ApiError::unavailable("the database is still opening"));
            }
        }
    }

    /// Waits until the current file is open and returns its generation.
    fn wait_open(&self, deadline: Instant) -> ApiResult<u64> {
        let mut c = lock(&self.current);
        loop {
            match &c.phase {
                Phase::Open => return Ok(c.generation),
                Phase::Failed(message) => return Err(ApiError::unavailable(message.clone())),
                Phase::Opening => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        let path = c.path.as_deref().map(|p| p.display().to_string()).unwrap_or_default();
                        return Err(ApiError::unavailable(format!("{path} is still opening")));
                    }
                    c = self.changed.wait_timeout(c, left).unwrap_or_else(|e| e.into_inner()).0;
                }
            }
        }
    }

    /// The scoring snapshot of the open file, with its generation: unchanged while the change
    /// journal stands still, patched for the few memories an agent just wrote, reloaded when
    /// many changed. It has its own connection, so loading it never blocks the commands that
    /// only need the database.
    pub fn snapshot(&self) -> ApiResult<(u64, Arc<Snapshot>)> {
        self.snapshot_at(None).map(|(generation, _, snap)| (generation, snap))
    }

    /// Sets where snapshot loads report their progress.
    pub fn set_progress_sink(&self, sink: ProgressSink) {
        *lock(&self.progress) = Some(sink);
    }

    /// [`AppState::snapshot`] with what it has seen of the change journal; a load it starts
    /// reports to the progress sink and stops (`cancelled`) when `cancel` is set.
    pub fn snapshot_at(&self, cancel: Option<&AtomicBool>) -> ApiResult<(u64, Journal, Arc<Snapshot>)> {
        let (generation, path) = self.with_db(|db| Ok((db.generation, db.path.clone())))?;
        let read_only = self.info().read_only;
        let sink = lock(&self.progress).clone();
        let report = |stage: LoadStage, done: usize, total: usize| {
            if let Some(sink) = &sink {
                sink(stage, done, total);
            }
        };
        let job = Job { progress: Some(&report), cancel, resumable: true, ..Job::default() };
        let mut cache = lock(&self.snapshot);
        if cancel.is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed)) {
            return Err(lethe_engine::Error::Cancelled.into());
        }
        let result = (|| -> lethe_engine::Result<(Journal, Arc<Snapshot>)> {
            if let Some(c) = cache.as_mut().filter(|c| c.generation == generation) {
                if !c.journal.moved(&c.conn)? {
                    return Ok((c.journal.clone(), Arc::clone(&c.snap)));
                }
                let mut journal = c.journal.clone();
                match journal.read_up_to(&c.conn, INCREMENTAL_LIMIT)? {
                    Some(Some(ids)) => {
                        Arc::make_mut(&mut c.snap).apply_changes(&c.conn, &ids)?;
                        c.journal = journal;
                        return Ok((c.journal.clone(), Arc::clone(&c.snap)));
                    }
                    // Nothing new after all (journal rows below the window went away).
                    None => {
                        c.journal = Journal::at(&c.conn)?;
                        return Ok((c.journal.clone(), Arc::clone(&c.snap)));
                    }
                    // Too many changes to patch: everything is read again.
                    Some(None) => {}
                }
                let snap = Arc::new(Snapshot::load_with(&c.conn, &job)?);
                keep_searched(&path, read_only, &snap);
                (c.journal, c.snap) = (journal, Arc::clone(&snap));
                return Ok((c.journal.clone(), snap));
            }
            let conn = store::open(&path)?;
            store::no_checkpoint_on_close(&conn);
            let journal = Journal::at(&conn)?;
            let snap = Arc::new(Snapshot::load_with(&conn, &job)?);
            keep_searched(&path, read_only, &snap);
            let old =
                cache.replace(SnapshotCache { generation, conn, journal: journal.clone(), snap: Arc::clone(&snap) });
            drop(old);
            Ok((journal, snap))
        })();
        result.map(|(journal, snap)| (generation, journal, snap)).map_err(ApiError::from)
    }

    /// Runs `f` with the open database and its scoring snapshot; the snapshot is obtained
    /// first, without holding the connection.
    pub fn with_snapshot<T>(&self, f: impl FnOnce(&mut OpenDb, &Snapshot) -> lethe_engine::Result<T>) -> ApiResult<T> {
        self.with_snapshot_at(None, |db, snap, _| f(db, snap))
    }

    /// [`AppState::with_snapshot`] that can be cancelled (see [`AppState::snapshot_at`]);
    /// `f` also gets what the snapshot has seen of the change journal.
    pub fn with_snapshot_at<T>(
        &self,
        cancel: Option<&AtomicBool>,
        f: impl FnOnce(&mut OpenDb, &Snapshot, &Journal) -> lethe_engine::Result<T>,
    ) -> ApiResult<T> {
        let (generation, journal, snap) = self.snapshot_at(cancel)?;
        let mut f = Some(f);
        let result = self.with_db(|db| {
            if db.generation != generation {
                return Ok(None);
            }
            f.take().map(|f| f(db, &snap, &journal)).transpose()
        })?;
        result.ok_or_else(|| ApiError::unavailable("another database was opened meanwhile; read it again"))
    }

    /// Forgets the cached snapshot of `generation`: vectors written by the back-fill change
    /// duplication without touching the change journal, and a re-created file is another file.
    pub fn invalidate_snapshot(&self, generation: u64) {
        let old = {
            let mut g = lock(&self.snapshot);
            if g.as_ref().is_some_and(|s| s.generation == generation) {
                g.take()
            } else {
                None
            }
        };
        drop(old);
    }

    /// Replaces the connection of `generation` (the file was re-created under the same
    /// path); `conn` was opened by the caller, without any lock.
    pub fn reconnect(&self, generation: u64, conn: Connection) {
        let old = {
            let mut g = lock(&self.db);
            match g.as_mut().filter(|db| db.generation == generation) {
                Some(db) => Some(std::mem::replace(&mut db.conn, conn)),
                None => None,
            }
        };
        drop(old);
        self.invalidate_snapshot(generation);
    }

    /// Remembers the recent list the page is about to show.
    pub fn set_recent_shown(&self, list: Vec<PathBuf>) {
        *lock(&self.recent) = list;
    }

    /// The entry `index` of the recent list the page was shown.
    pub fn recent_shown(&self, index: usize) -> Option<PathBuf> {
        lock(&self.recent).get(index).cloned()
    }
}

/// `--db PATH` / `--db=PATH` from the arguments, else `$LETHE_DB`, else the database opened
/// last (`last_opened`, the head of the recent list, when that file still exists), else the
/// default path; made absolute against the working directory, so the window shows where the
/// file is. So a file opened from the File menu is where the next start opens again.
pub fn launch_path(args: &[String], last_opened: Option<PathBuf>) -> PathBuf {
    let explicit = db_flag(args).is_some() || std::env::var_os("LETHE_DB").is_some_and(|v| !v.is_empty());
    match last_opened.filter(|p| !explicit && p.is_file()) {
        Some(last) => last,
        None => db_path_from(args),
    }
}

fn db_flag(args: &[String]) -> Option<PathBuf> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--db" {
            if let Some(p) = it.next() {
                return Some(PathBuf::from(p));
            }
        } else if let Some(p) = a.strip_prefix("--db=") {
            return Some(PathBuf::from(p));
        }
    }
    None
}

/// `--db PATH` / `--db=PATH` from the arguments, else `$LETHE_DB`, else the default path;
/// made absolute against the working directory.
pub fn db_path_from(args: &[String]) -> PathBuf {
    let path = db_flag(args).unwrap_or_else(default_db_path);
    std::path::absolute(&path).unwrap_or(path)
}

pub use lethe_engine::store::default_db_path;

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("lethe-state-{name}-{}", uuid_like()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn uuid_like() -> String {
        format!(
            "{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
        )
    }

    const FACTS: FileFacts = FileFacts { memento: false, schema_version: 1, read_only: false };

    fn open_now(st: &AppState, path: &Path) -> u64 {
        let g = st.begin_open(path, OpenMode::Existing);
        let conn = store::open(path).unwrap();
        assert!(st.finish_open(g, Ok((OpenDb::new(g, path.to_path_buf(), conn, None), FACTS))));
        g
    }

    /// What a file dialog's content-type sniffing does to the store's files in this process:
    /// open each and close it again.
    fn sniff(path: &Path) {
        for suffix in ["", "-wal", "-shm"] {
            let mut name = path.as_os_str().to_os_string();
            name.push(suffix);
            if let Ok(f) = std::fs::File::open(&name) {
                drop(f);
            }
        }
    }

    /// Another program that reads the file and closes last (checkpointing and unlinking the WAL
    /// when it believes it is the last).
    fn another_program_reads(path: &Path) -> i64 {
        let script = "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\n\
                      print(c.execute('SELECT COUNT(*) FROM memory_item').fetchone()[0])\nc.close()";
        let out = std::process::Command::new("python3").args(["-c", script]).arg(path).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }

    fn remember(st: &AppState, text: &str) -> ApiResult<()> {
        let memory = lethe_engine::lifecycle::NewMemory::new(lethe_engine::Tier::Semantic, text);
        st.with_db(|db| lethe_engine::lifecycle::remember(&mut db.conn, &memory, "user", chrono::Utc::now()).map(drop))
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn locks_dropped_behind_sqlites_back_stop_the_windows_writes_until_the_file_is_opened_again() {
        let dir = temp_dir("locks");
        let path = dir.join("memory.db");
        let st = AppState::default();
        let told = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&told);
        st.set_trouble_sink(Arc::new(move |g, trouble, after| lock(&sink).push((g, trouble, after))));
        let g = open_now(&st, &path);
        remember(&st, "written before the dialog").unwrap();
        sniff(&path);
        assert_eq!(another_program_reads(&path), 1, "the other program sees the window's write");
        let err = remember(&st, "written after the dialog").unwrap_err();
        assert_eq!(err.code, crate::error::ErrorCode::DbUnavailable, "{}", err.message);
        assert!(err.message.contains("nothing was changed"), "{}", err.message);
        let told_now = lock(&told).clone();
        assert_eq!(told_now.len(), 1, "the trouble is reported once: {told_now:?}");
        assert_eq!(told_now[0].0, g);
        assert!(told_now[0].1.same_store(), "the same file, its locks or WAL lost: {:?}", told_now[0].1);
        // What lib.rs does on that report: a new generation, every old connection closed
        // first, then the file opened again.
        let g2 = st.begin_open(&path, OpenMode::Existing);
        st.retire_previous(g2);
        let conn = store::open(&path).unwrap();
        assert!(st.finish_open(g2, Ok((OpenDb::new(g2, path.clone(), conn, None), FACTS))));
        remember(&st, "written after opening again").unwrap();
        sniff(&path);
        assert_eq!(another_program_reads(&path), 2, "every write the window confirmed is in the file");
        assert!(remember(&st, "refused again").is_err(), "a second sniff is caught as well");
        assert_eq!(lock(&told).len(), 2, "and reported for the new generation");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_deleted_file_refuses_every_write_and_says_why() {
        let dir = temp_dir("deleted");
        let path = dir.join("memory.db");
        let st = AppState::default();
        open_now(&st, &path);
        remember(&st, "kept").unwrap();
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        let err = remember(&st, "would be written into a deleted file").unwrap_err();
        assert_eq!(err.code, crate::error::ErrorCode::DbUnavailable);
        assert!(err.message.contains("gone"), "{}", err.message);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn db_flag_wins_and_unknown_args_are_ignored() {
        let args: Vec<String> = ["app", "--foo", "--db", "/tmp/x.db", "bar"].iter().map(|s| s.to_string()).collect();
        assert_eq!(db_path_from(&args), PathBuf::from("/tmp/x.db"));
        let args: Vec<String> = ["app", "--db=/tmp/y.db"].iter().map(|s| s.to_string()).collect();
        assert_eq!(db_path_from(&args), PathBuf::from("/tmp/y.db"));
        let args: Vec<String> = ["app", "--db", "rel.db"].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            db_path_from(&args),
            std::env::current_dir().unwrap().join("rel.db"),
            "a relative --db is shown absolute"
        );
    }

    #[test]
    fn the_last_opened_file_is_reopened_unless_a_db_is_named() {
        let dir = temp_dir("launch");
        let last = dir.join("last.db");
        std::fs::write(&last, b"").unwrap();
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        if std::env::var_os("LETHE_DB").is_none() {
            assert_eq!(launch_path(&args(&["app"]), Some(last.clone())), last, "no --db: the file opened last");
            assert_eq!(
                launch_path(&args(&["app"]), Some(dir.join("gone.db"))),
                db_path_from(&args(&["app"])),
                "a last file that is gone: the default"
            );
        }
        assert_eq!(
            launch_path(&args(&["app", "--db", "/tmp/x.db"]), Some(last)),
            PathBuf::from("/tmp/x.db"),
            "--db wins over the last file"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn commands_wait_for_an_open_in_progress_and_then_see_the_new_file() {
        let dir = temp_dir("wait");
        let path = dir.join("a.db");
        let st = Arc::new(AppState::default());
        let g = st.begin_open(&path, OpenMode::Existing);
        assert_eq!(st.info().phase, Phase::Opening, "the path is known at once, the file not yet");
        assert_eq!(st.info().path.as_deref(), Some(path.as_path()));
        let waiter = {
            let st = Arc::clone(&st);
            std::thread::spawn(move || st.with_db(|db| Ok(db.path.clone())))
        };
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !waiter.is_finished(),
            "a command waits while the file opens, rather than failing or seeing the old file"
        );
        let conn = store::open(&path).unwrap();
        assert!(st.finish_open(g, Ok((OpenDb::new(g, path.clone(), conn, None), FACTS))));
        assert_eq!(waiter.join().unwrap().unwrap(), path);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_overtaken_open_is_discarded_and_a_failed_one_says_why() {
        let dir = temp_dir("overtaken");
        let (a, b) = (dir.join("a.db"), dir.join("b.db"));
        let st = AppState::default();
        let ga = st.begin_open(&a, OpenMode::Existing);
        let gb = st.begin_open(&b, OpenMode::Existing);
        let conn = store::open(&a).unwrap();
        assert!(
            !st.finish_open(ga, Ok((OpenDb::new(ga, a.clone(), conn, None), FACTS))),
            "a slower, older open must not replace the newer one"
        );
        assert!(st.finish_open(gb, Err("b.db: not a database".into())));
        let err = st.with_db(|_| Ok(())).unwrap_err();
        assert_eq!((err.code, err.message.as_str()), (crate::error::ErrorCode::DbUnavailable, "b.db: not a database"));
        assert_eq!(st.info().path.as_deref(), Some(b.as_path()));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn db_info_and_cheap_reads_answer_while_the_snapshot_loads() {
        let dir = temp_dir("cheap");
        let path = dir.join("a.db");
        let st = Arc::new(AppState::default());
        open_now(&st, &path);
        // Stand-in for a snapshot load of a large store: someone holds the snapshot lock.
        let held = lock(&st.snapshot);
        // The lock stays held until the answer comes: a read that waited for it would never
        // answer (the bound only ends the test; it is not a speed target).
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let st = Arc::clone(&st);
            std::thread::spawn(move || {
                let info = st.info();
                let settings = st.with_db(|db| lethe_engine::Settings::load(&db.conn));
                let _ = tx.send((info, settings.is_ok()));
            });
        }
        let (info, settings_ok) =
            rx.recv_timeout(Duration::from_secs(60)).expect("db_info and settings did not wait for the snapshot");
        assert_eq!((info.phase, settings_ok), (Phase::Open, true));
        let scorer = {
            let st = Arc::clone(&st);
            std::thread::spawn(move || st.snapshot().map(|(g, _)| g))
        };
        std::thread::sleep(Duration::from_millis(100));
        assert!(!scorer.is_finished(), "a read that needs scores does wait for the snapshot");
        drop(held);
        assert!(scorer.join().unwrap().is_ok());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn neighbours_a_load_searched_are_kept_for_the_next_launch() {
        let dir = temp_dir("keep");
        let path = dir.join("a.db");
        let now = chrono::Utc::now();
        {
            // An import stores no neighbour lists: the first load searches them.
            let mut conn = store::open(&path).unwrap();
            let mut jsonl = String::new();
            for i in 0..60 {
                let text = format!("Deploy of billing v2.{} failed: a missing env var", i % 7);
                jsonl.push_str(&serde_json::json!({ "type": "episodic", "content": text }).to_string());
                jsonl.push('\n');
            }
            let opts = lethe_engine::transfer::ImportOptions::new(now);
            lethe_engine::transfer::import(&mut conn, jsonl.as_bytes(), &opts).unwrap();
        }
        let lists = || -> i64 {
            let conn = store::open(&path).unwrap();
            conn.query_row("SELECT COUNT(*) FROM lethe_neighbour", [], |r| r.get(0)).unwrap()
        };
        assert_eq!(lists(), 0);
        let st = AppState::default();
        open_now(&st, &path);
        let (_, snap) = st.snapshot().unwrap();
        assert_eq!(snap.searched, 60, "the first load searched every memory");
        let deadline = Instant::now() + Duration::from_secs(60);
        while lists() < 60 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(lists(), 60, "every list the load searched is stored");
        let next = Snapshot::load(&store::open(&path).unwrap()).unwrap();
        assert_eq!(next.searched, 0, "the next launch searches nothing");
        assert_eq!(next.pairs(), snap.pairs());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
