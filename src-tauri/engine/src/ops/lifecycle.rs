//! The lifecycle of a memory (docs/lifecycle.md): remember with validation and the write-time
//! filter, read, list, edit, importance, pin, soft delete, restore, hard delete, cite, view.
//! Every mutation commits together with its audit row.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use crate::storage::db::{params, Connection, OptionalExtension, Transaction};
use serde::Serialize;

use crate::audit::{self, ForgettingEvent};
use crate::dedup;
use crate::error::{Error, Result};
use crate::model::{self, Memory, Tier};
use crate::ops::pins;
use crate::redact::{Finding, Guard, Policy};
use crate::settings::Settings;
use crate::store::write_tx;
use crate::time::{self, Instant};

pub use crate::forgetting::{ListQuery, MemoryRow, Page, SortBy};
pub use crate::ops::rows::get;
pub(crate) use crate::ops::rows::{get_tx, hard_delete_tx, soft_delete_tx};
pub use crate::ops::validate::{
    guard_new, validate_content, validate_importance, validate_tags, NewMemory, ProcedureFields, Redactions,
    FUTURE_SLACK_SECS,
};
pub(crate) use crate::ops::validate::{is_trivial, validate_new};

/// A memory stored, with its closest memories already stored; or why it was not.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum RememberOutcome {
    /// `similar`: the closest active memories that were already stored (similarity ≥
    /// [`SIMILAR_ON_WRITE`]), so that an agent can supersede instead of piling up near-copies.
    Stored {
        /// The new memory's id.
        id: String,
        /// True: stored.
        stored: bool,
        /// Its version (1 for a new memory).
        version: i64,
        /// The closest memories already stored: supersede them instead of piling up
        /// near-copies.
        similar: Vec<crate::semantic::Similar>,
        /// Spans replaced by `[REDACTED:<kind>]` (kind, field, byte offsets; never the value).
        redacted: Vec<Finding>,
        /// `pii:<kind>` tags the `pii = tag` setting added.
        pii_tags: Vec<String>,
    },
    /// Not stored, and why.
    Skipped {
        /// False: not stored.
        stored: bool,
        /// Why (trivial, duplicate).
        reason: String,
        /// The memory it duplicates.
        existing_id: Option<String>,
    },
}

impl RememberOutcome {
    pub fn id(&self) -> Option<&str> {
        match self {
            RememberOutcome::Stored { id, .. } => Some(id),
            RememberOutcome::Skipped { .. } => None,
        }
    }
}

/// How similar an existing memory must be to be named in `remember`'s answer.
pub const SIMILAR_ON_WRITE: f64 = 0.5;
/// How many of them at most.
pub const SIMILAR_LIMIT: usize = 5;

/// Stores a memory, or explains why it was not stored (trivial, exact duplicate).
/// What the audit keeps of a new memory; a memory dated earlier than its writing says so,
/// with both dates, so a back-dated memory is never mistaken for an old one.
fn remember_audit(m: &NewMemory, created: &str, now: Instant) -> serde_json::Value {
    let mut v = serde_json::json!({"type": m.tier, "preview": model::preview(&m.content, 120)});
    if m.created_at.is_some_and(|c| (now - c).num_seconds() > FUTURE_SLACK_SECS) {
        v["backdated"] = serde_json::json!({"created_at": created, "recorded_at": time::format(now)});
    }
    v
}

/// A memory ready to be written: guarded, validated, hashed and embedded, all before a
/// write transaction opens (so the write lock is never held for the model).
#[derive(Debug, Clone)]
pub struct Prepared {
    pub memory: NewMemory,
    pub redactions: Redactions,
    /// Why it is not stored at all (trivial), decided without the database.
    pub trivial: bool,
    hash: String,
    bands: Vec<u8>,
    vector: Option<crate::embed::Vector>,
}

/// Guard, validation, write-time trivial filter, hash, band keys and embedding of a new memory.
pub fn prepare_new(m: &NewMemory, settings: &Settings, now: Instant) -> Result<Prepared> {
    prepare_timed(m, settings, now, &mut StepClock::off())
}

fn prepare_timed(m: &NewMemory, settings: &Settings, now: Instant, clock: &mut StepClock) -> Result<Prepared> {
    let (guarded, redactions) = guard_new(m, settings)?;
    clock.lap(Step::Guard);
    validate_new(&guarded, settings, now)?;
    let trivial = is_trivial(&guarded.content, settings);
    clock.lap(Step::Validate);
    let hash = dedup::content_hash(&guarded.content);
    let bands = dedup::band_keys(&guarded.content);
    clock.lap(Step::Signature);
    let vector = if trivial { None } else { crate::embed::shared().map(|e| e.embed(&guarded.content)) };
    clock.lap(Step::Embed);
    Ok(Prepared { memory: guarded, redactions, trivial, hash, bands, vector })
}

/// The steps of one `remember` call, in the order they run (each is measured by
/// `lethe-bench`, which prints their cost per call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The actor check and reading the policy settings.
    Settings,
    /// The secrets and personal-data guard over every text field.
    Guard,
    /// Validation and the trivial-phrase filter.
    Validate,
    /// Content hash and MinHash band keys.
    Signature,
    /// The sentence embedding.
    Embed,
    /// `BEGIN IMMEDIATE` (the write lock).
    Begin,
    /// The exact-duplicate lookup and the supersede checks.
    DuplicateCheck,
    /// The `memory_item` row with its indexes and triggers (both full-text indexes, the change
    /// journal).
    Row,
    /// The signature and vector rows.
    Derived,
    /// The audit row (and the supersede links and their audit rows).
    Audit,
    /// The vector-cache keys read inside the transaction (so the process cache can be patched).
    CacheKeys,
    /// `COMMIT`: the WAL frames of every page the transaction changed, and a checkpoint when
    /// the WAL has grown past `wal_autocheckpoint`.
    Commit,
    /// The write-time `similar` scan by meaning (the process's index, before `BEGIN`).
    Scan,
    /// Reading the process's vector index before the write, patching it after, and the
    /// write-time `similar` candidates' words (or, without a model, the lexical scan).
    Similar,
}

