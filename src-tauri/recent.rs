//! Recently opened database files, kept in a small JSON file beside the default database.
//! The list names where a person keeps their memories, so the file is private to its owner
//! (0600), like the database itself.

use std::io::Write;
use std::path::{Path, PathBuf};

/// How many files the list keeps.
const KEEP: usize = 10;

fn file() -> PathBuf {
    crate::state::default_db_path().with_file_name("recent.json")
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
