//! File choosers in a process of their own.
//!
//! A file chooser reads the folders it shows: GTK's opens every file there and closes it again
//! to sniff its content type. Shown in the window's process on the store's folder, that close
//! drops SQLite's POSIX locks on the database (locks belong to the process, and closing any
//! descriptor of a file drops them all); the next agent that closes its connection then
//! believes it is the last, checkpoints and unlinks the WAL, and the window's later writes go
//! into an unlinked file. So the window never shows a chooser itself: it runs its own binary
//! again with `--choose-file REQUEST` ([`child_main`]), which shows the dialog and prints the
//! answer as one line of JSON. Whatever that process opens and closes, its locks are its own.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::error::{ApiError, ApiResult};

/// The argument that turns the app's binary into a file chooser.
pub const CHILD_FLAG: &str = "--choose-file";

/// What to ask.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// A save dialog (a new file's name) rather than an open dialog.
    pub save: bool,
    pub title: String,
    /// The folder the dialog starts in.
    pub directory: Option<PathBuf>,
    /// The file name a save dialog suggests.
    pub file_name: Option<String>,
    /// `(label, extensions without the dot)`.
    pub filters: Vec<(String, Vec<String>)>,
}

/// The chooser's answer: the path picked, or `None` when the person cancelled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Answer {
    path: Option<PathBuf>,
}

/// Shows the chooser in a child process and waits for it (call it off the main thread).
/// The path picked must be a plain absolute path; `None` when the person cancelled or closed
/// the dialog.
pub fn ask(request: &Request) -> ApiResult<Option<PathBuf>> {
    let exe =
        std::env::current_exe().map_err(|e| ApiError::internal(format!("cannot find Lethe's own binary: {e}")))?;
    let json = serde_json::to_string(request).map_err(|e| ApiError::internal(e.to_string()))?;
    let out = Command::new(exe)
        .arg(CHILD_FLAG)
        .arg(json)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| ApiError::internal(format!("the file dialog could not start: {e}")))?;
    answer_of(&out.stdout, out.status.success(), &String::from_utf8_lossy(&out.stderr))
}

fn answer_of(stdout: &[u8], ok: bool, stderr: &str) -> ApiResult<Option<PathBuf>> {
    let line = String::from_utf8_lossy(stdout);
    let line = line.lines().rev().find(|l| l.trim_start().starts_with('{'));
    match (ok, line.map(serde_json::from_str::<Answer>)) {
        (true, Some(Ok(Answer { path: Some(p) }))) => crate::files::plain_absolute(&p).map(Some),
        (true, Some(Ok(Answer { path: None }))) => Ok(None),
        // Killed or crashed before answering: nothing was chosen.
        (false, None) => Ok(None),
        _ => Err(ApiError::internal(format!("the file dialog failed: {}", stderr.trim()))),
    }
}

/// The child's side: `Some(exit code)` when the process was started as a chooser (then the
/// caller exits with it instead of opening the window), `None` otherwise.
pub fn child_main(args: &[String]) -> Option<i32> {
    let at = args.iter().position(|a| a == CHILD_FLAG)?;
    let Some(request) = args.get(at + 1).and_then(|j| serde_json::from_str::<Request>(j).ok()) else {
        eprintln!("lethe-app {CHILD_FLAG}: expected one JSON request");
        return Some(2);
    };
    let path = show(&request);
    println!("{}", serde_json::to_string(&Answer { path }).expect("a path serialises"));
    Some(0)
}

fn show(request: &Request) -> Option<PathBuf> {
    let mut dialog = rfd::FileDialog::new().set_title(&request.title);
    if let Some(dir) = request.directory.as_deref().filter(|d| d.is_dir()) {
        dialog = dialog.set_directory(dir);
    }
    if let Some(name) = &request.file_name {
        dialog = dialog.set_file_name(name);
    }
    for (label, extensions) in &request.filters {
        dialog = dialog.add_filter(label, extensions);
    }
    if request.save {
        dialog.save_file()
    } else {
        dialog.pick_file()
    }
}

/// The folder of a database file, for a dialog to start in (none for a team server).
pub fn folder_of(path: Option<&Path>) -> Option<PathBuf> {
    path.filter(|p| !crate::is_server(p)).and_then(Path::parent).map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_childs_answer_is_read_and_checked() {
        assert_eq!(answer_of(br#"{"path":"/home/me/m.db"}"#, true, "").unwrap(), Some(PathBuf::from("/home/me/m.db")));
        assert_eq!(answer_of(b"Gtk-Message: noise\n{\"path\":null}\n", true, "").unwrap(), None, "cancelled");
        assert_eq!(answer_of(b"", false, "Killed").unwrap(), None, "a dialog killed before answering chose nothing");
        let err = answer_of(br#"{"path":"relative.db"}"#, true, "").unwrap_err();
        assert_eq!(err.code, crate::error::ErrorCode::InvalidInput, "a relative path is refused");
        assert!(answer_of(b"garbage", true, "boom").is_err());
    }

    #[test]
    fn a_request_travels_as_json() {
        let r = Request {
            save: true,
            title: "Export chart".into(),
            directory: Some(PathBuf::from("/tmp")),
            file_name: Some("lethe-decay.svg".into()),
            filters: vec![("SVG".into(), vec!["svg".into()])],
        };
        let back: Request = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        let args = vec!["lethe-app".to_string(), CHILD_FLAG.to_string(), "not json".to_string()];
        assert_eq!(child_main(&args), Some(2), "a bad request is refused before any dialog");
        assert_eq!(child_main(&["lethe-app".to_string()]), None, "the window starts as usual");
    }
}
