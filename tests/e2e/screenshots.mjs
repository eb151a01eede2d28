// README screenshots of the real window on a demo database (not part of the test suite).
//   cd tests/e2e && xvfb-run -a -s "-screen 0 1400x900x24" node screenshots.mjs
// Writes docs/screenshots/{overview,connect,memory-detail,quarantine,workflows,decay,what-if,recall,duplicates}.png.
// SHOTS=connect,overview takes only those (LETHE_APP=/usr/bin/lethe-app: the installed one).
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDb, lethe, openApp, closeApp, byTestId, waitFor, css, nav } from './harness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const OUT = path.join(root, 'docs/screenshots');

/** Waits for fonts and two animation frames (a WebDriver screenshot can be one paint behind). */
async function settle(driver) {
  await driver.executeAsyncScript(`
    const done = arguments[arguments.length - 1];
    (document.fonts ? document.fonts.ready : Promise.resolve()).then(() =>
      requestAnimationFrame(() => requestAnimationFrame(() => done())));
  `);
}

const SHOTS = process.env.SHOTS ? process.env.SHOTS.split(',') : null;

async function shot(driver, name) {
  if (SHOTS && !SHOTS.includes(name)) return;
  // No stray focus ring or hover state in the picture.
  await driver.executeScript('document.activeElement && document.activeElement.blur && document.activeElement.blur()');
  await settle(driver);
  const file = path.join(OUT, `${name}.png`);
  // WebKitWebDriver's screenshot never answers on some views (the Quarantine, every time in
  // 2026-12): after 20 s the picture is taken from the X display instead (ImageMagick's
  // `import`; the window sits at the display's top left, no window manager under Xvfb).
  const timeout = new Promise((resolve) => setTimeout(() => resolve(null), 20000));
  const png = await Promise.race([driver.takeScreenshot(), timeout]);
  if (png) writeFileSync(file, png, 'base64');
  else {
    const { width, height } = await driver.manage().window().getRect();
    execFileSync('import', ['-window', 'root', '-crop', `${width}x${height}+0+0`, file]);
    console.log(`  (${name}: WebDriver's screenshot did not answer; taken from the X display)`);
  }
  const err = await driver.executeScript(`return document.querySelector('.banner.error')?.textContent ?? null`);
  console.log(`${file}${err ? `  (error banner: ${err.trim()})` : ''}`);
}

/** Charts are SVG data-URL <img>s: loaded and decoded. */
const chartReady = (driver, sel) =>
  driver.executeScript(`const i = document.querySelector(arguments[0]); return !!(i && i.complete && i.naturalWidth > 0)`, sel);

const text = (driver, sel) => driver.executeScript(`return document.querySelector(arguments[0])?.textContent ?? ''`, sel);

const db = tempDb('demo.db');
console.log('demo:', JSON.stringify(lethe(db, 'demo')));
mkdirSync(OUT, { recursive: true });

