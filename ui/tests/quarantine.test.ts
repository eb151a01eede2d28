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
});
