// Generated from the Rust types by src-tauri/bindings.rs (ts-rs). Do not edit by hand.
// Regenerate: make types   (= LETHE_WRITE_TYPES=1 cargo test -p lethe-app --lib bindings)

/**
 * What the About box shows.
 */
export type About = { 
/**
 * The app's version (the workspace's, as `lethe --version` prints it).
 */
version: string, db_path: string | null, 
/**
 * The model recall runs on (`semantic + lexical (<fingerprint>)`), or why it is lexical only.
 */
recall: string, semantic: boolean, 
/**
 * The `lethe` executable the agent configurations name, when one was found.
 */
lethe: string | null, };

/**
 * What every command rejects with.
 */
export type ApiError = { code: ErrorCode, message: string, };

/**
 * One row of the combined audit log.
 */
export type AuditEvent = { id: string, 
/**
 * `forgetting` (memory_forgetting_event) or `action` (lethe_action).
 */
kind: string, memory_id: string | null, action: string, actor: string, reason: string | null, policy: string | null, forget_score: number | null, ttl_days: number | null, created_at: string, before: JsonValue | null, after: JsonValue | null, metadata: JsonValue | null, };

export type BatchReport = { scanned: number, soft_deleted: Array<string>, review: Array<string>, working_gate: Array<string>, purged: Array<string>, 
/**
 * Planned but left alone because a person or agent changed the memory (pinned it,
 * edited it, restored it…) while the batch ran; the next run judges them afresh.
 */
changed_since_plan: Array<string>, elapsed_ms: number, dry_run: boolean, 
/**
 * The run's id (`run_<uuid>`) when it quarantined anything: every soft event it wrote
 * names it, `lethe forget --undo RUN` restores them, and `lethe events` lists the run
 * (action `forget_run`). `None` for a dry run or a run that quarantined nothing.
 */
run_id?: string, 
/**
 * What goes (or went) to quarantine grouped by its reason, the largest group first, so
 * a person reviews the run by why: each group's reason and its memories' ids.
 */
by_reason: Array<ReasonGroup>, };

export type Breakdown = { 
/**
 * S, from its two parts below.
 */
similarity: number, 
/**
 * Stemmed BM25 relative to the best lexical candidate of this query.
 */
lexical: number, 
/**
 * Cosine relative to the best candidate's; None when recall is lexical only (no model).
 */
semantic: number | null, 
/**
 * The raw cosine of the query and the memory, when both have vectors.
 */
cosine: number | null, recency: number, scene: number, priority: number, };

/**
 * A connected group of near-duplicates.
 */
export type Cluster = { 
/**
 * The dominant member's id (also `members[0]`).
 */
dominant: string, 
/**
 * The largest similarity between two members.
 */
similarity: number, 
/**
 * How many memories the cluster has (members lists at most [`MEMBERS_SHOWN`]).
 */
size: number, 
/**
 * The dominant member first, then the others by similarity to it, most similar first.
 */
members: Array<ClusterMember>, };

/**
 * One memory of a cluster as the review shows it.
 */
export type ClusterMember = { id: string, type: Tier, 
/**
 * The text, on one line, at most [`TEXT_CHARS`] characters.
 */
text: string, created_at: string, importance: number, pinned: boolean, forget_score: number, would_forget: boolean, 
/**
 * Whether the dominance rule keeps this one (exactly one per cluster).
 */
dominant: boolean, 
/**
 * Similarity to the dominant member (its strongest link into the cluster when it has no
 * direct link to the dominant one), and that link's kind: "same words" or "same meaning".
 */
similarity: number, kind: string, 
/**
 * Why it is a duplicate of the dominant member: the values and words both hold (plain
 * text; `None` for the dominant member).
 */
evidence: Evidence | null, };

export type Clusters = { 
/**
 * Clusters in the file (the list holds at most the requested number).
 */
total: number, 
/**
 * The similarity a pair must be above (the setting `duplicate_reason_above`).
 */
threshold: number, 
/**
 * Most similar first; of equal ones, by the dominant member's id.
 */
items: Array<Cluster>, 
/**
 * Pairs that are alike but not the same memory, for a person to look at: never counted
 * in duplication D, never acted on by the policy.
 */
related: RelatedPairs, };

/**
 * Signed contributions; they add up to the ForgetScore.
 */
export type Components = { 
/**
 * `w_R · (1 − R)`.
 */
recency: number, 
/**
 * `w_U · (1 − U)`.
 */
usage: number, 
/**
 * `w_D · D`.
 */
duplication: number, 
/**
 * `−w_I · I`.
 */
importance: number, 
/**
 * `−w_P · P`.
 */
pinned: number, };

/**
 * The configurations of every host for the open database.
 */
export type ConnectInfo = { 
/**
 * The `lethe` executable (beside the app, else on PATH), checked to exist.
 */
lethe: string | null, 
/**
 * Why no `lethe` was found, when none was.
 */
lethe_error: string | null, db_path: string | null, hosts: Array<HostConfig>, };

