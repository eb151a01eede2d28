// In the real window: the forget dry run counts what the batch quarantines, keyboard
// triage keeps its place, shortcuts survive a slider and a checkbox, Esc and digit keys, no id
// without its text in audit rows and toasts, and a layout that keeps the content at 1024 × 700.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tempDb, lethe, openApp, closeApp, byTestId, waitFor, css, rowSel, nav } from './harness.mjs';

const DAY = 86_400_000;
const ago = (days) => new Date(Date.now() - days * DAY).toISOString();
const key = (driver, k) => driver.actions().sendKeys(k).perform();
const text = (driver, sel) => driver.executeScript(`return document.querySelector(arguments[0])?.textContent ?? null`, sel);
const selectedId = (driver) =>
  driver.executeScript(`return document.querySelector('[data-testid="memory-row"][aria-selected="true"]')?.dataset.id ?? null`);
const rowIds = (driver) =>
  driver.executeScript(
    `return [...document.querySelectorAll('[data-testid="memory-row"]')].sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top)).map((r) => r.dataset.id)`,
  );

async function openRow(driver, id) {
  const row = await waitFor(async () => (await driver.findElements(css(rowSel(id))))[0], 15000, `row ${id}`);
  await row.findElement(css('.preview')).click();
  await waitFor(async () => (await text(driver, '[data-testid="detail-id"]'))?.trim() === id, 10000, `detail of ${id}`);
}

test('the dry run counts and lists every memory the batch quarantines, working-memory gate included', { timeout: 120_000 }, async () => {
  const db = tempDb();
  // Forgotten by score: old, unused, unimportant episodes, near-copies of one another (a
  // duplicate's D tips them over the threshold; the one they duplicate stays in review).
  const old = ['an old episode nobody needs', 'an old episode that nobody needs', 'an old episode nobody needs again'].map((content, i) =>
    lethe(db, 'remember', '--type', 'episodic', '--importance', '0', '--created-at', ago(400 + i), '--content', content),
  );
  // Quarantined by the working-memory gate: working memories older than the window.
  const gated = [0, 1].map((i) =>
    lethe(db, 'remember', '--type', 'working', '--importance', '0.9', '--created-at', ago(5 + i), '--content', `a stale scratch note ${i}`),
  );
  lethe(db, 'remember', '--type', 'semantic', '--importance', '0.9', '--content', 'a rule that stays');
  const before = lethe(db, 'stats').total_quarantined;
  const dry = lethe(db, 'forget', '--dry-run');
  assert.ok(dry.soft_deleted.length >= 1 && dry.working_gate.length >= 2, `fixture: ${JSON.stringify(dry)}`);
  const quarantined = new Set([...dry.soft_deleted, ...dry.working_gate]);

  const driver = await openApp(db);
  try {
    await nav(driver, 'overview');
    await (await byTestId(driver, 'run-forget')).click();
    const soft = await byTestId(driver, 'run-soft', 15000);
    const shown = Number((await soft.getText()).replace(/,/g, ''));
    assert.equal(shown, dry.soft_deleted.length + dry.working_gate.length, 'dry run counts both ways into quarantine');
    // Listed by their text before the person confirms.
    const listed = await driver.executeScript(
      `return [...document.querySelectorAll('[data-testid$="-item"]')].map((e) => ({ id: e.dataset.id, text: e.textContent }))`,
    );
    for (const m of [...old, ...gated].filter((x) => quarantined.has(x.id))) {
      const item = listed.find((l) => l.id === m.id);
      assert.ok(item, `${m.id} listed in the dry run`);
      await waitFor(async () => {
        const t = await driver.executeScript(`return document.querySelector('[data-testid$="-item"][data-id="' + arguments[0] + '"]')?.textContent ?? ''`, m.id);
        return /old episode|stale scratch/.test(t);
      }, 10000, `preview of ${m.id}`);
    }
    await (await byTestId(driver, 'run-forget-confirm')).click();
    const toast = await byTestId(driver, 'toast', 30000);
    const after = lethe(db, 'stats').total_quarantined;
    assert.equal(after - before, shown, 'what was announced is what was soft-deleted');
    const softEvents = lethe(db, 'events', '--action', 'soft').items.length;
    assert.equal(softEvents, shown, 'one soft audit event per counted memory');
    assert.match(await toast.getText(), new RegExp(`${shown} quarantined`));
  } finally {
    await closeApp(driver);
  }
});

