//! Procedural memory (docs/lifecycle.md): compare-and-swap updates on `expected_version`, version
//! snapshots, rollback as a new version, and append-only reflection notes.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use crate::storage::db::{params, Connection, OptionalExtension};
use serde::Serialize;

use crate::audit;
use crate::error::{Error, Result};
use crate::model::{self, Memory, ReflectionNote, Tier};
use crate::ops::rows;
use crate::ops::validate::{self, ProcedureFields};
use crate::redact::{Finding, Guard, Policy};
use crate::settings::Settings;
use crate::store::write_tx;
use crate::time::{self, Instant};

pub const MAX_NOTES: usize = 100;
pub const MAX_NOTE_BYTES: usize = 10 * 1024;

/// A change to a procedure; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct ProcedurePatch {
    pub content: Option<String>,
    pub fields: ProcedureFields,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Version {
    pub version: i64,
    pub at: String,
    pub actor: String,
    pub content: String,
    pub task_goal: Option<String>,
    pub steps: Option<serde_json::Value>,
    pub trigger_conditions: Option<serde_json::Value>,
    pub workflow_name: Option<String>,
    pub skill_name: Option<String>,
    pub current: bool,
}

fn state_of(m: &Memory) -> serde_json::Value {
    serde_json::json!({
        "content": m.content, "task_goal": m.task_goal, "steps": m.steps,
        "trigger_conditions": m.trigger_conditions, "workflow_name": m.workflow_name, "skill_name": m.skill_name,
    })
}

/// A procedure's text from its goal and steps: `goal: step; step; ...` (the steps alone
/// without a goal). `None` without steps.
pub fn procedure_text(task_goal: Option<&str>, steps: Option<&serde_json::Value>) -> Option<String> {
    let steps: Vec<String> =
        steps?.as_array()?.iter().map(|s| s.as_str().map_or_else(|| s.to_string(), str::to_string)).collect();
    if steps.is_empty() {
        return None;
    }
    Some(match task_goal.map(str::trim).filter(|g| !g.is_empty()) {
        Some(goal) => format!("{goal}: {}", steps.join("; ")),
        None => steps.join("; "),
    })
}

/// Whether a person wrote the procedure's current text by hand: it is not the text of its
/// goal and steps, and the newest write that changed the text (its `remember`, or an update or
/// rollback whose text before and after differ) was a person's. Such a text stays when the
/// steps change; any other follows them.
fn content_by_person(conn: &Connection, m: &Memory) -> Result<bool> {
    if procedure_text(m.task_goal.as_deref(), m.steps.as_ref()).as_deref() == Some(m.content.as_str()) {
        return Ok(false);
    }
    let mut stmt = conn.prepare_cached(
        "SELECT action, actor, before_json, after_json FROM lethe_action WHERE memory_id = ?1 \
         AND action IN ('remember', 'procedure_update', 'rollback') ORDER BY id DESC",
    )?;
    let rows = stmt.query_map([&m.id], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Option<String>>(2)?,
            r.get::<_, Option<String>>(3)?,
        ))
    })?;
    let content_of = |raw: &Option<String>| {
        raw.as_deref()
            .and_then(|j| serde_json::from_str::<serde_json::Value>(j).ok())
            .and_then(|v| v.get("content").cloned())
    };
    for row in rows {
        let (action, actor, before, after) = row?;
        if action == "remember" || content_of(&before) != content_of(&after) {
            return Ok(crate::actor::is_person(&actor));
        }
    }
    Ok(false)
}

