// Application-wide state shared by the views. Views read it inside $effect blocks so a
// change of the time-travel offset, the DB or a live event re-runs exactly their fetches.
import type { DbInfo, LiveState, Notice, ScoringProgress, Stats, Theme } from './types';
import * as api from './api';
import { invalidate, lookup, quote, useClock } from './memref.svelte';
import { plural } from './format';

/** What the top bar's indicator says: the watcher's state, or that the file is still opening. */
export type Live = LiveState | 'opening';

export type View = 'overview' | 'memories' | 'recall' | 'quarantine' | 'workflows' | 'audit' | 'decay' | 'sessions' | 'duplicates';

export interface Toast {
  id: number;
  message: string;
  /** An error is shown in the danger colour (and stays a little longer). */
  kind?: 'info' | 'error';
  actionLabel?: string;
  action?: () => void | Promise<void>;
}

/** The views in the order the side navigation lists them; digit keys 1–9 open them in this order. */
export const VIEWS: View[] = ['overview', 'memories', 'quarantine', 'workflows', 'audit', 'decay', 'sessions', 'recall', 'duplicates'];
const VIEW_KEY = 'lethe.view';

/** The view the window showed when it was last closed (kept in the webview's storage). */
function lastView(): View {
  try {
    const v = globalThis.localStorage?.getItem(VIEW_KEY) as View | null;
    return v && VIEWS.includes(v) ? v : 'overview';
  } catch {
    return 'overview';
  }
}

/** Keeps `view` for the next start; losing it is harmless. */
export function rememberView(view: View): void {
  try {
    globalThis.localStorage?.setItem(VIEW_KEY, view);
  } catch {
    // Storage may be unavailable (a private context): the next start shows the Overview.
  }
}

export const app = $state({
  view: lastView(),
  /** The window's own dialogs (About, Connect an agent), opened from the File menu. */
  dialog: null as 'about' | 'connect' | 'server' | null,
  /** Time-travel offset in days; 0 means "evaluate at the real clock". */
  offsetDays: 0,
  selectedId: null as string | null,
  /** A health list Memories shows alone (Health's "and N more"); null: no such filter. */
  healthList: null as string | null,
  db: null as DbInfo | null,
  /** The watcher's state of the file, or 'opening' while the shell opens it and loads scores. */
  live: 'live' as Live,
  liveMessage: null as string | null,
  /** Bumped on every db://changed (and after open/new DB); views re-fetch on it. */
  change: { seq: 0, ids: null as string[] | null },
  stats: null as Stats | null,
  theme: 'light' as Theme,
  toast: null as Toast | null,
  /** The meaning-vector back-fill of the open file while it runs (done of total). */
  vectors: null as { done: number; total: number } | null,
  /** The newest report of a scoring snapshot load (scoring://progress), for progress bars. */
  scoring: null as ScoringProgress | null,
  /** True while a modal is open; global shortcuts stay quiet. */
  modal: false,
});

const DAY_MS = 86_400_000;

/** The `now` to pass to queries: undefined at offset 0 so Rust reads its own clock. */
export function nowIso(offsetDays: number = app.offsetDays): string | undefined {
  if (offsetDays === 0) return undefined;
  return new Date(Date.now() + offsetDays * DAY_MS).toISOString();
}
useClock(() => nowIso());

/**
 * One instant for several queries that belong together (the pages of one listing, the parts
 * of the Overview): they agree with each other, and the engine scores every memory once for
 * all of them instead of once per query.
 */
export function instantIso(offsetDays: number = app.offsetDays): string {
  return new Date(Date.now() + offsetDays * DAY_MS).toISOString();
}

export function notifyChanged(ids: string[] | null): void {
  // What is known of these memories by id (previews in lists and toasts) is read again.
  invalidate(ids);
  app.change = { seq: app.change.seq + 1, ids };
}

let toastTimer: ReturnType<typeof setTimeout> | undefined;
let toastSeq = 0;
export const TOAST_MS = 8000;

export function showToast(message: string, actionLabel?: string, action?: Toast['action'], kind: Toast['kind'] = 'info'): void {
  clearTimeout(toastTimer);
  const id = ++toastSeq;
  app.toast = { id, message, actionLabel, action, kind };
  toastTimer = setTimeout(
    () => {
      if (app.toast?.id === id) app.toast = null;
    },
    kind === 'error' ? TOAST_MS * 1.5 : TOAST_MS,
  );
}

/**
 * An engine error in words for a person: without the internal code and the "invalid
 * input:" prefix (the code stays in the tooltip of the toast's text).
 */
export function errorText(message: string): string {
  const m = message.replace(/^(invalid input|internal error|not found|conflict):\s*/i, '').trim();
  return m ? m[0].toUpperCase() + m.slice(1) : 'Something went wrong';
}

export function dismissToast(): void {
  clearTimeout(toastTimer);
  app.toast = null;
}

/**
 * Why nothing can be changed right now, in a person's words, or null when changes are
 * allowed. Every control that writes is disabled with this as its tooltip: a write the
 * window cannot keep is never offered.
 */
export function writeBlock(): string | null {
  const db = app.db;
  if (!db) return null;
  if (db.error) return 'The database could not be opened';
  if (db.read_only) return 'This file is read-only: open a copy to make changes';
  switch (app.live) {
    case 'missing':
      return 'The database file is gone: nothing can be changed until a file is back at its place';
    case 'reconnecting':
      return 'The team server does not answer: nothing can be changed until it is back';
    case 'error':
      return app.liveMessage ? `Nothing can be changed right now: ${app.liveMessage.replace(/[.\s]+$/, '')}` : 'Nothing can be changed right now';
    default:
      return null;
  }
}

