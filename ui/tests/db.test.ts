import { describe, it, expect, vi, beforeEach } from 'vitest';
import { fireEvent, screen, waitFor } from '@testing-library/svelte';
import { api, resetFake, emitStatus, makeStats } from './fakeApi';
import { renderAt, flush } from './helpers';
import { app } from '../src/state.svelte';

vi.mock('../src/api', async () => (await import('./fakeApi')).api);

const BAD = '/home/me/notes.txt';
const unavailable = { code: 'db_unavailable', message: `${BAD}: not a lethe database: the file is not a SQLite database (or is damaged)` };

beforeEach(() => resetFake());

/** Every data command fails the way the shell answers when no database is open. */
function failEveryQuery() {
  for (const f of [api.stats, api.listMemories, api.events, api.quarantine, api.workflows, api.chartDecay, api.getSettings]) {
    f.mockRejectedValue(unavailable);
  }
}

describe('a database that cannot be opened', () => {
  beforeEach(() => {
    api.dbInfo.mockResolvedValue({ path: BAD, exists: true, memento: false, schema_version: 0, error: unavailable.message });
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
    expect(app.error).toBeNull();
    // The File menu is still there.
    expect(screen.getByTestId('file-menu')).toBeInTheDocument();
    expect(screen.getByTestId('live-indicator')).toHaveAttribute('data-state', 'error');
  });

  it('opening another database from the message brings the views back', async () => {
    await renderAt('overview');
    await screen.findByTestId('db-problem');
    resetFake();
    await fireEvent.click(screen.getByTestId('db-problem-open'));
    await waitFor(() => expect(api.openDb).toHaveBeenCalledWith('/tmp/picked.db'));
    await waitFor(() => expect(screen.queryByTestId('db-problem')).toBeNull());
    expect(screen.getByTestId('db-path')).toHaveTextContent('/tmp/picked.db');
    await waitFor(() => expect(screen.getByTestId('tier-count-episodic').textContent).toBe('345'));
    expect(screen.getByTestId('live-indicator')).toHaveAttribute('data-state', 'live');
  });

  it('new database from the message uses the save dialog', async () => {
    await renderAt('overview');
    await screen.findByTestId('db-problem');
    await fireEvent.click(screen.getByTestId('db-problem-new'));
    await waitFor(() => expect(api.newDb).toHaveBeenCalledWith('/tmp/new.db'));
    await waitFor(() => expect(screen.queryByTestId('db-problem')).toBeNull());
  });

  it('try again re-opens the same path', async () => {
    await renderAt('overview');
    await screen.findByTestId('db-problem');
    await fireEvent.click(screen.getByTestId('db-problem-retry'));
    await waitFor(() => expect(api.openDb).toHaveBeenCalledWith(BAD));
  });
});

describe('opening a file that turns out to be unusable', () => {
  it('shows the problem screen for the new path, not the old data and an error toast', async () => {
    await renderAt('overview');
    await waitFor(() => expect(screen.getByTestId('tier-count-episodic').textContent).toBe('345'));
    api.openDb.mockRejectedValue(unavailable);
    api.dbInfo.mockResolvedValue({ path: BAD, exists: true, memento: false, schema_version: 0, error: unavailable.message });
    failEveryQuery();
    await fireEvent.click(screen.getByTestId('file-menu'));
    await fireEvent.click(screen.getByTestId('open-db'));
    expect(await screen.findByTestId('db-problem')).toBeInTheDocument();
    expect(screen.getByTestId('db-path')).toHaveTextContent(BAD);
    await flush();
    expect(document.querySelector('.banner.error')).toBeNull();
  });

  it('an error that leaves the current database open is reported once as a banner', async () => {
    await renderAt('overview');
    api.newDb.mockRejectedValue({ code: 'invalid_input', message: '/tmp/new.db already exists; use Open' });
    await fireEvent.click(screen.getByTestId('file-menu'));
    await fireEvent.click(screen.getByTestId('new-db'));
    await waitFor(() => expect(document.querySelector('.banner.error')).toHaveTextContent('already exists; use Open'));
    expect(screen.queryByTestId('db-problem')).toBeNull();
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
    emitStatus({ state: 'missing', message: 'the database file is gone' });
    await flush();
    api.dbInfo.mockResolvedValue({ path: BAD, exists: true, memento: false, schema_version: 0, error: unavailable.message });
    emitStatus({ state: 'live', message: 'the database is back' });
    expect(await screen.findByTestId('db-problem')).toBeInTheDocument();
  });

  it('a watcher error shows its message in a banner', async () => {
    await renderAt('overview');
    emitStatus({ state: 'error', message: 'inotify limit reached.' });
    await flush();
    const banner = screen.getByTestId('db-status-banner');
    expect(banner).toHaveAttribute('data-state', 'error');
    expect(banner).toHaveTextContent('Live updates stopped: inotify limit reached. What is shown may be out of date.');
  });
});

/** Clears call counts but keeps the default answers. */
function resetFakeCounts() {
  api.dbInfo.mockClear();
  api.stats.mockReset();
  api.stats.mockResolvedValue(makeStats());
}
