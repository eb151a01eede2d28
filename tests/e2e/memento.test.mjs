// A memento database opens in the window as it is: a memento 0.1.0 file (memento's own released
// schema.sql, run verbatim by the test-support `lethe-fixture memento-0.1`) and a 1.36 file (hand-made from its
// documented schema) show their tier counts, and a pin made in the window lands in memento's table.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, execFileSync } from 'node:child_process';
import path from 'node:path';
import { tempDb, lethe, LETHE, openApp, closeApp, byTestId, waitFor, By } from './harness.mjs';

/** The test-support binary that writes memento files (built beside `lethe`). */
const FIXTURE = path.join(path.dirname(LETHE), 'lethe-fixture');

/** memento's own view of the file, through Python's sqlite3 (no Lethe code involved). */
function mementoQuery(db, sql) {
  const py = `import sqlite3,json,sys; c=sqlite3.connect(sys.argv[1]); print(json.dumps(c.execute(sys.argv[2]).fetchall()))`;
  const r = spawnSync('python3', ['-c', py, db, sql], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

for (const kind of ['memento-0.1', 'memento-1.36']) {
  test(`${kind} file opens in the window and takes a pin`, { timeout: 60_000 }, async () => {
    const db = tempDb(`${kind}.db`);
    execFileSync(FIXTURE, [kind, db], { encoding: 'utf8' });
    const hasDeleted = mementoQuery(db, "SELECT COUNT(*) FROM pragma_table_info('memory_item') WHERE name = 'is_deleted'")[0][0] === 1;
    const rows = mementoQuery(db, `SELECT type, COUNT(*) FROM memory_item ${hasDeleted ? 'WHERE is_deleted = 0' : ''} GROUP BY type`);
    const expected = Object.fromEntries(rows);
    const driver = await openApp(db);
    try {
      for (const tier of ['working', 'episodic', 'semantic', 'procedural']) {
        const el = await byTestId(driver, `tier-count-${tier}`);
        const want = String(expected[tier] ?? 0);
        await waitFor(async () => (await el.getText()).trim() === want, 10000, `${kind}: tier-count-${tier} = ${want}`);
      }
      const id = lethe(db, 'list', '--limit', '1').items[0].id;
      await (await byTestId(driver, 'nav-memories')).click();
      const row = await waitFor(async () => (await driver.findElements(By.css(`[data-testid="memory-row"][data-id="${id}"]`)))[0], 10000, `row ${id}`);
      await row.findElement(By.css('.preview')).click();
      await (await byTestId(driver, 'pin-button')).click();
      await waitFor(() => mementoQuery(db, `SELECT pinned FROM memory_item WHERE id = '${id}'`)[0][0] === 1, 10000, 'pinned in memento\'s table');
      assert.ok(lethe(db, 'events', '--memory', id).items.some((e) => e.action === 'pin'), 'the pin is audited');
    } finally {
      await closeApp(driver);
    }
  });
}
