//! The domain model: tiers, memories, procedural fields, reflection notes.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
/// A memory's tier: what kind of memory it is, which sets how fast it decays (its half-life)
/// and how the policy treats it (docs/scores.md).
pub enum Tier {
    /// The scratch memory of a task in progress: decays in hours; an ended session's working
    /// memories become a task log.
    Working,
    /// What happened: events, outcomes, conversations.
    Episodic,
    /// How to do something: a workflow with steps, updated by compare-and-swap and reflection
    /// notes.
    Procedural,
    /// What is true: facts, rules, preferences; the slowest to decay.
    Semantic,
}

impl Tier {
    /// Every tier, from the fastest to decay to the slowest.
    pub const ALL: [Tier; 4] = [Tier::Working, Tier::Episodic, Tier::Procedural, Tier::Semantic];

    /// The tier's name as stored and as the CLI and MCP say it.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Working => "working",
            Tier::Episodic => "episodic",
            Tier::Procedural => "procedural",
            Tier::Semantic => "semantic",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Tier {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "working" => Ok(Tier::Working),
            "episodic" => Ok(Tier::Episodic),
            "procedural" => Ok(Tier::Procedural),
            "semantic" => Ok(Tier::Semantic),
            other => Err(Error::invalid(format!(
                "unknown memory type {other:?} (expected working, episodic, procedural or semantic)"
            ))),
        }
    }
}

/// A stored memory: every column of `memory_item` Lethe reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Memory {
    /// `mem_` and a UUID.
    pub id: String,
    /// Its tier (`type` in JSON and in the table).
    #[serde(rename = "type")]
    pub tier: Tier,
    /// The text (redacted of secrets before it was stored).
    pub content: String,
    /// How much it matters, 0-1.
    pub importance: f64,
    /// Who may recall it: `private`, `team` or `public`.
    pub privacy_scope: String,
    /// When it was written (ISO-8601 UTC).
    pub created_at: String,
    /// When it was last read or recalled.
    pub last_accessed: Option<String>,
    /// Pinned memories are never forgotten.
    pub pinned: bool,
    /// Its tags.
    pub tags: Vec<String>,
    /// What wrote it (a tool, an import).
    pub source: Option<String>,
    /// How often it was shown.
    pub view_count: i64,
    /// How often an agent cited it as useful.
    pub cite_count: i64,
    /// How often it was edited.
    pub edit_count: i64,
    /// A procedure's goal.
    pub task_goal: Option<String>,
    /// A procedure's steps (JSON).
    pub steps: Option<serde_json::Value>,
    /// A procedure's reflection notes (JSON), oldest first.
    pub reflection_notes: Option<serde_json::Value>,
    /// A procedure's workflow name.
    pub workflow_name: Option<String>,
    /// A procedure's skill name.
    pub skill_name: Option<String>,
    /// When a procedure applies (JSON).
    pub trigger_conditions: Option<serde_json::Value>,
    /// Its version: compare-and-swap edits name the version they change.
    pub version: i64,
    /// The agent or person it belongs to.
    pub owner_id: Option<String>,
    /// The working session it was written in.
    pub session_id: Option<String>,
    /// The project it belongs to.
    pub project_id: Option<String>,
    /// Soft-deleted (quarantined): restorable until purged.
    pub is_deleted: bool,
    /// When it was soft-deleted.
    pub deleted_at: Option<String>,
}

/// The columns of [`Memory`] in the order `Memory` reads them.
pub const MEMORY_COLUMNS: &str = "id, type, content, importance, privacy_scope, created_at, last_accessed, \
    pinned, tags, source, view_count, cite_count, edit_count, task_goal, steps, reflection_notes, \
    workflow_name, skill_name, trigger_conditions, version, owner_id, session_id, project_id, \
    is_deleted, deleted_at";

fn json_col(raw: Option<String>) -> Option<serde_json::Value> {
    let raw = raw?;
    if raw.trim().is_empty() {
        return None;
    }
    // A malformed value written by another program is kept visible as a string rather than
    // failing the read.
    Some(serde_json::from_str(&raw).unwrap_or(serde_json::Value::String(raw)))
}

