//! The lifecycle of a memory (DESIGN §4): remember with validation and the write-time
//! filter, read, list, edit, importance, pin, soft delete, restore, hard delete, cite, view.
//! Every mutation commits together with its audit row.

use rusqlite::{params, Connection, OptionalExtension, Transaction};
use serde::Serialize;

use crate::audit::{self, EventSpec, ForgettingEvent};
use crate::dedup;
use crate::error::{Error, Result};
use crate::model::{self, Memory, Tier, MEMORY_COLUMNS};
use crate::redact::{Finding, Guard, Policy};
use crate::settings::Settings;
use crate::store::write_tx;
use crate::time::{self, Instant};

/// Procedural fields (DESIGN §5); all optional, validated when present.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcedureFields {
    pub task_goal: Option<String>,
    pub steps: Option<serde_json::Value>,
    pub trigger_conditions: Option<serde_json::Value>,
    pub workflow_name: Option<String>,
    pub skill_name: Option<String>,
}

impl ProcedureFields {
    pub fn is_empty(&self) -> bool {
        self == &ProcedureFields::default()
    }

    pub fn validate(&self) -> Result<()> {
        if let Some(steps) = &self.steps {
            let arr = steps.as_array().ok_or_else(|| Error::invalid("steps must be a JSON array of strings"))?;
            if arr.is_empty() {
                return Err(Error::invalid("steps must not be empty"));
            }
            if arr.len() > 200 {
                return Err(Error::invalid("steps: at most 200 steps"));
            }
            for (i, s) in arr.iter().enumerate() {
                let s = s.as_str().ok_or_else(|| Error::invalid(format!("steps[{i}] must be a string")))?;
                if s.trim().is_empty() || s.len() > 10_000 {
                    return Err(Error::invalid(format!("steps[{i}] must be 1–10000 bytes of text")));
                }
            }
        }
        if let Some(tc) = &self.trigger_conditions {
            if !tc.is_object() {
                return Err(Error::invalid("trigger_conditions must be a JSON object"));
            }
            if tc.to_string().len() > 64 * 1024 {
                return Err(Error::invalid("trigger_conditions: at most 64 KiB"));
            }
            check_depth(tc, 0)?;
        }
        for (name, v) in
            [("task_goal", &self.task_goal), ("workflow_name", &self.workflow_name), ("skill_name", &self.skill_name)]
        {
            if let Some(v) = v {
                if v.trim().is_empty() || v.len() > 10_000 {
                    return Err(Error::invalid(format!("{name} must be 1–10000 bytes of text")));
                }
            }
        }
        Ok(())
    }
}

fn check_depth(v: &serde_json::Value, depth: usize) -> Result<()> {
    if depth > 32 {
        return Err(Error::invalid("JSON nested deeper than 32 levels"));
    }
    match v {
        serde_json::Value::Array(a) => a.iter().try_for_each(|x| check_depth(x, depth + 1)),
        serde_json::Value::Object(o) => o.values().try_for_each(|x| check_depth(x, depth + 1)),
        _ => Ok(()),
    }
}

/// What an agent or a person asks to remember.
#[derive(Debug, Clone)]
pub struct NewMemory {
    pub tier: Tier,
    pub content: String,
    pub importance: Option<f64>,
    pub tags: Vec<String>,
    pub source: Option<String>,
    pub pinned: bool,
    pub privacy_scope: Option<String>,
    pub owner_id: Option<String>,
    pub session_id: Option<String>,
    pub project_id: Option<String>,
    pub created_at: Option<Instant>,
    pub procedure: ProcedureFields,
    pub supersedes: Vec<String>,
}

