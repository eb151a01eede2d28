import { describe, it, expect, vi, beforeEach } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import { api, emitChanged, pagedList, resetFake, HOSTILE, makeDetail, makeRow } from './fakeApi';
import { renderAt, ids, rows, flush } from './helpers';
import { app } from '../src/state.svelte';
import { invalidate } from '../src/memref.svelte';

vi.mock('../src/api', async () => (await import('./fakeApi')).api);

beforeEach(() => resetFake());

async function openMemories() {
  const r = await renderAt('memories');
  await waitFor(() => expect(rows().length).toBeGreaterThan(0));
  return r;
}

describe('memories table', () => {
  it('renders one row per memory with its id, tier and 3-decimal score', async () => {
    api.listMemories.mockImplementation(pagedList(3, (i) => ({ forget_score: 0.123456 + i })));
    await openMemories();
    expect(ids()).toEqual(['mem_0', 'mem_1', 'mem_2']);
    const first = rows()[0];
    expect(first).toHaveTextContent('memory number 0');
    expect(first).toHaveTextContent('working');
    expect(first).toHaveTextContent('0.123');
    expect(first.querySelector('[data-value]')?.getAttribute('data-value')).toBe('0.123456');
    expect(screen.getByTestId('row-total')).toHaveTextContent('3 memories');
  });

  it('with the detail panel open the numeric columns narrow and content keeps the flexible width', async () => {
    await openMemories();
    const view = document.querySelector('.view.memories')!;
    const head = document.querySelector('.thead')!;
    expect(view.classList.contains('with-detail')).toBe(false);
    expect(head).toHaveTextContent('importance');
    app.selectedId = 'mem_1';
    await waitFor(() => expect(screen.getByTestId('memory-detail')).toBeInTheDocument());
    expect(view.classList.contains('with-detail')).toBe(true);
    expect(head).toHaveTextContent('imp.');
    expect(head.querySelector('[title="importance"]')).not.toBeNull();
  });

  it('keeps only the visible window in the DOM at 100,000 rows and pages as it scrolls', async () => {
    api.listMemories.mockImplementation(pagedList(100_000));
    await openMemories();
    // (The overview fetched its at-risk list before we navigated; table pages have limit 100.)
    const tableCalls = () => api.listMemories.mock.calls.map((c) => c[0]).filter((q) => q.limit === 100);
    expect(tableCalls()[0]).toMatchObject({ limit: 100, offset: 0, sort: 'score' });
    // The spacer is as tall as all rows but only a window of them exists.
    const table = screen.getByTestId('memory-table');
    expect((table.firstElementChild as HTMLElement).style.height).toBe(`${100_000 * 32}px`);
    expect(rows().length).toBeLessThan(60);

    // Scroll deep into the list: the page holding row 50,000 is fetched, not the ones before.
    Object.defineProperty(table, 'scrollTop', { configurable: true, value: 50_000 * 32 });
    await fireEvent.scroll(table);
    await waitFor(() => expect(ids()).toContain('mem_50000'));
    const offsets = tableCalls().map((q) => q.offset);
    expect(offsets).toContain(50_000);
    expect(offsets.filter((o: number) => o > 0 && o < 49_900)).toEqual([]);
    // Every page of one listing is read at one instant (the order holds from page to page,
    // and the engine scores once for all of them).
    const instants = new Set(tableCalls().map((q) => q.now));
    expect(instants.size).toBe(1);
    expect([...instants][0]).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(rows().length).toBeLessThan(60);
    expect(ids()).not.toContain('mem_0');

    // Scrolling back uses the cache: no new request for page 0.
    const before = api.listMemories.mock.calls.length;
    Object.defineProperty(table, 'scrollTop', { configurable: true, value: 0 });
    await fireEvent.scroll(table);
    await flush();
    expect(ids()).toContain('mem_0');
    expect(api.listMemories.mock.calls.length).toBe(before);
  });

  it('shows hostile content as literal text and creates no img element', async () => {
    api.listMemories.mockImplementation(pagedList(1, () => ({ preview: HOSTILE })));
    await openMemories();
    expect(rows()[0].querySelector('.preview')?.textContent).toBe(HOSTILE);
    expect(document.querySelector('img[src="x"]')).toBeNull();
    expect(document.querySelectorAll('.vscroll img').length).toBe(0);
  });

  it('uses recall when the search box is not empty, and list_memories again when cleared', async () => {
    api.recall.mockResolvedValue({
      results: [{ id: 'mem_r', content: 'rust borrow checker', score: 0.91, breakdown: { similarity: 1, recency: 0.5, scene: 0, priority: 0.5 } }],
    });
    await openMemories();
    const user = userEvent.setup();
    await user.type(screen.getByTestId('memory-search'), 'rust');
    await waitFor(() => expect(ids()).toEqual(['mem_r']));
    expect(api.recall).toHaveBeenLastCalledWith('rust', expect.objectContaining({ limit: 200 }));
    expect(rows()[0]).toHaveTextContent('0.910');
    await user.clear(screen.getByTestId('memory-search'));
    await waitFor(() => expect(ids()[0]).toBe('mem_0'));
  });

  it('passes tier, toggles, score range and sort to list_memories', async () => {
    await openMemories();
    await fireEvent.change(screen.getByTestId('tier-filter'), { target: { value: 'semantic' } });
    await fireEvent.click(screen.getByTestId('pinned-filter'));
    await fireEvent.click(screen.getByTestId('quarantined-filter'));
    await fireEvent.input(screen.getByTestId('min-score'), { target: { value: '0.5' } });
    await fireEvent.change(screen.getByTestId('sort-select'), { target: { value: 'created' } });
    await fireEvent.change(screen.getByTestId('session-filter'), { target: { value: 'sess-1' } });
    await waitFor(() =>
      expect(api.listMemories).toHaveBeenLastCalledWith(
        expect.objectContaining({ tier: 'semantic', pinned: true, deleted: true, minScore: 0.5, sort: 'created', session: 'sess-1', offset: 0 }),
      ),
    );
    const last = api.listMemories.mock.calls.at(-1)![0];
    expect(last).not.toHaveProperty('maxScore', expect.anything());
  });
});

