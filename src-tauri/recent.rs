//! Recently opened database files, kept in a small JSON file in Lethe's data directory
//! (`$XDG_DATA_HOME/lethe/recent.json`), wherever `$LETHE_DB` points. Older versions kept it
//! beside the default database; that list is moved on first use. The list names where a
//! person keeps their memories, so the file is private to its owner (0600), like the
//! database itself.

use std::io::Write;
use std::path::{Path, PathBuf};

/// How many files the list keeps.
const KEEP: usize = 10;

const NAME: &str = "recent.json";

fn file() -> PathBuf {
    let file = lethe_engine::store::data_dir().join(NAME);
    move_old_list(&crate::state::default_db_path().with_file_name(NAME), &file);
    file
}

/// Moves the list an older version kept beside `$LETHE_DB` to `file`, once: only when `file`
/// does not exist yet. A list that cannot be moved is left where it was (losing it is harmless).
fn move_old_list(old: &Path, file: &Path) {
    if old == file || file.exists() || !old.is_file() {
        return;
    }
    let items = read(old);
    let names: Vec<String> = items.iter().map(|p| p.display().to_string()).collect();
    let moved = file
        .parent()
        .map_or(Ok(()), create_private_dir)
        .and_then(|()| serde_json::to_vec_pretty(&names).map_err(std::io::Error::other))
        .and_then(|json| write_private(file, &json));
    match moved {
        Ok(()) => {
            let _ = std::fs::remove_file(old);
        }
        Err(e) => eprintln!("lethe: cannot move the recent files list to {}: {e}", file.display()),
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

pub fn list() -> Vec<PathBuf> {
    read(&file())
}

/// Puts `path` first in the list. Losing the recent list is harmless, so a failure to write
/// it is only logged.
pub fn remember(path: &Path) {
    if let Err(e) = remember_in(&file(), path) {
        eprintln!("lethe: cannot update the recent files list: {e}");
    }
}

fn read(file: &Path) -> Vec<PathBuf> {
    std::fs::read(file)
        .ok()
        .and_then(|b| serde_json::from_slice::<Vec<String>>(&b).ok())
        .unwrap_or_default()
        .into_iter()
        .map(PathBuf::from)
        .collect()
}

fn remember_in(file: &Path, path: &Path) -> std::io::Result<()> {
    let mut items = read(file);
    items.retain(|p| p != path);
    items.insert(0, path.to_path_buf());
    items.truncate(KEEP);
    let names: Vec<String> = items.iter().map(|p| p.display().to_string()).collect();
    let json = serde_json::to_vec_pretty(&names).map_err(std::io::Error::other)?;
    // The data directory need not exist yet when the database lives elsewhere.
    if let Some(dir) = file.parent() {
        create_private_dir(dir)?;
    }
    write_private(file, &json)
}

/// Writes `bytes` to a fresh 0600 file beside `file` and renames it over `file`: the result
/// is 0600 whatever mode an older list had, a reader never sees half a list, and a symbolic
/// link at `file` is replaced rather than followed.
fn write_private(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.tmp", std::process::id()));
    let tmp = file.with_file_name(name);
    let _ = std::fs::remove_file(&tmp);
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let written = opts.open(&tmp).and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()));
    match written.and_then(|()| std::fs::rename(&tmp, file)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir() -> PathBuf {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let d = std::env::temp_dir().join(format!("lethe-recent-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[cfg(unix)]
    #[test]
    fn the_recent_list_is_private_even_when_an_older_one_was_not() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp_dir();
        let file = dir.join("recent.json");
        std::fs::write(&file, br#"["/old/one.db"]"#).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        remember_in(&file, Path::new("/home/me/a.db")).unwrap();
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600, "readable by its owner only");
        assert_eq!(
            read(&file),
            vec![PathBuf::from("/home/me/a.db"), PathBuf::from("/old/one.db")],
            "newest first, old entries kept"
        );
        let fresh = dir.join("fresh.json");
        remember_in(&fresh, Path::new("/x.db")).unwrap();
        assert_eq!(std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777, 0o600, "a new list too");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 2, "no temporary file left behind: {left:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_older_list_beside_the_database_moves_to_the_data_directory_once() {
        let dir = temp_dir();
        let old = dir.join("dbs").join("recent.json");
        std::fs::create_dir_all(old.parent().unwrap()).unwrap();
        std::fs::write(&old, br#"["/home/me/work.db", "/home/me/old.db"]"#).unwrap();
        let file = dir.join("data").join("lethe").join("recent.json");
        move_old_list(&old, &file);
        assert_eq!(
            read(&file),
            vec![PathBuf::from("/home/me/work.db"), PathBuf::from("/home/me/old.db")],
            "the same list, in order"
        );
        assert!(!old.exists(), "the old list is gone");
        // A list already in the data directory wins: a later old one is left alone.
        std::fs::write(&old, br#"["/elsewhere.db"]"#).unwrap();
        move_old_list(&old, &file);
        assert_eq!(read(&file)[0], PathBuf::from("/home/me/work.db"));
        assert!(old.exists(), "not moved over a newer list");
        // Remembering creates the data directory when it is missing.
        let fresh = dir.join("none").join("lethe").join("recent.json");
        remember_in(&fresh, Path::new("/x.db")).unwrap();
        assert_eq!(read(&fresh), vec![PathBuf::from("/x.db")]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_list_keeps_each_path_once_and_at_most_ten() {
        let dir = temp_dir();
        let file = dir.join("recent.json");
        for i in 0..12 {
            remember_in(&file, Path::new(&format!("/db/{i}.db"))).unwrap();
        }
        remember_in(&file, Path::new("/db/5.db")).unwrap();
        let l = read(&file);
        assert_eq!(l.len(), KEEP);
        assert_eq!(l[0], PathBuf::from("/db/5.db"));
        assert_eq!(l.iter().filter(|p| p.ends_with("5.db")).count(), 1, "moved to the front, not duplicated");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