/**
 * What `Test connection` found.
 */
export type ConnectionTest = { ok: boolean, 
/**
 * The command that was run, as a person would type it.
 */
command: string, 
/**
 * `name version` of the server from its initialize answer.
 */
server: string | null, protocol: string | null, tools: Array<string>, elapsed_ms: number, error: string | null, };

/**
 * Query words a result matched only through the text of one of its session neighbours.
 */
export type ContextMatch = { 
/**
 * The neighbour's memory id.
 */
neighbour: string, 
/**
 * The searched words its text holds and the result's own text does not.
 */
words: Array<string>, 
/**
 * E.g. "matched its neighbour mem_x: 'lake'".
 */
said: string, };

/**
 * Payload of `db://changed`: committed changes by any process.
 */
export type DbChanged = { data_version: number, 
/**
 * The memories touched; null when unknown or too many (re-fetch the visible page).
 */
ids: Array<string> | null, };

/**
 * The open database; `error` says why none could be opened.
 */
export type DbInfo = { path: string | null, exists: boolean, memento: boolean, schema_version: number, error: string | null, 
/**
 * True while the file is opening or its first scoring snapshot is loading; a
 * `db://opened` event follows when either finishes.
 */
loading: boolean, 
/**
 * Grows with every change of this information (each open, and each of its steps), so
 * the window can ignore an answer older than what it already shows: `db_info` and
 * `db://opened` travel separately and may arrive in either order.
 */
revision: number, 
/**
 * The file can be read but not written (its permissions, a read-only mount): the window
 * shows it read-only and offers to open a copy.
 */
read_only: boolean, 
/**
 * The newest thing the window should say once (see `state::Notice`).
 */
notice: Notice | null, };

/**
 * Payload of `db://status`.
 */
export type DbStatus = { state: LiveState, message: string, };

/**
 * Why a candidate is not among the results.
 */
export type DeclineKind = "ranked_out" | "excluded";

/**
 * A memory recall did not return, with the reason a person can read.
 */
export type Declined = { id: string, type: Tier, preview: string, kind: DeclineKind, 
/**
 * Its score and breakdown (ranked out only: an excluded memory is not scored).
 */
score: number | null, breakdown: Breakdown | null, age_days: number | null, 
/**
 * The weighted term that fell furthest short of the last result's: similarity, recency,
 * scene or priority (ranked out only).
 */
component: string | null, 
/**
 * E.g. "recency 0.02 — 14 months old", "in quarantine", "superseded by mem_…".
 */
reason: string, 
/**
 * The memory that supersedes it, when that is why it is excluded.
 */
superseded_by: string | null, };

export type DemoCounts = { stored: number, pinned: number, procedures: number, reflection_notes: number, quarantined: number, skipped: number, 
/**
 * Recalls by the demo agents, in the recall log and the recall statistics.
 */
recalls: number, };

export type DialogueLint = { score: number, flagged: boolean, 
/**
 * In a fixed order: speaker prefix, turn timestamp, greeting, first person, second
 * person, question, exclamation, quoted turn.
 */
reasons: Array<string>, };

/**
 * One difference between two memories: what the first says and what the second says in its
 * place (empty when it says nothing there), and of what sort.
 */
export type Difference = { 
/**
 * "value", "polarity" or "wording".
 */
what: string, 
/**
 * What this memory says there (may be empty).
 */
this: string, 
/**
 * What the other says there (may be empty).
 */
other: string, };

/**
 * What "keep both" did.
 */
export type Dismissal = { 
/**
 * The pair, ordered (`a < b`).
 */
a: string, b: string, 
/**
 * False when the pair was already dismissed (nothing was written).
 */
dismissed: boolean, actor: string, at: string, };

/**
 * The closed set of error codes the window tells apart.
 */
export type ErrorCode = "invalid_input" | "conflict" | "not_found" | "confirmation_required" | "forbidden" | "db_unavailable" | "internal";

/**
 * Why two memories are judged as they are, in plain text.
 */
export type Evidence = { 
/**
 * Values and content words both hold (at most [`EVIDENCE_WORDS`]).
 */
matching: Array<string>, 
/**
 * What differs.
 */
differing: Array<Difference>, 
/**
 * Both in one line for people: "same: a, b; differs: 5 → 3".
 */
summary: string, };

/**
 * A result of [`explain`]: the hit as [`recall`] returns it, and its age.
 */
export type ExplainedHit = { 
/**
 * Days from `created_at` to `now`; None when the stored time is unreadable.
 */
age_days: number | null, 
/**
 * The part of `breakdown.lexical` the memory's own text gives: what its BM25 would be
 * without its session neighbours' text, relative to the same best candidate.
 */
lexical_own: number, 
/**
 * The part its session neighbours' text adds (`lexical − lexical_own`).
 */
lexical_context: number, 
/**
 * The query words it matched only through a session neighbour, per neighbour.
 */
context_matches: Array<ContextMatch>, id: string, type: Tier, content: string, score: number, bm25: number, breakdown: Breakdown, 
/**
 * A procedure's goal and steps (its current version), so an agent reads what to do.
 */
task_goal?: string, steps?: Array<string>, 
/**
 * The query words the memory matched only through a session neighbour's text (the
 * memories of its session written just before and after it), per neighbour; absent when
 * none. Filled by [`mark_matched_through`] for callers that show it beside plain results
 * (MCP); `explain` says the same as `context_matches`.
 */
matched_through?: Array<ContextMatch>, };

