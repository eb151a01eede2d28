// The review fixes in the real window (WebKit): the detail's verdict stays on screen next to
// a long "duplicate of" link, the detail opens at its top on j, Esc leaves the search box,
// shift-click on checkboxes ticks every row it selects, and the bulk confirmation lists them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Key } from 'selenium-webdriver';
import { tempDb, lethe, openApp, closeApp, nav, css, byTestId, waitFor, rowSel } from './harness.mjs';

const LONG =
  'When the nightly backup of the billing database fails the on call engineer restores the last snapshot into staging, ' +
  'verifies the row counts against the ledger export, compares the checksums of the three largest tables, and only then ' +
  'promotes the restored copy to production while the incident channel is kept informed every fifteen minutes';

test('review fixes in the real window', { timeout: 300_000 }, async () => {
  const db = tempDb('review.db');
  const a = lethe(db, 'remember', '--type', 'semantic', '--content', LONG, '--importance', '0.9', '--created-at', '2025-01-01T00:00:00Z');
  const b = lethe(db, 'remember', '--type', 'semantic', '--content', LONG.replace('restores the last', 'restores the very last'), '--importance', '0.1', '--created-at', '2025-01-02T00:00:00Z');
  assert.equal(lethe(db, 'show', b.id).duplicate_of, a.id, 'fixture: the near-copy is a duplicate of the first');
  for (let i = 0; i < 12; i++) {
    lethe(db, 'remember', '--type', 'episodic', '--content', `Deploy ${i} of the search service went out at ${10 + i}:00 without incident`);
  }

  // A procedure at version 2: one step changed, one added.
  const steps = ['check out the tag', 'build the image', 'run the tests', 'push the image', 'tell the channel'];
  const proc = lethe(db, 'remember', '--type', 'procedural', '--content', 'Release the search service', '--task-goal', 'Release the search service',
    '--steps', JSON.stringify(steps), '--workflow-name', 'release', '--skill-name', 'ci');
  const edited = [...steps.slice(0, 3), 'push the signed image', ...steps.slice(4), 'close the milestone'];
  lethe(db, 'remember', '--type', 'procedural', '--content', 'Release the search service', '--memory-id', proc.id, '--expected-version', '1',
    '--task-goal', 'Release the search service', '--steps', JSON.stringify(edited), '--workflow-name', 'release', '--skill-name', 'ci');
  lethe(db, 'remember', '--type', 'procedural', '--content', 'Rotate the API keys', '--task-goal', 'Rotate the API keys',
    '--steps', JSON.stringify(['open the vault', 'rotate']), '--workflow-name', 'security', '--skill-name', 'vault');

  // A small quarantine, whole in the first answer (the case that once froze the page).
  const gone = lethe(db, 'remember', '--type', 'episodic', '--content', 'The staging VPN certificate expired on Monday');
  lethe(db, 'delete', gone.id, '--reason', 'outdated');

  const driver = await openApp(db);
  try {
    await nav(driver, 'memories');
    await waitFor(async () => (await driver.findElements(css(rowSel(b.id)))).length > 0, 30_000, 'rows');

    // The verdict next to a long "duplicate of" link: inside the pane, not drawn off it.
    await (await driver.findElement(css(`${rowSel(b.id)} .preview`))).click();
    await waitFor(async () => (await (await byTestId(driver, 'detail-id')).getText()) === b.id, 10_000, 'detail of b');
    await byTestId(driver, 'projected-forget');
    const fit = await driver.executeScript(`
      const pane = document.querySelector('[data-testid="memory-detail"]').getBoundingClientRect();
      const dd = document.querySelector('[data-testid="projected-forget"]');
      const kv = dd.closest('dl');
      const dup = [...kv.querySelectorAll('dt')].find((d) => d.textContent === 'duplicate of');
      const verdict = [...kv.querySelectorAll('dd')].map((e) => e.getBoundingClientRect());
      return { pane: [pane.left, pane.right], values: verdict.map((r) => [r.left, r.right, r.width]), dup: !!dup, scrollW: kv.scrollWidth, clientW: kv.clientWidth };`);
    assert.ok(fit.dup, 'the detail shows the duplicate-of link');
    for (const [l, r, w] of fit.values) {
      assert.ok(l >= fit.pane[0] - 1 && r <= fit.pane[1] + 1 && w > 0, `a value is inside the pane: ${JSON.stringify(fit)}`);
    }
    assert.ok(fit.scrollW <= fit.clientW + 1, `the list does not overflow: ${JSON.stringify(fit)}`);

    // j opens the next memory at its top.
    await driver.executeScript(`document.querySelector('[data-testid="memory-detail"]').scrollTop = 600;`);
    assert.ok((await driver.executeScript(`return document.querySelector('[data-testid="memory-detail"]').scrollTop;`)) > 100, 'the pane scrolled');
    await driver.executeScript(`document.activeElement?.blur();`);
    await driver.actions().sendKeys('j').perform();
    await waitFor(async () => (await (await byTestId(driver, 'detail-id')).getText()) !== b.id, 10_000, 'next memory');
    await waitFor(async () => (await driver.executeScript(`return document.querySelector('[data-testid="memory-detail"]').scrollTop;`)) === 0, 5_000, 'detail at its top');

    // Esc in the search box leaves it: the next j moves the selection and types nothing.
    const search = await byTestId(driver, 'memory-search');
    await search.click();
    await driver.actions().sendKeys(Key.ESCAPE).perform();
    const before = await (await byTestId(driver, 'detail-id')).getText();
    await driver.actions().sendKeys('j').perform();
    await waitFor(async () => (await (await byTestId(driver, 'detail-id')).getText()) !== before, 5_000, 'j moved');
    assert.equal(await search.getAttribute('value'), '', 'nothing typed into the search');
    await driver.actions().sendKeys(Key.ESCAPE).perform(); // close the detail

    // Shift-click on checkboxes: every row of the range ticked, the count the same.
    const boxes = await driver.findElements(css('[data-testid="row-check"]'));
    await boxes[1].click();
    await driver.actions().keyDown(Key.SHIFT).click(boxes[4]).keyUp(Key.SHIFT).perform();
    await waitFor(async () => /4\s+selected/.test(await (await byTestId(driver, 'bulk-bar')).getText()), 5_000, '4 selected');
    const ticked = await driver.executeScript(`return [...document.querySelectorAll('[data-testid="row-check"]')].slice(0, 6).map((c) => c.checked);`);
    assert.deepEqual(ticked, [false, true, true, true, true, false]);
    const previews = await driver.executeScript(`return [...document.querySelectorAll('[data-testid="memory-row"]')].slice(1, 5).map((r) => r.querySelector('.preview').textContent.trim());`);

    // The confirmation names what it will quarantine.
    await (await byTestId(driver, 'bulk-delete')).click();
    const dialog = await byTestId(driver, 'confirm-dialog');
    const listed = await driver.executeScript(`return [...arguments[0].querySelectorAll('[data-testid="confirm-item"]')].map((e) => e.textContent.trim());`, dialog);
    assert.deepEqual(listed, previews);
    await (await byTestId(driver, 'confirm-no')).click();

    // Workflows: a search narrows the list; a version shows what it removed and added.
    await nav(driver, 'workflows');
    await waitFor(async () => (await driver.findElements(css('[data-testid="workflow-row"]'))).length === 2, 10_000, 'two procedures');
    await (await byTestId(driver, 'workflow-search')).sendKeys('signed image');
    await waitFor(async () => (await driver.findElements(css('[data-testid="workflow-row"]'))).length === 1, 5_000, 'one match');
    await (await driver.findElement(css(`[data-testid="workflow-row"][data-id="${proc.id}"]`))).click();
    const diff = await waitFor(async () => (await driver.findElements(css('[data-testid="version-entry"][data-version="2"] [data-testid="version-diff"][data-field="steps"]')))[0], 10_000, 'the steps diff');
    const lines = await driver.executeScript(`
      const d = arguments[0];
      const t = (id) => [...d.querySelectorAll('[data-testid="' + id + '"]')].map((e) => e.textContent.replace(/\\s+/g, ' ').trim());
      return { del: t('diff-del'), add: t('diff-add'), skip: t('diff-skip'), all: d.textContent };`, diff);
    assert.deepEqual(lines.del, ['−4.push the image']);
    assert.deepEqual(lines.add, ['+4.push the signed image', '+6.close the milestone']);
    assert.deepEqual(lines.skip, ['⋯ 2 unchanged steps']);
    assert.ok(!lines.all.includes('check out the tag'), 'unchanged steps far from a change are folded');

    // Quarantine with everything in its first answer: the row, its filters and a filter that works.
    await nav(driver, 'quarantine');
    await waitFor(async () => (await driver.findElements(css(`[data-testid="quarantine-row"][data-id="${gone.id}"]`))).length === 1, 10_000, 'the quarantined row');
    const by = await byTestId(driver, 'quarantine-filter-reason');
    await driver.executeScript(`const s = arguments[0]; s.value = 'outdated'; s.dispatchEvent(new Event('change', { bubbles: true }));`, by);
    await waitFor(async () => /^1 of 1 match|^1 memory/.test(await (await byTestId(driver, 'quarantine-shown')).getText()), 5_000, 'filtered');
  } finally {
    await closeApp(driver);
  }
});
