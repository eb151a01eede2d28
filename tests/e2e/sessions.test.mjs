// Sessions in the real window: after `lethe end-session`, the Sessions view shows
// the session with what it wrote, which memories became task logs and which rules it
// produced, and the task kind's logs; the Memories view's "needs extraction" filter lists
// only the rule that still reads like dialogue, and its detail says why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { tempDb, lethe, openApp, closeApp, byTestId, waitFor, css, rowSel, nav } from './harness.mjs';

const attrs = async (els, name) => Promise.all(els.map((e) => e.getAttribute(name)));

test('the Sessions view shows an ended session, its task logs and rules', { timeout: 120_000 }, async () => {
  const db = tempDb();
  const w1 = lethe(db, 'remember', '--type', 'working', '--session', 'sess-e2e', '--content', 'tried the canary deploy, health check timed out');
  const w2 = lethe(db, 'remember', '--type', 'working', '--session', 'sess-e2e', '--content', 'raised the health check timeout to 60 s, canary passed');
  const open = lethe(db, 'remember', '--type', 'working', '--session', 'sess-open', '--content', 'still working on the billing export');
  const rules = db.replace(/e2e\.db$/, 'rules.jsonl');
  writeFileSync(rules, JSON.stringify({ content: 'Canary health checks need a timeout of at least 60 seconds', importance: 0.8 }) + '\n');
  const end = lethe(db, 'end-session', 'sess-e2e', '--task-kind', 'deploy', '--rules', rules);
  assert.deepEqual(end.task_logs, [w1.id, w2.id]);
  const rule = end.rules[0].id;
  // The contract the view relies on: gone from global recall, there for the task kind.
  const global = lethe(db, 'recall', 'canary health check').results.map((h) => h.id);
  assert.ok(!global.includes(w1.id) && global.includes(rule), 'task logs never in global recall');
  const same = lethe(db, 'recall', 'canary health check', '--task-kind', 'deploy').results.map((h) => h.id);
  assert.ok(same.includes(w1.id), 'recalled for the same task kind');
  const chat = lethe(db, 'remember', '--type', 'semantic', '--content', 'User: hey, can you remind me how we deploy?');
  const clean = lethe(db, 'remember', '--type', 'semantic', '--content', 'Deploys go through staging first.');

  const driver = await openApp(db);
  try {
    await nav(driver, 'sessions');
    const row = await waitFor(
      async () => (await driver.findElements(css('[data-testid="session-row"][data-id="sess-e2e"]')))[0],
      15000,
      'the ended session',
    );
    const ids = await attrs(await driver.findElements(css('[data-testid="session-row"]')), 'data-id');
    assert.ok(ids.includes('sess-open'), 'an open session is listed too');
    const kind = await row.findElement(css('[data-testid="session-kind"]'));
    assert.match(await kind.getText(), /deploy/);
    const mems = await row.findElements(css('[data-testid="session-memory"]'));
    const roles = Object.fromEntries(
      await Promise.all(mems.map(async (m) => [await m.getAttribute('data-id'), await m.getAttribute('data-role')])),
    );
    assert.deepEqual(roles, { [w1.id]: 'task_log', [w2.id]: 'task_log', [rule]: 'rule' });
    const group = await byTestId(driver, 'task-kind-group');
    assert.equal(await group.getAttribute('data-kind'), 'deploy');
    const logs = await attrs(await group.findElements(css('[data-testid="task-log"]')), 'data-id');
    assert.deepEqual(logs.sort(), [w1.id, w2.id].sort());
    const openRow = await driver.findElement(css('[data-testid="session-row"][data-id="sess-open"]'));
    const openRoles = await attrs(await openRow.findElements(css('[data-testid="session-memory"]')), 'data-role');
    assert.deepEqual(openRoles, ['written'], `${open.id} is still working memory`);

    // Needs extraction: only the rule that reads like dialogue.
    await nav(driver, 'memories');
    await waitFor(async () => (await driver.findElements(css(rowSel(clean.id)))).length === 1, 15000, 'memories listed');
    await (await byTestId(driver, 'filters-button')).click();
    await (await byTestId(driver, 'filter-needs-extraction')).click();
    await waitFor(async () => {
      const shown = await attrs(await driver.findElements(css('[data-testid="memory-row"]')), 'data-id');
      return shown.length === 1 && shown[0] === chat.id;
    }, 10000, 'only the dialogue-like memory listed');
    await (await driver.findElement(css(rowSel(chat.id)))).click();
    const lint = await byTestId(driver, 'dialogue-lint', 10000);
    assert.equal(await lint.getAttribute('data-flagged'), 'true');
    assert.match(await lint.getText(), /speaker prefix/);
  } finally {
    await closeApp(driver);
  }
});