/**
 * The kinds of failure a reflection note records.
 */
export type FailureType = "tool_error" | "user_feedback" | "metric_failure";

/**
 * The five features of the ForgetScore, each in [0, 1] (docs/scores.md).
 */
export type Features = { 
/**
 * R: Ebbinghaus recency, `exp(-ln2 · age / half-life)`.
 */
recency: number, 
/**
 * U: usage, the larger of recent access and log-scale reinforcement.
 */
usage: number, 
/**
 * D: similarity to the dominating duplicate, 0 when it has none.
 */
duplication: number, 
/**
 * I: importance.
 */
importance: number, 
/**
 * P: 1 when pinned.
 */
pinned: number, };

/**
 * One value a filter offers, with the words a person reads and how many memories carry it.
 */
export type FilterValue = { value: string, label: string, count: number, };

/**
 * Payload of `forget://progress` while `run_forget` runs.
 */
export type ForgetProgress = { done: number, total: number, };

export type ForgettingEvent = { id: string, memory_id: string, action: string, reason: string | null, policy: string | null, forget_score: number | null, ttl_days: number | null, created_at: string, metadata: JsonValue | null, };

/**
 * Each tier's half-life in days: the age at which its recency is one half.
 */
export type HalfLives = { 
/**
 * Days, working memories.
 */
working: number, 
/**
 * Days, episodic memories.
 */
episodic: number, 
/**
 * Days, procedural memories.
 */
procedural: number, 
/**
 * Days, semantic memories.
 */
semantic: number, };

export type Health = { lists: Array<HealthList>, };

/**
 * One memory of a health list.
 */
export type HealthItem = { id: string, type: Tier, preview: string, created_at: string, age_days: number, importance: number, pinned: boolean, forget_score: number, would_forget: boolean, recall_count: number, avg_confidence: number | null, 
/**
 * Days until the ForgetScore reaches the threshold (`forget_soon` only).
 */
crosses_in_days: number | null, };

export type HealthList = { 
/**
 * `never_recalled`, `forget_soon`, `pinned_never_recalled` or `low_confidence`.
 */
name: string, 
/**
 * How many memories the list has (items holds at most [`LIST_LIMIT`]).
 */
total: number, items: Array<HealthItem>, };

export type Hit = { id: string, type: Tier, content: string, score: number, bm25: number, breakdown: Breakdown, 
/**
 * A procedure's goal and steps (its current version), so an agent reads what to do.
 */
task_goal?: string, steps?: Array<string>, 
/**
 * The query words the memory matched only through a session neighbour's text (the
 * memories of its session written just before and after it), per neighbour; absent when
 * none. Filled by [`mark_matched_through`] for callers that show it beside plain results
 * (MCP); `explain` says the same as `context_matches`.
 */
matched_through?: Array<ContextMatch>, };

/**
 * One host's configuration, ready to paste.
 */
export type HostConfig = { 
/**
 * `claude-code`, `claude-desktop`, `cursor` or `generic`.
 */
host: string, label: string, 
/**
 * Where the text goes, for a person.
 */
hint: string, 
/**
 * `command` (a shell command to run) or `json` (a configuration file's content).
 */
kind: string, text: string, };

export type Items<T> = { items: Array<T>, };

export type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]: JsonValue } | null;

/**
 * The filters of `list_memories`; an empty `tier`, `session` or `project` means "any".
 */
export type ListArgs = { tier?: Tier, deleted?: boolean, pinned?: boolean, sort?: SortBy, minScore?: number, maxScore?: number, session?: string, project?: string, 
/**
 * Only memories whose text holds a `[REDACTED:<kind>]` placeholder.
 */
redacted?: boolean, 
/**
 * Only semantic and procedural memories that read like dialogue.
 */
needsExtraction?: boolean, 
/**
 * Only memories written first by this actor (`agent:claude-code`, `user`).
 */
writtenBy?: string, 
/**
 * Only memories with this source (`claude-code`, `tool`…).
 */
source?: string, 
/**
 * Only the memories of this Overview health list (`never_recalled`, `forget_soon`,
 * `pinned_never_recalled`, `low_confidence`), the other filters applying within it.
 */
health?: string, limit?: number, offset?: number, now?: string, };

/**
 * Whether the database file (or team server) is there.
 */
export type LiveState = "live" | "missing" | "reconnecting" | "error";

/**
 * What a snapshot load is doing, for a progress bar: reading the rows (`done` of `total`
 * rowids), or searching neighbours for the memories that have none stored.
 */
