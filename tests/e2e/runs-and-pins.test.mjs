// In the real window, the review of what agents and the policy did: a forget run on the demo
// is undone with one click and one audit action, and an agent's unpin of a person's pin is
// refused by the engine while the window alerts the person.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { tempDb, lethe, openApp, closeApp, byTestId, waitFor, nav, LETHE } from './harness.mjs';

const quarantinedIds = (db) => new Set(lethe(db, 'quarantine').items.map((i) => i.id));

test('a forget run on the demo is undone by "Undo this run": every memory back, one audit action', { timeout: 180_000 }, async () => {
  const db = tempDb();
  lethe(db, 'demo');
  const before = quarantinedIds(db);
  const driver = await openApp(db);
  try {
    await nav(driver, 'overview');
    await (await byTestId(driver, 'run-forget', 20000)).click();
    const soft = await byTestId(driver, 'run-soft', 60000);
    const planned = Number((await soft.getText()).replace(/,/g, ''));
    assert.ok(planned > 0, 'the demo has memories the policy forgets');
    await (await byTestId(driver, 'run-forget-confirm')).click();
    // Above the size the person set, the window asks with the count first.
    const asked = await driver.findElements({ css: '[data-testid="confirm-yes"]' });
    if (asked.length) await asked[0].click();
    const undo = await byTestId(driver, 'undo-run', 60000);
    const moved = [...quarantinedIds(db)].filter((id) => !before.has(id));
    assert.equal(moved.length, planned, 'the run quarantined what the dry run announced');
    await undo.click();
    const result = await byTestId(driver, 'undo-result', 30000);
    await waitFor(async () => /restored/.test(await result.getText()), 10000, 'the undo says what it restored');
    assert.match(await result.getText(), new RegExp(`${planned} memories restored`));
    const after = quarantinedIds(db);
    for (const id of moved) assert.ok(!after.has(id), `${id} is back`);
    assert.deepEqual([...after].sort(), [...before].sort(), 'the quarantine is as before the run');
    const undos = lethe(db, 'events', '--action', 'undo_forget_run').items;
    assert.equal(undos.length, 1, 'one audit action for the whole undo');
    assert.equal(undos[0].after.restored.length, planned);
    assert.equal(lethe(db, 'events', '--runs').items[0].undone, true);
  } finally {
    await closeApp(driver);
  }
});

test("one memory of a forget run is restored from the run's result; Undo this run restores the rest", { timeout: 180_000 }, async () => {
  const db = tempDb();
  lethe(db, 'demo');
  const before = quarantinedIds(db);
  const driver = await openApp(db);
  try {
    await nav(driver, 'overview');
    await (await byTestId(driver, 'run-forget', 20000)).click();
    await byTestId(driver, 'run-soft', 60000);
    await (await byTestId(driver, 'run-forget-confirm')).click();
    const asked = await driver.findElements({ css: '[data-testid="confirm-yes"]' });
    if (asked.length) await asked[0].click();
    await byTestId(driver, 'undo-run', 60000);
    const moved = [...quarantinedIds(db)].filter((id) => !before.has(id));
    await byTestId(driver, 'run-restore-one', 10000);
    // The first reason's list (a long one starts folded).
    const button = await driver.executeScript(`
      const d = document.querySelector('details[data-testid="run-done-reason"]');
      d.open = true;
      return d.querySelector('[data-testid="run-restore-one"]');`);
    const one = await button.getAttribute('data-id');
    assert.ok(moved.includes(one), 'the button restores a memory this run quarantined');
    await button.click();
    await byTestId(driver, 'run-restored-one', 10000);
    const now = quarantinedIds(db);
    assert.ok(!now.has(one), `${one} is back`);
    assert.equal(moved.filter((id) => now.has(id)).length, moved.length - 1, 'the rest of the run stays in quarantine');
    const restores = lethe(db, 'events', '--action', 'restore', '--memory', one).items;
    assert.equal(restores.length, 1, 'audited as that memory\'s restore');
    // The undo restores the rest and says the one was already back.
    await (await byTestId(driver, 'undo-run')).click();
    const result = await byTestId(driver, 'undo-result', 30000);
    await waitFor(async () => /already restored/.test(await result.getText()), 10000, 'the undo names the one already back');
    assert.deepEqual([...quarantinedIds(db)].sort(), [...before].sort(), 'the quarantine is as before the run');
  } finally {
    await closeApp(driver);
  }
});

test("an agent's unpin of a person's pin is refused and the window shows the alert", { timeout: 120_000 }, async () => {
  const db = tempDb();
  lethe(db, 'demo');
  const pinned = lethe(db, 'list', '--pinned').items[0];
  const driver = await openApp(db);
  try {
    await nav(driver, 'memories');
    await byTestId(driver, 'memory-row', 30000);
    const out = spawnSync(LETHE, ['--db', db, '--actor', 'agent:cursor', 'unpin', pinned.id], { encoding: 'utf8' });
    assert.equal(out.status, 6, out.stderr);
    assert.equal(JSON.parse(out.stderr).error.code, 'forbidden');
    assert.equal(lethe(db, 'show', pinned.id).pinned, true, 'the pin stays');
    const alert = await byTestId(driver, 'pin-alert', 15000);
    const text = await alert.getText();
    assert.match(text, /agent:cursor/);
    assert.match(text, /tried to unpin/);
    assert.ok(text.includes(pinned.preview.slice(0, 30)), `the alert names the memory by its text: ${text}`);
    await (await byTestId(driver, 'pin-alert-dismiss')).click();
    await waitFor(async () => (await driver.findElements({ css: '[data-testid="pin-alert"]' })).length === 0, 5000, 'dismissed');
  } finally {
    await closeApp(driver);
  }
});

test('Memories filtered by agent:claude-code shows only the memories that agent wrote, with a "written by" column', { timeout: 120_000 }, async () => {
  const db = tempDb();
  lethe(db, 'demo');
  const theirs = lethe(db, 'list', '--by', 'agent:claude-code', '--limit', '1000');
  const all = lethe(db, 'list', '--limit', '1000');
  assert.ok(theirs.total > 0 && theirs.total < all.total, `fixture: ${theirs.total} of ${all.total}`);
  const driver = await openApp(db);
  try {
    await nav(driver, 'memories');
    await byTestId(driver, 'memory-row', 30000);
    await (await byTestId(driver, 'filters-button')).click();
    const input = await byTestId(driver, 'written-by-filter');
    await input.sendKeys('agent:claude-code', '\n');
    await driver.executeScript(`arguments[0].dispatchEvent(new Event('change', { bubbles: true }))`, input);
    const want = new Set(theirs.items.map((i) => i.id));
    await waitFor(async () => {
      const shown = await driver.executeScript(
        `return [...document.querySelectorAll('[data-testid="memory-row"]')].map((r) => [r.dataset.id, r.querySelector('[data-testid="written-by"]')?.textContent])`,
      );
      return shown.length > 0 && shown.every(([id, by]) => want.has(id) && by === 'agent:claude-code') && shown;
    }, 20000, 'only agent:claude-code rows');
  } finally {
    await closeApp(driver);
  }
});
