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
    expect(screen.getAllByTestId('audit-row')[1]).toHaveTextContent('false → true');
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
});
