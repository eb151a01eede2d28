import { describe, it, expect, vi, beforeEach } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/svelte';
import { api, resetFake, HOSTILE } from './fakeApi';
import { renderAt, ids } from './helpers';

vi.mock('../src/api', async () => (await import('./fakeApi')).api);

beforeEach(() => resetFake());

async function open() {
  await renderAt('quarantine');
  await waitFor(() => expect(ids('quarantine-row')).toEqual(['mem_q1', 'mem_q2']));
}

describe('quarantine', () => {
  it('lists preview, reason, score, deleted-at and days left', async () => {
    await open();
    const row = screen.getAllByTestId('quarantine-row')[0];
    expect(row).toHaveTextContent('the staging password rotates monthly');
    expect(row).toHaveTextContent('old, unused');
    expect(row).toHaveTextContent('0.712');
    expect(row.querySelector('[data-value="12.75"]')!.textContent).toBe('12');
    expect(screen.getAllByTestId('quarantine-row')[1].querySelector('[data-value="0.25"]')!.textContent).toBe('<1');
    // Hostile previews stay text.
    expect(screen.getAllByTestId('quarantine-row')[1]).toHaveTextContent(HOSTILE);
    expect(document.querySelector('img[src="x"]')).toBeNull();
  });

  it('restore calls restore_memory for that row', async () => {
    await open();
    await fireEvent.click(within(screen.getAllByTestId('quarantine-row')[1]).getByTestId('restore-button'));
    await waitFor(() => expect(api.restoreMemory).toHaveBeenCalledWith('mem_q2'));
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
    expect(api.hardDeleteMemory).not.toHaveBeenCalled();

    // Escape cancels without deleting.
    await fireEvent.keyDown(dialog, { key: 'Escape' });
    expect(screen.queryByTestId('confirm-dialog')).toBeNull();
    expect(api.hardDeleteMemory).not.toHaveBeenCalled();

    await fireEvent.click(within(screen.getAllByTestId('quarantine-row')[0]).getByTestId('hard-delete-button'));
    await fireEvent.click(screen.getByTestId('confirm-yes'));
    await waitFor(() => expect(api.hardDeleteMemory).toHaveBeenCalledWith('mem_q1', true));
    expect(api.hardDeleteMemory).toHaveBeenCalledTimes(1);
  });

  it('passes the time-travel now to quarantine', async () => {
    await open();
    expect(api.quarantine).toHaveBeenLastCalledWith(undefined);
  });

  it('keeps full text in tooltips, a compact date, and a fixed column for the actions', async () => {
    await open();
    const row = screen.getAllByTestId('quarantine-row')[0];
    const cells = row.querySelectorAll('td');
    expect(cells[1].querySelector('button')).toHaveAttribute('title', 'the staging password rotates monthly');
    expect(cells[2]).toHaveAttribute('title', 'old, unused');
    expect(cells[4].textContent).toMatch(/^2025-03-0[12]$/);
    expect(cells[4].getAttribute('title')).toMatch(/^2025-03-0[12] \d\d:\d\d$/);
    const table = row.closest('table')!;
    expect([...table.querySelectorAll('col')].map((c) => c.className)).toEqual([
      'q-tier', 'q-content', 'q-reason', 'q-score', 'q-deleted', 'q-days', 'q-actions',
    ]);
    expect(within(row).getByTestId('hard-delete-button').closest('td')).toBe(cells[6]);
  });
});

