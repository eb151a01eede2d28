// Nothing the window confirms is ever lost: a file dialog on the store's folder, agents'
// processes, a deleted file, a read-only file, a page process that dies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { rmSync, existsSync } from 'node:fs';
import path from 'node:path';
import { openApp, closeApp, tempDb, lethe, byTestId, waitFor, nav, css, rowSel } from './harness.mjs';

const TEST_TIMEOUT = 180_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The X window of the file chooser titled `title` (a child process of the window), once shown. */
async function chooser(title) {
  return waitFor(
    () => execFileSync('xdotool', ['search', '--onlyvisible', '--name', `^${title}$`], { encoding: 'utf8' }).trim().split('\n')[0],
    15000,
    `the file chooser "${title}"`,
  );
}

/** Lets the chooser read the folder it shows (GTK opens every file there), then cancels it. */
async function browseAndCancel(title) {
  const win = await chooser(title);
  await sleep(1500);
  execFileSync('xdotool', ['windowfocus', '--sync', win, 'key', 'Escape']);
  await waitFor(() => {
    try {
      execFileSync('xdotool', ['search', '--onlyvisible', '--name', `^${title}$`], { encoding: 'utf8' });
      return false;
    } catch {
      return true; // no such window any more
    }
  }, 10000, `the chooser "${title}" closed`);
}

const text = (driver, el) => driver.executeScript('return arguments[0].textContent', el);

async function selectRow(driver, id) {
  await nav(driver, 'memories');
  const row = await waitFor(async () => (await driver.findElements(css(rowSel(id))))[0], 20000, `row ${id}`);
  await row.click();
  await waitFor(async () => (await text(driver, await byTestId(driver, 'memory-detail'))).includes(id.slice(0, 4)) || true);
  return row;
}

test('a file dialog on the store\'s folder, then agents\' processes: every confirmed change is in the file', { timeout: TEST_TIMEOUT }, async () => {
  const db = tempDb('memory.db');
  const fact = lethe(db, 'remember', '--type', 'semantic', '--content', 'Customer data never leaves the EU region');
  const proc = lethe(db, 'remember', '--type', 'procedural', '--content', 'Roll back a failed deploy',
    '--task-goal', 'Roll back a failed deploy', '--steps', JSON.stringify(['find the last good build', 'redeploy it', 'tell the channel']),
    '--workflow-name', 'rollback');
  let driver;
  try {
    driver = await openApp(db);
    await selectRow(driver, fact.id);
    // Export chart… and File ▸ Open database…, both showing the store's folder, cancelled.
    await nav(driver, 'decay');
    await (await byTestId(driver, 'chart-export', 20000)).click();
    await browseAndCancel('Export chart');
    await (await byTestId(driver, 'file-menu')).click();
    await (await byTestId(driver, 'open-db')).click();
    await browseAndCancel('Open a Lethe or memento database');
    // Agents' processes read and write, and exit (the last one to close checkpoints).
    const agent = lethe(db, '--actor', 'agent:cursor', 'remember', '--type', 'episodic', '--content', 'The agent deployed build 4411 to staging');
    assert.equal(lethe(db, 'list').total, 3);
    // The person pins, and edits the procedure in the window.
    await selectRow(driver, fact.id);
    await (await byTestId(driver, 'pin-button')).click();
    await waitFor(async () => (await (await byTestId(driver, 'pin-button')).getText()) === 'Unpin', 10000, 'pinned');
    await nav(driver, 'workflows');
    await (await byTestId(driver, 'proc-edit', 20000)).click();
    const steps = await byTestId(driver, 'proc-steps');
    await driver.executeScript(
      `arguments[0].value += '\\nwrite the incident note'; arguments[0].dispatchEvent(new Event('input', { bubbles: true }));`,
      steps,
    );
    await (await byTestId(driver, 'proc-save')).click();
    await waitFor(
      async () => (await driver.findElements(css('[data-testid="proc-steps-list"] li'))).length === 4,
      10000,
      'the saved version shows four steps',
    );
    // The agent's write appears in the window, which stayed live.
    await nav(driver, 'memories');
    await waitFor(async () => (await driver.findElements(css(rowSel(agent.id)))).length === 1, 20000, 'the agent\'s memory listed');
    assert.equal(await (await byTestId(driver, 'live-indicator')).getAttribute('data-state'), 'live');
    // What the window confirmed is what another process reads, now...
    const check = () => {
      assert.deepEqual(lethe(db, 'list', '--pinned').items.map((m) => m.id), [fact.id], 'the pin is in the file');
      const shown = lethe(db, 'show', proc.id);
      assert.equal(shown.version, 2, 'version 2 of the procedure is in the file');
      assert.equal(shown.steps.length, 4);
      assert.equal(lethe(db, 'list').total, 3);
    };
    check();
    await closeApp(driver);
    driver = null;
    // ...and after the window is closed.
    check();
  } finally {
    await closeApp(driver);
  }
});

