import { describe, it, expect, vi, beforeEach } from 'vitest';
import { fireEvent, screen, waitFor } from '@testing-library/svelte';
import { api, resetFake, makeDetail, HOSTILE } from './fakeApi';
import { renderAt, ids } from './helpers';
import { app } from '../src/state.svelte';

vi.mock('../src/api', async () => (await import('./fakeApi')).api);

const breakdown = (sim: number, rec: number) => ({
  similarity: sim,
  lexical: sim,
  semantic: 0.5,
  cosine: 0.4,
  recency: rec,
  scene: 0,
  priority: 0.5,
});

const answer0 = {
  results: [
    {
      id: 'mem_a',
      type: 'semantic' as const,
      content: HOSTILE,
      score: 0.81,
      bm25: -3,
      breakdown: breakdown(0.9, 0.7),
      age_days: 3,
      lexical_own: 0.6,
      lexical_context: 0.3,
      context_matches: [{ neighbour: 'mem_n', words: ['lake'], said: "matched its neighbour mem_n: 'lake'" }],
    },
    {
      id: 'mem_b',
      type: 'episodic' as const,
      content: 'second',
      score: 0.6,
      bm25: -2,
      breakdown: breakdown(0.6, 0.2),
      age_days: 400,
      lexical_own: 0.6,
      lexical_context: 0,
      context_matches: [],
    },
  ],
  declined: [
    {
      id: 'mem_c',
      type: 'episodic' as const,
      preview: 'old one',
      kind: 'ranked_out' as const,
      score: 0.3,
      breakdown: breakdown(0.3, 0.02),
      age_days: 426,
      component: 'recency',
      reason: 'recency 0.02 — 14 months old',
      superseded_by: null,
    },
    {
      id: 'mem_q',
      type: 'semantic' as const,
      preview: 'quarantined one',
      kind: 'excluded' as const,
      score: null,
      breakdown: null,
      age_days: 1,
      component: null,
      reason: 'in quarantine',
      superseded_by: null,
    },
  ],
  weights: { similarity: 0.7, recency: 0.1, scene: 0.1, priority: 0.1 },
  periods: [] as { said: string; from: string; until: string }[],
  searched_words: ['grafana', 'alerts'],
  recall_mode: 'lexical recall only: test',
};

beforeEach(() => {
  resetFake();
  api.recallExplain.mockResolvedValue(structuredClone(answer0));
});

async function typeQuery(text: string) {
  await fireEvent.input(screen.getByTestId('recall-query'), { target: { value: text } });
}

