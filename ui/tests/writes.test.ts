// A write the window offers is one it can keep: while the file is read-only, gone or in
// trouble every control that writes is disabled and says why; a file that comes back is
// shown as a new store; what the shell did on its own is said once.
import { describe, it, expect, vi, beforeEach } from 'vitest';
import { fireEvent, screen, waitFor } from '@testing-library/svelte';
import { api, resetFake, emitStatus, emitOpened, dbInfoOf } from './fakeApi';
import { renderAt, flush, openDetail } from './helpers';
import { app } from '../src/state.svelte';

vi.mock('../src/api', async () => (await import('./fakeApi')).api);

const PATH = '/home/me/.local/share/lethe/memory.db';
const WRITE_CONTROLS = ['pin-button', 'edit-button', 'delete-button', 'importance-slider'];

beforeEach(() => resetFake());

function expectWritesDisabled(why: RegExp) {
  for (const id of WRITE_CONTROLS) {
    const control = screen.getByTestId(id);
    expect(control, id).toBeDisabled();
    expect(control.getAttribute('title'), id).toMatch(why);
  }
}

describe('a read-only store', () => {
  beforeEach(() => api.dbInfo.mockResolvedValue(dbInfoOf(PATH, { read_only: true })));

  it('shows the badge and no enabled write control, anywhere', async () => {
    await openDetail('mem_a');
    expect(await screen.findByTestId('read-only-badge')).toHaveTextContent('Read-only');
    expectWritesDisabled(/read-only: open a copy/);
    // The keyboard shortcut says why instead of writing.
    await fireEvent.keyDown(window, { key: 'p' });
    await flush();
    expect(api.pinMemory).not.toHaveBeenCalled();
    expect(app.toast?.message).toMatch(/read-only/);
    await fireEvent.click(screen.getByTestId('nav-quarantine'));
    await waitFor(() => expect(screen.getAllByTestId('restore-button').length).toBeGreaterThan(0));
    for (const b of [...screen.getAllByTestId('restore-button'), ...screen.getAllByTestId('hard-delete-button')]) {
      expect(b).toBeDisabled();
    }
  });

  it('opens a copy from the badge', async () => {
    await renderAt('overview');
    await fireEvent.click(await screen.findByTestId('open-copy'));
    await waitFor(() => expect(api.openCopy).toHaveBeenCalledOnce());
    await waitFor(() => expect(screen.getByTestId('db-path')).toHaveTextContent('/home/me/memory-copy.db'));
    expect(screen.queryByTestId('read-only-badge')).toBeNull();
  });
});

describe('a store whose file goes away', () => {
  it('disables every write with the reason, and shows a re-created file as a new store, saying so once', async () => {
    api.dbInfo.mockResolvedValue(dbInfoOf(PATH));
    await openDetail('mem_a');
    expect(screen.getByTestId('pin-button')).toBeEnabled();
    emitStatus({ state: 'missing', message: 'the database file is gone (deleted or being replaced)' });
    await flush();
    expectWritesDisabled(/file is gone: nothing can be changed/);
    await fireEvent.click(screen.getByTestId('pin-button'));
    expect(api.pinMemory).not.toHaveBeenCalled();

    const text = `A database file appeared again at ${PATH}; Lethe shows it as a new store.`;
    const back = dbInfoOf(PATH, { notice: { seq: 1, text } });
    emitOpened(back);
    await flush();
    expect(app.selectedId, 'nothing of the old store is held: not even the selection').toBeNull();
    expect(screen.queryByTestId('memory-detail')).toBeNull();
    expect(app.toast?.message).toBe(text);
    expect(screen.getByTestId('live-indicator')).toHaveAttribute('data-state', 'live');
    // The same notice again (another step of the same open) is not said twice.
    app.toast = null;
    emitOpened({ ...back, revision: back.revision + 2 });
    await flush();
    expect(app.toast).toBeNull();
  });

  it('a file in trouble turns the dot red and disables writes until it is open again', async () => {
    api.dbInfo.mockResolvedValue(dbInfoOf(PATH));
    await openDetail('mem_a');
    emitStatus({ state: 'error', message: "the database's locks were dropped by something in this process. Lethe stopped writing and is opening the file again." });
    await flush();
    expect(screen.getByTestId('live-indicator')).toHaveAttribute('data-state', 'error');
    expectWritesDisabled(/Nothing can be changed right now: the database's locks were dropped/);
    emitOpened(dbInfoOf(PATH, { notice: { seq: 2, text: 'Lethe opened it again.' } }));
    await flush();
    expect(screen.getByTestId('live-indicator')).toHaveAttribute('data-state', 'live');
    expect(app.toast?.message).toBe('Lethe opened it again.');
  });
});