describe('keyboard', () => {
  it('j/k move the selection and open the detail panel', async () => {
    await openMemories();
    await fireEvent.keyDown(window, { key: 'j' });
    await waitFor(() => expect(app.selectedId).toBe('mem_0'));
    await fireEvent.keyDown(window, { key: 'j' });
    await fireEvent.keyDown(window, { key: 'j' });
    await waitFor(() => expect(app.selectedId).toBe('mem_2'));
    await fireEvent.keyDown(window, { key: 'k' });
    await waitFor(() => expect(app.selectedId).toBe('mem_1'));
    const sel = rows().find((r) => r.getAttribute('aria-selected') === 'true');
    expect(sel?.dataset.id).toBe('mem_1');
    await waitFor(() => expect(screen.getByTestId('memory-detail')).toHaveTextContent('content of mem_1'));
  });

  it('p toggles pin of the selected memory', async () => {
    api.listMemories.mockImplementation(pagedList(5, (i) => ({ pinned: i === 1 })));
    await openMemories();
    await fireEvent.click(rows()[0]);
    await fireEvent.keyDown(window, { key: 'p' });
    await waitFor(() => expect(api.pinMemory).toHaveBeenCalledWith('mem_0'));
    await fireEvent.click(rows()[1]);
    await fireEvent.keyDown(window, { key: 'p' });
    await waitFor(() => expect(api.unpinMemory).toHaveBeenCalledWith('mem_1'));
  });

  it('after p moves the row in the sort, the order holds so j goes to the next row of the original order', async () => {
    const order = ['mem_0', 'mem_1', 'mem_2', 'mem_3', 'mem_4'];
    let pinned = false;
    api.listMemories.mockImplementation(async () => {
      // Pinning mem_1 lowers its score: the engine now lists it last.
      const now = pinned ? ['mem_0', 'mem_2', 'mem_3', 'mem_4', 'mem_1'] : order;
      return { total: 5, items: now.map((id) => makeRow(Number(id.slice(4)), { pinned: pinned && id === 'mem_1' })) };
    });
    api.pinMemory.mockImplementation(async (id: string) => {
      pinned = true;
      return makeDetail(id, { pinned: true });
    });
    await openMemories();
    await fireEvent.click(rows()[1]);
    await fireEvent.keyDown(window, { key: 'p' });
    await waitFor(() => expect(screen.getByTestId('order-held')).toBeTruthy());
    expect(ids()).toEqual(order);
    await fireEvent.keyDown(window, { key: 'j' });
    await waitFor(() => expect(rows()[2]).toHaveAttribute('aria-selected', 'true'));
    expect(rows()[2]).toHaveAttribute('data-id', 'mem_2');
    // Re-sort shows the engine's order again.
    await fireEvent.click(screen.getByTestId('resort'));
    await waitFor(() => expect(ids()).toEqual(['mem_0', 'mem_2', 'mem_3', 'mem_4', 'mem_1']));
    expect(screen.queryByTestId('order-held')).toBeNull();
  });

  it('d soft-deletes with an Undo toast that restores; r restores', async () => {
    await openMemories();
    await fireEvent.click(rows()[3]);
    await fireEvent.keyDown(window, { key: 'd' });
    await waitFor(() => expect(api.deleteMemory).toHaveBeenCalledWith('mem_3', expect.any(String)));
    // The toast names the memory by its text, not by its id.
    const toast = await screen.findByTestId('toast');
    expect(toast).toHaveTextContent('content of mem_3');
    expect(toast).not.toHaveTextContent('mem_3 ');
    await fireEvent.click(within(toast).getByTestId('toast-action'));
    await waitFor(() => expect(api.restoreMemory).toHaveBeenCalledWith('mem_3'));
  });

  it('r restores a quarantined memory and does nothing on an active one', async () => {
    await openMemories();
    await fireEvent.click(rows()[3]);
    api.restoreMemory.mockClear();
    await fireEvent.keyDown(window, { key: 'r' });
    await new Promise((r) => setTimeout(r, 50));
    expect(api.restoreMemory).not.toHaveBeenCalled();
    expect(screen.queryByTestId('toast')).toBeNull();

    api.showMemory.mockImplementation(async (id: string) => makeDetail(id, { is_deleted: true }));
    api.listMemories.mockImplementation(async (q) => ({
      total: 5,
      items: Array.from({ length: 5 }, (_, i) => makeRow(i, { is_deleted: true })).slice(q.offset ?? 0),
    }));
    await fireEvent.click(screen.getByTestId('quarantined-filter'));
    await waitFor(() => expect(rows()[3]).toBeTruthy());
    await fireEvent.click(rows()[3]);
    await fireEvent.keyDown(window, { key: 'r' });
    await waitFor(() => expect(api.restoreMemory).toHaveBeenCalledWith('mem_3'));
  });

  it('keys work after the importance slider and a row checkbox; Esc clears the selection, then closes the detail', async () => {
    await openMemories();
    await fireEvent.click(rows()[1]);
    const slider = await screen.findByTestId('importance-slider');
    slider.focus();
    await fireEvent.keyDown(slider, { key: 'j' });
    await waitFor(() => expect(rows()[2]).toHaveAttribute('aria-selected', 'true'));
    const box = screen.getAllByTestId('row-check')[2];
    await fireEvent.click(box);
    box.focus();
    await fireEvent.keyDown(box, { key: 'k' });
    await waitFor(() => expect(rows()[1]).toHaveAttribute('aria-selected', 'true'));
    expect(screen.getByTestId('bulk-bar')).toBeTruthy();
    await fireEvent.keyDown(window, { key: 'Escape' });
    expect(screen.queryByTestId('bulk-bar')).toBeNull();
    expect(screen.getByTestId('memory-detail')).toBeTruthy();
    await fireEvent.keyDown(window, { key: 'Escape' });
    await waitFor(() => expect(screen.queryByTestId('memory-detail')).toBeNull());
  });

  it('/ focuses the search box, and typing there does not trigger shortcuts', async () => {
    await openMemories();
    await fireEvent.keyDown(window, { key: '/' });
    const search = screen.getByTestId('memory-search');
    expect(document.activeElement).toBe(search);
    await fireEvent.keyDown(search, { key: 'd' });
    await fireEvent.keyDown(search, { key: 'j' });
    await flush();
    expect(api.deleteMemory).not.toHaveBeenCalled();
    expect(app.selectedId).toBeNull();
  });
});