export type LoadStage = "reading" | "similar";

/**
 * One returned memory of a logged recall.
 */
export type LoggedHit = { id: string, score: number, };

/**
 * A stored memory: every column of `memory_item` Lethe reads.
 */
export type Memory = { 
/**
 * `mem_` and a UUID.
 */
id: string, 
/**
 * Its tier (`type` in JSON and in the table).
 */
type: Tier, 
/**
 * The text (redacted of secrets before it was stored).
 */
content: string, 
/**
 * How much it matters, 0-1.
 */
importance: number, 
/**
 * Who may recall it: `private`, `team` or `public`.
 */
privacy_scope: string, 
/**
 * When it was written (ISO-8601 UTC).
 */
created_at: string, 
/**
 * When it was last read or recalled.
 */
last_accessed: string | null, 
/**
 * Pinned memories are never forgotten.
 */
pinned: boolean, 
/**
 * Its tags.
 */
tags: Array<string>, 
/**
 * What wrote it (a tool, an import).
 */
source: string | null, 
/**
 * How often it was shown.
 */
view_count: number, 
/**
 * How often an agent cited it as useful.
 */
cite_count: number, 
/**
 * How often it was edited.
 */
edit_count: number, 
/**
 * A procedure's goal.
 */
task_goal: string | null, 
/**
 * A procedure's steps (JSON).
 */
steps: JsonValue | null, 
/**
 * A procedure's reflection notes (JSON), oldest first.
 */
reflection_notes: JsonValue | null, 
/**
 * A procedure's workflow name.
 */
workflow_name: string | null, 
/**
 * A procedure's skill name.
 */
skill_name: string | null, 
/**
 * When a procedure applies (JSON).
 */
trigger_conditions: JsonValue | null, 
/**
 * Its version: compare-and-swap edits name the version they change.
 */
version: number, 
/**
 * The agent or person it belongs to.
 */
owner_id: string | null, 
/**
 * The working session it was written in.
 */
session_id: string | null, 
/**
 * The project it belongs to.
 */
project_id: string | null, 
/**
 * Soft-deleted (quarantined): restorable until purged.
 */
is_deleted: boolean, 
/**
 * When it was soft-deleted.
 */
deleted_at: string | null, };

/**
 * Everything a person needs to judge one memory: its fields, its explained ForgetScore,
 * links, archive state and recall statistics.
 */
export type MemoryDetail = { 
/**
 * The memories this one replaced.
 */
supersedes: Array<string>, 
/**
 * The memories that replaced this one.
 */
superseded_by: Array<string>, 
/**
 * The archive holding its original, when it is archived.
 */
archive_no: number | null, 
/**
 * Why the policy never forgets it (pinned, a rule), when it does not.
 */
never_forgettable_why: string | null, 
/**
 * Its recall statistics.
 */
meta: MetaStats, 
/**
 * The reads-like-dialogue lint, for semantic and procedural memories.
 */
dialogue: DialogueLint | null, 
/**
 * The task kind when the memory is a task log (an ended session's working memory).
 */
task_kind: string | null, 
/**
 * Why it is a duplicate of `duplicate_of`: the values and words both hold (plain text).
 */
duplicate_evidence: Evidence | null, 
/**
 * `mem_` and a UUID.
 */
id: string, 
/**
 * Its tier (`type` in JSON and in the table).
 */
type: Tier, 
/**
 * The text (redacted of secrets before it was stored).
 */
content: string, 
/**
 * How much it matters, 0-1.
 */
importance: number, 
/**
 * Who may recall it: `private`, `team` or `public`.
 */
privacy_scope: string, 
/**
 * When it was written (ISO-8601 UTC).
 */
created_at: string, 
/**
 * When it was last read or recalled.
 */
last_accessed: string | null, 
/**
 * Pinned memories are never forgotten.
 */
pinned: boolean, 
/**
 * Its tags.
 */
tags: Array<string>, 
/**
 * What wrote it (a tool, an import).
 */
source: string | null, 
/**
 * How often it was shown.
 */
view_count: number, 
/**
 * How often an agent cited it as useful.
 */
cite_count: number, 
/**
 * How often it was edited.
 */
edit_count: number, 
/**
 * A procedure's goal.
 */
task_goal: string | null, 
/**
 * A procedure's steps (JSON).
 */
steps: JsonValue | null, 
/**
 * A procedure's reflection notes (JSON), oldest first.
 */
reflection_notes: JsonValue | null, 
/**
 * A procedure's workflow name.
 */
workflow_name: string | null, 
/**
 * A procedure's skill name.
 */
skill_name: string | null, 
/**
 * When a procedure applies (JSON).
 */
trigger_conditions: JsonValue | null, 
/**
 * Its version: compare-and-swap edits name the version they change.
 */
version: number, 
/**
 * The agent or person it belongs to.
 */
owner_id: string | null, 
/**
 * The working session it was written in.
 */
session_id: string | null, 
/**
 * The project it belongs to.
 */
project_id: string | null, 
/**
 * Soft-deleted (quarantined): restorable until purged.
 */
is_deleted: boolean, 
/**
 * When it was soft-deleted.
 */
deleted_at: string | null, 
/**
 * The features.
 */
features: Features, 
/**
 * Their weighted contributions.
 */
components: Components, 
/**
 * The score: the contributions' sum.
 */
forget_score: number, 
/**
 * The policy's threshold: at or above it the batch quarantines.
 */
threshold: number, 
/**
 * The reasons in words, largest contribution first.
 */
reasons: Array<string>, 
/**
 * Whether the score reaches the threshold.
 */
would_forget: boolean, 
/**
 * Whether it can never reach it (pinned, or important enough).
 */
never_forgettable: boolean, 
/**
 * The score this memory tends to if it is never used again.
 */
asymptote: number, 
/**
 * When it reaches the threshold if never used again (none if never).
 */
projected_forget_at: string | null, 
/**
 * The memory that dominates it, when it has duplication.
 */
duplicate_of: string | null, 
/**
 * "same words" or "same meaning", with `duplicate_of`.
 */
duplicate_kind: string | null, };

