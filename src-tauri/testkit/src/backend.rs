//! The backend the engine's test suite runs on: one suite, two databases.
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
        // A copy of a store set up once per process: copying takes a fraction of the set-up's
        // time (its migrations run hundreds of DDL statements). A copy lacks what PostgreSQL
        // keeps outside the database (its grants on the database itself, the roles' settings
        // in it), which only the team suite's roles meet, on stores `admin setup` made.
        let fresh = template("fresh", |_| {});
        let mut admin = ::postgres::Client::connect(&format!("{server}/postgres"), ::postgres::NoTls)?;
        match admin.batch_execute(&format!("CREATE DATABASE {name} TEMPLATE {fresh}")) {
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

/// A database on the test server copied from a template (`CREATE DATABASE … TEMPLATE`), for
/// tests that need many identical fresh stores: copying is far cheaper than building each.
/// Dropped with the value (`DROP DATABASE … WITH (FORCE)`), so none pile up on the server.
pub struct Copy {
    server: String,
    name: String,
}

impl Copy {
    /// The copy's address, for `store::open` or a process's `--db`.
    pub fn url(&self) -> String {
        format!("{}/{}", self.server, self.name)
    }
}

impl Drop for Copy {
    fn drop(&mut self) {
        if let Ok(mut admin) = ::postgres::Client::connect(&format!("{}/postgres", self.server), ::postgres::NoTls) {
            let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name));
        }
    }
}

static TEMPLATES: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// A template database on the test server, named after `key` and this process, built once by
/// `build` on a fresh, set-up store; later calls in the process return it as it is. Its
/// connection is closed before it is returned (a template with a session cannot be copied).
/// Panics without a test server.
pub fn template(key: &str, build: impl FnOnce(&mut Connection)) -> String {
    let server = server().expect("a template needs the test server (LETHE_TEST_POSTGRES)");
    let name = format!("lethe_tpl_{}_{}", std::process::id(), key.to_lowercase());
    assert!(name.len() <= 63 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "template key {key:?}");
    let mut made = TEMPLATES.lock().unwrap_or_else(|p| p.into_inner());
    let made = made.get_or_insert_with(HashSet::new);
    if !made.contains(&name) {
        let url = format!("{server}/{name}");
        let mut admin = ::postgres::Client::connect(&format!("{server}/postgres"), ::postgres::NoTls).unwrap();
        // Two statements: neither may run inside the transaction a multi-statement batch is.
        admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).unwrap();
        admin.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        postgres::setup(&url).unwrap();
        let mut conn = store::open(&url).unwrap();
        build(&mut conn);
        drop(conn);
        made.insert(name.clone());
    }
    name
}

/// A fresh copy of a [`template`].
pub fn copy_of(template: &str) -> lethe_engine::Result<Copy> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let server = server().expect("a copy needs the test server (LETHE_TEST_POSTGRES)");
    let name = format!("{template}_{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let mut admin = ::postgres::Client::connect(&format!("{server}/postgres"), ::postgres::NoTls)?;
    admin.batch_execute(&format!("CREATE DATABASE {name} TEMPLATE {template}"))?;
    Ok(Copy { server, name })
}

/// The number of rows this store's tables ever had inserted, updated or deleted, aborted
/// attempts included: PostgreSQL's counterpart of SQLite's `total_changes()`, the witness that
/// a refused call did not even try to write. The connection's own pending statistics are
/// flushed first, so its latest statements are counted.
pub fn rows_ever_changed(conn: &Connection) -> lethe_engine::Result<u64> {
    if let Some(sqlite) = conn.sqlite() {
        return Ok(sqlite.total_changes());
    }
    // The flush happens when the backend next goes idle, i.e. right after this statement;
    // the next statement then starts a new statistics snapshot.
    conn.query_row("SELECT 1 FROM (SELECT pg_stat_force_next_flush()) AS flushed", [], |_| Ok(()))?;
    let n: i64 = conn.query_row(
        "SELECT COALESCE(SUM(n_tup_ins + n_tup_upd + n_tup_del), 0)::BIGINT FROM pg_stat_user_tables",
        [],
        |r| r.get(0),
    )?;
    Ok(n as u64)
}

/// The names of the store's tables, sorted (SQLite's own and the server's catalogs left out).
pub fn tables(conn: &Connection) -> lethe_engine::Result<Vec<String>> {
    let sql = if conn.is_postgres() {
        "SELECT tablename::TEXT FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema') \
         ORDER BY tablename"
    } else {
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
    };
    conn.prepare(sql)?.query_map([], |r| r.get(0))?.collect()
}