describe('multi-select', () => {
  it('shift-click selects a range; bulk pin pins each', async () => {
    await openMemories();
    const checks = () => screen.getAllByTestId('row-check');
    await fireEvent.click(checks()[1]);
    await fireEvent.click(checks()[4], { shiftKey: true });
    expect(screen.getByTestId('bulk-bar')).toHaveTextContent('4 selected');
    await fireEvent.click(screen.getByTestId('bulk-pin'));
    await waitFor(() => expect(api.pinMemory).toHaveBeenCalledTimes(4));
    expect(api.pinMemory.mock.calls.map((c) => c[0])).toEqual(['mem_1', 'mem_2', 'mem_3', 'mem_4']);
  });

  it('bulk delete asks for confirmation first', async () => {
    await openMemories();
    const checks = () => screen.getAllByTestId('row-check');
    await fireEvent.click(checks()[0]);
    await fireEvent.click(checks()[2]);
    await fireEvent.click(screen.getByTestId('bulk-delete'));
    const dialog = screen.getByTestId('confirm-dialog');
    expect(dialog).toHaveTextContent('Delete 2 memories?');
    expect(api.deleteMemory).not.toHaveBeenCalled();
    await fireEvent.click(screen.getByTestId('confirm-no'));
    expect(screen.queryByTestId('confirm-dialog')).toBeNull();
    expect(api.deleteMemory).not.toHaveBeenCalled();

    await fireEvent.click(screen.getByTestId('bulk-delete'));
    await fireEvent.click(screen.getByTestId('confirm-yes'));
    await waitFor(() => expect(api.deleteMemory).toHaveBeenCalledTimes(2));
    expect(api.deleteMemory.mock.calls.map((c) => c[0])).toEqual(['mem_0', 'mem_2']);
    expect(await screen.findByTestId('toast')).toHaveTextContent('2 memories');
  });
});