impl Step {
    pub const ALL: [Step; 14] = [
        Step::Settings,
        Step::Guard,
        Step::Validate,
        Step::Signature,
        Step::Embed,
        Step::Begin,
        Step::DuplicateCheck,
        Step::Row,
        Step::Derived,
        Step::Audit,
        Step::CacheKeys,
        Step::Commit,
        Step::Scan,
        Step::Similar,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Step::Settings => "settings",
            Step::Guard => "guard",
            Step::Validate => "validate",
            Step::Signature => "hash_and_bands",
            Step::Embed => "embed",
            Step::Begin => "begin",
            Step::DuplicateCheck => "duplicate_check",
            Step::Row => "row_and_triggers",
            Step::Derived => "signature_and_vector_rows",
            Step::Audit => "audit",
            Step::CacheKeys => "cache_keys",
            Step::Commit => "commit",
            Step::Scan => "similar_scan",
            Step::Similar => "similar",
        }
    }
}

/// Time spent per [`Step`], summed over the calls given to [`remember_timed`].
#[derive(Debug, Clone, Default)]
pub struct StepTimes {
    pub total: [std::time::Duration; Step::ALL.len()],
}

impl StepTimes {
    pub fn of(&self, s: Step) -> std::time::Duration {
        self.total[s as usize]
    }
}

/// Adds the time since the previous lap to a step, when timing is on (off for every caller but
/// the benchmark, so the write path pays nothing for it).
pub(crate) struct StepClock<'a> {
    times: Option<&'a mut StepTimes>,
    last: std::time::Instant,
}

impl<'a> StepClock<'a> {
    pub(crate) fn off() -> StepClock<'static> {
        StepClock { times: None, last: std::time::Instant::now() }
    }

    fn on(times: &'a mut StepTimes) -> StepClock<'a> {
        StepClock { times: Some(times), last: std::time::Instant::now() }
    }

    fn lap(&mut self, s: Step) {
        if let Some(t) = self.times.as_deref_mut() {
            let now = std::time::Instant::now();
            t.total[s as usize] += now - self.last;
            self.last = now;
        }
    }
}

/// Why a prepared memory was not stored: (reason, existing id).
pub type NotStored = (String, Option<String>);

/// Writes a prepared memory inside an open transaction: the exact-duplicate filter (same tier,
/// active), the supersede checks, the row, its signature and vector, the audit and the links.
/// `Ok(Err(..))` when it was not stored. Returns the new id.
pub fn insert_prepared_tx(
    tx: &Transaction,
    p: &Prepared,
    actor: &str,
    now: Instant,
) -> Result<std::result::Result<String, NotStored>> {
    insert_tx(tx, p, actor, now, &mut StepClock::off()).map(|r| r.map(|(id, _)| id))
}

fn insert_tx(
    tx: &Transaction,
    p: &Prepared,
    actor: &str,
    now: Instant,
    clock: &mut StepClock,
) -> Result<std::result::Result<(String, i64), NotStored>> {
    let m = &p.memory;
    if p.trivial {
        return Ok(Err(("trivial: the content is a filler phrase with nothing to remember".into(), None)));
    }
    let existing: Option<String> = tx
        .prepare_cached(
            "SELECT s.memory_id FROM lethe_signature s JOIN memory_item m ON m.id = s.memory_id \
             WHERE s.content_hash = ?1 AND m.type = ?2 AND COALESCE(m.is_deleted, 0) = 0 LIMIT 1",
        )?
        .query_row(params![p.hash, m.tier.as_str()], |r| r.get(0))
        .optional()?;
    if let Some(existing_id) = existing {
        return Ok(Err((
            format!("duplicate: the same content is already stored in the {} tier", m.tier),
            Some(existing_id),
        )));
    }
    for old in &m.supersedes {
        let found: Option<i64> = tx
            .prepare_cached("SELECT COALESCE(is_deleted, 0) FROM memory_item WHERE id = ?1")?
            .query_row([old], |r| r.get(0))
            .optional()?;
        match found {
            None => return Err(Error::NotFound(format!("memory {old} (named in supersedes)"))),
            Some(1) => return Err(Error::invalid(format!("memory {old} is deleted and cannot be superseded"))),
            Some(_) => {}
        }
    }
    clock.lap(Step::DuplicateCheck);
    let id = model::new_memory_id();
    let created = time::format(m.created_at.unwrap_or(now));
    let tags = serde_json::to_string(&m.tags)?;
    let json = |v: &Option<serde_json::Value>| v.as_ref().map(|v| v.to_string());
    // The team store writes the row and its `remember` action in the server's function.
    let on_server = tx.is_postgres();
    let rowid: i64 = if on_server {
        insert_on_server(tx, p, &id, &created, actor, now)?
    } else {
        tx.prepare_cached(
            "INSERT INTO memory_item (id, type, content, importance, privacy_scope, created_at, last_accessed, pinned, tags, source, \
             view_count, cite_count, edit_count, task_goal, steps, reflection_notes, workflow_name, skill_name, trigger_conditions, \
             version, owner_id, session_id, project_id, is_deleted, deleted_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, ?7, ?8, ?9, 0, 0, 0, ?10, ?11, NULL, ?12, ?13, ?14, 1, ?15, ?16, ?17, 0, NULL) RETURNING rowid",
        )?
        .query_row(params![
            id,
            m.tier.as_str(),
            m.content,
            m.importance.unwrap_or(0.5),
            m.privacy_scope.as_deref().unwrap_or("private"),
            created,
            m.pinned as i64,
            tags,
            m.source,
            m.procedure.task_goal,
            json(&m.procedure.steps),
            m.procedure.workflow_name,
            m.procedure.skill_name,
            json(&m.procedure.trigger_conditions),
            m.owner_id,
            m.session_id,
            m.project_id,
        ], |r| r.get(0))?
    };
    clock.lap(Step::Row);
    let sql = if tx.is_postgres() {
        crate::dedup::SIGNATURE_ON_SERVER
    } else {
        "INSERT INTO lethe_signature (memory_id, content_hash, bands) VALUES (?1, ?2, ?3)"
    };
    tx.prepare_cached(sql)?.execute(params![id, p.hash, p.bands])?;
    if let (Some(e), Some(v)) = (crate::embed::shared(), &p.vector) {
        crate::semantic::store_vector(tx, e.fingerprint(), &id, v)?;
    }
    clock.lap(Step::Derived);
    if !on_server {
        audit::record_action(tx, Some(&id), "remember", actor, None, Some(&remember_audit(m, &created, now)), now)?;
    }
    for old in &m.supersedes {
        link_supersede_tx(tx, old, &id, actor, now)?;
    }
    clock.lap(Step::Audit);
    Ok(Ok((id, rowid)))
}

