//! `lethe push FILE.db`: a local SQLite store moves into the team store on
//! PostgreSQL with its ids, counters, versions and audit.
//!
//! Every memory passes the checks of `lethe import` first, as if the file had been exported
//! and imported: the secrets and personal-data guard of the team's settings, the ranges of
//! `remember`, no date in the future, and a memory in quarantine is quarantined as of the
//! push (a file's old date would let the next batch purge it at once). One memory that fails
//! and nothing is pushed. The rows that name who did something (audit, supersede links,
//! dismissed pairs, procedure versions, archives, ended sessions) are recorded as
//! `pushed:<original actor>`, under the pushing role, which the audit's own push row names.
//!
//! A memory moves with everything that describes it (its forgetting events and actions, meta
//! statistics, procedure versions, archive originals, review and session rows, supersede
//! links, dismissed pairs, vector), or not at all: a memory whose id the team store already
//! holds is skipped with all of its rows, so a second push of the same file adds nothing. The
//! audit of memories deleted for ever in the file (their text is gone, their record is not)
//! moves once: when the team store has no record of that id yet. What describes the file
//! rather than its memories stays behind and is named in the report: its settings (the
//! team's settings govern the team store) and its recall log.
//!
//! The push is one transaction on the server, under a lock that admits one push at a time:
//! it lands whole or not at all. The file is only read.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::dedup;
use crate::error::{Error, Result};
use crate::model::{Memory, MEMORY_COLUMNS};
use crate::storage::db::{params, params_from_iter, Connection, Value};
use crate::time;

/// What [`push`] moved.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PushReport {
    /// The file, as given.
    pub from: String,
    /// The team store, without its password.
    pub to: String,
    /// Memories in the file, quarantined ones included.
    pub read: usize,
    /// Memories now in the team store that were not before.
    pub pushed: usize,
    /// Of those, memories in quarantine (quarantined as of the push, as `import` does).
    pub quarantined: usize,
    /// Memories whose text the secrets guard changed, and the spans it replaced.
    pub redacted_memories: usize,
    pub redacted_spans: usize,
    /// Memories of filler text only, left behind as `import` leaves them.
    pub trivial: usize,
    /// Memories whose id the team store already held: left as the team store has them.
    pub skipped_existing: usize,
    /// Audit rows moved: forgetting events and actions.
    pub audit_events: usize,
    pub audit_actions: usize,
    /// Archived tool outputs moved, with their byte-exact originals. They get the team
    /// store's next archive numbers; the memo in the memory names the new number.
    pub archives: usize,
    /// Rows of meta statistics, procedure versions and sessions moved.
    pub meta_stats: usize,
    pub procedure_versions: usize,
    pub sessions: usize,
    /// Vectors moved (memories without one are embedded by the team store's next recall).
    pub vectors: usize,
    /// What describes the file rather than its memories, and stays behind.
    pub not_moved: Vec<&'static str>,
}

/// Rows per INSERT: PostgreSQL takes at most 65,535 parameters in one statement.
const ROWS_PER_INSERT: usize = 500;

/// Every row of `sql` on `src`, as owned values.
fn rows(src: &Connection, sql: &str) -> Result<Vec<Vec<Value>>> {
    let mut stmt = src.prepare(sql)?;
    let n = stmt.column_count();
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        out.push((0..n).map(|i| r.get_ref(i).map(|v| v.to_owned())).collect::<Result<Vec<_>>>()?);
    }
    Ok(out)
}

fn text(v: &Value) -> Option<&str> {
    match v {
        Value::Text(s) => Some(s),
        _ => None,
    }
}

/// A value of a file's row as JSON (bytes as text: no table pushed this way holds any).
fn to_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Integer(n) => (*n).into(),
        Value::Real(x) => (*x).into(),
        Value::Text(t) => t.as_str().into(),
        Value::Blob(b) => String::from_utf8_lossy(b).into_owned().into(),
    }
}

/// `rows` into `table` through the team lead's `lethe_push_rows`, which checks each row,
/// records its actor as `pushed:<original>` and dates it no later than the server's clock
/// (Lethe's roles hold no INSERT right on these tables); the number of rows stored.
fn push_rows(dst: &Connection, table: &str, rows: &[Vec<Value>]) -> Result<usize> {
    let mut stored = 0;
    for chunk in rows.chunks(ROWS_PER_INSERT) {
        let json: Vec<serde_json::Value> =
            chunk.iter().map(|r| serde_json::Value::Array(r.iter().map(to_json).collect())).collect();
        stored += dst
            .prepare_cached("SELECT lethe_push_rows(?1, ?2)")?
            .query_row(params![table, serde_json::Value::Array(json).to_string()], |r| r.get::<_, i64>(0))?
            as usize;
    }
    Ok(stored)
}

