// Quarantine at scale in the real window: 40,000 quarantined memories open in a second as a
// virtual list with a count; who deleted what can be filtered; a selection of 1,000 made by
// click and shift-click is restored in one action (one transaction: every restore at one
// instant), and the CLI agrees.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { Key } from 'selenium-webdriver';
import { tempDb, lethe, openApp, closeApp, nav, css, byTestId, waitFor, LETHE } from './harness.mjs';

/** `lethe` for answers larger than execFileSync's default buffer (the whole quarantine). */
function big(db, ...args) {
  return JSON.parse(execFileSync(LETHE, ['--db', db, ...args], { encoding: 'utf8', maxBuffer: 1 << 30 }));
}

const N = 40_000;
const ROW_H = 32;
const TOPICS = ['billing', 'search', 'auth', 'payments', 'gateway', 'reports', 'inbox', 'ledger'];

function quarantined(i) {
  const t = TOPICS[i % TOPICS.length];
  const at = new Date(Date.now() - (i + 60) * 60_000).toISOString();
  return JSON.stringify({
    id: `mem_q${String(i).padStart(6, '0')}`,
    type: ['episodic', 'semantic', 'working'][i % 3],
    content: `Quarantined note ${i}: the ${t} service changed its retry budget to ${i % 97} attempts`,
    created_at: '2026-01-05T10:00:00Z',
    importance: 0.2,
    is_deleted: true,
    deleted_at: at,
  });
}

/** Time from `act` (page source) to `cond` holding, then the frame that paints it, in ms. */
async function timed(driver, act, cond, timeoutMs = 30_000) {
  const r = await driver.executeAsyncScript(`
    const done = arguments[arguments.length - 1];
    const t0 = performance.now();
    try { ${act} } catch (e) { done({ error: 'action: ' + e }); return; }
    const tick = () => {
      let ok = false;
      try { ok = !!(() => { ${cond} })(); } catch { ok = false; }
      if (ok) { requestAnimationFrame(() => done({ ms: performance.now() - t0 })); return; }
      if (performance.now() - t0 > ${timeoutMs}) { done({ error: 'timeout' }); return; }
      setTimeout(tick, 2);
    };
    tick();`);
  if (!r || r.error) throw new Error(`timed: ${r?.error}`);
  return r.ms;
}

/**
 * Sets the control `testid` to `value` as a person's edit does (the event Svelte listens to).
 * The control is found when it is set, not through a handle kept across the waits before:
 * WebKit's driver forgets a handle whose element was out of the document at any one of its
 * calls, and has been seen to forget the search box's here now and again.
 */
async function setControl(driver, testid, value, event) {
  await driver.executeScript(
    `const s = document.querySelector('[data-testid="' + arguments[0] + '"]'); s.value = arguments[1]; s.dispatchEvent(new Event(arguments[2], { bubbles: true }));`,
    testid,
    value,
    event,
  );
}

const OPENED = `
  const rows = document.querySelectorAll('[data-testid="quarantine-row"]').length;
  const count = document.querySelector('[data-testid="quarantine-count"]')?.textContent.replace(/\\D/g, '');
  return rows > 10 && count === '${N + 3}';`;

