// A stand-in for the engine's quarantine view (the shell's `quarantine` command) in the UI's
// tests: the same search, filters, orders and pages over a list of items, so a test can check
// what the window asks for and shows. The engine's own rules are tested in Rust.
import type { FilterValue, QuarantineItem, QuarantineQuery, QuarantineView, Tier } from '../src/types';

/**
 * A way to narrow the quarantine by a property of each item (who deleted it, why). A forget
 * run's id becomes one more entry here once quarantine items carry it.
 */
export interface Facet {
  key: string;
  label: string;
  /** The values an item has (a reason has several parts: "old, unused"). */
  values: (q: QuarantineItem) => string[];
  /** How a value reads in the filter. */
  show: (v: string) => string;
}

/** Who moved it to quarantine, in words. */
export function deletedByText(v: string): string {
  if (v === 'policy') return 'the forget policy';
  if (v === 'user') return 'a person';
  if (v === UNKNOWN) return 'not recorded';
  return v;
}

const UNKNOWN = '(unknown)';

/**
 * The parts of a reason a person filters by: "old, unused, duplicate of mem_x" → old, unused,
 * duplicate; the working-memory window's reasons keep their plain cause.
 */
export function reasonParts(reason: string | null): string[] {
  if (!reason) return [UNKNOWN];
  return reason
    .split(/,\s*/)
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => {
      if (p.startsWith('duplicate of ')) return 'duplicate';
      if (p.startsWith('working gate: ')) return `working memory ${p.slice('working gate: '.length)}`;
      return p;
    });
}

export const FACETS: Facet[] = [
  { key: 'by', label: 'deleted by', values: (q) => [q.deleted_by ?? UNKNOWN], show: deletedByText },
  { key: 'reason', label: 'reason', values: (q) => reasonParts(q.reason), show: (v) => (v === UNKNOWN ? 'none recorded' : v) },
];

export interface QuarantineFilter {
  search: string;
  tier: Tier | '';
  /** Facet key → the value it must have ('' or missing: any). */
  facet: Record<string, string>;
}

const haystacks = new WeakMap<QuarantineItem, string>();
function haystack(q: QuarantineItem): string {
  let h = haystacks.get(q);
  if (h === undefined) {
    h = [q.preview, q.reason ?? '', q.deleted_by ?? '', q.id].join('\n').toLowerCase();
    haystacks.set(q, h);
  }
  return h;
}

/** Whether an item passes the search (every word, in content, reason, who or id) and the filters. */
export function matches(q: QuarantineItem, f: QuarantineFilter): boolean {
  if (f.tier && q.type !== f.tier) return false;
  for (const facet of FACETS) {
    const want = f.facet[facet.key];
    if (want && !facet.values(q).includes(want)) return false;
  }
  const words = f.search.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length) {
    const h = haystack(q);
    if (!words.every((w) => h.includes(w))) return false;
  }
  return true;
}

const collator = new Intl.Collator();

type QuarantineSort = NonNullable<QuarantineQuery['sort']>;

/** A sorted copy; ties keep the engine's order (newest deletion first). */
export function sortItems(items: QuarantineItem[], sort: QuarantineSort): QuarantineItem[] {
  const at = (q: QuarantineItem) => q.deleted_at ?? '';
  const cmp: Record<QuarantineSort, (a: QuarantineItem, b: QuarantineItem) => number> = {
    'deleted-desc': (a, b) => (at(a) < at(b) ? 1 : at(a) > at(b) ? -1 : 0),
    'deleted-asc': (a, b) => (at(a) < at(b) ? -1 : at(a) > at(b) ? 1 : 0),
    'days-left': (a, b) => a.days_left - b.days_left,
    score: (a, b) => (b.forget_score ?? -Infinity) - (a.forget_score ?? -Infinity),
    by: (a, b) => collator.compare(a.deleted_by ?? '\uffff', b.deleted_by ?? '\uffff'),
    content: (a, b) => collator.compare(a.preview, b.preview),
  };
  if (sort === 'deleted-desc') return items;
  return items
    .map((q, i) => ({ q, i }))
    .sort((x, y) => cmp[sort](x.q, y.q) || x.i - y.i)
    .map((x) => x.q);
}

function counted(items: QuarantineItem[], f: Facet): FilterValue[] {
  const counts = new Map<string, number>();
  for (const q of items) for (const v of new Set(f.values(q))) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([value, count]) => ({ value, label: f.show(value), count }));
}

/** A `quarantine` command over `items` (newest deletion first), answering as the shell does. */
export function quarantineOf(items: QuarantineItem[]) {
  return async (_now: string | undefined, q: QuarantineQuery): Promise<QuarantineView> => {
    const kept = sortItems(
      items.filter((x) => matches(x, { search: q.search ?? '', tier: q.tier ?? '', facet: { by: q.deletedBy ?? '', reason: q.reason ?? '' } })),
      q.sort ?? 'deleted-desc',
    );
    const offset = Math.min(q.offset ?? 0, kept.length);
    return {
      total: items.length,
      matching: kept.length,
      offset,
      items: kept.slice(offset, offset + (q.limit ?? 100)),
      deleted_by: counted(items, FACETS[0]),
      reasons: counted(items, FACETS[1]),
      ids: q.allIds ? kept.map((x) => x.id) : [],
    };
  };
}
