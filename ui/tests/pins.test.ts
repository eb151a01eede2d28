import { describe, it, expect, vi, beforeEach } from 'vitest';
import { fireEvent, screen, waitFor } from '@testing-library/svelte';
import { api, resetFake, HOSTILE } from './fakeApi';
import { renderAt } from './helpers';
import { app } from '../src/state.svelte';

vi.mock('../src/api', async () => (await import('./fakeApi')).api);

const attempt = (id: number, over = {}) => ({
  id,
  memory_id: 'mem_rule',
  actor: 'agent:cursor',
  attempted: 'unpin',
  content_preview: 'Customer data never leaves the EU region',
  at: '2026-12-01T10:00:00.000Z',
  ...over,
});

describe("an agent's attempt on a person's pin", () => {
  beforeEach(() => resetFake());

  it('alerts with who tried what on which memory, and a dismissed attempt stays dismissed', async () => {
    api.pinRefusals.mockResolvedValue({ items: [attempt(7), attempt(5, { attempted: 'quarantine', content_preview: HOSTILE })] });
    await renderAt('memories');
    const alert = await screen.findByTestId('pin-alert');
    expect(alert.textContent).toContain('agent:cursor');
    expect(alert.textContent).toContain('tried to unpin “Customer data never leaves the EU region”');
    expect(alert.textContent).toContain('1 other attempt');
    expect(document.querySelector('img[src="x"]')).toBeNull();
    expect(api.pinRefusals).toHaveBeenCalledWith(0);
    await fireEvent.click(screen.getByTestId('pin-alert-dismiss'));
    expect(screen.queryByTestId('pin-alert')).toBeNull();
    // The next change asks only for attempts after the newest one dismissed.
    api.pinRefusals.mockResolvedValue({ items: [] });
    app.change = { seq: app.change.seq + 1, ids: [] };
    await waitFor(() => expect(api.pinRefusals).toHaveBeenLastCalledWith(7));
    expect(screen.queryByTestId('pin-alert')).toBeNull();
  });

  it('shows nothing while no agent tried', async () => {
    await renderAt('overview');
    await waitFor(() => expect(api.pinRefusals).toHaveBeenCalled());
    expect(screen.queryByTestId('pin-alert')).toBeNull();
  });
});