/** For keyboard shortcuts that write: says why not in a toast and returns true when blocked. */
export function refusedWrite(): boolean {
  const why = writeBlock();
  if (why) showToast(why, undefined, undefined, 'error');
  return !!why;
}

/** True when the window already explains that the database cannot be used right now. */
export function dbUnusable(): boolean {
  return !!app.db?.error || app.live !== 'live';
}

export function reportError(e: unknown): void {
  const err = api.toApiError(e);
  // While the DB problem screen or the "file is gone" banner is up, every fetch fails the
  // same way; the window already says why, so these do not pile up as error banners.
  if (err.code === 'db_unavailable' && dbUnusable()) return;
  // A toast, not a banner: it does not push the view down, and it goes away by itself.
  showToast(errorText(err.message), undefined, undefined, 'error');
}

/**
 * Takes over what `db_info`, an open or `db://opened` says about the current database,
 * unless it is older than what is shown (they travel separately: `revision` orders them).
 * Returns whether it was taken.
 */
export function applyDbInfo(info: DbInfo): boolean {
  if (app.db && info.revision < app.db.revision) return false;
  // Another open (a new file, or the same path opened again): nothing of the old one holds.
  if (app.db && generationOf(info) !== generationOf(app.db)) {
    app.selectedId = null;
    app.healthList = null;
    app.stats = null;
  }
  app.db = info;
  if (info.notice) showNotice(info.notice);
  app.live = info.error ? 'error' : info.loading ? 'opening' : info.exists ? 'live' : 'missing';
  app.liveMessage = info.error;
  // An error from before we knew the DB is unusable is explained by the problem screen.
  if (info.error && app.toast?.kind === 'error') app.toast = null;
  return true;
}

/** Each open has three revisions (opening, open, scored); see `DbInfo.revision`. */
const generationOf = (info: DbInfo) => Math.floor(info.revision / 3);

const NOTICE_KEY = 'lethe.notice';

/**
 * Says what the shell did that the person did not ask for (opened the file again, reloaded
 * the page), once: the newest one seen is kept in the session's storage, which outlives a
 * reload of the page.
 */
function showNotice(notice: Notice): void {
  let seen = 0;
  try {
    seen = Number(globalThis.sessionStorage?.getItem(NOTICE_KEY) ?? 0);
    globalThis.sessionStorage?.setItem(NOTICE_KEY, String(Math.max(seen, notice.seq)));
  } catch {
    // Without storage a notice may be said twice; never not at all.
  }
  if (notice.seq > seen) showToast(notice.text);
}

export async function loadDbInfo(): Promise<void> {
  try {
    applyDbInfo(await api.dbInfo());
  } catch (e) {
    reportError(e);
  }
}

/**
 * `db://opened`: the file finished opening (or failed), or its scores are loaded. Once it is
 * fully there, every view reads again (what a view read while it opened may be partial).
 */
export function dbOpened(info: DbInfo): void {
  if (applyDbInfo(info) && !info.loading) {
    if (info.error) app.selectedId = null;
    notifyChanged(null);
  }
}

/**
 * Opens (or creates) a database and shows it. The shell asks for the file in the native
 * dialog and answers at once with the new path (null when the person cancelled); whether
 * it could be opened arrives as `db://opened`, which shows the problem screen if not.
 */
async function switchDb(open: () => Promise<DbInfo | null>): Promise<void> {
  let info: DbInfo | null;
  try {
    info = await open();
  } catch (e) {
    reportError(e);
    return;
  }
  if (!info) return;
  applyDbInfo(info);
  // The counts shown are the old file's until the new one answers: show none instead.
  app.stats = null;
  app.selectedId = null;
  notifyChanged(null);
}

/** The native open dialog (in Rust), then open; a cancelled dialog changes nothing. */
export const openDbDialog = () => switchDb(api.openDb);
/** The native save dialog (in Rust), then create the database there. */
export const newDbDialog = () => switchDb(api.newDb);
/** Entry `index` of the recent list the shell last gave. */
export const openRecentDb = (index: number) => switchDb(() => api.openRecent(index));
/** A copy of the current (read-only) file, saved where the person chooses, then opened. */
export const openCopyDb = () => switchDb(api.openCopy);
/** The current file again, after it could not be opened. */
export const reopenDb = () => switchDb(api.reopenDb);
/** A team store on PostgreSQL, by its address. */
export const connectServerDb = (url: string) => switchDb(() => api.connectServer(url));

/** Soft-deletes and offers an Undo that restores every id; one memory is named by its text. */
export async function softDelete(ids: string[], reason = 'deleted by user'): Promise<void> {
  if (refusedWrite()) return;
  const done: string[] = [];
  // Read before the delete: the toast names what was moved, not its id.
  const one = ids.length === 1 ? await lookup(ids[0]) : null;
  try {
    for (const id of ids) {
      await api.deleteMemory(id, reason);
      done.push(id);
    }
  } catch (e) {
    reportError(e);
  }
  if (done.length === 0) return;
  notifyChanged(done);
  const label =
    done.length === 1
      ? `Moved ${one ? quote(one.preview) : 'the memory'} to quarantine`
      : `Moved ${plural(done.length, 'memory', 'memories')} to quarantine`;
  showToast(label, 'Undo', async () => {
    try {
      for (const id of done) await api.restoreMemory(id);
      notifyChanged(done);
      showToast(done.length === 1 ? `Restored ${one ? quote(one.preview) : 'the memory'}` : `Restored ${plural(done.length, 'memory', 'memories')}`);
    } catch (e) {
      reportError(e);
    }
  });
}

export async function refreshStats(at: string | undefined = nowIso()): Promise<void> {
  try {
    app.stats = await api.stats(at);
  } catch (e) {
    reportError(e);
  }
}