impl NewMemory {
    pub fn new(tier: Tier, content: impl Into<String>) -> Self {
        NewMemory {
            tier,
            content: content.into(),
            importance: None,
            tags: Vec::new(),
            source: None,
            pinned: false,
            privacy_scope: None,
            owner_id: None,
            session_id: None,
            project_id: None,
            created_at: None,
            procedure: ProcedureFields::default(),
            supersedes: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum RememberOutcome {
    /// `similar`: the closest active memories that were already stored (similarity ≥
    /// [`SIMILAR_ON_WRITE`]), so that an agent can supersede instead of piling up near-copies.
    Stored {
        id: String,
        stored: bool,
        version: i64,
        similar: Vec<crate::semantic::Similar>,
        /// Spans replaced by `[REDACTED:<kind>]` (kind, field, byte offsets; never the value).
        redacted: Vec<Finding>,
        /// `pii:<kind>` tags the `pii = tag` setting added.
        pii_tags: Vec<String>,
    },
    Skipped {
        stored: bool,
        reason: String,
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

pub fn validate_content(content: &str, s: &Settings) -> Result<()> {
    if content.trim().is_empty() {
        return Err(Error::invalid("content is empty"));
    }
    if content.len() > s.max_content_bytes {
        return Err(Error::invalid(format!(
            "content is {} bytes, more than the limit of {} bytes",
            content.len(),
            s.max_content_bytes
        )));
    }
    if content.contains('\0') {
        return Err(Error::invalid("content contains a NUL character"));
    }
    Ok(())
}

pub fn validate_importance(v: f64) -> Result<()> {
    if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
        return Err(Error::invalid(format!("importance must be a number in [0, 1], got {v}")));
    }
    Ok(())
}

fn validate_label(name: &str, v: &Option<String>) -> Result<()> {
    if let Some(v) = v {
        if v.is_empty() || v.len() > 200 || v.chars().any(char::is_control) {
            return Err(Error::invalid(format!("{name} must be 1–200 printable characters")));
        }
    }
    Ok(())
}

pub fn validate_tags(tags: &[String]) -> Result<()> {
    if tags.len() > 64 {
        return Err(Error::invalid("at most 64 tags"));
    }
    for t in tags {
        if t.trim().is_empty() || t.len() > 100 || t.chars().any(char::is_control) {
            return Err(Error::invalid(format!("tag {t:?} must be 1–100 printable characters")));
        }
    }
    Ok(())
}

pub(crate) fn validate_new(m: &NewMemory, s: &Settings, now: Instant) -> Result<()> {
    validate_content(&m.content, s)?;
    if let Some(i) = m.importance {
        validate_importance(i)?;
    }
    validate_tags(&m.tags)?;
    validate_label("source", &m.source)?;
    validate_label("owner_id", &m.owner_id)?;
    validate_label("session_id", &m.session_id)?;
    validate_label("project_id", &m.project_id)?;
    if let Some(p) = &m.privacy_scope {
        if !["private", "team", "public"].contains(&p.as_str()) {
            return Err(Error::invalid("privacy_scope must be private, team or public"));
        }
    }
    if let Some(c) = m.created_at {
        // Lethe stores ISO-8601 with a four-digit year; an earlier instant would be written in
        // a form no reader parses back, and the memory would fail every later read.
        if !(0..=9999).contains(&chrono::Datelike::year(&c)) {
            return Err(Error::invalid("created_at must lie between the years 0000 and 9999"));
        }
        // A minute of slack for clocks of two programs; beyond it a future date would keep
        // a memory young for ever.
        if (c - now).num_seconds() > FUTURE_SLACK_SECS {
            return Err(Error::invalid("created_at lies in the future; a memory can only be dated now or earlier"));
        }
    }
    if !m.procedure.is_empty() && m.tier != Tier::Procedural {
        return Err(Error::invalid(
            "task_goal, steps, trigger_conditions, workflow_name and skill_name are for procedural memories",
        ));
    }
    m.procedure.validate()
}

pub(crate) fn is_trivial(content: &str, s: &Settings) -> bool {
    let n = dedup::normalized(content);
    s.trivial_phrases.iter().any(|p| dedup::normalized(p) == n)
}

/// How similar an existing memory must be to be named in `remember`'s answer.
pub const SIMILAR_ON_WRITE: f64 = 0.5;

/// What the secrets and personal-data guard did to one write (never the values): the spans
/// replaced by `[REDACTED:<kind>]` and the `pii:<kind>` tags added.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Redactions {
    pub redacted: Vec<Finding>,
    pub pii_tags: Vec<String>,
}

impl Redactions {
    pub fn of(g: &Guard) -> Redactions {
        Redactions {
            redacted: g.findings.iter().filter(|f| f.action == "redacted").cloned().collect(),
            pii_tags: g.pii_kinds.iter().map(|k| format!("pii:{k}")).collect(),
        }
    }
}

/// The memory as it may be written: every text field through the guard of the settings'
/// `secrets` and `pii` policy (issue #17). Runs before validation, the duplicate check and
/// the embedding, so neither an error message nor a row nor a vector sees an original secret.
pub fn guard_new(m: &NewMemory, s: &Settings) -> Result<(NewMemory, Redactions)> {
    let mut g = Guard::new(Policy::of(s));
    let mut out = m.clone();
    out.content = g.text("content", &m.content)?;
    out.source = g.opt("source", &m.source)?;
    out.procedure = guard_procedure(&mut g, &m.procedure)?;
    let tags = g.tags(&m.tags)?;
    out.tags = g.with_pii_tags(tags);
    Ok((out, Redactions::of(&g)))
}

pub(crate) fn guard_procedure(g: &mut Guard, p: &ProcedureFields) -> Result<ProcedureFields> {
    Ok(ProcedureFields {
        task_goal: g.opt("task_goal", &p.task_goal)?,
        steps: g.opt_json("steps", &p.steps)?,
        trigger_conditions: g.opt_json("trigger_conditions", &p.trigger_conditions)?,
        workflow_name: g.opt("workflow_name", &p.workflow_name)?,
        skill_name: g.opt("skill_name", &p.skill_name)?,
    })
}

/// Stores a memory, or explains why it was not stored (trivial, exact duplicate).
/// What the audit keeps of a new memory; a memory dated earlier than its writing says so,
/// with both dates, so a back-dated memory is never mistaken for an old one (issue #23).
fn remember_audit(m: &NewMemory, created: &str, now: Instant) -> serde_json::Value {
    let mut v = serde_json::json!({"type": m.tier, "preview": model::preview(&m.content, 120)});
    if m.created_at.is_some_and(|c| (now - c).num_seconds() > FUTURE_SLACK_SECS) {
        v["backdated"] = serde_json::json!({"created_at": created, "recorded_at": time::format(now)});
    }
    v
}

/// How far a caller's `created_at` may lie ahead of the clock (clock differences between
/// programs); anything later is refused.
pub const FUTURE_SLACK_SECS: i64 = 60;

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

/// The steps of one `remember` call, in the order they run (issue #19: each is measured by
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
    /// Patching the process's vector cache and the write-time `similar` scan.
    Similar,
}

impl Step {
    pub const ALL: [Step; 13] = [
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
            Step::Similar => "similar",
        }
    }
}

/// Time spent per [`Step`], summed over the calls given to [`remember_timed`].
#[derive(Debug, Clone, Default)]
pub struct StepTimes {
    pub total: [std::time::Duration; 13],
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
    tx.prepare_cached(
        "INSERT INTO memory_item (id, type, content, importance, privacy_scope, created_at, last_accessed, pinned, tags, source, \
         view_count, cite_count, edit_count, task_goal, steps, reflection_notes, workflow_name, skill_name, trigger_conditions, \
         version, owner_id, session_id, project_id, is_deleted, deleted_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, ?7, ?8, ?9, 0, 0, 0, ?10, ?11, NULL, ?12, ?13, ?14, 1, ?15, ?16, ?17, 0, NULL)",
    )?
    .execute(params![
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
    ])?;
    let rowid = tx.last_insert_rowid();
    clock.lap(Step::Row);
    tx.prepare_cached("INSERT INTO lethe_signature (memory_id, content_hash, bands) VALUES (?1, ?2, ?3)")?
        .execute(params![id, p.hash, p.bands])?;
    if let (Some(e), Some(v)) = (crate::embed::shared(), &p.vector) {
        crate::semantic::store_vector(tx, e.fingerprint(), &id, v)?;
    }
    clock.lap(Step::Derived);
    audit::record_action(tx, Some(&id), "remember", actor, None, Some(&remember_audit(m, &created, now)), now)?;
    for old in &m.supersedes {
        link_supersede_tx(tx, old, &id, actor, now)?;
    }
    clock.lap(Step::Audit);
    Ok(Ok((id, rowid)))
}

/// The supersede link `old` → `new` and its audit row (the one supersede path: `remember
/// --supersedes` and the duplicates review both write it). The caller checked both memories.
pub(crate) fn link_supersede_tx(tx: &Transaction, old: &str, new: &str, actor: &str, now: Instant) -> Result<()> {
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
    model::validate_actor(actor)?;
    let settings = Settings::load(conn)?;
    clock.lap(Step::Settings);
    let p = prepare_timed(m, &settings, now, clock)?;
    if p.trivial {
        return Ok(RememberOutcome::Skipped {
            stored: false,
            reason: "trivial: the content is a filler phrase with nothing to remember".into(),
            existing_id: None,
        });
    }
    let m = &p.memory;
    let redactions = &p.redactions;
    let embedder = crate::embed::shared();
    let vector = &p.vector;
    let path = conn.path().unwrap_or("").to_string();
    // (cache key before, cache key after) of the vector this call writes, and its memory's rowid.
    type Key = (i64, i64);
    let mut written: Option<(Key, Key)> = None;
    let mut new_rowid = 0i64;
    // write_tx's retry on BUSY, spelled out so that BEGIN and COMMIT are timed on their own.
    crate::store::with_retry(|| {
        written = None;
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        clock.lap(Step::Begin);
        let before = if vector.is_some() { Some(crate::semantic::cache_key(&tx)?) } else { None };
        clock.lap(Step::CacheKeys);
        let (id, rowid) = match insert_tx(&tx, &p, actor, now, clock)? {
            Ok(x) => x,
            Err((reason, existing_id)) => {
                tx.commit()?;
                return Ok(Err(RememberOutcome::Skipped { stored: false, reason, existing_id }));
            }
        };
        new_rowid = rowid;
        if let Some(before) = before {
            written = Some((before, crate::semantic::cache_key(&tx)?));
        }
        clock.lap(Step::CacheKeys);
        tx.commit()?;
        clock.lap(Step::Commit);
        Ok(Ok(id))
    })
    .and_then(|stored| {
        let id = match stored {
            Ok(id) => id,
            Err(skipped) => return Ok(skipped),
        };
        if let (Some(e), Some(v), Some((before, after))) = (embedder, vector, written) {
            let w = crate::semantic::Written {
                path: &path,
                before,
                after,
                rowid: new_rowid,
                tier: m.tier,
                pinned: m.pinned,
                vector: v,
            };
            crate::semantic::patch_cache(e, w);
        }
        // Read after the commit (the write lock is not held for the scan); the new memory
        // itself is left out.
        let similar = crate::semantic::similar_on_write(
            conn,
            &m.content,
            vector.as_ref(),
            Some((&id, new_rowid)),
            5,
            SIMILAR_ON_WRITE,
        )?;
        clock.lap(Step::Similar);
        Ok(RememberOutcome::Stored {
            id,
            stored: true,
            version: 1,
            similar,
            redacted: redactions.redacted.clone(),
            pii_tags: redactions.pii_tags.clone(),
        })
    })
}

/// Reads one memory (does not count as usage).
pub fn get(conn: &Connection, id: &str) -> Result<Memory> {
    conn.prepare_cached(&format!("SELECT {MEMORY_COLUMNS} FROM memory_item WHERE id = ?1"))?
        .query_row([id], Memory::from_row)
        .optional()?
        .ok_or_else(|| Error::NotFound(format!("memory {id}")))
}

pub(crate) fn get_tx(tx: &Transaction, id: &str) -> Result<Memory> {
    get(tx, id)
}

fn snapshot(m: &Memory) -> serde_json::Value {
    serde_json::json!({
        "pinned": m.pinned, "importance": m.importance, "is_deleted": m.is_deleted,
        "deleted_at": m.deleted_at, "content_preview": model::preview(&m.content, 120), "edit_count": m.edit_count,
        "version": m.version,
    })
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
        audit::record_action(tx, Some(id), action, actor, Some(&snapshot(&before)), Some(&snapshot(&after)), now)?;
        Ok(after)
    })
}

