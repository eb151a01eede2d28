//! The engine's suites that run on both backends: on SQLite files, and with
//! `LETHE_TEST_POSTGRES` set on a throwaway PostgreSQL server (`tests/pg/with-server.sh`).

#[path = "../common/support.rs"]
mod support;

mod concurrency;
mod duplicates;
mod duplication;
mod engine;
mod erasure;
mod fuzz;
mod group_commit;
mod recall_quality;
mod redaction;
mod seeds;
mod semantic;
