// The real window opens on a temp DB holding known memories and shows the right tier counts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tempDb, lethe, openApp, closeApp, byTestId, waitFor } from './harness.mjs';

test('window shows the tier counts of the database it was opened on', async () => {
  const db = tempDb();
  lethe(db, 'remember', '--type', 'semantic', '--content', 'Auth uses Ed25519 keys');
  lethe(db, 'remember', '--type', 'semantic', '--content', 'The staging cluster runs in eu-west-1');
  lethe(db, 'remember', '--type', 'working', '--content', 'User is editing the billing page');
  lethe(db, 'remember', '--type', 'episodic', '--content', 'Yesterday the deploy failed on a migration');
  const d = lethe(db, 'remember', '--type', 'episodic', '--content', 'This one goes to quarantine');
  lethe(db, 'delete', d.id);
  const driver = await openApp(db);
  try {
    const expected = { semantic: '2', working: '1', episodic: '1', procedural: '0' };
    for (const [tier, n] of Object.entries(expected)) {
      const el = await byTestId(driver, `tier-count-${tier}`);
      await waitFor(async () => (await el.getText()).trim() === n, 10000, `tier-count-${tier} = ${n}`);
      assert.equal((await el.getText()).trim(), n, `${tier} active count`);
    }
  } finally {
    await closeApp(driver);
  }
});