fn last_writer(conn: &Connection, id: &str) -> Result<(String, String)> {
    Ok(conn
        .query_row(
            "SELECT actor, created_at FROM lethe_action WHERE memory_id = ?1 AND action IN ('remember', 'procedure_update', 'rollback') ORDER BY id DESC LIMIT 1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?
        .unwrap_or_else(|| ("unknown".into(), String::new())))
}

/// Applies `patch` only if the stored version is `expected_version` (NULL counts as 1).
/// The previous state is kept as a snapshot; the new version is `expected_version + 1`.
pub fn update(
    conn: &mut Connection,
    id: &str,
    expected_version: i64,
    patch: &ProcedurePatch,
    actor: &str,
    now: Instant,
) -> Result<Memory> {
    update_guarded(conn, id, expected_version, patch, actor, now).map(|(m, _)| m)
}

/// [`update`], answering also what the secrets and personal-data guard did to the patch.
pub fn update_guarded(
    conn: &mut Connection,
    id: &str,
    expected_version: i64,
    patch: &ProcedurePatch,
    actor: &str,
    now: Instant,
) -> Result<(Memory, validate::Redactions)> {
    model::validate_actor(actor)?;
    let settings = Settings::load(conn)?;
    let mut g = Guard::new(Policy::of(&settings));
    let patch = &ProcedurePatch {
        content: g.opt("content", &patch.content)?,
        fields: validate::guard_procedure(&mut g, &patch.fields)?,
    };
    let redactions = validate::Redactions::of(&g);
    patch.fields.validate()?;
    if let Some(c) = &patch.content {
        validate::validate_content(c, &settings)?;
    }
    write_tx(conn, |tx| {
        let m = rows::get(tx, id)?;
        if m.tier != Tier::Procedural {
            return Err(Error::invalid(format!("memory {id} is {} , not procedural", m.tier)));
        }
        if m.is_deleted {
            return Err(Error::invalid(format!("memory {id} is in quarantine")));
        }
        if m.version != expected_version {
            return Err(Error::Conflict { id: id.to_string(), expected: expected_version, current: m.version });
        }
        // A change of goal or steps without a new text: the text follows the new version, unless a
        // person wrote it by hand (then it is theirs to change).
        let f = &patch.fields;
        let derived = match &patch.content {
            None if (f.steps.is_some() || f.task_goal.is_some()) && !content_by_person(tx, &m)? => {
                procedure_text(f.task_goal.as_deref().or(m.task_goal.as_deref()), f.steps.as_ref().or(m.steps.as_ref()))
                    .filter(|t| *t != m.content)
            }
            _ => None,
        };
        if let Some(t) = &derived {
            validate::validate_content(t, &settings)?;
        }
        let content = patch.content.as_ref().or(derived.as_ref());
        if !tx.is_postgres() {
            // The team store's function keeps the version itself, read from the row.
            let (prev_actor, prev_at) = last_writer(tx, id)?;
            tx.execute(
                "INSERT OR IGNORE INTO lethe_procedure_version (memory_id, version, snapshot_json, actor, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, m.version, state_of(&m).to_string(), prev_actor, if prev_at.is_empty() { m.created_at.clone() } else { prev_at }],
            )?;
        }
        let json = |v: &Option<serde_json::Value>| v.as_ref().map(|v| v.to_string());
        // The version condition again in the UPDATE makes the swap atomic even if another
        // writer slipped in (it cannot inside an IMMEDIATE transaction, but it costs nothing).
        let n = if tx.is_postgres() {
            crate::ops::rows::server_write(
                tx,
                // It writes the `procedure_update` action too, its states read from the row.
                "SELECT lethe_memory_procedure(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    id,
                    expected_version,
                    content,
                    f.task_goal,
                    json(&f.steps),
                    json(&f.trigger_conditions),
                    f.workflow_name,
                    f.skill_name,
                    actor,
                    crate::actor::via_of(actor),
                    time::format(now)
                ],
            )? as usize
        } else {
            tx.execute(
            "UPDATE memory_item SET content = COALESCE(?3, content), task_goal = COALESCE(?4, task_goal), steps = COALESCE(?5, steps), \
             trigger_conditions = COALESCE(?6, trigger_conditions), workflow_name = COALESCE(?7, workflow_name), \
             skill_name = COALESCE(?8, skill_name), version = ?2 + 1, edit_count = COALESCE(edit_count, 0) + 1, last_accessed = ?9 \
             WHERE id = ?1 AND COALESCE(version, 1) = ?2",
            params![id, expected_version, content, f.task_goal, json(&f.steps), json(&f.trigger_conditions), f.workflow_name, f.skill_name, time::format(now)],
        )?
        };
        if n == 0 {
            return Err(Error::Conflict {
                id: id.to_string(),
                expected: expected_version,
                current: rows::get(tx, id)?.version,
            });
        }
        if let Some(c) = content {
            crate::dedup::store_signature(tx, id, c)?;
            crate::semantic::refresh(tx, id, c)?;
        }
        let after = rows::get(tx, id)?;
        if !tx.is_postgres() {
            audit::record_action(
                tx,
                Some(id),
                "procedure_update",
                actor,
                Some(&state_of(&m)),
                Some(&state_of(&after)),
                now,
            )?;
        }
        if !redactions.pii_tags.is_empty() {
            let mut tags = after.tags.clone();
            for t in &redactions.pii_tags {
                if !tags.contains(t) {
                    tags.push(t.clone());
                }
            }
            validate::validate_tags(&tags)?;
            crate::ops::rows::set_tags(tx, id, &tags)?;
            return Ok((rows::get(tx, id)?, redactions.clone()));
        }
        Ok((after, redactions.clone()))
    })
}

