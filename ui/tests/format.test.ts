import { describe, it, expect } from 'vitest';
import { changedPaths, eventSummary, featureText, fmt3, fmtNum, fmtSigned3, fmtOffset, projectedForget, svgDataUrl } from '../src/format';

describe('format', () => {
  it('rounds to three decimals for display only', () => {
    expect(fmt3(0.1234567)).toBe('0.123');
    expect(fmt3(1)).toBe('1.000');
    expect(fmt3(null)).toBe('—');
    expect(fmtSigned3(-0.3)).toBe('−0.300');
    expect(fmtSigned3(0.0005)).toBe('+0.001');
    expect(fmtSigned3(0)).toBe('±0.000');
  });

  it('offset label', () => {
    expect(fmtOffset(0)).toBe('now');
    expect(fmtOffset(-30)).toBe('now − 30 d');
    expect(fmtOffset(365)).toBe('now + 365 d');
  });

  it('encodes SVG (with non-ASCII labels) as a base64 data URL that decodes back exactly', () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg"><text>Gedächtnis — 記憶 <script>x</script></text></svg>';
    const url = svgDataUrl(svg);
    expect(url.startsWith('data:image/svg+xml;base64,')).toBe(true);
    const bytes = Uint8Array.from(atob(url.split(',')[1]), (c) => c.charCodeAt(0));
    expect(new TextDecoder().decode(bytes)).toBe(svg);
  });

  it('handles large SVGs without blowing the stack', () => {
    const svg = `<svg>${'<rect/>'.repeat(100_000)}</svg>`;
    expect(svgDataUrl(svg).length).toBeGreaterThan(svg.length);
  });
});


const ev = (o: Partial<Parameters<typeof eventSummary>[0]>) => ({ kind: 'action', action: 'edit', reason: null, policy: null, before: null, after: null, ...o });

describe('event summaries', () => {
  it('say what happened in words, never as JSON', () => {
    expect(eventSummary(ev({ action: 'remember', after: { preview: 'pnpm only', type: 'semantic' } }))).toBe('“pnpm only”');
    expect(eventSummary(ev({ action: 'pin', before: { pinned: false }, after: { pinned: true } }))).toBe('pinned');
    expect(eventSummary(ev({ action: 'unpin', before: true, after: false }))).toBe('unpinned');
    expect(eventSummary(ev({ action: 'restore', before: { is_deleted: true }, after: { is_deleted: false } }))).toBe('restored from quarantine');
    expect(eventSummary(ev({ action: 'importance', before: { importance: 0.5 }, after: { importance: 0.9 } }))).toBe('importance 0.5 → 0.9');
    expect(eventSummary(ev({ action: 'edit', after: { content_preview: 'new text' } }))).toBe('edited → “new text”');
    expect(eventSummary(ev({ action: 'reflect', after: { failure_type: 'tool_error', failure_description: 'timed out' } }))).toBe('reflection (tool_error): timed out');
  });

  it('name the settings that changed, or count them when many did', () => {
    const before = { threshold: 0.6, weights: { recency: 0.35, usage: 0.25 }, trivial_phrases: ['ok'] };
    expect(eventSummary(ev({ action: 'settings', before, after: { ...before, threshold: 0.65 } }))).toBe('policy changed: threshold 0.6 → 0.65');
    const many = { threshold: 0.7, weights: { recency: 0.4, usage: 0.3 }, trivial_phrases: ['ok', 'thanks'] };
    expect(eventSummary(ev({ action: 'settings', before, after: many }))).toBe(
      'policy changed: 4 fields: threshold, weights.recency, weights.usage, trivial_phrases',
    );
    expect(eventSummary(ev({ action: 'settings', before: null, after: null }))).toBe('policy changed');
    expect(changedPaths({ a: { b: 1, c: 2 } }, { a: { b: 1, c: 3 } })).toEqual(['a.c']);
  });

  it('lists the procedure fields an update touched', () => {
    const before = { task_goal: 'g', steps: ['a'], content: 'c' };
    expect(eventSummary(ev({ action: 'procedure_update', before, after: { ...before, steps: ['a', 'b'], version: 3 } }))).toBe(
      'procedure updated to v3: steps',
    );
  });

  it('keep the engine reason of forgetting events with the policy, in words', () => {
    expect(eventSummary(ev({ kind: 'forgetting', action: 'soft', reason: 'old, unused', policy: 'forget-score' }))).toBe('old, unused (by the forget policy)');
    expect(eventSummary(ev({ kind: 'forgetting', action: 'hard', reason: null, policy: null }))).toBe('deleted for ever');
  });

  it('fall back to a readable before → after for unknown actions', () => {
    expect(eventSummary(ev({ action: 'mystery', before: false, after: true }))).toBe('no → yes');
    expect(eventSummary(ev({ action: 'mystery', before: { a: 1, b: [1] }, after: { a: 2, b: [1] } }))).toBe('a 1 → 2');
    expect(eventSummary(ev({ action: 'mystery', reason: 'because', before: null, after: null }))).toBe('because');
    expect(fmtNum(0.30000000000000004)).toBe('0.3');
  });
});

