//! The store as a whole: the team server's administration, moving memories in and out
//! (import, export, push, demo data), the secrets scan and the settings.

use std::path::{Path, PathBuf};

use lethe_engine::storage::postgres::{self, Role};
use lethe_engine::{store, transfer, Error, Result, Settings};
use serde_json::{json, Value};

use super::forget::keep_derived;
use super::open::confirm_on_terminal;
use super::{default_db_path, to_json, AdminAction, Ctx};

/// `lethe admin`: on a team server, before any store is opened.
pub(super) fn admin(db: &Option<PathBuf>, action: &AdminAction) -> Result<Value> {
    let db = db.clone().unwrap_or_else(default_db_path);
    let url = db.to_str().filter(|d| postgres::is_url(d)).ok_or_else(|| {
        Error::invalid("`lethe admin` is for a team server: --db postgres://USER@HOST:PORT/DB (an SQLite file sets itself up when opened)")
    })?;
    let password = std::env::var("LETHE_ROLE_PASSWORD").ok().filter(|p| !p.is_empty());
    match action {
        AdminAction::Setup => to_json(&postgres::setup(url)?),
        AdminAction::AddAgent { name, team } => {
            to_json(&postgres::add_role(url, name, Role::Agent, team, password.as_deref())?)
        }
        AdminAction::AddCurator { name, team } => {
            to_json(&postgres::add_role(url, name, Role::Curator, team, password.as_deref())?)
        }
        AdminAction::AddReader { name, team } => {
            to_json(&postgres::add_role(url, name, Role::Reader, team, password.as_deref())?)
        }
    }
}

/// `lethe push` goes into a team store: refused before anything is opened, so no file is
/// created at the path given.
pub(super) fn refuse_push_to_a_file(db: &Option<PathBuf>) -> Result<()> {
    if db.clone().unwrap_or_else(default_db_path).to_str().is_some_and(postgres::is_url) {
        return Ok(());
    }
    Err(Error::invalid(
        "lethe push moves a local file into a team store: lethe --db postgres://USER@HOST:PORT/DB push FILE.db",
    ))
}

/// `lethe push`: a local file into the team store, by a curator or the owner.
pub(super) fn push(cx: &mut Ctx, file: &Path) -> Result<Value> {
    let (name, role) = postgres::role_of(cx.conn)?;
    if !matches!(role, Role::Owner | Role::Curator) {
        return Err(Error::Forbidden(format!(
            "the role {name} is not a curator; a push carries pins and other actors' audit, so a curator or the owner pushes"
        )));
    }
    let src = open_push_source(file)?;
    let report = lethe_engine::push::push(&src, cx.conn, &file.display().to_string(), cx.actor, cx.now)?;
    keep_derived(cx.conn, "push")?;
    to_json(&report)
}

/// The file `lethe push` reads: opened for viewing only, so the push never changes it; a
/// file at an older schema is brought to this Lethe's first (as any command would).
fn open_push_source(file: &Path) -> Result<store::Connection> {
    if !file.is_file() {
        return Err(Error::invalid(format!("{}: no such file", file.display())));
    }
    match store::open_read_only(file) {
        Err(Error::Foreign(m)) if m.contains("schema") => {
            drop(store::open(file)?);
            store::open_read_only(file)
        }
        other => other,
    }
}

/// `lethe import`: JSONL, all or nothing; what was written gets its derived data now.
pub(super) fn import(cx: &mut Ctx, file: &Path, dry_run: bool) -> Result<Value> {
    let f = std::fs::File::open(file)?;
    let opts = transfer::ImportOptions { now: cx.now, dry_run };
    let report = transfer::import(cx.conn, std::io::BufReader::new(f), &opts)?;
    if !dry_run && report.imported > 0 {
        keep_derived(cx.conn, "import")?;
    }
    to_json(&report)
}

/// `lethe export`: every memory as JSONL on stdout (no JSON document after it).
pub(super) fn export(cx: &mut Ctx) -> Result<()> {
    use std::io::Write;
    let stdout = std::io::stdout();
    let mut lock = std::io::BufWriter::new(stdout.lock());
    // A reader that stops early (`lethe export | head`) ends the export, not in error.
    match transfer::export(cx.conn, &mut lock).and_then(|_| Ok(lock.flush()?)) {
        Err(e) if is_broken_pipe(&e) => Ok(()),
        other => other,
    }
}

/// Whether an error is a write to a reader that went away.
fn is_broken_pipe(e: &Error) -> bool {
    match e {
        Error::Io(io) => io.kind() == std::io::ErrorKind::BrokenPipe,
        Error::Json(j) => j.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe),
        _ => false,
    }
}

/// `lethe demo`.
pub(super) fn demo(cx: &mut Ctx, count: usize, seed: u32) -> Result<Value> {
    to_json(&lethe_engine::demo::load(cx.conn, seed, count, cx.now)?)
}

/// `lethe scan`: the memories holding secrets or personal data, or (`--redact --confirm`)
/// redacted in place.
pub(super) fn scan(cx: &mut Ctx, redact: bool, confirm: bool) -> Result<Value> {
    match (redact, confirm) {
        (false, false) => Ok(json!({ "items": lethe_engine::scan::scan(cx.conn)? })),
        (true, _) => to_json(&lethe_engine::scan::redact_in_place(cx.conn, confirm, cx.actor, cx.now)?),
        (false, true) => Err(Error::invalid("--confirm goes with --redact")),
    }
}

/// `lethe settings [KEY [VALUE]]`: all, one (a dotted path), or one changed by the person
/// (confirmed on the terminal unless signed in to a team store).
pub(super) fn settings(cx: &mut Ctx, key: &Option<String>, value: &Option<String>) -> Result<Value> {
    let s = Settings::load(cx.conn)?;
    match (key, value) {
        (None, _) => to_json(&s),
        (Some(k), None) => {
            let all = to_json(&s)?;
            let mut slot = &all;
            for part in k.split('.') {
                slot = slot.get(part).ok_or_else(|| Error::invalid(format!("unknown setting {k:?}")))?;
            }
            Ok(json!({ k.clone(): slot.clone() }))
        }
        (Some(k), Some(v)) => {
            let new = s.with_value(k, v)?;
            lethe_engine::actor::require_person_with(cx.actor, "changing settings", s.person_ops_window_only)?;
            let old = to_json(&s)?;
            let mut slot = &old;
            for part in k.split('.') {
                slot = slot.get(part).unwrap_or(&Value::Null);
            }
            if !cx.signed_in_person {
                confirm_on_terminal(&format!("Change setting {k} from {slot} to {v}?"))?;
            }
            to_json(&Settings::store(cx.conn, &new, cx.actor, cx.now)?)
        }
    }
}
