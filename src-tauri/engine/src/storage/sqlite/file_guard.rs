//! Whether a connection's files are still the files at its path, and whether this process
//! still holds SQLite's locks on them.
//!
//! POSIX record locks belong to a process and a file, not to a descriptor: closing *any*
//! descriptor of the database file or of its `-shm` drops every lock the process holds on
//! it, SQLite's included. A file dialog that shows the store's folder and sniffs the files'
//! content type does exactly that, on a thread SQLite knows nothing of. The next process that
//! closes its connection then believes it is the last one, checkpoints and unlinks the WAL,
//! and a connection of this process goes on writing into an unlinked file: every later write
//! is confirmed and lost. [`FileGuard`] notices each step of that, whatever caused it:
//!
//! - the database file, its WAL or its `-shm` at the path is not the one the connection
//!   opened (device and inode), or is gone;
//! - on Linux, `/proc/locks` no longer lists this process's shared lock on the database file
//!   or on the `-shm` (checked only where the locks were seen when the guard was taken: a
//!   file system that reports other inode numbers there is checked by identity alone).
//!
//! Lost locks cannot be taken back by one connection: SQLite shares them between all the
//! connections of a process to one file and asks the kernel only for the first. Whoever sees
//! a [`FileTrouble`] closes every connection of the process to the file, without the
//! checkpoint a close would make ([`close_without_checkpoint`]), and opens it again.

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::storage::db::Connection;

/// Device and inode of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
}

fn file_id(path: &Path) -> Option<FileId> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| FileId { dev: m.dev(), ino: m.ino() })
    }
    #[cfg(not(unix))]
    {
        // Elsewhere only presence is known: a replaced file is not told from the original.
        std::fs::metadata(path).ok().map(|_| FileId { dev: 0, ino: 0 })
    }
}

/// What is wrong with the files a connection uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileTrouble {
    /// No file at the path any more (deleted, or moved away).
    Missing,
    /// Another file is at the path now (replaced, restored from a backup, re-created).
    Replaced,
    /// The WAL or the shared-memory file the connection uses was unlinked or replaced: what
    /// it writes there no longer reaches the file other programs read.
    WalReplaced,
    /// The process lost SQLite's locks on the file (something in it closed a descriptor of
    /// the file); the next program to close may unlink the WAL under this one.
    LocksLost,
}

impl FileTrouble {
    /// Whether the file at the path is still the store that was opened (only the connection
    /// went wrong), as opposed to a file that is gone or another file.
    pub fn same_store(&self) -> bool {
        matches!(self, FileTrouble::WalReplaced | FileTrouble::LocksLost)
    }
}

impl std::fmt::Display for FileTrouble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FileTrouble::Missing => "the database file is gone (deleted or moved)",
            FileTrouble::Replaced => "another file has taken the database file's place",
            FileTrouble::WalReplaced => "the database's write-ahead log was removed by another program",
            FileTrouble::LocksLost => "the database's locks were dropped by something in this process",
        })
    }
}

/// The identity of a connection's files when it was opened, to compare with later.
#[derive(Debug, Clone)]
pub struct FileGuard {
    path: PathBuf,
    db: FileId,
    wal: Option<FileId>,
    shm: Option<FileId>,
    /// Whether `/proc/locks` showed this process's locks on the file and its `-shm` when the
    /// guard was taken (only then is their absence later a finding).
    locks_visible: bool,
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

impl FileGuard {
    /// Takes the identity of `conn`'s files; `None` for a team server or an in-memory store.
    /// Call it once the connection has read the file (as [`super::open`] does), so that it
    /// has its WAL and `-shm` open and locked.
    pub fn capture(conn: &Connection) -> Result<Option<FileGuard>> {
        let Some(path) = conn.path() else { return Ok(None) };
        let path = PathBuf::from(path);
        let Some(db) = file_id(&path) else { return Ok(None) };
        let wal = file_id(&sibling(&path, "-wal"));
        let shm = file_id(&sibling(&path, "-shm"));
        let mut guard = FileGuard { path, db, wal, shm, locks_visible: false };
        guard.locks_visible = guard.locks_held() == Some(true);
        Ok(Some(guard))
    }

    /// Whether this process's locks on the file were seen when the guard was taken. Right
    /// after an open they are, unless another connection of this process to the file is
    /// still open (SQLite then asks the kernel for nothing new) or the file system does not
    /// show them.
    pub fn locks_seen(&self) -> bool {
        self.locks_visible
    }

    /// The database file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `Ok` while the files at the path are those of the connection and this process holds
    /// its locks on them; else what went wrong. A few `stat`s and, on Linux, one read of
    /// `/proc/locks`: cheap enough for every write.
    pub fn check(&self) -> std::result::Result<(), FileTrouble> {
        match file_id(&self.path) {
            None => return Err(FileTrouble::Missing),
            Some(id) if id != self.db => return Err(FileTrouble::Replaced),
            Some(_) => {}
        }
        for (known, suffix) in [(self.wal, "-wal"), (self.shm, "-shm")] {
            if known.is_some() && file_id(&sibling(&self.path, suffix)) != known {
                return Err(FileTrouble::WalReplaced);
            }
        }
        if self.locks_visible && self.locks_held() == Some(false) {
            return Err(FileTrouble::LocksLost);
        }
        Ok(())
    }

