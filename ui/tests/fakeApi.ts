// A stand-in for src/api.ts (the seam between the UI and Rust). Every command is a vi.fn
// with a sensible default; tests override what they care about and fire events by hand.
import { vi } from 'vitest';
import type {
  ApiError,
  ConnectInfo,
  AuditEvent,
  DbChanged,
  DbInfo,
  DbStatus,
  ForgetProgress,
  ListArgs,
  MemoryDetail,
  MemoryRow,
  QuarantineItem,
  ScoringProgress,
  Settings,
  Stats,
  Tier,
  VectorsProgress,
} from '../src/types';

export const HOSTILE = '<img src=x onerror=alert(1)>';
export const SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><text>Å</text></svg>';

type Cb<T> = (p: T) => void;
const listeners = {
  changed: new Set<Cb<DbChanged>>(),
  status: new Set<Cb<DbStatus>>(),
  progress: new Set<Cb<ForgetProgress>>(),
  vectors: new Set<Cb<VectorsProgress>>(),
  scoring: new Set<Cb<ScoringProgress>>(),
  opened: new Set<Cb<DbInfo>>(),
};

let revision = 0;
/** A `DbInfo` as the shell sends it, each with a newer `revision` than the one before. */
export function dbInfoOf(path: string, over: Partial<DbInfo> = {}): DbInfo {
  revision += 3;
  return { path, exists: true, memento: false, schema_version: 3, error: null, loading: false, revision, read_only: false, notice: null, ...over };
}

export function emitChanged(p: DbChanged) {
  listeners.changed.forEach((cb) => cb(p));
}
export function emitStatus(p: DbStatus) {
  listeners.status.forEach((cb) => cb(p));
}
export function emitProgress(p: ForgetProgress) {
  listeners.progress.forEach((cb) => cb(p));
}
export function emitVectors(p: VectorsProgress) {
  listeners.vectors.forEach((cb) => cb(p));
}
export function emitScoring(p: ScoringProgress) {
  listeners.scoring.forEach((cb) => cb(p));
}
export function emitOpened(p: DbInfo) {
  listeners.opened.forEach((cb) => cb(p));
}
export function listenerCount() {
  return Object.values(listeners).reduce((n, set) => n + set.size, 0);
}

const TIER_CYCLE: Tier[] = ['working', 'episodic', 'semantic', 'procedural'];

export function makeRow(i: number, over: Partial<MemoryRow> = {}): MemoryRow {
  return {
    id: `mem_${i}`,
    type: TIER_CYCLE[i % 4],
    preview: `memory number ${i}`,
    importance: 0.5,
    pinned: false,
    created_at: '2025-01-01T00:00:00.000Z',
    last_accessed: null,
    is_deleted: false,
    deleted_at: null,
    forget_score: 0.4 + (i % 10) / 100,
    would_forget: false,
    session_id: null,
    project_id: null,
    workflow_name: null,
    tags: [],
    redacted: false,
    needs_extraction: false,
    written_by: 'agent:claude-code',
    last_used: null,
    ...over,
  };
}

export function makeDetail(id: string, over: Partial<MemoryDetail> = {}): MemoryDetail {
  return {
    id,
    type: 'episodic',
    content: `content of ${id}`,
    importance: 0.5,
    privacy_scope: 'private',
    created_at: '2025-01-01T00:00:00.000Z',
    last_accessed: null,
    pinned: false,
    tags: ['a'],
    source: 'user',
    view_count: 1,
    cite_count: 2,
    edit_count: 0,
    task_goal: null,
    steps: null,
    reflection_notes: null,
    workflow_name: null,
    skill_name: null,
    trigger_conditions: null,
    version: 1,
    owner_id: null,
    session_id: null,
    project_id: null,
    is_deleted: false,
    deleted_at: null,
    supersedes: [],
    superseded_by: [],
    archive_no: null,
    features: { recency: 0.5, usage: 0.2, duplication: 0, importance: 0.5, pinned: 0 },
    components: { recency: 0.175, usage: 0.2, duplication: 0, importance: -0.075, pinned: 0 },
    forget_score: 0.3,
    threshold: 0.6,
    reasons: ['unused', 'not pinned'],
    would_forget: false,
    never_forgettable: false,
    projected_forget_at: '2026-01-01T00:00:00.000Z',
    asymptote: 0.45,
    duplicate_of: null,
    duplicate_kind: null,
    never_forgettable_why: null,
    dialogue: null,
    task_kind: null,
    duplicate_evidence: null,
    meta: { memory_id: id, recall_count: 3, success_count: 2, failure_count: 1, avg_confidence: 0.61, last_recalled_at: null },
    ...over,
  };
}

