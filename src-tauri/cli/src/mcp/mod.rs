//! `lethe mcp`: the Model Context Protocol over stdio (rmcp, the official Rust SDK), protocol
//! 2025-11-25 (older revisions negotiated as rmcp allows). Tool names follow memento where
//! it has them (docs/mcp.md).
//!
//! Errors a model can act on: arguments that do not fit a tool's schema (unknown key, wrong
//! type, missing field, out of range, unknown tier) are tool results with `isError` and
//! `{"error":{"code":"invalid_input",…}}`; engine errors are tool results with the CLI's
//! codes. Protocol errors are left for unknown tools and malformed requests
//! ([`transport`]). The actor is `agent:<client name>`, never the person.

mod schema;
mod transport;

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lethe_engine::group_commit::RememberQueue;
use lethe_engine::lifecycle::{self, ListQuery, NewMemory, ProcedureFields, SortBy};
use lethe_engine::ops::answers;
use lethe_engine::storage::postgres::Role;
use lethe_engine::{archive, forgetting, meta, procedural, recall, session, store, time, Error, Settings, Tier};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, JsonObject, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::RoleServer;
use rmcp::{tool, tool_handler, tool_router, Peer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

/// The newest revision Lethe implements; rmcp also knows 2026-07-28 (no `initialize`), which
/// Lethe does not serve yet.
const PROTOCOL: ProtocolVersion = ProtocolVersion::V_2025_11_25;

#[derive(Clone)]
pub struct LetheMcp {
    conn: Arc<Mutex<store::Connection>>,
    /// Concurrent `remember` calls written in one transaction (group commit).
    remembers: Arc<RememberQueue>,
    buffer: Arc<meta::MetaBuffer>,
    /// On a team server, an agent role acts as `agent:<role>` whatever the client is called
    /// (the server's audit triggers record the same).
    role_actor: Option<String>,
    /// On a team server, a reader role: its reads store nothing (no neighbour lists).
    reader: bool,
    tool_router: ToolRouter<Self>,
}

/// A memory tier.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TierArg {
    Working,
    Episodic,
    Semantic,
    Procedural,
}

impl From<TierArg> for Tier {
    fn from(t: TierArg) -> Tier {
        match t {
            TierArg::Working => Tier::Working,
            TierArg::Episodic => Tier::Episodic,
            TierArg::Semantic => Tier::Semantic,
            TierArg::Procedural => Tier::Procedural,
        }
    }
}

/// What kind of failure a reflection note records.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureTypeArg {
    ToolError,
    UserFeedback,
    MetricFailure,
}

impl FailureTypeArg {
    fn as_str(self) -> &'static str {
        match self {
            FailureTypeArg::ToolError => "tool_error",
            FailureTypeArg::UserFeedback => "user_feedback",
            FailureTypeArg::MetricFailure => "metric_failure",
        }
    }
}

