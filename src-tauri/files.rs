//! Which paths the window accepts and how it writes the files a person asked for.
//!
//! Every path comes from the native dialog (opened by Rust), the recent list (kept by Rust)
//! or the command line; the page never supplies one. Still, each is checked to be a plain
//! absolute path before use: no `file:` URI (SQLite would parse one as options), nothing
//! relative to wherever the process happens to run, no `..`. Exports never write through a
//! symbolic link and only ever replace a regular file.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Component, Path, PathBuf};

use crate::error::{ApiError, ApiResult};

/// `path` if it is a plain absolute path, else an `invalid_input` error saying why.
pub fn plain_absolute(path: &Path) -> ApiResult<PathBuf> {
    let raw = path.as_os_str().as_encoded_bytes();
    let shown = path.display();
    if raw.len() >= 5 && raw[..5].eq_ignore_ascii_case(b"file:") {
        return Err(ApiError::invalid(format!("{shown}: a file: URI is not accepted, only a plain path")));
    }
    if raw.contains(&0) {
        return Err(ApiError::invalid("a path may not contain a NUL byte"));
    }
    if !path.is_absolute() {
        return Err(ApiError::invalid(format!("{shown}: not an absolute path")));
    }
    if path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(ApiError::invalid(format!("{shown}: a path with .. is not accepted")));
    }
    if path.file_name().is_none_or(OsStr::is_empty) {
        return Err(ApiError::invalid(format!("{shown}: not a file name")));
    }
    Ok(path.to_path_buf())
}

/// Creates the empty file of a new database at `path`, refusing anything already there
/// (a file, a directory, or a symbolic link, dangling or not): `create_new` is one atomic
/// O_CREAT|O_EXCL, which never follows a link. The file is private to its owner (0600).
pub fn create_new_db_file(path: &Path) -> ApiResult<()> {
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    match opts.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            Err(ApiError::invalid(format!("{} already exists; use Open", path.display())))
        }
        Err(e) => Err(ApiError::invalid(format!("cannot create {}: {e}", path.display()))),
    }
}

/// Refuses `target` when it is one of the open store's own files (the database, its WAL,
/// `-shm` or `-journal`), by name or by identity (a hard link): replacing it would destroy the
/// store, and even opening and closing it would drop SQLite's locks on it.
pub fn refuse_store_files(target: &Path, store: Option<&Path>) -> ApiResult<()> {
    let Some(store) = store.filter(|s| !crate::is_server(s)) else { return Ok(()) };
    let same = |a: &Path, b: &Path| {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
                return x.dev() == y.dev() && x.ino() == y.ino();
            }
        }
        a == b
    };
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = store.as_os_str().to_os_string();
        name.push(suffix);
        if same(target, Path::new(&name)) {
            return Err(ApiError::invalid(format!(
                "{} is one of the open database's own files; choose another name",
                target.display()
            )));
        }
    }
    Ok(())
}

/// Writes `bytes` to `path`: a new file, or an existing regular file replaced in place.
/// A symbolic link at `path` is refused, not followed (its target stays untouched), and so
/// is anything that is not a regular file (a FIFO, a device, a directory).
pub fn write_export(path: &Path, bytes: &[u8]) -> ApiResult<()> {
    let mut file = open_for_export(path)?;
    let meta = file.metadata().map_err(|e| cannot_write(path, &e))?;
    if !meta.is_file() {
        return Err(ApiError::invalid(format!("{} is not a regular file; Lethe writes only to files", path.display())));
    }
    // Truncate only now that the open file is known to be a regular file.
    file.set_len(0)
        .and_then(|()| file.write_all(bytes))
        .and_then(|()| file.sync_all())
        .map_err(|e| cannot_write(path, &e))
}

#[cfg(unix)]
fn open_for_export(path: &Path) -> ApiResult<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NOFOLLOW: a link as the last component fails with ELOOP instead of being followed.
    // O_NONBLOCK: opening a FIFO without a reader fails at once (ENXIO) instead of hanging;
    // on a regular file it changes nothing.
    let opened = OpenOptions::new()
        .write(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    opened.map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => {
            ApiError::invalid(format!("{} is a symbolic link; Lethe does not write through links", path.display()))
        }
        Some(libc::ENXIO) | Some(libc::EISDIR) => {
            ApiError::invalid(format!("{} is not a regular file; Lethe writes only to files", path.display()))
        }
        _ => cannot_write(path, &e),
    })
}

#[cfg(not(unix))]
fn open_for_export(path: &Path) -> ApiResult<File> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(ApiError::invalid(format!(
            "{} is a symbolic link; Lethe does not write through links",
            path.display()
        )));
    }
    OpenOptions::new().write(true).create(true).open(path).map_err(|e| cannot_write(path, &e))
}

fn cannot_write(path: &Path, e: &std::io::Error) -> ApiError {
    ApiError::invalid(format!("cannot write {}: {e}", path.display()))
}

