import { describe, it, expect, vi, beforeEach } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/svelte';
import { api, resetFake, HOSTILE } from './fakeApi';
import { renderAt, ids, flush } from './helpers';
import { app } from '../src/state.svelte';
import { VIEWS } from '../src/state.svelte';
import type { ClusterMember, Clusters } from '../src/types';

vi.mock('../src/api', async () => (await import('./fakeApi')).api);

function member(id: string, over: Partial<ClusterMember> = {}): ClusterMember {
  return {
    id,
    type: 'semantic',
    text: `text of ${id}`,
    created_at: '2026-01-01T00:00:00.000Z',
    importance: 0.5,
    pinned: false,
    forget_score: 0.3,
    would_forget: false,
    dominant: false,
    similarity: 0.9,
    kind: 'same meaning',
    evidence: null,
    ...over,
  };
}

const clusters: Clusters = {
  total: 2,
  threshold: 0.7,
  items: [
    {
      dominant: 'mem_a',
      similarity: 0.95,
      size: 3,
      members: [
        member('mem_a', { dominant: true, similarity: 1, kind: '', created_at: '2025-06-01T00:00:00.000Z', text: HOSTILE }),
        member('mem_b', { similarity: 0.95, created_at: '2026-02-01T00:00:00.000Z' }),
        member('mem_c', { similarity: 0.8, created_at: '2024-01-01T00:00:00.000Z' }),
      ],
    },
    {
      dominant: 'mem_x',
      similarity: 0.75,
      size: 2,
      members: [member('mem_x', { dominant: true, similarity: 1, kind: '' }), member('mem_y', { similarity: 0.75, kind: 'same words' })],
    },
  ],
  related: {
    scanned: 120,
    total: 3,
    threshold: 0.5,
    judgment: 'words, values and meaning (potion-base-8M)',
    items: [
      {
        older: { id: 'mem_r3', type: 'semantic', text: 'Retry limit for the email sender is 3 attempts.', created_at: '2026-01-02T00:00:00.000Z', importance: 0.5, pinned: false, forget_score: 0.31, would_forget: false },
        newer: { id: 'mem_r5', type: 'semantic', text: 'Retry limit for the email sender is 5 attempts.', created_at: '2026-01-05T00:00:00.000Z', importance: 0.5, pinned: false, forget_score: 0.2, would_forget: false },
        kind: 'possible update',
        closeness: 0.93,
        evidence: { matching: ['retry', 'limit', 'email'], differing: [{ what: 'value', this: '3', other: '5' }], summary: 'same: retry, limit, email; differs: 3 → 5' },
      },
      {
        older: { id: 'mem_p', type: 'episodic', text: HOSTILE, created_at: '2026-01-02T00:00:00.000Z', importance: 0.5, pinned: false, forget_score: 0.31, would_forget: false },
        newer: { id: 'mem_f', type: 'episodic', text: 'The nightly backup job failed.', created_at: '2026-01-03T00:00:00.000Z', importance: 0.5, pinned: false, forget_score: 0.2, would_forget: false },
        kind: 'related',
        closeness: 0.8,
        evidence: { matching: ['nightly', 'backup'], differing: [{ what: 'polarity', this: 'passed', other: 'failed' }], summary: `same: nightly, backup; differs: ${HOSTILE} → failed` },
      },
    ],
  },
};

beforeEach(() => {
  resetFake();
  api.duplicates.mockResolvedValue(structuredClone(clusters));
});

async function open() {
  await renderAt('duplicates');
  await waitFor(() => expect(ids('duplicate-cluster')).toEqual(['mem_a', 'mem_x']));
}

const key = (k: string, target: Element | Window = window) => fireEvent.keyDown(target, { key: k });

