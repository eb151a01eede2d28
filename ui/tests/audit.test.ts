import { describe, it, expect, vi, beforeEach } from 'vitest';
import { fireEvent, screen, waitFor } from '@testing-library/svelte';
import { api, resetFake } from './fakeApi';
import { renderAt } from './helpers';
import { app } from '../src/state.svelte';

vi.mock('../src/api', async () => (await import('./fakeApi')).api);

beforeEach(() => resetFake());

describe('audit log', () => {
  it('lists events and filters by action, actor and memory id', async () => {
    await renderAt('audit');
    await waitFor(() => expect(screen.getAllByTestId('audit-row')).toHaveLength(2));
    // A pin reads as "pinned", not as the raw before/after values.
    expect(screen.getAllByTestId('audit-row')[1]).toHaveTextContent('pinned');
    expect(screen.getAllByTestId('audit-row')[1]).not.toHaveTextContent('false → true');
    expect(screen.getAllByTestId('audit-row')[0]).toHaveTextContent('old, unused (batch)');
    await fireEvent.change(screen.getByTestId('audit-action'), { target: { value: 'pin' } });
    await waitFor(() => expect(api.events).toHaveBeenLastCalledWith(expect.objectContaining({ action: 'pin' })));
    await fireEvent.change(screen.getByTestId('audit-actor'), { target: { value: 'user' } });
    await fireEvent.change(screen.getByTestId('audit-memory'), { target: { value: 'mem_1' } });
    await waitFor(() =>
      expect(api.events).toHaveBeenLastCalledWith({ action: 'pin', actor: 'user', memoryId: 'mem_1', limit: 500 }),
    );
  });

  it('clicking a memory id opens it', async () => {
    await renderAt('audit');
    await waitFor(() => expect(screen.getAllByTestId('audit-row')).toHaveLength(2));
    await fireEvent.click(screen.getByText('mem_q1'));
    expect(app.view).toBe('memories');
    expect(app.selectedId).toBe('mem_q1');
  });

  it('summarises snapshots in words and keeps long ids whole for the ellipsis and tooltip', async () => {
    const long = 'mem_bde9614-1f39-4325-848d-6909312345ab';
    const snap = (o: Record<string, unknown>) => ({ content_preview: 'x', deleted_at: null, edit_count: 0, importance: 0.5, is_deleted: false, pinned: false, ...o });
    api.events.mockResolvedValue({
      items: [
        { id: 'a1', kind: 'action', memory_id: long, action: 'remember', actor: 'agent:demo', reason: null, policy: null, forget_score: null, created_at: '2025-03-02T10:00:00.000Z', before: null, after: { preview: 'The monorepo uses pnpm', type: 'semantic' } },
        { id: 'a2', kind: 'action', memory_id: long, action: 'importance', actor: 'user', reason: null, policy: null, forget_score: null, created_at: '2025-03-02T10:00:00.000Z', before: snap({ importance: 0.5 }), after: snap({ importance: 0.9 }) },
        { id: 'a3', kind: 'action', memory_id: null, action: 'settings', actor: 'user', reason: null, policy: null, forget_score: null, created_at: '2025-03-02T10:00:00.000Z', before: { threshold: 0.6, weights: { usage: 0.25 } }, after: { threshold: 0.65, weights: { usage: 0.25 } } },
        { id: 'a4', kind: 'action', memory_id: long, action: 'restore', actor: 'user', reason: null, policy: null, forget_score: null, created_at: '2025-03-02T10:00:00.000Z', before: snap({ is_deleted: true }), after: snap({}) },
      ],
    });
    await renderAt('audit');
    await waitFor(() => expect(screen.getAllByTestId('audit-row')).toHaveLength(4));
    const [remember, importance, settings, restore] = screen.getAllByTestId('audit-row');
    expect(remember).toHaveTextContent('“The monorepo uses pnpm”');
    expect(importance).toHaveTextContent('importance 0.5 → 0.9');
    expect(settings).toHaveTextContent('policy changed: threshold 0.6 → 0.65');
    expect(restore).toHaveTextContent('restored');
    for (const row of screen.getAllByTestId('audit-row')) expect(row.textContent).not.toMatch(/[{}]/);
    // The memory is named by its text; the whole id is in the tooltip and the data, shortened after the text.
    const link = remember.querySelector('[data-testid="audit-memory-ref"]') as HTMLElement;
    await waitFor(() => expect(link).toHaveTextContent(`content of ${long}`));
    expect(link).toHaveAttribute('title', long);
    expect(link).toHaveAttribute('data-id', long);
    expect(restore.querySelector('[data-testid="audit-memory-ref"]')).toHaveTextContent('content of');
  });
});