/// The ids among `ids` that `dst` already holds (in the pushing role's team).
fn present(dst: &Connection, table: &str, col: &str, ids: &[&str]) -> Result<HashSet<String>> {
    let mut out = HashSet::new();
    for chunk in ids.chunks(ROWS_PER_INSERT) {
        let marks = vec!["?"; chunk.len()].join(",");
        let mut stmt = dst.prepare(&format!("SELECT {col} FROM {table} WHERE {col} IN ({marks})"))?;
        let found = stmt.query_map(params_from_iter(chunk.iter().copied()), |r| r.get::<_, String>(0))?;
        for id in found {
            out.insert(id?);
        }
    }
    Ok(out)
}

/// Moves the local store `src` into the team store `dst` (see the module's documentation).
/// `from` names the file in the report and in the push's own audit row.
pub fn push(src: &Connection, dst: &mut Connection, from: &str, actor: &str, now: time::Instant) -> Result<PushReport> {
    if src.is_postgres() || !dst.is_postgres() {
        return Err(Error::invalid(
            "lethe push moves a local SQLite file into a team store: lethe --db postgres://… push FILE.db",
        ));
    }
    let mut report = PushReport {
        from: from.to_string(),
        to: dst.describe(),
        not_moved: vec!["settings", "recall_log"],
        ..Default::default()
    };
    // One consistent view of the file for the whole push.
    src.begin(crate::storage::db::TransactionBehavior::Deferred)?;
    let out = (|| {
        let tx = dst.transaction()?;
        // One push at a time: the check for ids already present and the inserts that follow
        // must not interleave with another push of the same file.
        // The lock's key is the team's, derived on the server from a secret no role reads, so
        // no role of another team can hold it; like every lock, it is waited for at most the
        // connection's lock timeout.
        tx.execute_batch("SELECT pg_advisory_xact_lock(lethe_team_key('push'))")?;
        push_in(src, &tx, &mut report, actor, now)?;
        tx.commit()
    })();
    let _ = src.rollback();
    out.map(|()| report)
}

/// The memories among `to_push` (rows of the file) as `import` would store them (see the
/// module's documentation), in the file's order; trivial ones are left behind.
fn checked(
    src: &Connection,
    dst: &Connection,
    to_push: &[Vec<Value>],
    report: &mut PushReport,
    now: time::Instant,
) -> Result<Vec<Vec<Value>>> {
    let wanted: HashSet<&str> = to_push.iter().filter_map(|m| text(&m[0])).collect();
    let settings = crate::settings::Settings::load(dst)?;
    let mut checks = crate::transfer::ImportReport::default();
    let mut out = Vec::new();
    let mut stmt =
        src.prepare(&format!("SELECT {MEMORY_COLUMNS} FROM memory_item WHERE id IS NOT NULL ORDER BY rowid"))?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let m = Memory::from_row(&r)?;
        if !wanted.contains(m.id.as_str()) {
            continue;
        }
        match crate::transfer::checked_for_push(&m, &settings, now, &mut checks)? {
            Some(m) => out.push(crate::transfer::memory_values(&m)),
            None => report.trivial += 1,
        }
    }
    report.redacted_memories = checks.redacted_memories;
    report.redacted_spans = checks.redacted_spans;
    Ok(out)
}

/// `pushed:<actor>`: who did it in the file, recorded as brought by the push.
fn pushed_name(actor: &str) -> String {
    if actor.starts_with("pushed:") {
        actor.to_string()
    } else {
        format!("pushed:{actor}")
    }
}

fn pushed(actor: &Value) -> Value {
    Value::Text(pushed_name(text(actor).unwrap_or("unknown")))
}

/// The same rows with column `col` through [`pushed`].
fn with_pushed(mut rows: Vec<Vec<Value>>, col: usize) -> Vec<Vec<Value>> {
    for r in rows.iter_mut() {
        r[col] = pushed(&r[col]);
    }
    rows
}