describe('breakdown and projection text', () => {
  const f = { recency: 0.0031, usage: 0, duplication: 0.846, importance: 0.04, pinned: 1 };
  it('names the raw feature so label and number agree', () => {
    expect(featureText('recency', f)).toBe('recency 0.003');
    expect(featureText('usage', f)).toBe('usage 0.000');
    expect(featureText('duplication', f)).toBe('0.846');
    expect(featureText('pinned', f)).toBe('yes');
    expect(featureText('pinned', { ...f, pinned: 0 })).toBe('no');
  });

  it('says "already due" instead of a date when the score is over the threshold', () => {
    const d = { never_forgettable: false, forget_score: 0.76, threshold: 0.6, would_forget: true, projected_forget_at: '2026-11-29T22:38:00Z' };
    expect(projectedForget(d)).toBe('already due (score ≥ threshold)');
    expect(projectedForget({ ...d, would_forget: false })).toBe('already due (score ≥ threshold)');
    expect(projectedForget({ ...d, forget_score: 0.3, would_forget: false })).toMatch(/^2026-11-29 \d\d:38$/);
    expect(projectedForget({ ...d, forget_score: 0.3, would_forget: false, projected_forget_at: null })).toBe('never');
    expect(projectedForget({ ...d, never_forgettable: true })).toBe('never');
  });
});

describe('polish formatting (#25)', () => {
  it('groups thousands whatever the locale, rounds milliseconds, pluralises', async () => {
    const { fmtInt, fmtMs, plural, splitIds, chartFit } = await import('../src/format');
    expect(fmtInt(100000)).toBe('100,000');
    expect(fmtInt(999)).toBe('999');
    expect(fmtInt(-1234)).toBe('−1,234');
    expect(fmtMs(10.455575999999999)).toBe('10 ms');
    expect(fmtMs(3.14159)).toBe('3.1 ms');
    expect(fmtMs(0.4219)).toBe('0.42 ms');
    expect(fmtMs(1530)).toBe('1.5 s');
    expect(plural(1, 'note')).toBe('1 note');
    expect(plural(2, 'note')).toBe('2 notes');
    expect(plural(1200, 'memory', 'memories')).toBe('1,200 memories');
    expect(splitIds('duplicate of mem_ab12-cd (same words)')).toEqual([
      { text: 'duplicate of ', id: false },
      { text: 'mem_ab12-cd', id: true },
      { text: ' (same words)', id: false },
    ]);
    expect(chartFit(0)).toEqual({});
    expect(chartFit(517, 2)).toEqual({ width: 480, dpr: 2 });
    expect(chartFit(100, 1.3)).toEqual({ width: 240, dpr: 1.25 });
  });

  it('keys: only text entry swallows shortcuts; digits map onto the view order', async () => {
    const { isTextEntry, viewForKey } = await import('../src/keys');
    const el = (tag: string, type?: string) => {
      const e = document.createElement(tag);
      if (type) (e as HTMLInputElement).type = type;
      return e;
    };
    expect(isTextEntry(el('input', 'range'))).toBe(false);
    expect(isTextEntry(el('input', 'checkbox'))).toBe(false);
    expect(isTextEntry(el('select'))).toBe(false);
    expect(isTextEntry(el('button'))).toBe(false);
    expect(isTextEntry(el('input', 'text'))).toBe(true);
    expect(isTextEntry(el('input', 'search'))).toBe(true);
    expect(isTextEntry(el('input', 'number'))).toBe(true);
    expect(isTextEntry(el('textarea'))).toBe(true);
    const views = ['a', 'b', 'c'];
    expect(viewForKey('1', views)).toBe('a');
    expect(viewForKey('3', views)).toBe('c');
    expect(viewForKey('4', views)).toBeNull();
    expect(viewForKey('0', views)).toBeNull();
    expect(viewForKey('j', views)).toBeNull();
  });
});
