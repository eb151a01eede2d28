//! The team store: a PostgreSQL server behind the same [`Connection`].
//!
//! `postgres://USER[:PASSWORD]@HOST:PORT/DB` (or `postgresql://…`) wherever a database path
//! goes (`--db`, `LETHE_DB`). The schema is created and migrated by [`setup`] (`lethe admin
//! setup`, as the role that owns the database), with append-only migrations like SQLite's;
//! agents connect with [`connect`], which needs no DDL rights and refuses a server whose
//! schema is missing or newer than this build. Passwords never leave this module: what is
//! shown of a connection is [`display`].

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::storage::db::{pg::Pg, Connection};

/// One migration of the team store's schema. Append-only: never edit one that has shipped.
struct Migration {
    version: i64,
    name: &'static str,
    sql: &'static str,
}

const MIGRATIONS: &[Migration] = &[
    Migration { version: 1, name: "schema", sql: include_str!("postgres/migrations/001_schema.sql") },
    Migration { version: 2, name: "roles", sql: include_str!("postgres/migrations/002_roles.sql") },
    Migration { version: 3, name: "teams", sql: include_str!("postgres/migrations/003_teams.sql") },
    Migration { version: 4, name: "agent_pins", sql: include_str!("postgres/migrations/004_agent_pins.sql") },
    Migration { version: 6, name: "raw_sql", sql: include_str!("postgres/migrations/006_raw_sql.sql") },
    Migration { version: 7, name: "session_context", sql: include_str!("postgres/migrations/007_session_context.sql") },
    Migration { version: 8, name: "definer_role", sql: include_str!("postgres/migrations/008_definer_role.sql") },
    Migration { version: 9, name: "audited_writes", sql: include_str!("postgres/migrations/009_audited_writes.sql") },
    Migration { version: 10, name: "plans", sql: include_str!("postgres/migrations/010_plans.sql") },
    Migration {
        version: 11,
        name: "write_functions",
        sql: include_str!("postgres/migrations/011_write_functions.sql"),
    },
    Migration {
        version: 12,
        name: "insert_functions",
        sql: include_str!("postgres/migrations/012_insert_functions.sql"),
    },
    Migration {
        version: 13,
        name: "record_functions",
        sql: include_str!("postgres/migrations/013_record_functions.sql"),
    },
    Migration {
        version: 14,
        name: "derived_functions",
        sql: include_str!("postgres/migrations/014_derived_functions.sql"),
    },
];

/// The team store's schema version this build reads and writes.
pub const SCHEMA_VERSION: i64 = 14;

/// How long a Lethe role's session may sit in an open transaction, and run one statement,
/// before the server ends it (set on every role `admin add-*` makes, per database): a
/// client that holds locks and goes quiet cannot stop its team for longer.
const ROLE_IDLE_IN_TRANSACTION: &str = "120s";
const ROLE_STATEMENT_TIMEOUT: &str = "600s";

/// What a connection's database role may do (`lethe admin add-agent`, `add-curator`,
/// `add-reader`; the owner sets the server up).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A superuser or the database's owner: everything, including `admin`.
    Owner,
    /// The team lead: an agent's rights, plus hard delete, pin, importance and settings.
    Curator,
    /// An agent: writes memories under its own name.
    Agent,
    /// An inspector: reads only.
    Reader,
    /// A role in none of Lethe's groups: what the server's grants allow.
    Other,
}

impl Role {
    pub fn group(self) -> Option<&'static str> {
        match self {
            Role::Curator => Some("lethe_curator"),
            Role::Agent => Some("lethe_agent"),
            Role::Reader => Some("lethe_reader"),
            Role::Owner | Role::Other => None,
        }
    }
}

