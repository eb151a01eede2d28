// Foreign and vanishing files in the real window, and the CSP against inline script.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { tempDb, lethe, openApp, closeApp, byTestId, waitFor, css } from './harness.mjs';

const sha = (f) => createHash('sha256').update(readFileSync(f)).digest('hex');

test('a file that is not SQLite gets a clear message and stays untouched', { timeout: 60_000 }, async () => {
  const db = tempDb('notes.db');
  writeFileSync(db, 'These are my meeting notes, not a database.\n'.repeat(200));
  const before = sha(db);
  const driver = await openApp(db);
  try {
    const msg = await byTestId(driver, 'db-problem-error', 15000);
    const text = await msg.getText();
    assert.match(text, /not a SQLite database/i, text);
    assert.equal((await (await byTestId(driver, 'db-problem-path')).getText()).trim(), db);
  } finally {
    await closeApp(driver);
  }
  assert.equal(sha(db), before, 'the foreign file is byte-for-byte unchanged');
  assert.ok(!existsSync(`${db}-wal`), 'no WAL file was created next to it');
});

test('a database deleted while watched is reported, and picked up again when it is back', { timeout: 60_000 }, async () => {
  const db = tempDb();
  lethe(db, 'remember', '--type', 'semantic', '--content', 'Before the file vanished');
  const driver = await openApp(db);
  try {
    const count = async () => (await (await byTestId(driver, 'tier-count-semantic')).getText()).trim();
    await waitFor(async () => (await count()) === '1', 10000, 'one semantic memory');
    for (const f of [db, `${db}-wal`, `${db}-shm`]) rmSync(f, { force: true });
    await waitFor(async () => (await (await byTestId(driver, 'live-indicator')).getAttribute('data-state')) === 'missing', 10000, 'live indicator says missing');
    const banner = await byTestId(driver, 'db-status-banner');
    assert.match(await banner.getText(), /gone/i);
    // An agent writes again: the file is recreated; the window recovers without a click.
    lethe(db, 'remember', '--type', 'semantic', '--content', 'After it came back one');
    lethe(db, 'remember', '--type', 'semantic', '--content', 'After it came back two');
    const live = await byTestId(driver, 'live-indicator');
    try {
      await waitFor(async () => (await live.getAttribute('data-state')) === 'live', 15000, 'live again');
    } catch (e) {
      // What the window says instead, so that a failure names its cause.
      const said = `${await live.getAttribute('data-state')}: ${await live.getAttribute('title')}`;
      const banners = await driver.findElements(css('[data-testid="db-status-banner"]'));
      const texts = await Promise.all(banners.map((b) => b.getText()));
      throw new Error(`${e.message}; the window says ${said} ${JSON.stringify(texts)}`);
    }
    await waitFor(async () => (await count()) === '2', 10000, 'counts of the new file');
  } finally {
    await closeApp(driver);
  }
});

test('the CSP blocks inline script injected into the page', { timeout: 60_000 }, async () => {
  const db = tempDb();
  lethe(db, 'remember', '--type', 'semantic', '--content', 'csp check');
  const driver = await openApp(db);
  try {
    await byTestId(driver, 'tier-count-semantic');
    const ran = await driver.executeAsyncScript(`
      const done = arguments[arguments.length - 1];
      window.__lethe_pwned = false;
      const s = document.createElement('script');
      s.textContent = 'window.__lethe_pwned = true';
      document.body.appendChild(s);
      const img = document.createElement('img');
      img.setAttribute('onerror', 'window.__lethe_pwned = true');
      img.src = 'data:,broken';
      document.body.appendChild(img);
      setTimeout(() => done(window.__lethe_pwned), 300);
    `);
    assert.equal(ran, false, 'neither an inline <script> nor an inline event handler ran');
  } finally {
    await closeApp(driver);
  }
});
