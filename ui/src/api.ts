// The only module that knows about Tauri. Every command of docs/IPC.md is one typed
// function here; the UI's tests replace this module wholesale (it is the seam). The shapes
// come from ./bindings.ts, generated from the Rust types; only the command names and their
// argument names are written here (docs/IPC.md lists them).
import { invoke } from '@tauri-apps/api/core';
import { listen, type UnlistenFn } from '@tauri-apps/api/event';
import type {
  About,
  ApiError,
  AuditEvent,
  BatchReport,
  Clusters,
  ConnectInfo,
  ConnectionTest,
  DbChanged,
  DbInfo,
  DbStatus,
  DemoCounts,
  Dismissal,
  ForgetProgress,
  ForgettingEvent,
  Health,
  Items,
  ListArgs,
  Memory,
  MemoryDetail,
  Page,
  ProcedurePatchArgs,
  ProcedurePage,
  ProcedureQuery,
  QuarantineQuery,
  QuarantineView,
  RecallExplainArgs,
  RecallExplained,
  RecallLogPage,
  RecallAnswer,
  RecallWeights,
  RefusedAttempt,
  ScoringProgress,
  SessionsOverview,
  SimilarMemory,
  Settings,
  Stats,
  Superseded,
  Theme,
  Tier,
  UndoReport,
  VectorsProgress,
  Version,
  WhatIf,
} from './types';

export type { UnlistenFn };

/** The optional arguments of the `events` command (separate Tauri arguments, not one type). */
export interface EventsQuery {
  memoryId?: string;
  action?: string;
  actor?: string;
  limit?: number;
}

/** Normalises whatever a rejected invoke carries into `{ code, message }`. */
export function toApiError(e: unknown): ApiError {
  if (e && typeof e === 'object' && 'code' in e && 'message' in e) return e as ApiError;
  if (typeof e === 'string') return { code: 'internal', message: e };
  return { code: 'internal', message: e instanceof Error ? e.message : String(e) };
}

async function call<T>(cmd: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(cmd, args);
  } catch (e) {
    throw toApiError(e);
  }
}

// Drops keys whose value is undefined so Rust sees a missing Option, never `null` for
// something the user did not set.
function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

export const dbInfo = () => call<DbInfo>('db_info');
export const stats = (now?: string) => call<Stats>('stats', compact({ now }));
export const listMemories = (query: ListArgs) =>
  call<Page>('list_memories', { query: compact(query) });
export const recall = (
  query: string,
  opts: { limit?: number; tier?: Tier; weights?: RecallWeights } = {},
) => call<RecallAnswer>('recall', compact({ query, ...opts }));
/** The Recall view: results with their breakdown and what was declined; writes nothing. */
export const recallExplain = (args: RecallExplainArgs) =>
  call<RecallExplained>('recall_explain', { args: compact(args) });
/** The agents' recalls, newest first (one actor's, or those that returned `memoryId`). */
export const recallLog = (q: { actor?: string; memoryId?: string; limit?: number } = {}) =>
  call<RecallLogPage>('recall_log', compact({ ...q }));
/** The five nearest active memories of `id`, each with its similarity and kind. */
export const similarMemories = (id: string) => call<Items<SimilarMemory>>('similar_memories', { id });
/** The duplicates review: clusters of near-duplicates, the dominant member first. */
export const duplicates = (limit?: number, now?: string) => call<Clusters>('duplicates', compact({ limit, now }));
/** "Keep both": the pair is no near-duplicate any more (audited; again is a no-op). */
export const keepBoth = (a: string, b: string) => call<Dismissal>('keep_both', { a, b });
/** Supersedes the older of the two by the newer (audited). */
export const supersedeDuplicate = (a: string, b: string) => call<Superseded>('supersede_duplicate', { a, b });
/** The Overview's health lists. */
export const health = (now?: string) => call<Health>('health', compact({ now }));
export const undoForgetRun = (runId: string) => call<UndoReport>('undo_forget_run', { runId });
export const pinRefusals = (after?: number) => call<Items<RefusedAttempt>>('pin_refusals', compact({ after }));
export const showMemory = (id: string, now?: string) =>
  call<MemoryDetail>('show_memory', compact({ id, now }));
export const pinMemory = (id: string) => call<MemoryDetail>('pin_memory', { id });
export const unpinMemory = (id: string) => call<MemoryDetail>('unpin_memory', { id });
export const setImportance = (id: string, value: number) =>
  call<MemoryDetail>('set_importance', { id, value });
/** Saves new content if the memory is still at `expectedVersion`; else rejects with `conflict`. */
export const editMemory = (id: string, content: string, expectedVersion?: number) =>
  call<MemoryDetail>('edit_memory', { id, content, expectedVersion: expectedVersion ?? null });
export const deleteMemory = (id: string, reason?: string) =>
  call<ForgettingEvent>('delete_memory', compact({ id, reason }));
export const restoreMemory = (id: string) => call<MemoryDetail>('restore_memory', { id });
export const hardDeleteMemory = (id: string, confirm: boolean) =>
  call<ForgettingEvent>('hard_delete_memory', { id, confirm });
/** Restores a selection in one action (all or nothing); answers the restored ids. */
export const restoreMemories = (ids: string[]) => call<Items<string>>('restore_memories', { ids });
/** Deletes a selection for ever in one action (all or nothing); answers the deleted ids. */
export const hardDeleteMemories = (ids: string[], confirm: boolean) =>
  call<Items<string>>('hard_delete_memories', { ids, confirm });