/// The database role a connection runs as, and what it is.
pub fn role_of(conn: &Connection) -> Result<(String, Role)> {
    conn.query_row(
        "SELECT session_user::text, \
                (SELECT rolsuper FROM pg_roles WHERE rolname = session_user) \
                  OR session_user = (SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()), \
                pg_has_role(session_user, 'lethe_curator', 'MEMBER'), \
                pg_has_role(session_user, 'lethe_agent', 'MEMBER'), \
                pg_has_role(session_user, 'lethe_reader', 'MEMBER')",
        [],
        |r| {
            let role = if r.get::<_, bool>(1)? {
                Role::Owner
            } else if r.get::<_, bool>(2)? {
                Role::Curator
            } else if r.get::<_, bool>(3)? {
                Role::Agent
            } else if r.get::<_, bool>(4)? {
                Role::Reader
            } else {
                Role::Other
            };
            Ok((r.get(0)?, role))
        },
    )
}

/// What `lethe admin add-*` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RoleReport {
    pub role: String,
    pub kind: Role,
    /// The team whose memories the role sees and writes (row-level security).
    pub team: String,
    pub created: bool,
    pub password_set: bool,
}

/// Creates a login role in one of Lethe's groups (or adds an existing role to it). The name
/// follows the actor grammar, so the audit can name it (`agent:<name>`); the password, if
/// any, goes to the server and nowhere else.
pub fn add_role(url: &str, name: &str, kind: Role, team: &str, password: Option<&str>) -> Result<RoleReport> {
    let Some(group) = kind.group() else { return Err(Error::invalid("a role is an agent, a curator or a reader")) };
    crate::actor::parse(&format!("agent:{name}"))?;
    if name.starts_with("lethe_") || name.starts_with("pg_") {
        return Err(Error::invalid(format!("role name {name:?}: names starting with lethe_ or pg_ are reserved")));
    }
    if team.is_empty() || team.len() > 64 || !team.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
        return Err(Error::invalid(format!("team {team:?}: 1 to 64 letters, digits, '.', '_' or '-'")));
    }
    let conn = connect(url)?;
    if role_of(&conn)?.1 != Role::Owner {
        return Err(Error::Forbidden("only the team store's owner adds roles".into()));
    }
    let exists: bool =
        conn.query_row("SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ?1)", [name], |r| r.get(0))?;
    // Identifiers cannot be parameters; the name is checked against [A-Za-z0-9._-] above and
    // quoted as an identifier. The password is quoted as a literal by the server itself.
    let ident = format!("\"{name}\"");
    if !exists {
        conn.execute_batch(&format!("CREATE ROLE {ident} LOGIN"))?;
    }
    if let Some(p) = password {
        let literal: String = conn.query_row("SELECT quote_literal(?1)", [p], |r| r.get(0))?;
        conn.execute_batch(&format!("ALTER ROLE {ident} PASSWORD {literal}"))?;
    }
    conn.execute_batch(&format!("GRANT {group} TO {ident}"))?;
    conn.execute(
        "INSERT INTO lethe_team_member (role, team) VALUES (?1, ?2) ON CONFLICT (role) DO UPDATE SET team = EXCLUDED.team",
        [name, team],
    )?;
    let database = current_database(&conn)?;
    conn.execute_batch(&format!("GRANT CONNECT ON DATABASE \"{database}\" TO {ident}"))?;
    conn.execute_batch(&format!(
        "ALTER ROLE {ident} IN DATABASE \"{database}\" SET idle_in_transaction_session_timeout = '{ROLE_IDLE_IN_TRANSACTION}'; \
         ALTER ROLE {ident} IN DATABASE \"{database}\" SET statement_timeout = '{ROLE_STATEMENT_TIMEOUT}'"
    ))?;
    Ok(RoleReport {
        role: name.to_string(),
        kind,
        team: team.to_string(),
        created: !exists,
        password_set: password.is_some(),
    })
}

fn current_database(conn: &Connection) -> Result<String> {
    conn.query_row("SELECT current_database()::text", [], |r| r.get(0))
}