describe('review fixes', () => {
  it('shift-click on a checkbox ticks every row it selects, the clicked one too', async () => {
    await openMemories();
    const checks = () => screen.getAllByTestId('row-check') as HTMLInputElement[];
    await fireEvent.click(checks()[1]);
    await fireEvent.click(checks()[5], { shiftKey: true });
    await flush();
    expect(screen.getByTestId('bulk-bar')).toHaveTextContent('5 selected');
    expect(checks().slice(0, 7).map((c) => c.checked)).toEqual([false, true, true, true, true, true, false]);
  });

  it('the bulk delete confirmation lists the memories it will quarantine', async () => {
    await openMemories();
    const checks = () => screen.getAllByTestId('row-check');
    await fireEvent.click(checks()[0]);
    await fireEvent.click(checks()[3]);
    await fireEvent.click(screen.getByTestId('bulk-delete'));
    const items = within(screen.getByTestId('confirm-dialog')).getAllByTestId('confirm-item').map((li) => li.textContent);
    expect(items).toEqual(['memory number 0', 'memory number 3']);
  });

  it('Esc in the search box leaves it, so j moves the selection instead of typing', async () => {
    await openMemories();
    const search = screen.getByTestId('memory-search') as HTMLInputElement;
    search.focus();
    expect(document.activeElement).toBe(search);
    await fireEvent.keyDown(search, { key: 'Escape' });
    expect(document.activeElement).not.toBe(search);
    await fireEvent.keyDown(document.activeElement ?? window, { key: 'j' });
    await waitFor(() => expect(app.selectedId).toBe('mem_0'));
    expect(search.value).toBe('');
  });

  it('marks a pinned memory with a drawn pin, not an emoji', async () => {
    api.listMemories.mockImplementation(pagedList(5, (i) => ({ pinned: i === 1 })));
    await openMemories();
    const flag = within(rows()[1]).getByTestId('pin-flag');
    expect(flag.querySelector('svg')).not.toBeNull();
    expect(flag.textContent).toBe('pinned');
    expect(document.body.textContent).not.toContain('📌');
  });

  it('hides recall\'s weak matches behind "show N weak matches"', async () => {
    const b = (similarity: number) => ({ similarity, lexical: similarity, semantic: similarity, cosine: similarity, recency: 0.5, scene: 0, priority: 0.5 });
    api.recall.mockResolvedValue({
      results: [
        { id: 'mem_1', type: 'semantic', content: 'docker needs the permission of the socket', score: 0.9, breakdown: b(1) },
        { id: 'mem_2', type: 'semantic', content: 'a faint likeness', score: 0.5, breakdown: b(0.2) },
        { id: 'mem_3', type: 'semantic', content: 'docker compose file', score: 0.45, breakdown: b(0.6) },
        { id: 'mem_4', type: 'semantic', content: 'another faint one', score: 0.3, breakdown: b(0.1) },
      ],
      recall_mode: 'semantic',
      weak: [false, true, false, true],
    });
    await openMemories();
    await fireEvent.input(screen.getByTestId('memory-search'), { target: { value: 'docker permission' } });
    await waitFor(() => expect(ids()).toEqual(['mem_1', 'mem_3']));
    expect(screen.getByTestId('row-total')).toHaveTextContent('2 matches');
    const more = screen.getByTestId('show-weak');
    expect(more).toHaveTextContent('show 2 weak matches');
    await fireEvent.click(more);
    await waitFor(() => expect(ids()).toEqual(['mem_1', 'mem_2', 'mem_3', 'mem_4']));
    expect(screen.getByTestId('show-weak')).toHaveTextContent('hide 2 weak matches');
    // Another search starts with them hidden again.
    await fireEvent.input(screen.getByTestId('memory-search'), { target: { value: 'docker' } });
    await waitFor(() => expect(ids()).toEqual(['mem_1', 'mem_3']));
  });

  it('does not colour the recall column by would-forget', async () => {
    api.listMemories.mockImplementation(pagedList(5, () => ({ would_forget: true })));
    // The recall row's other columns come from show_memory: this memory would be forgotten
    // (read afresh: what an earlier test looked up is forgotten).
    invalidate(null);
    api.showMemory.mockImplementation(async (id: string) => makeDetail(id, { would_forget: true }));
    api.recall.mockResolvedValue({ results: [{ id: 'mem_1', type: 'semantic', content: 'memory number 1', score: 0.8, breakdown: { similarity: 0.9, lexical: 0.9, semantic: 0.9, cosine: 0.9, recency: 0.5, scene: 0, priority: 0.5 } }], recall_mode: 'semantic' });
    await openMemories();
    expect(rows()[0].querySelector('.num.hot')).not.toBeNull();
    await fireEvent.input(screen.getByTestId('memory-search'), { target: { value: 'number' } });
    await waitFor(() => expect(rows()).toHaveLength(1));
    await flush();
    await waitFor(() => expect(api.showMemory).toHaveBeenCalledWith('mem_1', undefined));
    await flush();
    expect(rows()[0].querySelector('[data-value="0.8"]')).not.toHaveClass('hot');
  });
});