    /// Whether this process holds a lock on both the database file and its `-shm`, by
    /// `/proc/locks`; `None` where that cannot be read.
    fn locks_held(&self) -> Option<bool> {
        let shm = self.shm?;
        let table = std::fs::read_to_string("/proc/locks").ok()?;
        let pid = std::process::id().to_string();
        let (mut on_db, mut on_shm) = (false, false);
        for line in table.lines() {
            // "1: POSIX  ADVISORY  READ 1234 fd:01:5678 128 128" (a blocked request has "->").
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 6 || fields[1] != "POSIX" || fields[2] == "->" || fields[4] != pid {
                continue;
            }
            let Some(ino) = fields[5].rsplit(':').next().and_then(|i| i.parse::<u64>().ok()) else { continue };
            on_db |= ino == self.db.ino;
            on_shm |= ino == shm.ino;
        }
        Some(on_db && on_shm)
    }
}

/// Sets SQLite's persistent-WAL file control on a connection: when it is the last to close,
/// it checkpoints the WAL but leaves the file in place instead of unlinking it. A process
/// that believes it is the last one (because another process lost its locks, see the module's
/// documentation) then cannot pull the WAL from under a connection that still writes to it.
/// The WAL left behind is empty of anything not already in the database file, and the hard
/// delete truncates it to zero bytes as before.
#[allow(unsafe_code)]
pub(super) fn keep_wal_on_close(raw: &rusqlite::Connection) -> Result<()> {
    let mut on: std::os::raw::c_int = 1;
    // SAFETY: the handle belongs to `raw`, which outlives the call; "main" is a NUL-terminated
    // string; SQLITE_FCNTL_PERSIST_WAL takes a pointer to an int, which `on` is.
    let rc = unsafe {
        rusqlite::ffi::sqlite3_file_control(
            raw.handle(),
            c"main".as_ptr(),
            rusqlite::ffi::SQLITE_FCNTL_PERSIST_WAL,
            (&raw mut on).cast(),
        )
    };
    if rc != rusqlite::ffi::SQLITE_OK && rc != rusqlite::ffi::SQLITE_NOTFOUND {
        return Err(rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rc), None).into());
    }
    Ok(())
}

/// Closes `conn` without the checkpoint SQLite makes when the last connection of a process
/// closes: after a [`FileTrouble`] that checkpoint could copy pages of an unlinked WAL over
/// newer pages another program wrote, or (without the persistent WAL) unlink the WAL other
/// programs now use.
pub fn close_without_checkpoint(conn: Connection) {
    no_checkpoint_on_close(&conn);
    drop(conn);
}

/// Makes `conn` close without a checkpoint whenever it is dropped (see
/// [`close_without_checkpoint`]): for a process that must be able to drop its connections
/// at any time after a [`FileTrouble`]. The WAL is checkpointed as usual while it runs.
pub fn no_checkpoint_on_close(conn: &Connection) {
    if let Some(raw) = conn.sqlite() {
        // Best effort: a connection that cannot take the setting closes as before.
        let _ = raw.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store;

    fn temp_db(name: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("lethe-guard-{name}-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("memory.db");
        (dir, db)
    }

    #[test]
    fn a_fresh_connection_passes_and_a_deleted_or_replaced_file_does_not() {
        let (dir, path) = temp_db("identity");
        let conn = store::open(&path).unwrap();
        let guard = FileGuard::capture(&conn).unwrap().expect("a file has a guard");
        assert_eq!(guard.check(), Ok(()), "nothing happened yet");
        drop(conn);
        std::fs::rename(&path, dir.join("moved.db")).unwrap();
        assert_eq!(guard.check(), Err(FileTrouble::Missing));
        drop(store::open(&path).unwrap());
        assert_eq!(guard.check(), Err(FileTrouble::Replaced), "a new file at the same path is another store");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn lethes_connections_leave_the_wal_in_place_when_they_close_last() {
        let (dir, path) = temp_db("persist");
        let conn = store::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE IF NOT EXISTS t (x); INSERT INTO t VALUES (1);").unwrap();
        drop(conn);
        assert!(
            sibling(&path, "-wal").exists(),
            "the last Lethe connection to close checkpoints but never unlinks the WAL another \
             process might still write to"
        );
        let conn = store::open(&path).unwrap();
        let n: i64 = conn.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 1, "what was written is in the file");
        drop(conn);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_unlinked_wal_is_noticed() {
        let (dir, path) = temp_db("wal");
        let conn = store::open(&path).unwrap();
        let guard = FileGuard::capture(&conn).unwrap().unwrap();
        std::fs::remove_file(sibling(&path, "-wal")).unwrap();
        assert_eq!(guard.check(), Err(FileTrouble::WalReplaced));
        assert!(guard.check().unwrap_err().same_store());
        close_without_checkpoint(conn);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn closing_any_descriptor_of_the_file_in_this_process_is_noticed_as_lost_locks() {
        let (dir, path) = temp_db("locks");
        let conn = store::open(&path).unwrap();
        let guard = FileGuard::capture(&conn).unwrap().unwrap();
        assert!(guard.locks_visible, "this file system shows the locks in /proc/locks");
        // What a file dialog's content-type sniffing does: open, read a little, close.
        drop(std::fs::File::open(sibling(&path, "-shm")).unwrap());
        assert_eq!(guard.check(), Err(FileTrouble::LocksLost));
        // Closing every connection and opening again takes the locks again.
        close_without_checkpoint(conn);
        let conn = store::open(&path).unwrap();
        let again = FileGuard::capture(&conn).unwrap().unwrap();
        assert_eq!(again.check(), Ok(()));
        drop(std::fs::File::open(&path).unwrap());
        assert_eq!(again.check(), Err(FileTrouble::LocksLost), "the database file's own lock too");
        close_without_checkpoint(conn);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
