//! Typed errors of the engine. Each variant maps to one stable code that the CLI, the MCP
//! server and the desktop shell expose unchanged.

use thiserror::Error;

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    #[error("invalid input: {0}")]
    Invalid(String),
    #[error("version conflict on {id}: expected version {expected}, current version is {current}")]
    Conflict { id: String, expected: i64, current: i64 },
    #[error("not found: {0}")]
    NotFound(String),
    #[error("confirmation required: {0}")]
    ConfirmationRequired(String),
    #[error("forbidden: {0}")]
    Forbidden(String),
    #[error("archive integrity check failed for archive #{0}: sha-256 mismatch")]
    Integrity(i64),
    #[error("not a lethe database: {0}")]
    Foreign(String),
    /// A Lethe or memento file Lethe will not run: foreign triggers or views in it, or an
    /// open that had to be stopped.
    #[error("database refused: {0}")]
    Refused(String),
    #[error("cancelled")]
    Cancelled,
    #[error("database busy: {0}")]
    Busy(String),
    #[error("database error: {0}")]
    Db(#[from] rusqlite::Error),
    #[error("io error: {0}")]
    Io(#[from] std::io::Error),
    #[error("json error: {0}")]
    Json(#[from] serde_json::Error),
}

impl Error {
    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::Invalid(msg.into())
    }

    /// The stable machine-readable code used by every interface.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Invalid(_) | Error::Json(_) => "invalid_input",
            Error::Conflict { .. } => "conflict",
            Error::NotFound(_) => "not_found",
            Error::ConfirmationRequired(_) => "confirmation_required",
            Error::Forbidden(_) => "forbidden",
            Error::Foreign(_) | Error::Refused(_) => "db_unavailable",
            Error::Cancelled => "cancelled",
            Error::Busy(_) => "busy",
            Error::Db(e) if is_busy(e) => "busy",
            Error::Db(e) if is_not_a_db(e) => "db_unavailable",
            Error::Db(_) | Error::Io(_) | Error::Integrity(_) => "internal",
        }
    }

    /// Process exit code of the CLI contract (DESIGN §10).
    pub fn exit_code(&self) -> i32 {
        match self.code() {
            "invalid_input" => 2,
            "conflict" => 3,
            "not_found" => 4,
            "confirmation_required" => 5,
            "forbidden" => 6,
            _ => 1,
        }
    }

    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Conflict { .. })
    }

    /// Only SQLITE_BUSY / SQLITE_LOCKED are worth retrying.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Busy(_)) || matches!(self, Error::Db(e) if is_busy(e))
    }
}

pub(crate) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseBusy) | Some(rusqlite::ErrorCode::DatabaseLocked))
}

fn is_not_a_db(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::NotADatabase)
            | Some(rusqlite::ErrorCode::DatabaseCorrupt)
            | Some(rusqlite::ErrorCode::CannotOpen)
            | Some(rusqlite::ErrorCode::ReadOnly)
    )
}
