//! lethe-testkit: what benchmarks and tests need and users never call, kept out of the
//! engine's public API: the reference and the realistic workload (`workload`),
//! and memento database files built from memento's own DDL (`fixtures`, also behind the
//! hidden `lethe fixture` command the end-to-end tests use), and the backend the engine's
//! suite runs on (`backend`: an SQLite file, or a database on a PostgreSQL test server).

pub mod backend;
pub mod fixtures;
pub mod workload;
