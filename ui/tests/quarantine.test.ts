import { describe, it, expect, vi, beforeEach } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/svelte';
import { api, resetFake, HOSTILE, quarantineOf } from './fakeApi';
import { renderAt, ids } from './helpers';
import { app, notifyChanged } from '../src/state.svelte';
import type { QuarantineItem, QuarantineQuery, Tier } from '../src/types';

vi.mock('../src/api', async () => (await import('./fakeApi')).api);

beforeEach(() => resetFake());

async function open() {
  await renderAt('quarantine');
  await waitFor(() => expect(ids('quarantine-row')).toEqual(['mem_q1', 'mem_q2']));
}

/** `n` quarantined memories, newest deletion first, every third deleted by an agent. */
function many(n: number): QuarantineItem[] {
  const tiers: Tier[] = ['working', 'episodic', 'semantic', 'procedural'];
  return Array.from({ length: n }, (_, i) => ({
    id: `mem_m${String(i).padStart(6, '0')}`,
    type: tiers[i % 4],
    preview: `note number ${i} about ${i % 2 ? 'docker' : 'kubernetes'}`,
    reason: i % 5 === 0 ? `old, duplicate of mem_x${i}` : 'old, unused',
    forget_score: 0.6 + (i % 40) / 100,
    deleted_at: new Date(Date.UTC(2025, 2, 1) - i * 60000).toISOString(),
    days_left: 30 - (i % 30),
    deleted_by: i % 3 === 0 ? 'agent:cursor' : 'policy',
    policy: i % 3 === 0 ? 'agent' : 'threshold',
  }));
}

const checks = () => screen.getAllByTestId('quarantine-row').map((r) => (within(r).getByTestId('quarantine-check') as HTMLInputElement).checked);

