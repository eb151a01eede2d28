//! The events the shell emits to the window, with their payloads. The UI treats
//! `db://changed` as "re-fetch"; when each event fires is described in docs/IPC.md.

use serde::Serialize;
use ts_rs::TS;

pub const DB_CHANGED: &str = "db://changed";
pub const DB_STATUS: &str = "db://status";
/// Payload: `DbInfo` (commands.rs), when opening a file finished or failed, and again when
/// its first scoring snapshot is loaded.
pub const DB_OPENED: &str = "db://opened";
pub const FORGET_PROGRESS: &str = "forget://progress";
pub const VECTORS_PROGRESS: &str = "vectors://progress";
pub const SCORING_PROGRESS: &str = "scoring://progress";

/// Payload of `db://changed`: committed changes by any process.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct DbChanged {
    pub data_version: i64,
    /// The memories touched; null when unknown or too many (re-fetch the visible page).
    pub ids: Option<Vec<String>>,
}

/// Whether the database file (or team server) is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum LiveState {
    Live,
    Missing,
    /// A team server does not answer; the shell retries every second.
    Reconnecting,
    Error,
}

/// Payload of `db://status`.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct DbStatus {
    pub state: LiveState,
    pub message: String,
}

/// Payload of `forget://progress` while `run_forget` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
pub struct ForgetProgress {
    pub done: usize,
    pub total: usize,
}

/// Payload of `scoring://progress` while the scoring snapshot loads (opening a file, after
/// many changes, before a dry run or what-if): every few thousand rows read, then once per
/// neighbour search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
pub struct ScoringProgress {
    pub stage: lethe_engine::forgetting::LoadStage,
    pub done: usize,
    pub total: usize,
}

/// Payload of `vectors://progress` while the window back-fills the meaning vectors of a file
/// written by memento, an older Lethe or another model: after each chunk, and once with
/// `finished` (also when it stopped on an error, then `error` says why).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct VectorsProgress {
    /// The file being back-filled (the window ignores another file's progress).
    pub path: String,
    pub done: usize,
    pub total: usize,
    pub finished: bool,
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_keep_their_json_shape() {
        // The window's tests and the E2E harness match these exact keys.
        let changed = DbChanged { data_version: 3, ids: None };
        assert_eq!(serde_json::to_value(changed).unwrap(), serde_json::json!({ "data_version": 3, "ids": null }));
        let status = DbStatus { state: LiveState::Missing, message: "gone".into() };
        assert_eq!(serde_json::to_value(status).unwrap(), serde_json::json!({ "state": "missing", "message": "gone" }));
    }
}
