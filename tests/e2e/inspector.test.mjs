// The inspector against the real window: live updates from another process, quarantine
// restore / hard delete, pinning, hostile content and the ForgetScore breakdown.
// Every test uses its own temp DB and its own app session (closeApp in finally).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { tempDb, lethe, openApp, closeApp, byTestId, waitFor, LETHE, css, rowSel, nav } from './harness.mjs';

const TEST_TIMEOUT = 60_000;

/** Runs the CLI without throwing: { status, json, stdout, stderr }. */
function letheRaw(db, ...args) {
  const r = spawnSync(LETHE, ['--db', db, ...args], { encoding: 'utf8' });
  let json = null;
  try {
    json = r.stdout.trim() ? JSON.parse(r.stdout) : null;
  } catch {
    /* not JSON */
  }
  return { status: r.status, json, stdout: r.stdout, stderr: r.stderr };
}

/** Runs the CLI asynchronously; resolves with the JSON output and the instant the process exited. */
function letheAsync(db, ...args) {
  return new Promise((resolve, reject) => {
    const p = spawn(LETHE, ['--db', db, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let exitedAt = 0;
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('exit', () => (exitedAt = Date.now()));
    p.on('error', reject);
    p.on('close', (code) => {
      if (code !== 0) reject(new Error(`lethe ${args.join(' ')} exited ${code}: ${err}`));
      else resolve({ json: JSON.parse(out), exitedAt });
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Opens the Memories view and selects the row of `id` (detail panel for that id loaded). */
async function selectMemory(driver, id) {
  await nav(driver, 'memories');
  const clickRow = async () => {
    const row = await waitFor(async () => (await driver.findElements(css(rowSel(id))))[0], 10000, `row ${id}`);
    await row.findElement(css('.preview')).click();
  };
  await clickRow();
  await waitFor(
    async () => {
      // textContent, not getText(): WebKitWebDriver returns '' for the ellipsised id heading.
      const t = await driver.executeScript(`return document.querySelector('[data-testid="memory-detail"] [data-testid="detail-id"]')?.textContent ?? null`);
      if (t !== null && t.trim() === id) return true;
      // A live update can reorder the rows between locating the row and the click landing
      // (the click then selects its neighbour): click the row again.
      if (t !== null) await clickRow();
      return false;
    },
    10000,
    `detail of ${id}`,
  );
  await byTestId(driver, 'forget-breakdown');
}

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

test('live update: a memory written by another process appears without a click', { timeout: TEST_TIMEOUT }, async () => {
  const db = tempDb();
  lethe(db, 'remember', '--type', 'semantic', '--content', 'seed memory so the DB exists');
  const driver = await openApp(db);
  try {
    await nav(driver, 'memories');
    await waitFor(async () => (await driver.findElements(css('[data-testid="memory-row"]'))).length === 1, 10000, 'seed row');
    // Also record, inside the page, when each row first enters the DOM (same wall clock as node):
    // a cross-check that the node-side polling does not inflate the numbers.
    await driver.executeScript(`
      window.__seen = {};
      const mark = () => {
        for (const el of document.querySelectorAll('[data-testid="memory-row"]')) {
          const id = el.getAttribute('data-id');
          if (!(id in window.__seen)) window.__seen[id] = Date.now();
        }
      };
      mark();
      new MutationObserver(mark).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-id'] });
    `);

    const N = 10;
    const lat = [];
    const domLat = [];
    for (let i = 0; i < N; i++) {
      const { json, exitedAt } = await letheAsync(db, 'remember', '--type', 'episodic', '--content', `live write #${i} at ${Date.now()}`);
      const sel = css(rowSel(json.id));
      let seenAt = 0;
      while (Date.now() - exitedAt < 10000) {
        if ((await driver.findElements(sel)).length) {
          seenAt = Date.now();
          break;
        }
        await sleep(15);
      }
      assert.ok(seenAt, `row ${json.id} (write #${i}) never appeared within 10 s`);
      lat.push(seenAt - exitedAt);
      const inPage = await driver.executeScript('return window.__seen[arguments[0]] ?? null', json.id);
      if (inPage) domLat.push(inPage - exitedAt);
      await sleep(150); // let any debounce window close so the writes are measured independently
    }
    const s = [...lat].sort((a, b) => a - b);
    const d = [...domLat].sort((a, b) => a - b);
    console.log(`live-update latency ms: p50=${pct(s, 50)} p95=${pct(s, 95)} max=${s[s.length - 1]} (n=${s.length}; all: ${lat.join(',')})`);
    if (d.length) console.log(`live-update latency ms (in-page DOM insertion): p50=${pct(d, 50)} p95=${pct(d, 95)} max=${d[d.length - 1]} (n=${d.length})`);
    assert.equal((await driver.findElements(css('[data-testid="memory-row"]'))).length, N + 1);
    assert.ok(pct(s, 95) <= 500, `p95 commit→visible latency ${pct(s, 95)} ms > 500 ms`);
  } finally {
    await closeApp(driver);
  }
});

test('restore from quarantine: the row\'s Restore button un-deletes the memory', { timeout: TEST_TIMEOUT }, async () => {
  const db = tempDb();
  lethe(db, 'remember', '--type', 'semantic', '--content', 'stays active');
  const m = lethe(db, 'remember', '--type', 'semantic', '--content', 'deleted then restored');
  lethe(db, 'delete', m.id);
  assert.equal(lethe(db, 'show', m.id).is_deleted, true);
  const driver = await openApp(db);
  try {
    await nav(driver, 'quarantine');
    const row = await waitFor(async () => (await driver.findElements(css(`[data-testid="quarantine-row"][data-id="${m.id}"]`)))[0], 10000, 'quarantine row');
    await (await row.findElement(css('[data-testid="restore-button"]'))).click();
    await waitFor(() => lethe(db, 'show', m.id).is_deleted === false, 10000, 'is_deleted false via CLI');
    await waitFor(async () => (await driver.findElements(css('[data-testid="quarantine-row"]'))).length === 0, 10000, 'quarantine row gone');
    assert.equal(lethe(db, 'show', m.id).is_deleted, false);
  } finally {
    await closeApp(driver);
  }
});

test('pin: selecting a memory and clicking Pin pins it in the database', { timeout: TEST_TIMEOUT }, async () => {
  const db = tempDb();
  const m = lethe(db, 'remember', '--type', 'semantic', '--content', 'Pin me please');
  lethe(db, 'remember', '--type', 'semantic', '--content', 'Leave me alone');
  assert.equal(lethe(db, 'show', m.id).pinned, false);
  const driver = await openApp(db);
  try {
    await selectMemory(driver, m.id);
    const pin = await byTestId(driver, 'pin-button');
    assert.equal(await pin.getAttribute('aria-pressed'), 'false');
    await pin.click();
    await waitFor(() => lethe(db, 'show', m.id).pinned === true, 10000, 'pinned true via CLI');
    await waitFor(async () => (await (await byTestId(driver, 'pin-button')).getAttribute('aria-pressed')) === 'true', 10000, 'pin button pressed');
    const other = lethe(db, 'list').items.find((x) => x.id !== m.id);
    assert.equal(other.pinned, false, 'only the selected memory is pinned');
  } finally {
    await closeApp(driver);
  }
});

test('delete forever asks for confirmation, removes the memory and keeps a hard event', { timeout: TEST_TIMEOUT }, async () => {
  const db = tempDb();
  const m = lethe(db, 'remember', '--type', 'episodic', '--content', 'Delete me forever');
  lethe(db, 'delete', m.id);
  const driver = await openApp(db);
  try {
    await nav(driver, 'quarantine');
    const row = await waitFor(async () => (await driver.findElements(css(`[data-testid="quarantine-row"][data-id="${m.id}"]`)))[0], 10000, 'quarantine row');
    await (await row.findElement(css('[data-testid="hard-delete-button"]'))).click();
    const dialog = await byTestId(driver, 'confirm-dialog', 5000);
    assert.equal((await (await byTestId(driver, 'confirm-id')).getText()).trim(), m.id, 'dialog names the memory');
    // Nothing is deleted before confirming.
    assert.equal(letheRaw(db, 'show', m.id).status, 0);
    await (await dialog.findElement(css('[data-testid="confirm-yes"]'))).click();
    await waitFor(() => letheRaw(db, 'show', m.id).status === 4, 10000, '`lethe show` exit code 4');
    const shown = letheRaw(db, 'show', m.id);
    assert.equal(shown.status, 4, `show exit code (stderr: ${shown.stderr})`);
    await waitFor(async () => (await driver.findElements(css('[data-testid="confirm-dialog"]'))).length === 0, 5000, 'dialog closed');
    await waitFor(async () => (await driver.findElements(css('[data-testid="quarantine-row"]'))).length === 0, 10000, 'quarantine row gone');
    const evs = lethe(db, 'events', '--memory', m.id).items;
    assert.ok(evs.some((e) => e.action === 'hard'), `a hard event remains: ${JSON.stringify(evs.map((e) => e.action))}`);
  } finally {
    await closeApp(driver);
  }
});

test('hostile content, tags and workflow names render as literal text', { timeout: TEST_TIMEOUT }, async () => {
  const db = tempDb();
  const payload = '<img src=x onerror=alert(1)>';
  const tag = '<script>alert(2)</script>';
  const wfName = '<script>alert(3)</script><img src=x onerror=alert(4)>';
  lethe(db, 'remember', '--type', 'semantic', '--content', 'harmless seed');
  const driver = await openApp(db);
  const noInjectedMarkup = async (where) => {
    const imgs = await driver.executeScript(
      `return [...document.querySelectorAll('img')].filter((i) => i.getAttribute('src') === 'x').length`,
    );
    assert.equal(imgs, 0, `${where}: no <img src=x> element`);
    const scripts = await driver.executeScript(
      `return [...document.querySelectorAll('script')].filter((s) => s.textContent.includes('alert(')).length`,
    );
    assert.equal(scripts, 0, `${where}: no injected <script>`);
    // WebKitWebDriver does not report the webview's alert() as a user prompt (measured: a
    // real alert() still gives NoSuchAlertError), so the hooks below are the real check.
    await assert.rejects(async () => driver.switchTo().alert(), undefined, `${where}: no alert is open`);
    const calls = await driver.executeScript('return window.__dialogCalls');
    assert.deepEqual(calls, [], `${where}: alert/confirm/prompt never called`);
  };
  try {
    await nav(driver, 'memories');
    await waitFor(async () => (await driver.findElements(css('[data-testid="memory-row"]'))).length === 1, 10000, 'seed row');
    // Record any dialog call from now on, then let the hostile memories arrive by live update.
    await driver.executeScript(`
      window.__dialogCalls = [];
      for (const f of ['alert', 'confirm', 'prompt']) window[f] = (m) => { window.__dialogCalls.push(f + ':' + m); };
    `);
    const m = lethe(db, 'remember', '--type', 'semantic', '--content', payload, '--tags', `${tag},plain`);
    lethe(db, 'remember', '--type', 'procedural', '--content', `procedure ${payload}`,
      '--task-goal', `goal ${payload}`, '--steps', JSON.stringify([`step one ${payload}`, tag]), '--workflow-name', wfName, '--skill-name', tag);

    // Both hostile memories arrive by live update before anything is clicked.
    await waitFor(async () => (await driver.findElements(css('[data-testid="memory-row"]'))).length === 3, 10000, 'hostile rows');
    await selectMemory(driver, m.id);
    const content = await byTestId(driver, 'memory-content');
    assert.equal((await driver.executeScript('return arguments[0].textContent', content)).trim(), payload);
    const tags = await driver.executeScript(
      `return [...document.querySelectorAll('[data-testid="memory-detail"] .tag')].map((t) => t.textContent)`,
    );
    assert.ok(tags.includes(tag), `tag rendered literally: ${JSON.stringify(tags)}`);
    const preview = await driver.findElement(css(`${rowSel(m.id)} .preview`));
    assert.equal((await driver.executeScript('return arguments[0].textContent', preview)).trim(), payload);
    await noInjectedMarkup('memories view');

    await nav(driver, 'workflows');
    await byTestId(driver, 'workflow-row');
    const h2 = await waitFor(async () => (await driver.findElements(css('.wf-detail h2')))[0], 10000, 'workflow detail');
    const title = await driver.executeScript('return arguments[0].textContent', h2);
    assert.ok(title.includes(wfName), `workflow name rendered literally: ${title}`);
    const group = await driver.executeScript(`return document.querySelector('[data-testid="workflow-group"] h3').textContent`);
    assert.equal(group.trim(), wfName);
    const steps = await driver.executeScript(`return [...document.querySelectorAll('[data-testid="proc-steps-list"] li')].map((l) => l.textContent)`);
    assert.deepEqual(steps.map((x) => x.trim()), [`step one ${payload}`, tag]);
    await noInjectedMarkup('workflows view');
    // Give a would-be onerror handler a moment, then check again.
    await sleep(300);
    await noInjectedMarkup('workflows view (later)');
  } finally {
    await closeApp(driver);
  }
});

test('the ForgetScore breakdown shows exactly the CLI\'s components', { timeout: TEST_TIMEOUT }, async () => {
  const db = tempDb();
  const old = new Date(Date.now() - 40 * 86_400_000).toISOString();
  lethe(db, 'remember', '--type', 'semantic', '--content', 'The staging cluster runs in eu-west-1 on three nodes', '--created-at', old);
  // Old, important, pinned and cited: most components are non-zero. (The CLI off a terminal is
  // an agent, which may not write a pinned memory: it writes the memory, then pins it.)
  const m = lethe(db, 'remember', '--type', 'semantic', '--content', 'The staging cluster runs in eu-west-1 with three worker nodes',
    '--created-at', old, '--importance', '0.8');
  lethe(db, 'pin', m.id);
  lethe(db, 'cite', m.id);
  const driver = await openApp(db);
  try {
    await selectMemory(driver, m.id);
    const parts = ['recency', 'usage', 'duplication', 'importance', 'pinned'];
    const ui = {};
    for (const k of parts) ui[k] = Number(await (await byTestId(driver, `breakdown-${k}`)).getAttribute('data-value'));
    const uiScore = Number(await (await byTestId(driver, 'forget-score')).getAttribute('data-value'));
    const cli = lethe(db, 'show', m.id);
    const tol = 1e-6;
    for (const k of parts) {
      assert.ok(Number.isFinite(ui[k]), `breakdown-${k} data-value is a number`);
      assert.ok(Math.abs(ui[k] - cli.components[k]) <= tol, `${k}: UI ${ui[k]} vs CLI ${cli.components[k]}`);
    }
    assert.ok(Math.abs(uiScore - cli.forget_score) <= tol, `forget_score: UI ${uiScore} vs CLI ${cli.forget_score}`);
    console.log(`breakdown UI=${JSON.stringify({ ...ui, score: uiScore })} CLI=${JSON.stringify({ ...cli.components, score: cli.forget_score })}`);
  } finally {
    await closeApp(driver);
  }
});
