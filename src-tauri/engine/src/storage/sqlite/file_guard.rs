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
//!
//! A long-lived process (the window) also holds a [`LockAnchor`]: the two locks SQLite keeps
//! for as long as a connection is open (shared on the database file, shared on the `-shm`'s
//! "in use" byte), taken again as Linux open-file-description locks on descriptors of its
//! own. Those belong to that descriptor, not to the process, so no stray close elsewhere in
//! the process drops them: while the anchor is held no other process can take the exclusive
//! lock with which the last connection checkpoints and unlinks the WAL, nor believe it is the
//! first and reset the `-shm` under this one.

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
        guard.locks_visible = guard.locks_held(LOCK_READS) == Some(true);
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
        if self.locks_visible && self.locks_held(LOCK_READS) == Some(false) {
            return Err(FileTrouble::LocksLost);
        }
        Ok(())
    }

    /// Whether this process holds a lock on both the database file and its `-shm`, by
    /// `/proc/locks` read up to `reads` times until it shows them; `None` where that cannot be
    /// read. One read is no snapshot: the kernel writes the table a page at a time, and a lock
    /// taken or released anywhere on the machine between two pages shifts the lines, so one
    /// can be skipped. A lock that is really gone stays gone, so it is missing from every read.
    fn locks_held(&self, reads: usize) -> Option<bool> {
        for read in 0..reads {
            if read > 0 {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            if self.locks_in_one_read()? {
                return Some(true);
            }
        }
        Some(false)
    }

    /// [`FileGuard::locks_held`] by one read of `/proc/locks`.
    fn locks_in_one_read(&self) -> Option<bool> {
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

/// Reads of `/proc/locks` that must all miss a lock before it counts as dropped (see
/// [`FileGuard::locks_held`]); a held lock is found by the first read that shows it.
const LOCK_READS: usize = 4;

/// SQLite's unix locking layout: the byte range of the shared lock on the database file
/// (`SHARED_FIRST`, `SHARED_SIZE`), and the `-shm`'s "in use" byte (`UNIX_SHM_DMS`).
#[cfg(target_os = "linux")]
const DB_SHARED: (i64, i64) = (0x4000_0002, 510);
#[cfg(target_os = "linux")]
const SHM_IN_USE: (i64, i64) = (120 + 8, 1);

/// Shared locks on a store's database file and `-shm` that no close elsewhere in the process
/// can drop (see the module's documentation). Dropping it releases them: drop it only after
/// every connection of the process to the file is closed, since closing its descriptors drops
/// the process's other (POSIX) locks on the files as any close does.
#[derive(Debug)]
pub struct LockAnchor {
    db: FileId,
    _files: Vec<std::fs::File>,
}

impl LockAnchor {
    /// Whether the anchor holds the file that is at `path` now.
    pub fn is_for(&self, path: &Path) -> bool {
        file_id(path) == Some(self.db)
    }

    /// Takes the anchor for `conn`'s file; `None` for a team server, an in-memory store, a
    /// platform without open-file-description locks, or when another process holds an
    /// exclusive lock right now (it is closing; the guard's checks still hold).
    pub fn take(conn: &Connection) -> Result<Option<LockAnchor>> {
        let Some(path) = conn.path().filter(|p| !p.is_empty()).map(PathBuf::from) else { return Ok(None) };
        #[cfg(target_os = "linux")]
        {
            let mut files = Vec::new();
            for (suffix, (start, len)) in [("", DB_SHARED), ("-shm", SHM_IN_USE)] {
                let Ok(file) = std::fs::File::open(sibling(&path, suffix)) else { return Ok(None) };
                if !read_lock_description(&file, start, len) {
                    return Ok(None);
                }
                files.push(file);
            }
            let Some(db) = file_id(&path) else { return Ok(None) };
            Ok(Some(LockAnchor { db, _files: files }))
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = path;
            Ok(None)
        }
    }
}

/// An open-file-description read lock on `len` bytes from `start` of `file`; false when the
/// kernel refuses it (a conflicting lock, or no OFD locks).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn read_lock_description(file: &std::fs::File, start: i64, len: i64) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: `flock` is plain data, zeroed then filled; the descriptor is open for the call;
    // F_OFD_SETLK reads the struct and does not keep it.
    unsafe {
        let mut lock: libc::flock = std::mem::zeroed();
        lock.l_type = libc::F_RDLCK as libc::c_short;
        lock.l_whence = libc::SEEK_SET as libc::c_short;
        lock.l_start = start as libc::off_t;
        lock.l_len = len as libc::off_t;
        libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &lock) == 0
    }
}

