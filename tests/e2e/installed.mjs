// The window installed by the Debian package (tests/package/check.sh runs this with
// LETHE_APP=/usr/bin/lethe-app LETHE_CLI=/usr/bin/lethe and a demo database): its first view,
// About, and an agent configuration naming the installed lethe. Not part of `make e2e`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { APP, LETHE, openApp, closeApp, byTestId, waitFor, css } from './harness.mjs';

const db = process.env.LETHE_DEMO_DB;

test('the installed lethe-app shows its first view, About and Connect', { timeout: 120_000 }, async () => {
  assert.ok(db, 'LETHE_DEMO_DB names the demo database');
  assert.ok(APP.startsWith('/usr/bin/'), `the installed app, not a build: ${APP}`);
  const driver = await openApp(db);
  try {
    await waitFor(async () => Number((await (await byTestId(driver, 'tier-count-semantic', 30000)).getText()).replace(/,/g, '').trim()) > 0, 30000, 'the demo data on the Overview');

    await (await byTestId(driver, 'file-menu')).click();
    await (await byTestId(driver, 'menu-about')).click();
    const recall = await byTestId(driver, 'about-recall');
    await waitFor(async () => (await recall.getText()).trim().length > 0, 5000, 'the recall line');
    assert.equal(await recall.getAttribute('data-semantic'), 'true', `the installed model is found: ${await recall.getText()}`);
    assert.equal((await (await byTestId(driver, 'about-lethe')).getText()).trim(), LETHE);
    await (await byTestId(driver, 'about-close')).click();

    await (await byTestId(driver, 'file-menu')).click();
    await (await byTestId(driver, 'menu-connect')).click();
    await waitFor(async () => (await driver.findElements(css('[data-host="generic"]'))).length === 1, 10000, 'the configurations');
    const text = await driver.findElement(css('[data-host="generic"] [data-testid="connect-text"]')).getText();
    assert.deepEqual(JSON.parse(text), { type: 'stdio', command: LETHE, args: ['--db', db, 'mcp'] });
    await (await byTestId(driver, 'connect-test')).click();
    const result = await byTestId(driver, 'connect-test-result', 20000);
    assert.equal(await result.getAttribute('data-ok'), 'true', await result.getText());
  } finally {
    await closeApp(driver);
  }
});
