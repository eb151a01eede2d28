//! What a write must pass before it reaches the store: the shape of a new memory, its
//! validation, the write-time filter's triviality test, and the secrets and personal-data
//! guard applied to every text field. No database access.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use serde::Serialize;

use crate::dedup;
use crate::error::{Error, Result};
use crate::model::Tier;
use crate::redact::{Finding, Guard, Policy};
use crate::settings::Settings;
use crate::time::Instant;

/// Procedural fields (docs/lifecycle.md); all optional, validated when present.
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
                if s.contains('\0') {
                    return Err(Error::invalid(format!("steps[{i}] contains a NUL character")));
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
                // Text, like a memory's content: a team store's text columns cannot even hold it.
                if v.contains('\0') {
                    return Err(Error::invalid(format!("{name} contains a NUL character")));
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

/// Why a person or an agent deletes a memory: free text, kept in the audit for ever.
pub fn validate_reason(reason: &str) -> Result<()> {
    if reason.len() > 2000 {
        return Err(Error::invalid("reason: at most 2000 bytes"));
    }
    if reason.contains('\0') {
        return Err(Error::invalid("reason contains a NUL character"));
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
/// `secrets` and `pii` policy. Runs before validation, the duplicate check and
/// the embedding, so neither an error message nor a row nor a vector sees an original secret.
pub fn guard_new(m: &NewMemory, s: &Settings) -> Result<(NewMemory, Redactions)> {
    let mut g = Guard::new(Policy::of(s));
    let mut out = m.clone();
    out.content = g.text("content", &m.content)?;
    out.source = g.opt("source", &m.source)?;
    out.session_id = g.opt("session_id", &m.session_id)?;
    out.project_id = g.opt("project_id", &m.project_id)?;
    out.procedure = guard_procedure(&mut g, &m.procedure)?;
    let tags = g.tags(&m.tags)?;
    out.tags = g.with_pii_tags(tags);
    Ok((out, Redactions::of(&g)))
}

/// A label (session, task kind) or a delete reason as it may be written: through the guard of
/// the settings' `secrets` and `pii` policy, like a memory's text.
pub fn guard_label(s: &Settings, field: &str, text: &str) -> Result<String> {
    Guard::new(Policy::of(s)).text(field, text)
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

/// How far a caller's `created_at` may lie ahead of the clock (clock differences between
/// programs); anything later is refused.
pub const FUTURE_SLACK_SECS: i64 = 60;