test('a deleted store disables every write; a file created at its path is shown as a new store', { timeout: TEST_TIMEOUT }, async () => {
  const db = tempDb('memory.db');
  const old = lethe(db, 'remember', '--type', 'semantic', '--content', 'A fact of the store that will be deleted');
  let driver;
  try {
    driver = await openApp(db);
    await selectRow(driver, old.id);
    for (const suffix of ['', '-wal', '-shm']) rmSync(db + suffix, { force: true });
    const banner = await byTestId(driver, 'db-status-banner', 15000);
    assert.equal(await banner.getAttribute('data-state'), 'missing');
    for (const id of ['pin-button', 'edit-button', 'delete-button']) {
      const b = await byTestId(driver, id);
      assert.equal(await b.isEnabled(), false, `${id} is disabled while the file is gone`);
      assert.match(await b.getAttribute('title'), /file is gone/);
    }
    // An agent creates a store at the same path.
    const fresh = lethe(db, 'remember', '--type', 'semantic', '--content', 'The first fact of a new store');
    const toast = await waitFor(async () => {
      const t = (await driver.findElements(css('[data-testid="toast"]')))[0];
      return t && /appeared again/.test(await t.getText()) ? t : null;
    }, 20000, 'the window says the file is a new store');
    assert.match(await toast.getText(), /new store/);
    await nav(driver, 'memories');
    await waitFor(async () => (await driver.findElements(css(rowSel(fresh.id)))).length === 1, 20000, 'the new store listed');
    assert.equal((await driver.findElements(css(rowSel(old.id)))).length, 0, 'nothing of the deleted store is shown');
    await selectRow(driver, fresh.id);
    await (await byTestId(driver, 'pin-button')).click();
    await waitFor(async () => (await (await byTestId(driver, 'pin-button')).getText()) === 'Unpin', 10000, 'pinned');
    assert.deepEqual(lethe(db, 'list', '--pinned').items.map((m) => m.id), [fresh.id], 'the pin is in the new file');
  } finally {
    await closeApp(driver);
  }
});

test('a read-only store shows the badge and offers no write', { timeout: TEST_TIMEOUT }, async () => {
  const db = tempDb('memory.db');
  const m = lethe(db, 'remember', '--type', 'semantic', '--content', 'A fact on a read-only file');
  // Root writes through permissions: the file is made immutable instead.
  const root = process.getuid?.() === 0;
  execFileSync(root ? 'chattr' : 'chmod', root ? ['+i', db] : ['0444', db]);
  let driver;
  try {
    driver = await openApp(db);
    const badge = await byTestId(driver, 'read-only-badge', 20000);
    assert.equal(await badge.getText(), 'Read-only');
    await byTestId(driver, 'open-copy');
    await selectRow(driver, m.id);
    for (const id of ['pin-button', 'edit-button', 'delete-button', 'importance-slider']) {
      const b = await byTestId(driver, id);
      assert.equal(await b.isEnabled(), false, `${id} is disabled on a read-only file`);
      assert.match(await b.getAttribute('title'), /read-only/);
    }
    await nav(driver, 'overview');
    const run = await byTestId(driver, 'run-forget', 20000);
    assert.equal(await run.isEnabled(), false, 'no forget run on a read-only file');
  } finally {
    await closeApp(driver);
    if (root) execFileSync('chattr', ['-i', db]);
  }
});

test('a page process that dies is loaded again and the store stays open', { timeout: TEST_TIMEOUT }, async () => {
  const db = tempDb('memory.db');
  const m = lethe(db, 'remember', '--type', 'semantic', '--content', 'A fact that outlives the page');
  let driver;
  try {
    driver = await openApp(db);
    await selectRow(driver, m.id);
    const app = execFileSync('pgrep', ['-n', '-x', 'lethe-app'], { encoding: 'utf8' }).trim();
    const pagesOf = () => {
      try {
        return execFileSync('pgrep', ['-P', app, '-f', 'WebKitWebProcess'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
      } catch {
        return [];
      }
    };
    const before = pagesOf();
    assert.ok(before.length >= 1, 'the window has a page process');
    execFileSync('kill', ['-9', ...before]);
    // WebDriver's session ends with the page process; what shows the reload is the window's
    // own process: still running, with a new page process it started to load the page again
    // (WebKit starts none by itself after a crash).
    const after = await waitFor(() => {
      const now = pagesOf().filter((p) => !before.includes(p));
      return now.length ? now : null;
    }, 20000, 'a new page process');
    assert.ok(after.length >= 1);
    execFileSync('kill', ['-0', app]);
    // The store stayed open and writable: an agent's write and a read through the window's
    // file work as before.
    lethe(db, 'pin', m.id);
    assert.deepEqual(lethe(db, 'list', '--pinned').items.map((x) => x.id), [m.id]);
    assert.ok(existsSync(path.dirname(db)));
  } finally {
    try {
      await closeApp(driver);
    } catch {
      // The session ended with the page process it drove.
    }
  }
});
