// The Duplicates view in the real window: a paraphrased pair written through
// `lethe remember` (same meaning, different words) shows as a cluster with the CLI's dominant
// member; Supersede removes the older from `lethe recall` and is in the audit log; Keep both
// hides the cluster, is audited, and the decision survives a reload of the window.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tempDb, lethe, openApp, closeApp, byTestId, waitFor, css, nav } from './harness.mjs';

const DAY = 86_400_000;
const ago = (days) => new Date(Date.now() - days * DAY).toISOString();

// Two paraphrased pairs: the same fact in other words and another order (few word bigrams in
// common, so the pair is found by meaning).
const PAIR_A = [
  'the nightly backup of the staging database is copied to the offsite bucket',
  'every night we copy the staging DB backup into an offsite storage bucket',
];
const PAIR_B = [
  'never deploy the payment service on a friday afternoon',
  'on friday afternoons the payments service must not be deployed',
];

async function clusterIds(driver) {
  const els = await driver.findElements(css('[data-testid="duplicate-cluster"]'));
  return Promise.all(els.map((e) => e.getAttribute('data-id')));
}

async function clickIn(driver, dominant, hook) {
  const cluster = await driver.findElement(css(`[data-testid="duplicate-cluster"][data-id="${dominant}"]`));
  await (await cluster.findElement(css(`[data-testid="${hook}"]`))).click();
}

const actions = (db, id) => lethe(db, 'events', '--memory', id).items.map((e) => `${e.action}:${e.actor}`);

test('a paraphrased pair is a cluster; Supersede drops the older from recall; Keep both survives a reload', { timeout: 180_000 }, async () => {
  const db = tempDb();
  const a1 = lethe(db, 'remember', '--type', 'semantic', '--content', PAIR_A[0], '--created-at', ago(40));
  const a2 = lethe(db, 'remember', '--type', 'semantic', '--content', PAIR_A[1], '--created-at', ago(3));
  const b1 = lethe(db, 'remember', '--type', 'semantic', '--content', PAIR_B[0], '--created-at', ago(30), '--importance', '0.4');
  const b2 = lethe(db, 'remember', '--type', 'semantic', '--content', PAIR_B[1], '--created-at', ago(5), '--importance', '0.8');
  lethe(db, 'remember', '--type', 'semantic', '--content', 'kafka topics are partitioned by tenant id');
  const cli = lethe(db, 'duplicates');
  assert.equal(cli.total, 2, `two clusters from the CLI: ${JSON.stringify(cli)}`);
  const byMember = (id) => cli.items.find((c) => c.members.some((m) => m.id === id));
  const clusterA = byMember(a1.id);
  const clusterB = byMember(b1.id);
  assert.deepEqual(clusterA.members.map((m) => m.id).sort(), [a1.id, a2.id].sort());
  assert.ok(clusterA.members.every((m) => m.kind === '' || m.kind === 'same meaning'), 'a paraphrase is the same meaning');
  assert.equal(clusterB.dominant, b2.id, 'the more important one dominates');
  const query = 'nightly backup staging database offsite bucket';
  assert.ok(lethe(db, 'recall', query).results.some((r) => r.id === a1.id), 'before: recall returns the older');

  const driver = await openApp(db);
  try {
    await nav(driver, 'duplicates');
    const shown = await waitFor(async () => {
      const ids = await clusterIds(driver);
      return ids.length === 2 ? ids : null;
    }, 20000, 'two clusters');
    assert.deepEqual(shown.sort(), [clusterA.dominant, clusterB.dominant].sort(), 'the dominant ones are the CLI’s');
    const kept = await driver.findElement(css(`[data-testid="duplicate-cluster"][data-id="${clusterB.dominant}"] [data-testid="duplicate-dominant"]`));
    assert.ok(await kept.isDisplayed(), 'the dominant one is marked');

    // Supersede: the older (a1) by the newer (a2), whichever of them dominates.
    await clickIn(driver, clusterA.dominant, 'duplicate-supersede');
    await waitFor(async () => !(await clusterIds(driver)).includes(clusterA.dominant), 10000, 'cluster A gone');
    const hits = lethe(db, 'recall', query).results.map((r) => r.id);
    assert.ok(!hits.includes(a1.id), `the older is no longer recalled: ${hits}`);
    assert.ok(hits.includes(a2.id), 'the newer is');
    assert.ok(actions(db, a1.id).includes('superseded:user'), `audited: ${actions(db, a1.id)}`);
    assert.deepEqual(lethe(db, 'show', a1.id).superseded_by, [a2.id]);

    // Keep both: the cluster goes, and stays gone after a reload.
    await clickIn(driver, clusterB.dominant, 'duplicate-keep');
    await byTestId(driver, 'duplicates-empty', 10000);
    assert.ok(actions(db, b1.id).includes('keep_both:user'), `audited: ${actions(db, b1.id)}`);
    assert.equal(lethe(db, 'duplicates').total, 0, 'remembered in the file');
    await driver.executeScript('location.reload()');
    await nav(driver, 'duplicates');
    await byTestId(driver, 'duplicates-empty', 20000);
    assert.deepEqual(await clusterIds(driver), [], 'no cluster after the reload');
    const shownB1 = lethe(db, 'show', b1.id);
    assert.equal(shownB1.features.duplication, 0, 'a kept pair counts in no duplication');
  } finally {
    await closeApp(driver);
  }
});

test('a changed value is listed under "related, not duplicates" with its evidence, never as a cluster; Supersede the older', { timeout: 180_000 }, async () => {
  const db = tempDb();
  const old = lethe(db, 'remember', '--type', 'semantic', '--content', 'Retry limit for the email sender is 3 attempts.', '--created-at', ago(10));
  const now = lethe(db, 'remember', '--type', 'semantic', '--content', 'Retry limit for the email sender is 5 attempts.', '--created-at', ago(1));
  lethe(db, 'remember', '--type', 'semantic', '--content', 'kafka topics are partitioned by tenant id');
  const cli = lethe(db, 'duplicates');
  assert.equal(cli.total, 0, `another value is no duplicate: ${JSON.stringify(cli)}`);
  const pair = cli.related.items.find((p) => p.older.id === old.id && p.newer.id === now.id);
  assert.equal(pair?.kind, 'possible update', `the CLI lists the pair as a possible update: ${JSON.stringify(cli.related)}`);

  const driver = await openApp(db);
  try {
    await nav(driver, 'duplicates');
    const row = await waitFor(async () => {
      const els = await driver.findElements(css(`[data-testid="related-pair"][data-older="${old.id}"][data-newer="${now.id}"]`));
      return els[0] ?? null;
    }, 20000, 'the related pair');
    assert.equal(await row.getAttribute('data-kind'), 'possible update');
    const evidence = await (await row.findElement(css('[data-testid="related-evidence"]'))).getText();
    assert.ok(evidence.includes('3 → 5'), `the window says what differs: ${evidence}`);
    assert.equal((await driver.findElements(css('[data-testid="duplicate-cluster"]'))).length, 0, 'no cluster');
    await (await row.findElement(css('[data-testid="related-supersede"]'))).click();
    await waitFor(async () => actions(db, old.id).includes('superseded:user'), 20000, 'the supersede audited');
    assert.deepEqual(lethe(db, 'show', old.id).superseded_by, [now.id]);
    assert.ok(!lethe(db, 'recall', 'retry limit email sender').results.some((r) => r.id === old.id), 'the older left recall');
  } finally {
    await closeApp(driver);
  }
});
