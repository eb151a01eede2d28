// The window on a team store whose primary dies: connected through a multi-host address, it
// follows the standby pg_auto_failover promotes (listens again, reads the change journal) and
// shows a write made after the failover, without a restart. Needs the cluster of
// tests/pg/failover.sh around it (make test-ha: `failover.sh --beside …`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { LETHE, openApp, closeApp, byTestId, waitFor, tempHome } from './harness.mjs';

const owner = process.env.LETHE_HA_URL;
const kill = process.env.LETHE_HA_KILL;

test('the window follows the new primary after a failover', { timeout: 240_000, skip: !(owner && kill) && 'needs tests/pg/failover.sh --beside' }, async () => {
  const run = (db, args) => JSON.parse(execFileSync(LETHE, ['--db', db, '--db-wait', '90', ...args], { encoding: 'utf8' }));
  run(owner, ['admin', 'add-curator', 'lead_ha', '--team', 'ha']);
  const asLead = owner.replace('postgres://postgres@', 'postgres://lead_ha@');
  const asAgent = owner.replace('postgres://postgres@', 'postgres://a1@');
  run(asAgent, ['remember', '--type', 'semantic', '--content', 'Before the failover: the primary is node1.']);

  const driver = await openApp(undefined, { home: tempHome() });
  try {
    await (await byTestId(driver, 'file-menu')).click();
    await (await byTestId(driver, 'menu-team-server')).click();
    const url = await byTestId(driver, 'team-server-url');
    await url.clear();
    await url.sendKeys(asLead);
    await (await byTestId(driver, 'team-server-connect')).click();
    const shown = async () => ((await (await byTestId(driver, 'db-path')).getAttribute('title')) ?? '').trim();
    await waitFor(async () => (await shown()) === asLead, 20000, `the team store open as ${asLead}`);
    const count = async () => (await (await byTestId(driver, 'tier-count-semantic')).getText()).trim();
    await waitFor(async () => (await count()) === '1', 15000, 'one semantic memory');

    const killed = Date.now();
    execFileSync(kill);
    // The agent's remember waits (--db-wait) until the promoted standby accepts writes.
    const after = run(asAgent, ['remember', '--type', 'semantic', '--content', 'After the failover: the standby took over.']);
    assert.equal(after.stored, true, JSON.stringify(after));
    const stored = Date.now();
    await waitFor(async () => (await count()) === '2', 60000, 'the write made after the failover in the window');
    const seen = Date.now();
    const live = await (await byTestId(driver, 'live-indicator')).getAttribute('data-state');
    console.log(`failover → write stored ${stored - killed} ms after the kill, in the window ${seen - stored} ms later (live indicator: ${live})`);
    await waitFor(async () => (await (await byTestId(driver, 'live-indicator')).getAttribute('data-state')) === 'live', 30000, 'live again');
  } finally {
    await closeApp(driver);
  }
});