export type MemoryRow = { id: string, type: Tier, preview: string, importance: number, pinned: boolean, created_at: string, last_accessed: string | null, is_deleted: boolean, deleted_at: string | null, forget_score: number, would_forget: boolean, session_id: string | null, project_id: string | null, workflow_name: string | null, tags: Array<string>, 
/**
 * The text holds a `[REDACTED:<kind>]` placeholder (the window's "redacted" badge).
 */
redacted: boolean, 
/**
 * A semantic or procedural memory that reads like dialogue (the lint flags it).
 */
needs_extraction: boolean, 
/**
 * Who wrote it first: the actor of its `remember` in the audit (`agent:<name>` or the
 * person); `None` when the audit does not say (imported, or written by another program).
 */
written_by: string | null, 
/**
 * When it was last used: the later of its last view or cite and its last recall.
 */
last_used: string | null, };

export type MetaStats = { memory_id: string, recall_count: number, success_count: number, failure_count: number, avg_confidence: number | null, last_recalled_at: string | null, };

export type MetaSummary = { 
/**
 * Memories recalled at least once.
 */
recalled_memories: number, 
/**
 * Recall hits.
 */
total_recalls: number, 
/**
 * The mean confidence of those hits; none before the first.
 */
avg_confidence: number | null, };

/**
 * A [`Period`] as `recall --explain` and the window show it.
 */
export type NamedPeriod = { said: string, 
/**
 * ISO-8601, inclusive.
 */
from: string, 
/**
 * ISO-8601, exclusive.
 */
until: string, };

/**
 * Something the window should say once that the person did not ask for: why the file was
 * opened again, why the page was reloaded. `seq` grows with each, so the page shows each
 * one once, also after it was itself reloaded.
 */
export type Notice = { seq: number, text: string, };

export type Page = { total: number, items: Array<MemoryRow>, };

/**
 * The setting `pii`.
 */
export type PiiMode = "tag" | "redact" | "allow";

/**
 * A workflow (or, without one, a skill) and how many matching procedures it holds; `name` is
 * none for the procedures that have neither.
 */
export type ProcedureGroup = { name: string | null, count: number, };

/**
 * A page of the active procedures, grouped: the matching procedures are numbered in group
 * order (`groups`, by name, the unnamed group last), so a list can place every row and every
 * group heading before it has read them.
 */
export type ProcedurePage = { total: number, matching: number, groups: Array<ProcedureGroup>, offset: number, 
/**
 * The matching procedures from `offset`, whole.
 */
items: Array<Memory>, };

/**
 * A change to a procedure; a missing field stays as it is. The engine rejects `steps` that
 * are not a non-empty list of strings and `triggerConditions` that are not an object.
 */
export type ProcedurePatchArgs = { content?: string, taskGoal?: string, steps?: Array<string>, triggerConditions?: { [key in string]: JsonValue }, workflowName?: string, skillName?: string, };

/**
 * What a person asked to see of the procedures.
 */
export type ProcedureQuery = { 
/**
 * Every word must occur (case-insensitive) in the goal, a step, the names, the text or the id.
 */
search?: string, offset?: number, 
/**
 * How many procedures from `offset` (default 100).
 */
limit?: number, };

export type QuarantineItem = { id: string, type: Tier, preview: string, reason: string | null, forget_score: number | null, deleted_at: string | null, days_left: number, 
/**
 * Who moved it to quarantine, from its newest `soft` event: `policy` (the batch), `user`
 * or `agent:<name>`; none when no event says (another program deleted it).
 */
deleted_by: string | null, 
/**
 * The event's policy: `threshold`, `working-gate`, `manual`, `agent`…
 */
policy: string | null, };

/**
 * What the person asked to see.
 */
