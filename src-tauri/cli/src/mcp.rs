//! `lethe mcp`: the Model Context Protocol over stdio (rmcp, the official Rust SDK). Tool
//! names follow memento where it has them (DESIGN §11). Every argument object rejects
//! unknown keys; engine errors come back as tool errors carrying the CLI's codes; the actor
//! is `agent:<client name>`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lethe_engine::lifecycle::{self, NewMemory, ProcedureFields};
use lethe_engine::{archive, forgetting, meta, procedural, recall, store, time, Error, Settings, Tier};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Content, Implementation, ServerCapabilities, ServerInfo};
use rmcp::service::RoleServer;
use rmcp::{tool, tool_handler, tool_router, Peer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Clone)]
pub struct LetheMcp {
    conn: Arc<Mutex<store::Connection>>,
    buffer: Arc<meta::MetaBuffer>,
    tool_router: ToolRouter<Self>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberArgs {
    /// working | episodic | semantic | procedural
    #[serde(rename = "type")]
    pub tier: String,
    pub content: String,
    pub importance: Option<f64>,
    pub tags: Option<Vec<String>>,
    pub source: Option<String>,
    pub pinned: Option<bool>,
    pub session_id: Option<String>,
    pub project_id: Option<String>,
    pub task_goal: Option<String>,
    pub steps: Option<Vec<String>>,
    pub trigger_conditions: Option<serde_json::Map<String, Value>>,
    pub workflow_name: Option<String>,
    pub skill_name: Option<String>,
    pub supersedes: Option<Vec<String>>,
    /// With expected_version: compare-and-swap update of this procedural memory.
    pub memory_id: Option<String>,
    pub expected_version: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    pub query: String,
    pub limit: Option<usize>,
    #[serde(rename = "type")]
    pub tier: Option<String>,
    pub session_id: Option<String>,
    pub project_id: Option<String>,
    pub workflow_name: Option<String>,
    pub tags: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetArgs {
    pub id: String,
    /// Delete for ever instead of moving to quarantine (needs confirm = true).
    pub hard: Option<bool>,
    pub confirm: Option<bool>,
    pub reason: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdArgs {
    pub id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FeedbackArgs {
    pub memory_id: String,
    /// true: the memory helped (counts as a cite).
    pub helpful: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetaArgs {
    pub memory_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReflectionArgs {
    pub memory_id: String,
    /// tool_error | user_feedback | metric_failure
    pub failure_type: String,
    pub failure_description: String,
    pub lessons_learned: Option<String>,
    pub suggested_improvements: Option<String>,
    pub expected_version: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveArgs {
    pub memory_id: String,
    /// One line that replaces the content in place.
    pub memo: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreArchiveArgs {
    pub archive_no: i64,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimilarArgs {
    pub memory_id: String,
    /// How many neighbours (default 10).
    pub limit: Option<usize>,
}

/// Engine errors are tool results (`is_error`), never protocol errors; malformed arguments
/// (unknown keys, wrong types) are rejected by rmcp as invalid params before a tool runs.
type ToolResult = Result<CallToolResult, rmcp::ErrorData>;

fn actor_of(peer: &Peer<RoleServer>) -> String {
    let name = peer
        .peer_info()
        .map(|i| i.client_info.name.trim().to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "unknown".into());
    let clean: String = name.chars().filter(|c| !c.is_control()).take(100).collect();
    format!("agent:{clean}")
}

fn ok(v: Value) -> CallToolResult {
    CallToolResult::success(vec![Content::text(v.to_string())])
}

fn err(e: &Error) -> CallToolResult {
    CallToolResult::error(vec![Content::text(
        json!({ "error": { "code": e.code(), "message": e.to_string() } }).to_string(),
    )])
}

impl LetheMcp {
    pub fn new(path: PathBuf) -> lethe_engine::Result<Self> {
        let mut conn = store::open(&path)?;
        // Memories another program stored without a vector get one before the first recall.
        if let Some(e) = lethe_engine::embed::shared() {
            let never = std::sync::atomic::AtomicBool::new(false);
            lethe_engine::semantic::backfill(&mut conn, e, |_, _| {}, &never)?;
        }
        let buffer = meta::MetaBuffer::start(&path, Duration::from_millis(100))?;
        Ok(LetheMcp { conn: Arc::new(Mutex::new(conn)), buffer: Arc::new(buffer), tool_router: Self::tool_router() })
    }

    /// Runs blocking engine work off the async runtime and turns it into a tool result.
    async fn run(
        &self,
        peer: &Peer<RoleServer>,
        f: impl FnOnce(&mut store::Connection, &meta::MetaBuffer, &str, time::Instant) -> lethe_engine::Result<Value>
            + Send
            + 'static,
    ) -> ToolResult {
        let actor = actor_of(peer);
        let conn = Arc::clone(&self.conn);
        let buffer = Arc::clone(&self.buffer);
        let res = tokio::task::spawn_blocking(move || {
            let mut c = conn.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut c, &buffer, &actor, chrono::Utc::now())
        })
        .await;
        Ok(match res {
            Ok(Ok(v)) => ok(v),
            Ok(Err(e)) => err(&e),
            Err(join) => err(&Error::Io(std::io::Error::other(join.to_string()))),
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
        description = "Store a memory (or compare-and-swap update a procedural one with memory_id + expected_version). Trivial text and exact duplicates are not stored; the answer says why. Secrets are redacted before anything is written (or refused, per the secrets setting) and personal data tagged; the answer lists what was redacted (field, kind, offsets), never the value."
    )]
    async fn remember(&self, peer: Peer<RoleServer>, Parameters(a): Parameters<RememberArgs>) -> ToolResult {
        self.run(&peer, move |c, _, actor, now| {
            let tier: Tier = a.tier.parse()?;
            let m = NewMemory {
                tier,
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
                    let (u, r) = procedural::update_guarded(c, &id, v, &patch, actor, now)?;
                    Ok(json!({
                        "id": u.id, "stored": true, "version": u.version,
                        "redacted": r.redacted, "pii_tags": r.pii_tags,
                    }))
                }
                (None, None) => Ok(serde_json::to_value(lifecycle::remember(c, &m, actor, now)?)?),
                _ => Err(Error::invalid("memory_id and expected_version go together")),
            }
        })
        .await
    }

    #[tool(
        description = "Ranked search over active memories with a score breakdown per result (similarity, recency, scene, priority). Recall does not count as usage."
    )]
    async fn recall(&self, peer: Peer<RoleServer>, Parameters(a): Parameters<RecallArgs>) -> ToolResult {
        self.run(&peer, move |c, buffer, _, now| {
            let q = recall::RecallQuery {
                text: a.query,
                limit: a.limit.unwrap_or(10),
                tier: a.tier.as_deref().map(str::parse).transpose()?,
                session: a.session_id,
                project: a.project_id,
                workflow: a.workflow_name,
                tags: a.tags.unwrap_or_default(),
                pinned: None,
                weights: None,
            };
            let hits = recall::recall(c, &q, now)?;
            for h in &hits {
                buffer.record_hit(&h.id, h.score, now);
            }
            Ok(json!({ "results": hits, "recall_mode": lethe_engine::embed::status() }))
        })
        .await
    }

    #[tool(
        description = "The nearest active memories of a memory, each with its similarity (0-1) and kind (same words / same meaning): check before storing a near-copy, or supersede it."
    )]
    async fn similar(&self, peer: Peer<RoleServer>, Parameters(a): Parameters<SimilarArgs>) -> ToolResult {
        self.run(&peer, move |c, _, _, _| {
            let items = lethe_engine::semantic::similar(c, &a.memory_id, a.limit.unwrap_or(10).clamp(1, 100))?;
            Ok(json!({ "items": items }))
        })
        .await
    }

    #[tool(
        description = "Forget a memory: soft delete into the 30-day quarantine (restorable), or hard delete with hard = true and confirm = true."
    )]
    async fn forget(&self, peer: Peer<RoleServer>, Parameters(a): Parameters<ForgetArgs>) -> ToolResult {
        self.run(&peer, move |c, _, actor, now| {
            let ev = if a.hard.unwrap_or(false) {
                lifecycle::hard_delete(c, &a.id, a.confirm.unwrap_or(false), a.reason.as_deref(), actor, now)?
            } else {
                lifecycle::soft_delete(c, &a.id, a.reason.as_deref(), actor, now)?
            };
            Ok(serde_json::to_value(ev)?)
        })
        .await
    }

    #[tool(description = "Bring a memory back from quarantine exactly as it was.")]
    async fn restore(&self, peer: Peer<RoleServer>, Parameters(a): Parameters<IdArgs>) -> ToolResult {
        self.run(&peer, move |c, b, actor, now| {
            lifecycle::restore(c, &a.id, actor, now)?;
            Self::detail_json(c, b, &a.id, now)
        })
        .await
    }

    #[tool(description = "Pin a memory: pinned memories are never forgotten by the policy.")]
    async fn pin(&self, peer: Peer<RoleServer>, Parameters(a): Parameters<IdArgs>) -> ToolResult {
        self.run(&peer, move |c, b, actor, now| {
            lifecycle::pin(c, &a.id, actor, now)?;
            Self::detail_json(c, b, &a.id, now)
        })
        .await
    }

    #[tool(description = "Unpin a memory.")]
    async fn unpin(&self, peer: Peer<RoleServer>, Parameters(a): Parameters<IdArgs>) -> ToolResult {
        self.run(&peer, move |c, b, actor, now| {
            lifecycle::unpin(c, &a.id, actor, now)?;
            Self::detail_json(c, b, &a.id, now)
        })
        .await
    }

    #[tool(description = "Report whether a memory helped; helpful = true counts as a cite (usage).")]
    async fn feedback(&self, peer: Peer<RoleServer>, Parameters(a): Parameters<FeedbackArgs>) -> ToolResult {
        self.run(&peer, move |c, b, actor, now| {
            if a.helpful {
                lifecycle::cite(c, &a.memory_id, actor, now)?;
            } else {
                lifecycle::get(c, &a.memory_id)?;
            }
            let d = Self::detail_json(c, b, &a.memory_id, now)?;
            Ok(json!({ "memory_id": a.memory_id, "helpful": a.helpful, "cite_count": d["cite_count"] }))
        })
        .await
    }

    #[tool(description = "Read one memory with its explained ForgetScore; counts as a view.")]
    async fn get_memory(&self, peer: Peer<RoleServer>, Parameters(a): Parameters<IdArgs>) -> ToolResult {
        self.run(&peer, move |c, b, _, now| {
            lifecycle::view(c, &a.id, now)?;
            Self::detail_json(c, b, &a.id, now)
        })
        .await
    }

    #[tool(
        description = "Recall statistics of a memory (count, successes, failures, average confidence, last recalled), including hits not yet flushed."
    )]
    async fn get_meta_memory_stats(&self, peer: Peer<RoleServer>, Parameters(a): Parameters<MetaArgs>) -> ToolResult {
        self.run(&peer, move |c, b, _, _| {
            lifecycle::get(c, &a.memory_id)?;
            Ok(serde_json::to_value(b.read(c, &a.memory_id)?)?)
        })
        .await
    }