/// Whether a `--db` value names a PostgreSQL server rather than a file.
pub fn is_url(db: &str) -> bool {
    let lower = db.get(..13).unwrap_or(db).to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// The servers and database of a URL without its password (for messages, the window and the
/// recent list): `postgres://agent@127.0.0.1:5432/team`, every host of a multi-host address
/// (`postgres://agent@h1:5432,h2:5433/team?target_session_attrs=read-write`).
pub fn display(url: &str) -> String {
    match postgres::Config::from_str(url) {
        Ok(c) => {
            let ports = c.get_ports();
            let hosts: Vec<String> = c
                .get_hosts()
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    let host = match h {
                        postgres::config::Host::Tcp(h) if h.contains(':') => format!("[{h}]"),
                        postgres::config::Host::Tcp(h) => h.clone(),
                        postgres::config::Host::Unix(p) => p.display().to_string(),
                    };
                    // One port for every host, or one per host (libpq's rule).
                    let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
                    format!("{host}:{port}")
                })
                .collect();
            let hosts = if hosts.is_empty() { "localhost:5432".to_string() } else { hosts.join(",") };
            let attrs = match c.get_target_session_attrs() {
                postgres::config::TargetSessionAttrs::ReadWrite => "?target_session_attrs=read-write",
                _ => "",
            };
            format!(
                "postgres://{}@{hosts}/{}{attrs}",
                c.get_user().unwrap_or(""),
                c.get_dbname().unwrap_or(c.get_user().unwrap_or(""))
            )
        }
        Err(_) => "postgres://(unreadable address)".into(),
    }
}

/// How long a connection waits, by default, for one of its hosts to accept it (and, with
/// `target_session_attrs=read-write`, to accept writes): long enough for pg_auto_failover to
/// promote the standby with its default health checks (about 30 s), short enough that an agent
/// whose server is gone hears so in a minute.
pub const DEFAULT_FAILOVER_WAIT: Duration = Duration::from_secs(60);

static FAILOVER_WAIT_MS: AtomicU64 = AtomicU64::new(DEFAULT_FAILOVER_WAIT.as_millis() as u64);

/// Sets the process's wait for a team server (`lethe --db-wait SECONDS`, `LETHE_DB_WAIT`);
/// zero tries each host once.
pub fn set_failover_wait(wait: Duration) {
    FAILOVER_WAIT_MS.store(wait.as_millis().min(u64::MAX as u128) as u64, Ordering::Relaxed);
}

/// The process's wait for a team server (see [`set_failover_wait`]).
pub fn failover_wait() -> Duration {
    Duration::from_millis(FAILOVER_WAIT_MS.load(Ordering::Relaxed))
}

/// The longest one host may take to answer a connection attempt.
const HOST_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether a failed connection attempt may succeed later on its own: no host answered, none
/// accepted writes (`target_session_attrs=read-write` on a standby), or the server is starting,
/// stopping or being promoted. A refused password, a missing database or role never heal.
fn transient(e: &postgres::Error) -> bool {
    match e.code().map(|c| c.code()) {
        None => true,
        Some(code) => code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "25006"),
    }
}

/// Connects to the first host of `config` that accepts the connection (the driver tries them
/// in order and checks `target_session_attrs`), trying again until [`failover_wait`] has passed
/// while none does: a standby being promoted takes a few seconds to accept writes.
pub(crate) fn connect_client(config: &postgres::Config, shown: &str) -> Result<postgres::Client> {
    let wait = failover_wait();
    let started = Instant::now();
    let mut pause = Duration::from_millis(100);
    loop {
        let mut attempt = config.clone();
        if config.get_connect_timeout().is_none() {
            let left = wait.saturating_sub(started.elapsed());
            attempt.connect_timeout(HOST_CONNECT_TIMEOUT.min(left).max(Duration::from_millis(500)));
        }
        match attempt.connect(postgres::NoTls) {
            Ok(client) => return Ok(client),
            Err(e) if !transient(&e) => {
                return Err(Error::Foreign(format!("cannot connect to the team server {shown}: {}", message(&e))))
            }
            Err(e) => {
                let waited = started.elapsed();
                if waited + pause > wait {
                    return Err(Error::Unavailable(format!(
                        "no host of the team server {shown} accepted {} within {:.1} s (the wait is {} s): {}",
                        match config.get_target_session_attrs() {
                            postgres::config::TargetSessionAttrs::ReadWrite => "writes",
                            _ => "a connection",
                        },
                        waited.as_secs_f64(),
                        wait.as_secs_f64(),
                        message(&e)
                    )));
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(1));
            }
        }
    }
}

