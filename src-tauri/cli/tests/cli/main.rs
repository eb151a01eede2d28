//! The `lethe` binary's suites on SQLite files: the command-line contract, MCP through the
//! official SDK, races between processes, trust boundaries, secrets, the duplicates review,
//! recall's explanations and the recall log, the end of a session, reliability under hostile
//! input. (The team store's suite is the other binary, `team`.)

#[path = "../common/hostile.rs"]
mod hostile;

mod cli;
mod duplicates;
mod mcp;
mod races;
mod recall_explain;
mod reliability;
mod secrets;
mod seeds;
mod team_down;
mod trust;