    #[tool(description = "Append a reflection note (a lesson from a failure) to a procedural memory.")]
    async fn add_reflection_note(
        &self,
        peer: Peer<RoleServer>,
        Parameters(a): Parameters<ReflectionArgs>,
    ) -> ToolResult {
        self.run(&peer, move |c, _, actor, now| {
            let mut note = json!({ "failure_type": a.failure_type, "failure_description": a.failure_description });
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
        description = "Replace a bulky tool observation by a one-line memo, keeping the exact bytes for restore_archive."
    )]
    async fn archive_observation(&self, peer: Peer<RoleServer>, Parameters(a): Parameters<ArchiveArgs>) -> ToolResult {
        self.run(&peer, move |c, _, actor, now| {
            Ok(serde_json::to_value(archive::archive(c, &a.memory_id, &a.memo, actor, now)?)?)
        })
        .await
    }

    #[tool(description = "Put back the exact archived bytes of an observation (hash verified).")]
    async fn restore_archive(
        &self,
        peer: Peer<RoleServer>,
        Parameters(a): Parameters<RestoreArchiveArgs>,
    ) -> ToolResult {
        self.run(&peer, move |c, _, actor, now| {
            Ok(serde_json::to_value(archive::unarchive(c, a.archive_no, actor, now)?)?)
        })
        .await
    }

    #[tool(
        description = "Counts per tier (active, quarantined, pinned), memories at risk, and the recall statistics summary."
    )]
    async fn memory_stats(&self, peer: Peer<RoleServer>, Parameters(_): Parameters<NoArgs>) -> ToolResult {
        self.run(&peer, move |c, _, _, now| {
            let s = Settings::load(c)?;
            let snap = forgetting::Snapshot::load(c)?;
            Ok(serde_json::to_value(forgetting::stats(c, &snap, &s, now)?)?)
        })
        .await
    }
}

#[tool_handler]
impl ServerHandler for LetheMcp {
    fn get_info(&self) -> ServerInfo {
        ServerInfo {
            instructions: Some(
                "Lethe long-term memory: remember, recall, forget (soft by default), restore, pin. Memories decay by tier; a person reviews them in the Lethe window."
                    .into(),
            ),
            capabilities: ServerCapabilities::builder().enable_tools().build(),
            server_info: Implementation { name: "lethe".into(), version: env!("CARGO_PKG_VERSION").into(), ..Implementation::from_build_env() },
            ..Default::default()
        }
    }
}

/// Serves MCP on stdin/stdout until the client closes the stream; buffered recall
/// statistics are flushed before returning.
pub fn serve(path: PathBuf) -> lethe_engine::Result<()> {
    let server = LetheMcp::new(path)?;
    let buffer = Arc::clone(&server.buffer);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| Error::Io(std::io::Error::other(e.to_string())))?;
        service.waiting().await.map_err(|e| Error::Io(std::io::Error::other(e.to_string())))?;
        Ok::<(), Error>(())
    })?;
    // Dropping the last handle flushes pending deltas and stops the flusher.
    drop(buffer);
    Ok(())
}