/// Every version oldest first, the current state last.
/// Every active procedure, as stored, ordered by workflow, skill and age: what a list of
/// procedures shows and searches. No score is computed (a procedure's detail has it), so
/// 10,000 procedures are one scan.
pub fn list(conn: &Connection) -> Result<Vec<Memory>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {} FROM memory_item WHERE type = 'procedural' AND COALESCE(is_deleted, 0) = 0 \
         ORDER BY workflow_name, skill_name, created_at",
        model::MEMORY_COLUMNS
    ))?;
    let rows = stmt.query_map([], Memory::from_row)?;
    rows.collect()
}

/// What a person asked to see of the procedures.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProcedureQuery {
    /// Every word must occur (case-insensitive) in the goal, a step, the names, the text or the id.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub search: Option<String>,
    #[cfg_attr(feature = "ts", ts(optional))]
    pub offset: Option<usize>,
    /// How many procedures from `offset` (default 100).
    #[cfg_attr(feature = "ts", ts(optional))]
    pub limit: Option<usize>,
}

/// A workflow (or, without one, a skill) and how many matching procedures it holds; `name` is
/// none for the procedures that have neither.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ProcedureGroup {
    pub name: Option<String>,
    pub count: usize,
}

/// A page of the active procedures, grouped: the matching procedures are numbered in group
/// order (`groups`, by name, the unnamed group last), so a list can place every row and every
/// group heading before it has read them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ProcedurePage {
    pub total: usize,
    pub matching: usize,
    pub groups: Vec<ProcedureGroup>,
    pub offset: usize,
    /// The matching procedures from `offset`, whole.
    pub items: Vec<Memory>,
}

