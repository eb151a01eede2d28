import { describe, it, expect } from 'vitest';
import { actionWords, policyWords, reasonIds, reasonText } from '../src/words';

describe('the engine codes in words', () => {
  it('names the memory a duplicate reason points at by its text, never its id', () => {
    const text = (id: string) => (id === 'mem_abc' ? 'Deploys need two approvals from the platform team before noon' : null);
    const r = 'old, unused, duplicate of mem_abc (near-copy), not pinned';
    expect(reasonIds(r)).toEqual(['mem_abc']);
    expect(reasonText(r, text)).toBe('old, unused, duplicate of “Deploys need two approvals from the platform te…” (near-copy), not pinned');
    expect(reasonText(r)).toBe('old, unused, duplicate of another memory (near-copy), not pinned');
    expect(reasonText(r, text)).not.toContain('mem_');
  });

  it('says the working-memory gate and the review band in plain words', () => {
    expect(reasonText('working gate: older than 48 h')).toBe('working memory older than 48 h');
    expect(reasonText('working gate: beyond the last 50 turns of the session')).toBe('working memory beyond the last 50 turns of the session');
    expect(reasonText('entered the review band')).not.toMatch(/review band/);
    expect(reasonText(null)).toBe('');
  });

  it('says actions and policies in words, leaving unknown codes readable', () => {
    expect([actionWords('soft'), actionWords('hard'), actionWords('review')]).toEqual(['quarantined', 'deleted for ever', 'flagged for a look']);
    expect(actionWords('something_new')).toBe('something new');
    expect(policyWords('working-gate')).toBe('working memory past its window');
    expect(policyWords('forget-score')).toBe('by the forget policy');
    expect(policyWords('my-policy')).toBe('my policy');
  });
});
