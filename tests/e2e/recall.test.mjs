// The Recall view in the real window: its results and breakdown values are the
// CLI's (`lethe recall --explain`, same query, `--now` at the moment the window ranked); a
// quarantined match is declined with the reason "in quarantine"; the recency slider at 0
// reorders the results exactly as `lethe recall --weights sim,0,scene,pri` does; a recall made
// through `lethe mcp` by another process shows in the recall log within a second.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { tempDb, lethe, openApp, closeApp, byTestId, waitFor, css, nav, LETHE } from './harness.mjs';

const PARTS = ['lexical', 'semantic', 'recency', 'scene', 'priority'];
const DAY = 86_400_000;
const ago = (days) => new Date(Date.now() - days * DAY).toISOString();

/** The window's results: id, score and the five breakdown values, in order. */
async function shown(driver) {
  const rows = await driver.findElements(css('[data-testid="recall-result"]'));
  return Promise.all(
    rows.map(async (r) => {
      const parts = {};
      for (const p of PARTS) {
        const v = await (await r.findElement(css(`[data-testid="recall-breakdown-${p}"]`))).getAttribute('data-value');
        parts[p] = v === '' ? null : Number(v);
      }
      return { id: await r.getAttribute('data-id'), score: Number(await r.getAttribute('data-score')), parts };
    }),
  );
}

const ids = (list) => list.map((r) => r.id);

/** Puts the whole query in at once (as a paste), so no partial query ranks in between. */
async function typeQuery(driver, text) {
  const q = await byTestId(driver, 'recall-query');
  await driver.executeScript(
    'arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event("input", { bubbles: true }));',
    q,
    text,
  );
}

/** Sets a range input the way a drag ends: value, then the input event Svelte listens to. */
async function setSlider(driver, name, value) {
  const el = await byTestId(driver, `recall-weight-${name}`);
  await driver.executeScript(
    'arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event("input", { bubbles: true }));',
    el,
    String(value),
  );
}

test('results and breakdown equal the CLI, a quarantined match is declined, recency 0 reorders like --weights', { timeout: 180_000 }, async () => {
  const db = tempDb();
  // The same words in three tiers, oldest written first: similarity and priority tie, so with
  // the default weights recency orders them newest first, and without recency the tie-break
  // (BM25, then the order of writing) puts the oldest first.
  const old = lethe(db, 'remember', '--type', 'semantic', '--content', 'the nightly backup job writes to the s3 bucket', '--created-at', ago(300));
  const mid = lethe(db, 'remember', '--type', 'episodic', '--content', 'the nightly backup job writes to the s3 bucket', '--created-at', ago(20));
  const fresh = lethe(db, 'remember', '--type', 'working', '--content', 'the nightly backup job writes to the s3 bucket', '--created-at', ago(0.2));
  const other = lethe(db, 'remember', '--type', 'semantic', '--content', 'backup restores are tested every quarter', '--importance', '0.9');
  const gone = lethe(db, 'remember', '--type', 'semantic', '--content', 'the nightly backup job used to write to a NAS');
  lethe(db, 'delete', gone.id, '--reason', 'outdated');
  const query = 'nightly backup job';
  const settings = lethe(db, 'settings');
  const w = settings.recall_weights ?? settings.settings?.recall_weights;
  assert.ok(w, 'the settings name the recall weights');

  const driver = await openApp(db);
  try {
    await nav(driver, 'recall');
    await byTestId(driver, 'recall-weight-recency', 15000);
    const before = Date.now();
    await typeQuery(driver, query);
    const win = await waitFor(async () => {
      const s = await shown(driver);
      return s.length >= 4 ? s : null;
    }, 15000, 'the results');
    const after = Date.now();
    const now = new Date((before + after) / 2).toISOString();
    const cli = lethe(db, '--now', now, 'recall', query, '--explain');
    assert.deepEqual(ids(win), cli.results.map((h) => h.id), 'the same results in the same order');
    assert.deepEqual(ids(win).slice(0, 3), [fresh.id, mid.id, old.id], 'recency orders the equal texts newest first');
    assert.ok(ids(win).includes(other.id));
    win.forEach((r, i) => {
      const b = cli.results[i].breakdown;
      for (const p of ['lexical', 'semantic', 'scene', 'priority']) {
        assert.equal(r.parts[p], b[p], `${p} of ${r.id} is the CLI's`);
      }
      // The window ranked at its own clock, the CLI at the middle of the time it took: R moves
      // by less than 1e-5 over that time.
      assert.ok(Math.abs(r.parts.recency - b.recency) < 1e-5, `recency of ${r.id}: ${r.parts.recency} vs ${b.recency}`);
      assert.ok(Math.abs(r.score - cli.results[i].score) < 1e-5, `score of ${r.id}`);
    });
    // Each bar is drawn, as long as its value is of its track (a stray global style once left
    // them 0 px high while the numbers showed).
    const drawn = JSON.parse(
      await driver.executeScript(`return JSON.stringify([...document.querySelectorAll('[data-testid^="recall-breakdown-"]')].map((b) => {
        const fill = b.children[1].firstElementChild.getBoundingClientRect(), track = b.children[1].getBoundingClientRect();
        return { value: Number(b.dataset.value || 0), fill: fill.width / track.width, high: fill.height };
      }))`),
    );
    assert.ok(drawn.length >= 5 * win.length, `${drawn.length} bars`);
    for (const d of drawn) {
      assert.ok(Math.abs(d.fill - d.value) <= 0.02, `a bar of value ${d.value} fills ${d.fill.toFixed(3)} of its track`);
      assert.ok(d.value === 0 || d.high >= 4, `a bar of value ${d.value} is ${d.high} px high`);
    }

    // The quarantined memory matches, and is declined with its reason.
    const declined = await waitFor(
      async () => (await driver.findElements(css(`[data-testid="recall-declined"][data-id="${gone.id}"]`)))[0],
      10000,
      'the quarantined memory under declined',
    );
    assert.equal(await declined.getAttribute('data-reason'), 'in quarantine');
    assert.equal(
      cli.declined.find((d) => d.id === gone.id)?.reason,
      'in quarantine',
      'the CLI declines it for the same reason',
    );

    // Recency 0: the window re-ranks at once, as the CLI does with the same weights.
    await setSlider(driver, 'recency', 0);
    const weights = `${w.similarity},0,${w.scene},${w.priority}`;
    const noRecency = lethe(db, 'recall', query, '--weights', weights).results.map((h) => h.id);
    assert.notDeepEqual(noRecency, ids(win), 'without recency the order changes');
    await waitFor(async () => JSON.stringify(ids(await shown(driver))) === JSON.stringify(noRecency), 10000, 'the order of --weights with recency 0');
    assert.deepEqual(ids(await shown(driver)).slice(0, 3), [old.id, mid.id, fresh.id], 'ties fall back to the order of writing');
  } finally {
    await closeApp(driver);
  }
});