export function makeStats(over: Partial<Stats> = {}): Stats {
  return {
    tiers: {
      working: { active: 12, quarantined: 1, pinned: 0 },
      episodic: { active: 345, quarantined: 7, pinned: 2 },
      semantic: { active: 89, quarantined: 0, pinned: 11 },
      procedural: { active: 6, quarantined: 2, pinned: 1 },
    },
    total_active: 452,
    total_quarantined: 10,
    at_risk: 17,
    next_run: 17,
    would_forget: 0,
    meta: { recalled_memories: 40, total_recalls: 120, avg_confidence: 0.7 },
    ...over,
  };
}

const MCP_JSON = JSON.stringify(
  { mcpServers: { lethe: { command: '/usr/bin/lethe', args: ['--db', '/home/me/.local/share/lethe/memory.db', 'mcp'] } } },
  null,
  2,
);
export const CONNECT_INFO: ConnectInfo = {
  lethe: '/usr/bin/lethe',
  lethe_error: null,
  db_path: '/home/me/.local/share/lethe/memory.db',
  hosts: [
    { host: 'claude-code', label: 'Claude Code', hint: 'Run in a terminal.', kind: 'command', text: 'claude mcp add --transport stdio --scope user lethe -- /usr/bin/lethe --db /home/me/.local/share/lethe/memory.db mcp' },
    { host: 'claude-desktop', label: 'Claude Desktop', hint: 'claude_desktop_config.json', kind: 'json', text: MCP_JSON },
    { host: 'cursor', label: 'Cursor', hint: '~/.cursor/mcp.json', kind: 'json', text: MCP_JSON },
    { host: 'generic', label: 'Any MCP host (stdio)', hint: 'stdio', kind: 'json', text: '{"type":"stdio"}' },
  ],
};

export const DEFAULT_SETTINGS: Settings = {
  half_life_days: { working: 2, episodic: 30, semantic: 180, procedural: 90 },
  weights: { recency: 0.35, usage: 0.25, duplication: 0.2, importance: 0.15, pinned: 0.3 },
  threshold: 0.6,
  quarantine_days: 30,
  review_band_low: 0.5,
  access_decay_days: 30,
  working_window_hours: 48,
  working_max_turns: 50,
  max_content_bytes: 1048576,
  trivial_phrases: ['ok', 'thanks'],
  recall_weights: { similarity: 0.7, recency: 0.1, scene: 0.1, priority: 0.1 },
  duplicate_reason_above: 0.8,
  secrets: 'redact',
  pii: 'tag',
  task_log_half_life_days: 30,
  recall_log_max_rows: 10000,
  person_ops_window_only: false,
};

/** Pages through `total` synthetic rows like list_memories would. */
export function pagedList(total: number, over: (i: number) => Partial<MemoryRow> = () => ({})) {
  return async ({ offset = 0, limit = 50 }: ListArgs) => {
    const items: MemoryRow[] = [];
    for (let i = offset; i < Math.min(total, offset + limit); i++) items.push(makeRow(i, over(i)));
    return { total, items };
  };
}

export function toApiError(e: unknown): ApiError {
  if (e && typeof e === 'object' && 'code' in e && 'message' in e) return e as ApiError;
  return { code: 'internal', message: String(e) };
}

function listenOn<T>(set: Set<Cb<T>>) {
  return vi.fn(async (cb: Cb<T>) => {
    set.add(cb);
    return () => {
      set.delete(cb);
    };
  });
}

