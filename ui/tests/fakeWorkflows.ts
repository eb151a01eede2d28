// A stand-in for the engine's procedures page (the shell's `workflows` command) in the UI's
// tests: the same search, group order and pages over a list of procedures. The engine's own
// rules are tested in Rust.
import type { Memory, ProcedurePage, ProcedureQuery } from '../src/types';
import { asList } from '../src/format';

const groupOf = (m: Memory): string | null => m.workflow_name || m.skill_name || null;

/** A `workflows` command over `items` (in the engine's order within a group), answering as the shell does. */
export function workflowsOf(items: Memory[]) {
  return async (q: ProcedureQuery = {}): Promise<ProcedurePage> => {
    const words = (q.search ?? '').toLowerCase().split(/\s+/).filter(Boolean);
    const kept = items
      .filter((m) => {
        const h = [m.task_goal ?? '', ...asList(m.steps), m.workflow_name ?? '', m.skill_name ?? '', m.content, m.id].join('\n').toLowerCase();
        return words.every((w) => h.includes(w));
      })
      .map((m, i) => ({ m, i, g: groupOf(m) }))
      .sort((a, b) => {
        if (a.g === b.g) return a.i - b.i;
        if (a.g === null) return 1;
        if (b.g === null) return -1;
        const x = a.g.toLowerCase();
        const y = b.g.toLowerCase();
        return x < y ? -1 : x > y ? 1 : a.g < b.g ? -1 : 1;
      });
    const groups: { name: string | null; count: number }[] = [];
    for (const k of kept) {
      const last = groups[groups.length - 1];
      if (last && last.name === k.g) last.count++;
      else groups.push({ name: k.g, count: 1 });
    }
    const offset = Math.min(q.offset ?? 0, kept.length);
    return { total: items.length, matching: kept.length, groups, offset, items: kept.slice(offset, offset + (q.limit ?? 100)).map((k) => k.m) };
  };
}
