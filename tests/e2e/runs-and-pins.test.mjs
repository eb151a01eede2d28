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
    // The button is disabled while the window has a write in flight (the run's own refresh
    // may still hold it on a loaded machine): a person waits for it, so does the test.
    await waitFor(() => button.isEnabled(), 30000, 'the Restore button enabled');
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

test('a planned forget run reviewed item by item: the two kept stay active, the approved are quarantined, in words', { timeout: 180_000 }, async () => {
  const db = tempDb();
  lethe(db, 'demo');
  const before = quarantinedIds(db);
  const driver = await openApp(db);
  try {
    await nav(driver, 'overview');
    await (await byTestId(driver, 'run-forget', 20000)).click();
    await byTestId(driver, 'run-soft', 60000);
    // Every list open, so that each memory can be kept or approved.
    const planned = await driver.executeScript(`
      document.querySelectorAll('details[data-testid="run-list-reason"]').forEach((d) => (d.open = true));
      return [...document.querySelectorAll('[data-testid="run-review-item"]')].map((li) => li.dataset.id);`);
    assert.ok(planned.length > 2, `the demo's run plans more than two: ${planned.length}`);
    // The counts and the reasons in words: no codes, no ids.
    const words = await driver.executeScript(`
      const p = document.querySelector('[data-testid="run-forget-panel"]');
      return [...p.querySelectorAll('dl.counts dt, details summary')].map((e) => e.textContent).join(' | ');`);
    for (const code of ['working-memory gate', 'working gate', 'review band', 'mem_', 'soft', 'hard']) {
      assert.ok(!words.includes(code), `the dry run says "${code}" in words: ${words}`);
    }
    const keepButtons = await driver.findElements({ css: '[data-testid="run-keep"]' });
    const kept = [];
    for (const b of keepButtons.slice(0, 2)) {
      kept.push(await b.getAttribute('data-id'));
      await driver.executeScript('arguments[0].scrollIntoView({ block: "center" })', b);
      await b.click();
    }
    assert.equal(await (await byTestId(driver, 'run-kept-count')).getText(), '2');
    const confirm = await byTestId(driver, 'run-forget-confirm');
    assert.equal(await confirm.getText(), `Run the ${planned.length - 2} approved`);
    await confirm.click();
    const asked = await driver.findElements({ css: '[data-testid="confirm-yes"]' });
    if (asked.length) await asked[0].click();
    await byTestId(driver, 'undo-run', 60000);
    const after = quarantinedIds(db);
    for (const id of kept) assert.ok(!after.has(id), `kept ${id} is not quarantined`);
    const approved = planned.filter((id) => !kept.includes(id));
    for (const id of approved) assert.ok(after.has(id), `approved ${id} is quarantined`);
    assert.equal(after.size, before.size + approved.length, 'nothing else was quarantined');
    const run = lethe(db, 'events', '--runs').items[0];
    assert.equal(run.quarantined, approved.length, 'the run is audited as today, with the approved ones');
    // The audit log says what happened in words, not codes.
    await nav(driver, 'audit');
    const actions = await waitFor(async () => {
      const a = await driver.executeScript(
        `return [...document.querySelectorAll('[data-testid="audit-row"] .action')].map((e) => [e.dataset.action, e.textContent])`,
      );
      return a.some(([code]) => code === 'soft') ? a : null;
    }, 15000, 'the run in the audit log');
    for (const [code, text] of actions.filter(([c]) => c === 'soft')) assert.equal(text, 'quarantined', `${code} in words`);
  } finally {
    await closeApp(driver);
  }
});

test("Health's \"and N more\" opens that list in Memories; Memories sorts by writer and filters by source", { timeout: 180_000 }, async () => {
  const db = tempDb();
  lethe(db, 'demo');
  const tools = lethe(db, 'list', '--limit', '1000').items.length;
  const driver = await openApp(db);
  try {
    await nav(driver, 'overview');
    const more = await byTestId(driver, 'health-more', 30000);
    const list = await more.getAttribute('data-list');
    const total = Number(await driver.executeScript(`return document.querySelector('[data-testid="health-list"][data-list="${list}"]').dataset.total`));
    assert.ok(total > 20, `the list has more than it shows: ${total}`);
    await more.click();
    const chip = await byTestId(driver, 'health-filter', 10000);
    assert.equal(await chip.getAttribute('data-list'), list);
    const counted = await waitFor(async () => {
      const t = (await (await byTestId(driver, 'row-total')).getText()).replace(/,/g, '');
      const n = Number(t.split(' ')[0]);
      return n === total ? n : null;
    }, 20000, `Memories counts the ${total} of the list`);
    assert.ok(counted < tools, `a list, not every memory (${counted} of ${tools})`);
    await (await byTestId(driver, 'health-filter-clear')).click();

    // Sorted by who wrote each memory: the writers in order, A to Z.
    const sort = await byTestId(driver, 'sort-select');
    await driver.executeScript(`arguments[0].value = 'written_by'; arguments[0].dispatchEvent(new Event('change', { bubbles: true }))`, sort);
    const writers = await waitFor(async () => {
      const w = await driver.executeScript(
        `return [...document.querySelectorAll('[data-testid="memory-row"]')].sort((a, b) => a.getAttribute('aria-rowindex') - b.getAttribute('aria-rowindex')).map((r) => r.querySelector('[data-testid="written-by"]').textContent)`,
      );
      return w.length > 5 && w[0] === 'agent:claude-code' ? w : null;
    }, 20000, 'rows sorted by writer');
    assert.deepEqual([...writers], [...writers].sort(), `A to Z: ${writers.join(', ')}`);

    // Filtered by source: only the tool observations.
    await (await byTestId(driver, 'filters-button')).click();
    const input = await byTestId(driver, 'source-filter');
    await input.sendKeys('tool:bash');
    await driver.executeScript(`arguments[0].dispatchEvent(new Event('change', { bubbles: true }))`, input);
    const shown = await waitFor(async () => {
      const t = (await (await byTestId(driver, 'row-total')).getText()).replace(/,/g, '');
      const n = Number(t.split(' ')[0]);
      const ids = await driver.executeScript(`return [...document.querySelectorAll('[data-testid="memory-row"]')].map((r) => r.dataset.id)`);
      return n > 0 && n < tools && ids.length === n ? ids : null;
    }, 20000, 'the tool:bash rows');
    for (const id of shown) assert.equal(lethe(db, 'show', id).source, 'tool:bash', `${id} has that source`);
  } finally {
    await closeApp(driver);
  }
});