export type QuarantineQuery = { 
/**
 * Every word must occur (case-insensitive) in the text, the reason, who deleted it or the id.
 */
search?: string, tier?: Tier, 
/**
 * A value of [`QuarantineView::deleted_by`].
 */
deletedBy?: string, 
/**
 * A value of [`QuarantineView::reasons`].
 */
reason?: string, sort?: QuarantineSort, offset?: number, 
/**
 * How many rows from `offset` (default 100).
 */
limit?: number, 
/**
 * Also answer the ids of every matching memory, in order ("select all matching").
 */
allIds?: boolean, };

/**
 * The orders a person can sort the quarantine by; ties keep the newest deletion first.
 */
export type QuarantineSort = "deleted-desc" | "deleted-asc" | "days-left" | "score" | "by" | "content";

/**
 * A page of the quarantine.
 */
export type QuarantineView = { 
/**
 * Every quarantined memory.
 */
total: number, 
/**
 * Those the search and filters keep.
 */
matching: number, offset: number, 
/**
 * The matching rows from `offset`, in the asked order.
 */
items: Array<QuarantineItem>, 
/**
 * Who deleted them, over the whole quarantine, most first.
 */
deleted_by: Array<FilterValue>, 
/**
 * The parts of the reasons, over the whole quarantine, most first.
 */
reasons: Array<FilterValue>, 
/**
 * Every matching id in order, when `all_ids` was asked; else empty.
 */
ids: Array<string>, };

/**
 * The memories a run quarantines for one reason.
 */
export type ReasonGroup = { 
/**
 * The reasons as the soft event records them ("old, unused, low importance, not pinned",
 * "working gate: older than 48 h").
 */
reason: string, ids: Array<string>, };

/**
 * What a recall answers, whichever interface asked (the CLI prints it, MCP returns it, the
 * window receives it): the results, how recall ran, and what of the query it read.
 */
export type RecallAnswer = { results: Array<Hit>, 
/**
 * Per result, in order: whether it is a weak match (its similarity below
 * [`WEAK_SIMILARITY_SHARE`] of the best), which the window shows only on request.
 */
weak: Array<boolean>, 
/**
 * "semantic + lexical (model fingerprint)" or "lexical recall only: why".
 */
recall_mode: string, 
/**
 * The words the lexical search looked for (function words left out unless the query has
 * nothing else).
 */
searched_words: Array<string>, 
/**
 * The periods the query names (absent when none): memories dated inside match the scene,
 * and recency counts from the period.
 */
periods?: Array<NamedPeriod>, 
/**
 * Words not searched: the query had more than [`MAX_QUERY_WORDS`] distinct words.
 */
dropped_words?: Array<string>, 
/**
 * A sentence for a person when part of the query was not searched.
 */
notice?: string, };

/**
 * The caller's context of a recall, as it asked.
 */
export type RecallContext = { session: string | null, project: string | null, workflow: string | null, tags: Array<string>, task_kind: string | null, };

/**
 * The Recall view's query: what an agent would pass, plus the weights the person tries.
 */
export type RecallExplainArgs = { query: string, limit?: number, session?: string, project?: string, workflow?: string, tags?: Array<string>, weights?: RecallWeights, now?: string, };

/**
 * `recall --explain`'s answer and the window's Recall view's: [`explain`]'s, how recall finds
 * memories (`recall_mode`), and the words it did not search, as [`Answer`] says them.
 */
export type RecallExplained = { 
/**
 * "semantic + lexical (model)" or "lexical recall only: why".
 */
recall_mode: string, results: Array<ExplainedHit>, declined: Array<Declined>, weights: RecallWeights, 
/**
 * The periods the query names (see [`named_periods`]); empty when it names none.
 */
periods: Array<NamedPeriod>, 
/**
 * The words the lexical search looked for: the query's, function words left out (unless
 * it has no other), at most [`MAX_QUERY_WORDS`].
 */
searched_words: Array<string>, 
/**
 * Words not searched: the query had more than [`MAX_QUERY_WORDS`] distinct words.
 */
dropped_words?: Array<string>, 
/**
 * A sentence for a person when part of the query was not searched.
 */
notice?: string, };

/**
 * A logged recall.
 */
export type RecallLogEntry = { id: number, actor: string, at: string, query: string, context: RecallContext, results: Array<LoggedHit>, };

/**
 * A page of the recall log and every actor in it (for the filter).
 */
export type RecallLogPage = { items: Array<RecallLogEntry>, actors: Array<string>, };

/**
 * Recall's weights: `score = w_sim·S + w_rec·R + w_scene·C + w_pri·Pr` (docs/recall.md).
 */
export type RecallWeights = { 
/**
 * On S, the text match (lexical and semantic).
 */
similarity: number, 
/**
 * On R, recency.
 */
recency: number, 
/**
 * On C, scene fit (the share of the caller's context a memory matches).
 */
scene: number, 
/**
 * On Pr, priority (importance, pinned).
 */
priority: number, };

/**
 * A lesson appended to a procedural memory after a failure.
 */