describe('duplicates review', () => {
  it('is the last view, so its digit key follows the others', () => {
    expect(VIEWS[VIEWS.length - 1]).toBe('duplicates');
  });

  it('shows clusters side by side with the dominant member marked, texts as text', async () => {
    await open();
    const first = screen.getAllByTestId('duplicate-cluster')[0];
    const members = within(first).getAllByTestId('duplicate-member');
    expect(members.map((m) => [m.dataset.id, m.dataset.dominant])).toEqual([
      ['mem_a', 'true'],
      ['mem_b', 'false'],
      ['mem_c', 'false'],
    ]);
    expect(within(members[0]).getByTestId('duplicate-dominant')).toBeTruthy();
    expect(within(members[1]).queryByTestId('duplicate-dominant')).toBeNull();
    expect(document.querySelector('img[src="x"]')).toBeNull();
    expect(within(members[0]).getAllByText(HOSTILE).length).toBeGreaterThan(0);
    // The members' references come with the list: no show_memory per member.
    expect(api.showMemory).not.toHaveBeenCalled();
  });

  it('keep both (button and x) dismisses the pair of the dominant and the most similar member', async () => {
    await open();
    await fireEvent.click(within(screen.getAllByTestId('duplicate-cluster')[1]).getByTestId('duplicate-keep'));
    await waitFor(() => expect(api.keepBoth).toHaveBeenCalledWith('mem_x', 'mem_y'));
    await waitFor(() => expect(api.duplicates).toHaveBeenCalledTimes(2));
    // Focus is on the second cluster now; k goes back to the first, x keeps its pair.
    await key('k');
    await key('x');
    await waitFor(() => expect(api.keepBoth).toHaveBeenLastCalledWith('mem_a', 'mem_b'));
  });

  it('j/k move between clusters; s supersedes, d deletes the compared member', async () => {
    await open();
    const cl = () => screen.getAllByTestId('duplicate-cluster');
    expect(cl()[0].getAttribute('aria-current')).toBe('true');
    await key('j');
    expect(cl()[1].getAttribute('aria-current')).toBe('true');
    await key('j');
    expect(cl()[1].getAttribute('aria-current')).toBe('true');
    await key('k');
    expect(cl()[0].getAttribute('aria-current')).toBe('true');
    // Compare with mem_c instead (its Compare button), then supersede: the engine picks the older.
    expect(within(cl()[1]).queryByTestId('duplicate-compare')).toBeNull();
    await fireEvent.click(within(cl()[0]).getAllByTestId('duplicate-compare')[1]);
    expect(within(cl()[0]).getByTestId('duplicate-supersede').dataset.old).toBe('mem_c');
    await key('s');
    await waitFor(() => expect(api.supersedeDuplicate).toHaveBeenCalledWith('mem_a', 'mem_c'));
    await key('d');
    await waitFor(() => expect(api.deleteMemory).toHaveBeenCalledWith('mem_c', 'duplicate of mem_a'));
    expect(app.toast?.actionLabel).toBe('Undo');
    await app.toast!.action!();
    expect(api.restoreMemory).toHaveBeenCalledWith('mem_c');
  });

  it('keys pause while typing in a text input and while a modal is open', async () => {
    await open();
    const input = document.createElement('input');
    document.body.appendChild(input);
    await key('x', input);
    await key('s', input);
    await key('d', input);
    app.modal = true;
    await key('x');
    app.modal = false;
    await flush();
    expect(api.keepBoth).not.toHaveBeenCalled();
    expect(api.supersedeDuplicate).not.toHaveBeenCalled();
    expect(api.deleteMemory).not.toHaveBeenCalled();
    input.remove();
  });

  it('an action that fails says why and keeps the cluster', async () => {
    api.keepBoth.mockRejectedValueOnce({ code: 'not_found', message: 'not found: memory mem_b' });
    await open();
    await key('x');
    await waitFor(() => expect(app.toast?.kind).toBe('error'));
    expect(app.toast?.message).toBe('Memory mem_b');
    expect(ids('duplicate-cluster')).toEqual(['mem_a', 'mem_x']);
  });

  it('says so when there is nothing to review, and a member opens the memory', async () => {
    api.duplicates.mockResolvedValueOnce({ ...structuredClone(clusters), total: 0, items: [] });
    await renderAt('duplicates');
    await waitFor(() => expect(screen.getByTestId('duplicates-empty')).toBeTruthy());
    api.duplicates.mockResolvedValue(structuredClone(clusters));
    app.change = { seq: app.change.seq + 1, ids: null };
    await waitFor(() => expect(ids('duplicate-cluster')).toEqual(['mem_a', 'mem_x']));
    await fireEvent.click(screen.getAllByTestId('duplicate-ref')[1]);
    expect(app.view).toBe('memories');
    expect(app.selectedId).toBe('mem_b');
  });
});

