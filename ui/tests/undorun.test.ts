import { describe, it, expect, vi, beforeEach } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/svelte';
import { api, resetFake } from './fakeApi';
import { renderAt } from './helpers';

vi.mock('../src/api', async () => (await import('./fakeApi')).api);

const RUN = `run_${'a'.repeat(32)}`;
const report = (ids: string[], over = {}) => ({
  scanned: 100,
  soft_deleted: ids,
  review: [],
  working_gate: [],
  purged: [],
  changed_since_plan: [],
  elapsed_ms: 5,
  dry_run: false,
  by_reason: [
    { reason: 'old, unused, low importance', ids: ids.slice(1) },
    { reason: 'duplicate of mem_a', ids: ids.slice(0, 1) },
  ],
  ...over,
});

describe('a forget run that can be undone', () => {
  beforeEach(() => resetFake());

  it('lists the run by reason, asks above the size the person set, and undoes the run in one action', async () => {
    const ids = ['mem_1', 'mem_2', 'mem_3'];
    api.runForget.mockImplementation(async (dry: boolean) => report(ids, dry ? { dry_run: true } : { run_id: RUN }));
    api.undoForgetRun.mockResolvedValue({
      run_id: RUN,
      restored: [
        { id: 'mem_1', preview: 'first', reason: 'x' },
        { id: 'mem_2', preview: 'second', reason: 'x' },
      ],
      already_restored: [],
      quarantined_again: [],
      deleted_for_ever: [{ id: 'mem_3', preview: null, reason: 'x' }],
    });
    await renderAt('overview');
    await fireEvent.click(screen.getByTestId('run-forget'));
    const groups = await screen.findAllByTestId('run-list-reason');
    expect(groups.map((g) => g.querySelector('summary')?.textContent)).toEqual(['old, unused, low importance (2)', 'duplicate of another memory (1)']);
    // Above the size the person set, the run asks with the count first.
    const ask = screen.getByTestId('run-ask-above') as HTMLInputElement;
    await fireEvent.change(ask, { target: { value: '2' } });
    await fireEvent.click(screen.getByTestId('run-forget-confirm'));
    expect(api.runForget).not.toHaveBeenCalledWith(false);
    expect(screen.getByTestId('run-ask-count').textContent).toContain('3 memories');
    await fireEvent.click(screen.getByTestId('confirm-yes'));
    await waitFor(() => expect(api.runForget).toHaveBeenLastCalledWith(false, undefined));
    const undo = await screen.findByTestId('undo-run');
    expect(screen.getByTestId('toast-action').textContent).toBe('Undo this run');
    await fireEvent.click(undo);
    await waitFor(() => expect(api.undoForgetRun).toHaveBeenCalledWith(RUN));
    const result = await screen.findByTestId('undo-result');
    expect(result.textContent).toContain('2 memories restored');
    expect(result.textContent).toContain('1 deleted for ever');
    expect(within(result).getByTestId('undo-gone').textContent).toContain('a memory deleted for ever');
    expect(screen.getByTestId('undo-run')).toBeDisabled();
    expect(api.undoForgetRun).toHaveBeenCalledTimes(1);
  });

  it('restores one memory of a finished run from its result, the rest staying in quarantine', async () => {
    const ids = ['mem_1', 'mem_2', 'mem_3'];
    api.runForget.mockImplementation(async (dry: boolean) => report(ids, dry ? { dry_run: true } : { run_id: RUN }));
    await renderAt('overview');
    await fireEvent.click(screen.getByTestId('run-forget'));
    // The dry run offers no restore: nothing is quarantined yet.
    await screen.findAllByTestId('run-list-reason');
    expect(screen.queryAllByTestId('run-restore-one')).toHaveLength(0);
    await fireEvent.click(screen.getByTestId('run-forget-confirm'));
    await screen.findByTestId('undo-run');
    const buttons = await screen.findAllByTestId('run-restore-one');
    expect(buttons.map((b) => b.dataset.id)).toEqual(['mem_2', 'mem_3', 'mem_1']);
    await fireEvent.click(buttons[1]);
    await waitFor(() => expect(api.restoreMemory).toHaveBeenCalledWith('mem_3'));
    expect(api.restoreMemory).toHaveBeenCalledTimes(1);
    expect(api.undoForgetRun).not.toHaveBeenCalled();
    await waitFor(() => expect(screen.getAllByTestId('run-restored-one')).toHaveLength(1));
    expect(screen.getAllByTestId('run-restore-one').map((b) => b.dataset.id)).toEqual(['mem_2', 'mem_1']);
    await waitFor(() => expect(screen.getByTestId('toast').textContent).toContain('Restored'));
    // The whole run can still be undone (what is left of it).
    expect(screen.getByTestId('undo-run')).not.toBeDisabled();
  });

  it('a run below the size runs at once, and a run that quarantined nothing offers no undo', async () => {
    api.runForget.mockImplementation(async (dry: boolean) => report(['mem_1'], dry ? { dry_run: true } : {}));
    await renderAt('overview');
    await fireEvent.click(screen.getByTestId('run-forget'));
    await fireEvent.click(await screen.findByTestId('run-forget-confirm'));
    await waitFor(() => expect(api.runForget).toHaveBeenLastCalledWith(false, undefined));
    await waitFor(() => expect(screen.getByTestId('run-soft')).toBeTruthy());
    expect(screen.queryByTestId('confirm-dialog')).toBeNull();
    expect(screen.queryByTestId('undo-run')).toBeNull();
  });

  it('a planned run is reviewed item by item: kept memories stay out, only the approved run', async () => {
    const ids = ['mem_1', 'mem_2', 'mem_3', 'mem_4'];
    api.runForget.mockImplementation(async (dry: boolean) => report(ids, dry ? { dry_run: true } : { run_id: RUN }));
    await renderAt('overview');
    await fireEvent.click(screen.getByTestId('run-forget'));
    await screen.findAllByTestId('run-review-item');
    const keepOf = (id: string) => screen.getAllByTestId('run-keep').find((b) => b.getAttribute('data-id') === id)!;
    await fireEvent.click(keepOf('mem_2'));
    await fireEvent.click(keepOf('mem_4'));
    expect(screen.getByTestId('run-kept-count').textContent).toBe('2');
    expect(screen.getByTestId('run-approved-count').textContent).toBe('2');
    // A kept memory can be approved again.
    await fireEvent.click(screen.getAllByTestId('run-approve').find((b) => b.getAttribute('data-id') === 'mem_4')!);
    await fireEvent.click(keepOf('mem_4'));
    const run = screen.getByTestId('run-forget-confirm');
    expect(run.textContent).toBe('Run the 2 approved');
    await fireEvent.click(run);
    await waitFor(() => expect(api.runForget).toHaveBeenLastCalledWith(false, ['mem_1', 'mem_3']));
  });

  it('keeping a whole group leaves nothing of it in the run; approving all brings it back', async () => {
    const ids = ['mem_1', 'mem_2', 'mem_3'];
    api.runForget.mockImplementation(async (dry: boolean) => report(ids, dry ? { dry_run: true } : { run_id: RUN }));
    await renderAt('overview');
    await fireEvent.click(screen.getByTestId('run-forget'));
    const groups = await screen.findAllByTestId('run-list-reason');
    await fireEvent.click(within(groups[0]).getByTestId('run-keep-all'));
    expect(groups[0].querySelector('summary')?.textContent).toBe('old, unused, low importance (2, 2 kept)');
    expect(screen.getByTestId('run-approved-count').textContent).toBe('1');
    await fireEvent.click(within(groups[0]).getByTestId('run-approve-all'));
    expect(screen.queryByTestId('run-kept-count')).toBeNull();
    await fireEvent.click(screen.getByTestId('run-forget-confirm'));
    await waitFor(() => expect(api.runForget).toHaveBeenLastCalledWith(false, undefined));
  });
});