describe('recall view', () => {
  it('shows results with their breakdown and what was declined, with the reason', async () => {
    await renderAt('recall');
    await waitFor(() => expect(screen.getByTestId('recall-weight-similarity')).toBeTruthy());
    await typeQuery('grafana alerts');
    await waitFor(() => expect(ids('recall-result')).toEqual(['mem_a', 'mem_b']));
    const first = screen.getAllByTestId('recall-result')[0];
    const value = (p: string) => first.querySelector<HTMLElement>(`[data-testid="recall-breakdown-${p}"]`)!.dataset.value;
    expect([value('lexical'), value('semantic'), value('recency'), value('scene'), value('priority')]).toEqual([
      '0.9',
      '0.5',
      '0.7',
      '0',
      '0.5',
    ]);
    const declined = screen.getAllByTestId('recall-declined').map((d) => [d.dataset.id, d.dataset.reason]);
    expect(declined).toEqual([
      ['mem_c', 'recency 0.02 — 14 months old'],
      ['mem_q', 'in quarantine'],
    ]);
    expect(document.querySelector('img[src="x"]')).toBeNull();
    expect(screen.getByText(HOSTILE)).toBeTruthy();
    // The words searched, the lexical part split into own and context, and the neighbour named.
    expect(screen.getByTestId('recall-searched-words').textContent).toContain('grafana, alerts');
    const parts = first.querySelector<HTMLElement>('[data-testid="recall-lexical-parts"]')!;
    expect([parts.dataset.own, parts.dataset.context]).toEqual(['0.6', '0.3']);
    const via = screen.getAllByTestId('recall-context-match');
    expect(via.map((v) => v.dataset.neighbour)).toEqual(['mem_n']);
    expect(via[0].textContent?.replace(/\s+/g, ' ')).toContain("matched its neighbour mem_n: 'lake'");
  });

  it('asks with the weights of the settings, the context and the limit, and never with an empty query', async () => {
    await renderAt('recall');
    await waitFor(() => expect(screen.getByTestId('recall-weight-recency')).toBeTruthy());
    await new Promise((r) => setTimeout(r, 200));
    expect(api.recallExplain).not.toHaveBeenCalled();
    expect((screen.getByTestId('recall-weight-similarity') as HTMLInputElement).value).toBe('0.7');
    await fireEvent.input(screen.getByTestId('recall-project'), { target: { value: 'billing' } });
    await fireEvent.input(screen.getByTestId('recall-tags'), { target: { value: 'deploy, prod ,' } });
    await typeQuery('deploy');
    await waitFor(() => expect(api.recallExplain).toHaveBeenCalledTimes(1));
    expect(api.recallExplain.mock.calls[0][0]).toMatchObject({
      query: 'deploy',
      limit: 10,
      project: 'billing',
      tags: ['deploy', 'prod'],
      weights: { similarity: 0.7, recency: 0.1, scene: 0.1, priority: 0.1 },
    });
  });

  it('re-ranks when a slider moves, with one query in flight at a time', async () => {
    await renderAt('recall');
    await waitFor(() => expect(screen.getByTestId('recall-weight-recency')).toBeTruthy());
    await typeQuery('deploy');
    await waitFor(() => expect(api.recallExplain).toHaveBeenCalledTimes(1));
    const slider = screen.getByTestId('recall-weight-recency');
    // A slow answer: the drag's inputs meanwhile become one more query with the last value.
    let answer: (v: unknown) => void = () => {};
    api.recallExplain.mockImplementationOnce(() => new Promise((r) => (answer = r)));
    await fireEvent.input(slider, { target: { value: '0.05' } });
    await fireEvent.input(slider, { target: { value: '0.02' } });
    await fireEvent.input(slider, { target: { value: '0' } });
    expect(api.recallExplain).toHaveBeenCalledTimes(2);
    answer(structuredClone(answer0));
    await waitFor(() => expect(api.recallExplain).toHaveBeenCalledTimes(3));
    const last = () => api.recallExplain.mock.calls[api.recallExplain.mock.calls.length - 1][0];
    expect(last().weights).toEqual({ similarity: 0.7, recency: 0, scene: 0.1, priority: 0.1 });
    await fireEvent.click(screen.getByTestId('recall-weights-reset'));
    await waitFor(() => expect(api.recallExplain).toHaveBeenCalledTimes(4));
    expect(last().weights.recency).toBe(0.1);
  });

  it('says which period the query names, as text', async () => {
    const said = '<img src="x"> March 2026';
    api.recallExplain.mockResolvedValue({
      ...structuredClone(answer0),
      periods: [{ said, from: '2026-03-01T00:00:00.000Z', until: '2026-04-01T00:00:00.000Z' }],
    });
    await renderAt('recall');
    await waitFor(() => expect(screen.getByTestId('recall-weight-recency')).toBeTruthy());
    await typeQuery('deploy');
    await waitFor(() => expect(ids('recall-result')).toEqual(['mem_a', 'mem_b']));
    expect(screen.getByTestId('recall-periods').textContent).toContain(said);
    expect(screen.getByTestId('recall-periods').textContent).toContain('(2026-03-01 – 2026-03-31)');
    expect(document.querySelector('img[src="x"]')).toBeNull();
  });

  it('shows no period line when the query names none', async () => {
    await renderAt('recall');
    await waitFor(() => expect(screen.getByTestId('recall-weight-recency')).toBeTruthy());
    await typeQuery('deploy');
    await waitFor(() => expect(ids('recall-result')).toEqual(['mem_a', 'mem_b']));
    expect(screen.queryByTestId('recall-periods')).toBeNull();
  });

  it('opens a declined memory in the Memories view', async () => {
    await renderAt('recall');
    await waitFor(() => expect(screen.getByTestId('recall-weight-recency')).toBeTruthy());
    await typeQuery('deploy');
    await waitFor(() => expect(ids('recall-declined')).toHaveLength(2));
    await fireEvent.click(screen.getAllByTestId('recall-declined')[1].querySelector('button.content')!);
    expect(app.selectedId).toBe('mem_q');
    expect(app.view).toBe('memories');
  });
});