/// [`insert_tx`]'s row on a team store: the server's `lethe_memory_insert`, which checks the
/// row as the engine does, stamps the role and its clock and writes the `remember` action.
fn insert_on_server(tx: &Transaction, p: &Prepared, id: &str, created: &str, actor: &str, now: Instant) -> Result<i64> {
    use crate::storage::db::Value;
    let m = &p.memory;
    let text = |v: &Option<String>| v.clone().map_or(Value::Null, Value::Text);
    let json = |v: &Option<serde_json::Value>| v.as_ref().map_or(Value::Null, |v| Value::Text(v.to_string()));
    let row = [
        Value::Text(id.to_string()),
        Value::Text(m.tier.as_str().to_string()),
        Value::Text(m.content.clone()),
        Value::Real(m.importance.unwrap_or(0.5)),
        Value::Text(m.privacy_scope.clone().unwrap_or_else(|| "private".into())),
        Value::Text(created.to_string()),
        Value::Null,
        Value::Integer(m.pinned as i64),
        Value::Text(serde_json::to_string(&m.tags)?),
        text(&m.source),
        Value::Integer(0),
        Value::Integer(0),
        Value::Integer(0),
        text(&m.procedure.task_goal),
        json(&m.procedure.steps),
        Value::Null,
        text(&m.procedure.workflow_name),
        text(&m.procedure.skill_name),
        json(&m.procedure.trigger_conditions),
        Value::Integer(1),
        text(&m.owner_id),
        text(&m.session_id),
        text(&m.project_id),
        Value::Integer(0),
        Value::Null,
    ];
    let after = remember_audit(m, created, now);
    let after = audit::after_with_via(actor, Some(&after)).unwrap_or(after);
    let stored = crate::ops::rows::insert_memories_on_server(tx, &[&row], Some(&[after]), actor, now)?;
    stored.first().copied().ok_or_else(|| Error::invalid(format!("memory {id} was not stored")))
}