test('keyboard triage: p then j goes to the next row of the original order; keys after slider and checkbox; Esc; digits', { timeout: 120_000 }, async () => {
  const db = tempDb();
  // Distinct ages give distinct scores: sorted by score, oldest first.
  const ms = Array.from({ length: 8 }, (_, i) =>
    lethe(db, 'remember', '--type', 'episodic', '--importance', '0.2', '--created-at', ago(200 - i * 20), '--content', `triage memory ${i}`),
  );
  const driver = await openApp(db);
  try {
    await nav(driver, 'memories');
    await waitFor(async () => (await rowIds(driver)).length === ms.length, 15000, 'rows');
    const order = await rowIds(driver);
    await openRow(driver, order[1]);
    // Pinning lowers the score, so by score the row would move to the end.
    await key(driver, 'p');
    await waitFor(async () => lethe(db, 'show', order[1]).pinned, 10000, 'pinned');
    await byTestId(driver, 'order-held', 10000);
    assert.deepEqual(await rowIds(driver), order, 'the rows keep their order while triaging');
    await key(driver, 'j');
    await waitFor(async () => (await selectedId(driver)) === order[2], 5000, 'j selects the next row of the original order');
    await key(driver, 'p');
    await waitFor(async () => lethe(db, 'show', order[2]).pinned, 10000, 'p pinned the row under the cursor');
    assert.equal(lethe(db, 'show', order[3]).pinned, false, 'nothing else was pinned');

    // The importance slider takes focus; letters still drive the list.
    const slider = await byTestId(driver, 'importance-slider');
    await slider.click();
    await key(driver, 'j');
    await waitFor(async () => (await selectedId(driver)) === order[3], 5000, 'j after the slider');
    // So does a row checkbox.
    const box = await driver.findElement(css(`${rowSel(order[3])} [data-testid="row-check"]`));
    await box.click();
    await byTestId(driver, 'bulk-bar');
    await key(driver, 'j');
    await waitFor(async () => (await selectedId(driver)) === order[4], 5000, 'j after a checkbox');
    // Esc: first the checked rows, then the detail.
    await key(driver, '\uE00C');
    await waitFor(async () => (await driver.findElements(css('[data-testid="bulk-bar"]'))).length === 0, 5000, 'selection cleared');
    assert.equal((await driver.findElements(css('[data-testid="memory-detail"]'))).length, 1, 'detail still open');
    await key(driver, '\uE00C');
    await waitFor(async () => (await driver.findElements(css('[data-testid="memory-detail"]'))).length === 0, 5000, 'detail closed');

    // r on an active memory does nothing (no error, no change).
    await openRow(driver, order[5]);
    await key(driver, 'r');
    await new Promise((r) => setTimeout(r, 600));
    const toasts = await driver.findElements(css('[data-testid="toast"][data-kind="error"]'));
    assert.equal(toasts.length, 0, 'no error for an impossible key');
    await key(driver, '\uE00C');

    // Digit keys open the views in the order of the side navigation.
    const navOrder = await driver.executeScript(
      `return [...document.querySelectorAll('nav.sidenav [data-testid^="nav-"]')].map((b) => b.dataset.testid.slice(4))`,
    );
    assert.ok(navOrder.length >= 6, `nav: ${navOrder}`);
    for (const [i, view] of navOrder.slice(0, 9).entries()) {
      await key(driver, String(i + 1));
      await waitFor(
        async () => (await (await byTestId(driver, `nav-${view}`)).getAttribute('aria-current')) === 'page',
        5000,
        `key ${i + 1} opens ${view}`,
      );
    }
  } finally {
    await closeApp(driver);
  }
});

