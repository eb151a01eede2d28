// The engine's codes as a person reads them, in one place: audit actions, the batch's policies
// and the parts of its reasons. The CLI and MCP keep the codes (scripts match on them); every
// view of the window says them through this module, so it says them one way.

/** An audit or forgetting action in words ("soft" → "quarantined"); unknown codes as they are. */
const ACTIONS: Record<string, string> = {
  soft: 'quarantined',
  hard: 'deleted for ever',
  review: 'flagged for a look',
  restore: 'restored',
  purge: 'deleted for ever (quarantine expired)',
  remember: 'written',
  pin: 'pinned',
  unpin: 'unpinned',
  edit: 'edited',
  importance: 'importance changed',
  supersede: 'superseded',
  settings: 'policy changed',
  end_session: 'session ended',
  task_log: 'task log',
  archive: 'archived',
  unarchive: 'unarchived',
  cite: 'cited',
  reflect: 'reflection added',
  procedure_update: 'procedure updated',
  rollback: 'rolled back',
  forget_run: 'forget run',
  undo_forget_run: 'forget run undone',
  refused: 'refused',
};

export function actionWords(action: string): string {
  return ACTIONS[action] ?? action.replace(/_/g, ' ');
}

/** Why the batch acted, from its policy code ("working-gate" → "working memory past its window"). */
const POLICIES: Record<string, string> = {
  'forget-score': 'by the forget policy',
  threshold: 'by the forget policy',
  'working-gate': 'working memory past its window',
  'review-band': 'close to the forget threshold',
  'quarantine-expired': 'quarantine expired',
  manual: 'by hand',
  agent: 'by an agent',
};

export function policyWords(policy: string): string {
  return POLICIES[policy] ?? policy.replace(/-/g, ' ');
}

/** One part of a reason: plain text, or the memory it names (shown by its text, never its id). */
export type ReasonPart = { text: string } | { duplicateOf: string; kind: string | null };

const DUPLICATE = /^duplicate of (mem_[0-9A-Za-z_-]+)(?: \((.+)\))?$/;

function partWords(p: string): ReasonPart {
  const dup = DUPLICATE.exec(p);
  if (dup) return { duplicateOf: dup[1], kind: dup[2] ?? null };
  // As the engine's quarantine filter names it ("working memory older than 48 h").
  const gate = /^working gate: (.*)$/.exec(p);
  if (gate) return { text: `working memory ${gate[1]}` };
  if (p === 'entered the review band') return { text: 'close to the forget threshold: flagged for a look, nothing deleted' };
  return { text: p };
}

/** The parts of an engine reason ("old, unused, duplicate of mem_x (near-copy)") in words. */
export function reasonParts(reason: string | null | undefined): ReasonPart[] {
  if (!reason) return [];
  return reason
    .split(', ')
    .map((p) => p.trim())
    .filter(Boolean)
    .map(partWords);
}

/** The memory ids a reason names (to look their text up). */
export function reasonIds(reason: string | null | undefined): string[] {
  return reasonParts(reason).flatMap((p) => ('duplicateOf' in p ? [p.duplicateOf] : []));
}

/**
 * A reason as one line of words, each memory it names by its text (`textOf`, truncated);
 * a memory whose text is not known yet (or gone) is "another memory".
 */
export function reasonText(reason: string | null | undefined, textOf: (id: string) => string | null = () => null, max = 48): string {
  return reasonParts(reason)
    .map((p) => {
      if ('text' in p) return p.text;
      const t = textOf(p.duplicateOf);
      const named = t ? `“${t.length > max ? `${t.slice(0, max - 1)}…` : t}”` : 'another memory';
      return `duplicate of ${named}${p.kind ? ` (${p.kind})` : ''}`;
    })
    .join(', ');
}

/** The Overview's health lists by the engine's names: their titles and what "none" says. */
export const HEALTH_LISTS: Record<string, { title: string; none: string }> = {
  never_recalled: { title: 'Never recalled, older than 30 days', none: 'Every memory older than 30 days was recalled.' },
  forget_soon: { title: 'Crossing the forget threshold within 7 days', none: 'Nothing crosses the threshold this week.' },
  pinned_never_recalled: { title: 'Pinned but never recalled', none: 'Every pinned memory was recalled.' },
  low_confidence: { title: 'Often recalled, low confidence (< 0.5)', none: 'No memory is recalled often with low confidence.' },
};

/** The counts a forget run reports, in words (the dry run's and the result's). */
export const RUN_WORDS = {
  byScore: 'score at or above the threshold',
  byGate: 'working memories past their window',
  review: 'close to the threshold: flagged for a look',
  purged: 'deleted for ever (quarantine expired)',
} as const;

/** The one number every view shows of what the policy is about to do. */
export const NEXT_RUN = 'will be forgotten at the next run';