describe('live updates', () => {
  it('db://changed re-fetches the visible page, swaps data in and keeps the selection', async () => {
    await openMemories();
    await fireEvent.click(rows()[2]);
    await waitFor(() => expect(screen.getByTestId('memory-detail')).toHaveTextContent('content of mem_2'));
    const listCalls = api.listMemories.mock.calls.length;
    const showCalls = api.showMemory.mock.calls.length;

    // Another process changed a different memory: the page is refreshed, the detail is not.
    api.listMemories.mockImplementation(pagedList(250, (i) => ({ preview: i === 0 ? 'edited by agent' : `memory number ${i}` })));
    emitChanged({ data_version: 2, ids: ['mem_0'] });
    await waitFor(() => expect(rows()[0]).toHaveTextContent('edited by agent'));
    expect(api.listMemories.mock.calls.length).toBe(listCalls + 1);
    expect(api.listMemories.mock.calls.at(-1)![0].offset).toBe(0);
    expect(api.showMemory.mock.calls.length).toBe(showCalls);
    expect(app.selectedId).toBe('mem_2');
    expect(rows().find((r) => r.dataset.id === 'mem_2')).toHaveAttribute('aria-selected', 'true');

    // The selected memory itself changed: the detail panel reloads it.
    api.showMemory.mockImplementation(async (id: string) => makeDetail(id, { content: 'new text from agent' }));
    emitChanged({ data_version: 3, ids: ['mem_2'] });
    await waitFor(() => expect(screen.getByTestId('memory-content')).toHaveTextContent('new text from agent'));

    // Unknown changes (ids null) refresh both.
    const n = api.showMemory.mock.calls.length;
    emitChanged({ data_version: 4, ids: null });
    await waitFor(() => expect(api.showMemory.mock.calls.length).toBe(n + 1));
    expect(app.selectedId).toBe('mem_2');
  });

  it('does not clear the list while a refresh is in flight', async () => {
    await openMemories();
    let release!: () => void;
    api.listMemories.mockImplementation(
      (q) => new Promise((res) => (release = () => res(pagedList(250)(q)))) as never,
    );
    emitChanged({ data_version: 2, ids: null });
    await flush();
    expect(rows().length).toBeGreaterThan(0);
    expect(screen.queryAllByTestId('memory-row-placeholder')).toHaveLength(0);
    release();
    await flush();
    expect(rows().length).toBeGreaterThan(0);
  });
});

