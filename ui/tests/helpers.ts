import { expect } from 'vitest';
import { render, screen, waitFor, fireEvent } from '@testing-library/svelte';
import { tick } from 'svelte';
import App from '../src/App.svelte';
import { app, dismissToast, type View } from '../src/state.svelte';

export function resetApp(): void {
  dismissToast();
  app.view = 'overview';
  app.offsetDays = 0;
  app.selectedId = null;
  app.db = null;
  app.live = 'live';
  app.liveMessage = null;
  app.change = { seq: 0, ids: null };
  app.stats = null;
  app.toast = null;
  app.modal = false;
  app.dialog = null;
  localStorage.clear();
  sessionStorage.clear();
}

/** Renders the whole app and switches to a view, like a person clicking the nav. */
export async function renderAt(view: View) {
  resetApp();
  const r = render(App);
  if (view !== 'overview') await fireEvent.click(screen.getByTestId(`nav-${view}`));
  await tick();
  return r;
}

/** Renders Memories with memory `id` open in the detail, once its breakdown is drawn. */
export async function openDetail(id: string) {
  await renderAt('memories');
  app.selectedId = id;
  await waitFor(() => expect(screen.getByTestId('memory-detail')).toBeInTheDocument());
  await waitFor(() => expect(screen.queryByTestId('forget-breakdown')).not.toBeNull());
}

export async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await Promise.resolve();
    await tick();
  }
}

export function rows(testid = 'memory-row'): HTMLElement[] {
  return screen.queryAllByTestId(testid);
}

export function ids(testid = 'memory-row'): string[] {
  return rows(testid).map((r) => r.dataset.id ?? '');
}

export { waitFor, screen, fireEvent };