export type ReflectionNote = { 
/**
 * What kind of failure.
 */
failure_type: FailureType, 
/**
 * What went wrong.
 */
failure_description: string, 
/**
 * What was learned.
 */
lessons_learned?: string | null, 
/**
 * What to change in the procedure.
 */
suggested_improvements?: string | null, 
/**
 * When it was noted (stamped by Lethe).
 */
timestamp?: string | null, 
/**
 * Who noted it (stamped by Lethe).
 */
actor?: string | null, };

/**
 * One refused attempt of an agent on a person's pin.
 */
export type RefusedAttempt = { 
/**
 * The audit row's id (`act_<id>` in `lethe events`).
 */
id: number, memory_id: string | null, actor: string, 
/**
 * `unpin`, `quarantine`, `delete for ever`, `lower the importance of`, `supersede`.
 */
attempted: string, 
/**
 * The memory's text as the attempt found it (120 characters at most).
 */
content_preview: string, at: string, };

/**
 * One memory of a related pair.
 */
export type RelatedMember = { id: string, type: Tier, 
/**
 * The text, on one line, at most [`TEXT_CHARS`] characters.
 */
text: string, created_at: string, importance: number, pinned: boolean, 
/**
 * Its ForgetScore at the review's instant: no part of it comes from the related pair.
 */
forget_score: number, would_forget: boolean, };

/**
 * Two memories close in meaning or words that the judgment does not call the same memory:
 * a possible update (the same statement with another value) or merely related.
 */
export type RelatedPair = { 
/**
 * The one written first.
 */
older: RelatedMember, newer: RelatedMember, 
/**
 * "possible update" or "related".
 */
kind: string, 
/**
 * How close the two are (the judgment's closeness).
 */
closeness: number, 
/**
 * What both say and what differs (older → newer), in plain text.
 */
evidence: Evidence, };

/**
 * The "related, not duplicates" list.
 */
export type RelatedPairs = { 
/**
 * Memories compared (the most recently written active ones, at most [`RELATED_WINDOW`]).
 */
scanned: number, 
/**
 * Pairs found among them (the list holds at most [`RELATED_SHOWN`]).
 */
total: number, 
/**
 * The closeness a pair must reach.
 */
threshold: number, 
/**
 * Which judgment made them (with the sentence model, or words and values only).
 */
judgment: string, 
/**
 * Possible updates first, then related; closest first within each.
 */
items: Array<RelatedPair>, };

/**
 * Payload of `scoring://progress` while the scoring snapshot loads (opening a file, after
 * many changes, before a dry run or what-if): every few thousand rows read, then once per
 * neighbour search.
 */
export type ScoringProgress = { stage: LoadStage, done: number, total: number, };

/**
 * The setting `secrets`.
 */
export type SecretsMode = "redact" | "refuse" | "allow";

/**
 * One memory as the Sessions view lists it.
 */
export type SessionMemory = { id: string, type: Tier, preview: string, created_at: string, is_deleted: boolean, 
/**
 * `task_log`, `rule`, or `written` (anything else the session wrote).
 */
role: string, };

/**
 * One session: what it wrote, what became task log, which rules it produced.
 */
export type SessionSummary = { session_id: string, task_kind: string | null, ended_at: string | null, first_at: string, last_at: string, memories: Array<SessionMemory>, };

export type SessionsOverview = { sessions: Array<SessionSummary>, task_kinds: Array<TaskKindGroup>, };

/**
 * The store's policy, as people set it (`lethe settings`, the window's Settings view).
 */
export type Settings = { 
/**
 * Each tier's half-life in days.
 */
half_life_days: HalfLives, 
/**
 * The ForgetScore's weights.
 */
weights: Weights, 
/**
 * The ForgetScore at or above which the batch quarantines.
 */
threshold: number, 
/**
 * Lower edge of the review band; its upper edge is the threshold.
 */
review_band_low: number, 
/**
 * Days a quarantined memory stays restorable before the batch purges it.
 */
quarantine_days: number, 
/**
 * `A = exp(-days_since_last_accessed / access_decay_days)`.
 */
access_decay_days: number, 
/**
 * Working memories older than this many hours leave the working window.
 */
working_window_hours: number, 
/**
 * Working memories past this many in a session leave the working window.
 */
working_max_turns: number, 
/**
 * The largest content a memory may have, in bytes.
 */
max_content_bytes: number, 
/**
 * Texts too trivial to store ("ok", "thanks"): `remember` skips them.
 */
trivial_phrases: Array<string>, 
/**
 * Recall's weights.
 */
recall_weights: RecallWeights, 
/**
 * Similarity above which a memory counts as a duplicate in the reasons ("duplicate of").
 */
duplicate_reason_above: number, 
/**
 * Secrets (API keys, tokens, private keys, passwords) in what is written: `redact`
 * (replaced by `[REDACTED:<kind>]`), `refuse` (the write fails) or `allow`.
 */
secrets: SecretsMode, 
/**
 * Personal data (e-mail, phone, card numbers, IBANs): `tag` (`pii:<kind>` tags),
 * `redact` or `allow`.
 */
pii: PiiMode, 
/**
 * Half-life of task logs (an ended session's working memories) in recall.
 */
task_log_half_life_days: number, 
/**
 * How many agent recalls the recall log keeps (oldest dropped); 0 keeps none.
 */
recall_log_max_rows: number, 
/**
 * The person-only operations (settings, hard delete) in the window alone: the CLI refuses
 * them with `forbidden` even on a terminal, for people whose agents have a shell (a
 * program with a pseudo-terminal can type what a person types).
 */
person_ops_window_only: boolean, };