fn open_raw(url: &str) -> Result<Connection> {
    let mut config = postgres::Config::from_str(url)
        .map_err(|e| Error::invalid(format!("not a PostgreSQL address ({}): {e}", display(url))))?;
    config.application_name("lethe");
    let shown = display(url);
    let client = connect_client(&config, &shown)?;
    let conn = Connection::from_postgres(Pg::new(client, config, shown));
    // Statements that wait on a lock give up as SQLite's busy timeout does (advisory locks
    // too). The statement timeout is the role's (`admin add-*` sets one for Lethe's roles).
    conn.postgres().expect("a server connection").session("SET lock_timeout = '5s'")?;
    // Lethe's statements are short: compiling one with JIT (past the planner's cost threshold,
    // which a few look-ups on a big table reach) costs more than running it.
    conn.postgres().expect("a server connection").session("SET jit = off")?;
    Ok(conn)
}

pub(crate) fn message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => {
            // The driver's own text ("error connecting to server: Connection refused (os error 111)").
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

/// The schema version stored on the server (0: none yet).
pub fn schema_version(conn: &Connection) -> Result<i64> {
    if !table_exists(conn, "lethe_schema")? {
        return Ok(0);
    }
    conn.query_row("SELECT COALESCE(MAX(version), 0) FROM lethe_schema", [], |r| r.get(0))
}

pub fn table_exists(conn: &Connection, name: &str) -> Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?1)",
        [name],
        |r| r.get(0),
    )
}

pub fn column_exists(conn: &Connection, table: &str, column: &str) -> Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM information_schema.columns \
         WHERE table_schema = current_schema() AND table_name = ?1 AND column_name = ?2)",
        [table, column],
        |r| r.get(0),
    )
}

/// The migrations this build knows that the server has not recorded (any order of merge:
/// a migration numbered below one already applied is still applied).
fn missing_migrations(conn: &Connection) -> Result<Vec<&'static Migration>> {
    let done: Vec<i64> = if table_exists(conn, "lethe_schema")? {
        conn.prepare("SELECT version FROM lethe_schema")?.query_map([], |r| r.get(0))?.collect::<Result<_>>()?
    } else {
        Vec::new()
    };
    Ok(MIGRATIONS.iter().filter(|m| !done.contains(&m.version)).collect())
}

/// Connects an agent, a curator or a reader: the schema must be there, at this version.
pub fn connect(url: &str) -> Result<Connection> {
    let conn = open_raw(url)?;
    let version = schema_version(&conn)?;
    if version == 0 {
        return Err(Error::Foreign(format!(
            "the team server {} has no Lethe schema yet; its owner runs `lethe --db URL admin setup` first",
            display(url)
        )));
    }
    if version > SCHEMA_VERSION {
        return Err(Error::Foreign(format!(
            "the team server {} was set up by a newer Lethe (schema {version}, this build knows {SCHEMA_VERSION})",
            display(url)
        )));
    }
    if version < SCHEMA_VERSION || !missing_migrations(&conn)?.is_empty() {
        return Err(Error::Foreign(format!(
            "the team server {} has schema {version}; its owner runs `lethe --db URL admin setup` to bring it to {SCHEMA_VERSION}",
            display(url)
        )));
    }
    conn.postgres().expect("a server connection").vector_search.set(column_exists(&conn, "lethe_vector", "emb")?);
    Ok(conn)
}

/// What [`setup`] did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SetupReport {
    pub server: String,
    pub schema_version: i64,
    pub applied: Vec<String>,
    /// How recall finds the nearest vectors: `"hnsw"` (pgvector's index on the server) or
    /// `"scan"` (Lethe reads the vectors and compares them itself), with why in `vector_note`.
    pub vector_search: &'static str,
    pub vector_note: String,
}

/// pgvector's HNSW index over `lethe_vector.emb`.
const VECTOR_INDEX: &str = "lethe_vector_hnsw";