/// The procedures `q` asks for. One statement reads the searchable fields of every active
/// procedure (not its notes or vectors); only the page's procedures are read whole.
pub fn page(conn: &Connection, q: &ProcedureQuery) -> Result<ProcedurePage> {
    let words: Vec<String> =
        q.search.as_deref().unwrap_or("").to_lowercase().split_whitespace().map(str::to_string).collect();
    let mut stmt = conn.prepare(
        "SELECT id, task_goal, steps, workflow_name, skill_name, content FROM memory_item \
         WHERE type = 'procedural' AND COALESCE(is_deleted, 0) = 0 \
         ORDER BY created_at, rowid",
    )?;
    type Row = (String, Option<String>, Option<String>, Option<String>, Option<String>, Option<String>);
    let rows: Vec<Row> = stmt
        .query_map([], |r| {
            let content = if words.is_empty() { None } else { r.get(5)? };
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, content))
        })?
        .collect::<std::result::Result<_, _>>()?;
    let total = rows.len();
    let group_of = |w: &Option<String>, s: &Option<String>| -> Option<String> {
        w.as_deref().filter(|n| !n.is_empty()).or(s.as_deref().filter(|n| !n.is_empty())).map(str::to_string)
    };
    let mut kept: Vec<(Option<String>, String)> = Vec::new();
    for (id, goal, steps, workflow, skill, content) in rows {
        if !words.is_empty() {
            let steps: Vec<String> = steps
                .as_deref()
                .and_then(|s| serde_json::from_str::<Vec<serde_json::Value>>(s).ok())
                .unwrap_or_default()
                .into_iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                .collect();
            let hay = [
                goal.as_deref().unwrap_or(""),
                &steps.join("\n"),
                workflow.as_deref().unwrap_or(""),
                skill.as_deref().unwrap_or(""),
                content.as_deref().unwrap_or(""),
                &id,
            ]
            .join("\n")
            .to_lowercase();
            if !words.iter().all(|w| hay.contains(w.as_str())) {
                continue;
            }
        }
        kept.push((group_of(&workflow, &skill), id));
    }
    // Groups by name, case-insensitively, the unnamed last; a stable sort keeps the
    // statement's order inside a group.
    kept.sort_by(|(a, _), (b, _)| match (a, b) {
        (Some(a), Some(b)) => a.to_lowercase().cmp(&b.to_lowercase()).then_with(|| a.cmp(b)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let mut groups: Vec<ProcedureGroup> = Vec::new();
    for (name, _) in &kept {
        match groups.last_mut() {
            Some(g) if &g.name == name => g.count += 1,
            _ => groups.push(ProcedureGroup { name: name.clone(), count: 1 }),
        }
    }
    let matching = kept.len();
    let offset = q.offset.unwrap_or(0).min(matching);
    let items = kept
        .iter()
        .skip(offset)
        .take(q.limit.unwrap_or(100))
        .map(|(_, id)| rows::get(conn, id))
        .collect::<Result<Vec<_>>>()?;
    Ok(ProcedurePage { total, matching, groups, offset, items })
}

pub fn history(conn: &Connection, id: &str) -> Result<Vec<Version>> {
    let m = rows::get(conn, id)?;
    let mut stmt = conn.prepare(
        "SELECT version, snapshot_json, actor, created_at FROM lethe_procedure_version WHERE memory_id = ?1 AND version < ?2 ORDER BY version",
    )?;
    let rows: Vec<(i64, String, String, String)> = stmt
        .query_map(params![id, m.version], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<std::result::Result<_, _>>()?;
    let mut out = Vec::new();
    for (version, snap, actor, at) in rows {
        let s: serde_json::Value = serde_json::from_str(&snap)?;
        let text = |k: &str| s.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let val = |k: &str| s.get(k).cloned().filter(|v| !v.is_null());
        out.push(Version {
            version,
            at,
            actor,
            content: text("content").unwrap_or_default(),
            task_goal: text("task_goal"),
            steps: val("steps"),
            trigger_conditions: val("trigger_conditions"),
            workflow_name: text("workflow_name"),
            skill_name: text("skill_name"),
            current: false,
        });
    }
    let (actor, at) = last_writer(conn, id)?;
    out.push(Version {
        version: m.version,
        at: if at.is_empty() { m.created_at.clone() } else { at },
        actor,
        content: m.content,
        task_goal: m.task_goal,
        steps: m.steps,
        trigger_conditions: m.trigger_conditions,
        workflow_name: m.workflow_name,
        skill_name: m.skill_name,
        current: true,
    });
    Ok(out)
}

/// Makes a new version whose state is that of `version` (history is never rewritten).
pub fn rollback(
    conn: &mut Connection,
    id: &str,
    version: i64,
    expected_version: i64,
    actor: &str,
    now: Instant,
) -> Result<Memory> {
    let h = history(conn, id)?;
    let v =
        h.iter().find(|v| v.version == version).ok_or_else(|| Error::NotFound(format!("version {version} of {id}")))?;
    let patch = ProcedurePatch {
        content: Some(v.content.clone()),
        fields: ProcedureFields {
            task_goal: v.task_goal.clone(),
            steps: v.steps.clone(),
            trigger_conditions: v.trigger_conditions.clone(),
            workflow_name: v.workflow_name.clone(),
            skill_name: v.skill_name.clone(),
        },
    };
    update(conn, id, expected_version, &patch, actor, now)
}

/// Validates a note given as JSON: known keys only, a known failure type, ≤ 10 KB.
pub fn parse_note(raw: &serde_json::Value) -> Result<ReflectionNote> {
    let text = raw.to_string();
    if text.len() > MAX_NOTE_BYTES {
        return Err(Error::invalid(format!("reflection note is {} bytes, more than {MAX_NOTE_BYTES}", text.len())));
    }
    let note: ReflectionNote =
        serde_json::from_value(raw.clone()).map_err(|e| Error::invalid(format!("bad reflection note: {e}")))?;
    if note.failure_description.trim().is_empty() {
        return Err(Error::invalid("failure_description must not be empty"));
    }
    if let Some(t) = &note.timestamp {
        time::parse(t)?;
    }
    Ok(note)
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReflectOutcome {
    pub memory_id: String,
    pub notes: usize,
    pub dropped: usize,
    pub version: i64,
    /// Spans of the note replaced by `[REDACTED:<kind>]` (never the values).
    pub redacted: Vec<Finding>,
}

/// Appends a note (never rewrites earlier ones); beyond 100 the oldest is dropped and the
/// drop audited.
pub fn reflect(
    conn: &mut Connection,
    id: &str,
    note: &serde_json::Value,
    expected_version: Option<i64>,
    actor: &str,
    now: Instant,
) -> Result<ReflectOutcome> {
    model::validate_actor(actor)?;
    // The note's text goes through the guard before it is parsed, so that neither the row,
    // the full-text index, the audit row nor an error message sees an original secret.
    let settings = Settings::load(conn)?;
    let mut g = Guard::new(Policy::of(&settings));
    let guarded = match note {
        serde_json::Value::Object(o) => {
            let mut out = o.clone();
            for k in ["failure_description", "lessons_learned", "suggested_improvements"] {
                if let Some(serde_json::Value::String(t)) = o.get(k) {
                    out.insert(k.to_string(), serde_json::Value::String(g.text(k, t)?));
                }
            }
            serde_json::Value::Object(out)
        }
        other => other.clone(),
    };
    let redacted: Vec<Finding> = g.findings.iter().filter(|f| f.action == "redacted").cloned().collect();
    let pii_tags: Vec<String> = g.pii_kinds.iter().map(|k| format!("pii:{k}")).collect();
    let mut note = parse_note(&guarded)?;
    if note.timestamp.is_none() {
        note.timestamp = Some(time::format(now));
    }
    note.actor = Some(actor.to_string());
    write_tx(conn, |tx| {
        let m = rows::get(tx, id)?;
        if m.tier != Tier::Procedural {
            return Err(Error::invalid(format!(
                "memory {id} is not procedural; reflection notes belong to procedures"
            )));
        }
        if let Some(v) = expected_version {
            if v != m.version {
                return Err(Error::Conflict { id: id.to_string(), expected: v, current: m.version });
            }
        }
        let mut notes: Vec<serde_json::Value> = match &m.reflection_notes {
            Some(serde_json::Value::Array(a)) => a.clone(),
            Some(other) => vec![other.clone()],
            None => Vec::new(),
        };
        notes.push(serde_json::to_value(&note)?);
        let mut dropped = 0;
        while notes.len() > MAX_NOTES {
            let old = notes.remove(0);
            dropped += 1;
            audit::record_action(tx, Some(id), "reflection_dropped", "policy", Some(&note_facts(&old)), None, now)?;
        }
        let notes_json = serde_json::Value::Array(notes.clone()).to_string();
        if tx.is_postgres() {
            crate::ops::rows::server_write(tx, "SELECT lethe_memory_reflection(?1, ?2)", params![id, notes_json])?;
        } else {
            tx.execute("UPDATE memory_item SET reflection_notes = ?2 WHERE id = ?1", params![id, notes_json])?;
        }
        if !pii_tags.is_empty() {
            let mut tags = m.tags.clone();
            for t in &pii_tags {
                if !tags.contains(t) {
                    tags.push(t.clone());
                }
            }
            validate::validate_tags(&tags)?;
            crate::ops::rows::set_tags(tx, id, &tags)?;
        }
        // The note itself is in the memory; the audit keeps its hash and length, not a second
        // copy that deleting the memory would have to find.
        audit::record_action(
            tx,
            Some(id),
            "reflect",
            actor,
            None,
            Some(&note_facts(&serde_json::to_value(&note)?)),
            now,
        )?;
        Ok(ReflectOutcome {
            memory_id: id.to_string(),
            notes: notes.len(),
            dropped,
            version: m.version,
            redacted: redacted.clone(),
        })
    })
}

/// What the audit keeps of a reflection note: the sha256 and byte length of its JSON.
fn note_facts(note: &serde_json::Value) -> serde_json::Value {
    let text = note.to_string();
    serde_json::json!({ "note_sha256": audit::sha256_hex(&text), "note_bytes": text.len() })
}

/// The notes oldest first.
pub fn notes(conn: &Connection, id: &str) -> Result<Vec<serde_json::Value>> {
    let m = rows::get(conn, id)?;
    Ok(match m.reflection_notes {
        Some(serde_json::Value::Array(a)) => a,
        Some(other) => vec![other],
        None => Vec::new(),
    })
}

/// What writing a new version of a procedure answers (`remember` with `memory_id` and
/// `expected_version`, `rollback`): the memory, that it was stored, and its new version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Stored {
    pub id: String,
    /// Always true: a version that is not written is an error, not an answer.
    pub stored: bool,
    pub version: i64,
}

impl Stored {
    fn of(m: &Memory) -> Stored {
        Stored { id: m.id.clone(), stored: true, version: m.version }
    }
}

/// [`Stored`] for a patch, with what the secrets and personal-data guard did to it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Updated {
    #[serde(flatten)]
    pub stored: Stored,
    pub redacted: Vec<Finding>,
    pub pii_tags: Vec<String>,
}

/// [`update_guarded`] as the CLI and MCP answer it.
pub fn update_answer(
    conn: &mut Connection,
    id: &str,
    expected_version: i64,
    patch: &ProcedurePatch,
    actor: &str,
    now: Instant,
) -> Result<Updated> {
    let (m, r) = update_guarded(conn, id, expected_version, patch, actor, now)?;
    Ok(Updated { stored: Stored::of(&m), redacted: r.redacted, pii_tags: r.pii_tags })
}

/// [`rollback`] as the CLI answers it.
pub fn rollback_answer(
    conn: &mut Connection,
    id: &str,
    version: i64,
    expected_version: i64,
    actor: &str,
    now: Instant,
) -> Result<Stored> {
    rollback(conn, id, version, expected_version, actor, now).map(|m| Stored::of(&m))
}