/** A page of the quarantine, searched, filtered and sorted by the engine, with the counts and filter values. */
export const quarantine = (now: string | undefined, query: QuarantineQuery) =>
  call<QuarantineView>('quarantine', compact({ now, query: compact(query) }));
export const events = (q: EventsQuery = {}) =>
  call<Items<AuditEvent>>('events', compact({ ...q }));
/** A page of the active procedures in group order, searched by the engine, with the groups' counts. */
export const workflows = (query: ProcedureQuery = {}) => call<ProcedurePage>('workflows', { query: compact(query) });
export const sessions = () => call<SessionsOverview>('sessions');
export const history = (id: string) => call<Items<Version>>('history', { id });
export const updateProcedure = (id: string, expectedVersion: number, patch: ProcedurePatchArgs) =>
  call<MemoryDetail>('update_procedure', { id, expectedVersion, patch: compact(patch) });
export const runForget = (dryRun: boolean, only?: string[]) => call<BatchReport>('run_forget', compact({ dryRun, only }));
export const cancelForget = () => call<null>('cancel_forget');
export const getSettings = () => call<Settings>('get_settings');
export const setSettings = (settings: Settings) => call<Settings>('set_settings', { settings });
export const whatIf = (settings: Settings, now?: string) =>
  call<WhatIf>('what_if', compact({ settings, now }));
/**
 * How big the window shows a chart: `width` CSS pixels on a screen of `dpr` device pixels per
 * CSS pixel, so the engine draws it 1:1 (crisp, text at its size). Empty: the default size.
 */
export interface ChartFit {
  width?: number;
  dpr?: number;
}
export const chartDecay = (horizonDays: number, theme: Theme, fit: ChartFit = {}, settings?: Settings) =>
  call<string>('chart_decay', compact({ horizonDays, theme, ...fit, settings }));
export const chartProjection = (id: string, theme: Theme, now?: string, fit: ChartFit = {}) =>
  call<string>('chart_projection', compact({ id, theme, now, ...fit }));
/** With `settings`, the distribution under that (proposed) policy instead of the stored one. */
export const chartDistribution = (theme: Theme, now?: string, fit: ChartFit = {}, settings?: Settings) =>
  call<string>('chart_distribution', compact({ theme, now, ...fit, settings }));

/** What a chart export draws: the same charts the views show. */
export type ChartExport =
  | { chart: 'decay'; horizonDays: number }
  | { chart: 'distribution' }
  | { chart: 'projection'; id: string };

/**
 * Asks where to save the chart (the native dialog, opened by Rust) and writes it there as SVG
 * or PNG; resolves to the path written, or null when the person cancelled.
 */
export const exportChart = (spec: ChartExport, theme: Theme, now?: string) =>
  call<string | null>('export_chart', compact({ ...spec, theme, now }));
export const loadDemo = () => call<DemoCounts>('load_demo');

/** The version, the open database and the model recall runs on. */
export const about = () => call<About>('about');
/** The MCP configuration of each agent host for the open database; nothing is written. */
export const connectInfo = () => call<ConnectInfo>('connect_info');
/** Starts `lethe --db <open db> mcp` in Rust, as a host would, and lists its tools. */
export const testConnection = () => call<ConnectionTest>('test_connection');

// Files: the page never names a path. Open and new ask in the native dialog (opened by Rust);
// they resolve to null when the person cancelled, else at once to the new file's DbInfo with
// `loading` true — `db://opened` (onDbOpened) follows when it is open or failed.
export const openDb = () => call<DbInfo | null>('open_db');
export const newDb = () => call<DbInfo | null>('new_db');
/** Opens the current file again (after it could not be opened). */
export const reopenDb = () => call<DbInfo>('reopen_db');
/** Saves a copy of the (read-only) current file where the person chooses, then opens the copy. */
export const openCopy = () => call<DbInfo | null>('open_copy');
/** The recent files, newest first; open one by its index in this list. */
export const recentFiles = () => call<string[]>('recent_files');
export const openRecent = (index: number) => call<DbInfo>('open_recent', { index });
/** Opens a team store on PostgreSQL (postgres://USER:PASSWORD@HOST:PORT/DB). */
export const connectServer = (url: string) => call<DbInfo>('connect_server', { url });

export const onDbChanged = (cb: (p: DbChanged) => void): Promise<UnlistenFn> =>
  listen<DbChanged>('db://changed', (e) => cb(e.payload));
export const onDbStatus = (cb: (p: DbStatus) => void): Promise<UnlistenFn> =>
  listen<DbStatus>('db://status', (e) => cb(e.payload));
export const onDbOpened = (cb: (p: DbInfo) => void): Promise<UnlistenFn> =>
  listen<DbInfo>('db://opened', (e) => cb(e.payload));
export const onForgetProgress = (cb: (p: ForgetProgress) => void): Promise<UnlistenFn> =>
  listen<ForgetProgress>('forget://progress', (e) => cb(e.payload));
export const onScoringProgress = (cb: (p: ScoringProgress) => void): Promise<UnlistenFn> =>
  listen<ScoringProgress>('scoring://progress', (e) => cb(e.payload));
export const onVectorsProgress = (cb: (p: VectorsProgress) => void): Promise<UnlistenFn> =>
  listen<VectorsProgress>('vectors://progress', (e) => cb(e.payload));
