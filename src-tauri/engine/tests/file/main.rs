//! The engine's suites about SQLite files only: FTS5 and the in-memory index that mirrors it,
//! memento's files, the write path's checkpoints, the detector's labelled set.

mod support;

mod lexical;
mod memento;
mod secrets_labelled;
mod session_context;
mod write_path;
