// The window never lies while it works: on a store whose first scoring takes
// seconds (20,000 templated agent notes nobody has scored yet), the views say they are
// loading until their first answer, and never show an empty-state text or a zero count first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDb, lethe, openApp, closeApp, nav, css, byTestId, waitFor, dropDerived } from './harness.mjs';

const N = 20_000;
const SERVICES = ['billing', 'search', 'auth', 'payments', 'gateway', 'reports', 'inbox', 'ledger'];

/** Near-copies that differ in a name or a number, as agents write them. */
function templated(i) {
  const s = SERVICES[(i * 7) % SERVICES.length];
  const text = [
    `Deploy of ${s} v${i % 9}.${i % 13} failed: a missing env var.`,
    `Reviewed PR ${i} adding retry with backoff to ${s}.`,
    `Rate limit on the ${s} API is ${100 + (i % 50) * 10} requests per minute per key.`,
  ][i % 3];
  const month = String(1 + (i % 11)).padStart(2, '0');
  const day = String(1 + (i % 27)).padStart(2, '0');
  const type = ['episodic', 'semantic', 'working'][i % 3];
  return JSON.stringify({ type, content: text, created_at: `2026-${month}-${day}T10:00:00Z`, importance: 0.3 + (i % 5) / 10 });
}

// Texts a view shows when it has an answer and the answer is "nothing".
const EMPTY_STATES = ['Nothing is close to being forgotten', 'This database is empty', 'No memories match.'];

test('a store that takes seconds to score shows loading states, never empty ones, before its first answer', { timeout: 300_000 }, async () => {
  const db = tempDb('big.db');
  const file = path.join(path.dirname(db), 'notes.jsonl');
  writeFileSync(file, Array.from({ length: N }, (_, i) => templated(i)).join('\n') + '\n');
  assert.equal(lethe(db, 'import', file).imported, N);
  // Unscored, as written by another program: an import alone leaves nothing to search.
  dropDerived(db);
  const episodic = Math.ceil(N / 3);

  const driver = await openApp(db);
  try {
    const seen = { loading: new Set(), overview: false, memories: false };
    const check = async (where) => {
      const s = await driver.executeScript(`
        const t = (id) => document.querySelector('[data-testid="' + id + '"]')?.textContent ?? null;
        return {
          text: document.body.innerText,
          loading: [...document.querySelectorAll('[data-testid="view-loading"]')].map((e) => e.textContent),
          episodic: t('tier-count-episodic'),
          atRisk: t('next-run-count'),
          rows: document.querySelectorAll('[data-testid="memory-row"]').length,
        };`);
      for (const e of EMPTY_STATES) assert.ok(!s.text.includes(e), `${where} showed "${e}" before its answer`);
      if (where === 'overview') {
        assert.notEqual(s.episodic, '0', 'a zero count before the answer');
        assert.notEqual(s.atRisk, '0', 'a zero at-risk count before the answer');
      }
      for (const l of s.loading) seen.loading.add(l);
      return s;
    };
    // Overview from launch until its counts arrive; Memories once the Overview said it loads.
    const deadline = Date.now() + 240_000;
    let view = 'overview';
    while (Date.now() < deadline) {
      const s = await check(view);
      if (view === 'overview' && s.loading.length > 0 && !seen.memories) {
        seen.overview = true;
        await nav(driver, 'memories');
        view = 'memories';
        continue;
      }
      if (view === 'memories' && s.rows > 0) {
        seen.memories = true;
        await nav(driver, 'overview');
        view = 'overview';
        continue;
      }
      if (view === 'overview' && s.episodic?.replace(/,/g, '') === String(episodic)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(seen.overview, 'the Overview said it was loading');
    assert.ok(seen.memories, 'the Memories view got its rows');
    assert.ok([...seen.loading].some((l) => l.includes('Scoring memories')), `loading texts: ${[...seen.loading]}`);
    assert.ok([...seen.loading].some((l) => l.includes('Loading memories')), `loading texts: ${[...seen.loading]}`);
    const count = await (await driver.findElement(css('[data-testid="tier-count-episodic"]'))).getText();
    assert.equal(count.replace(/,/g, ''), String(episodic), 'the Overview shows the real count in the end');
  } finally {
    await closeApp(driver);
  }
});

test('a dry run that waits for scoring shows how far it has come, can be cancelled, and then matches the CLI', { timeout: 300_000 }, async () => {
  const db = tempDb('dry.db');
  const file = path.join(path.dirname(db), 'notes.jsonl');
  writeFileSync(file, Array.from({ length: N }, (_, i) => templated(i)).join('\n') + '\n');
  assert.equal(lethe(db, 'import', file).imported, N);
  dropDerived(db);
  // The CLI's plan is taken on a copy of the file as the window first sees it: the same
  // memories, searched by the CLI itself. (On the window's file after its first scoring the
  // CLI reads the lists the window stored; that they can plan differently is a known open
  // defect, tracked apart from this test of the window's progress and cancel.)
  const twin = path.join(path.dirname(db), 'twin.db');
  for (const ext of ['', '-wal']) if (existsSync(db + ext)) copyFileSync(db + ext, twin + ext);

  const driver = await openApp(db);
  try {
    // At once, while the first scoring of the file runs: the dry run waits for it and says so.
    // A click that lands before the page's first paint is lost (with WebKit drawing on the
    // CPU, WebDriver finds the button before it is painted), so it is repeated until the
    // panel answers.
    await byTestId(driver, 'run-forget', 30_000);
    await waitFor(
      async () => {
        const started = await driver.executeScript(
          `return /Computing a dry run/.test(document.querySelector('[data-testid="run-forget-panel"]')?.textContent ?? '');`,
        );
        if (started) return true;
        const buttons = await driver.findElements(css('[data-testid="run-forget"]'));
        if (buttons.length) await buttons[0].click().catch(() => {});
        await new Promise((r) => setTimeout(r, 150));
        return false;
      },
      30_000,
      'the dry run to start',
    );
    const progress = await waitFor(
      async () => {
        const t = await driver.executeScript(
          `return document.querySelector('[data-testid="run-forget-panel"] [data-testid="load-progress-text"]')?.textContent ?? null;`,
        );
        return t && /\d/.test(t) ? t : null;
      },
      60_000,
      'the dry run reports how far scoring has come',
    );
    assert.match(progress, /Computing a dry run: (reading memories|finding similar memories), [\d,]+ of [\d,]+/);
    await (await byTestId(driver, 'load-cancel')).click();
    await byTestId(driver, 'run-forget', 5000);
    assert.equal((await driver.findElements(css('[data-testid="run-forget-confirm"]'))).length, 0, 'no preview after Cancel');

    // Run again: it plans from the window's scores once they are in, and agrees with the CLI.
    await (await byTestId(driver, 'run-forget')).click();
    const shown = await (await byTestId(driver, 'run-soft', 240_000)).getText();
    const cli = lethe(twin, 'forget', '--dry-run');
    const soft = cli.soft_deleted.length;
    const withGate = soft + cli.working_gate.length;
    assert.ok(
      [String(soft), String(withGate)].includes(shown.replace(/\D/g, '')),
      `the window's dry run (${shown}) equals the CLI's (${soft} soft, ${cli.working_gate.length} gated)`,
    );
  } finally {
    await closeApp(driver);
  }
});
