// Time travel in the real window: moving the slider to +200 days raises the "will be forgotten at the next run" count,
// and looking into the future writes nothing to the database.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { tempDb, lethe, openApp, closeApp, byTestId, waitFor, LETHE } from './harness.mjs';

function snapshot(db) {
  // Every memory field for field, and the whole audit trail.
  const memories = execFileSync(LETHE, ['--db', db, 'export'], { encoding: 'utf8' });
  const events = JSON.stringify(lethe(db, 'events', '--limit', '10000'));
  return memories + events;
}

test('time slider to +200 days raises the "will be forgotten at the next run" count and writes nothing', { timeout: 90_000 }, async () => {
  const db = tempDb();
  // demo writes, so it runs at the clock (--now is for reads only since #23).
  lethe(db, 'demo', '--count', '80');
  const before = snapshot(db);
  const expectedLater = lethe(db, '--now', new Date(Date.now() + 200 * 86400000).toISOString(), 'stats').next_run;
  const driver = await openApp(db);
  try {
    await (await byTestId(driver, 'nav-decay')).click();
    const count = async () => Number((await (await byTestId(driver, 'next-run-count')).getText()).trim());
    const atRiskNow = await waitFor(async () => {
      const n = await count();
      return Number.isFinite(n) && n > 0 ? n : null;
    }, 10000, 'at-risk count shown');
    const slider = await byTestId(driver, 'time-slider');
    await driver.executeScript(
      `const s = arguments[0]; s.value = '200'; s.dispatchEvent(new Event('input', { bubbles: true }));`,
      slider,
    );
    const later = await waitFor(async () => {
      const n = await count();
      return n > atRiskNow ? n : null;
    }, 10000, 'at-risk count rises');
    console.log(`at risk now ${atRiskNow}, at +200 days ${later} (CLI --now +200 d: ${expectedLater})`);
    assert.ok(Math.abs(later - expectedLater) <= 2, 'the window agrees with the engine evaluated 200 days later');
    // Leave the slider where it is, apply nothing, close: the file is unchanged.
  } finally {
    await closeApp(driver);
  }
  assert.equal(snapshot(db), before, 'time travel wrote nothing');
});
