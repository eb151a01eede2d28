// The window on a team store: File → Connect to a team server…, another role's
// write shown within a second, the reconnecting banner while the server is away, and the
// catch-up when it is back. Needs tests/pg/with-server.sh around it (make e2e does that).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { LETHE, openApp, closeApp, byTestId, waitFor, tempHome, css, rowSel, nav } from './harness.mjs';

const server = process.env.LETHE_TEST_POSTGRES;
const run = (db, args, env = {}) => {
  const out = execFileSync(LETHE, ['--db', db, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
  return out.trim() ? JSON.parse(out) : null;
};

test('the window follows a team store live, says when the server is away and catches up', { timeout: 120_000, skip: !server && 'LETHE_TEST_POSTGRES is not set' }, async () => {
  const name = `lethe_e2e_${process.pid}_${Date.now()}`;
  execFileSync('psql', [`${server}/postgres`, '-qc', `CREATE DATABASE ${name}`]);
  const db = `${server}/${name}`;
  run(db, ['admin', 'setup']);
  run(db, ['admin', 'add-curator', 'lead_e2e'], { LETHE_ROLE_PASSWORD: 'lead-secret' });
  run(db, ['admin', 'add-agent', 'bot_e2e'], { LETHE_ROLE_PASSWORD: 'bot-secret' });
  const hostPart = db.replace(/^postgres:\/\/postgres@/, '');
  const asBot = `postgres://bot_e2e:bot-secret@${hostPart}`;
  const remember = (text) => run(asBot, ['remember', '--type', 'semantic', '--content', text]);
  const first = remember('The team store keeps the staging rules.');

  const home = tempHome();
  const driver = await openApp(undefined, { home });
  try {
    await (await byTestId(driver, 'file-menu')).click();
    await (await byTestId(driver, 'menu-team-server')).click();
    const url = await byTestId(driver, 'team-server-url');
    await url.clear();
    await url.sendKeys(`postgres://lead_e2e@${hostPart}`);
    await (await byTestId(driver, 'team-server-password')).sendKeys('lead-secret');
    await (await byTestId(driver, 'team-server-connect')).click();
    const shown = async () => ((await (await byTestId(driver, 'db-path')).getAttribute('title')) ?? '').trim();
    await waitFor(async () => (await shown()) === `postgres://lead_e2e@${hostPart}`, 15000, 'the team store open');
    const count = async () => (await (await byTestId(driver, 'tier-count-semantic')).getText()).trim();
    await waitFor(async () => (await count()) === '1', 15000, 'one semantic memory');

    // Another role's process writes: the window shows it within a second of its commit.
    const delays = [];
    for (let k = 2; k <= 4; k++) {
      remember(`Agent write number ${k} reaches every window.`);
      const wrote = Date.now();
      await waitFor(async () => (await count()) === String(k), 5000, `${k} semantic memories`);
      delays.push(Date.now() - wrote);
    }
    console.log(`team store → window: ${delays.join(', ')} ms after the writer exited`);
    for (const d of delays) assert.ok(d < 1000, `shown ${d} ms after the write`);

    // The server goes away: the banner says so; the window keeps what it shows.
    execFileSync(process.env.LETHE_TEST_PG_STOP);
    const live = async () => (await byTestId(driver, 'live-indicator')).getAttribute('data-state');
    await waitFor(async () => (await live()) === 'reconnecting', 10000, 'reconnecting');
    const banner = await byTestId(driver, 'db-status-banner');
    assert.equal(await banner.getAttribute('data-state'), 'reconnecting');
    assert.match(await banner.getText(), /reconnecting/i);
    writeFileSync(path.join(process.env.LETHE_SHOTS ?? '/tmp', 'team-reconnecting.png'), await driver.takeScreenshot(), 'base64');
    // Back: a write made the moment it returns, before the window reconnects, is not lost.
    execFileSync(process.env.LETHE_TEST_PG_START);
    remember('Written while the window was reconnecting.');
    await waitFor(async () => (await live()) === 'live', 15000, 'live again');
    await waitFor(async () => (await count()) === '5', 10000, 'caught up: five semantic memories');
    assert.ok(!(await driver.getPageSource()).includes('lead-secret'), 'the password is not on the page');

    // The team lead pins in the window: the server's audit names the curator's role.
    await nav(driver, 'memories');
    const row = await waitFor(async () => (await driver.findElements(css(rowSel(first.id))))[0], 10000, 'the first row');
    await row.findElement(css('.preview')).click();
    await (await byTestId(driver, 'pin-button')).click();
    await waitFor(() => run(asBot, ['show', first.id]).pinned === true, 10000, 'pinned on the server');
    const pins = run(db, ['events', '--memory', first.id, '--action', 'pin']).items;
    assert.equal(pins[0]?.actor, 'user:lead_e2e', JSON.stringify(pins));
  } finally {
    await closeApp(driver);
  }
  const recent = path.join(home, 'data', 'lethe', 'recent.json');
  if (existsSync(recent)) assert.ok(!readFileSync(recent, 'utf8').includes('lead-secret'), 'the recent list keeps no password');
});