test('Quarantine with 40,000 memories opens in a second and restores a selection of 1,000 in one action', { timeout: 600_000 }, async () => {
  const db = tempDb('quarantine.db');
  const file = path.join(path.dirname(db), 'q.jsonl');
  writeFileSync(file, Array.from({ length: N }, (_, i) => quarantined(i)).join('\n') + '\n');
  assert.equal(lethe(db, 'import', file).imported, N);
  // Three deleted by an agent with its reason, through the CLI as an agent does it.
  const byAgent = [];
  for (const text of ['the cache TTL is 30 s', 'the cache TTL is 45 s', 'nightly export runs at 02:00']) {
    const m = lethe(db, '--actor', 'agent:e2e', 'remember', '--type', 'semantic', '--content', text);
    lethe(db, '--actor', 'agent:e2e', 'delete', m.id, '--reason', 'superseded by a newer value');
    byAgent.push(m.id);
  }
  assert.equal(big(db, 'quarantine').items.length, N + 3);

  const driver = await openApp(db);
  try {
    await driver.manage().setTimeouts({ script: 120_000 });
    await byTestId(driver, 'nav-quarantine', 60_000);
    await waitFor(async () => (await driver.findElements(css('[data-testid="tier-count-episodic"]'))).length > 0, 60_000, 'overview');
    // Opening: from the click to the rows and the count painted.
    const opens = [];
    for (let i = 0; i < 3; i++) {
      if (i > 0) await nav(driver, 'overview');
      opens.push(await timed(driver, `document.querySelector('[data-testid="nav-quarantine"]').click();`, OPENED));
    }
    // Far down the list: the engine reads that page alone.
    const far = await timed(
      driver,
      `const sc = document.querySelector('[data-testid="quarantine-table"]'); sc.scrollTop = ${30_000 * ROW_H}; sc.dispatchEvent(new Event('scroll'));`,
      `return !!document.querySelector('[data-testid="quarantine-row"][aria-rowindex="30001"]') && !document.querySelector('[data-testid="quarantine-row-placeholder"]');`,
    );
    console.log(`quarantine of ${N + 3}: click to rows ${opens.map((x) => Math.round(x)).join(', ')} ms; row 30,001 painted ${Math.round(far)} ms after the scroll`);
    assert.ok(Math.min(...opens) <= 1000, `opens in ≤ 1 s: ${opens}`);
    assert.ok(far <= 1000, `a far page in ≤ 1 s: ${far}`);
    await driver.executeScript(`const sc = document.querySelector('[data-testid="quarantine-table"]'); sc.scrollTop = 0; sc.dispatchEvent(new Event('scroll'));`);
    // Only the rows on screen are in the page.
    const inPage = (await driver.findElements(css('[data-testid="quarantine-row"]'))).length;
    assert.ok(inPage < 80, `virtualised: ${inPage} rows in the page`);

    // Who deleted it: the agent's three, by its name.
    await byTestId(driver, 'quarantine-filter-by');
    await setControl(driver, 'quarantine-filter-by', 'agent:e2e', 'change');
    await waitFor(async () => (await driver.findElements(css('[data-testid="quarantine-row"]'))).length === 3, 10_000, 'three by the agent');
    const shownIds = await driver.executeScript(`return [...document.querySelectorAll('[data-testid="quarantine-row"]')].map((r) => r.dataset.id).sort();`);
    assert.deepEqual(shownIds, [...byAgent].sort());
    const whoText = await driver.executeScript(`return [...document.querySelectorAll('[data-testid="deleted-by"]')].map((e) => e.textContent.trim());`);
    assert.deepEqual(whoText, ['agent:e2e', 'agent:e2e', 'agent:e2e']);
    await setControl(driver, 'quarantine-filter-by', '', 'change');
    await waitFor(async () => (await driver.findElements(css('[data-testid="quarantine-row"]'))).length > 10, 10_000, 'all again');

    // Search narrows to the matching ones, with their number.
    const search = await byTestId(driver, 'quarantine-search');
    await search.sendKeys('ledger attempts');
    // The engine searches: while the words are typed, each answer counts what the text so far
    // matches; the last one counts both words.
    await waitFor(async () => /^5,000 of 40,003 match/.test(await (await byTestId(driver, 'quarantine-shown')).getText()), 20_000, 'search count');
    await setControl(driver, 'quarantine-search', '', 'input');
    await waitFor(async () => /^40,003 memories/.test(await (await byTestId(driver, 'quarantine-shown')).getText()), 10_000, 'search cleared');

    // Oldest deletions first: the import's rows 39,999 down to 39,000 are the first 1,000.
    await byTestId(driver, 'quarantine-sort');
    await setControl(driver, 'quarantine-sort', 'deleted-asc', 'change');
    await waitFor(async () => (await driver.executeScript(`return document.querySelector('[data-testid="quarantine-row"][aria-rowindex="1"]')?.dataset.id;`)) === 'mem_q039999', 10_000, 'oldest first');

    // Click the first row, scroll to the 1,000th and shift-click it.
    const selectedCount = () => driver.executeScript(`return document.querySelector('[data-testid="quarantine-selected-count"]')?.textContent ?? '';`);
    const ticked = () => driver.executeScript(`return [...document.querySelectorAll('[data-testid="quarantine-row"]')].filter((r) => r.getAttribute('aria-selected') === 'true').map((r) => r.getAttribute('aria-rowindex') + '=' + r.dataset.id);`);
    const selectRange = async () => {
      await driver.executeScript(`const sc = document.querySelector('[data-testid="quarantine-table"]'); sc.scrollTop = 0; sc.dispatchEvent(new Event('scroll'));`);
      const firstRow = await waitFor(async () => (await driver.findElements(css('[data-testid="quarantine-row"][aria-rowindex="1"] .preview')))[0], 10_000, 'row 1');
      await firstRow.click();
      // A person sees the row selected before going on; so does the test.
      try {
        await waitFor(
          async () => (await driver.executeScript(`return document.querySelector('[data-testid="quarantine-row"][aria-rowindex="1"]')?.getAttribute('aria-selected') === 'true';`)) && (await selectedCount()) === '1',
          10_000,
          'the first row selected',
        );
      } catch {
        console.log(`a click on row 1 selected ${(await selectedCount()) || 'nothing'}; rows ticked on screen: ${(await ticked()).join(' ')}`);
        return false;
      }
      await driver.executeScript(`const sc = document.querySelector('[data-testid="quarantine-table"]'); sc.scrollTop = ${999 * ROW_H - 200}; sc.dispatchEvent(new Event('scroll'));`);
      const target = await waitFor(async () => (await driver.findElements(css('[data-testid="quarantine-row"][aria-rowindex="1000"] .preview')))[0], 10_000, 'row 1,000');
      await driver.actions().keyDown(Key.SHIFT).click(target).keyUp(Key.SHIFT).perform();
      // The range is one engine request; the window's first scoring of the 40,003 memories
      // may still hold the store while it runs.
      let seen = '';
      try {
        await waitFor(async () => (seen = await selectedCount()) === '1,000', 30_000, '1,000 selected');
        return true;
      } catch {
        console.log(`a shift-click on row 1,000 after row 1 selected ${seen || 'nothing'}; rows ticked on screen: ${(await ticked()).join(' ')}`);
        return false;
      }
    };
    // Once in a few dozen runs on a loaded machine the click or the shift-click selects other
    // rows (said above, with the rows ticked); a person clicks again, and so does the test, once.
    if (!(await selectRange())) assert.ok(await selectRange(), `1,000 selected on the second try: ${await selectedCount()}`);
    // The checkboxes on screen say the same: rows 1..1,000 ticked, 1,001 on not.
    const ticks = await driver.executeScript(`
      return [...document.querySelectorAll('[data-testid="quarantine-row"]')].map((r) => [Number(r.getAttribute('aria-rowindex')), r.querySelector('[data-testid="quarantine-check"]').checked]);`);
    for (const [i, on] of ticks) assert.equal(on, i <= 1000, `row ${i} ticked: ${on}`);

    const restoreMs = await timed(
      driver,
      `document.querySelector('[data-testid="restore-selected"]').click();`,
      `return (document.querySelector('[data-testid="quarantine-count"]')?.textContent ?? '').replace(/\\D/g, '') === '${N + 3 - 1000}' && !document.querySelector('[data-testid="quarantine-bulk-bar"]');`,
      120_000,
    );
    console.log(`restore of 1,000 selected: ${Math.round(restoreMs)} ms`);
    assert.match(await (await byTestId(driver, 'toast')).getText(), /Restored 1,000 memories/);

    // The CLI agrees: 1,000 fewer in quarantine, exactly the oldest 1,000, restored in one
    // transaction (every restore event carries the same instant) by the person in the window.
    const q = big(db, 'quarantine').items;
    assert.equal(q.length, N + 3 - 1000);
    const left = new Set(q.map((x) => x.id));
    for (let i = 39_000; i < N; i++) assert.ok(!left.has(`mem_q${String(i).padStart(6, '0')}`), `mem_q${i} restored`);
    assert.ok(left.has('mem_q038999'), 'the 1,001st stays');
    const events = big(db, 'events', '--limit', '1200').items.filter((e) => e.action === 'restore');
    assert.equal(events.length, 1000, 'one restore event per memory');
    assert.equal(new Set(events.map((e) => e.created_at)).size, 1, 'all at one instant: one action');
    assert.ok(events.every((e) => e.actor === 'user'), 'by the person');
  } finally {
    await closeApp(driver);
  }
});