/// pgvector, when the server has it: `lethe_vector` gains `emb vector(DIMS)`, which a trigger
/// fills from the stored bytes on every write (remember, the back-fill, import, push: no
/// writer needs to know), and an HNSW index over it that recall's semantic candidates come
/// from. The column holds the quantised components Lethe itself compares, so pgvector's
/// cosine is Lethe's. Not a numbered migration: a server that gets the extension later gains
/// it at its next `admin setup`, and one without it keeps working by scan. Idempotent.
fn ensure_vector_search(conn: &Connection) -> Result<(&'static str, String)> {
    let available: Option<String> = conn.query_row(
        "SELECT (SELECT default_version FROM pg_available_extensions WHERE name = 'vector')",
        [],
        |r| r.get(0),
    )?;
    if available.is_none() {
        return Ok(("scan", "the server has no pgvector extension: Lethe compares the stored vectors itself".into()));
    }
    if let Err(e) = conn.execute_batch("CREATE EXTENSION IF NOT EXISTS vector") {
        return Ok(("scan", format!("pgvector is installed on the server but could not be enabled ({e}): Lethe compares the stored vectors itself")));
    }
    let dims = crate::embed::DIMS;
    let first = 4; // the bytes start with the f32 inverse norm, then one i8 per component
    let last = first + dims - 1;
    // The trigger's function, like every function of Lethe's, runs as its owner with a
    // fixed search path: the catalog, then the schema that holds pgvector's type.
    let vector_schema: String = conn.query_row(
        "SELECT quote_ident(n.nspname) FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace \
         WHERE e.extname = 'vector'",
        [],
        |r| r.get(0),
    )?;
    // The column, trigger and index need table locks that any open reading transaction
    // delays: a store that has them already gets the function's definition only.
    let in_place: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() \
                        AND table_name = 'lethe_vector' AND column_name = 'emb') \
            AND EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'lethe_vector_emb' \
                        AND tgrelid = 'lethe_vector'::regclass) \
            AND EXISTS (SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ?1)",
        [VECTOR_INDEX],
        |r| r.get(0),
    )?;
    let tables = if in_place {
        String::new()
    } else {
        format!(
            "DROP TRIGGER IF EXISTS lethe_vector_emb ON lethe_vector;
             CREATE TRIGGER lethe_vector_emb BEFORE INSERT OR UPDATE OF vec ON lethe_vector
                 FOR EACH ROW EXECUTE FUNCTION lethe_vector_emb();
             UPDATE lethe_vector SET vec = vec WHERE emb IS NULL AND length(vec) = {len};
             CREATE INDEX IF NOT EXISTS {VECTOR_INDEX} ON lethe_vector USING hnsw (emb vector_cosine_ops);",
            len = crate::embed::VECTOR_BYTES
        )
    };
    let column = if in_place {
        String::new()
    } else {
        format!("ALTER TABLE lethe_vector ADD COLUMN IF NOT EXISTS emb vector({dims});")
    };
    conn.begin(crate::storage::db::TransactionBehavior::Deferred)?;
    let step = conn.execute_batch(&format!(
        "{SETUP_LOCK};
         {column}
         CREATE OR REPLACE FUNCTION lethe_vector_emb() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
             SET search_path = pg_catalog, {vector_schema}, pg_temp AS $fn$
         BEGIN
             IF length(NEW.vec) = {len} THEN
                 SELECT CASE WHEN bool_or(b <> 0) THEN array_agg(b ORDER BY i)::real[]::vector END INTO NEW.emb
                 FROM (SELECT i, CASE WHEN get_byte(NEW.vec, i) > 127 THEN get_byte(NEW.vec, i) - 256
                                      ELSE get_byte(NEW.vec, i) END AS b
                       FROM generate_series({first}, {last}) AS i) AS c;
             ELSE
                 NEW.emb := NULL;
             END IF;
             RETURN NEW;
         END $fn$;
         REVOKE ALL ON FUNCTION lethe_vector_emb() FROM PUBLIC;
         {tables}",
        len = crate::embed::VECTOR_BYTES,
    ));
    match step {
        Ok(()) => conn.commit()?,
        Err(e) => {
            let _ = conn.rollback();
            return Err(e);
        }
    }
    let version: String =
        conn.query_row("SELECT extversion FROM pg_extension WHERE extname = 'vector'", [], |r| r.get(0))?;
    Ok(("hnsw", format!("pgvector {version}: recall's nearest vectors come from an HNSW index on the server")))
}