test('audit rows and toasts name memories by their text, never by a bare id', { timeout: 120_000 }, async () => {
  const db = tempDb();
  const a = lethe(db, 'remember', '--type', 'semantic', '--content', 'Deploys need two approvals');
  const b = lethe(db, 'remember', '--type', 'episodic', '--content', 'The staging database was rebuilt on Monday');
  lethe(db, 'pin', a.id);
  lethe(db, 'unpin', a.id);
  lethe(db, 'delete', b.id, '--reason', 'outdated');
  lethe(db, 'restore', b.id);
  const driver = await openApp(db);
  try {
    // A delete from the window: the toast quotes the memory.
    await nav(driver, 'memories');
    await openRow(driver, a.id);
    await key(driver, 'd');
    const toast = await byTestId(driver, 'toast', 10000);
    await waitFor(async () => /Deploys need two approvals/.test(await toast.getText()), 5000, 'toast names the memory');
    assert.doesNotMatch(await toast.getText(), /mem_/, 'no id in the toast');

    await nav(driver, 'audit');
    await waitFor(async () => (await driver.findElements(css('[data-testid="audit-row"]'))).length >= 6, 15000, 'audit rows');
    const rows = await waitFor(async () => {
      const r = await driver.executeScript(`
        return [...document.querySelectorAll('[data-testid="audit-row"]')].map((row) => ({
          action: row.querySelector('.action')?.dataset.action ?? '',
          ref: row.querySelector('[data-testid="audit-memory-ref"]')?.textContent ?? null,
          id: row.querySelector('[data-testid="audit-memory-ref"]')?.dataset.id ?? null,
        }))`);
      return r.every((x) => x.ref === null || !x.ref.startsWith('…')) ? r : null;
    }, 15000, 'previews of the audit rows');
    for (const action of ['pin', 'unpin', 'restore', 'soft']) {
      const row = rows.find((r) => r.action === action);
      assert.ok(row, `an audit row for ${action}`);
      const want = row.id === a.id ? 'Deploys need two approvals' : 'The staging database was rebuilt';
      assert.ok(row.ref.includes(want), `${action} row shows "${want}": ${row.ref}`);
    }
  } finally {
    await closeApp(driver);
  }
});

test('at 1024 × 700 with a memory open the content column keeps at least 320 px; the filter bar does not wrap', { timeout: 120_000 }, async () => {
  const db = tempDb();
  const ms = Array.from({ length: 5 }, (_, i) =>
    lethe(db, 'remember', '--type', 'semantic', '--content', `layout memory ${i}: a sentence long enough to need the room of a real column`),
  );
  const driver = await openApp(db);
  try {
    for (const [w, h] of [[1024, 700], [1280, 800], [1440, 900]]) {
      await driver.manage().window().setRect({ width: w, height: h });
      await waitFor(async () => (await driver.executeScript('return window.innerWidth')) <= w, 5000, `window ${w}`);
      await nav(driver, 'memories');
      await openRow(driver, ms[0].id);
      const m = await driver.executeScript(`
        const cell = document.querySelector('[data-testid="memory-row"] .preview');
        const head = document.querySelector('.thead');
        const bar = document.querySelector('.filters');
        const search = bar.querySelector('input[type="search"]');
        // One line: every control's vertical centre at the same height (a wrapped one sits a line lower).
        const mids = [...bar.children].filter((c) => c.offsetParent !== null).map((c) => { const r = c.getBoundingClientRect(); return (r.top + r.bottom) / 2; });
        const content = cell.getBoundingClientRect();
        const detail = document.querySelector('[data-testid="memory-detail"]').getBoundingClientRect();
        return { inner: window.innerWidth, cell: content.width, rows: Math.max(...mids) - Math.min(...mids) < 8 ? 1 : 2, search: search.getBoundingClientRect().width,
          // What of the content column the detail does not cover (a drawer under the list covers none).
          visible: detail.top < content.bottom && detail.bottom > content.top && detail.left < content.right
            ? Math.min(content.right, detail.left) - content.left : content.width };
      `);
      assert.ok(m.visible >= 320, `at ${w} px the content column shows ${m.visible} px: ${JSON.stringify(m)}`);
      assert.equal(m.rows, 1, `at ${w} px the filter bar is one line: ${JSON.stringify(m)}`);
      await key(driver, '\uE00C');
    }
  } finally {
    await closeApp(driver);
  }
});
