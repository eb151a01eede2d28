// Connect an agent, About, and the first start of a new user, in the real window.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { LETHE, tempDb, tempHome, lethe, openApp, closeApp, byTestId, waitFor, css, nav } from './harness.mjs';

async function openConnect(driver) {
  await (await byTestId(driver, 'file-menu')).click();
  await (await byTestId(driver, 'menu-connect')).click();
  return byTestId(driver, 'connect-agent');
}

async function configOf(driver, host) {
  const block = await driver.findElement(css(`[data-testid="connect-config"][data-host="${host}"]`));
  return (await block.findElement(css('[data-testid="connect-text"]')).getText()).trim();
}

test('Connect an agent names an existing lethe and the open database; Test connection lists the tools', { timeout: 90_000 }, async () => {
  const db = tempDb('agents.db');
  lethe(db, 'remember', '--type', 'semantic', '--content', 'Agents connect over MCP');
  const driver = await openApp(db);
  try {
    await waitFor(async () => (await (await byTestId(driver, 'tier-count-semantic')).getText()).trim() === '1', 15000, 'the store is shown');
    await openConnect(driver);
    const hosts = await waitFor(async () => {
      const blocks = await driver.findElements(css('[data-testid="connect-config"]'));
      return blocks.length === 4 ? Promise.all(blocks.map((b) => b.getAttribute('data-host'))) : null;
    }, 10000, 'four host configurations');
    assert.deepEqual(hosts, ['claude-code', 'claude-desktop', 'cursor', 'generic']);

    // Every JSON configuration: `command` is an executable file, the database is the open one.
    for (const host of ['claude-desktop', 'cursor', 'generic']) {
      const doc = JSON.parse(await configOf(driver, host));
      const server = host === 'generic' ? doc : doc.mcpServers.lethe;
      assert.ok(path.isAbsolute(server.command), `${host}: an absolute path, not a name the host must find: ${server.command}`);
      assert.ok(statSync(server.command).isFile(), `${host}: ${server.command} exists`);
      accessSync(server.command, constants.X_OK);
      assert.deepEqual(server.args, ['--db', db, 'mcp'], `${host}: the open database`);
    }
    const claude = await configOf(driver, 'claude-code');
    assert.match(claude, /^claude mcp add .* lethe -- \S+ --db \S+ mcp$/, claude);
    assert.ok(claude.includes(` --db ${db} mcp`), claude);
    assert.equal((await (await byTestId(driver, 'connect-db')).getText()).trim(), db);

    // Copy answers (the clipboard itself belongs to the desktop session).
    const copy = (await driver.findElements(css('[data-testid="connect-copy"]')))[3];
    await copy.click();
    await waitFor(async () => /Copied|Copy failed/.test(await copy.getText()), 5000, 'the copy button answers');

    await (await byTestId(driver, 'connect-test')).click();
    const result = await byTestId(driver, 'connect-test-result', 20000);
    assert.equal(await result.getAttribute('data-ok'), 'true', await result.getText());
    const tools = (await (await byTestId(driver, 'connect-tools')).getText()).split(' · ');
    for (const t of ['remember', 'recall', 'forget', 'pin', 'memory_stats']) assert.ok(tools.includes(t), `${t} in ${tools}`);
  } finally {
    await closeApp(driver);
  }
});

test('About shows the version, the database and the recall model', { timeout: 60_000 }, async () => {
  const db = tempDb();
  lethe(db, 'remember', '--type', 'semantic', '--content', 'about box');
  const driver = await openApp(db);
  try {
    await (await byTestId(driver, 'file-menu')).click();
    await (await byTestId(driver, 'menu-about')).click();
    const cli = execFileSync(LETHE, ['--version'], { encoding: 'utf8' }).trim();
    const shown = (await (await byTestId(driver, 'about-version')).getText()).trim();
    assert.equal(`lethe ${shown}`, cli, 'the window and lethe have one version');
    assert.equal((await (await byTestId(driver, 'about-db')).getText()).trim(), db);
    const recall = await byTestId(driver, 'about-recall');
    assert.match(await recall.getText(), /potion-base-8M|lexical only/);
  } finally {
    await closeApp(driver);
  }
});

test('a new user: no database yet → the welcome, demo data; the next start opens the same file, view, size and position', { timeout: 120_000 }, async () => {
  const home = tempHome();
  const expected = path.join(home, 'data', 'lethe', 'memory.db');
  let driver = await openApp(null, { home });
  try {
    await byTestId(driver, 'welcome', 20000);
    const shownPath = async () => (await (await byTestId(driver, 'db-path')).getAttribute('title')).trim();
    assert.equal(await shownPath(), expected, 'the default database of this user');
    await (await byTestId(driver, 'welcome-connect')).click();
    await byTestId(driver, 'connect-agent');
    assert.equal((await (await byTestId(driver, 'connect-db')).getText()).trim(), expected);
    await (await byTestId(driver, 'connect-agent-close')).click();
    await (await byTestId(driver, 'load-demo')).click();
    await waitFor(async () => Number((await (await byTestId(driver, 'tier-count-semantic')).getText()).trim()) > 0, 30000, 'demo data');
    await nav(driver, 'quarantine');
    await driver.manage().window().setRect({ width: 1040, height: 720, x: 40, y: 30 });
    // The view goes to the webview's storage at once, the window's geometry half a second
    // after it stopped changing: give both a moment to reach the disk.
    await new Promise((r) => setTimeout(r, 1500));
  } finally {
    await closeApp(driver);
  }
  driver = await openApp(null, { home });
  try {
    await waitFor(async () => (await (await byTestId(driver, 'db-path')).getAttribute('title')).trim() === expected, 15000, 'the same database');
    await waitFor(
      async () => (await (await byTestId(driver, 'nav-quarantine')).getAttribute('aria-current')) === 'page',
      10000,
      'the view shown last',
    );
    const rect = await driver.manage().window().getRect();
    assert.deepEqual([rect.width, rect.height], [1040, 720], `the size of the last run: ${JSON.stringify(rect)}`);
    assert.deepEqual([rect.x, rect.y], [40, 30], `the position of the last run: ${JSON.stringify(rect)}`);
  } finally {
    await closeApp(driver);
  }
});