export const api = {
  toApiError,
  dbInfo: vi.fn(),
  stats: vi.fn(),
  listMemories: vi.fn(),
  recall: vi.fn(),
  recallExplain: vi.fn(),
  recallLog: vi.fn(),
  similarMemories: vi.fn(),
  duplicates: vi.fn(),
  keepBoth: vi.fn(),
  supersedeDuplicate: vi.fn(),
  health: vi.fn(),
  pinRefusals: vi.fn(),
  undoForgetRun: vi.fn(),
  showMemory: vi.fn(),
  pinMemory: vi.fn(),
  unpinMemory: vi.fn(),
  setImportance: vi.fn(),
  editMemory: vi.fn(),
  deleteMemory: vi.fn(),
  restoreMemory: vi.fn(),
  hardDeleteMemory: vi.fn(),
  restoreMemories: vi.fn(),
  hardDeleteMemories: vi.fn(),
  quarantine: vi.fn(),
  events: vi.fn(),
  workflows: vi.fn(),
  sessions: vi.fn(),
  history: vi.fn(),
  updateProcedure: vi.fn(),
  runForget: vi.fn(),
  cancelForget: vi.fn(),
  getSettings: vi.fn(),
  setSettings: vi.fn(),
  whatIf: vi.fn(),
  chartDecay: vi.fn(),
  chartProjection: vi.fn(),
  chartDistribution: vi.fn(),
  exportChart: vi.fn(),
  loadDemo: vi.fn(),
  openDb: vi.fn(),
  newDb: vi.fn(),
  reopenDb: vi.fn(),
  openCopy: vi.fn(),
  recentFiles: vi.fn(),
  openRecent: vi.fn(),
  about: vi.fn(),
  connectInfo: vi.fn(),
  testConnection: vi.fn(),
  onDbChanged: listenOn(listeners.changed),
  onDbStatus: listenOn(listeners.status),
  onDbOpened: listenOn(listeners.opened),
  onForgetProgress: listenOn(listeners.progress),
  onVectorsProgress: listenOn(listeners.vectors),
  onScoringProgress: listenOn(listeners.scoring),
};

export const quarantineItems: QuarantineItem[] = [
  { id: 'mem_q1', type: 'episodic', preview: 'the staging password rotates monthly', reason: 'old, unused', forget_score: 0.71234, deleted_at: '2025-03-01T10:00:00.000Z', days_left: 12.75, deleted_by: 'policy', policy: 'threshold' },
  { id: 'mem_q2', type: 'working', preview: HOSTILE, reason: 'working gate: older than 48h', forget_score: 0.8, deleted_at: '2025-03-02T10:00:00.000Z', days_left: 0.25, deleted_by: 'agent:cursor', policy: 'agent' },
];

export const auditEvents: AuditEvent[] = [
  { id: 'fev_1', kind: 'forgetting', memory_id: 'mem_q1', action: 'soft', actor: 'policy', reason: 'old, unused', policy: 'batch', forget_score: 0.71, created_at: '2025-03-01T10:00:00.000Z', before: null, after: null, ttl_days: 30, metadata: null },
  { id: 'act_2', kind: 'action', memory_id: 'mem_1', action: 'pin', actor: 'user', reason: null, policy: null, forget_score: null, created_at: '2025-03-02T10:00:00.000Z', before: false, after: true, ttl_days: null, metadata: null },
];

import { quarantineOf } from './fakeQuarantine';
import { workflowsOf } from './fakeWorkflows';
export { quarantineOf, workflowsOf };