describe('who wrote what and when it was used: the sorts and the source filter', () => {
  const tableCalls = () => api.listMemories.mock.calls.map((c) => c[0]).filter((q) => q.limit === 100);

  it('asks the engine to sort by writer or by last use; the date column becomes "last used"', async () => {
    api.listMemories.mockImplementation(pagedList(3, (i) => ({ last_used: i === 0 ? '2025-03-02T10:00:00.000Z' : null })));
    await openMemories();
    await fireEvent.change(screen.getByTestId('sort-select'), { target: { value: 'written_by' } });
    await waitFor(() => expect(tableCalls().at(-1)).toMatchObject({ sort: 'written_by', offset: 0 }));
    await fireEvent.change(screen.getByTestId('sort-select'), { target: { value: 'last_used' } });
    await waitFor(() => expect(tableCalls().at(-1)).toMatchObject({ sort: 'last_used', offset: 0 }));
    expect(document.querySelector('.thead')).toHaveTextContent('last used');
    await waitFor(() => expect(screen.getAllByTestId('last-used').map((e) => e.textContent)).toEqual(['2025-03-02', 'never', 'never']));
  });

  it('filters by source in the engine query', async () => {
    await openMemories();
    await fireEvent.change(screen.getByTestId('source-filter'), { target: { value: 'claude-code' } });
    await waitFor(() => expect(tableCalls().at(-1)).toMatchObject({ source: 'claude-code', offset: 0 }));
    expect(screen.getByTestId('filters-button')).toHaveTextContent('Filters (1)');
  });

  it('shows one health list alone until cleared', async () => {
    app.healthList = 'never_recalled';
    await openMemories();
    await waitFor(() => expect(tableCalls().at(-1)).toMatchObject({ health: 'never_recalled', offset: 0 }));
    expect(screen.getByTestId('health-filter')).toHaveTextContent('Never recalled, older than 30 days');
    await fireEvent.click(screen.getByTestId('health-filter-clear'));
    await waitFor(() => expect(tableCalls().at(-1)?.health).toBeUndefined());
    expect(screen.queryByTestId('health-filter')).toBeNull();
  });
});
