import { describe, it, expect, vi, beforeEach } from 'vitest';
import { fireEvent, screen, waitFor } from '@testing-library/svelte';
import { api, resetFake, makeDetail, HOSTILE } from './fakeApi';
import { renderAt, ids } from './helpers';
import { app } from '../src/state.svelte';

vi.mock('../src/api', async () => (await import('./fakeApi')).api);

const overview = {
  sessions: [
    {
      session_id: 's-deploy',
      task_kind: 'deploy',
      ended_at: '2025-03-01T10:00:00.000Z',
      first_at: '2025-03-01T09:00:00.000Z',
      last_at: '2025-03-01T10:00:00.000Z',
      memories: [
        { id: 'mem_t1', type: 'episodic' as const, preview: HOSTILE, created_at: '2025-03-01T09:00:00.000Z', is_deleted: false, role: 'task_log' },
        { id: 'mem_r1', type: 'semantic' as const, preview: 'Canary deploys need a 60 s health check', created_at: '2025-03-01T10:00:00.000Z', is_deleted: false, role: 'rule' },
      ],
    },
    {
      session_id: 's-open',
      task_kind: null,
      ended_at: null,
      first_at: '2025-02-01T09:00:00.000Z',
      last_at: '2025-02-01T09:00:00.000Z',
      memories: [{ id: 'mem_w1', type: 'working' as const, preview: 'scratch', created_at: '2025-02-01T09:00:00.000Z', is_deleted: false, role: 'written' }],
    },
  ],
  task_kinds: [
    { task_kind: 'deploy', entries: [{ id: 'mem_t1', session_id: 's-deploy', ended_at: '2025-03-01T10:00:00.000Z', preview: HOSTILE, is_deleted: false }] },
  ],
};

beforeEach(() => {
  resetFake();
  api.sessions.mockResolvedValue(overview);
});

describe('sessions', () => {
  it('lists sessions with what they wrote, their task logs and rules, and task kinds', async () => {
    await renderAt('sessions');
    await waitFor(() => expect(ids('session-row')).toEqual(['s-deploy', 's-open']));
    const roles = screen.getAllByTestId('session-memory').map((m) => [m.dataset.id, m.dataset.role]);
    expect(roles).toEqual([['mem_t1', 'task_log'], ['mem_r1', 'rule'], ['mem_w1', 'written']]);
    expect(screen.getByTestId('session-kind')).toHaveTextContent('deploy');
    const groups = screen.getAllByTestId('task-kind-group');
    expect(groups.map((g) => g.dataset.kind)).toEqual(['deploy']);
    expect(ids('task-log')).toEqual(['mem_t1']);
  });

  it('shows agent text as text, never as markup', async () => {
    await renderAt('sessions');
    await waitFor(() => expect(ids('task-log')).toHaveLength(1));
    expect(document.querySelector('img[src="x"]')).toBeNull();
    expect(screen.getAllByText(HOSTILE).length).toBeGreaterThan(0);
  });

  it('opens a memory in the Memories view', async () => {
    await renderAt('sessions');
    await waitFor(() => expect(ids('task-log')).toHaveLength(1));
    await fireEvent.click(screen.getByTestId('task-log').querySelector('button')!);
    expect(app.selectedId).toBe('mem_t1');
    expect(app.view).toBe('memories');
  });
});

describe('needs extraction', () => {
  it('the Memories filter asks for needsExtraction and the detail shows the lint', async () => {
    api.showMemory.mockResolvedValue(
      makeDetail('mem_d', { type: 'semantic', dialogue: { score: 0.8, flagged: true, reasons: ['speaker prefix', 'question'] } }),
    );
    await renderAt('memories');
    await fireEvent.click(screen.getByTestId('filter-needs-extraction'));
    await waitFor(() => expect(api.listMemories).toHaveBeenLastCalledWith(expect.objectContaining({ needsExtraction: true })));
    app.selectedId = 'mem_d';
    await waitFor(() => expect(screen.getByTestId('dialogue-lint')).toHaveAttribute('data-flagged', 'true'));
    expect(screen.getByTestId('dialogue-lint')).toHaveTextContent('speaker prefix, question');
  });
});
