import { describe, it, expect, vi, beforeEach } from 'vitest';
import { fireEvent, screen, waitFor } from '@testing-library/svelte';
import { api, resetFake, emitStatus, emitOpened, makeStats, dbInfoOf, listenerCount } from './fakeApi';
import { renderAt, flush } from './helpers';
import { app } from '../src/state.svelte';

vi.mock('../src/api', async () => (await import('./fakeApi')).api);

const BAD = '/home/me/notes.txt';
const unavailable = { code: 'db_unavailable', message: `${BAD}: not a lethe database: the file is not a SQLite database (or is damaged)` };

beforeEach(() => resetFake());

const badInfo = () => dbInfoOf(BAD, { schema_version: 0, error: unavailable.message });

/** Every data command fails the way the shell answers when no database is open. */
function failEveryQuery() {
  for (const f of [api.stats, api.listMemories, api.events, api.quarantine, api.workflows, api.chartDecay, api.getSettings]) {
    f.mockRejectedValue(unavailable);
  }
}

describe('a database that cannot be opened', () => {
  beforeEach(() => {
    api.dbInfo.mockResolvedValue(badInfo());
    failEveryQuery();
  });

  it('takes the whole window with the path and the error instead of empty panels', async () => {
    await renderAt('overview');
    const panel = await screen.findByTestId('db-problem');
    expect(screen.getByTestId('db-problem-path')).toHaveTextContent(BAD);
    expect(screen.getByTestId('db-problem-error')).toHaveTextContent('not a lethe database: the file is not a SQLite database (or is damaged)');
    // The path is not echoed twice.
    expect(screen.getByTestId('db-problem-error').textContent).not.toContain(BAD);
    expect(panel).toHaveTextContent(/cannot be opened/i);
    // No views, no nav, and the failed fetches of the first paint leave no error banner.
    expect(screen.queryByTestId('nav-memories')).toBeNull();
    expect(screen.queryByTestId('at-risk-list')).toBeNull();
    await flush();
    expect(document.querySelector('.banner.error')).toBeNull();
    expect(app.toast?.kind).not.toBe('error');
    // The File menu is still there.
    expect(screen.getByTestId('file-menu')).toBeInTheDocument();
    expect(screen.getByTestId('live-indicator')).toHaveAttribute('data-state', 'error');
  });

  it('opening another database from the message brings the views back', async () => {
    await renderAt('overview');
    await screen.findByTestId('db-problem');
    resetFake();
    await fireEvent.click(screen.getByTestId('db-problem-open'));
    await waitFor(() => expect(api.openDb).toHaveBeenCalledWith());
    await waitFor(() => expect(screen.queryByTestId('db-problem')).toBeNull());
    expect(screen.getByTestId('db-path')).toHaveTextContent('/tmp/picked.db');
    await waitFor(() => expect(screen.getByTestId('tier-count-episodic').textContent).toBe('345'));
    expect(screen.getByTestId('live-indicator')).toHaveAttribute('data-state', 'live');
  });

  it('new database from the message uses the save dialog', async () => {
    await renderAt('overview');
    await screen.findByTestId('db-problem');
    await fireEvent.click(screen.getByTestId('db-problem-new'));
    await waitFor(() => expect(api.newDb).toHaveBeenCalledWith());
    await waitFor(() => expect(screen.queryByTestId('db-problem')).toBeNull());
    expect(screen.getByTestId('db-path')).toHaveTextContent('/tmp/new.db');
  });

  it('try again asks the shell to re-open its current file, naming no path', async () => {
    await renderAt('overview');
    await screen.findByTestId('db-problem');
    await fireEvent.click(screen.getByTestId('db-problem-retry'));
    await waitFor(() => expect(api.reopenDb).toHaveBeenCalledWith());
    expect(api.openDb).not.toHaveBeenCalled();
  });
});

describe('opening a file that turns out to be unusable', () => {
  it('shows the problem screen for the new path, not the old data and an error toast', async () => {
    await renderAt('overview');
    await waitFor(() => expect(screen.getByTestId('tier-count-episodic').textContent).toBe('345'));
    // The shell answers at once with the new path, still opening; the failure follows as db://opened.
    api.openDb.mockResolvedValue(dbInfoOf(BAD, { loading: true }));
    failEveryQuery();
    await fireEvent.click(screen.getByTestId('file-menu'));
    await fireEvent.click(screen.getByTestId('open-db'));
    await waitFor(() => expect(screen.getByTestId('db-path')).toHaveTextContent(BAD));
    expect(screen.getByTestId('live-indicator')).toHaveAttribute('data-state', 'opening');
    emitOpened(badInfo());
    expect(await screen.findByTestId('db-problem')).toBeInTheDocument();
    await flush();
    expect(document.querySelector('.banner.error')).toBeNull();
  });

  it('a cancelled dialog changes nothing', async () => {
    await renderAt('overview');
    await waitFor(() => expect(screen.getByTestId('tier-count-episodic').textContent).toBe('345'));
    api.openDb.mockResolvedValue(null);
    const calls = api.stats.mock.calls.length;
    await fireEvent.click(screen.getByTestId('file-menu'));
    await fireEvent.click(screen.getByTestId('open-db'));
    await waitFor(() => expect(api.openDb).toHaveBeenCalled());
    await flush();
    expect(screen.getByTestId('db-path')).toHaveTextContent('/home/me/.local/share/lethe/memory.db');
    expect(api.stats.mock.calls.length).toBe(calls);
  });

  it('an error that leaves the current database open is reported once, as a toast', async () => {
    await renderAt('overview');
    api.newDb.mockRejectedValue({ code: 'invalid_input', message: '/tmp/new.db already exists; use Open' });
    await fireEvent.click(screen.getByTestId('file-menu'));
    await fireEvent.click(screen.getByTestId('new-db'));
    await waitFor(() => expect(screen.getByTestId('toast')).toHaveTextContent('already exists; use Open'));
    expect(screen.getByTestId('toast')).toHaveAttribute('data-kind', 'error');
    expect(document.querySelector('.banner.error')).toBeNull();
    expect(screen.queryByTestId('db-problem')).toBeNull();
  });
});

