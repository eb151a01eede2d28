import { describe, it, expect, vi, beforeEach } from 'vitest';
import { fireEvent, screen, waitFor, within, cleanup } from '@testing-library/svelte';
import { api, resetFake, makeStats, emitStatus, emitProgress, emitChanged, emitVectors, emitScoring, listenerCount, pagedList, dbInfoOf } from './fakeApi';
import { renderAt, flush } from './helpers';
import { app } from '../src/state.svelte';

vi.mock('../src/api', async () => (await import('./fakeApi')).api);

beforeEach(() => resetFake());

describe('overview', () => {
  it('shows per-tier active counts as exact numbers, and what the next run forgets', async () => {
    await renderAt('overview');
    await waitFor(() => expect(screen.getByTestId('tier-count-episodic').textContent).toBe('345'));
    expect(screen.getByTestId('tier-count-working').textContent).toBe('12');
    expect(screen.getByTestId('tier-count-semantic').textContent).toBe('89');
    expect(screen.getByTestId('tier-count-procedural').textContent).toBe('6');
    expect(screen.getByTestId('tier-pinned-semantic').textContent).toBe('11');
    expect(screen.getByTestId('next-run-count').textContent).toBe('17');
  });

  it('lists memories at risk (score sort, min 0.5) and the latest 10 events', async () => {
    api.listMemories.mockImplementation(pagedList(3, () => ({ forget_score: 0.55 })));
    await renderAt('overview');
    await waitFor(() => expect(screen.getAllByTestId('at-risk-row')).toHaveLength(3));
    expect(api.listMemories).toHaveBeenCalledWith(expect.objectContaining({ sort: 'score', minScore: 0.5 }));
    // The counts, the at-risk list and the health lists are read at one instant.
    const at = api.listMemories.mock.calls.at(-1)![0].now;
    expect(at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(api.stats).toHaveBeenLastCalledWith(at);
    expect(api.health).toHaveBeenLastCalledWith(at);
    expect(api.events).toHaveBeenCalledWith({ limit: 10 });
    expect(screen.getAllByTestId('overview-event')).toHaveLength(2);
    expect(api.chartDecay).toHaveBeenCalledWith(365, 'light');
    // Clicking an at-risk memory opens it.
    await fireEvent.click(screen.getAllByTestId('at-risk-row')[1]);
    expect(app.view).toBe('memories');
    expect(app.selectedId).toBe('mem_1');
  });

  it('live indicator follows db://status; the DB path is shown', async () => {
    await renderAt('overview');
    await waitFor(() => expect(screen.getByTestId('db-path')).toHaveTextContent('memory.db'));
    const ind = screen.getByTestId('live-indicator');
    expect(ind).toHaveAttribute('data-state', 'live');
    emitStatus({ state: 'missing', message: 'file removed' });
    await flush();
    expect(ind).toHaveAttribute('data-state', 'missing');
    emitStatus({ state: 'error', message: 'disk I/O error' });
    await flush();
    expect(ind).toHaveAttribute('data-state', 'error');
  });

  it('the vector back-fill shows its progress until it finishes, and an error as a toast', async () => {
    await renderAt('overview');
    await flush();
    expect(screen.queryByTestId('vectors-progress')).toBeNull();
    emitVectors({ path: '/home/me/.local/share/lethe/memory.db', done: 2000, total: 100000, finished: false, error: null });
    await flush();
    expect(screen.getByTestId('vectors-progress')).toHaveTextContent('Computing meaning vectors 2,000 / 100,000');
    emitVectors({ path: '/home/me/.local/share/lethe/memory.db', done: 100000, total: 100000, finished: true, error: null });
    await flush();
    expect(screen.queryByTestId('vectors-progress')).toBeNull();
    emitVectors({ path: '/home/me/.local/share/lethe/memory.db', done: 0, total: 0, finished: true, error: 'database is locked' });
    await flush();
    expect(screen.queryByTestId('vectors-progress')).toBeNull();
    expect(app.toast?.message).toContain('database is locked');
    emitVectors({ path: '/another.db', done: 5, total: 10, finished: false, error: null });
    await flush();
    expect(screen.queryByTestId('vectors-progress')).toBeNull();
  });

  it('db_info with an error starts in the error state', async () => {
    api.dbInfo.mockResolvedValue(dbInfoOf('/x.db', { schema_version: 0, error: 'not a database' }));
    await renderAt('overview');
    await waitFor(() => expect(screen.getByTestId('live-indicator')).toHaveAttribute('data-state', 'error'));
  });

  it('unlistens every event on teardown', async () => {
    await renderAt('overview');
    await waitFor(() => expect(listenerCount()).toBe(6));
    cleanup();
    await flush();
    expect(listenerCount()).toBe(0);
  });

  it('an empty DB shows the welcome card with demo data and Connect an agent', async () => {
    api.stats.mockResolvedValue(makeStats({ total_active: 0, total_quarantined: 0 }));
    await renderAt('overview');
    const demo = await screen.findByTestId('load-demo');
    await fireEvent.click(screen.getByTestId('welcome-connect'));
    const blocks = await screen.findAllByTestId('connect-config');
    expect(blocks.map((b) => b.dataset.host)).toEqual(['claude-code', 'claude-desktop', 'cursor', 'generic']);
    await fireEvent.click(screen.getByTestId('connect-agent-close'));
    const statsCalls = api.stats.mock.calls.length;
    await fireEvent.click(demo);
    await waitFor(() => expect(api.loadDemo).toHaveBeenCalled());
    await waitFor(() => expect(api.stats.mock.calls.length).toBeGreaterThan(statsCalls));
  });

  it('a long forget preview says "and N more", never "mores"', async () => {
    const ids = Array.from({ length: 27621 }, (_, i) => `mem_${i}`);
    api.runForget.mockResolvedValue({ scanned: 100003, soft_deleted: ids, review: [], working_gate: [], purged: [], changed_since_plan: [], elapsed_ms: 12, dry_run: true });
    await renderAt('overview');
    await fireEvent.click(screen.getByTestId('run-forget'));
    await waitFor(() => expect(screen.getByTestId('run-forget-panel')).toHaveTextContent('and 27,571 more'));
    expect(screen.getByTestId('run-forget-panel').textContent).not.toContain('mores');
  });

  it('run forget previews with a dry run, then runs with progress and can cancel', async () => {
    await renderAt('overview');
    await fireEvent.click(screen.getByTestId('run-forget'));
    await waitFor(() => expect(api.runForget).toHaveBeenCalledWith(true));
    expect(await screen.findByTestId('run-soft')).toHaveTextContent('2');

    let finish!: (v: unknown) => void;
    api.runForget.mockImplementation(() => new Promise((r) => (finish = r)));
    await fireEvent.click(screen.getByTestId('run-forget-confirm'));
    expect(api.runForget).toHaveBeenLastCalledWith(false, undefined);
    emitProgress({ done: 25, total: 100 });
    await flush();
    const bar = screen.getByTestId('forget-progress');
    expect(bar).toHaveAttribute('aria-valuenow', '25');
    expect((bar.firstElementChild as HTMLElement).style.width).toBe('25%');
    await fireEvent.click(screen.getByTestId('cancel-forget'));
    expect(api.cancelForget).toHaveBeenCalled();
    finish({ scanned: 100, soft_deleted: ['mem_1'], review: [], working_gate: [], purged: [], elapsed_ms: 5 });
    await waitFor(() => expect(screen.queryByTestId('forget-progress')).toBeNull());
  });

  it('a dry run shows how far scoring has come and can be cancelled; its late answer is ignored', async () => {
    await renderAt('overview');
    let finish!: (v: unknown) => void;
    api.runForget.mockImplementation(() => new Promise((r) => (finish = r)));
    await fireEvent.click(screen.getByTestId('run-forget'));
    expect(api.runForget).toHaveBeenLastCalledWith(true);
    const panel = screen.getByTestId('run-forget-panel');
    emitScoring({ stage: 'reading', done: 40960, total: 100000 });
    await flush();
    const text = within(panel).getByTestId('load-progress-text');
    expect(text.textContent).toContain('reading memories');
    expect(text.textContent!.replace(/\D/g, '')).toContain('40960100000');
    const bar = within(panel).getByRole('progressbar');
    expect(bar).toHaveAttribute('aria-valuenow', '40960');
    await fireEvent.click(within(panel).getByTestId('load-cancel'));
    expect(api.cancelForget).toHaveBeenCalled();
    await waitFor(() => expect(within(panel).queryByTestId('load-progress')).toBeNull());
    finish({ scanned: 100, soft_deleted: ['mem_1'], review: [], working_gate: [], purged: [], elapsed_ms: 5, dry_run: true });
    await flush();
    expect(within(panel).queryByTestId('run-forget-confirm')).toBeNull();
    expect(within(panel).getByTestId('run-forget')).toBeInTheDocument();
  });

  it('re-fetches stats on db://changed without polling', async () => {
    await renderAt('overview');
    await waitFor(() => expect(api.stats).toHaveBeenCalled());
    const n = api.stats.mock.calls.length;
    api.stats.mockResolvedValue(makeStats({ next_run: 99 }));
    emitChanged({ data_version: 9, ids: null });
    await waitFor(() => expect(screen.getByTestId('next-run-count').textContent).toBe('99'));
    expect(api.stats.mock.calls.length).toBe(n + 1);
  });

  it('File menu opens a DB through the native dialog and lists recent files', async () => {
    await renderAt('overview');
    await fireEvent.click(screen.getByTestId('file-menu'));
    await waitFor(() => expect(screen.getByText('/tmp/a.db')).toBeInTheDocument());
    await fireEvent.click(screen.getByTestId('open-db'));
    // The page names no path: the shell's dialog picks it.
    await waitFor(() => expect(api.openDb).toHaveBeenCalledWith());
    await waitFor(() => expect(screen.getByTestId('db-path')).toHaveTextContent('/tmp/picked.db'));
    await fireEvent.click(screen.getByTestId('file-menu'));
    await fireEvent.click(screen.getByTestId('new-db'));
    await waitFor(() => expect(api.newDb).toHaveBeenCalledWith());
    await waitFor(() => expect(screen.getByTestId('db-path')).toHaveTextContent('/tmp/new.db'));
  });

  it('a recent file is opened by its index in the list the shell gave, not by its path', async () => {
    await renderAt('overview');
    await fireEvent.click(screen.getByTestId('file-menu'));
    const entries = await screen.findAllByTestId('recent-file');
    expect(entries.map((e) => e.textContent)).toEqual(['/tmp/a.db', '/tmp/b.db']);
    await fireEvent.click(entries[1]);
    await waitFor(() => expect(api.openRecent).toHaveBeenCalledWith(1));
    await waitFor(() => expect(screen.getByTestId('db-path')).toHaveTextContent('/tmp/b.db'));
    expect(api.openDb).not.toHaveBeenCalled();
  });

  it('explains what Run forget does, with the policy numbers', async () => {
    await renderAt('overview');
    const text = await screen.findByTestId('run-forget-explain');
    await waitFor(() => expect(text).toHaveTextContent('≥ 0.600'));
    expect(text).toHaveTextContent(/dry run first/);
    expect(text).toHaveTextContent('30-day quarantine');
  });

  it('latest activity is compact and readable; at-risk rows explain their score on hover', async () => {
    api.listMemories.mockImplementation(pagedList(2, (i) => ({ forget_score: 0.7, would_forget: i === 0 })));
    await renderAt('overview');
    await waitFor(() => expect(screen.getAllByTestId('overview-event')).toHaveLength(2));
    const pin = screen.getAllByTestId('overview-event')[1];
    expect(pin).toHaveTextContent('pinned');
    expect(pin.closest('table')!.classList.contains('compact')).toBe(true);
    await waitFor(() => expect(screen.getAllByTestId('at-risk-row')).toHaveLength(2));
    const [due, band] = screen.getAllByTestId('at-risk-row');
    expect(due.getAttribute('title')).toContain('memory number 0');
    expect(due.getAttribute('title')).toContain('ForgetScore 0.700: at or above the threshold');
    expect(band.getAttribute('title')).toContain('just below the threshold');
  });
});


describe('overview while the database opens', () => {
  it('says it is loading, never that there is nothing, until the first answers', async () => {
    // The shell answers nothing that needs scores until the snapshot is loaded.
    const never = <T,>() => new Promise<T>(() => {});
    let release: (() => void) | undefined;
    const gate = new Promise<void>((r) => (release = r));
    api.dbInfo.mockResolvedValue(dbInfoOf('/data/big.db', { loading: true }));
    api.stats.mockImplementation(async () => {
      await gate;
      return makeStats();
    });
    api.listMemories.mockImplementation(async (q) => {
      await gate;
      return pagedList(0)(q);
    });
    api.events.mockImplementation(() => never());
    await renderAt('overview');
    await flush();
    const text = () => document.body.textContent ?? '';
    expect(screen.getAllByTestId('view-loading').length).toBeGreaterThanOrEqual(3);
    expect(text()).toContain('Reading /data/big.db and scoring every memory');
    expect(screen.getByTestId('tier-count-episodic').textContent).toBe('…');
    expect(screen.getByTestId('next-run-count').textContent).toBe('…');
    for (const empty of ['Nothing is close to being forgotten', 'No events.', 'This database is empty']) {
      expect(text()).not.toContain(empty);
    }
    release?.();
    await waitFor(() => expect(screen.getByTestId('tier-count-episodic').textContent).toBe('345'));
    expect(text()).toContain('Nothing is close to being forgotten');
    expect(text()).toContain('Loading events…');
  });
});

describe("health's \"and N more\"", () => {
  it('opens the whole list in Memories with its filter applied', async () => {
    const item = (i: number) => ({
      id: `mem_${i}`, type: 'semantic', preview: `old memory ${i}`, created_at: '2024-01-01T00:00:00.000Z', age_days: 400,
      importance: 0.5, pinned: false, forget_score: 0.4, would_forget: false, recall_count: 0, avg_confidence: null, crosses_in_days: null,
    });
    api.health.mockResolvedValue({ lists: [{ name: 'never_recalled', total: 68, items: [item(1), item(2)] }] });
    await renderAt('overview');
    const more = await screen.findByTestId('health-more');
    expect(more).toHaveTextContent('and 66 more memories');
    await fireEvent.click(more);
    expect(app.view).toBe('memories');
    expect(app.healthList).toBe('never_recalled');
    await waitFor(() =>
      expect(api.listMemories.mock.calls.map((c) => c[0]).some((q) => q.health === 'never_recalled' && q.limit === 100)).toBe(true),
    );
    app.healthList = null;
  });
});