pub fn pin(conn: &mut Connection, id: &str, actor: &str, now: Instant) -> Result<Memory> {
    mutate(conn, id, "pin", actor, now, |tx, _| {
        tx.execute("UPDATE memory_item SET pinned = 1 WHERE id = ?1", [id])?;
        Ok(())
    })
}

pub fn unpin(conn: &mut Connection, id: &str, actor: &str, now: Instant) -> Result<Memory> {
    mutate(conn, id, "unpin", actor, now, |tx, _| {
        tx.execute("UPDATE memory_item SET pinned = 0 WHERE id = ?1", [id])?;
        Ok(())
    })
}

pub fn set_importance(conn: &mut Connection, id: &str, value: f64, actor: &str, now: Instant) -> Result<Memory> {
    validate_importance(value)?;
    mutate(conn, id, "importance", actor, now, |tx, _| {
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
/// current version, and nothing is written (issue #23). A procedure's edit goes through its
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
        tx.execute(
            "UPDATE memory_item SET content = ?2, edit_count = COALESCE(edit_count, 0) + 1, last_accessed = ?3, \
             version = COALESCE(version, 1) + 1 WHERE id = ?1",
            params![id, content, time::format(now)],
        )?;
        if !redactions.pii_tags.is_empty() {
            let mut tags = get_tx(tx, id)?.tags;
            for t in &redactions.pii_tags {
                if !tags.contains(t) {
                    tags.push(t.clone());
                }
            }
            validate_tags(&tags)?;
            tx.execute("UPDATE memory_item SET tags = ?2 WHERE id = ?1", params![id, serde_json::to_string(&tags)?])?;
        }
        tx.execute(
            "INSERT INTO lethe_signature (memory_id, content_hash, bands) VALUES (?1, ?2, ?3) \
             ON CONFLICT(memory_id) DO UPDATE SET content_hash = excluded.content_hash, bands = excluded.bands",
            params![id, hash, bands],
        )?;
        // The content trigger dropped the old vector; the new one goes in with the edit.
        if let (Some(e), Some(v)) = (embedder, &vector) {
            crate::semantic::store_vector(tx, e.fingerprint(), id, v)?;
        }
        Ok(())
    })
    .map(|m| (m, redactions))
}

