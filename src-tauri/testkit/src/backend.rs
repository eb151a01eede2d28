//! The backend the engine's test suite runs on (issue #20): one suite, two databases.
//!
//! Without `LETHE_TEST_POSTGRES` a test's store is the SQLite file at its path. With it set to
//! a server (`postgres://postgres@127.0.0.1:55432`), each path stands for its own database on
//! that server, created and set up on first use: opening the same path again reaches the same
//! database, as reopening a file does, and two tests never share one.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;

use lethe_engine::storage::postgres;
use lethe_engine::store::{self, Connection};

/// The server the suite runs against, if any.
pub fn server() -> Option<String> {
    std::env::var("LETHE_TEST_POSTGRES")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .map(|v| v.trim_end_matches('/').to_string())
}

/// Whether the suite runs on PostgreSQL (tests of SQLite's own file format skip themselves).
pub fn is_postgres() -> bool {
    server().is_some()
}

/// The database a path stands for on the server: `lethe_t_` and 24 hex digits of the path's
/// hash (PostgreSQL's names end at 63 bytes).
fn database_name(path: &Path) -> String {
    use std::hash::{Hash, Hasher};
    let mut a = std::collections::hash_map::DefaultHasher::new();
    path.hash(&mut a);
    let mut b = std::collections::hash_map::DefaultHasher::new();
    (path, "lethe").hash(&mut b);
    format!("lethe_t_{:016x}{:08x}", a.finish(), b.finish() as u32)
}

/// The store at `path`: the SQLite file, or its database on the test server.
pub fn open(path: impl AsRef<Path>) -> lethe_engine::Result<Connection> {
    let Some(server) = server() else { return store::open(path) };
    store::open(url_for(&server, path.as_ref())?)
}

/// The `--db` value of the store at `path` (for processes the test starts).
pub fn db_arg(path: impl AsRef<Path>) -> String {
    match server() {
        None => path.as_ref().display().to_string(),
        Some(server) => url_for(&server, path.as_ref()).expect("the test database"),
    }
}

static READY: Mutex<Option<HashSet<String>>> = Mutex::new(None);

fn url_for(server: &str, path: &Path) -> lethe_engine::Result<String> {
    let name = database_name(path);
    let url = format!("{server}/{name}");
    let mut ready = READY.lock().unwrap_or_else(|p| p.into_inner());
    let ready = ready.get_or_insert_with(HashSet::new);
    if !ready.contains(&name) {
        let mut admin = ::postgres::Client::connect(&format!("{server}/postgres"), ::postgres::NoTls)?;
        match admin.batch_execute(&format!("CREATE DATABASE {name}")) {
            Ok(()) => {}
            // Another test process made it first (or an earlier open in this one).
            Err(e) if e.code().map(|c| c.code()) == Some("42P04") => {}
            Err(e) => return Err(e.into()),
        }
        postgres::setup(&url)?;
        ready.insert(name);
    }
    Ok(url)
}