/// The supersede link `old` → `new` and its audit row (the one supersede path: `remember
/// --supersedes` and the duplicates review both write it). The caller checked both memories.
pub(crate) fn link_supersede_tx(tx: &Transaction, old: &str, new: &str, actor: &str, now: Instant) -> Result<()> {
    if tx.is_postgres() {
        // The team store's function writes the link and its action, under the role's name at
        // the server's clock (Lethe's roles hold no INSERT right on the links there).
        crate::ops::rows::server_write(
            tx,
            "SELECT lethe_supersede_link(?1, ?2, ?3, ?4, ?5)",
            params![old, new, actor, crate::actor::via_of(actor), time::format(now)],
        )?;
        return Ok(());
    }
    tx.prepare_cached(
        "INSERT OR IGNORE INTO lethe_supersede (old_id, new_id, actor, created_at) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![old, new, actor, time::format(now)])?;
    audit::record_action(
        tx,
        Some(old),
        "superseded",
        actor,
        None,
        Some(&serde_json::json!({"superseded_by": new})),
        now,
    )?;
    Ok(())
}

/// Stores `m` written by `actor` at `now`, as `lethe remember` and MCP's `remember` do: the
/// input is validated, secrets are redacted (or refused, as the settings say) before anything
/// is written, a trivial text or an exact copy of an active memory is skipped, and the memory,
/// its audit row, its recall index and its neighbours are written in one transaction. The
/// answer names the closest memories already stored (`similar`: duplicate, possible update or
/// related, with the evidence) so an agent can supersede instead of piling up near-copies.
pub fn remember(conn: &mut Connection, m: &NewMemory, actor: &str, now: Instant) -> Result<RememberOutcome> {
    remember_with(conn, m, actor, now, &mut StepClock::off())
}

/// [`remember`], adding the time of each [`Step`] to `times` (for the benchmark).
pub fn remember_timed(
    conn: &mut Connection,
    m: &NewMemory,
    actor: &str,
    now: Instant,
    times: &mut StepTimes,
) -> Result<RememberOutcome> {
    remember_with(conn, m, actor, now, &mut StepClock::on(times))
}

fn remember_with(
    conn: &mut Connection,
    m: &NewMemory,
    actor: &str,
    now: Instant,
    clock: &mut StepClock,
) -> Result<RememberOutcome> {
    let mut out = remember_group(conn, &[RememberCall { memory: m, actor, now }], clock)?;
    out.pop().expect("one answer per call")
}

/// Whether every memory of `ids` is in the store, with its signature and its `remember` audit
/// row (all written by one transaction, so all or none).
fn all_stored(conn: &Connection, ids: &[&str]) -> Result<bool> {
    for id in ids {
        let found: i64 = conn.query_row(
            "SELECT (SELECT COUNT(*) FROM memory_item WHERE id = ?1) \
                  + (SELECT COUNT(*) FROM lethe_signature WHERE memory_id = ?1) \
                  + (SELECT COUNT(*) FROM lethe_action WHERE memory_id = ?1 AND action = 'remember')",
            [id],
            |r| r.get(0),
        )?;
        if found != 3 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// One `remember` of a group commit ([`remember_many`]).
#[derive(Debug, Clone, Copy)]
pub struct RememberCall<'a> {
    pub memory: &'a NewMemory,
    pub actor: &'a str,
    pub now: Instant,
}

/// Several `remember` calls in one write transaction (group commit): one `BEGIN`
/// and one `COMMIT` for all, each call in a savepoint of its own. The answers are, in order,
/// what the calls would have answered one after the other: each its own outcome or error and
/// its own audit row; a call that fails leaves nothing and does not touch the others; an exact
/// duplicate of an earlier call of the group is not stored; and `similar` also names the
/// memories written earlier in the group (without a model its word neighbours are read after
/// the commit, so it may also name a later one). When the group as a whole cannot be written (its
/// commit fails), each call is made again on its own, so that each gets its own error.
pub fn remember_many(conn: &mut Connection, calls: &[RememberCall]) -> Vec<Result<RememberOutcome>> {
    match remember_group(conn, calls, &mut StepClock::off()) {
        Ok(out) => out,
        Err(_) if calls.len() > 1 => calls.iter().map(|c| remember(conn, c.memory, c.actor, c.now)).collect(),
        Err(e) => vec![Err(e)],
    }
}

/// A call of a group once prepared: what it will write, or what it already answers.
enum Pending {
    Write { p: Box<Prepared>, nearest: Option<Vec<(i64, f32)>> },
    Done(Result<RememberOutcome>),
}

/// What a stored call of the group wrote.
struct Wrote {
    id: String,
    rowid: i64,
    /// The vector-cache keys before and after its rows (see [`crate::semantic::Written`]).
    keys: Option<((i64, i64), (i64, i64))>,
}

/// [`remember_many`]'s work. `Err` only when nothing of the group was written.
fn remember_group(
    conn: &mut Connection,
    calls: &[RememberCall],
    clock: &mut StepClock,
) -> Result<Vec<Result<RememberOutcome>>> {
    let settings = Settings::load(conn)?;
    clock.lap(Step::Settings);
    let mut pending: Vec<Pending> = calls
        .iter()
        .map(|c| {
            let prepared = model::validate_actor(c.actor)
                .and_then(|()| pins::refuse_agent_pinned_write(c.actor, c.memory.pinned))
                .and_then(|()| {
                    c.memory.supersedes.iter().try_for_each(|old| {
                        pins::refuse_agent_on_person_pin(conn, old, c.actor, pins::Attempt::Supersede, c.now)
                    })
                })
                .and_then(|()| prepare_timed(c.memory, &settings, c.now, clock));
            match prepared {
                Err(e) => Pending::Done(Err(e)),
                Ok(p) if p.trivial => Pending::Done(Ok(RememberOutcome::Skipped {
                    stored: false,
                    reason: "trivial: the content is a filler phrase with nothing to remember".into(),
                    existing_id: None,
                })),
                Ok(p) => Pending::Write { p: Box::new(p), nearest: None },
            }
        })
        .collect();
    // Nothing to write (every call invalid or trivial): no transaction, no write lock.
    if pending.iter().all(|w| matches!(w, Pending::Done(_))) {
        return Ok(pending
            .into_iter()
            .map(|w| match w {
                Pending::Done(answer) => answer,
                Pending::Write { .. } => unreachable!("all are done"),
            })
            .collect());
    }
    let embedder = crate::embed::shared();
    let path = conn.path().unwrap_or("").to_string();
    let vectors = pending.iter().any(|w| matches!(w, Pending::Write { p, .. } if p.vector.is_some()));
    // The process's vector index as it is before these writes (read outside the write lock; a
    // cache hit after the first call of a long-running writer).
    let before_write = match embedder {
        Some(e) if vectors => Some(crate::semantic::index(conn, e)?),
        _ => None,
    };
    clock.lap(Step::Similar);
    // The write-time neighbours by meaning, from the index as it was before the group. They
    // are searched here, on the writer's thread: on a second thread (overlapping the
    // transaction) a busy machine made each call wait for that thread to be scheduled,
    // 1.7 ms a call while two compilers ran, against a scan of tens of µs.
    if let Some(ix) = before_write.as_deref() {
        for w in &mut pending {
            if let Pending::Write { p, nearest } = w {
                if let Some(q) = &p.vector {
                    *nearest = Some(crate::semantic::nearest_on_write(ix, q, SIMILAR_LIMIT));
                }
            }
        }
    }
    clock.lap(Step::Scan);
    let wrote = write_group(conn, &pending, calls, vectors, clock)?;
    // The scans' hold on the index ends here, so the patches below update it in place.
    drop(before_write);
    // Each stored vector enters the process's index in the order written (each patch applies
    // only to an index at its `before` key, so the order matters).
    if let Some(e) = embedder {
        for (w, r) in pending.iter().zip(&wrote) {
            if let (Pending::Write { p, .. }, Some(Ok(Ok(wr)))) = (w, r) {
                if let (Some((before, after)), Some(v)) = (wr.keys, &p.vector) {
                    let m = &p.memory;
                    let written = crate::semantic::Written {
                        path: &path,
                        before,
                        after,
                        rowid: wr.rowid,
                        tier: m.tier,
                        pinned: m.pinned,
                        vector: v,
                    };
                    crate::semantic::patch_cache(e, written);
                }
            }
        }
    }
    Ok(answers(conn, pending, wrote, clock))
}

/// What each call of a group wrote (`None` for a call already answered), from one write
/// transaction: each call in a savepoint of its own when there are several.
type GroupWrites = Vec<Option<Result<std::result::Result<Wrote, NotStored>>>>;

/// [`remember_group`]'s write transaction: every call to write, then `COMMIT`. `Err` only when
/// nothing of the group was written.
fn write_group(
    conn: &mut Connection,
    pending: &[Pending],
    calls: &[RememberCall],
    vectors: bool,
    clock: &mut StepClock,
) -> Result<GroupWrites> {
    let alone = calls.len() == 1;
    // write_tx's retry on BUSY, spelled out so that BEGIN and COMMIT are timed on their own.
    crate::store::with_retry(|| {
        let tx = conn.transaction_with_behavior(crate::storage::db::TransactionBehavior::Immediate)?;
        clock.lap(Step::Begin);
        let mut key = if vectors { Some(crate::semantic::cache_key(&tx)?) } else { None };
        clock.lap(Step::CacheKeys);
        let mut wrote: Vec<Option<Result<std::result::Result<Wrote, NotStored>>>> = Vec::with_capacity(pending.len());
        for (w, c) in pending.iter().zip(calls) {
            let Pending::Write { p, .. } = w else {
                wrote.push(None);
                continue;
            };
            if !alone {
                tx.execute_batch("SAVEPOINT lethe_group_call")?;
            }
            let one = insert_tx(&tx, p, c.actor, c.now, clock).and_then(|r| match r {
                Ok((id, rowid)) => {
                    let keys = match key {
                        Some(before) => {
                            let after = crate::semantic::cache_key(&tx)?;
                            key = Some(after);
                            Some((before, after))
                        }
                        None => None,
                    };
                    Ok(Ok(Wrote { id, rowid, keys }))
                }
                Err(skipped) => Ok(Err(skipped)),
            });
            clock.lap(Step::CacheKeys);
            match one {
                // Alone, or BUSY (the whole group is tried again): the transaction ends here.
                Err(e) if alone || e.is_retryable() => return Err(e),
                Err(e) => {
                    tx.execute_batch("ROLLBACK TO SAVEPOINT lethe_group_call; RELEASE SAVEPOINT lethe_group_call")?;
                    wrote.push(Some(Err(e)));
                }
                Ok(r) => {
                    if !alone {
                        tx.execute_batch("RELEASE SAVEPOINT lethe_group_call")?;
                    }
                    wrote.push(Some(Ok(r)));
                }
            }
        }
        match tx.commit() {
            Ok(()) => {}
            // The team server went away during the commit: the memories it was storing are
            // read back on a new connection (to whichever host now accepts writes). All there:
            // the commit happened and the answers stand. Otherwise the caller hears that
            // nothing is known to be stored; running the call again is answered as a
            // duplicate of what did arrive, never a second copy.
            Err(Error::CommitLost(why)) => {
                let ids: Vec<&str> = wrote
                    .iter()
                    .filter_map(|r| match r {
                        Some(Ok(Ok(w))) => Some(w.id.as_str()),
                        _ => None,
                    })
                    .collect();
                if ids.is_empty() || !all_stored(conn, &ids).unwrap_or(false) {
                    return Err(Error::Unavailable(why));
                }
            }
            Err(e) => return Err(e),
        }
        clock.lap(Step::Commit);
        Ok(wrote)
    })
}

/// [`remember_group`]'s answers once the group is committed: each stored call with its
/// write-time `similar` list, each other call with what it already answers.
fn answers(
    conn: &mut Connection,
    pending: Vec<Pending>,
    wrote: GroupWrites,
    clock: &mut StepClock,
) -> Vec<Result<RememberOutcome>> {
    // The candidates' words are read after the commit (the write lock is not held for them).
    let mut earlier: Vec<(i64, crate::embed::Vector)> = Vec::new();
    let mut out = Vec::with_capacity(pending.len());
    for (w, r) in pending.into_iter().zip(wrote) {
        let (p, nearest, r) = match (w, r) {
            (Pending::Done(answer), _) => {
                out.push(answer);
                continue;
            }
            (Pending::Write { p, nearest }, Some(r)) => (p, nearest, r),
            (Pending::Write { .. }, None) => unreachable!("every call to write has an answer"),
        };
        let wr = match r {
            Ok(Ok(wr)) => wr,
            Ok(Err((reason, existing_id))) => {
                out.push(Ok(RememberOutcome::Skipped { stored: false, reason, existing_id }));
                continue;
            }
            Err(e) => {
                out.push(Err(e));
                continue;
            }
        };
        let nearest = nearest.map(|n| match &p.vector {
            Some(q) => crate::semantic::with_earlier(n, q, &earlier, SIMILAR_LIMIT),
            None => n,
        });
        let similar = crate::semantic::similar_on_write(
            conn,
            &p.memory.content,
            nearest.as_deref(),
            &wr.id,
            SIMILAR_LIMIT,
            SIMILAR_ON_WRITE,
        );
        clock.lap(Step::Similar);
        if let Some(v) = &p.vector {
            earlier.push((wr.rowid, v.clone()));
        }
        // The memory is committed: a team server lost while reading its neighbours (a failover)
        // costs the answer its `similar` list, never the fact that it is stored.
        let similar = match similar {
            Err(e) if e.code() == "db_unavailable" => Ok(Vec::new()),
            other => other,
        };
        out.push(similar.map(|similar| RememberOutcome::Stored {
            id: wr.id,
            stored: true,
            version: 1,
            similar,
            redacted: p.redactions.redacted.clone(),
            pii_tags: p.redactions.pii_tags.clone(),
        }));
    }
    out
}

fn snapshot(m: &Memory) -> serde_json::Value {
    serde_json::json!({
        "pinned": m.pinned, "importance": m.importance, "is_deleted": m.is_deleted,
        "deleted_at": m.deleted_at, "content_preview": model::preview(&m.content, 120), "edit_count": m.edit_count,
        "version": m.version,
    })
}

/// The before and after states of a change as the audit stores them (the snapshot, and `via`
/// in the after state), the after state made by `change` from the state before: what a team
/// store's function writes as the action's row in the change's own call.
fn states(actor: &str, before: &Memory, change: impl FnOnce(&mut Memory)) -> (String, String) {
    let mut after = before.clone();
    change(&mut after);
    let a = snapshot(&after);
    let a = audit::after_with_via(actor, Some(&a)).unwrap_or(a);
    (snapshot(before).to_string(), a.to_string())
}

/// A restore on a team store: the server's function writes the change and its action.
fn restore_on_server(tx: &Transaction, id: &str, before: &Memory, actor: &str, now: Instant) -> Result<()> {
    let (b, a) = states(actor, before, |m| {
        m.is_deleted = false;
        m.deleted_at = None;
    });
    server_write(tx, "SELECT lethe_memory_restore(?1, ?2, ?3, ?4, ?5)", params![id, actor, b, a, time::format(now)])
}

/// One of the team store's write functions (see `rows::server_write`).
fn server_write<P: crate::storage::db::Params>(tx: &Transaction, sql: &str, params: P) -> Result<()> {
    crate::ops::rows::server_write(tx, sql, params).map(|_| ())
}

/// Applies a change to one memory and audits it with before/after state.
fn mutate(
    conn: &mut Connection,
    id: &str,
    action: &str,
    actor: &str,
    now: Instant,
    apply: impl Fn(&Transaction, &Memory) -> Result<()>,
) -> Result<Memory> {
    model::validate_actor(actor)?;
    write_tx(conn, |tx| {
        let before = get_tx(tx, id)?;
        apply(tx, &before)?;
        let after = get_tx(tx, id)?;
        // On a team store the operation's function wrote the action row with the change.
        if !tx.is_postgres() {
            audit::record_action(tx, Some(id), action, actor, Some(&snapshot(&before)), Some(&snapshot(&after)), now)?;
        }
        Ok(after)
    })
}

pub fn pin(conn: &mut Connection, id: &str, actor: &str, now: Instant) -> Result<Memory> {
    mutate(conn, id, "pin", actor, now, |tx, before| {
        if tx.is_postgres() {
            let (b, a) = states(actor, before, |m| m.pinned = true);
            let sql = "SELECT lethe_memory_pin(?1, TRUE, ?2, ?3, ?4, ?5)";
            return server_write(tx, sql, params![id, actor, b, a, time::format(now)]);
        }
        tx.execute("UPDATE memory_item SET pinned = 1 WHERE id = ?1", [id])?;
        Ok(())
    })
}

/// An agent may not unpin a memory a person pinned (`forbidden`, the attempt audited).
pub fn unpin(conn: &mut Connection, id: &str, actor: &str, now: Instant) -> Result<Memory> {
    model::validate_actor(actor)?;
    pins::refuse_agent_on_person_pin(conn, id, actor, pins::Attempt::Unpin, now)?;
    mutate(conn, id, "unpin", actor, now, |tx, before| {
        if tx.is_postgres() {
            let (b, a) = states(actor, before, |m| m.pinned = false);
            let sql = "SELECT lethe_memory_pin(?1, FALSE, ?2, ?3, ?4, ?5)";
            return server_write(tx, sql, params![id, actor, b, a, time::format(now)]);
        }
        tx.execute("UPDATE memory_item SET pinned = 0 WHERE id = ?1", [id])?;
        Ok(())
    })
}

/// An agent may raise the importance of a memory a person pinned, not lower it (`forbidden`,
/// the attempt audited).
pub fn set_importance(conn: &mut Connection, id: &str, value: f64, actor: &str, now: Instant) -> Result<Memory> {
    validate_importance(value)?;
    model::validate_actor(actor)?;
    if value < get(conn, id)?.importance {
        pins::refuse_agent_on_person_pin(conn, id, actor, pins::Attempt::LowerImportance, now)?;
    }
    mutate(conn, id, "importance", actor, now, |tx, before| {
        if tx.is_postgres() {
            let (b, a) = states(actor, before, |m| m.importance = value);
            let sql = "SELECT lethe_memory_importance(?1, ?2, ?3, ?4, ?5, ?6)";
            return server_write(tx, sql, params![id, value, actor, b, a, time::format(now)]);
        }
        tx.execute("UPDATE memory_item SET importance = ?2 WHERE id = ?1", params![id, value])?;
        Ok(())
    })
}

/// Replaces the content; counts as an edit (usage) and refreshes the similarity signature.
/// Last writer wins; [`edit_checked`] refuses a stale edit.
pub fn edit(conn: &mut Connection, id: &str, content: &str, actor: &str, now: Instant) -> Result<Memory> {
    edit_checked(conn, id, content, None, actor, now).map(|(m, _)| m)
}

/// Replaces the content if the memory is still at `expected_version` (when given): every edit
/// makes a new version, so an edit prepared from an older read is a typed conflict naming the
/// current version, and nothing is written. A procedure's edit goes through its
/// compare-and-swap, which keeps the previous version as a snapshot.
pub fn edit_checked(
    conn: &mut Connection,
    id: &str,
    content: &str,
    expected_version: Option<i64>,
    actor: &str,
    now: Instant,
) -> Result<(Memory, Redactions)> {
    model::validate_actor(actor)?;
    let current = get(conn, id)?;
    if current.tier == Tier::Procedural {
        let patch =
            crate::procedural::ProcedurePatch { content: Some(content.to_string()), fields: Default::default() };
        return crate::procedural::update_guarded(
            conn,
            id,
            expected_version.unwrap_or(current.version),
            &patch,
            actor,
            now,
        );
    }
    let settings = Settings::load(conn)?;
    let mut g = Guard::new(Policy::of(&settings));
    let content = &g.text("content", content)?;
    let redactions = Redactions::of(&g);
    validate_content(content, &settings)?;
    let hash = dedup::content_hash(content);
    let bands = dedup::band_keys(content);
    let embedder = crate::embed::shared();
    let vector = embedder.map(|e| e.embed(content));
    mutate(conn, id, "edit", actor, now, |tx, before| {
        if let Some(expected) = expected_version {
            if before.version != expected {
                return Err(Error::Conflict { id: id.to_string(), expected, current: before.version });
            }
        }
        if crate::archive::is_archived(tx, id)? {
            return Err(Error::invalid(format!("memory {id} is archived; unarchive it before editing")));
        }
        if tx.is_postgres() {
            let (b, a) = states(actor, before, |m| {
                m.content = content.to_string();
                m.edit_count += 1;
                m.version += 1;
            });
            let sql = "SELECT lethe_memory_edit(?1, ?2, NULL, ?3, ?4, ?5, ?6)";
            server_write(tx, sql, params![id, content, actor, b, a, time::format(now)])?;
        } else {
            tx.execute(
                "UPDATE memory_item SET content = ?2, edit_count = COALESCE(edit_count, 0) + 1, last_accessed = ?3, \
                 version = COALESCE(version, 1) + 1 WHERE id = ?1",
                params![id, content, time::format(now)],
            )?;
        }
        if !redactions.pii_tags.is_empty() {
            let mut tags = get_tx(tx, id)?.tags;
            for t in &redactions.pii_tags {
                if !tags.contains(t) {
                    tags.push(t.clone());
                }
            }
            validate_tags(&tags)?;
            crate::ops::rows::set_tags(tx, id, &tags)?;
        }
        let sql = if tx.is_postgres() {
            crate::dedup::SIGNATURE_ON_SERVER
        } else {
            "INSERT INTO lethe_signature (memory_id, content_hash, bands) VALUES (?1, ?2, ?3) \
             ON CONFLICT(memory_id) DO UPDATE SET content_hash = excluded.content_hash, bands = excluded.bands"
        };
        tx.execute(sql, params![id, hash, bands])?;
        // The content trigger dropped the old vector; the new one goes in with the edit.
        if let (Some(e), Some(v)) = (embedder, &vector) {
            crate::semantic::store_vector(tx, e.fingerprint(), id, v)?;
        }
        Ok(())
    })
    .map(|m| (m, redactions))
}

/// An agent reports that it used the memory (a cite, docs/lifecycle.md usage).
pub fn cite(conn: &mut Connection, id: &str, actor: &str, now: Instant) -> Result<Memory> {
    mutate(conn, id, "cite", actor, now, |tx, before| {
        if tx.is_postgres() {
            let (b, a) = states(actor, before, |_| {});
            let sql = "SELECT lethe_memory_count(?1, 'cite', ?2, ?3, ?4, ?5)";
            return server_write(tx, sql, params![id, actor, b, a, time::format(now)]);
        }
        tx.execute(
            "UPDATE memory_item SET cite_count = COALESCE(cite_count, 0) + 1, last_accessed = ?2 WHERE id = ?1",
            params![id, time::format(now)],
        )?;
        Ok(())
    })
}

/// A person or agent opened the memory: counts a view. Not audited (it is a read).
pub fn view(conn: &mut Connection, id: &str, now: Instant) -> Result<Memory> {
    write_tx(conn, |tx| {
        if tx.is_postgres() {
            get_tx(tx, id)?;
            server_write(
                tx,
                "SELECT lethe_memory_count(?1, 'view', NULL, NULL, NULL, ?2)",
                params![id, time::format(now)],
            )?;
            return get_tx(tx, id);
        }
        let n = tx.execute(
            "UPDATE memory_item SET view_count = COALESCE(view_count, 0) + 1, last_accessed = ?2 WHERE id = ?1",
            params![id, time::format(now)],
        )?;
        if n == 0 {
            return Err(Error::NotFound(format!("memory {id}")));
        }
        get_tx(tx, id)
    })
}

/// A person or agent moves a memory to quarantine.
pub fn soft_delete(
    conn: &mut Connection,
    id: &str,
    reason: Option<&str>,
    actor: &str,
    now: Instant,
) -> Result<ForgettingEvent> {
    soft_delete_scored(conn, id, reason, actor, now, |conn, s| crate::forgetting::score_one(conn, id, s, now))
}

/// [`soft_delete`], scoring the memory (for its forgetting event) from a snapshot the caller
/// keeps, as the window does, instead of loading every memory again.
pub fn soft_delete_in(
    conn: &mut Connection,
    snap: &crate::forgetting::Snapshot,
    id: &str,
    reason: Option<&str>,
    actor: &str,
    now: Instant,
) -> Result<ForgettingEvent> {
    soft_delete_scored(conn, id, reason, actor, now, |conn, s| crate::forgetting::score_in(conn, snap, id, s, now))
}

fn soft_delete_scored(
    conn: &mut Connection,
    id: &str,
    reason: Option<&str>,
    actor: &str,
    now: Instant,
    score: impl FnOnce(&Connection, &Settings) -> Result<crate::decay::ForgetScore>,
) -> Result<ForgettingEvent> {
    model::validate_actor(actor)?;
    pins::refuse_agent_on_person_pin(conn, id, actor, pins::Attempt::Quarantine, now)?;
    let settings = Settings::load(conn)?;
    // Without a reason, the event says who deleted it: the person, or an agent that gave none.
    let default_reason = if crate::actor::is_person(actor) {
        "deleted by a person".to_string()
    } else {
        format!("deleted by {actor} without a reason")
    };
    let reason = &crate::ops::validate::guard_label(&settings, "reason", reason.unwrap_or(&default_reason))?;
    crate::ops::validate::validate_reason(reason)?;
    let score = score(conn, &settings).ok().map(|f| f.forget_score);
    let policy = if actor.starts_with("agent:") { "agent" } else { "manual" };
    write_tx(conn, |tx| soft_delete_tx(tx, id, reason, policy, score, actor, &settings, now))
}

/// Brings a memory back from quarantine exactly as it was.
pub fn restore(conn: &mut Connection, id: &str, actor: &str, now: Instant) -> Result<Memory> {
    mutate(conn, id, "restore", actor, now, |tx, before| {
        if !before.is_deleted {
            return Err(Error::invalid(format!("memory {id} is not in quarantine")));
        }
        if tx.is_postgres() {
            return restore_on_server(tx, id, before, actor, now);
        }
        crate::ops::rows::restore_tx(tx, id)?;
        Ok(())
    })
}

pub fn hard_delete(
    conn: &mut Connection,
    id: &str,
    confirm: bool,
    reason: Option<&str>,
    actor: &str,
    now: Instant,
) -> Result<ForgettingEvent> {
    model::validate_actor(actor)?;
    pins::refuse_agent_on_person_pin(conn, id, actor, pins::Attempt::DeleteForEver, now)?;
    crate::actor::require_person(actor, "deleting a memory for ever")?;
    let window_only = Settings::load(conn)?.person_ops_window_only;
    crate::actor::require_person_with(actor, "deleting a memory for ever", window_only)?;
    get(conn, id)?;
    if let Some(why) = crate::store::memory_delete_blocked(conn)? {
        return Err(Error::invalid(why));
    }
    if !confirm {
        return Err(Error::ConfirmationRequired(format!(
            "hard delete of {id} removes it for ever (only the audit events stay); pass confirm to proceed"
        )));
    }
    let settings = Settings::load(conn)?;
    let reason =
        &crate::ops::validate::guard_label(&settings, "reason", reason.unwrap_or("deleted for ever by a person"))?;
    crate::ops::validate::validate_reason(reason)?;
    let event = write_tx(conn, |tx| {
        let e = hard_delete_tx(tx, id, reason, "manual", actor, now)?;
        crate::store::purge_deleted_index_entries(tx)?;
        Ok(e)
    })?;
    crate::store::checkpoint_truncate(conn)?;
    Ok(event)
}

/// Brings a selection back from quarantine in one transaction: every memory gets its own
/// `restore` action (so its history shows it), all at the same instant, or nothing is written
/// (an id that is unknown or not in quarantine is a typed error naming it). Returns the
/// restored memories in the order given.
pub fn restore_many(conn: &mut Connection, ids: &[String], actor: &str, now: Instant) -> Result<Vec<Memory>> {
    model::validate_actor(actor)?;
    if ids.is_empty() {
        return Err(Error::invalid("no memories to restore"));
    }
    let mut seen = std::collections::HashSet::with_capacity(ids.len());
    if let Some(dup) = ids.iter().find(|id| !seen.insert(id.as_str())) {
        return Err(Error::invalid(format!("memory {dup} is named twice")));
    }
    // Checked before the transaction so that a wrong selection attempts no write at all; the
    // transaction checks again for what changed in between.
    for id in ids {
        if !get(conn, id)?.is_deleted {
            return Err(Error::invalid(format!("memory {id} is not in quarantine")));
        }
    }
    write_tx(conn, |tx| {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let before = get_tx(tx, id)?;
            if !before.is_deleted {
                return Err(Error::invalid(format!("memory {id} is not in quarantine")));
            }
            if tx.is_postgres() {
                restore_on_server(tx, id, &before, actor, now)?;
                out.push(get_tx(tx, id)?);
                continue;
            }
            crate::ops::rows::restore_tx(tx, id)?;
            let after = get_tx(tx, id)?;
            audit::record_action(
                tx,
                Some(id),
                "restore",
                actor,
                Some(&snapshot(&before)),
                Some(&snapshot(&after)),
                now,
            )?;
            out.push(after);
        }
        Ok(out)
    })
}

/// Deletes a selection for ever in one transaction, each as [`hard_delete`] deletes one (a
/// person only, with `confirm`; every trace of each goes, its `hard` event stays with facts
/// alone); the index clean-up and the WAL truncation run once for the whole selection.
/// All or nothing: an unknown id is a typed error and nothing is deleted.
pub fn hard_delete_many(
    conn: &mut Connection,
    ids: &[String],
    confirm: bool,
    actor: &str,
    now: Instant,
) -> Result<Vec<ForgettingEvent>> {
    model::validate_actor(actor)?;
    crate::actor::require_person(actor, "deleting a memory for ever")?;
    let settings = Settings::load(conn)?;
    crate::actor::require_person_with(actor, "deleting a memory for ever", settings.person_ops_window_only)?;
    if ids.is_empty() {
        return Err(Error::invalid("no memories to delete"));
    }
    let mut seen = std::collections::HashSet::with_capacity(ids.len());
    if let Some(dup) = ids.iter().find(|id| !seen.insert(id.as_str())) {
        return Err(Error::invalid(format!("memory {dup} is named twice")));
    }
    for id in ids {
        get(conn, id)?;
    }
    if let Some(why) = crate::store::memory_delete_blocked(conn)? {
        return Err(Error::invalid(why));
    }
    if !confirm {
        return Err(Error::ConfirmationRequired(format!(
            "hard delete of {} memories removes them for ever (only the audit events stay); pass confirm to proceed",
            ids.len()
        )));
    }
    let reason = &crate::ops::validate::guard_label(&settings, "reason", "deleted for ever by a person")?;
    let events = write_tx(conn, |tx| {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            out.push(hard_delete_tx(tx, id, reason, "manual", actor, now)?);
        }
        crate::store::purge_deleted_index_entries(tx)?;
        Ok(out)
    })?;
    crate::store::checkpoint_truncate(conn)?;
    Ok(events)
}
