import { describe, it, expect, vi, beforeEach } from 'vitest';

// Here the real api.ts runs against a mocked Tauri core: these tests pin command names
// and argument shapes to docs/IPC.md.
const invoke = vi.fn();
const listen = vi.fn();
vi.mock('@tauri-apps/api/core', () => ({ invoke: (...a: unknown[]) => invoke(...a) }));
vi.mock('@tauri-apps/api/event', () => ({ listen: (...a: unknown[]) => listen(...a) }));

import * as api from '../src/api';

beforeEach(() => {
  invoke.mockReset().mockResolvedValue(null);
  listen.mockReset();
});

describe('api.ts', () => {
  it('uses the IPC command names and camelCase args', async () => {
    await api.listMemories({ tier: 'semantic', limit: 100, offset: 200, minScore: 0.5, now: undefined });
    expect(invoke).toHaveBeenLastCalledWith('list_memories', { query: { tier: 'semantic', limit: 100, offset: 200, minScore: 0.5 } });
    await api.duplicates(undefined, '2026-01-01T00:00:00.000Z');
    expect(invoke).toHaveBeenLastCalledWith('duplicates', { now: '2026-01-01T00:00:00.000Z' });
    await api.keepBoth('mem_a', 'mem_b');
    expect(invoke).toHaveBeenLastCalledWith('keep_both', { a: 'mem_a', b: 'mem_b' });
    await api.supersedeDuplicate('mem_a', 'mem_b');
    expect(invoke).toHaveBeenLastCalledWith('supersede_duplicate', { a: 'mem_a', b: 'mem_b' });
    await api.health();
    expect(invoke).toHaveBeenLastCalledWith('health', {});
    await api.hardDeleteMemory('mem_1', true);
    expect(invoke).toHaveBeenLastCalledWith('hard_delete_memory', { id: 'mem_1', confirm: true });
    await api.updateProcedure('mem_1', 3, { taskGoal: 'g', steps: ['a'] });
    expect(invoke).toHaveBeenLastCalledWith('update_procedure', { id: 'mem_1', expectedVersion: 3, patch: { taskGoal: 'g', steps: ['a'] } });
    await api.events({ memoryId: 'mem_1', limit: 5 });
    expect(invoke).toHaveBeenLastCalledWith('events', { memoryId: 'mem_1', limit: 5 });
    await api.chartDecay(365, 'dark');
    expect(invoke).toHaveBeenLastCalledWith('chart_decay', { horizonDays: 365, theme: 'dark' });
    await api.chartProjection('mem_1', 'light', '2025-01-01T00:00:00.000Z');
    expect(invoke).toHaveBeenLastCalledWith('chart_projection', { id: 'mem_1', theme: 'light', now: '2025-01-01T00:00:00.000Z' });
    // Drawn at the shown size: width and pixel ratio travel as separate arguments.
    await api.chartDecay(90, 'light', { width: 520, dpr: 2 });
    expect(invoke).toHaveBeenLastCalledWith('chart_decay', { horizonDays: 90, theme: 'light', width: 520, dpr: 2 });
    await api.runForget(true);
    expect(invoke).toHaveBeenLastCalledWith('run_forget', { dryRun: true });
    await api.stats();
    expect(invoke).toHaveBeenLastCalledWith('stats', {});
    await api.recall('rust', { limit: 5 });
    expect(invoke).toHaveBeenLastCalledWith('recall', { query: 'rust', limit: 5 });
    await api.cancelForget();
    expect(invoke).toHaveBeenLastCalledWith('cancel_forget', undefined);
  });

  it('rejects with { code, message }', async () => {
    invoke.mockRejectedValueOnce({ code: 'conflict', message: 'current version 5' });
    await expect(api.updateProcedure('m', 1, {})).rejects.toEqual({ code: 'conflict', message: 'current version 5' });
    invoke.mockRejectedValueOnce('boom');
    await expect(api.dbInfo()).rejects.toEqual({ code: 'internal', message: 'boom' });
  });

  it('event helpers listen on the documented channels and hand back the payload', async () => {
    const unlisten = vi.fn();
    listen.mockImplementation(async (_name: string, handler: (e: { payload: unknown }) => void) => {
      handler({ payload: { data_version: 1, ids: null } });
      return unlisten;
    });
    const cb = vi.fn();
    const off = await api.onDbChanged(cb);
    expect(listen).toHaveBeenLastCalledWith('db://changed', expect.any(Function));
    expect(cb).toHaveBeenCalledWith({ data_version: 1, ids: null });
    off();
    expect(unlisten).toHaveBeenCalled();
    await api.onDbStatus(vi.fn());
    expect(listen).toHaveBeenLastCalledWith('db://status', expect.any(Function));
    await api.onForgetProgress(vi.fn());
    expect(listen).toHaveBeenLastCalledWith('forget://progress', expect.any(Function));
    await api.onVectorsProgress(vi.fn());
    expect(listen).toHaveBeenLastCalledWith('vectors://progress', expect.any(Function));
    await api.onScoringProgress(vi.fn());
    expect(listen).toHaveBeenLastCalledWith('scoring://progress', expect.any(Function));
    await api.onDbOpened(vi.fn());
    expect(listen).toHaveBeenLastCalledWith('db://opened', expect.any(Function));
  });

  it('sends no path: open, new and export ask in the shell, a recent file goes by index', async () => {
    await api.openDb();
    expect(invoke).toHaveBeenLastCalledWith('open_db', undefined);
    await api.newDb();
    expect(invoke).toHaveBeenLastCalledWith('new_db', undefined);
    await api.reopenDb();
    expect(invoke).toHaveBeenLastCalledWith('reopen_db', undefined);
    await api.openRecent(2);
    expect(invoke).toHaveBeenLastCalledWith('open_recent', { index: 2 });
    await api.exportChart({ chart: 'projection', id: 'mem_1' }, 'dark');
    expect(invoke).toHaveBeenLastCalledWith('export_chart', { chart: 'projection', id: 'mem_1', theme: 'dark' });
  });
});