/// Parses the tags column: a JSON array of strings, or (leniently) comma-separated text.
pub fn parse_tags(raw: Option<&str>) -> Vec<String> {
    let Some(raw) = raw else { return Vec::new() };
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::Array(items)) => items
            .into_iter()
            .filter_map(|v| match v {
                serde_json::Value::String(s) => Some(s),
                serde_json::Value::Null => None,
                other => Some(other.to_string()),
            })
            .collect(),
        _ => raw.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect(),
    }
}

impl Memory {
    /// Reads a row selected with [`MEMORY_COLUMNS`].
    pub fn from_row(r: &crate::storage::db::Row<'_>) -> crate::error::Result<Memory> {
        let tier_raw: String = r.get(1)?;
        let tier = tier_raw.parse::<Tier>().map_err(|e| crate::Error::column(format!("column type (1): {e}")))?;
        let tags: Option<String> = lenient::text(r, 8)?;
        Ok(Memory {
            id: r.get(0)?,
            tier,
            content: lenient::text(r, 2)?.unwrap_or_default(),
            importance: lenient::real(r, 3)?.unwrap_or(0.5),
            privacy_scope: lenient::text(r, 4)?.unwrap_or_else(|| "private".into()),
            created_at: lenient::text(r, 5)?.unwrap_or_default(),
            last_accessed: lenient::text(r, 6)?,
            pinned: lenient::flag(r, 7)?,
            tags: parse_tags(tags.as_deref()),
            source: lenient::text(r, 9)?,
            view_count: lenient::int(r, 10)?.unwrap_or(0),
            cite_count: lenient::int(r, 11)?.unwrap_or(0),
            edit_count: lenient::int(r, 12)?.unwrap_or(0),
            task_goal: lenient::text(r, 13)?,
            steps: json_col(lenient::text(r, 14)?),
            reflection_notes: json_col(lenient::text(r, 15)?),
            workflow_name: lenient::text(r, 16)?,
            skill_name: lenient::text(r, 17)?,
            trigger_conditions: json_col(lenient::text(r, 18)?),
            // memento leaves version NULL on rows it never versioned: NULL counts as 1.
            version: lenient::int(r, 19)?.unwrap_or(1),
            owner_id: lenient::text(r, 20)?,
            session_id: lenient::text(r, 21)?,
            project_id: lenient::text(r, 22)?,
            is_deleted: lenient::flag(r, 23)?,
            deleted_at: lenient::text(r, 24)?,
        })
    }

    /// The first characters of the content on one line, for tables.
    pub fn preview(&self, max_chars: usize) -> String {
        preview(&self.content, max_chars)
    }
}