/// One setup at a time: a lock on the table that records the schema, held to the end of
/// the transaction. Lethe's roles only read that table, and reading conflicts with no mode
/// but ACCESS EXCLUSIVE, so no agent, curator or reader can take this lock or hold it
/// against the owner (an advisory lock, which any role may take, could be held for ever).
const SETUP_LOCK: &str = "LOCK TABLE lethe_schema IN SHARE ROW EXCLUSIVE MODE";

/// Gives every Lethe function, including those a migration or pgvector's column added since,
/// to the database's NOLOGIN definer role (migration 008's `lethe_definer_handover`), with
/// the rights they need on the tables that exist now.
fn hand_functions_to_definer(conn: &Connection) -> Result<()> {
    conn.begin(crate::storage::db::TransactionBehavior::Deferred)?;
    let step = conn.execute_batch(&format!("{SETUP_LOCK}; SELECT lethe_definer_handover(current_schema())"));
    match step {
        Ok(()) => conn.commit(),
        Err(e) => {
            let _ = conn.rollback();
            Err(e)
        }
    }
}

/// Creates or migrates the schema, idempotently; one setup at a time ([`SETUP_LOCK`]), each
/// migration in the transaction that records it.
pub fn setup(url: &str) -> Result<SetupReport> {
    let conn = open_raw(url)?;
    // Setup runs DDL the server should not echo back as notices on every `IF NOT EXISTS`.
    conn.execute_batch("SET client_min_messages = warning")?;
    // Two setups of a new database may race on this creation: the loser finds the table.
    if let Err(e) = conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS lethe_schema (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
    ) {
        if !table_exists(&conn, "lethe_schema")? {
            return Err(e);
        }
    }
    let mut applied = Vec::new();
    for m in MIGRATIONS {
        conn.begin(crate::storage::db::TransactionBehavior::Deferred)?;
        let step = (|| {
            conn.execute_batch(SETUP_LOCK)?;
            let current = schema_version(&conn)?;
            if current > SCHEMA_VERSION {
                return Err(Error::Foreign(format!(
                    "the team server was set up by a newer Lethe (schema {current}, this build knows {SCHEMA_VERSION}); it was left untouched"
                )));
            }
            let done: bool =
                conn.query_row("SELECT EXISTS (SELECT 1 FROM lethe_schema WHERE version = ?1)", [m.version], |r| {
                    r.get(0)
                })?;
            if done {
                return Ok(false);
            }
            conn.execute_batch(m.sql)?;
            conn.execute(
                "INSERT INTO lethe_schema (version, name, applied_at) VALUES (?1, ?2, ?3)",
                crate::params![m.version, m.name, crate::time::format(chrono::Utc::now())],
            )?;
            Ok(true)
        })();
        match step {
            Ok(new) => {
                conn.commit()?;
                if new {
                    applied.push(format!("{:03}_{}", m.version, m.name));
                }
            }
            Err(e) => {
                let _ = conn.rollback();
                return Err(e);
            }
        }
    }
    conn.execute(
        "INSERT INTO lethe_meta (key, value) VALUES ('origin', 'lethe-team') ON CONFLICT (key) DO NOTHING",
        [],
    )?;
    // The size of a stored vector, which the server's function checks every vector against.
    conn.execute(
        "INSERT INTO lethe_meta (key, value) VALUES ('vector_bytes', ?1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
        [crate::embed::VECTOR_BYTES.to_string()],
    )?;
    let (vector_search, vector_note) = ensure_vector_search(&conn)?;
    hand_functions_to_definer(&conn)?;
    Ok(SetupReport { server: display(url), schema_version: SCHEMA_VERSION, applied, vector_search, vector_note })
}