describe('a file that takes a while to open', () => {
  const BIG = '/home/me/big.db';

  it('shows its path and an opening state at once; db://opened brings the views up to date', async () => {
    api.dbInfo.mockResolvedValue(dbInfoOf(BIG, { loading: true }));
    await renderAt('overview');
    await waitFor(() => expect(screen.getByTestId('db-path')).toHaveTextContent(BIG));
    expect(screen.getByTestId('live-indicator')).toHaveAttribute('data-state', 'opening');
    expect(screen.getByTestId('live-indicator')).toHaveTextContent('Opening…');
    expect(screen.getByTestId('db-loading')).toBeInTheDocument();
    await waitFor(() => expect(api.stats).toHaveBeenCalled());
    const calls = api.stats.mock.calls.length;
    // The connection is ready but scores still load: still opening, nothing re-read yet.
    emitOpened(dbInfoOf(BIG, { loading: true }));
    await flush();
    expect(api.stats.mock.calls.length).toBe(calls);
    emitOpened(dbInfoOf(BIG));
    await waitFor(() => expect(screen.getByTestId('live-indicator')).toHaveAttribute('data-state', 'live'));
    expect(screen.queryByTestId('db-loading')).toBeNull();
    await waitFor(() => expect(api.stats.mock.calls.length).toBe(calls + 1));
  });

  it('an older db_info answer arriving after db://opened does not bring the opening state back', async () => {
    const older = dbInfoOf(BIG, { loading: true });
    const newer = dbInfoOf(BIG);
    let answer: (i: unknown) => void = () => {};
    api.dbInfo.mockImplementation(() => new Promise((r) => (answer = r)));
    await renderAt('overview');
    await waitFor(() => expect(api.dbInfo).toHaveBeenCalled());
    expect(listenerCount()).toBe(6);
    emitOpened(newer);
    await waitFor(() => expect(screen.getByTestId('live-indicator')).toHaveAttribute('data-state', 'live'));
    answer(older);
    await flush();
    expect(screen.getByTestId('live-indicator')).toHaveAttribute('data-state', 'live');
    expect(app.db?.revision).toBe(newer.revision);
  });

  it('db_info is read only once db://opened is listened to', async () => {
    await renderAt('overview');
    await waitFor(() => expect(api.dbInfo).toHaveBeenCalled());
    const dbInfoOrder = api.dbInfo.mock.invocationCallOrder[0];
    const listenOrder = api.onDbOpened.mock.invocationCallOrder[0];
    expect(listenOrder).toBeLessThan(dbInfoOrder);
  });
});

describe('db://status', () => {
  it('missing shows a waiting banner; live again removes it and re-reads everything', async () => {
    await renderAt('overview');
    await waitFor(() => expect(api.stats).toHaveBeenCalled());
    expect(screen.queryByTestId('db-status-banner')).toBeNull();

    emitStatus({ state: 'missing', message: 'the database file is gone (deleted or being replaced)' });
    await flush();
    const banner = screen.getByTestId('db-status-banner');
    expect(banner).toHaveAttribute('data-state', 'missing');
    expect(banner).toHaveTextContent('The database file is gone (deleted or being replaced) — waiting for it to come back');
    // Fetches failing meanwhile do not stack error banners on top.
    api.stats.mockRejectedValue({ code: 'db_unavailable', message: 'no such file' });
    await fireEvent.click(screen.getByTestId('nav-memories'));
    await fireEvent.click(screen.getByTestId('nav-overview'));
    await flush();
    expect(document.querySelector('.banner.error')).toBeNull();

    resetFakeCounts();
    emitStatus({ state: 'live', message: 'the database is back' });
    await flush();
    expect(screen.queryByTestId('db-status-banner')).toBeNull();
    await waitFor(() => expect(api.dbInfo).toHaveBeenCalledTimes(1));
    await waitFor(() => expect(api.stats).toHaveBeenCalled());
    await waitFor(() => expect(screen.getByTestId('tier-count-episodic').textContent).toBe('345'));
  });

  it('a file that comes back as something else switches to the problem screen', async () => {
    await renderAt('overview');
    await shown();
    emitStatus({ state: 'missing', message: 'the database file is gone' });
    await flush();
    api.dbInfo.mockResolvedValue(badInfo());
    emitStatus({ state: 'live', message: 'the database is back' });
    expect(await screen.findByTestId('db-problem')).toBeInTheDocument();
  });

  it('a watcher error shows its message in a banner', async () => {
    await renderAt('overview');
    await shown();
    emitStatus({ state: 'error', message: 'inotify limit reached.' });
    await flush();
    const banner = screen.getByTestId('db-status-banner');
    expect(banner).toHaveAttribute('data-state', 'error');
    expect(banner).toHaveTextContent('Live updates stopped: inotify limit reached. What is shown may be out of date.');
  });
});

/** Waits until the window shows the launch file (its db_info has been read). */
async function shown() {
  await waitFor(() => expect(screen.getByTestId('db-path')).toHaveTextContent('/home/me/.local/share/lethe/memory.db'));
}

/** Clears call counts but keeps the default answers. */
function resetFakeCounts() {
  api.dbInfo.mockClear();
  api.stats.mockReset();
  api.stats.mockResolvedValue(makeStats());
}
