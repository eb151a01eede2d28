//! Recently opened database files, kept in a small JSON file beside the default database.

use std::path::PathBuf;

fn file() -> PathBuf {
    crate::state::default_db_path().with_file_name("recent.json")
}

pub fn list() -> Vec<String> {
    std::fs::read(file()).ok().and_then(|b| serde_json::from_slice::<Vec<String>>(&b).ok()).unwrap_or_default()
}

pub fn remember(path: &str) {
    let mut items = list();
    items.retain(|p| p != path);
    items.insert(0, path.to_string());
    items.truncate(10);
    if let Ok(json) = serde_json::to_vec_pretty(&items) {
        // Losing the recent list is harmless, so a write failure is ignored.
        let _ = std::fs::write(file(), json);
    }
}