/// A forgetting event's metadata with its actor through [`pushed`] (the table has no actor
/// column).
fn event_pushed(metadata: &Value) -> Value {
    let mut meta: serde_json::Map<String, serde_json::Value> = text(metadata)
        .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    let original = meta.get("actor").and_then(|a| a.as_str()).unwrap_or("unknown");
    let actor = pushed_name(original);
    meta.insert("actor".into(), serde_json::Value::String(actor));
    Value::Text(serde_json::Value::Object(meta).to_string())
}

fn push_in(src: &Connection, dst: &Connection, report: &mut PushReport, actor: &str, now: time::Instant) -> Result<()> {
    let (mut memories, all_ids) = new_memories(src, dst, report, now)?;
    let new: HashSet<String> = memories.iter().filter_map(|m| text(&m[0]).map(str::to_string)).collect();

    // Memories deleted for ever in the file: their audit moves if the team store has none yet.
    let events = rows(
        src,
        "SELECT id, memory_id, action, reason, policy, forget_score, ttl_days, created_at, metadata_json \
         FROM memory_forgetting_event ORDER BY rowid",
    )?;
    let actions = rows(
        src,
        "SELECT memory_id, action, actor, before_json, after_json, created_at FROM lethe_action ORDER BY id",
    )?;
    let gone: Vec<&str> = events
        .iter()
        .map(|e| &e[1])
        .chain(actions.iter().map(|a| &a[0]))
        .filter_map(text)
        .filter(|id| !all_ids.contains(*id))
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let mut recorded = present(dst, "memory_forgetting_event", "memory_id", &gone)?;
    recorded.extend(present(dst, "lethe_action", "memory_id", &gone)?);
    let moves =
        |id: Option<&str>| id.is_some_and(|id| new.contains(id) || (!all_ids.contains(id) && !recorded.contains(id)));

    let renumbered = push_archives(src, dst, &new, &mut memories, report)?;
    push_memories(dst, &memories, report)?;
    push_rows_of(src, dst, &new, &renumbered, report)?;
    push_sessions_and_audit(src, dst, events, actions, &moves, report)?;

    if report.pushed + report.audit_events + report.audit_actions + report.sessions > 0 {
        let after = serde_json::json!({
            "from": report.from, "pushed": report.pushed, "skipped_existing": report.skipped_existing,
            "audit_events": report.audit_events, "audit_actions": report.audit_actions,
        });
        crate::audit::record_action(dst, None, "push", actor, None, Some(&after), now)?;
    }
    Ok(())
}

/// The file's memories the team store does not hold yet, checked as `import` checks them;
/// also every memory id of the file.
fn new_memories(
    src: &Connection,
    dst: &Connection,
    report: &mut PushReport,
    now: time::Instant,
) -> Result<(Vec<Vec<Value>>, HashSet<String>)> {
    let mut memories =
        rows(src, &format!("SELECT {MEMORY_COLUMNS} FROM memory_item WHERE id IS NOT NULL ORDER BY rowid"))?;
    report.read = memories.len();
    let all_ids: HashSet<String> = memories.iter().filter_map(|m| text(&m[0]).map(str::to_string)).collect();
    let id_list: Vec<&str> = all_ids.iter().map(String::as_str).collect();
    let existing = present(dst, "memory_item", "id", &id_list)?;
    memories.retain(|m| text(&m[0]).is_some_and(|id| !existing.contains(id)));
    report.skipped_existing = report.read - memories.len();
    Ok((checked(src, dst, &memories, report, now)?, all_ids))
}

/// Archives first: they take the team store's next numbers, and an archived memory's memo
/// names its archive, so the memo is rewritten before the memory goes in. Returns each
/// renumbered memory's (old number, new number, memo).
fn push_archives(
    src: &Connection,
    dst: &Connection,
    new: &HashSet<String>,
    memories: &mut [Vec<Value>],
    report: &mut PushReport,
) -> Result<HashMap<String, (i64, i64, String)>> {
    let archives = rows(
        src,
        "SELECT archive_no, memory_id, memo, original, sha256, bytes, actor, archived_at, restored_at \
         FROM lethe_archive ORDER BY archive_no",
    )?;
    let mut renumbered: HashMap<String, (i64, i64, String)> = HashMap::new();
    for a in archives.iter().filter(|a| text(&a[1]).is_some_and(|id| new.contains(id))) {
        // The team lead's function computes the SHA-256 and size of the original itself.
        let original = match &a[3] {
            Value::Blob(b) => Value::Blob(b.clone()),
            Value::Text(t) => Value::Blob(t.as_bytes().to_vec()),
            other => other.clone(),
        };
        let no: i64 = dst.prepare_cached("SELECT lethe_push_archive(?1, ?2, ?3, ?4, ?5, ?6)")?.query_row(
            params![a[1].clone(), a[2].clone(), original, pushed(&a[6]), a[7].clone(), a[8].clone()],
            |r| r.get(0),
        )?;
        report.archives += 1;
        if let (Value::Integer(old), Some(id), Some(memo), Value::Null) = (&a[0], text(&a[1]), text(&a[2]), &a[8]) {
            renumbered.insert(id.to_string(), (*old, no, memo.to_string()));
        }
    }
    for m in memories.iter_mut() {
        let Some((old, no, memo)) = text(&m[0]).and_then(|id| renumbered.get(id)) else { continue };
        if text(&m[2]) == Some(format!("[Archive#{old}: {memo}]").as_str()) {
            m[2] = Value::Text(format!("[Archive#{no}: {memo}]"));
        }
    }
    Ok(renumbered)
}