/// `content` on one line, cut to `max_chars` characters with an ellipsis.
pub fn preview(content: &str, max_chars: usize) -> String {
    let one_line: String = content.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max_chars {
        one_line
    } else {
        let mut s: String = one_line.chars().take(max_chars.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

/// The kinds of failure a reflection note records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum FailureType {
    /// A tool the procedure used failed.
    ToolError,
    /// A person said the result was wrong.
    UserFeedback,
    /// A measured outcome fell short.
    MetricFailure,
}

/// A lesson appended to a procedural memory after a failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(deny_unknown_fields)]
pub struct ReflectionNote {
    /// What kind of failure.
    pub failure_type: FailureType,
    /// What went wrong.
    pub failure_description: String,
    /// What was learned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lessons_learned: Option<String>,
    /// What to change in the procedure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_improvements: Option<String>,
    /// When it was noted (stamped by Lethe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Who noted it (stamped by Lethe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
}

/// Reading columns another program may have filled with the wrong type (a memento file, a
/// hand edit: `view_count = 1.5`, `pinned = 'true'`): the value is coerced to what Lethe reads
/// instead of failing the whole list, stats or export; [`crate::store::mistyped_rows`]
/// names such rows.
pub mod lenient {
    use crate::storage::db::Row;
    use crate::storage::db::ValueRef;

    /// An integer column: reals are truncated, numeric text parsed, anything else absent.
    pub fn int(r: &Row<'_>, i: usize) -> crate::error::Result<Option<i64>> {
        Ok(int_of(r.get_ref(i)?))
    }

    /// [`int`] of a value already read.
    pub fn int_of(v: ValueRef<'_>) -> Option<i64> {
        match v {
            ValueRef::Integer(v) => Some(v),
            ValueRef::Real(v) if v.is_finite() => Some(v.trunc().clamp(i64::MIN as f64, i64::MAX as f64) as i64),
            ValueRef::Text(t) => std::str::from_utf8(t).ok().and_then(|t| {
                let t = t.trim();
                t.parse::<i64>()
                    .ok()
                    .or_else(|| t.parse::<f64>().ok().filter(|v| v.is_finite()).map(|v| v.trunc() as i64))
            }),
            _ => None,
        }
    }

    /// A real column: integers widened, numeric text parsed, anything else absent.
    pub fn real(r: &Row<'_>, i: usize) -> crate::error::Result<Option<f64>> {
        Ok(real_of(r.get_ref(i)?))
    }

    /// [`real`] of a value already read.
    pub fn real_of(v: ValueRef<'_>) -> Option<f64> {
        match v {
            ValueRef::Integer(v) => Some(v as f64),
            ValueRef::Real(v) if v.is_finite() => Some(v),
            ValueRef::Text(t) => {
                std::str::from_utf8(t).ok().and_then(|t| t.trim().parse::<f64>().ok()).filter(|v| v.is_finite())
            }
            _ => None,
        }
    }

    /// A boolean column: non-zero numbers and the texts `true`/`1`/`yes` are true.
    pub fn flag(r: &Row<'_>, i: usize) -> crate::error::Result<bool> {
        Ok(flag_of(r.get_ref(i)?))
    }

    /// [`flag`] of a value already read.
    pub fn flag_of(v: ValueRef<'_>) -> bool {
        match v {
            ValueRef::Integer(v) => v != 0,
            ValueRef::Real(v) => v != 0.0,
            ValueRef::Text(t) => matches!(
                std::str::from_utf8(t).map(|t| t.trim().to_ascii_lowercase()).as_deref(),
                Ok("true" | "1" | "yes")
            ),
            _ => false,
        }
    }

    /// [`text`] without a copy when the value is valid UTF-8 text.
    pub fn text_ref<'a>(r: &'a Row<'_>, i: usize) -> crate::error::Result<Option<std::borrow::Cow<'a, str>>> {
        Ok(text_ref_of(r.get_ref(i)?))
    }

    /// [`text_ref`] of a value already read.
    pub fn text_ref_of(v: ValueRef<'_>) -> Option<std::borrow::Cow<'_, str>> {
        match v {
            ValueRef::Text(t) => Some(String::from_utf8_lossy(t)),
            ValueRef::Integer(v) => Some(v.to_string().into()),
            ValueRef::Real(v) => Some(v.to_string().into()),
            _ => None,
        }
    }

    /// A text column: numbers printed, invalid UTF-8 replaced, blobs absent.
    pub fn text(r: &Row<'_>, i: usize) -> crate::error::Result<Option<String>> {
        Ok(text_of(r.get_ref(i)?))
    }

    /// [`text`] of a value already read.
    pub fn text_of(v: ValueRef<'_>) -> Option<String> {
        text_ref_of(v).map(std::borrow::Cow::into_owned)
    }
}

/// Who did something: the person (`user`, or `user:<role>` signed in to a team store) or an
/// agent (`agent:<name>`); the grammar of [`crate::actor::parse`], which no caller can use to
/// claim `user:<role>`. The policy records itself without passing through here.
pub fn validate_actor(actor: &str) -> Result<()> {
    if crate::actor::is_person(actor) {
        return Ok(());
    }
    crate::actor::parse(actor).map(|_| ())
}

/// A new memory id: `mem_` and a random UUID.
pub fn new_memory_id() -> String {
    format!("mem_{}", uuid::Uuid::new_v4())
}