/// A sort order of list_memories.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SortArg {
    Score,
    Created,
    Importance,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberArgs {
    /// The tier: working (this session's scratch, forgotten within days), episodic (what
    /// happened), semantic (facts and rules), procedural (how to do a task).
    #[serde(rename = "type")]
    pub tier: TierArg,
    /// The text to remember (secrets are redacted or refused, per the settings).
    pub content: String,
    /// How much it matters, 0 to 1 (default 0.5); important memories decay slower.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub importance: Option<f64>,
    /// Labels (at most 64, each 1-100 characters).
    pub tags: Option<Vec<String>>,
    /// Where it came from (e.g. "tool:bash" for a tool observation, which may be archived).
    pub source: Option<String>,
    /// Pinned memories are never forgotten by the policy (default false).
    pub pinned: Option<bool>,
    /// The session it belongs to (working memories are forgotten per session).
    pub session_id: Option<String>,
    /// The project it belongs to.
    pub project_id: Option<String>,
    /// Procedural only: what the procedure achieves.
    pub task_goal: Option<String>,
    /// Procedural only: the steps, in order (1-200 non-empty strings).
    pub steps: Option<Vec<String>>,
    /// Procedural only: when the procedure applies (a JSON object).
    pub trigger_conditions: Option<serde_json::Map<String, Value>>,
    /// Procedural only: the workflow it belongs to.
    pub workflow_name: Option<String>,
    /// Procedural only: the skill it belongs to.
    pub skill_name: Option<String>,
    /// Ids of older memories this one replaces: they leave recall but stay visible with a
    /// link to this one, and the change is audited.
    pub supersedes: Option<Vec<String>>,
    /// With expected_version: update this procedural memory instead of storing a new one.
    pub memory_id: Option<String>,
    /// With memory_id: the version you read; a different stored version is a conflict and
    /// nothing is written.
    #[schemars(range(min = 1))]
    pub expected_version: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// What to look for, in plain words.
    pub query: String,
    /// How many results (1-100, default 10).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
    /// Only this tier.
    #[serde(rename = "type")]
    pub tier: Option<TierArg>,
    /// Your session: memories of it rank higher.
    pub session_id: Option<String>,
    /// Your project: memories of it rank higher.
    pub project_id: Option<String>,
    /// Your workflow: memories of it rank higher.
    pub workflow_name: Option<String>,
    /// Your context's tags: memories carrying them rank higher.
    pub tags: Option<Vec<String>>,
    /// The kind of task you are doing: task logs of ended sessions of this kind are recalled
    /// too (never without it).
    pub task_kind: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndSessionArgs {
    /// The session that ended (the session_id its memories carry).
    pub session_id: String,
    /// What kind of task it was; its working memories become task logs of this kind.
    pub task_kind: String,
    /// The rules drawn from the session; each becomes a semantic memory linked to it.
    #[schemars(length(max = 1000))]
    pub rules: Option<Vec<RuleArg>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleArg {
    /// The rule, as a statement (not dialogue).
    pub content: String,
    /// 0-1, default 0.5.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub importance: Option<f64>,
    /// Its tags.
    pub tags: Option<Vec<String>>,
    /// Ids of memories this rule replaces.
    pub supersedes: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetArgs {
    /// The memory.
    pub id: String,
    /// Delete for ever instead of moving to the 30-day quarantine; only the person may
    /// (an agent gets `forbidden`).
    pub hard: Option<bool>,
    /// Confirms a hard delete.
    pub confirm: Option<bool>,
    /// Why, for the audit.
    pub reason: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UndoRunArgs {
    /// The forget run (`run_` and 32 hex digits), as `lethe forget` and `lethe events --runs` print it.
    pub run_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdArgs {
    /// The memory.
    pub id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FeedbackArgs {
    /// The memory you used.
    pub memory_id: String,
    /// true: it helped (counts as a cite, which keeps it from decaying).
    pub helpful: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetaArgs {
    /// One memory's statistics. Leave out memory_id and query for the summary of all.
    pub memory_id: Option<String>,
    /// A topic: the figures over the memories recall finds for it (not counted as recalls).
    pub query: Option<String>,
    /// With query: how many memories recall may find (1-100, default 20).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReflectionArgs {
    /// The procedural memory.
    pub memory_id: String,
    /// What failed: a tool, the user's judgement, or a metric.
    pub failure_type: FailureTypeArg,
    /// What went wrong.
    pub failure_description: String,
    /// What to do differently.
    pub lessons_learned: Option<String>,
    /// How the procedure could change.
    pub suggested_improvements: Option<String>,
    /// The version you read; a different stored version is a conflict.
    #[schemars(range(min = 1))]
    pub expected_version: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveArgs {
    /// The tool observation (its source marks it as one); with memo, or use items.
    pub memory_id: Option<String>,
    /// One line that replaces the content in place.
    pub memo: Option<String>,
    /// Several observations archived in one transaction, all or nothing (instead of
    /// memory_id and memo).
    #[schemars(length(min = 1, max = 10000))]
    pub items: Option<Vec<ArchiveItem>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveItem {
    /// The tool observation.
    pub memory_id: String,
    /// Its one-line memo.
    pub memo: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreArchiveArgs {
    /// The number archive_observation returned.
    #[schemars(range(min = 1))]
    pub archive_no: i64,
    /// "A:B": return only lines A to B (1-based, both included) of the archived bytes and
    /// restore nothing.
    pub lines: Option<String>,
    /// "A:B": return only bytes A to B (0-based, end excluded) and restore nothing.
    pub bytes: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimilarArgs {
    /// The memory.
    pub memory_id: String,
    /// How many neighbours (1-100, default 10).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Only this tier.
    #[serde(rename = "type")]
    pub tier: Option<TierArg>,
    /// true: only pinned memories.
    pub pinned: Option<bool>,
    /// true: only memories at risk (ForgetScore in or above the review band).
    pub at_risk: Option<bool>,
    /// Order: score (most at risk first), created (newest first, default) or importance.
    pub sort: Option<SortArg>,
    /// Page size (1-500, default 50).
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
    /// Memories to skip (default 0).
    #[schemars(range(min = 0))]
    pub offset: Option<u32>,
    /// true: only semantic and procedural memories that read like dialogue.
    pub needs_extraction: Option<bool>,
    /// Only memories written first by this actor (e.g. agent:claude-code, or user for the person).
    pub written_by: Option<String>,
}

/// Tool results; `Err` only for what rmcp itself raises.
type ToolResult = Result<CallToolResult, rmcp::ErrorData>;

fn error_result(code: &str, message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(
        json!({ "error": { "code": code, "message": message } }).to_string(),
    )])
}

fn engine_error(e: &Error) -> CallToolResult {
    error_result(e.code(), &e.to_string())
}

/// A tool's arguments against its schema: unknown keys, types, missing fields and enums by
/// serde, ranges by the schema itself. A failure is the model's to fix: an `invalid_input`
/// tool result naming the field.
fn parse<T: DeserializeOwned + JsonSchema + 'static>(tool: &str, args: JsonObject) -> Result<T, CallToolResult> {
    let invalid = |m: String| error_result("invalid_input", &format!("invalid arguments for {tool}: {m}"));
    let v = Value::Object(args);
    let parsed: T = serde_path_to_error::deserialize(&v).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        invalid(if path == "." { inner } else { format!("{path}: {inner}") })
    })?;
    let Value::Object(args) = v else { unreachable!("built from an object") };
    if let Some(m) = schema::out_of_range(&args, &schema::input::<T>()) {
        return Err(invalid(m));
    }
    Ok(parsed)
}

fn actor_of(peer: &Peer<RoleServer>) -> String {
    let name = peer.peer_info().map(|i| i.client_info.name.clone()).unwrap_or_default();
    lethe_engine::actor::agent_from_client_name(&name)
}

fn tier_of(t: Option<TierArg>) -> Option<Tier> {
    t.map(Tier::from)
}

impl LetheMcp {
    pub fn new(path: PathBuf) -> lethe_engine::Result<Self> {
        let mut conn = store::open(&path)?;
        // Memories another program stored without a vector get one before the first recall.
        if let Some(e) = lethe_engine::embed::shared() {
            let never = std::sync::atomic::AtomicBool::new(false);
            lethe_engine::semantic::backfill(&mut conn, e, |_, _| {}, &never)?;
        }
        // A long-running writer: its commits never wait for a checkpoint.
        store::checkpoint_off_the_writer(&conn)?;
        store::serve_many_reads(&conn)?;
        let buffer = meta::MetaBuffer::start(&path, Duration::from_millis(100))?;
        let (role_actor, reader) = match conn.is_postgres() {
            true => match lethe_engine::storage::postgres::role_of(&conn)? {
                (name, Role::Agent) => (Some(format!("agent:{name}")), false),
                (_, role) => (None, role == Role::Reader),
            },
            false => (None, false),
        };
        Ok(LetheMcp {
            conn: Arc::new(Mutex::new(conn)),
            remembers: Arc::new(RememberQueue::new()),
            buffer: Arc::new(buffer),
            role_actor,
            reader,
            tool_router: Self::tool_router(),
        })
    }

    /// The longest request line accepted: twice the content limit (JSON escaping) + 1 MiB.
    fn max_line(&self) -> lethe_engine::Result<usize> {
        let c = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        Ok(Settings::load(&c)?.max_content_bytes * 2 + 1024 * 1024)
    }

    /// Parses the arguments, runs blocking engine work off the async runtime, and turns the
    /// answer into a structured tool result (or an error result).
    async fn run<T: DeserializeOwned + JsonSchema + Send + 'static>(
        &self,
        tool: &'static str,
        peer: &Peer<RoleServer>,
        args: JsonObject,
        f: impl FnOnce(T, &mut store::Connection, &meta::MetaBuffer, &str, time::Instant) -> lethe_engine::Result<Value>
            + Send
            + 'static,
    ) -> ToolResult {
        self.run_shared(tool, peer, args, move |a, conn, _, buffer, actor, now| {
            let mut c = conn.lock().unwrap_or_else(|e| e.into_inner());
            f(a, &mut c, buffer, actor, now)
        })
        .await
    }

    /// [`Self::run`], with the connection not yet locked (for the group commit).
    async fn run_shared<T: DeserializeOwned + JsonSchema + Send + 'static>(
        &self,
        tool: &'static str,
        peer: &Peer<RoleServer>,
        args: JsonObject,
        f: impl FnOnce(
                T,
                &Mutex<store::Connection>,
                &RememberQueue,
                &meta::MetaBuffer,
                &str,
                time::Instant,
            ) -> lethe_engine::Result<Value>
            + Send
            + 'static,
    ) -> ToolResult {
        let a = match parse::<T>(tool, args) {
            Ok(a) => a,
            Err(r) => return Ok(r),
        };
        let actor = self.role_actor.clone().unwrap_or_else(|| actor_of(peer));
        let conn = Arc::clone(&self.conn);
        let remembers = Arc::clone(&self.remembers);
        let buffer = Arc::clone(&self.buffer);
        let res =
            tokio::task::spawn_blocking(move || f(a, &conn, &remembers, &buffer, &actor, chrono::Utc::now())).await;
        Ok(match res {
            Ok(Ok(v)) => CallToolResult::structured(v),
            Ok(Err(e)) => engine_error(&e),
            Err(join) => engine_error(&Error::Io(std::io::Error::other(join.to_string()))),
        })
    }

    fn detail_json(
        conn: &store::Connection,
        buffer: &meta::MetaBuffer,
        id: &str,
        now: time::Instant,
    ) -> lethe_engine::Result<Value> {
        Ok(serde_json::to_value(lethe_engine::detail(conn, id, now, Some(buffer))?)?)
    }
}

#[tool_router]
impl LetheMcp {
    #[tool(
        description = "Store a memory (or compare-and-swap update a procedural one with memory_id + expected_version). Trivial text and exact duplicates are not stored; the answer says why. The answer lists similar memories already stored: pass their ids in supersedes to replace them. Secrets are redacted before anything is written (or refused, per the secrets setting) and personal data tagged; the answer lists what was redacted (field, kind, offsets), never the value.",
        input_schema = schema::input::<RememberArgs>(),
        output_schema = schema::output::<answers::RememberAnswer>(),
        annotations(title = "Remember", read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn remember(&self, peer: Peer<RoleServer>, args: JsonObject) -> ToolResult {
        self.run_shared("remember", &peer, args, |a: RememberArgs, conn, remembers, _, actor, now| {
            let m = NewMemory {
                tier: a.tier.into(),
                content: a.content,
                importance: a.importance,
                tags: a.tags.unwrap_or_default(),
                source: a.source,
                pinned: a.pinned.unwrap_or(false),
                privacy_scope: None,
                owner_id: Some(actor.to_string()),
                session_id: a.session_id,
                project_id: a.project_id,
                created_at: None,
                procedure: ProcedureFields {
                    task_goal: a.task_goal,
                    steps: a.steps.map(|s| json!(s)),
                    trigger_conditions: a.trigger_conditions.map(Value::Object),
                    workflow_name: a.workflow_name,
                    skill_name: a.skill_name,
                },
                supersedes: a.supersedes.unwrap_or_default(),
            };
            match (a.memory_id, a.expected_version) {
                (Some(id), Some(v)) => {
                    let patch = procedural::ProcedurePatch { content: Some(m.content), fields: m.procedure };
                    let mut c = conn.lock().unwrap_or_else(|e| e.into_inner());
                    let updated = procedural::update_answer(&mut c, &id, v, &patch, actor, now)?;
                    Ok(serde_json::to_value(answers::RememberAnswer::Updated(updated))?)
                }
                // Written with the calls of other requests waiting for the connection.
                (None, None) => {
                    let outcome = remembers.remember(conn, m, actor, now)?;
                    Ok(serde_json::to_value(answers::RememberAnswer::Remembered(outcome))?)
                }
                _ => Err(Error::invalid("memory_id and expected_version go together")),
            }
        })
        .await
    }

    #[tool(
        description = "Ranked search over active memories with a score breakdown per result (similarity, recency, scene, priority). A query that names a time (\"in July 2022\", \"on 3 August 2023\", \"last week\", \"3 days ago\") ranks the memories dated then first and answers the periods it read. Recall does not count as usage; its hits go to the meta-memory statistics only.",
        input_schema = schema::input::<RecallArgs>(),
        output_schema = schema::output::<recall::Answer>(),
        annotations(title = "Recall", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn recall(&self, peer: Peer<RoleServer>, args: JsonObject) -> ToolResult {
        self.run("recall", &peer, args, |a: RecallArgs, c, buffer, actor, now| {
            let q = recall::RecallQuery {
                text: a.query,
                limit: a.limit.unwrap_or(10) as usize,
                tier: tier_of(a.tier),
                session: a.session_id,
                project: a.project_id,
                workflow: a.workflow_name,
                tags: a.tags.unwrap_or_default(),
                pinned: None,
                weights: None,
                task_kind: a.task_kind,
            };
            let mut answer = recall::answer(c, &q, now)?;
            for h in &answer.results {
                buffer.record_hit(&h.id, h.score, now);
            }
            buffer.record_recall(lethe_engine::recall_log::NewEntry::of(
                actor,
                &time::format(now),
                &q,
                &answer.results,
            ));
            // A result that matched through a session neighbour's text says so, and which.
            recall::mark_matched_through(c, &mut answer, &q.text)?;
            Ok(serde_json::to_value(&answer)?)
        })
        .await
    }

    #[tool(
        description = "The nearest active memories of a memory, each with its closeness (0-1), kind (duplicate / possible update / related) and evidence (matching and differing values and words): check before storing a near-copy, or supersede an older memory whose value changed.",
        input_schema = schema::input::<SimilarArgs>(),
        output_schema = schema::output::<answers::SimilarAnswer>(),
        annotations(title = "Similar memories", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn similar(&self, peer: Peer<RoleServer>, args: JsonObject) -> ToolResult {
        self.run("similar", &peer, args, |a: SimilarArgs, c, _, _, _| {
            let items = lethe_engine::semantic::similar(c, &a.memory_id, a.limit.unwrap_or(10) as usize)?;
            Ok(serde_json::to_value(answers::SimilarAnswer { items })?)
        })
        .await
    }

    #[tool(
        description = "Forget a memory: a soft delete into the 30-day quarantine, restorable with restore. A hard delete (hard and confirm) is for the person only; an agent gets forbidden.",
        input_schema = schema::input::<ForgetArgs>(),
        output_schema = schema::output::<lethe_engine::audit::ForgettingEvent>(),
        annotations(title = "Forget", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn forget(&self, peer: Peer<RoleServer>, args: JsonObject) -> ToolResult {
        self.run("forget", &peer, args, |a: ForgetArgs, c, _, actor, now| {
            let ev = if a.hard.unwrap_or(false) {
                lifecycle::hard_delete(c, &a.id, a.confirm.unwrap_or(false), a.reason.as_deref(), actor, now)?
            } else {
                lifecycle::soft_delete(c, &a.id, a.reason.as_deref(), actor, now)?
            };
            Ok(serde_json::to_value(ev)?)
        })
        .await
    }

    #[tool(
        description = "Undo a forget run: restore everything the policy run quarantined, as one audited action. The answer lists what came back and what could not (already restored, quarantined again since, deleted for ever).",
        input_schema = schema::input::<UndoRunArgs>(),
        output_schema = schema::output::<lethe_engine::runs::UndoReport>(),
        annotations(title = "Undo a forget run", read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn undo_forget_run(&self, peer: Peer<RoleServer>, args: JsonObject) -> ToolResult {
        self.run("undo_forget_run", &peer, args, |a: UndoRunArgs, c, _, actor, now| {
            Ok(serde_json::to_value(lethe_engine::runs::undo(c, &a.run_id, actor, now)?)?)
        })
        .await
    }

    #[tool(
        description = "Bring a memory back from quarantine exactly as it was.",
        input_schema = schema::input::<IdArgs>(),
        output_schema = schema::output::<lethe_engine::MemoryDetail>(),
        annotations(title = "Restore", read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn restore(&self, peer: Peer<RoleServer>, args: JsonObject) -> ToolResult {
        self.run("restore", &peer, args, |a: IdArgs, c, b, actor, now| {
            lifecycle::restore(c, &a.id, actor, now)?;
            Self::detail_json(c, b, &a.id, now)
        })
        .await
    }

    #[tool(
        description = "Pin a memory: pinned memories are never forgotten by the policy.",
        input_schema = schema::input::<IdArgs>(),
        output_schema = schema::output::<lethe_engine::MemoryDetail>(),
        annotations(title = "Pin", read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn pin(&self, peer: Peer<RoleServer>, args: JsonObject) -> ToolResult {
        self.run("pin", &peer, args, |a: IdArgs, c, b, actor, now| {
            lifecycle::pin(c, &a.id, actor, now)?;
            Self::detail_json(c, b, &a.id, now)
        })
        .await
    }

    #[tool(
        description = "Unpin a memory: the policy may forget it again.",
        input_schema = schema::input::<IdArgs>(),
        output_schema = schema::output::<lethe_engine::MemoryDetail>(),
        annotations(title = "Unpin", read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn unpin(&self, peer: Peer<RoleServer>, args: JsonObject) -> ToolResult {
        self.run("unpin", &peer, args, |a: IdArgs, c, b, actor, now| {
            lifecycle::unpin(c, &a.id, actor, now)?;
            Self::detail_json(c, b, &a.id, now)
        })
        .await
    }

    #[tool(
        description = "Report whether a memory helped; helpful = true counts as a cite (usage), which keeps it from decaying.",
        input_schema = schema::input::<FeedbackArgs>(),
        output_schema = schema::output::<answers::FeedbackAnswer>(),
        annotations(title = "Feedback", read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn feedback(&self, peer: Peer<RoleServer>, args: JsonObject) -> ToolResult {
        self.run("feedback", &peer, args, |a: FeedbackArgs, c, _, actor, now| {
            Ok(serde_json::to_value(answers::feedback(c, &a.memory_id, a.helpful, actor, now)?)?)
        })
        .await
    }

    #[tool(
        description = "Read one memory with its explained ForgetScore; counts as a view.",
        input_schema = schema::input::<IdArgs>(),
        output_schema = schema::output::<lethe_engine::MemoryDetail>(),
        annotations(title = "Get memory", read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn get_memory(&self, peer: Peer<RoleServer>, args: JsonObject) -> ToolResult {
        self.run("get_memory", &peer, args, |a: IdArgs, c, b, _, now| {
            lifecycle::view(c, &a.id, now)?;
            Self::detail_json(c, b, &a.id, now)
        })
        .await
    }

    #[tool(
        description = "How well you remember. {}: the summary over every active memory (memories recalled, total recalls, average confidence, the lowest-confidence memories with average < 0.5, the most recalled, how many were never recalled). {memory_id}: that memory's recall count, successes, failures, average confidence, last recall. {query}: the summary over the memories recall finds for that topic; this search is not counted as a recall. Hits not yet flushed are included.",
        input_schema = schema::input::<MetaArgs>(),
        output_schema = schema::output::<answers::MetaAnswer>(),
        annotations(title = "Meta-memory statistics", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn get_meta_memory_stats(&self, peer: Peer<RoleServer>, args: JsonObject) -> ToolResult {
        self.run("get_meta_memory_stats", &peer, args, |a: MetaArgs, c, b, _, now| match (a.memory_id, a.query) {
            (Some(id), None) => {
                if a.limit.is_some() {
                    return Err(Error::invalid("limit goes with query"));
                }
                lifecycle::get(c, &id)?;
                Ok(serde_json::to_value(answers::MetaAnswer::One(b.read(c, &id)?))?)
            }
            (None, Some(q)) => {
                let ids = recall::topic_ids(c, &q, a.limit.unwrap_or(20) as usize, now)?;
                let overview = b.overview(c, Some(&ids))?;
                Ok(serde_json::to_value(answers::MetaAnswer::Topic { query: q, overview })?)
            }
            (None, None) => {
                if a.limit.is_some() {
                    return Err(Error::invalid("limit goes with query"));
                }
                Ok(serde_json::to_value(answers::MetaAnswer::All(b.overview(c, None)?))?)
            }
            (Some(_), Some(_)) => Err(Error::invalid("give memory_id or query, not both")),
        })
        .await
    }

    #[tool(
        description = "Append a reflection note (a lesson from a failure) to a procedural memory; beyond 100 notes the oldest is dropped.",
        input_schema = schema::input::<ReflectionArgs>(),
        output_schema = schema::output::<procedural::ReflectOutcome>(),
        annotations(title = "Add reflection note", read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn add_reflection_note(&self, peer: Peer<RoleServer>, args: JsonObject) -> ToolResult {
        self.run("add_reflection_note", &peer, args, |a: ReflectionArgs, c, _, actor, now| {
            let mut note =
                json!({ "failure_type": a.failure_type.as_str(), "failure_description": a.failure_description });
            if let Some(l) = a.lessons_learned {
                note["lessons_learned"] = json!(l);
            }
            if let Some(s) = a.suggested_improvements {
                note["suggested_improvements"] = json!(s);
            }
            Ok(serde_json::to_value(procedural::reflect(c, &a.memory_id, &note, a.expected_version, actor, now)?)?)
        })
        .await
    }

    #[tool(
        description = "Replace a bulky tool observation by a one-line memo, keeping the exact bytes for restore_archive. Give memory_id and memo, or items [{memory_id, memo}] to archive many in one transaction (all or nothing); the answer is then {items: [...]}.",
        input_schema = schema::input::<ArchiveArgs>(),
        output_schema = schema::output::<answers::ArchiveAnswer>(),
        annotations(title = "Archive observation", read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn archive_observation(&self, peer: Peer<RoleServer>, args: JsonObject) -> ToolResult {
        self.run("archive_observation", &peer, args, |a: ArchiveArgs, c, _, actor, now| {
            match (a.memory_id, a.memo, a.items) {
                (Some(id), Some(memo), None) => {
                    Ok(serde_json::to_value(answers::ArchiveAnswer::One(archive::archive(c, &id, &memo, actor, now)?))?)
                }
                (None, None, Some(items)) => {
                    let items: Vec<(String, String)> = items.into_iter().map(|i| (i.memory_id, i.memo)).collect();
                    let items = archive::archive_batch(c, &items, actor, now)?;
                    Ok(serde_json::to_value(answers::ArchiveAnswer::Many { items })?)
                }
                _ => Err(Error::invalid("give memory_id and memo, or items, not both")),
            }
        })
        .await
    }

    #[tool(
        description = "Put back the exact archived bytes of an observation (hash verified). With lines or bytes (\"A:B\"), return only that span {archive_no, memory_id, start, end, sha256, text} and restore nothing.",
        input_schema = schema::input::<RestoreArchiveArgs>(),
        output_schema = schema::output::<answers::UnarchiveAnswer>(),
        annotations(title = "Restore archive", read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn restore_archive(&self, peer: Peer<RoleServer>, args: JsonObject) -> ToolResult {
        self.run("restore_archive", &peer, args, |a: RestoreArchiveArgs, c, _, actor, now| {
            let span = match (a.lines, a.bytes) {
                (None, None) => {
                    let restored = archive::unarchive(c, a.archive_no, actor, now)?;
                    return Ok(serde_json::to_value(answers::UnarchiveAnswer::Restored(restored))?);
                }
                (Some(l), None) => archive::Span::parse("lines", &l)?,
                (None, Some(b)) => archive::Span::parse("bytes", &b)?,
                (Some(_), Some(_)) => return Err(Error::invalid("give lines or bytes, not both")),
            };
            Ok(serde_json::to_value(answers::UnarchiveAnswer::Span(archive::read_span(c, a.archive_no, span)?))?)
        })
        .await
    }

    #[tool(
        description = "End a session: its working memories become task logs of task_kind (kept, restorable, recalled only when recall names the same task_kind), and each rule becomes a semantic memory linked to the session. One transaction; ending a session again changes nothing and returns the first answer with already_ended.",
        input_schema = schema::input::<EndSessionArgs>(),
        output_schema = schema::output::<session::SessionEnd>(),
        annotations(title = "End session", read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn end_session(&self, peer: Peer<RoleServer>, args: JsonObject) -> ToolResult {
        self.run("end_session", &peer, args, |a: EndSessionArgs, c, _, actor, now| {
            let rules: Vec<session::Rule> = a
                .rules
                .unwrap_or_default()
                .into_iter()
                .map(|r| session::Rule {
                    content: r.content,
                    importance: r.importance,
                    tags: r.tags.unwrap_or_default(),
                    supersedes: r.supersedes.unwrap_or_default(),
                })
                .collect();
            Ok(serde_json::to_value(session::end_session(c, &a.session_id, &a.task_kind, &rules, actor, now)?)?)
        })
        .await
    }

    #[tool(
        description = "Counts per tier (active, quarantined, pinned), memories at risk, and the recall statistics summary.",
        input_schema = schema::input::<NoArgs>(),
        output_schema = schema::output::<answers::StatsAnswer>(),
        annotations(title = "Memory stats", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn memory_stats(&self, peer: Peer<RoleServer>, args: JsonObject) -> ToolResult {
        let reader = self.reader;
        self.run("memory_stats", &peer, args, move |_: NoArgs, c, _, _, now| {
            let snap = forgetting::Snapshot::load_for(c, !reader)?;
            Ok(serde_json::to_value(answers::stats(c, &snap, &Settings::load(c)?, now)?)?)
        })
        .await
    }

    #[tool(
        description = "A page of active memories (previews, not full texts) with their ForgetScore: filter by tier, pinned, at risk; sort by score, created or importance; page with limit and offset. get_memory reads one in full.",
        input_schema = schema::input::<ListArgs>(),
        output_schema = schema::output::<forgetting::Page>(),
        annotations(title = "List memories", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn list_memories(&self, peer: Peer<RoleServer>, args: JsonObject) -> ToolResult {
        let reader = self.reader;
        self.run("list_memories", &peer, args, move |a: ListArgs, c, _, _, now| {
            let s = Settings::load(c)?;
            let q = ListQuery {
                tier: tier_of(a.tier),
                deleted: Some(false),
                pinned: a.pinned.filter(|p| *p),
                sort: match a.sort.unwrap_or(SortArg::Created) {
                    SortArg::Score => SortBy::Score,
                    SortArg::Created => SortBy::Created,
                    SortArg::Importance => SortBy::Importance,
                },
                // The same edge as memory_stats' at_risk count.
                min_score: a.at_risk.filter(|r| *r).map(|_| s.review_band_low - lethe_engine::decay::EPS),
                max_score: None,
                session: None,
                project: None,
                redacted: None,
                needs_extraction: a.needs_extraction.filter(|n| *n),
                written_by: a.written_by,
                source: None,
                only: None,
                limit: a.limit.unwrap_or(50) as usize,
                offset: a.offset.unwrap_or(0) as usize,
            };
            let snap = forgetting::Snapshot::load_for(c, !reader)?;
            Ok(serde_json::to_value(forgetting::list(c, &snap, &q, &s, now)?)?)
        })
        .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for LetheMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_protocol_version(PROTOCOL)
            .with_server_info(Implementation::new("lethe", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Lethe long-term memory: remember, recall, forget (soft by default), restore, pin. Memories decay by tier; a person reviews them in the Lethe window.",
            )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&PROTOCOL))
    }
}

/// Serves MCP on stdin/stdout until the client closes stdin; buffered recall statistics are
/// flushed before returning. A read or write failure is an error (reported on stderr by
/// `main`, non-zero exit).
pub fn serve(path: PathBuf) -> lethe_engine::Result<()> {
    let server = LetheMcp::new(path)?;
    let cap = server.max_line()?;
    let buffer = Arc::clone(&server.buffer);
    // The connection is closed here, outside the runtime: a PostgreSQL client blocks on its
    // own runtime when it closes, which a runtime thread may not do.
    let conn = Arc::clone(&server.conn);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let io_err = |what: &str, e: &dyn std::fmt::Display| Error::Io(std::io::Error::other(format!("{what}: {e}")));
    let abnormal = rt.block_on(async move {
        let (r, w) = rmcp::transport::stdio_pipes();
        let (transport, abnormal) = transport::LineCapped::new(r, w, cap);
        let service = server.serve(transport).await.map_err(|e| io_err("mcp initialize", &e))?;
        let quit = service.waiting().await.map_err(|e| io_err("mcp", &e))?;
        if let rmcp::service::QuitReason::JoinError(e) = quit {
            return Err(io_err("mcp", &e));
        }
        Ok::<_, Error>(abnormal)
    })?;
    drop(conn);
    // Dropping the last handle flushes pending deltas and stops the flusher.
    drop(buffer);
    rt.shutdown_timeout(Duration::from_secs(1));
    if let Some(why) = abnormal.lock().unwrap_or_else(|e| e.into_inner()).take() {
        return Err(io_err("mcp ended abnormally", &why));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tool's output schema, generated from the engine's answer type it returns.
    fn generated() -> Vec<(&'static str, Arc<JsonObject>)> {
        let detail = schema::output::<lethe_engine::MemoryDetail>;
        vec![
            ("remember", schema::output::<answers::RememberAnswer>()),
            ("recall", schema::output::<recall::Answer>()),
            ("similar", schema::output::<answers::SimilarAnswer>()),
            ("forget", schema::output::<lethe_engine::audit::ForgettingEvent>()),
            ("undo_forget_run", schema::output::<lethe_engine::runs::UndoReport>()),
            ("restore", detail()),
            ("pin", detail()),
            ("unpin", detail()),
            ("feedback", schema::output::<answers::FeedbackAnswer>()),
            ("get_memory", detail()),
            ("get_meta_memory_stats", schema::output::<answers::MetaAnswer>()),
            ("add_reflection_note", schema::output::<procedural::ReflectOutcome>()),
            ("archive_observation", schema::output::<answers::ArchiveAnswer>()),
            ("restore_archive", schema::output::<answers::UnarchiveAnswer>()),
            ("end_session", schema::output::<session::SessionEnd>()),
            ("memory_stats", schema::output::<answers::StatsAnswer>()),
            ("list_memories", schema::output::<forgetting::Page>()),
        ]
    }

    /// Where `value` breaks `schema` (the keywords the generated schemas use: type,
    /// properties, required, additionalProperties, items, anyOf), as paths.
    fn breaks(value: &Value, schema: &Value, at: &str, out: &mut Vec<String>) {
        // `true` (or `{}`) accepts any value: a JSON value the engine passes through.
        if schema == &json!(true) || schema == &json!({}) {
            return;
        }
        if let Some(Value::Array(alts)) = schema.get("anyOf") {
            let fits: Vec<Vec<String>> = alts
                .iter()
                .map(|alt| {
                    let mut o = Vec::new();
                    breaks(value, alt, at, &mut o);
                    o
                })
                .collect();
            if !fits.iter().any(Vec::is_empty) {
                out.push(format!("{at}: fits none of anyOf: {fits:?}"));
                return;
            }
        }
        if let Some(ty) = schema.get("type") {
            let types: Vec<&str> = match ty {
                Value::String(t) => vec![t.as_str()],
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let fits = |t: &str| match t {
                "null" => value.is_null(),
                "boolean" => value.is_boolean(),
                "integer" => value.is_i64() || value.is_u64(),
                "number" => value.is_number(),
                "string" => value.is_string(),
                "array" => value.is_array(),
                "object" => value.is_object(),
                _ => false,
            };
            if !types.iter().any(|t| fits(t)) {
                out.push(format!("{at}: {value} is not {types:?}"));
                return;
            }
        }
        if let Value::Object(o) = value {
            let props = schema.get("properties").and_then(Value::as_object);
            for k in schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
                if !o.contains_key(k) {
                    out.push(format!("{at}.{k}: required, missing"));
                }
            }
            // The keys are checked where the schema names them (an alternative of anyOf is
            // checked on its own).
            if props.is_some() || schema.get("additionalProperties").is_some() {
                for (k, v) in o {
                    match (props.and_then(|p| p.get(k)), schema.get("additionalProperties")) {
                        (Some(p), _) => breaks(v, p, &format!("{at}.{k}"), out),
                        (None, Some(extra)) if extra.is_object() => breaks(v, extra, &format!("{at}.{k}"), out),
                        (None, _) => out.push(format!("{at}.{k}: not in the schema")),
                    }
                }
            }
        }
        if let (Value::Array(items), Some(item)) = (value, schema.get("items")) {
            for (i, v) in items.iter().enumerate() {
                breaks(v, item, &format!("{at}[{i}]"), out);
            }
        }
    }

    /// The schema `tool` advertises in the tool list.
    fn advertised(tool: &str) -> Value {
        let tools = LetheMcp::tool_router().list_all();
        let t = tools.iter().find(|t| t.name == tool).unwrap_or_else(|| panic!("no tool {tool}"));
        Value::Object((**t.output_schema.as_ref().unwrap_or_else(|| panic!("{tool} has no output schema"))).clone())
    }

    /// Asserts that `answer` fits what `tool` advertises.
    fn fits<T: serde::Serialize>(tool: &str, answer: &T) -> Value {
        let v = serde_json::to_value(answer).unwrap();
        let mut out = Vec::new();
        breaks(&v, &advertised(tool), tool, &mut out);
        assert!(out.is_empty(), "{tool}'s answer breaks its schema: {out:?}\nanswer: {v}");
        v
    }

    #[test]
    fn every_tool_advertises_the_schema_of_its_engine_answer_type() {
        let tools = LetheMcp::tool_router().list_all();
        let generated = generated();
        assert_eq!(tools.len(), generated.len(), "a tool without its answer type here");
        for (name, expected) in generated {
            let tool = tools.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no tool {name}"));
            assert_eq!(tool.output_schema.as_deref(), Some(&*expected), "{name}'s output schema is its answer type's");
            assert_eq!(expected.get("type"), Some(&json!("object")), "{name}: MCP wants an object's schema");
        }
    }

    #[test]
    fn generated_output_schemas_are_the_engines_answer_types_and_hold_every_field_a_real_answer_has() {
        // A real answer, with every optional part present: a memory recalled (the mean
        // confidence), and a row another program stored with a mistyped value.
        let now = time::parse("2026-06-01T12:00:00.000Z").unwrap();
        let mut conn = store::open_in_memory().unwrap();
        lifecycle::remember(&mut conn, &NewMemory::new(Tier::Semantic, "the deploy runs at noon"), "user", now)
            .unwrap();
        let hit =
            recall::recall(&conn, &recall::RecallQuery { text: "deploy".into(), limit: 1, ..Default::default() }, now)
                .unwrap();
        let clock = time::format(now);
        let deltas = meta::Delta::of_hits(hit.iter().map(|h| (h.id.as_str(), h.score)), &clock);
        meta::write_batch(&mut conn, &deltas, &[]).unwrap();
        conn.execute_batch("UPDATE memory_item SET view_count = 'many'").unwrap();
        let snap = forgetting::Snapshot::load(&conn).unwrap();
        let answer = fits("memory_stats", &answers::stats(&conn, &snap, &Settings::load(&conn).unwrap(), now).unwrap());
        assert!(answer["mistyped"].as_array().is_some_and(|m| !m.is_empty()), "{answer}");
        assert!(answer["meta"]["avg_confidence"].is_number(), "{answer}");

        // And the check can fail: a field the schema does not know.
        let mut extra = answer.clone();
        extra["meta"]["new_field"] = json!(1);
        let mut out = Vec::new();
        breaks(&extra, &advertised("memory_stats"), "memory_stats", &mut out);
        assert_eq!(out, vec!["memory_stats.meta.new_field: not in the schema"]);
    }

    #[test]
    fn real_answers_of_every_tool_fit_the_schema_it_advertises() {
        let now = time::parse("2026-06-01T12:00:00.000Z").unwrap();
        let mut conn = store::open_in_memory().unwrap();
        let c = &mut conn;
        let mut first = NewMemory::new(Tier::Episodic, "the deploy of the billing service runs at noon on Tuesdays");
        first.session_id = Some("s1".into());
        first.source = Some("tool:bash".into());
        first.tags = vec!["deploy".into()];
        let stored = answers::RememberAnswer::Remembered(lifecycle::remember(c, &first, "agent:a", now).unwrap());
        let id = fits("remember", &stored)["id"].as_str().unwrap().to_string();
        // A near-copy: stored with the first listed as similar, then an exact copy, skipped.
        let mut copy = NewMemory::new(Tier::Episodic, "the deploy of the billing service runs at noon on Thursdays");
        copy.session_id = Some("s1".into());
        let near = fits(
            "remember",
            &answers::RememberAnswer::Remembered(lifecycle::remember(c, &copy, "agent:a", now).unwrap()),
        );
        assert!(near["similar"].as_array().is_some_and(|s| !s.is_empty()), "{near}");
        let skipped = fits(
            "remember",
            &answers::RememberAnswer::Remembered(lifecycle::remember(c, &first, "agent:a", now).unwrap()),
        );
        assert_eq!(skipped["stored"], json!(false), "{skipped}");
        let mut proc = NewMemory::new(Tier::Procedural, "Deploy: build; ship");
        proc.procedure.task_goal = Some("Deploy".into());
        proc.procedure.steps = Some(json!(["build", "ship"]));
        let proc_id = lifecycle::remember(c, &proc, "agent:a", now).unwrap().id().unwrap().to_string();
        let patch = procedural::ProcedurePatch {
            content: None,
            fields: ProcedureFields { steps: Some(json!(["build", "test", "ship"])), ..Default::default() },
        };
        let updated = procedural::update_answer(c, &proc_id, 1, &patch, "agent:a", now).unwrap();
        fits("remember", &answers::RememberAnswer::Updated(updated));

        let q = recall::RecallQuery { text: "billing deploy".into(), limit: 5, ..Default::default() };
        let mut answer = recall::answer(c, &q, now).unwrap();
        recall::mark_matched_through(c, &mut answer, &q.text).unwrap();
        fits("recall", &answer);
        let items = lethe_engine::semantic::similar(c, &id, 10).unwrap();
        fits("similar", &answers::SimilarAnswer { items });

        fits("get_memory", &lethe_engine::detail(c, &id, now, None).unwrap());
        fits("feedback", &answers::feedback(c, &id, true, "agent:a", now).unwrap());
        fits("pin", &{
            lifecycle::pin(c, &id, "user", now).unwrap();
            lethe_engine::detail(c, &id, now, None).unwrap()
        });
        let note = json!({ "failure_type": "tool_error", "failure_description": "timed out" });
        fits("add_reflection_note", &procedural::reflect(c, &proc_id, &note, None, "agent:a", now).unwrap());

        let receipt = archive::archive(c, &id, "deploy log, archived", "agent:a", now).unwrap();
        let archive_no = receipt.archive_no;
        fits("archive_observation", &answers::ArchiveAnswer::One(receipt));
        let span = archive::read_span(c, archive_no, archive::Span::parse("lines", "1:1").unwrap()).unwrap();
        fits("restore_archive", &answers::UnarchiveAnswer::Span(span));
        fits(
            "restore_archive",
            &answers::UnarchiveAnswer::Restored(archive::unarchive(c, archive_no, "agent:a", now).unwrap()),
        );
        let items = archive::archive_batch(c, &[(id.clone(), "again".into())], "agent:a", now).unwrap();
        fits("archive_observation", &answers::ArchiveAnswer::Many { items });

        let meta_one = meta::read_stored(c, &id)
            .unwrap()
            .unwrap_or(meta::MetaStats { memory_id: id.clone(), ..Default::default() });
        fits("get_meta_memory_stats", &answers::MetaAnswer::One(meta_one));
        let overview = meta::overview(c, None, &Default::default()).unwrap();
        fits(
            "get_meta_memory_stats",
            &answers::MetaAnswer::Topic { query: "deploy".into(), overview: overview.clone() },
        );
        fits("get_meta_memory_stats", &answers::MetaAnswer::All(overview));

        let rules = [session::Rule {
            content: "Deploys run at noon.".into(),
            importance: None,
            tags: Vec::new(),
            supersedes: Vec::new(),
        }];
        fits("end_session", &session::end_session(c, "s1", "deploy", &rules, "agent:a", now).unwrap());

        let s = Settings::load(c).unwrap();
        let snap = forgetting::Snapshot::load(c).unwrap();
        let q = ListQuery { limit: 10, ..Default::default() };
        fits("list_memories", &forgetting::list(c, &snap, &q, &s, now).unwrap());
        let event = fits("forget", &lifecycle::soft_delete(c, &proc_id, Some("outdated"), "agent:a", now).unwrap());
        assert_eq!(event["action"], json!("soft"), "{event}");
        fits("restore", &{
            lifecycle::restore(c, &proc_id, "agent:a", now).unwrap();
            lethe_engine::detail(c, &proc_id, now, None).unwrap()
        });
        fits("undo_forget_run", &lethe_engine::runs::UndoReport { run_id: "run_0".into(), ..Default::default() });
    }
}
