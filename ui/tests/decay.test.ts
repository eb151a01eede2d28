import { describe, it, expect, vi, beforeEach, afterEach } from 'vitest';
import { fireEvent, screen, waitFor } from '@testing-library/svelte';
import { api, resetFake, makeStats } from './fakeApi';
import { renderAt, flush } from './helpers';
import { app } from '../src/state.svelte';

vi.mock('../src/api', async () => (await import('./fakeApi')).api);

beforeEach(() => resetFake());
afterEach(() => vi.useRealTimers());

const DAY = 86_400_000;

describe('decay', () => {
  it('shows at-risk count and the chart with the chosen horizon', async () => {
    await renderAt('decay');
    await waitFor(() => expect(screen.getByTestId('next-run-count').textContent).toBe('17'));
    await waitFor(() => expect(api.chartDecay).toHaveBeenLastCalledWith(365, 'light', {}));
    await fireEvent.change(screen.getByTestId('horizon-select'), { target: { value: '90' } });
    await waitFor(() => expect(api.chartDecay).toHaveBeenLastCalledWith(90, 'light', {}));
  });

  it('exports a chart (the shell asks where) and shows the distribution', async () => {
    await renderAt('decay');
    await waitFor(() => expect(api.chartDistribution).toHaveBeenCalledWith('light', undefined, {}));
    const buttons = await screen.findAllByTestId('chart-export');
    await fireEvent.click(buttons[0]);
    await waitFor(() =>
      expect(api.exportChart).toHaveBeenCalledWith({ chart: 'decay', horizonDays: 365 }, 'light', undefined),
    );
    await waitFor(() => expect(app.toast?.message).toBe('Chart saved to /tmp/chart.png'));
    await fireEvent.click(buttons[1]);
    await waitFor(() => expect(api.exportChart).toHaveBeenLastCalledWith({ chart: 'distribution' }, 'light', undefined));
  });

  it('a cancelled export dialog writes nothing and says nothing', async () => {
    await renderAt('decay');
    api.exportChart.mockResolvedValue(null);
    const buttons = await screen.findAllByTestId('chart-export');
    await fireEvent.click(buttons[0]);
    await waitFor(() => expect(api.exportChart).toHaveBeenCalled());
    await flush();
    expect(app.toast).toBeNull();
    expect(document.querySelector('.banner.error')).toBeNull();
  });

  it('the time slider sets a global now that every query passes', async () => {
    await renderAt('decay');
    await waitFor(() => expect(api.stats).toHaveBeenCalled());
    api.stats.mockResolvedValue(makeStats({ next_run: 80 }));
    const before = Date.now();
    await fireEvent.input(screen.getByTestId('time-slider'), { target: { value: '100' } });
    expect(app.offsetDays).toBe(100);
    await waitFor(() => expect(screen.getByTestId('next-run-count').textContent).toBe('80'));
    const now = api.stats.mock.calls.at(-1)![0] as string;
    const delta = new Date(now).getTime() - before;
    expect(delta).toBeGreaterThanOrEqual(100 * DAY - 1000);
    expect(delta).toBeLessThan(100 * DAY + 60_000);
    expect(screen.getByTestId('now-offset')).toHaveTextContent('now + 100 d');

    // Other views use it too.
    await fireEvent.click(screen.getByTestId('nav-memories'));
    await waitFor(() => expect(api.listMemories).toHaveBeenLastCalledWith(expect.objectContaining({ now: expect.any(String) })));
    await fireEvent.click(screen.getByTestId('nav-quarantine'));
    await waitFor(() => expect(api.quarantine.mock.lastCall?.[0]).toEqual(expect.any(String)));
    // Clicking the offset in the top bar returns to now.
    await fireEvent.click(screen.getByTestId('now-offset'));
    expect(app.offsetDays).toBe(0);
  });

  it('play animates the offset until +365 days', async () => {
    vi.useFakeTimers();
    await renderAt('decay');
    await fireEvent.click(screen.getByTestId('play-button'));
    await vi.advanceTimersByTimeAsync(1000);
    expect(app.offsetDays).toBe(25);
    await fireEvent.click(screen.getByTestId('play-button'));
    await vi.advanceTimersByTimeAsync(1000);
    expect(app.offsetDays).toBe(25);
    await fireEvent.click(screen.getByTestId('play-button'));
    await vi.advanceTimersByTimeAsync(20_000);
    expect(app.offsetDays).toBe(365);
    expect(screen.getByTestId('play-button')).toHaveTextContent('Play');
    vi.useRealTimers();
  });

  it('what-if compares counts and lists newly forgotten ids; apply and reset', async () => {
    await renderAt('decay');
    await waitFor(() => expect(screen.getByTestId('threshold')).toBeInTheDocument());
    await fireEvent.input(screen.getByTestId('threshold'), { target: { value: '0.55' } });
    // Nothing runs until Preview.
    await flush();
    expect(api.whatIf).not.toHaveBeenCalled();
    await fireEvent.click(screen.getByTestId('what-if-run'));
    await waitFor(() => expect(screen.getByTestId('what-if-proposed').textContent).toBe('3'));
    expect(screen.getByTestId('what-if-current').textContent).toBe('2');
    expect(screen.getAllByTestId('newly-forgotten-id').map((b) => b.dataset.id)).toEqual(['mem_7']);
    // Named by their text, not by id alone.
    await waitFor(() => expect(screen.getByTestId('newly-forgotten-id')).toHaveTextContent('content of mem_7'));
    const sent = api.whatIf.mock.calls.at(-1)![0];
    expect(sent.threshold).toBe(0.55);
    // Unknown settings survive the round trip.
    expect(sent.working_window_hours).toBe(48);

    // When the engine names the newly forgotten ids itself, those are shown.
    api.whatIf.mockResolvedValue({ current: { count: 1, ids: ['mem_1'] }, proposed: { count: 1, ids: ['mem_9'] }, newly_forgotten: ['mem_9'], spared: ['mem_1'] });
    await fireEvent.click(screen.getByTestId('what-if-run'));
    await waitFor(() => expect(screen.getAllByTestId('newly-forgotten-id').map((b) => b.dataset.id)).toEqual(['mem_9']));

    // Apply asks first, naming the change.
    await fireEvent.click(screen.getByTestId('what-if-apply'));
    expect(screen.getByTestId('apply-changes')).toHaveTextContent('threshold 0.6 → 0.55');
    expect(api.setSettings).not.toHaveBeenCalled();
    await fireEvent.click(screen.getByTestId('confirm-yes'));
    await waitFor(() => expect(api.setSettings).toHaveBeenCalledWith(expect.objectContaining({ threshold: 0.55 })));

    await fireEvent.click(screen.getByTestId('what-if-reset'));
    await flush();
    await fireEvent.click(screen.getByTestId('what-if-run'));
    await flush();
    expect((screen.getByTestId('threshold') as HTMLInputElement).value).toBe('0.6');
    expect((screen.getByTestId('half-life-semantic') as HTMLInputElement).value).toBe('180');
    expect((screen.getByTestId('weight-pinned') as HTMLInputElement).value).toBe('0.3');
    expect((screen.getByTestId('quarantine-days') as HTMLInputElement).value).toBe('30');
    expect((screen.getByTestId('review-band') as HTMLInputElement).value).toBe('0.5');
    const last = api.whatIf.mock.calls.at(-1)![0];
    expect(last.half_life_days).toEqual({ working: 2, episodic: 30, semantic: 180, procedural: 90 });
    expect(last.weights).toEqual({ recency: 0.35, usage: 0.25, duplication: 0.2, importance: 0.15, pinned: 0.3 });
  });

  it('keeps settings and deleting forever in the window when the person asks, and gives them back', async () => {
    await renderAt('decay');
    const box = (await screen.findByTestId('setting-window-only')) as HTMLInputElement;
    expect(box.checked).toBe(false);
    await fireEvent.click(box);
    await waitFor(() => expect(api.setSettings).toHaveBeenLastCalledWith(expect.objectContaining({ person_ops_window_only: true })));
    await waitFor(() => expect(app.toast?.message).toMatch(/only in this window/));
    await fireEvent.click(box);
    await waitFor(() => expect(api.setSettings).toHaveBeenLastCalledWith(expect.objectContaining({ person_ops_window_only: false })));
  });

  it('refuses a threshold at or below where flagging starts, saying why', async () => {
    await renderAt('decay');
    await waitFor(() => expect(screen.getByTestId('threshold')).toBeInTheDocument());
    await fireEvent.input(screen.getByTestId('threshold'), { target: { value: '0.5' } });
    expect(screen.getByTestId('what-if-problem')).toHaveTextContent('must be above the score from which memories are flagged for a look (0.5)');
    expect(screen.getByTestId('what-if-run')).toBeDisabled();
    expect(screen.getByTestId('what-if-apply')).toBeDisabled();
  });
});