const driver = await openApp(db);
try {
  // Overview: wait until the tier counts are loaded.
  await nav(driver, 'overview');
  const semantic = await byTestId(driver, 'tier-count-semantic', 15000);
  await waitFor(async () => Number((await semantic.getText()).trim()) > 0, 15000, 'overview counts');
  await shot(driver, 'overview');

  // Connect an agent, after a successful connection test.
  if (!SHOTS || SHOTS.includes('connect')) {
    await (await byTestId(driver, 'file-menu')).click();
    await (await byTestId(driver, 'menu-connect')).click();
    await (await byTestId(driver, 'connect-test', 10000)).click();
    await byTestId(driver, 'connect-test-result', 20000);
    await shot(driver, 'connect');
    await (await byTestId(driver, 'connect-agent-close')).click();
  }

  // Memories with a row selected: prefer a visible row whose breakdown has several non-zero parts.
  await nav(driver, 'memories');
  await waitFor(async () => (await driver.findElements(css('[data-testid="memory-row"]'))).length > 5, 15000, 'memory rows');
  const ids = await driver.executeScript(
    `return [...document.querySelectorAll('[data-testid="memory-row"]')].slice(0, 14).map((r) => r.getAttribute('data-id'))`,
  );
  const nonZero = (d) => Object.values(d.components).filter((v) => Math.abs(v) > 1e-3).length;
  const details = ids.map((id) => lethe(db, 'show', id)).filter((d) => !d.is_deleted && d.type !== 'procedural');
  details.sort((a, b) => nonZero(b) - nonZero(a) || (b.components.duplication > 0) - (a.components.duplication > 0));
  const pick = details[0];
  console.log(`memory-detail: ${pick.id} (${pick.type}) components=${JSON.stringify(pick.components)}`);
  await (await driver.findElement(css(`[data-testid="memory-row"][data-id="${pick.id}"] .preview`))).click();
  await waitFor(async () => (await text(driver, '[data-testid="memory-detail"] [data-testid="detail-id"]')).trim() === pick.id, 10000, 'detail');
  await byTestId(driver, 'forget-breakdown');
  await waitFor(async () => await chartReady(driver, '[data-testid="memory-detail"] [data-testid="chart"]'), 10000, 'projection chart').catch(
    () => console.log('  (no projection chart appeared)'),
  );
  await shot(driver, 'memory-detail');

  // Quarantine.
  await nav(driver, 'quarantine');
  await byTestId(driver, 'quarantine-row', 15000);
  // Three rows selected (click, shift-click): the bar with "Restore selected" shows.
  await driver.executeScript(`
    const rows = [...document.querySelectorAll('[data-testid="quarantine-row"] .preview')];
    if (rows.length >= 3) {
      rows[0].dispatchEvent(new MouseEvent('click', { bubbles: true }));
      rows[2].dispatchEvent(new MouseEvent('click', { bubbles: true, shiftKey: true }));
    }`);
  await byTestId(driver, 'quarantine-bulk-bar', 5000).catch(() => console.log('  (no selection bar)'));
  await shot(driver, 'quarantine');

  // Workflows: select a workflow that has reflection notes.
  await nav(driver, 'workflows');
  await byTestId(driver, 'workflow-row', 15000);
  const rows = await driver.findElements(css('[data-testid="workflow-row"]'));
  let withNotes = false;
  for (const r of rows) {
    await r.click();
    withNotes = await waitFor(async () => (await driver.findElements(css('[data-testid="reflection-note"]'))).length > 0, 3000, 'notes')
      .then(() => true)
      .catch(() => false);
    if (withNotes) break;
  }
  if (!withNotes) console.log('  (no workflow with reflection notes found)');
  await shot(driver, 'workflows');

  // Decay: wait for the chart.
  await nav(driver, 'decay');
  await byTestId(driver, 'time-slider', 15000);
  await waitFor(async () => await chartReady(driver, '[data-testid="chart"]'), 15000, 'decay chart').catch(
    () => console.log('  (no decay chart appeared)'),
  );
  await shot(driver, 'decay');

  // What-if: a shorter episodic half-life and a lower threshold, previewed (not applied).
  const setNumber = async (id, v) =>
    driver.executeScript(
      `const el = arguments[0]; el.value = arguments[1]; el.dispatchEvent(new Event('input', { bubbles: true }));`,
      await byTestId(driver, id),
      String(v),
    );
  await setNumber('half-life-episodic', 14);
  await setNumber('threshold', 0.55);
  await (await byTestId(driver, 'what-if-run')).click();
  await byTestId(driver, 'what-if-proposed', 15000);
  await driver.executeScript(`document.querySelector('[data-testid="what-if"]').scrollIntoView({ block: 'start' })`);
  await shot(driver, 'what-if');

  // Recall: a query with results and something declined.
  await nav(driver, 'recall');
  await byTestId(driver, 'recall-weight-recency', 15000);
  await driver.executeScript(
    'const q = arguments[0]; q.value = arguments[1]; q.dispatchEvent(new Event("input", { bubbles: true }));',
    await byTestId(driver, 'recall-query'),
    process.env.RECALL_QUERY ?? 'deploy rollback',
  );
  await byTestId(driver, 'recall-result', 15000);
  await shot(driver, 'recall');

  // Duplicates: the clusters of the demo data, the first in focus.
  await nav(driver, 'duplicates');
  await waitFor(async () => (await driver.findElements(css('[data-testid="duplicate-cluster"], [data-testid="duplicates-empty"]'))).length > 0, 30000, 'duplicates');
  await shot(driver, 'duplicates');
} finally {
  await closeApp(driver);
}