/// Derived rows (`[memory id, text, bytes]`: a signature's hash and band keys, a vector's
/// model and bytes; `[rowid, model, hash, keys, list]`: a neighbour list) to the team store's
/// function `lethe_signatures_store`, `lethe_vectors_store` or `lethe_neighbours_store` in one
/// call, the bytes as hex (Lethe's roles hold no write right on
/// those tables there). Returns the rows stored.
pub(crate) fn store_derived<'a>(
    tx: &Connection,
    function: &str,
    rows: impl Iterator<Item = &'a [crate::storage::db::Value]>,
) -> Result<usize> {
    use crate::storage::db::Value;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let json: Vec<serde_json::Value> = rows
        .map(|r| {
            serde_json::Value::Array(
                r.iter()
                    .map(|v| match v {
                        Value::Null => serde_json::Value::Null,
                        Value::Integer(n) => (*n).into(),
                        Value::Real(x) => (*x).into(),
                        Value::Text(t) => t.as_str().into(),
                        Value::Blob(b) => {
                            let mut s = String::with_capacity(2 * b.len());
                            for x in b {
                                s.push(HEX[(x >> 4) as usize] as char);
                                s.push(HEX[(x & 15) as usize] as char);
                            }
                            s.into()
                        }
                    })
                    .collect(),
            )
        })
        .collect();
    if json.is_empty() {
        return Ok(0);
    }
    let sql = match function {
        "lethe_signatures_store" => "SELECT lethe_signatures_store(?1)",
        "lethe_vectors_store" => "SELECT lethe_vectors_store(?1)",
        "lethe_neighbours_store" => "SELECT lethe_neighbours_store(?1)",
        other => return Err(Error::invalid(format!("no team store function {other} for derived rows"))),
    };
    Ok(tx.prepare_cached(sql)?.query_row([serde_json::Value::Array(json).to_string()], |r| r.get::<_, i64>(0))?
        as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths_and_shown_without_passwords() {
        assert!(is_url("postgres://a:b@h:5432/d"));
        assert!(is_url("PostgreSQL://h/d"));
        assert!(!is_url("/tmp/postgres://x.db"));
        assert!(!is_url("memory.db"));
        let shown = display("postgres://agent:s3cret@127.0.0.1:5433/team");
        assert_eq!(shown, "postgres://agent@127.0.0.1:5433/team");
        assert!(!shown.contains("s3cret"));
    }

    #[test]
    fn a_multi_host_address_is_shown_with_every_host_and_its_session_attributes() {
        let url = "postgres://agent:s3cret@10.0.0.1:5432,10.0.0.2:5433/team?target_session_attrs=read-write";
        assert!(is_url(url));
        let shown = display(url);
        assert_eq!(shown, "postgres://agent@10.0.0.1:5432,10.0.0.2:5433/team?target_session_attrs=read-write");
        assert!(!shown.contains("s3cret"));
        // Each host its own port in a URL, the default port where none is given.
        assert_eq!(display("postgres://a@h1,h2:6000/d"), "postgres://a@h1:5432,h2:6000/d");
        assert_eq!(display("postgres://a@h1,h2/d"), "postgres://a@h1:5432,h2:5432/d");
        let config = postgres::Config::from_str(url).unwrap();
        assert_eq!(config.get_hosts().len(), 2, "the driver reads both hosts");
        assert_eq!(config.get_target_session_attrs(), postgres::config::TargetSessionAttrs::ReadWrite);
    }

    #[test]
    fn connection_failures_that_can_heal_are_told_from_those_that_cannot() {
        // A refused connection (no server on the port) heals when a host comes up; a
        // refused role or password never does, so it is not waited on.
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let config = postgres::Config::from_str(&format!("postgres://a@127.0.0.1:{free}/d")).unwrap();
        let e = config.connect(postgres::NoTls).err().expect("nothing listens there");
        assert!(transient(&e), "{e}");
    }
}