/// Closes `conn` without the checkpoint SQLite makes when the last connection of a process
/// closes: after a [`FileTrouble`] that checkpoint could copy pages of an unlinked WAL over
/// newer pages another program wrote, or unlink (by its name) the WAL other programs now use.
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

    /// Locks of this process on other files (POSIX locks, as SQLite takes on the `-shm`'s
    /// other bytes) taken and released as fast as two threads can while the guard checks:
    /// each change shifts the lines of `/proc/locks` under a reader, which then skips one now
    /// and again. A window that took that for lost locks opened its file again in the middle
    /// of a person's work.
    #[cfg(target_os = "linux")]
    #[test]
    #[allow(unsafe_code)]
    fn locks_that_come_and_go_elsewhere_meanwhile_are_no_lost_locks() {
        use std::os::fd::AsRawFd;
        use std::sync::atomic::{AtomicBool, Ordering};
        fn set(file: &std::fs::File, kind: libc::c_int) {
            // SAFETY: as in `read_lock_description`: a zeroed plain struct read by the call.
            unsafe {
                let mut lock: libc::flock = std::mem::zeroed();
                lock.l_type = kind as libc::c_short;
                lock.l_whence = libc::SEEK_SET as libc::c_short;
                lock.l_len = 1;
                libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &lock);
            }
        }
        let (dir, path) = temp_db("churn");
        let conn = store::open(&path).unwrap();
        let guard = FileGuard::capture(&conn).unwrap().unwrap();
        assert!(guard.locks_visible);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            for t in 0..2 {
                let (dir, stop) = (&dir, &stop);
                s.spawn(move || {
                    let files: Vec<_> = (0..64)
                        .map(|i| {
                            let f = dir.join(format!("other-{t}-{i}"));
                            std::fs::OpenOptions::new()
                                .read(true)
                                .write(true)
                                .create(true)
                                .truncate(false)
                                .open(f)
                                .unwrap()
                        })
                        .collect();
                    while !stop.load(Ordering::Relaxed) {
                        files.iter().for_each(|f| set(f, libc::F_WRLCK));
                        files.iter().for_each(|f| set(f, libc::F_UNLCK));
                    }
                });
            }
            let lost = (0..5000).filter(|_| guard.check().is_err()).count();
            stop.store(true, Ordering::Relaxed);
            assert_eq!(lost, 0, "checks that saw lost locks while every lock was held");
        });
        assert_eq!(guard.check(), Ok(()));
        drop(std::fs::File::open(&path).unwrap());
        assert_eq!(guard.check(), Err(FileTrouble::LocksLost), "a real loss is still seen");
        close_without_checkpoint(conn);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A stray open and close of the database and its `-shm` in this process (what a file
    /// dialog does), then another program (not Lethe) that reads and closes, believing itself
    /// the last.
    #[cfg(target_os = "linux")]
    fn stray_close_then_another_program_closes_last(path: &Path) {
        drop(std::fs::File::open(path).unwrap());
        drop(std::fs::File::open(sibling(path, "-shm")).unwrap());
        let script = "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nc.execute('SELECT COUNT(*) FROM memory_item').fetchall()\nc.close()";
        let out = std::process::Command::new("python3").args(["-c", script]).arg(path).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn with_an_anchor_another_program_closing_last_cannot_unlink_the_wal_after_a_stray_close() {
        let (dir, path) = temp_db("anchor");
        let conn = store::open(&path).unwrap();
        let anchor = LockAnchor::take(&conn).unwrap().expect("Linux has open-file-description locks");
        let guard = FileGuard::capture(&conn).unwrap().unwrap();
        stray_close_then_another_program_closes_last(&path);
        assert_eq!(
            guard.check(),
            Err(FileTrouble::LocksLost),
            "SQLite's own locks are gone, but the WAL and -shm are still the connection's"
        );
        close_without_checkpoint(conn);
        drop(anchor);
        // Without the anchor the same sequence costs the WAL.
        let conn = store::open(&path).unwrap();
        let guard = FileGuard::capture(&conn).unwrap().unwrap();
        stray_close_then_another_program_closes_last(&path);
        assert_eq!(guard.check(), Err(FileTrouble::WalReplaced), "the other program unlinked the WAL");
        close_without_checkpoint(conn);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