/// The memories themselves, and their signatures.
fn push_memories(dst: &Connection, memories: &[Vec<Value>], report: &mut PushReport) -> Result<()> {
    // The server's function checks each row again as `import` does and stamps the role and
    // the quarantine's start (Lethe's roles hold no INSERT right on memory_item there).
    let mut stored = 0;
    for chunk in memories.chunks(ROWS_PER_INSERT) {
        let rows: Vec<&[Value]> = chunk.iter().map(Vec::as_slice).collect();
        stored += crate::ops::rows::insert_memories_on_server(dst, &rows, None, "", chrono::Utc::now())?.len();
    }
    if stored != memories.len() {
        // A conflict the check above could not see: the id belongs to another team.
        return Err(Error::invalid(format!(
            "{} of the file's memory ids are taken on the team server by another team; nothing was pushed",
            memories.len() - stored
        )));
    }
    report.pushed = stored;
    report.quarantined = memories.iter().filter(|m| matches!(m[23], Value::Integer(d) if d != 0)).count();
    let sigs: Vec<Vec<Value>> = memories
        .iter()
        .filter_map(|m| Some((text(&m[0])?, text(&m[2])?)))
        .map(|(id, content)| {
            vec![
                Value::Text(id.to_string()),
                Value::Text(dedup::content_hash(content)),
                Value::Blob(dedup::band_keys(content)),
            ]
        })
        .collect();
    for chunk in sigs.chunks(ROWS_PER_INSERT) {
        crate::storage::postgres::store_derived(dst, "lethe_signatures_store", chunk.iter().map(Vec::as_slice))?;
    }
    Ok(())
}