/**
 * A neighbour of a memory as its detail lists it.
 */
export type SimilarMemory = { id: string, type: Tier, preview: string, similarity: number, 
/**
 * "duplicate", "possible update" or "related".
 */
kind: string, 
/**
 * Why: the values and words both hold and those that differ (plain text).
 */
evidence: Evidence, };

/**
 * Sort orders of [`list`].
 */
export type SortBy = "created" | "importance" | "score" | "written_by" | "last_used";

export type Stats = { 
/**
 * The counts of each tier.
 */
tiers: { [key in string]: TierCounts }, 
/**
 * Active memories.
 */
total_active: number, 
/**
 * Memories in quarantine.
 */
total_quarantined: number, 
/**
 * Active memories at or above the lower edge of the review band.
 */
at_risk: number, 
/**
 * Active memories the batch would forget now.
 */
would_forget: number, 
/**
 * How many memories the next forget run would quarantine: those at or above the
 * threshold and the working-memory gate's (what a dry run would list now).
 */
next_run: number, 
/**
 * The recall statistics' summary.
 */
meta: MetaSummary, };

/**
 * What "supersede" did: `old` (the older of the two) is superseded by `new`.
 */
export type Superseded = { old: string, new: string, 
/**
 * False when `new` already superseded `old` (nothing was written).
 */
superseded: boolean, };

/**
 * A task kind and its task logs, newest first.
 */
export type TaskKindGroup = { task_kind: string, entries: Array<TaskLogEntry>, };

/**
 * One task log in its kind's history.
 */
export type TaskLogEntry = { id: string, session_id: string, ended_at: string, preview: string, is_deleted: boolean, };

export type Theme = "light" | "dark";

/**
 * A memory's tier: what kind of memory it is, which sets how fast it decays (its half-life)
 * and how the policy treats it (docs/scores.md).
 */
export type Tier = "working" | "episodic" | "procedural" | "semantic";

export type TierCounts = { 
/**
 * Active memories.
 */
active: number, 
/**
 * Memories in quarantine.
 */
quarantined: number, 
/**
 * Pinned active memories.
 */
pinned: number, };

/**
 * One memory of an undo: its id, and its text's first words while it still exists.
 */
export type UndoItem = { id: string, preview: string | null, 
/**
 * Why the run quarantined it (the soft event's reason).
 */
reason: string | null, };

/**
 * What an undo did, each memory in one list.
 */
export type UndoReport = { run_id: string, 
/**
 * Back from quarantine, exactly as they were.
 */
restored: Array<UndoItem>, 
/**
 * Already active again (restored by a person or an agent since the run).
 */
already_restored: Array<UndoItem>, 
/**
 * In quarantine again by a later decision (another run, a person or an agent): left there.
 */
quarantined_again: Array<UndoItem>, 
/**
 * Gone for ever (purged after the quarantine days, or deleted by a person): only the
 * audit's facts remain, so nothing can come back.
 */
deleted_for_ever: Array<UndoItem>, };

/**
 * Payload of `vectors://progress` while the window back-fills the meaning vectors of a file
 * written by memento, an older Lethe or another model: after each chunk, and once with
 * `finished` (also when it stopped on an error, then `error` says why).
 */
export type VectorsProgress = { 
/**
 * The file being back-filled (the window ignores another file's progress).
 */
path: string, done: number, total: number, finished: boolean, error: string | null, };

export type Version = { version: number, at: string, actor: string, content: string, task_goal: string | null, steps: JsonValue | null, trigger_conditions: JsonValue | null, workflow_name: string | null, skill_name: string | null, current: boolean, };

/**
 * The ForgetScore's weights (docs/scores.md).
 */
export type Weights = { 
/**
 * `w_R`, on `1 − recency`.
 */
recency: number, 
/**
 * `w_U`, on `1 − usage`.
 */
usage: number, 
/**
 * `w_D`, on duplication.
 */
duplication: number, 
/**
 * `w_I`, subtracted times importance.
 */
importance: number, 
/**
 * `w_P`, subtracted when pinned.
 */
pinned: number, };

export type WhatIf = { current: WhatIfSide, proposed: WhatIfSide, 
/**
 * Forgotten under the proposal but not now.
 */
newly_forgotten: Array<string>, 
/**
 * Forgotten now but spared by the proposal.
 */
spared: Array<string>, };

export type WhatIfSide = { count: number, ids: Array<string>, };