test('a query that names a period shows it, and ranks the memory of that time first as the CLI does', { timeout: 120_000 }, async () => {
  const db = tempDb();
  const year = new Date().getUTCFullYear() - 1;
  const march = lethe(db, 'remember', '--type', 'episodic', '--content', 'rotated the vault tokens', '--created-at', `${year}-03-12T10:00:00Z`);
  const later = lethe(db, 'remember', '--type', 'episodic', '--content', 'rotated the vault tokens again', '--created-at', ago(1));
  const driver = await openApp(db);
  try {
    await nav(driver, 'recall');
    await byTestId(driver, 'recall-weight-recency', 15000);
    await typeQuery(driver, 'vault tokens rotated');
    await waitFor(async () => (await shown(driver))[0]?.id === later.id, 15000, 'the newest first without a period');
    assert.equal((await driver.findElements(css('[data-testid="recall-periods"]'))).length, 0, 'no period named');
    const query = `when were the vault tokens rotated in March ${year}?`;
    await typeQuery(driver, query);
    const said = await waitFor(async () => (await driver.findElements(css('[data-testid="recall-periods"]')))[0], 15000, 'the period shown');
    assert.match(await said.getText(), new RegExp(`March ${year}`));
    await waitFor(async () => (await shown(driver))[0]?.id === march.id, 15000, "March's memory first");
    const cli = lethe(db, 'recall', query, '--explain');
    assert.deepEqual(ids(await shown(driver)), cli.results.map((h) => h.id), 'the same order as the CLI');
    assert.equal(cli.periods[0].said, `March ${year}`);
    assert.equal((await shown(driver))[0].parts.scene, 1, 'dated inside the period: the whole context matches');
  } finally {
    await closeApp(driver);
  }
});

/** A minimal MCP client over stdio: newline-delimited JSON-RPC (as tests/e2e/load.test.mjs). */
function mcpClient(db, name) {
  const p = spawn(LETHE, ['--db', db, 'mcp'], { stdio: ['pipe', 'pipe', 'pipe'] });
  const pending = new Map();
  let nextId = 1;
  createInterface({ input: p.stdout }).on('line', (line) => {
    const msg = JSON.parse(line);
    const cb = pending.get(msg.id);
    if (cb) {
      pending.delete(msg.id);
      cb(msg);
    }
  });
  const request = (method, params) =>
    new Promise((resolve) => {
      const id = nextId++;
      pending.set(id, resolve);
      p.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    });
  return {
    async init() {
      await request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name, version: '1' } });
      p.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
    },
    async call(tool, args) {
      const r = await request('tools/call', { name: tool, arguments: args });
      assert.ok(!r.error && !r.result?.isError, JSON.stringify(r));
      return JSON.parse(r.result.content[0].text);
    },
    close() {
      p.stdin.end();
      return new Promise((r) => p.on('close', r));
    },
  };
}

test('a recall through lethe mcp by another process shows in the recall log within a second', { timeout: 120_000 }, async () => {
  const db = tempDb();
  const m = lethe(db, 'remember', '--type', 'semantic', '--content', 'grafana alerts route to the oncall channel');
  const driver = await openApp(db);
  const agent = mcpClient(db, 'e2e-agent');
  try {
    await nav(driver, 'recall');
    await byTestId(driver, 'recall-log-empty', 15000);
    await agent.init();
    const r = await agent.call('recall', { query: 'grafana alerts', project_id: 'ops' });
    assert.equal(r.results[0].id, m.id);
    const answered = Date.now();
    const row = await waitFor(
      async () => (await driver.findElements(css('[data-testid="recall-log-row"]')))[0],
      5000,
      'the recall in the log',
    );
    const elapsed = Date.now() - answered;
    assert.ok(elapsed <= 1000, `shown ${elapsed} ms after the agent's answer`);
    assert.equal(await row.getAttribute('data-actor'), 'agent:e2e-agent');
    const text = await row.getText();
    assert.match(text, /grafana alerts/);
    assert.match(text, /project ops/);
    // The window's own Recall view never logs.
    await typeQuery(driver, 'grafana alerts');
    await waitFor(async () => (await driver.findElements(css('[data-testid="recall-result"]'))).length === 1, 10000, 'the view ranked');
    await new Promise((res) => setTimeout(res, 500));
    assert.equal((await driver.findElements(css('[data-testid="recall-log-row"]'))).length, 1, 'the window logged nothing');
  } finally {
    await agent.close();
    await closeApp(driver);
  }
});