describe('health lists on the overview', () => {
  const item = (id: string, over = {}) => ({
    id,
    type: 'episodic' as const,
    preview: `preview ${id}`,
    created_at: '2025-01-01T00:00:00.000Z',
    age_days: 45.5,
    importance: 0.5,
    pinned: false,
    forget_score: 0.58,
    would_forget: false,
    recall_count: 0,
    avg_confidence: null,
    crosses_in_days: null,
    ...over,
  });

  it('shows each list with its name and total, and an item opens the memory', async () => {
    api.health.mockResolvedValue({
      lists: [
        { name: 'never_recalled', total: 31, items: [item('mem_n1'), item('mem_n2', { preview: HOSTILE })] },
        { name: 'forget_soon', total: 1, items: [item('mem_s', { crosses_in_days: 2.25 })] },
        { name: 'pinned_never_recalled', total: 0, items: [] },
        { name: 'low_confidence', total: 1, items: [item('mem_l', { recall_count: 7, avg_confidence: 0.31 })] },
      ],
    });
    await renderAt('overview');
    await waitFor(() => expect(screen.getAllByTestId('health-list')).toHaveLength(4));
    const lists = screen.getAllByTestId('health-list');
    expect(lists.map((l) => [l.dataset.list, l.dataset.total])).toEqual([
      ['never_recalled', '31'],
      ['forget_soon', '1'],
      ['pinned_never_recalled', '0'],
      ['low_confidence', '1'],
    ]);
    expect(within(lists[0]).getByTestId('health-more')).toHaveTextContent('and 29 more memories — show all 31 in Memories');
    expect(within(lists[1]).getByText('in 2.3 d')).toBeTruthy();
    expect(within(lists[3]).getByText('7× · 0.310')).toBeTruthy();
    expect(within(lists[2]).getByText('Every pinned memory was recalled.')).toBeTruthy();
    expect(document.querySelector('img[src="x"]')).toBeNull();
    // The items' references come with the lists (the latest activity looks up its own).
    const looked = api.showMemory.mock.calls.map((c) => c[0]);
    expect(looked.filter((id) => String(id).startsWith('mem_n') || ['mem_s', 'mem_l'].includes(id))).toEqual([]);
    await fireEvent.click(within(lists[3]).getByTestId('health-ref'));
    expect(app.view).toBe('memories');
    expect(app.selectedId).toBe('mem_l');
  });

  it('lists related pairs apart from the clusters, with their evidence as text, and never as clusters', async () => {
    await open();
    const section = screen.getByTestId('related-section');
    const pairs = within(section).getAllByTestId('related-pair');
    expect(pairs.map((p) => [p.dataset.kind, p.dataset.older, p.dataset.newer])).toEqual([
      ['possible update', 'mem_r3', 'mem_r5'],
      ['related', 'mem_p', 'mem_f'],
    ]);
    // Related memories are not cluster members: the clusters stay as they were.
    expect(ids('duplicate-cluster')).toEqual(['mem_a', 'mem_x']);
    for (const c of screen.getAllByTestId('duplicate-cluster')) expect(c.contains(section)).toBe(false);
    expect(within(section).getByTestId('related-total').textContent).toContain('3 pairs');
    expect(within(section).getByTestId('related-total').textContent).toContain('first 2 shown');
    expect(section.textContent).toContain('120 most recently written');
    const evidence = within(section).getAllByTestId('related-evidence').map((e) => e.textContent);
    expect(evidence[0]).toBe('same: retry, limit, email; differs: 3 → 5');
    // Agent text and evidence are text, never markup.
    expect(evidence[1]).toContain(HOSTILE);
    expect(document.querySelector('img[src="x"]')).toBeNull();
    // Only a possible update offers the supersede.
    expect(within(pairs[0]).getByTestId('related-supersede')).toBeTruthy();
    expect(within(pairs[1]).queryByTestId('related-supersede')).toBeNull();
  });

  it('supersedes the older of a possible update through the audited supersede', async () => {
    api.supersedeDuplicate.mockResolvedValue({ old: 'mem_r3', new: 'mem_r5', superseded: true });
    await open();
    await fireEvent.click(screen.getByTestId('related-supersede'));
    await waitFor(() => expect(api.supersedeDuplicate).toHaveBeenCalledWith('mem_r3', 'mem_r5'));
    expect(api.keepBoth).not.toHaveBeenCalled();
    expect(api.deleteMemory).not.toHaveBeenCalled();
  });

  it('says so when no related pair was found', async () => {
    api.duplicates.mockResolvedValue({ ...structuredClone(clusters), related: { ...clusters.related, total: 0, items: [] } });
    await open();
    expect(screen.getByTestId('related-empty')).toBeTruthy();
    expect(screen.queryByTestId('related-pair')).toBeNull();
  });
});