/// Rows that belong to one memory move with it.
fn push_rows_of(
    src: &Connection,
    dst: &Connection,
    new: &HashSet<String>,
    renumbered: &HashMap<String, (i64, i64, String)>,
    report: &mut PushReport,
) -> Result<()> {
    let of_new = |sql: &str, key: usize| -> Result<Vec<Vec<Value>>> {
        let mut all = rows(src, sql)?;
        all.retain(|r| text(&r[key]).is_some_and(|id| new.contains(id)));
        Ok(all)
    };
    let stats = of_new(
        "SELECT memory_id, recall_count, success_count, failure_count, avg_confidence, last_recalled_at FROM meta_memory_stats",
        0,
    )?;
    // The server's function adds them to the new memory's (empty) statistics, after checking
    // them (Lethe's roles hold no write right on the table there).
    let mut add = dst.prepare_cached("SELECT lethe_stats_add(?1, ?2, ?3, ?4, ?5, ?6)")?;
    for s in &stats {
        let count = match s[1] {
            Value::Integer(n) => n,
            _ => 0,
        };
        let avg = match s[4] {
            Value::Real(x) => x,
            Value::Integer(n) => n as f64,
            _ => 0.0,
        };
        let last = match &s[5] {
            Value::Text(t) if !t.is_empty() => Value::Text(t.clone()),
            _ => Value::Null,
        };
        report.meta_stats += add
            .query_row(params![s[0].clone(), count, s[2].clone(), s[3].clone(), avg * count as f64, last], |r| {
                r.get::<_, i64>(0)
            })? as usize;
    }
    let versions = with_pushed(
        of_new(
            "SELECT memory_id, version, snapshot_json, actor, created_at FROM lethe_procedure_version ORDER BY memory_id, version",
            0,
        )?,
        3,
    );
    report.procedure_versions = push_rows(dst, "lethe_procedure_version", &versions)?;
    push_rows(dst, "lethe_review", &of_new("SELECT memory_id, entered_at FROM lethe_review", 0)?)?;
    push_rows(
        dst,
        "lethe_task_log",
        &of_new("SELECT memory_id, session_id, task_kind, ended_at FROM lethe_task_log", 0)?,
    )?;
    push_rows(
        dst,
        "lethe_session_rule",
        &of_new("SELECT memory_id, session_id, created_at FROM lethe_session_rule", 0)?,
    )?;
    let mut links = rows(src, "SELECT old_id, new_id, actor, created_at FROM lethe_supersede")?;
    links.retain(|l| [&l[0], &l[1]].iter().any(|v| text(v).is_some_and(|id| new.contains(id))));
    push_rows(dst, "lethe_supersede", &with_pushed(links, 2))?;
    let mut pairs = rows(src, "SELECT a_id, b_id, actor, created_at FROM lethe_dismissed_pair")?;
    pairs.retain(|l| [&l[0], &l[1]].iter().any(|v| text(v).is_some_and(|id| new.contains(id))));
    push_rows(dst, "lethe_dismissed_pair", &with_pushed(pairs, 2))?;
    // A vector of the memo as the file wrote it is stale after renumbering: the team store
    // embeds those again.
    let mut vectors = of_new("SELECT memory_id, model, vec FROM lethe_vector ORDER BY rowid", 0)?;
    vectors.retain(|v| text(&v[0]).is_some_and(|id| !renumbered.contains_key(id)));
    // Another model's size is embedded again too (the server takes vectors of its own size).
    vectors.retain(|v| matches!(&v[2], Value::Blob(b) if b.len() == crate::embed::VECTOR_BYTES));
    for chunk in vectors.chunks(ROWS_PER_INSERT) {
        report.vectors +=
            crate::storage::postgres::store_derived(dst, "lethe_vectors_store", chunk.iter().map(Vec::as_slice))?;
    }
    Ok(())
}

/// Ended sessions, the audit row of each session this push brings, and the audit of the
/// memories that move (`moves`).
fn push_sessions_and_audit(
    src: &Connection,
    dst: &Connection,
    events: Vec<Vec<Value>>,
    actions: Vec<Vec<Value>>,
    moves: &dyn Fn(Option<&str>) -> bool,
    report: &mut PushReport,
) -> Result<()> {
    let ends = rows(src, "SELECT session_id, task_kind, ended_at, actor, answer FROM lethe_session_end")?;
    let known: HashSet<String> =
        present(dst, "lethe_session_end", "session_id", &ends.iter().filter_map(|e| text(&e[0])).collect::<Vec<_>>())?;
    let ends: Vec<Vec<Value>> = ends.into_iter().filter(|e| text(&e[0]).is_some_and(|s| !known.contains(s))).collect();
    let sessions: HashSet<String> = ends.iter().filter_map(|e| text(&e[0]).map(str::to_string)).collect();
    report.sessions = push_rows(dst, "lethe_session_end", &with_pushed(ends, 3))?;

    let events: Vec<Vec<Value>> = events
        .into_iter()
        .filter(|e| moves(text(&e[1])))
        .map(|mut e| {
            e[8] = event_pushed(&e[8]);
            e
        })
        .collect();
    report.audit_events = push_rows(dst, "memory_forgetting_event", &events)?;
    let session_of = |a: &[Value]| -> Option<String> {
        let after: serde_json::Value = serde_json::from_str(text(&a[4])?).ok()?;
        after.get("session_id")?.as_str().map(str::to_string)
    };
    let actions: Vec<Vec<Value>> = actions
        .into_iter()
        .filter(|a| match &a[0] {
            Value::Null => text(&a[1]) == Some("end_session") && session_of(a).is_some_and(|s| sessions.contains(&s)),
            id => moves(text(id)),
        })
        .collect();
    // The team lead's function records each as `pushed:<original actor>`, dated no later than
    // the server's clock (Lethe's roles hold no INSERT right on the audit there).
    for chunk in with_pushed(actions, 2).chunks(ROWS_PER_INSERT) {
        let rows: Vec<serde_json::Value> =
            chunk.iter().map(|a| serde_json::Value::Array(a.iter().map(to_json).collect())).collect();
        report.audit_actions +=
            dst.prepare_cached("SELECT lethe_action_push(?1)")?
                .query_row([serde_json::Value::Array(rows).to_string()], |r| r.get::<_, i64>(0))? as usize;
    }
    Ok(())
}
