//! Typed errors of the engine. Each variant maps to one stable code that the CLI, the MCP
//! server and the desktop shell expose unchanged.

use thiserror::Error;

/// The engine's result: every fallible operation answers with an [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong, typed: [`Error::code`] names it for every interface and
/// [`Error::exit_code`] gives the CLI's exit status.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// Bad input (an argument, a file, a row): nothing was written.
    #[error("invalid input: {0}")]
    Invalid(String),
    /// A compare-and-swap lost: the memory is at another version than the caller expected.
    #[error("version conflict on {id}: expected version {expected}, current version is {current}")]
    Conflict {
        /// The memory.
        id: String,
        /// The version the caller expected.
        expected: i64,
        /// The version stored.
        current: i64,
    },
    /// No such memory, archive, procedure or run.
    #[error("not found: {0}")]
    NotFound(String),
    /// A destructive operation asked for without its confirmation (`--yes`).
    #[error("confirmation required: {0}")]
    ConfirmationRequired(String),
    /// The actor or role may not do this (a person's pin, another team's memory, a reader's
    /// write).
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// An archive's stored original no longer matches its SHA-256.
    #[error("archive integrity check failed for archive #{0}: sha-256 mismatch")]
    Integrity(i64),
    /// The file is not a Lethe (or memento) database.
    #[error("not a lethe database: {0}")]
    Foreign(String),
    /// A Lethe or memento file Lethe will not run: foreign triggers or views in it, or an
    /// open that had to be stopped.
    #[error("database refused: {0}")]
    Refused(String),
    /// The team server's connection went away inside a transaction that had not reached its
    /// commit: the server dropped that transaction, nothing of it was written, and it may run
    /// again on a new connection (to whichever host now accepts writes).
    #[error("team server unavailable: {0}")]
    ConnectionLost(String),
    /// No host of the team server accepts writes within the wait, or the connection went away
    /// where running the work again could write it twice (during a commit, or a statement
    /// outside a transaction): nothing of it is reported as written.
    #[error("team server unavailable: {0}")]
    Unavailable(String),
    /// The team server's connection went away during `COMMIT`: whether the transaction is
    /// stored is unknown until it is read back on a new connection.
    #[error("team server unavailable: {0}")]
    CommitLost(String),
    /// The caller cancelled the work (its job); nothing of it was written.
    #[error("cancelled")]
    Cancelled,
    /// Another writer holds the store longer than the wait.
    #[error("database busy: {0}")]
    Busy(String),
    /// An error of the SQLite store.
    #[error("database error: {0}")]
    Db(#[from] rusqlite::Error),
    /// An error of the team server (PostgreSQL).
    #[error("team server error: {}", pg_message(.0))]
    Pg(#[from] postgres::Error),
    /// A query that must return a row returned none (`.optional()` turns it into `None`).
    #[error("the query returned no row")]
    NoRows,
    /// A column could not be read as the code asked (its type, its name or its position).
    #[error("database error: {0}")]
    Column(String),
    /// A file could not be read or written.
    #[error("io error: {0}")]
    Io(#[from] std::io::Error),
    /// JSON that does not parse or does not have the expected shape.
    #[error("json error: {0}")]
    Json(#[from] serde_json::Error),
}

impl Error {
    /// [`Error::Invalid`] with `msg`.
    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::Invalid(msg.into())
    }

    /// [`Error::Column`] with `msg`.
    pub fn column(msg: impl Into<String>) -> Self {
        Error::Column(msg.into())
    }

    /// The stable machine-readable code used by every interface.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Invalid(_) | Error::Json(_) => "invalid_input",
            Error::Conflict { .. } => "conflict",
            Error::NotFound(_) => "not_found",
            Error::ConfirmationRequired(_) => "confirmation_required",
            Error::Forbidden(_) => "forbidden",
            Error::Foreign(_)
            | Error::Refused(_)
            | Error::ConnectionLost(_)
            | Error::Unavailable(_)
            | Error::CommitLost(_) => "db_unavailable",
            Error::Cancelled => "cancelled",
            Error::Busy(_) => "busy",
            Error::Db(e) if is_busy(e) => "busy",
            Error::Db(e) if is_not_a_db(e) => "db_unavailable",
            Error::Pg(e) if pg_retryable(e) => "busy",
            Error::Pg(e) if pg_state(e) == Some("42501") => "forbidden",
            // The team store's write functions refuse bad arguments with these; the rest of the
            // data exceptions (class 22: a NUL or an escape JSON on the server cannot hold, a
            // text the server cannot read as a number or a date) are bad input too.
            Error::Pg(e) if pg_state(e).is_some_and(|s| s.starts_with("22")) => "invalid_input",
            Error::Pg(e) if pg_state(e) == Some("P0002") => "not_found",
            Error::Pg(e) if e.is_closed() => "db_unavailable",
            Error::Db(_) | Error::Pg(_) | Error::NoRows | Error::Column(_) | Error::Io(_) | Error::Integrity(_) => {
                "internal"
            }
        }
    }

    /// Process exit code of the CLI contract (docs/cli.md).
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

    /// Whether this is a lost compare-and-swap ([`Error::Conflict`]).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Conflict { .. })
    }

    /// SQLITE_BUSY / SQLITE_LOCKED, PostgreSQL's serialization failures and deadlocks, and a
    /// team server connection lost before the transaction's commit are worth retrying.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Busy(_) | Error::ConnectionLost(_))
            || matches!(self, Error::Db(e) if is_busy(e))
            || matches!(self, Error::Pg(e) if pg_retryable(e))
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

/// The SQLSTATE of a PostgreSQL error, when the server sent one.
pub(crate) fn pg_state(e: &postgres::Error) -> Option<&str> {
    e.code().map(|c| c.code())
}

/// Serialization failures and deadlocks: the transaction is run again, as SQLite's BUSY is.
pub(crate) fn pg_retryable(e: &postgres::Error) -> bool {
    matches!(pg_state(e), Some("40001") | Some("40P01") | Some("55P03"))
}

/// The server's own message (the driver's `Display` says only "db error").
fn pg_message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                text = format!("{text}: {s}");
                source = s.source();
            }
            text
        }
    }
}
