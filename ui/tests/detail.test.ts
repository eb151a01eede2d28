import { describe, it, expect, vi, beforeEach } from 'vitest';
import { fireEvent, screen, waitFor } from '@testing-library/svelte';
import { api, resetFake, makeDetail, HOSTILE, SVG } from './fakeApi';
import { openDetail } from './helpers';
import { app } from '../src/state.svelte';

vi.mock('../src/api', async () => (await import('./fakeApi')).api);

beforeEach(() => resetFake());

describe('memory detail', () => {
  it('draws five signed bars whose data-value is the raw component', async () => {
    const components = { recency: 0.31234567891234, usage: 0.2, duplication: 0.0400000001, importance: -0.105, pinned: -0.3 };
    api.showMemory.mockResolvedValue(makeDetail('mem_x', { components, forget_score: 0.14734567901234, threshold: 0.6 }));
    await openDetail('mem_x');
    expect(screen.getByTestId('breakdown-recency')).toHaveAttribute('data-value', '0.31234567891234');
    expect(screen.getByTestId('breakdown-usage')).toHaveAttribute('data-value', '0.2');
    expect(screen.getByTestId('breakdown-duplication')).toHaveAttribute('data-value', '0.0400000001');
    expect(screen.getByTestId('breakdown-importance')).toHaveAttribute('data-value', '-0.105');
    expect(screen.getByTestId('breakdown-pinned')).toHaveAttribute('data-value', '-0.3');
    expect(screen.getByTestId('forget-score')).toHaveAttribute('data-value', '0.14734567901234');
    expect(screen.getByTestId('threshold-mark')).toHaveAttribute('data-value', '0.6');
    // Shown with 3 decimals and a sign; negative bars extend left of the centre line.
    expect(screen.getByTestId('breakdown-importance')).toHaveTextContent('−0.105');
    expect(screen.getByTestId('breakdown-recency')).toHaveTextContent('+0.312');
    expect(screen.getByTestId('forget-score')).toHaveTextContent('0.147');
    const neg = screen.getByTestId('breakdown-pinned').querySelector('.bar-fill') as HTMLElement;
    expect(neg.classList.contains('neg')).toBe(true);
    // A waterfall on one axis: the pinned part ends where the total ends.
    const total = screen.getByTestId("forget-score").querySelector(".bar-fill") as HTMLElement;
    expect(parseFloat(neg.style.left)).toBeCloseTo(parseFloat(total.style.left) + parseFloat(total.style.width), 1);
  });

  it('opens the next memory at its top, not at the scroll position of the last one', async () => {
    await openDetail('mem_1');
    const pane = screen.getByTestId('memory-detail');
    pane.scrollTop = 640;
    expect(pane.scrollTop).toBe(640);
    app.selectedId = 'mem_2';
    await waitFor(() => expect(screen.getByTestId('detail-id')).toHaveTextContent('mem_2'));
    expect(screen.getByTestId('memory-detail').scrollTop).toBe(0);
  });

  it('shows hostile content as literal text, never as markup', async () => {
    api.showMemory.mockResolvedValue(makeDetail('mem_h', { content: `${HOSTILE}\nsecond line`, tags: [HOSTILE], reasons: [HOSTILE] }));
    await openDetail('mem_h');
    const content = screen.getByTestId('memory-content');
    expect(content.textContent).toBe(`${HOSTILE}\nsecond line`);
    expect(content.children.length).toBe(0);
    expect(document.querySelector('img[src="x"]')).toBeNull();
    // The only images are the engine's charts, and they are inert data URLs.
    for (const img of document.querySelectorAll('img')) {
      expect(img.getAttribute('src')).toMatch(/^data:image\/svg\+xml;base64,/);
    }
  });

  it('shows the projection chart as a base64 data-URL image', async () => {
    await openDetail('mem_c');
    await waitFor(() => expect(screen.getAllByTestId('chart').length).toBeGreaterThan(0));
    const img = screen.getAllByTestId('chart')[0] as HTMLImageElement;
    const b64 = img.getAttribute('src')!.split(',')[1];
    expect(new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)))).toBe(SVG);
    expect(api.chartProjection).toHaveBeenCalledWith('mem_c', 'light', undefined, {});
  });

  it('explains in words when a memory can never be forgotten', async () => {
    api.showMemory.mockResolvedValue(
      makeDetail('mem_n', {
        never_forgettable: true,
        importance: 0.7,
        pinned: false,
        components: { recency: 0.1, usage: 0.05, duplication: 0, importance: -0.105, pinned: 0 },
        asymptote: 0.495,
        projected_forget_at: null,
      }),
    );
    await openDetail('mem_n');
    const text = (await screen.findByTestId('never-forgettable')).textContent!;
    expect(text).toContain("Even if never used again, this memory's score can never reach 0.600 because");
    expect(text).toContain('importance of 0.700 subtracts 0.105');
    expect(text).toContain('can only approach 0.495');
    expect(screen.getByTestId('projected-forget')).toHaveTextContent('never');
  });

  it("shows the engine's asymptote, and its own sentence when it sends one", async () => {
    api.showMemory.mockResolvedValue(
      makeDetail('mem_a', { never_forgettable: true, importance: 0.7, asymptote: 0.4321, components: { recency: 0.1, usage: 0.05, duplication: 0, importance: -0.105, pinned: 0 } }),
    );
    await openDetail('mem_a');
    expect(await screen.findByTestId('never-forgettable')).toHaveTextContent('can only approach 0.432');

    const why = "Even if never used again, this memory's score can only approach 0.395, below the threshold 0.600, because it is pinned (−0.300).";
    api.showMemory.mockResolvedValue(makeDetail('mem_b', { never_forgettable: true, never_forgettable_why: why }));
    app.selectedId = 'mem_b';
    await waitFor(() => expect(screen.getByTestId('never-forgettable').textContent).toBe(why));
  });

  it('pin button toggles, slider sets importance, edit saves content', async () => {
    // A stateful stand-in: after pinning, the engine reports the memory as pinned.
    let pinned = false;
    api.showMemory.mockImplementation(async (id: string) => makeDetail(id, { pinned }));
    api.pinMemory.mockImplementation(async (id: string) => {
      pinned = true;
      return makeDetail(id, { pinned });
    });
    await openDetail('mem_p');
    expect(screen.getByTestId('pin-button')).toHaveTextContent('Pin');
    await fireEvent.click(screen.getByTestId('pin-button'));
    await waitFor(() => expect(api.pinMemory).toHaveBeenCalledWith('mem_p'));
    await waitFor(() => expect(screen.getByTestId('pin-button')).toHaveTextContent('Unpin'));

    const slider = screen.getByTestId('importance-slider');
    await fireEvent.change(slider, { target: { value: '0.83' } });
    await waitFor(() => expect(api.setImportance).toHaveBeenCalledWith('mem_p', 0.83));

    await fireEvent.click(screen.getByTestId('edit-button'));
    await fireEvent.input(screen.getByTestId('edit-content'), { target: { value: 'rewritten' } });
    await fireEvent.click(screen.getByTestId('edit-save'));
    await waitFor(() => expect(api.editMemory).toHaveBeenCalledWith('mem_p', 'rewritten', 1));
  });

  it('a stale edit shows both texts and the person chooses', async () => {
    // The agent's correction (version 2) lands while the person edits version 1.
    let stored = makeDetail('mem_c', { content: 'limit is 100', version: 1 });
    api.showMemory.mockImplementation(async () => stored);
    api.editMemory.mockImplementation(async (id: string, content: string, expected?: number) => {
      if (expected !== stored.version) {
        throw { code: 'conflict', message: `version conflict on ${id}: expected version ${expected}, current version is ${stored.version}` };
      }
      stored = makeDetail(id, { content, version: stored.version + 1 });
      return stored;
    });
    api.events.mockResolvedValue({
      items: [{ id: 'act_9', kind: 'action', memory_id: 'mem_c', action: 'edit', actor: 'agent:fixer', reason: null, policy: null, forget_score: null, ttl_days: null, created_at: '2026-01-01T00:00:00.000Z', before: null, after: null, metadata: null }],
    });
    await openDetail('mem_c');
    await fireEvent.click(screen.getByTestId('edit-button'));
    stored = makeDetail('mem_c', { content: `limit is 200 ${HOSTILE}`, version: 2 });
    await fireEvent.input(screen.getByTestId('edit-content'), { target: { value: 'limit is 50' } });
    await fireEvent.click(screen.getByTestId('edit-save'));
    await waitFor(() => expect(screen.getByTestId('edit-conflict')).toBeInTheDocument());
    expect(screen.getByTestId('edit-conflict')).toHaveTextContent('agent:fixer changed this memory');
    expect(screen.getByTestId('conflict-theirs').textContent).toBe(`limit is 200 ${HOSTILE}`);
    expect(screen.getByTestId('conflict-theirs').querySelector('img, script')).toBeNull();
    expect(screen.getByTestId('conflict-mine')).toHaveTextContent('limit is 50');
    expect(stored.content).toContain('limit is 200');
    await fireEvent.click(screen.getByTestId('conflict-save-mine'));
    await waitFor(() => expect(api.editMemory).toHaveBeenLastCalledWith('mem_c', 'limit is 50', 2));
    await waitFor(() => expect(screen.queryByTestId('edit-conflict')).toBeNull());
    expect(stored).toMatchObject({ content: 'limit is 50', version: 3 });
  });

  it('keeping the stored text discards the stale edit', async () => {
    api.showMemory.mockResolvedValue(makeDetail('mem_k', { content: 'kept', version: 4 }));
    api.editMemory.mockRejectedValue({ code: 'conflict', message: 'version conflict' });
    await openDetail('mem_k');
    await fireEvent.click(screen.getByTestId('edit-button'));
    await fireEvent.input(screen.getByTestId('edit-content'), { target: { value: 'stale' } });
    await fireEvent.click(screen.getByTestId('edit-save'));
    await waitFor(() => expect(screen.getByTestId('edit-conflict')).toBeInTheDocument());
    await fireEvent.click(screen.getByTestId('conflict-keep-theirs'));
    await waitFor(() => expect(screen.getByTestId('memory-content')).toHaveTextContent('kept'));
    expect(api.editMemory).toHaveBeenCalledTimes(1);
  });

  it('delete button soft-deletes; a deleted memory offers restore', async () => {
    await openDetail('mem_d');
    await fireEvent.click(screen.getByTestId('delete-button'));
    await waitFor(() => expect(api.deleteMemory).toHaveBeenCalledWith('mem_d', expect.any(String)));
    expect(await screen.findByTestId('toast')).toHaveTextContent('Undo');

    api.showMemory.mockResolvedValue(makeDetail('mem_d', { is_deleted: true, deleted_at: '2025-03-01T00:00:00.000Z' }));
    app.selectedId = 'mem_e';
    app.selectedId = 'mem_d';
    await waitFor(() => expect(screen.getByTestId('restore-button')).toBeInTheDocument());
    expect(screen.queryByTestId('delete-button')).toBeNull();
    await fireEvent.click(screen.getByTestId('restore-button'));
    await waitFor(() => expect(api.restoreMemory).toHaveBeenCalledWith('mem_d'));
  });

  it('supersede links navigate to the linked memory; its audit history is listed', async () => {
    api.showMemory.mockImplementation(async (id: string) =>
      makeDetail(id, id === 'mem_new' ? { supersedes: ['mem_old'] } : { superseded_by: ['mem_new'] }),
    );
    api.events.mockImplementation(async (q: { memoryId?: string }) => ({
      items: q.memoryId
        ? [{ id: 5, kind: 'action', memory_id: q.memoryId, action: 'edit', actor: 'agent:claude', reason: null, policy: null, forget_score: null, created_at: '2025-03-01T00:00:00.000Z', before: 'a', after: 'b' }]
        : [],
    }));
    await openDetail('mem_new');
    await waitFor(() => expect(screen.getAllByTestId('detail-event')).toHaveLength(1));
    expect(screen.getByTestId('detail-event')).toHaveTextContent('agent:claude');
    expect(api.events).toHaveBeenCalledWith(expect.objectContaining({ memoryId: 'mem_new' }));
    await fireEvent.click(screen.getByTestId('supersede-link'));
    expect(app.selectedId).toBe('mem_old');
    await waitFor(() => expect(screen.getByText('superseded by')).toBeInTheDocument());
  });

  it('labels each bar with the raw feature it comes from, so label and number agree', async () => {
    api.showMemory.mockResolvedValue(
      makeDetail('mem_l', { features: { recency: 0.0031, usage: 0, duplication: 0.846, importance: 0.04, pinned: 0 } }),
    );
    await openDetail('mem_l');
    expect(screen.getByTestId('breakdown-recency').querySelector('.bar-label')!.textContent).toBe('Age — recency 0.003');
    expect(screen.getByTestId('breakdown-usage').querySelector('.bar-label')!.textContent).toBe('Disuse — usage 0.000');
    expect(screen.getByTestId('breakdown-duplication').querySelector('.bar-label')!.textContent).toBe('Duplication — 0.846');
    expect(screen.getByTestId('breakdown-pinned').querySelector('.bar-label')!.textContent).toBe('Pinned — no');
    expect(screen.getByTestId('forget-breakdown').textContent).not.toContain('1 −');
    expect(screen.getByTestId('breakdown-recency').getAttribute('title')).toContain('1 − recency');
  });

  it('a memory already over the threshold is "already due", not a date', async () => {
    api.showMemory.mockResolvedValue(
      makeDetail('mem_due', { forget_score: 0.762, threshold: 0.6, would_forget: true, projected_forget_at: '2026-11-29T22:38:00.000Z' }),
    );
    await openDetail('mem_due');
    expect(screen.getByTestId('projected-forget')).toHaveTextContent('already due (score ≥ threshold)');
  });

  it('the history list is compact: actor under the time, summary instead of JSON', async () => {
    api.events.mockImplementation(async (q: { memoryId?: string }) => ({
      items: q.memoryId
        ? [{ id: 6, kind: 'action', memory_id: q.memoryId, action: 'importance', actor: 'user', reason: null, policy: null, forget_score: null, created_at: '2025-03-01T00:00:00.000Z', before: { importance: 0.2 }, after: { importance: 0.9 } }]
        : [],
    }));
    await openDetail('mem_h2');
    await waitFor(() => expect(screen.getAllByTestId('detail-event')).toHaveLength(1));
    const row = screen.getByTestId('detail-event');
    expect(row).toHaveTextContent('importance 0.2 → 0.9');
    expect(row.closest('table')!.classList.contains('compact')).toBe(true);
    expect(row.querySelectorAll('td')).toHaveLength(4);
  });

  it('the chart export button sits under the chart, not on it', async () => {
    await openDetail('mem_c2');
    const btn = await screen.findByTestId('chart-export');
    const img = screen.getByTestId('chart');
    expect(btn.parentElement!.classList.contains('chart-foot')).toBe(true);
    expect(img.compareDocumentPosition(btn) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
  });
});