/// The file name the save dialog suggests for a chart: from the chart's kind and, for a
/// memory's projection, its id reduced to characters that are safe in a file name.
pub fn chart_file_name(kind: &lethe_engine::ChartKind) -> String {
    match kind {
        lethe_engine::ChartKind::Decay { .. } => "lethe-decay.svg".into(),
        lethe_engine::ChartKind::Distribution => "lethe-distribution.svg".into(),
        lethe_engine::ChartKind::Projection { id } => {
            let safe: String =
                id.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-').take(64).collect();
            format!("lethe-{safe}.svg")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let d = std::env::temp_dir().join(format!("lethe-files-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn only_plain_absolute_paths_pass() {
        let ok = |p: &str| plain_absolute(Path::new(p));
        assert_eq!(ok("/home/me/memory.db").unwrap(), PathBuf::from("/home/me/memory.db"));
        for (p, why) in [
            ("file:///tmp/x.db", "a file: URI"),
            ("FILE:/tmp/x.db?mode=rwc", "a file: URI in capitals"),
            ("file:x.db", "a relative file: URI"),
            ("memory.db", "a relative path"),
            ("./memory.db", "a relative path"),
            ("", "an empty path"),
            ("/tmp/../etc/x.db", "a path climbing with .."),
            ("/", "no file name"),
        ] {
            let err = ok(p).expect_err(why);
            assert_eq!(err.code, crate::error::ErrorCode::InvalidInput, "{why}: {p:?}");
        }
        assert!(ok("/tmp/x\0.db").is_err(), "a NUL byte");
    }

    #[cfg(unix)]
    #[test]
    fn an_export_onto_a_symlink_is_refused_and_its_target_untouched() {
        let dir = temp_dir("symlink");
        let target = dir.join("precious.txt");
        std::fs::write(&target, b"keep me").unwrap();
        let link = dir.join("chart.svg");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = write_export(&link, b"<svg/>").unwrap_err();
        assert_eq!(err.code, crate::error::ErrorCode::InvalidInput);
        assert!(err.message.contains("symbolic link"), "{}", err.message);
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me", "the link's target is untouched");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link itself stays a link");
        // A dangling link is refused too: following it would create the file it points to.
        let dangling = dir.join("dangling.svg");
        std::os::unix::fs::symlink(dir.join("nowhere.svg"), &dangling).unwrap();
        assert!(write_export(&dangling, b"<svg/>").is_err());
        assert!(!dir.join("nowhere.svg").exists(), "nothing was created at the dangling link's target");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn an_export_creates_a_file_or_replaces_a_regular_one_and_refuses_a_fifo() {
        let dir = temp_dir("regular");
        let path = dir.join("chart.svg");
        write_export(&path, b"a much longer first version").unwrap();
        write_export(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second", "replaced entirely, no tail of the old file");
        let fifo = dir.join("fifo.svg");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success(), "mkfifo {}", fifo.display());
        let err = write_export(&fifo, b"x").expect_err("a FIFO is not a regular file (and must not hang)");
        assert!(err.message.contains("not a regular file"), "{}", err.message);
        assert!(write_export(&dir, b"x").is_err(), "a directory is refused");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_new_database_file_is_private_and_never_replaces_anything() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp_dir("newdb");
        let path = dir.join("memory.db");
        create_new_db_file(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(create_new_db_file(&path).unwrap_err().message.contains("already exists"));
        let target = dir.join("elsewhere.db");
        let link = dir.join("link.db");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(create_new_db_file(&link).is_err(), "a dangling link is something already there");
        assert!(!target.exists(), "and its target was not created");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_export_onto_the_stores_own_files_is_refused() {
        let dir = temp_dir("own");
        let db = dir.join("memory.db");
        std::fs::write(&db, b"the store").unwrap();
        for name in ["memory.db", "memory.db-wal", "memory.db-shm", "memory.db-journal"] {
            let err = refuse_store_files(&dir.join(name), Some(&db)).expect_err(name);
            assert!(err.message.contains("own files"), "{}", err.message);
        }
        #[cfg(unix)]
        {
            let link = dir.join("chart.svg");
            std::fs::hard_link(&db, &link).unwrap();
            assert!(refuse_store_files(&link, Some(&db)).is_err(), "a hard link to the store is the store");
        }
        assert!(refuse_store_files(&dir.join("lethe-decay.svg"), Some(&db)).is_ok());
        assert!(refuse_store_files(&dir.join("memory.db"), None).is_ok(), "no store open");
        assert_eq!(std::fs::read(&db).unwrap(), b"the store");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn chart_file_names_keep_only_safe_characters() {
        let p = lethe_engine::ChartKind::Projection { id: "mem_1/../../x y".into() };
        assert_eq!(chart_file_name(&p), "lethe-mem_1xy.svg", "no slash, dot or space reaches the suggested name");
    }
}