describe('recall log', () => {
  const log = {
    items: [
      {
        id: 7,
        actor: 'agent:claude',
        at: '2026-06-01T10:00:00.000Z',
        query: HOSTILE,
        context: { session: null, project: 'billing', workflow: null, tags: [], task_kind: null },
        results: [{ id: 'mem_a', score: 0.8 }],
      },
      {
        id: 6,
        actor: 'user',
        at: '2026-06-01T09:00:00.000Z',
        query: 'deploy',
        context: { session: null, project: null, workflow: null, tags: [], task_kind: null },
        results: [],
      },
    ],
    actors: ['agent:claude', 'user'],
  };

  it('lists agent recalls newest first, filters by actor and re-reads on a change', async () => {
    api.recallLog.mockResolvedValue(structuredClone(log));
    await renderAt('recall');
    await waitFor(() => expect(ids('recall-log-row')).toEqual(['7', '6']));
    // What was returned reads as its content, not its id.
    await waitFor(() => expect(screen.getByTestId('recall-log-ref')).toHaveTextContent('content of mem_a'));
    expect(document.querySelector('img[src="x"]')).toBeNull();
    expect(screen.getByText(HOSTILE)).toBeTruthy();
    await fireEvent.change(screen.getByTestId('recall-log-actor'), { target: { value: 'agent:claude' } });
    await waitFor(() => expect(api.recallLog).toHaveBeenLastCalledWith({ actor: 'agent:claude', memoryId: undefined, limit: 200 }));
    const calls = api.recallLog.mock.calls.length;
    const { notifyChanged } = await import('../src/state.svelte');
    notifyChanged(null);
    await waitFor(() => expect(api.recallLog.mock.calls.length).toBe(calls + 1));
  });

  it("a memory's detail lists the recalls that returned it", async () => {
    api.showMemory.mockResolvedValue(makeDetail('mem_a'));
    api.recallLog.mockResolvedValue({ items: [structuredClone(log.items[0])], actors: ['agent:claude'] });
    await renderAt('memories');
    app.selectedId = 'mem_a';
    await waitFor(() => expect(screen.getByTestId('memory-recalls')).toBeInTheDocument());
    await waitFor(() => expect(ids('recall-log-row')).toEqual(['7']));
    expect(api.recallLog).toHaveBeenCalledWith({ actor: undefined, memoryId: 'mem_a', limit: 20 });
  });

  it('a memory\'s detail lists its five nearest memories with similarity, kind and evidence, and opens one', async () => {
    api.showMemory.mockImplementation(async (id: string) => makeDetail(id));
    const none = { matching: [], differing: [], summary: '' };
    api.similarMemories.mockResolvedValue({
      items: [
        { id: 'mem_s1', type: 'semantic', preview: HOSTILE, similarity: 0.91, kind: 'duplicate', evidence: { ...none, summary: `same: ${HOSTILE}` } },
        { id: 'mem_s2', type: 'episodic', preview: 'near copy', similarity: 0.8, kind: 'related', evidence: none },
      ],
    });
    await renderAt('memories');
    app.selectedId = 'mem_a';
    await waitFor(() => expect(ids('similar-memory')).toEqual(['mem_s1', 'mem_s2']));
    expect(api.similarMemories).toHaveBeenCalledWith('mem_a');
    const kinds = screen.getAllByTestId('similar-memory').map((e) => [e.dataset.kind, e.dataset.similarity]);
    expect(kinds).toEqual([['duplicate', '0.91'], ['related', '0.8']]);
    expect(screen.getAllByTestId('similar-evidence').map((e) => e.textContent)).toEqual([`same: ${HOSTILE}`]);
    expect(document.querySelector('img[src="x"]')).toBeNull();
    expect(screen.queryByTestId('similar-supersede')).toBeNull();
    await fireEvent.click(screen.getAllByTestId('similar-memory')[1].querySelector('button')!);
    expect(app.selectedId).toBe('mem_s2');
  });

  it('a possible update offers to supersede the older, and only when asked', async () => {
    api.showMemory.mockImplementation(async (id: string) => makeDetail(id));
    api.similarMemories.mockResolvedValue({
      items: [
        {
          id: 'mem_old',
          type: 'semantic',
          preview: 'Retry limit for the email sender is 3 attempts.',
          similarity: 0.99,
          kind: 'possible update',
          evidence: { matching: ['retry'], differing: [{ what: 'value', this: '5', other: '3' }], summary: 'same: retry; differs: 5 → 3' },
        },
      ],
    });
    api.supersedeDuplicate.mockResolvedValue({ superseded: true });
    await renderAt('memories');
    app.selectedId = 'mem_a';
    await waitFor(() => expect(screen.getByTestId('similar-supersede')).toBeInTheDocument());
    expect(screen.getByTestId('similar-evidence').textContent).toBe('same: retry; differs: 5 → 3');
    expect(api.supersedeDuplicate).not.toHaveBeenCalled();
    await fireEvent.click(screen.getByTestId('similar-supersede'));
    await waitFor(() => expect(api.supersedeDuplicate).toHaveBeenCalledWith('mem_a', 'mem_old'));
  });
});