describe('quarantine', () => {
  it('lists preview, reason, who deleted it, when, score and days left, with a count', async () => {
    await open();
    expect(screen.getByTestId('quarantine-count')).toHaveTextContent('2');
    const row = screen.getAllByTestId('quarantine-row')[0];
    expect(row).toHaveTextContent('the staging password rotates monthly');
    expect(row).toHaveTextContent('old, unused');
    expect(within(row).getByTestId('deleted-by')).toHaveTextContent('policy');
    expect(within(screen.getAllByTestId('quarantine-row')[1]).getByTestId('deleted-by')).toHaveTextContent('agent:cursor');
    expect(row).toHaveTextContent('0.712');
    expect(row.querySelector('[data-value="12.75"]')!.textContent).toBe('12');
    expect(screen.getAllByTestId('quarantine-row')[1].querySelector('[data-value="0.25"]')!.textContent).toBe('<1');
    // Hostile previews stay text.
    expect(screen.getAllByTestId('quarantine-row')[1]).toHaveTextContent(HOSTILE);
    expect(document.querySelector('img[src="x"]')).toBeNull();
  });

  it('restore calls restore_memories for that row and names it by content', async () => {
    await open();
    await fireEvent.click(within(screen.getAllByTestId('quarantine-row')[0]).getByTestId('restore-button'));
    await waitFor(() => expect(api.restoreMemories).toHaveBeenCalledWith(['mem_q1']));
    await waitFor(() => expect(screen.getByTestId('toast')).toHaveTextContent('Restored “the staging password rotates monthly”'));
  });

  it('hard delete needs confirmation naming what is lost', async () => {
    await open();
    await fireEvent.click(within(screen.getAllByTestId('quarantine-row')[0]).getByTestId('hard-delete-button'));
    const dialog = screen.getByTestId('confirm-dialog');
    expect(dialog).toHaveTextContent('the staging password rotates monthly');
    expect(dialog).toHaveTextContent('mem_q1');
    expect(dialog).toHaveTextContent(/cannot be undone/i);
    expect(dialog).toHaveTextContent(/audit trail stays/i);
    // What remains, exactly: facts and the content's hash and length, never the text.
    expect(dialog).toHaveTextContent(/without any text/i);
    expect(dialog).toHaveTextContent(/SHA-256 hash and length of its content/);
    expect(api.hardDeleteMemories).not.toHaveBeenCalled();

    // Escape cancels without deleting.
    await fireEvent.keyDown(dialog, { key: 'Escape' });
    expect(screen.queryByTestId('confirm-dialog')).toBeNull();
    expect(api.hardDeleteMemories).not.toHaveBeenCalled();

    await fireEvent.click(within(screen.getAllByTestId('quarantine-row')[0]).getByTestId('hard-delete-button'));
    await fireEvent.click(screen.getByTestId('confirm-yes'));
    await waitFor(() => expect(api.hardDeleteMemories).toHaveBeenCalledWith(['mem_q1'], true));
    expect(api.hardDeleteMemories).toHaveBeenCalledTimes(1);
  });

  it('passes the time-travel now to quarantine', async () => {
    await open();
    expect(api.quarantine).toHaveBeenLastCalledWith(undefined, { sort: 'deleted-desc', offset: 0, limit: 100 });
  });

  it('asks the engine for the rows on screen only, and for a far page when scrolled there', async () => {
    const all = many(5000);
    const asked: number[] = [];
    api.quarantine.mockImplementation(async (now: string | undefined, q: QuarantineQuery) => {
      asked.push(q.offset ?? 0);
      return quarantineOf(all)(now, q);
    });
    await renderAt('quarantine');
    await waitFor(() => expect(screen.getByTestId('quarantine-count')).toHaveTextContent('5,000'));
    expect(ids('quarantine-row')[0]).toBe('mem_m000000');
    expect(screen.getByTestId('quarantine-table')).toHaveAttribute('aria-rowcount', '5000');
    expect(asked).toEqual([0]);
    const table = screen.getByTestId('quarantine-table');
    table.scrollTop = 3000 * 32;
    await fireEvent.scroll(table);
    await waitFor(() => expect(ids('quarantine-row')).toContain('mem_m003000'));
    // The two pages on screen in one request.
    expect(asked).toEqual([0, 2900]);
    expect(screen.queryAllByTestId('quarantine-row-placeholder')).toHaveLength(0);
    // The fake engine filters, counts and sorts every item in JavaScript for each page.
  }, 30_000);

  it('shows placeholders until a page arrives', async () => {
    const all = many(1000);
    let release: () => void = () => {};
    const later = new Promise<void>((r) => (release = r));
    api.quarantine.mockImplementation(async (now: string | undefined, q: QuarantineQuery) => {
      if ((q.offset ?? 0) > 0) await later;
      return quarantineOf(all)(now, q);
    });
    await renderAt('quarantine');
    await waitFor(() => expect(screen.getByTestId('quarantine-count')).toHaveTextContent('1,000'));
    const table = screen.getByTestId('quarantine-table');
    table.scrollTop = 500 * 32;
    await fireEvent.scroll(table);
    await waitFor(() => expect(screen.queryAllByTestId('quarantine-row-placeholder').length).toBeGreaterThan(0));
    release();
    await waitFor(() => expect(screen.queryAllByTestId('quarantine-row-placeholder')).toHaveLength(0));
    expect(ids('quarantine-row')).toContain('mem_m000500');
  });

  it('keeps full text in tooltips, a compact date, and the actions in the last column', async () => {
    await open();
    const row = screen.getAllByTestId('quarantine-row')[0];
    const cells = row.querySelectorAll(':scope > span');
    expect(cells[2]).toHaveAttribute('title', 'the staging password rotates monthly');
    expect(cells[3]).toHaveAttribute('title', 'old, unused');
    expect(cells[5].textContent).toMatch(/^2025-03-0[12]$/);
    expect(cells[5].getAttribute('title')).toMatch(/^2025-03-0[12] \d\d:\d\d$/);
    expect(within(row).getByTestId('hard-delete-button').closest('span')).toBe(cells[8]);
    const head = [...document.querySelectorAll('.thead.qrow > span')].map((s) => s.textContent);
    expect(head).toEqual(['', 'tier', 'content', 'reason', 'deleted by', 'when', 'days left', 'score', '']);
  });

  it('renders only the rows on screen of 100,000 and counts them all', async () => {
    api.quarantine.mockImplementation(quarantineOf(many(100000)));
    await renderAt('quarantine');
    await waitFor(() => expect(screen.getByTestId('quarantine-count')).toHaveTextContent('100,000'));
    const n = screen.getAllByTestId('quarantine-row').length;
    expect(n).toBeGreaterThan(10);
    expect(n).toBeLessThan(60);
    expect(screen.getByTestId('quarantine-table')).toHaveAttribute('aria-rowcount', '100000');
    // The fake engine filters, counts and sorts every item in JavaScript for each page.
  }, 30_000);

  it('searches, filters by who deleted and by reason, and sorts', async () => {
    // 25 rows: all of them on one screen of the virtual list.
    api.quarantine.mockImplementation(quarantineOf(many(25)));
    await renderAt('quarantine');
    await waitFor(() => expect(ids('quarantine-row')).toHaveLength(25));
    await fireEvent.input(screen.getByTestId('quarantine-search'), { target: { value: 'DOCKER number 1' } });
    // Every word must match, in any case: "docker" is on odd numbers, "1" in 1, 11, 13… 21.
    await waitFor(() => expect(ids('quarantine-row')).toEqual(['mem_m000001', 'mem_m000011', 'mem_m000013', 'mem_m000015', 'mem_m000017', 'mem_m000019', 'mem_m000021']));
    expect(screen.getByTestId('quarantine-shown')).toHaveTextContent('7 of 25 match');
    await fireEvent.input(screen.getByTestId('quarantine-search'), { target: { value: '' } });

    const by = screen.getByTestId('quarantine-filter-by') as HTMLSelectElement;
    expect([...by.options].map((o) => o.textContent)).toEqual(['deleted by: all', 'the forget policy (16)', 'agent:cursor (9)']);
    await fireEvent.change(by, { target: { value: 'agent:cursor' } });
    await waitFor(() => expect(ids('quarantine-row')).toHaveLength(9));
    expect(ids('quarantine-row').every((id) => Number(id.slice(5)) % 3 === 0)).toBe(true);

    const reason = screen.getByTestId('quarantine-filter-reason') as HTMLSelectElement;
    expect([...reason.options].map((o) => o.value)).toEqual(['', 'old', 'unused', 'duplicate']);
    await fireEvent.change(reason, { target: { value: 'duplicate' } });
    // Deleted by the agent (multiples of 3) and duplicates (multiples of 5): 0 and 15.
    await waitFor(() => expect(ids('quarantine-row')).toEqual(['mem_m000000', 'mem_m000015']));

    await fireEvent.change(screen.getByTestId('quarantine-sort'), { target: { value: 'deleted-asc' } });
    await waitFor(() => expect(ids('quarantine-row')).toEqual(['mem_m000015', 'mem_m000000']));
  });

  it('selects by click, ctrl-click and shift-click; the checkboxes show exactly the selection', async () => {
    api.quarantine.mockImplementation(quarantineOf(many(10)));
    await renderAt('quarantine');
    await waitFor(() => expect(ids('quarantine-row')).toHaveLength(10));
    const row = (i: number) => screen.getAllByTestId('quarantine-row')[i].querySelector('.preview')!;
    await fireEvent.click(row(1));
    expect(checks()).toEqual([false, true, false, false, false, false, false, false, false, false]);
    await fireEvent.click(row(4), { shiftKey: true });
    // A range may span pages not read yet: it is read first.
    await waitFor(() => expect(checks()).toEqual([false, true, true, true, true, false, false, false, false, false]));
    expect(screen.getByTestId('quarantine-selected-count')).toHaveTextContent('4');
    await fireEvent.click(row(7), { ctrlKey: true });
    expect(checks()).toEqual([false, true, true, true, true, false, false, true, false, false]);
    await fireEvent.click(row(2), { ctrlKey: true });
    expect(checks()).toEqual([false, true, false, true, true, false, false, true, false, false]);
    // A plain click starts over with that row alone.
    await fireEvent.click(row(9));
    expect(checks()).toEqual([false, false, false, false, false, false, false, false, false, true]);
    // The checkbox toggles without dropping the rest.
    await fireEvent.click(within(screen.getAllByTestId('quarantine-row')[0]).getByTestId('quarantine-check'));
    expect(checks()).toEqual([true, false, false, false, false, false, false, false, false, true]);
    expect(screen.getByTestId('quarantine-selected-count')).toHaveTextContent('2');
    // Esc clears.
    await fireEvent.keyDown(window, { key: 'Escape' });
    expect(checks().some(Boolean)).toBe(false);
    expect(screen.queryByTestId('quarantine-bulk-bar')).toBeNull();
  });

  it('restores every memory matching a filter in one call', async () => {
    api.quarantine.mockImplementation(quarantineOf(many(3000)));
    await renderAt('quarantine');
    await waitFor(() => expect(screen.getByTestId('quarantine-count')).toHaveTextContent('3,000'));
    await fireEvent.change(screen.getByTestId('quarantine-filter-by'), { target: { value: 'agent:cursor' } });
    await waitFor(() => expect(screen.getByTestId('quarantine-shown')).toHaveTextContent('1,000 of 3,000 match'));
    await fireEvent.click(screen.getByTestId('select-all-matching'));
    await waitFor(() => expect(screen.getByTestId('quarantine-selected-count')).toHaveTextContent('1,000'));
    expect(api.quarantine).toHaveBeenLastCalledWith(undefined, expect.objectContaining({ deletedBy: 'agent:cursor', allIds: true }));
    await fireEvent.click(screen.getByTestId('restore-selected'));
    await waitFor(() => expect(api.restoreMemories).toHaveBeenCalledTimes(1));
    const sent = api.restoreMemories.mock.calls[0][0] as string[];
    expect(sent).toHaveLength(1000);
    expect(sent.every((id) => Number(id.slice(5)) % 3 === 0)).toBe(true);
    expect(api.restoreMemory).not.toHaveBeenCalled();
    await waitFor(() => expect(screen.getByTestId('toast')).toHaveTextContent('Restored 1,000 memories'));
    expect(screen.queryByTestId('quarantine-bulk-bar')).toBeNull();
  });

  it('deletes a selection forever only after a confirmation that lists it', async () => {
    api.quarantine.mockImplementation(quarantineOf(many(20)));
    await renderAt('quarantine');
    await waitFor(() => expect(ids('quarantine-row')).toHaveLength(20));
    await fireEvent.click(screen.getAllByTestId('select-all-matching')[0]);
    await fireEvent.click(await screen.findByTestId('hard-delete-selected'));
    const dialog = screen.getByTestId('confirm-dialog');
    expect(dialog).toHaveTextContent('Delete 20 memories forever?');
    const listed = within(dialog).getAllByTestId('confirm-preview').map((li) => li.textContent);
    expect(listed).toHaveLength(12);
    expect(listed[0]).toBe('note number 0 about kubernetes');
    expect(within(dialog).getByTestId('confirm-more')).toHaveTextContent('and 8 other memories');
    expect(api.hardDeleteMemories).not.toHaveBeenCalled();
    await fireEvent.click(screen.getByTestId('confirm-yes'));
    await waitFor(() => expect(api.hardDeleteMemories).toHaveBeenCalledTimes(1));
    expect((api.hardDeleteMemories.mock.calls[0][0] as string[]).length).toBe(20);
    expect(api.hardDeleteMemories.mock.calls[0][1]).toBe(true);
  });

  it('drops from the selection what left the quarantine elsewhere', async () => {
    const all = many(10);
    api.quarantine.mockImplementation(quarantineOf(all));
    await renderAt('quarantine');
    await waitFor(() => expect(ids('quarantine-row')).toHaveLength(10));
    await fireEvent.click(screen.getAllByTestId('select-all-matching')[0]);
    await waitFor(() => expect(screen.getByTestId('quarantine-selected-count')).toHaveTextContent('10'));
    // An agent restores two; the store changes.
    api.quarantine.mockImplementation(quarantineOf(all.slice(2)));
    notifyChanged(null);
    await waitFor(() => expect(screen.getByTestId('quarantine-selected-count')).toHaveTextContent('8'));
    await fireEvent.click(screen.getByTestId('restore-selected'));
    await waitFor(() => expect(api.restoreMemories).toHaveBeenCalledWith(all.slice(2).map((q) => q.id)));
  });

  it('opens a memory in Memories on double-click', async () => {
    await open();
    await fireEvent.dblClick(screen.getAllByTestId('quarantine-row')[0]);
    expect(app.selectedId).toBe('mem_q1');
    expect(app.view).toBe('memories');
  });
});