/// An agent reports that it used the memory (a cite, DESIGN §4 usage).
pub fn cite(conn: &mut Connection, id: &str, actor: &str, now: Instant) -> Result<Memory> {
    mutate(conn, id, "cite", actor, now, |tx, _| {
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

/// Soft delete inside an open transaction: the memory leaves recall at once and is kept in
/// quarantine. Used by people, agents and the policy batch.
#[allow(clippy::too_many_arguments)] // Each argument is a distinct column of the audit event.
pub(crate) fn soft_delete_tx(
    tx: &Transaction,
    id: &str,
    reason: &str,
    policy: &str,
    score: Option<f64>,
    actor: &str,
    settings: &Settings,
    now: Instant,
) -> Result<ForgettingEvent> {
    let n = tx
        .prepare_cached(
            "UPDATE memory_item SET is_deleted = 1, deleted_at = ?2 WHERE id = ?1 AND COALESCE(is_deleted, 0) = 0",
        )?
        .execute(params![id, time::format(now)])?;
    if n == 0 {
        let exists: Option<i64> =
            tx.query_row("SELECT 1 FROM memory_item WHERE id = ?1", [id], |r| r.get(0)).optional()?;
        return Err(match exists {
            None => Error::NotFound(format!("memory {id}")),
            Some(_) => Error::invalid(format!("memory {id} is already in quarantine")),
        });
    }
    tx.prepare_cached("DELETE FROM lethe_review WHERE memory_id = ?1")?.execute([id])?;
    soft_event(tx, id, reason, policy, score, actor, settings, now)
}

/// The audit event of a move to quarantine (the actor goes in the metadata: the table has no
/// actor column).
#[allow(clippy::too_many_arguments)]
pub(crate) fn soft_event(
    tx: &Transaction,
    id: &str,
    reason: &str,
    policy: &str,
    score: Option<f64>,
    actor: &str,
    settings: &Settings,
    now: Instant,
) -> Result<ForgettingEvent> {
    audit::record_event(
        tx,
        EventSpec {
            memory_id: id,
            action: "soft",
            reason: Some(reason),
            policy: Some(policy),
            forget_score: score,
            ttl_days: Some(settings.quarantine_days.round() as i64),
            metadata: Some(serde_json::json!({ "actor": actor })),
        },
        now,
    )
}

/// A person or agent moves a memory to quarantine.
pub fn soft_delete(
    conn: &mut Connection,
    id: &str,
    reason: Option<&str>,
    actor: &str,
    now: Instant,
) -> Result<ForgettingEvent> {
    model::validate_actor(actor)?;
    let settings = Settings::load(conn)?;
    let reason = reason.unwrap_or("deleted by a person");
    if reason.len() > 2000 {
        return Err(Error::invalid("reason: at most 2000 bytes"));
    }
    let score = crate::forgetting::score_one(conn, id, &settings, now).ok().map(|f| f.forget_score);
    let policy = if actor.starts_with("agent:") { "agent" } else { "manual" };
    write_tx(conn, |tx| soft_delete_tx(tx, id, reason, policy, score, actor, &settings, now))
}

/// Brings a memory back from quarantine exactly as it was.
pub fn restore(conn: &mut Connection, id: &str, actor: &str, now: Instant) -> Result<Memory> {
    mutate(conn, id, "restore", actor, now, |tx, before| {
        if !before.is_deleted {
            return Err(Error::invalid(format!("memory {id} is not in quarantine")));
        }
        tx.execute("UPDATE memory_item SET is_deleted = 0, deleted_at = NULL WHERE id = ?1", [id])?;
        Ok(())
    })
}

/// Removes the row and every trace (FTS via trigger, stats, archive, signature, links,
/// versions, vectors, neighbours) and the text of its earlier audit rows; the new `hard`
/// event keeps who, when, why and the content's SHA-256 and length. The caller then drops
/// the deleted entries from the full-text indexes ([`crate::store::purge_deleted_index_entries`])
/// and truncates the WAL ([`crate::store::checkpoint_truncate`]).
pub(crate) fn hard_delete_tx(
    tx: &Transaction,
    id: &str,
    reason: &str,
    policy: &str,
    actor: &str,
    now: Instant,
) -> Result<ForgettingEvent> {
    let m = get_tx(tx, id)?;
    for sql in [
        "DELETE FROM meta_memory_stats WHERE memory_id = ?1",
        "DELETE FROM lethe_archive WHERE memory_id = ?1",
        "DELETE FROM lethe_signature WHERE memory_id = ?1",
        "DELETE FROM lethe_vector WHERE memory_id = ?1",
        "DELETE FROM lethe_supersede WHERE old_id = ?1 OR new_id = ?1",
        "DELETE FROM lethe_dismissed_pair WHERE a_id = ?1 OR b_id = ?1",
        "DELETE FROM lethe_procedure_version WHERE memory_id = ?1",
        "DELETE FROM lethe_review WHERE memory_id = ?1",
        "DELETE FROM lethe_task_log WHERE memory_id = ?1",
        "DELETE FROM lethe_session_rule WHERE memory_id = ?1",
        "DELETE FROM lethe_recall_log_hit WHERE memory_id = ?1",
        "DELETE FROM memory_item WHERE id = ?1",
    ] {
        tx.prepare_cached(sql)?.execute([id])?;
    }
    // The earlier audit rows of this memory lose their text in the same transaction; the
    // new event keeps only facts and the content's hash and length.
    audit::scrub_memory(tx, id)?;
    audit::record_event(
        tx,
        EventSpec {
            memory_id: id,
            action: "hard",
            reason: Some(reason),
            policy: Some(policy),
            forget_score: None,
            ttl_days: None,
            metadata: Some(serde_json::json!({
                "actor": actor,
                "type": m.tier,
                "content_sha256": audit::sha256_hex(&m.content),
                "content_bytes": m.content.len(),
            })),
        },
        now,
    )
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
    crate::actor::require_person(actor, "deleting a memory for ever")?;
    get(conn, id)?;
    if let Some(why) = crate::store::memory_delete_blocked(conn)? {
        return Err(Error::invalid(why));
    }
    if !confirm {
        return Err(Error::ConfirmationRequired(format!(
            "hard delete of {id} removes it for ever (only the audit events stay); pass confirm to proceed"
        )));
    }
    let reason = reason.unwrap_or("deleted for ever by a person");
    let event = write_tx(conn, |tx| {
        let e = hard_delete_tx(tx, id, reason, "manual", actor, now)?;
        crate::store::purge_deleted_index_entries(tx)?;
        Ok(e)
    })?;
    crate::store::checkpoint_truncate(conn)?;
    Ok(event)
}

/// Sort orders of [`list`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename_all = "lowercase"))]
pub enum SortBy {
    #[default]
    Created,
    Importance,
    Score,
}

impl std::str::FromStr for SortBy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "created" => Ok(SortBy::Created),
            "importance" => Ok(SortBy::Importance),
            "score" => Ok(SortBy::Score),
            o => Err(Error::invalid(format!("unknown sort {o:?} (expected score, created or importance)"))),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub tier: Option<Tier>,
    /// Some(true): quarantine only; Some(false) or None: active only.
    pub deleted: Option<bool>,
    pub pinned: Option<bool>,
    pub sort: SortBy,
    pub min_score: Option<f64>,
    pub max_score: Option<f64>,
    pub session: Option<String>,
    pub project: Option<String>,
    /// Some(true): only memories whose text holds a `[REDACTED:` placeholder.
    pub redacted: Option<bool>,
    /// Some(true): only semantic and procedural memories that read like dialogue (issue #21).
    pub needs_extraction: Option<bool>,
    pub limit: usize,
    pub offset: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct MemoryRow {
    pub id: String,
    #[serde(rename = "type")]
    pub tier: Tier,
    pub preview: String,
    pub importance: f64,
    pub pinned: bool,
    pub created_at: String,
    pub last_accessed: Option<String>,
    pub is_deleted: bool,
    pub deleted_at: Option<String>,
    pub forget_score: f64,
    pub would_forget: bool,
    pub session_id: Option<String>,
    pub project_id: Option<String>,
    pub workflow_name: Option<String>,
    pub tags: Vec<String>,
    /// The text holds a `[REDACTED:<kind>]` placeholder (the window's "redacted" badge).
    pub redacted: bool,
    /// A semantic or procedural memory that reads like dialogue (the lint flags it).
    pub needs_extraction: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Page {
    pub total: usize,
    pub items: Vec<MemoryRow>,
}
