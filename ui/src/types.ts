// Transport shapes of docs/IPC.md. Field names are exactly what the Rust shell sends
// (snake_case), so nothing is renamed between the engine and the screen.

export type Tier = 'working' | 'episodic' | 'semantic' | 'procedural';
export const TIERS: Tier[] = ['working', 'episodic', 'semantic', 'procedural'];

export type ErrorCode =
  | 'invalid_input'
  | 'conflict'
  | 'not_found'
  | 'confirmation_required'
  | 'db_unavailable'
  | 'internal';

export interface ApiError {
  code: ErrorCode;
  message: string;
  /** Optional, not in IPC.md: used for conflicts if the shell ever sends it. */
  current_version?: number;
}

export interface DbInfo {
  path: string | null;
  exists: boolean;
  memento: boolean;
  schema_version: number | null;
  error: string | null;
}

export interface TierCounts {
  active: number;
  quarantined: number;
  pinned: number;
}

export interface Stats {
  tiers: Record<Tier, TierCounts>;
  total_active: number;
  total_quarantined: number;
  at_risk: number;
  /** Optional, beyond IPC.md: active memories at or above the threshold now. */
  would_forget?: number;
  meta: { recalled_memories: number; total_recalls: number; avg_confidence: number | null };
}

export type SortKey = 'score' | 'created' | 'importance';

export interface ListQuery {
  tier?: Tier;
  deleted?: boolean;
  pinned?: boolean;
  sort?: SortKey;
  minScore?: number;
  maxScore?: number;
  session?: string;
  project?: string;
  limit: number;
  offset: number;
  now?: string;
}

export interface MemoryRow {
  id: string;
  type: Tier;
  preview: string;
  importance: number;
  pinned: boolean;
  created_at: string;
  last_accessed: string | null;
  is_deleted: boolean;
  deleted_at: string | null;
  forget_score: number;
  would_forget: boolean;
  session_id: string | null;
  project_id: string | null;
  workflow_name: string | null;
  tags: string[];
}

export interface Page<T> {
  total: number;
  items: T[];
}

/** Per-call recall weight override (IPC.md says only `weights?`; names follow the engine). */
export interface RecallWeights {
  similarity: number;
  recency: number;
  scene: number;
  priority: number;
}

export interface RecallResult {
  id: string;
  content: string;
  score: number;
  breakdown: { similarity: number; recency: number; scene: number; priority: number };
}

export interface ScoreParts {
  recency: number;
  usage: number;
  duplication: number;
  importance: number;
  pinned: number;
}
export const SCORE_PARTS: (keyof ScoreParts)[] = [
  'recency',
  'usage',
  'duplication',
  'importance',
  'pinned',
];

export type FailureType = 'tool_error' | 'user_feedback' | 'metric_failure' | string;

export interface ReflectionNote {
  failure_type: FailureType;
  failure_description: string;
  lessons_learned?: string | null;
  suggested_improvements?: string | null;
  timestamp: string;
  actor?: string | null;
}

export interface MetaStats {
  recall_count: number;
  success_count: number;
  failure_count: number;
  avg_confidence: number | null;
  last_recalled_at: string | null;
}

export interface MemoryDetail {
  id: string;
  type: Tier;
  content: string;
  importance: number;
  privacy_scope: string | null;
  created_at: string;
  last_accessed: string | null;
  pinned: boolean;
  tags: string[];
  source: string | null;
  view_count: number;
  cite_count: number;
  edit_count: number;
  task_goal: string | null;
  steps: string[] | null;
  reflection_notes: ReflectionNote[] | null;
  workflow_name: string | null;
  skill_name: string | null;
  trigger_conditions: Record<string, unknown> | null;
  version: number | null;
  owner_id: string | null;
  session_id: string | null;
  project_id: string | null;
  is_deleted: boolean;
  deleted_at: string | null;
  supersedes: string[];
  superseded_by: string[];
  archive_no: number | null;
  features: ScoreParts;
  components: ScoreParts;
  forget_score: number;
  threshold: number;
  reasons: string[];
  would_forget: boolean;
  never_forgettable: boolean;
  projected_forget_at: string | null;
  duplicate_of: string | null;
  meta: MetaStats | null;
  /** Optional, beyond IPC.md (lethe-engine sends it): the score it tends to if never used again. */
  asymptote?: number;
  /** Optional, beyond IPC.md (lethe-engine sends it): the engine's own words for never_forgettable. */
  never_forgettable_why?: string | null;
}

export interface ForgettingEvent {
  id: string | number;
  memory_id: string;
  action: string;
  reason: string | null;
  policy: string | null;
  forget_score: number | null;
  ttl_days: number | null;
  created_at: string;
  metadata_json?: string | null;
}

export interface QuarantineItem {
  id: string;
  type: Tier;
  preview: string;
  reason: string | null;
  forget_score: number | null;
  deleted_at: string | null;
  /** May be fractional. */
  days_left: number;
}

export interface AuditEvent {
  id: string | number;
  kind: 'forgetting' | 'action';
  memory_id: string | null;
  action: string;
  actor: string | null;
  reason: string | null;
  policy: string | null;
  forget_score: number | null;
  created_at: string;
  before: unknown;
  after: unknown;
  ttl_days?: number | null;
  metadata?: unknown;
}

export interface EventsQuery {
  memoryId?: string;
  action?: string;
  actor?: string;
  limit?: number;
}

export interface HistoryVersion {
  version: number;
  at: string;
  actor: string | null;
  task_goal: string | null;
  steps: string[] | null;
  trigger_conditions: Record<string, unknown> | null;
  workflow_name: string | null;
  skill_name: string | null;
  content: string;
  /** Optional, beyond IPC.md: true on the entry that is the live state. */
  current?: boolean;
}

export interface ProcedurePatch {
  content?: string;
  taskGoal?: string;
  steps?: string[];
  triggerConditions?: Record<string, unknown>;
  workflowName?: string;
  skillName?: string;
}

export interface ForgetRun {
  scanned: number;
  soft_deleted: string[];
  review: string[];
  working_gate: string[];
  purged: string[];
  elapsed_ms: number;
  dry_run?: boolean;
}

/**
 * IPC.md names `Settings` without spelling out its shape; these keys follow lethe-engine's
 * `Settings` struct (which denies unknown fields). The UI edits only the keys below and
 * sends every other key back untouched.
 */
export interface Settings {
  half_life_days: Record<Tier, number>;
  weights: ScoreParts;
  threshold: number;
  quarantine_days: number;
  review_band_low: number;
  [key: string]: unknown;
}

export interface WhatIfSide {
  count: number;
  ids: string[];
}
export interface WhatIf {
  current: WhatIfSide;
  proposed: WhatIfSide;
  /** Optional, beyond IPC.md: ids forgotten under the proposal but not now. */
  newly_forgotten?: string[];
  /** Optional, beyond IPC.md: ids forgotten now but spared by the proposal. */
  spared?: string[];
}

export type Theme = 'light' | 'dark';

export interface DbChanged {
  data_version: number;
  ids: string[] | null;
}

export type LiveState = 'live' | 'missing' | 'error';
export interface DbStatus {
  state: LiveState;
  message: string | null;
}

export interface ForgetProgress {
  done: number;
  total: number;
}
