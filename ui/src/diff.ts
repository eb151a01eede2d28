// A line diff for the versions of a procedure: what a new version removed and added, with a
// line of context, instead of both versions in full.

export type DiffLine =
  | { op: 'same' | 'del' | 'add'; text: string; /** 1-based position in its version. */ n: number }
  | { op: 'skip'; count: number };

/** The longest common subsequence diff of two lists of lines (both short: steps, a goal). */
export function lineDiff(a: string[], b: string[]): { op: 'same' | 'del' | 'add'; text: string; n: number }[] {
  const m = a.length;
  const n = b.length;
  // lcs[i][j]: length of the longest common subsequence of a[i..] and b[j..].
  const lcs: number[][] = Array.from({ length: m + 1 }, () => new Array<number>(n + 1).fill(0));
  for (let i = m - 1; i >= 0; i--) {
    for (let j = n - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out: { op: 'same' | 'del' | 'add'; text: string; n: number }[] = [];
  let i = 0;
  let j = 0;
  while (i < m || j < n) {
    if (i < m && j < n && a[i] === b[j]) {
      out.push({ op: 'same', text: b[j], n: j + 1 });
      i++;
      j++;
    } else if (j < n && (i === m || lcs[i][j + 1] >= lcs[i + 1][j])) {
      out.push({ op: 'add', text: b[j], n: j + 1 });
      j++;
    } else {
      out.push({ op: 'del', text: a[i], n: i + 1 });
      i++;
    }
  }
  return out;
}

/**
 * The diff with unchanged runs folded: `context` unchanged lines are kept next to each change,
 * the rest become one `skip` line saying how many.
 */
export function foldedDiff(a: string[], b: string[], context = 1): DiffLine[] {
  const d = lineDiff(a, b);
  const keep = d.map((x) => x.op !== 'same');
  const near = d.map((_, k) => {
    for (let t = Math.max(0, k - context); t <= Math.min(d.length - 1, k + context); t++) if (keep[t]) return true;
    return false;
  });
  const out: DiffLine[] = [];
  let skipped = 0;
  d.forEach((x, k) => {
    if (near[k]) {
      if (skipped) out.push({ op: 'skip', count: skipped });
      skipped = 0;
      out.push(x);
    } else skipped++;
  });
  if (skipped) out.push({ op: 'skip', count: skipped });
  return out;
}

/** A field's value as lines: steps one per line, objects as sorted `key: value` lines. */
export function asLines(v: unknown): string[] {
  if (v === null || v === undefined) return [];
  if (Array.isArray(v)) return v.map((s) => (typeof s === 'string' ? s : JSON.stringify(s)));
  if (typeof v === 'object') {
    return Object.entries(v as Record<string, unknown>)
      .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
      .map(([k, x]) => `${k}: ${typeof x === 'string' ? x : JSON.stringify(x)}`);
  }
  return String(v).split('\n');
}
