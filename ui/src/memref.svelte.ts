// What the window shows for a memory it only knows by id (an audit row, a toast, a what-if
// list, a "duplicate of" reason): its preview, tier and score, read once with `show_memory`
// and kept until the memory changes. Lookups run a few at a time so a long list does not
// flood the shell.
import * as api from './api';
import type { MemoryDetail, Tier } from './types';

/**
 * The `now` lookups are read at (undefined: the engine's clock). The window's state sets it to
 * follow the time offset a person chose; this module imports nothing of that state, so the two
 * do not import each other.
 */
let readAt: () => string | undefined = () => undefined;
export function useClock(now: () => string | undefined): void {
  readAt = now;
}

export interface MemoryRef {
  id: string;
  type: Tier;
  preview: string;
  importance: number;
  forget_score: number;
  would_forget: boolean;
  pinned: boolean;
  is_deleted: boolean;
  created_at: string;
}

/** The reference of a memory that is gone for good (hard-deleted or purged). */
export const GONE = 'gone' as const;

const PREVIEW_CHARS = 120;
const PARALLEL = 4;

export const refs: Record<string, MemoryRef | typeof GONE> = $state({});
const pending = new Set<string>();
const queue: string[] = [];
let running = 0;

export function toRef(d: MemoryDetail): MemoryRef {
  const text = d.content.replace(/\s+/g, ' ').trim();
  return {
    id: d.id,
    type: d.type,
    preview: text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS - 1)}…` : text,
    importance: d.importance,
    forget_score: d.forget_score,
    would_forget: d.would_forget,
    pinned: d.pinned,
    is_deleted: d.is_deleted,
    created_at: d.created_at,
  };
}

/** Keeps a reference a command already returned in list form (saves a `show_memory` each). */
export function know(r: MemoryRef): void {
  refs[r.id] = { ...r, preview: r.preview.length > PREVIEW_CHARS ? `${r.preview.slice(0, PREVIEW_CHARS - 1)}…` : r.preview };
}

/** Keeps what a command already returned (saves a lookup). */
export function remember(d: MemoryDetail): void {
  refs[d.id] = toRef(d);
}

async function pump(): Promise<void> {
  while (running < PARALLEL && queue.length) {
    const id = queue.shift()!;
    running++;
    api
      .showMemory(id, readAt())
      .then((d) => (refs[id] = toRef(d)))
      .catch((e) => {
        if (api.toApiError(e).code === 'not_found') refs[id] = GONE;
      })
      .finally(() => {
        pending.delete(id);
        running--;
        pump();
      });
  }
}

/** Asks for the references of `ids` not known yet; they appear in `refs` as they arrive. */
export function want(ids: Iterable<string>): void {
  for (const id of ids) {
    if (!id || id in refs || pending.has(id)) continue;
    pending.add(id);
    queue.push(id);
  }
  pump();
}

/** Reads the reference of one memory now (for a toast that must name it). */
export async function lookup(id: string): Promise<MemoryRef | null> {
  const known = refs[id];
  if (known && known !== GONE) return known;
  try {
    const d = await api.showMemory(id, readAt());
    refs[id] = toRef(d);
    return refs[id] as MemoryRef;
  } catch {
    return null;
  }
}

/** Forgets what is known of `ids` (null: of all), so the next look reads them again. */
export function invalidate(ids: string[] | null): void {
  if (ids === null) {
    for (const k of Object.keys(refs)) delete refs[k];
    return;
  }
  for (const id of ids) delete refs[id];
}

/** A short quoted preview for a sentence: “Never deploy on Fridays…”. */
export function quote(preview: string, max = 48): string {
  return `“${preview.length > max ? `${preview.slice(0, max - 1)}…` : preview}”`;
}
