import { describe, it, expect, vi, beforeEach } from 'vitest';
import { fireEvent, screen, waitFor } from '@testing-library/svelte';
import { api, resetFake, CONNECT_INFO } from './fakeApi';
import { renderAt } from './helpers';
import { app } from '../src/state.svelte';

vi.mock('../src/api', async () => (await import('./fakeApi')).api);

beforeEach(() => resetFake());

async function openFromMenu(item: 'menu-connect' | 'menu-about') {
  await fireEvent.click(screen.getByTestId('file-menu'));
  await fireEvent.click(await screen.findByTestId(item));
}

describe('Connect an agent', () => {
  it('shows each host with the configuration the shell made, and copies it', async () => {
    const writeText = vi.fn(async () => {});
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true });
    await renderAt('overview');
    await openFromMenu('menu-connect');
    const blocks = await screen.findAllByTestId('connect-config');
    expect(blocks.map((b) => b.dataset.host)).toEqual(['claude-code', 'claude-desktop', 'cursor', 'generic']);
    expect(screen.getAllByTestId('connect-text')[0].textContent).toBe(CONNECT_INFO.hosts[0].text);
    expect(screen.getByTestId('connect-db').textContent).toBe(CONNECT_INFO.db_path);
    await fireEvent.click(screen.getAllByTestId('connect-copy')[1]);
    await waitFor(() => expect(writeText).toHaveBeenCalledWith(CONNECT_INFO.hosts[1].text));
    await waitFor(() => expect(screen.getAllByTestId('connect-copy')[1].textContent?.trim()).toBe('Copied'));
  });

  it('Test connection shows the tools the server listed, or why it failed', async () => {
    await renderAt('overview');
    await openFromMenu('menu-connect');
    await fireEvent.click(await screen.findByTestId('connect-test'));
    const ok = await screen.findByTestId('connect-test-result');
    expect(ok.dataset.ok).toBe('true');
    expect(screen.getByTestId('connect-tools').textContent).toBe('remember · recall · forget');
    api.testConnection.mockResolvedValue({ ok: false, command: 'lethe mcp', server: null, protocol: null, tools: [], elapsed_ms: 3, error: 'lethe mcp ended without answering' });
    await fireEvent.click(screen.getByTestId('connect-test'));
    await waitFor(() => expect(screen.getByTestId('connect-test-result').dataset.ok).toBe('false'));
    expect(screen.getByTestId('connect-test-result').textContent).toContain('ended without answering');
  });

  it('Escape closes it', async () => {
    await renderAt('overview');
    await openFromMenu('menu-connect');
    const dialog = await screen.findByTestId('connect-agent');
    await fireEvent.keyDown(dialog, { key: 'Escape' });
    await waitFor(() => expect(screen.queryByTestId('connect-agent')).toBeNull());
    expect(app.modal).toBe(false);
  });
});

describe('About', () => {
  it('shows the version, the database and the recall model', async () => {
    await renderAt('overview');
    await openFromMenu('menu-about');
    expect((await screen.findByTestId('about-version')).textContent).toBe('0.1.0');
    expect(screen.getByTestId('about-db').textContent).toBe('/home/me/.local/share/lethe/memory.db');
    expect(screen.getByTestId('about-recall').textContent?.trim()).toBe('semantic + lexical (potion-base-8M/256/abc)');
  });

  it('says lexical only without a model', async () => {
    api.about.mockResolvedValue({ version: '0.1.0', db_path: '/x.db', recall: 'lexical recall only: LETHE_MODEL_DIR=off', semantic: false, lethe: null });
    await renderAt('overview');
    await openFromMenu('menu-about');
    expect((await screen.findByTestId('about-recall')).textContent?.trim()).toBe('lexical only — LETHE_MODEL_DIR=off');
  });
});

describe('the last view', () => {
  it('is kept for the next start', async () => {
    await renderAt('decay');
    await waitFor(() => expect(localStorage.getItem('lethe.view')).toBe('decay'));
  });
});
