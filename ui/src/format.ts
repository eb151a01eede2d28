import type { ScoreParts } from './types';
import { actionWords, policyWords, reasonText } from './words';

// Presentation helpers only: no scoring formula lives here (the engine computes every
// number; the UI rounds for display and keeps raw values in attributes).

export function fmt3(n: number | null | undefined): string {
  return typeof n === 'number' && Number.isFinite(n) ? n.toFixed(3) : '—';
}

export function fmtSigned3(n: number | null | undefined): string {
  if (typeof n !== 'number' || !Number.isFinite(n)) return '—';
  return (n > 0 ? '+' : n < 0 ? '−' : '±') + Math.abs(n).toFixed(3);
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

export function fmtDate(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function fmtDay(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

export function fmtOffset(days: number): string {
  if (days === 0) return 'now';
  const sign = days > 0 ? '+' : '−';
  return `now ${sign} ${Math.abs(days)} d`;
}

/**
 * Charts come from the engine as SVG text. They are shown through an <img> data URL so
 * nothing inside them can run or touch the page; base64 keeps non-ASCII labels intact.
 */
export function svgDataUrl(svg: string): string {
  const bytes = new TextEncoder().encode(svg);
  let bin = '';
  const CHUNK = 0x8000;
  for (let i = 0; i < bytes.length; i += CHUNK) {
    bin += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  }
  return `data:image/svg+xml;base64,${btoa(bin)}`;
}

export function shortId(id: string): string {
  return id.length > 14 ? `${id.slice(0, 12)}…` : id;
}

export function jsonText(v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

// JSON columns written by other programs may hold anything; read them defensively so one
// odd row cannot break a view.
export function asList(v: unknown): string[] {
  return Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))) : [];
}

export function asObject(v: unknown): Record<string, unknown> | null {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

export function asArray<T>(v: unknown): T[] {
  return Array.isArray(v) ? (v as T[]) : [];
}

/** A number as short as it can be without losing what matters: 0.5, 0.125, 30. */
export function fmtNum(n: number): string {
  return Number.isFinite(n) ? String(Number(n.toFixed(3))) : String(n);
}

/** A value from an audit `before`/`after` snapshot, in words rather than JSON. */
function fmtValue(v: unknown): string {
  if (v === null || v === undefined) return '∅';
  if (typeof v === 'number') return fmtNum(v);
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return `${v.length} item${v.length === 1 ? '' : 's'}`;
  return '…';
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** Dotted paths of the leaves that differ between two JSON snapshots (objects are walked). */
export function changedPaths(before: unknown, after: unknown, prefix = ''): string[] {
  const a = asObject(before);
  const b = asObject(after);
  if (!a || !b) return same(before, after) ? [] : [prefix || 'value'];
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
  return keys.flatMap((k) => changedPaths(a[k], b[k], prefix ? `${prefix}.${k}` : k));
}

function valueAt(o: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((v, k) => asObject(v)?.[k], o);
}

/** "threshold 0.6 → 0.65, weights.usage 0.25 → 0.3", or a count when many changed. */
function describeChanges(before: unknown, after: unknown, paths: string[], max = 2): string {
  if (paths.length === 0) return 'no change';
  if (paths.length > max) return `${paths.length} fields: ${paths.slice(0, 4).join(', ')}${paths.length > 4 ? ', …' : ''}`;
  return paths.map((p) => `${p} ${fmtValue(valueAt(before, p))} → ${fmtValue(valueAt(after, p))}`).join(', ');
}

/** Each setting a proposal changes, in words: "threshold 0.6 → 0.65" (empty: no change). */
export function settingsChanges(before: unknown, after: unknown): string[] {
  return changedPaths(before, after).map((p) => `${p} ${fmtValue(valueAt(before, p))} → ${fmtValue(valueAt(after, p))}`);
}

const FIELD_WORDS: Record<string, string> = {
  task_goal: 'goal',
  steps: 'steps',
  trigger_conditions: 'triggers',
  workflow_name: 'workflow',
  skill_name: 'skill',
  content: 'content',
};

/** The minimal shape of an audit event this needs (keeps format.ts free of view types). */
interface EventLike {
  kind: string;
  action: string;
  reason: string | null;
  policy: string | null;
  before: unknown;
  after: unknown;
}

/**
 * One human line for an audit event's "reason / change" column: the engine's reason when
 * it gave one, otherwise a summary of before → after (never raw JSON).
 */
export function eventSummary(e: EventLike, textOf: (id: string) => string | null = () => null): string {
  const before = asObject(e.before);
  const after = asObject(e.after);
  if (e.kind === 'forgetting') {
    const policy = e.policy ? `(${policyWords(e.policy)})` : '';
    return [reasonText(e.reason, textOf), policy].filter(Boolean).join(' ') || actionWords(e.action);
  }
  let what: string;
  switch (e.action) {
    case 'remember': {
      const p = after?.preview ?? after?.content_preview ?? after?.content;
      what = typeof p === 'string' ? `“${p}”` : 'stored';
      break;
    }
    case 'pin':
      what = 'pinned';
      break;
    case 'unpin':
      what = 'unpinned';
      break;
    case 'restore':
      what = 'restored from quarantine';
      break;
    case 'cite':
      what = 'cited by an agent';
      break;
    case 'importance': {
      const a = before?.importance;
      const b = after?.importance;
      what = typeof a === 'number' && typeof b === 'number' ? `importance ${fmtNum(a)} → ${fmtNum(b)}` : 'importance changed';
      break;
    }
    case 'edit': {
      const p = after?.content_preview ?? after?.content;
      what = typeof p === 'string' ? `edited → “${p}”` : 'content edited';
      break;
    }
    case 'settings': {
      const paths = changedPaths(e.before, e.after);
      what = paths.length ? `policy changed: ${describeChanges(e.before, e.after, paths)}` : 'policy changed';
      break;
    }
    case 'reflect': {
      const t = after?.failure_type;
      const d = after?.failure_description;
      what = `reflection${typeof t === 'string' ? ` (${t})` : ''}${typeof d === 'string' ? `: ${d}` : ''}`;
      break;
    }
    case 'procedure_update':
    case 'rollback': {
      const fields = before && after ? Object.keys(FIELD_WORDS).filter((k) => !same(before[k], after[k])) : [];
      const v = after?.version;
      what = `${e.action === 'rollback' ? 'rolled back' : 'procedure updated'}${typeof v === 'number' ? ` to v${v}` : ''}${
        fields.length ? `: ${fields.map((f) => FIELD_WORDS[f]).join(', ')}` : ''
      }`;
      break;
    }
    default: {
      if (e.before === undefined && e.after === undefined) what = '';
      else if (before || after) {
        const paths = changedPaths(e.before ?? {}, e.after ?? {});
        what = paths.length ? describeChanges(e.before ?? {}, e.after ?? {}, paths) : '';
      } else if (e.before === null && e.after === null) what = '';
      else what = `${fmtValue(e.before)} → ${fmtValue(e.after)}`;
    }
  }
  return [reasonText(e.reason, textOf), what].filter(Boolean).join(' — ');
}

/**
 * The raw feature shown (muted) after a ForgetScore breakdown label: the engine's own
 * value, named so it cannot be mistaken for the push: "recency 0.003" next to "Age".
 */
export function featureText(k: keyof ScoreParts, f: ScoreParts | null | undefined): string {
  const v = f?.[k];
  if (k === 'pinned') return typeof v === 'number' ? (v > 0 ? 'yes' : 'no') : '—';
  if (k === 'recency') return `recency ${fmt3(v)}`;
  if (k === 'usage') return `usage ${fmt3(v)}`;
  return fmt3(v);
}

/** The "projected forget date" line of the detail panel. */
export function projectedForget(d: {
  never_forgettable: boolean;
  forget_score: number;
  threshold: number;
  would_forget: boolean;
  projected_forget_at: string | null;
}): string {
  if (d.never_forgettable) return 'never';
  if (d.would_forget || d.forget_score >= d.threshold) return 'already due (score ≥ threshold)';
  return d.projected_forget_at ? fmtDate(d.projected_forget_at) : 'never';
}

/**
 * A count with thousands separators that does not depend on the system locale (under a C
 * locale `toLocaleString` groups nothing): 100000 → "100,000".
 */
export function fmtInt(n: number | null | undefined): string {
  if (typeof n !== 'number' || !Number.isFinite(n)) return '—';
  const r = Math.round(n);
  const s = String(Math.abs(r)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return r < 0 ? `−${s}` : s;
}

/** A duration in milliseconds as a person reads it: "0.42 ms", "10 ms", "1.3 s". */
export function fmtMs(ms: number | null | undefined): string {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return '—';
  if (ms >= 1000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms >= 10) return `${fmtInt(ms)} ms`;
  return `${ms.toFixed(ms >= 1 ? 1 : 2)} ms`;
}

/** "1 note", "2 notes", "1,204 memories": the count and the right form of its noun. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${fmtInt(n)} ${n === 1 ? one : many}`;
}

/** The ids of memories a text names ("duplicate of mem_…"), split out so each can be shown with its preview. */
export function splitIds(text: string): { text: string; id: boolean }[] {
  const out: { text: string; id: boolean }[] = [];
  const re = /mem_[0-9a-zA-Z_-]+/g;
  let last = 0;
  for (const m of text.matchAll(re)) {
    const at = m.index ?? 0;
    if (at > last) out.push({ text: text.slice(last, at), id: false });
    out.push({ text: m[0], id: true });
    last = at + m[0].length;
  }
  if (last < text.length) out.push({ text: text.slice(last), id: false });
  return out;
}

/**
 * The size to ask a chart for: the shown width in steps of 40 px (a resize does not ask
 * for a new chart at every pixel) and the screen's pixel ratio; empty before layout.
 */
export function chartFit(width: number, dpr: number = globalThis.devicePixelRatio || 1): { width?: number; dpr?: number } {
  if (!(width > 0)) return {};
  return { width: Math.max(240, Math.floor(width / 40) * 40), dpr: Math.round(Math.min(4, Math.max(1, dpr)) * 4) / 4 };
}