/** Restores every default implementation; call in beforeEach. */
export function resetFake() {
  listeners.changed.clear();
  listeners.status.clear();
  listeners.progress.clear();
  listeners.vectors.clear();
  listeners.opened.clear();
  for (const [k, v] of Object.entries(api)) {
    if (k !== 'toApiError' && !k.startsWith('on')) (v as ReturnType<typeof vi.fn>).mockReset();
  }
  api.dbInfo.mockResolvedValue(dbInfoOf('/home/me/.local/share/lethe/memory.db'));
  api.stats.mockResolvedValue(makeStats());
  api.listMemories.mockImplementation(pagedList(250));
  api.recall.mockResolvedValue({ results: [] });
  api.recallLog.mockResolvedValue({ items: [], actors: [] });
  api.similarMemories.mockResolvedValue({ items: [] });
  api.duplicates.mockResolvedValue({ total: 0, threshold: 0.7, items: [], related: { scanned: 0, total: 0, threshold: 0.5, judgment: 'words and values only', items: [] } });
  api.keepBoth.mockImplementation(async (a: string, b: string) => ({ a, b, dismissed: true, actor: 'user', at: '2025-03-03T00:00:00.000Z' }));
  api.supersedeDuplicate.mockImplementation(async (a: string, b: string) => ({ old: a, new: b, superseded: true }));
  api.health.mockResolvedValue({ lists: [] });
  api.pinRefusals.mockResolvedValue({ items: [] });
  api.recallExplain.mockResolvedValue({ results: [], declined: [], weights: { similarity: 0.7, recency: 0.1, scene: 0.1, priority: 0.1 }, periods: [], recall_mode: 'lexical' });
  api.showMemory.mockImplementation(async (id: string) => makeDetail(id));
  api.pinMemory.mockImplementation(async (id: string) => makeDetail(id, { pinned: true }));
  api.unpinMemory.mockImplementation(async (id: string) => makeDetail(id, { pinned: false }));
  api.setImportance.mockImplementation(async (id: string, v: number) => makeDetail(id, { importance: v }));
  api.editMemory.mockImplementation(async (id: string, c: string) => makeDetail(id, { content: c }));
  api.deleteMemory.mockImplementation(async (id: string) => ({ id: 9, memory_id: id, action: 'soft', reason: 'deleted by user', policy: 'manual', forget_score: 0.3, ttl_days: 30, created_at: '2025-03-03T00:00:00.000Z' }));
  api.restoreMemory.mockImplementation(async (id: string) => makeDetail(id));
  api.hardDeleteMemory.mockImplementation(async (id: string) => ({ id: 10, memory_id: id, action: 'hard', reason: null, policy: 'manual', forget_score: null, ttl_days: null, created_at: '2025-03-03T00:00:00.000Z' }));
  api.restoreMemories.mockImplementation(async (ids: string[]) => ({ items: ids }));
  api.hardDeleteMemories.mockImplementation(async (ids: string[]) => ({ items: ids }));
  api.quarantine.mockImplementation(quarantineOf(quarantineItems));
  api.events.mockResolvedValue({ items: auditEvents });
  api.workflows.mockImplementation(workflowsOf([]));
  api.sessions.mockResolvedValue({ sessions: [], task_kinds: [] });
  api.history.mockResolvedValue({ items: [] });
  api.runForget.mockResolvedValue({ scanned: 100, soft_deleted: ['mem_1', 'mem_2'], review: ['mem_3'], working_gate: [], purged: ['mem_old'], elapsed_ms: 12, by_reason: [{ reason: 'old, unused', ids: ['mem_1', 'mem_2'] }] });
  api.undoForgetRun.mockImplementation(async (run_id: string) => ({ run_id, restored: [], already_restored: [], quarantined_again: [], deleted_for_ever: [] }));
  api.cancelForget.mockResolvedValue(null);
  api.getSettings.mockResolvedValue(structuredClone(DEFAULT_SETTINGS));
  api.setSettings.mockImplementation(async (s: Settings) => s);
  api.whatIf.mockResolvedValue({ current: { count: 2, ids: ['mem_1', 'mem_2'] }, proposed: { count: 3, ids: ['mem_1', 'mem_2', 'mem_7'] } });
  api.chartDecay.mockResolvedValue(SVG);
  api.chartProjection.mockResolvedValue(SVG);
  api.chartDistribution.mockResolvedValue(SVG);
  // The shell's save dialog "chose" this path and the chart was written there.
  api.exportChart.mockResolvedValue('/tmp/chart.png');
  api.loadDemo.mockResolvedValue({ memories: 500 });
  // Open and new: the shell's native dialog "chose" these paths; the file then opens at once.
  api.openDb.mockImplementation(async () => dbInfoOf('/tmp/picked.db'));
  api.newDb.mockImplementation(async () => dbInfoOf('/tmp/new.db'));
  api.reopenDb.mockImplementation(async () => dbInfoOf('/home/me/.local/share/lethe/memory.db'));
  // The copy of a read-only file, saved where the shell's save dialog "chose".
  api.openCopy.mockImplementation(async () => dbInfoOf('/home/me/memory-copy.db'));
  api.recentFiles.mockResolvedValue(['/tmp/a.db', '/tmp/b.db']);
  api.about.mockResolvedValue({
    version: '0.1.0',
    db_path: '/home/me/.local/share/lethe/memory.db',
    recall: 'semantic + lexical (potion-base-8M/256/abc)',
    semantic: true,
    lethe: '/usr/bin/lethe',
  });
  api.connectInfo.mockResolvedValue(CONNECT_INFO);
  api.testConnection.mockResolvedValue({
    ok: true,
    command: '/usr/bin/lethe --db /home/me/.local/share/lethe/memory.db mcp',
    server: 'lethe 0.1.0',
    protocol: '2025-11-25',
    tools: ['remember', 'recall', 'forget'],
    elapsed_ms: 42,
    error: null,
  });
  api.openRecent.mockImplementation(async (index: number) => dbInfoOf(['/tmp/a.db', '/tmp/b.db'][index]));
}
