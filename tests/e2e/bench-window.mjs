// Window latencies with the real app, measured with the DOM: launch to the
// Overview filled (its counts, its at-risk list and its health lists painted), Memories to
// first rows, scroll pages far down the virtualised list, opening memories (detail and
// ForgetScore breakdown painted), the Decay view's charts, a what-if (a changed proposal to
// its counts and charts painted), agent commit (CLI in another process) to the row visible
// (p50/p95 over 20 writes), the app's idle CPU over 10 s, Workflows to its list painted, and
// Quarantine to its rows painted after a forget run (`lethe forget` in another process, so
// the figures before it are those of the whole store). Not part of `make test`:
// `make bench-window`.
//   xvfb-run -a -s "-screen 0 1280x800x24" node bench-window.mjs [N] [--app PATH]
// BENCH_WORKLOAD=reference|realistic builds the store with `lethe-bench --make-db` (the engine's
// generators, ages counted back from now; LETHE_BENCH is its path); unset, the script's own
// reference-like JSONL is imported as before. One `lethe stats` runs on the file before the
// launch: the first read of a fresh store computes every memory's neighbour list, which a
// real user's store already has.
//
// Timing: each in-window measure runs as one script in the page that starts the clock
// (performance.now()), does the action (a click, a scroll, an input) and polls the DOM until
// the condition holds, then waits for the next animation frame (the frame that paints it).
// Launch is measured from before the WebDriver session starts; the app's own part is split
// out with the app process's start time (/proc) and the page's navigation start
// (performance.timeOrigin).
import { spawn, execFileSync } from 'node:child_process';
import { writeFileSync, readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { tempDb, openApp, closeApp, byTestId, waitFor, By, LETHE, APP } from './harness.mjs';

const N = Number(process.argv[2] ?? 100000);
const WORKLOAD = process.env.BENCH_WORKLOAD || '';
const LETHE_BENCH = process.env.LETHE_BENCH ?? path.join(path.dirname(LETHE), 'lethe-bench');
if (WORKLOAD && !['reference', 'realistic'].includes(WORKLOAD)) {
  throw new Error(`BENCH_WORKLOAD must be reference or realistic, not ${WORKLOAD}`);
}

function lcg(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

function buildDb(n) {
  if (WORKLOAD) {
    const db = tempDb(`bench-${WORKLOAD}-${n}.db`);
    execFileSync(LETHE_BENCH, ['--make-db', db, '--workload', WORKLOAD, '--sizes', String(n), '--now', new Date().toISOString()], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    return db;
  }
  const db = tempDb(`bench-${n}.db`);
  const rnd = lcg(42);
  const words = 'react hooks state effect typescript generics docker container kubernetes deploy sqlite index query vector embedding search ranking memory agent recall forget decay schedule review cache latency throughput rust tauri desktop inspector procedure workflow skill trigger reflection version conflict migration backup token budget prompt injection session project owner relation graph anchor semantic episodic procedural working python java golang compiler parser lexer network socket http json schema validation error retry timeout'.split(' ');
  const tiers = ['working', 'episodic', 'episodic', 'semantic', 'semantic', 'procedural'];
  const now = Date.now();
  const lines = [];
  for (let i = 0; i < n; i++) {
    const len = 8 + Math.floor(rnd() * 12);
    const content = Array.from({ length: len }, () => words[Math.floor(rnd() * words.length)]).join(' ') + ` note ${i}`;
    const age = Math.floor(rnd() * 365);
    const created = new Date(now - age * 86400000).toISOString();
    lines.push(JSON.stringify({
      id: `mem_bench${String(i).padStart(7, '0')}`, type: tiers[Math.floor(rnd() * tiers.length)], content,
      importance: Math.round(rnd() * 100) / 100, privacy_scope: 'private', created_at: created, last_accessed: null,
      pinned: false, tags: [words[Math.floor(rnd() * 60)]], source: null, view_count: Math.floor(rnd() * 5), cite_count: 0,
      edit_count: 0, task_goal: null, steps: null, reflection_notes: null, workflow_name: null, skill_name: null,
      trigger_conditions: null, version: 1, owner_id: null, session_id: null, project_id: null, is_deleted: false, deleted_at: null,
    }));
  }
  const file = db.replace(/\.db$/, '.jsonl');
  writeFileSync(file, lines.join('\n') + '\n');
  execFileSync(LETHE, ['--db', db, 'import', file]);
  return db;
}

const HZ = 100;
function cpuTicks(pid) {
  // utime + stime of the app and every descendant (WebKit's web and network processes).
  let total = 0;
  const kids = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      kids.set(Number(d), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) });
    } catch { /* gone */ }
  }
  const stack = [pid];
  while (stack.length) {
    const p = stack.pop();
    total += kids.get(p)?.ticks ?? 0;
    for (const [k, v] of kids) if (v.ppid === p) stack.push(k);
  }
  return total;
}

function appPid() {
  const out = execFileSync('pgrep', ['-f', path.basename(APP)], { encoding: 'utf8' }).trim().split('\n');
  return Number(out[0]);
}

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)];
const r1 = (x) => Math.round(x * 10) / 10;
const summary = (xs) => ({ p50: r1(pct(xs, 50)), max: r1(Math.max(...xs)), samples: xs.map(r1) });

/** When process `pid` started, in epoch ms (clock ticks since boot, mapped with /proc/uptime). */
function processStartEpoch(pid) {
  const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const startTicks = Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[19]);
  const uptime = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
  return Date.now() - (uptime - startTicks / 100) * 1000;
}

// Runs in the page: `act` (a function body) starts the measure, `cond` (a function body
// returning truthy) ends it; the result is the time to the animation frame after `cond`
// first held, in ms, or an error. Everything is source text: the page evaluates it as one
// WebDriver script (no eval inside the page, whatever its CSP says).
function pageScript(act, cond, timeoutMs) {
  return `
    const done = arguments[arguments.length - 1];
    const act = () => { ${act} };
    const cond = () => { ${cond} };
    const t0 = performance.now();
    try { act(); } catch (e) { done({ error: 'action: ' + e }); return; }
    const tick = () => {
      let ok = false;
      try { ok = !!cond(); } catch (e) { ok = false; }
      if (ok) {
        const t1 = performance.now();
        // The frame that paints it; without frames (a hidden window) take the DOM time.
        let fired = false;
        requestAnimationFrame(() => { fired = true; done({ ms: performance.now() - t0, dom_ms: t1 - t0 }); });
        setTimeout(() => { if (!fired) done({ ms: t1 - t0, dom_ms: t1 - t0, no_frame: true }); }, 500);
        return;
      }
      if (performance.now() - t0 > ${timeoutMs}) { done({ error: 'timeout' }); return; }
      setTimeout(tick, 2);
    };
    tick();`;
}

async function timed(driver, what, act, cond, timeoutMs = 60000) {
  const r = await driver.executeAsyncScript(pageScript(act, cond, timeoutMs));
  if (!r || r.error) throw new Error(`${what}: ${r?.error ?? 'no answer'}`);
  return r.ms;
}

// Conditions, as page source.
const q = (sel) => `document.querySelector('${sel}')`;
const qa = (sel) => `document.querySelectorAll('${sel}')`;
const T = (id) => `[data-testid="${id}"]`;
const OVERVIEW_FILLED = `
  const text = (id) => (document.querySelector('[data-testid="' + id + '"]')?.textContent ?? '').trim();
  const counts = ['working', 'episodic', 'semantic', 'procedural'].every((t) => /\\d/.test(text('tier-count-' + t)));
  const atRisk = /\\d/.test(text('next-run-count'));
  const list = ${q(T('at-risk-list'))};
  const riskList = !!list && !list.querySelector('${T('view-loading')}') && list.children.length > 0;
  const health = ${qa(T('health-list'))}.length === 4;
  return counts && atRisk && riskList && health;`;
const ROWS_PAINTED = `return ${qa(T('memory-row'))}.length > 0 && !${q('.memories ' + T('view-loading'))};`;
// Every row in the scroller's viewport is a real row (no placeholder) and the target row is there.
const viewportFilled = (index) => `
  const sc = ${q(T('memory-table'))};
  if (!sc) return false;
  if (!document.querySelector('[data-testid="memory-row"][aria-rowindex="${index + 1}"]')) return false;
  const top = sc.getBoundingClientRect().top, bottom = top + sc.clientHeight;
  for (const p of ${qa(T('memory-row-placeholder'))}) {
    const r = p.getBoundingClientRect();
    if (r.bottom > top && r.top < bottom) return false;
  }
  return true;`;
const detailPainted = (id) => `
  const d = ${q(T('memory-detail'))};
  if (!d) return false;
  const shown = d.querySelector('${T('detail-id')}')?.textContent?.trim();
  const score = d.querySelector('${T('forget-breakdown')} ${T('forget-score')}');
  return shown === '${id}' && !!score && d.querySelectorAll('${T('forget-breakdown')} .bar-row').length >= 6;`;
const imgsPainted = (sel, n) => `
  const imgs = [...document.querySelectorAll('${sel}')];
  return imgs.length >= ${n} && imgs.every((i) => i.complete && i.naturalWidth > 0);`;
const DECAY_CHARTS = `return !!${q('.decay')} && (() => { ${imgsPainted('.decay > section.card img[data-testid="chart"]', 2)} })();`;

const t0 = Date.now();
const db = buildDb(N);
console.log(`built ${N} ${WORKLOAD || 'script-reference'} memories in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
// A real store already holds every memory's neighbour list; a fresh one computes them on its
// first read. That first read happens here, not in the window.
const s0 = Date.now();
execFileSync(LETHE, ['--db', db, 'stats'], { stdio: ['ignore', 'ignore', 'inherit'] });
const firstStatsMs = Date.now() - s0;
console.log(`one \`lethe stats\` before the launch (stores every memory's neighbour list): ${firstStatsMs} ms`);

const launch = Date.now();
const driver = await openApp(db);
const result = {
  n: N,
  workload: WORKLOAD || 'script-reference',
  app: APP,
  loadavg_at_start: os.loadavg().map((x) => r1(x)),
  first_lethe_stats_ms: firstStatsMs,
};
try {
  await driver.manage().setTimeouts({ script: 120000 });
  const sessionAt = Date.now();
  // Overview filled: counts, at-risk list and health lists painted (polled in the page).
  const filled = await driver.executeAsyncScript(`
    const done = arguments[arguments.length - 1];
    const cond = () => { ${OVERVIEW_FILLED} };
    const tick = () => {
      let ok = false;
      try { ok = cond(); } catch { ok = false; }
      if (ok) { requestAnimationFrame(() => done({ at: performance.timeOrigin + performance.now(), origin: performance.timeOrigin, since_origin: performance.now() })); return; }
      if (performance.now() > 120000) { done({ error: 'timeout' }); return; }
      setTimeout(tick, 2);
    };
    tick();`);
  if (!filled || filled.error) throw new Error(`overview: ${filled?.error}`);
  const pid = appPid();
  const procStart = processStartEpoch(pid);
  result.launch_to_overview_filled_ms = Math.round(filled.at - launch);
  result.launch = {
    webdriver_session_ms: sessionAt - launch,
    launch_to_app_process_ms: Math.round(procStart - launch),
    app_process_to_page_start_ms: Math.round(filled.origin - procStart),
    page_start_to_overview_filled_ms: Math.round(filled.since_origin),
    app_process_to_overview_filled_ms: Math.round(filled.at - procStart),
  };

  // Memories → first rows (the first visit, then four more visits from the Overview).
  const memories = [];
  const firstRows = await timed(driver, 'first rows', `${q(T('nav-memories'))}.click();`, ROWS_PAINTED);
  memories.push(firstRows);
  const firstRowsAt = Date.now();
  result.launch_to_first_rows_ms = Math.round(filled.at - launch + firstRows);
  result.app_process_to_first_rows_ms = Math.round(filled.at - procStart + firstRows);
  void firstRowsAt;
  for (let i = 0; i < 4; i++) {
    await timed(driver, 'overview', `${q(T('nav-overview'))}.click();`, OVERVIEW_FILLED);
    memories.push(await timed(driver, 'rows', `${q(T('nav-memories'))}.click();`, ROWS_PAINTED));
  }
  result.memories_click_to_first_rows_ms = summary(memories);

  // Scroll pages far down (each an unloaded page), and open one memory in each.
  const total = await driver.executeScript(`return Number(${q(T('memory-table'))}.getAttribute('aria-rowcount'));`);
  const scrolls = [];
  const opens = [];
  const marks = [0.21, 0.43, 0.62, 0.84, 0.97];
  for (const m of marks) {
    const index = Math.floor(total * m);
    scrolls.push(
      await timed(
        driver,
        `scroll to ${index}`,
        `const sc = ${q(T('memory-table'))}; sc.scrollTop = ${index} * 32; sc.dispatchEvent(new Event('scroll'));`,
        viewportFilled(index),
      ),
    );
    const id = await driver.executeScript(`return document.querySelector('[data-testid="memory-row"][aria-rowindex="${index + 3}"]')?.dataset.id;`);
    if (!id) throw new Error(`no row ${index + 3} to open`);
    opens.push(
      await timed(driver, `open ${id}`, `document.querySelector('[data-testid="memory-row"][data-id="${id}"]').click();`, detailPainted(id)),
    );
  }
  result.rows_total = total;
  result.scroll_page_ms = summary(scrolls);
  result.open_memory_ms = summary(opens);

  // Decay view → its charts painted (from the Audit log, five times).
  const decay = [];
  for (let i = 0; i < 5; i++) {
    await timed(driver, 'audit', `${q(T('nav-audit'))}.click();`, `return !${q('.decay')};`);
    decay.push(await timed(driver, 'decay charts', `${q(T('nav-decay'))}.click();`, DECAY_CHARTS));
  }
  result.decay_charts_ms = summary(decay);

  // What-if: a changed proposal (threshold and a half-life) → Preview → counts and both
  // proposed charts painted, each for the new proposal (the charts' images change).
  await waitFor(async () => (await driver.findElements(By.css(T('threshold')))).length > 0, 30000, 'what-if form');
  const whatIf = [];
  const proposals = [
    [0.55, 150],
    [0.65, 120],
    [0.52, 200],
    [0.7, 90],
    [0.58, 170],
    [0.62, 140],
  ];
  for (const [k, [th, hl]] of proposals.entries()) {
    const ms = await timed(
      driver,
      'what-if',
      `
        window.__whatIfBefore = [...document.querySelectorAll('${T('what-if-charts')} img')].map((i) => i.src);
        const set = (id, v) => { const e = document.querySelector('[data-testid="' + id + '"]'); e.value = String(v); e.dispatchEvent(new Event('input', { bubbles: true })); };
        set('threshold', ${th});
        set('half-life-semantic', ${hl});
        document.querySelector('${T('what-if-run')}').click();`,
      `
        if (document.querySelector('${T('what-if-stale')}')) return false;
        if (!/\\d/.test(document.querySelector('${T('what-if-proposed')}')?.textContent ?? '')) return false;
        const imgs = [...document.querySelectorAll('${T('what-if-charts')} img')];
        if (imgs.length < 2 || !imgs.every((i) => i.complete && i.naturalWidth > 0)) return false;
        const before = window.__whatIfBefore;
        return imgs.every((i, j) => before[j] === undefined || before[j] !== i.src);`,
    );
    // The first preview also fills the form's first result; count it like the others.
    whatIf.push(ms);
    void k;
  }
  result.what_if_ms = summary(whatIf);

  // Idle CPU: nothing happens for 10 s (before the agent writes below, whose follow-up work
  // is measured on its own).
  await new Promise((r) => setTimeout(r, 2000));
  const c0 = cpuTicks(pid);
  await new Promise((r) => setTimeout(r, 10000));
  result.idle_cpu_percent_of_one_core = Math.round(((cpuTicks(pid) - c0) / HZ / 10) * 1000) / 10;

  // Agent writes from another process → row visible (newest first, so new rows are on top).
  await (await byTestId(driver, 'nav-memories')).click();
  await waitFor(async () => (await driver.findElements(By.css('[data-testid="memory-row"]'))).length > 0, 60000, 'rows again');
  const sortSel = await byTestId(driver, 'sort-select');
  await driver.executeScript(`const s = arguments[0]; s.value = 'created'; s.dispatchEvent(new Event('change', { bubbles: true }));`, sortSel);
  await new Promise((r) => setTimeout(r, 1500));
  const lat = [];
  for (let i = 0; i < 20; i++) {
    const out = await new Promise((resolve, reject) => {
      const p = spawn(LETHE, ['--db', db, '--actor', 'agent:bench', 'remember', '--type', 'semantic', '--content', `bench live write ${i} ${Date.now()}`]);
      let s = '';
      p.stdout.on('data', (d) => (s += d));
      p.on('close', (code) => (code === 0 ? resolve({ id: JSON.parse(s).id, at: Date.now() }) : reject(new Error(`exit ${code}`))));
    });
    await waitFor(async () => (await driver.findElements(By.css(`[data-testid="memory-row"][data-id="${out.id}"]`))).length > 0, 10000, `row ${out.id}`);
    lat.push(Date.now() - out.at);
  }
  result.agent_write_visible_ms = { p50: pct(lat, 50), p95: pct(lat, 95), max: Math.max(...lat), samples: lat.length };

  // The work the writes left behind: CPU over the 10 s after the last row showed (each
  // change re-reads the views that show it).
  await new Promise((r) => setTimeout(r, 2000));
  const a0 = cpuTicks(pid);
  await new Promise((r) => setTimeout(r, 10000));
  result.cpu_percent_of_one_core_after_writes = Math.round(((cpuTicks(pid) - a0) / HZ / 10) * 1000) / 10;

  // Workflows → its list painted with its count (from the Overview, five times).
  const WORKFLOWS_PAINTED = `
    const c = ${q(T('workflow-count'))}?.textContent ?? '';
    if (!/\\d/.test(c)) return false;
    return c.trim() === '0' || ${qa(T('workflow-row'))}.length > 0;`;
  // From the Audit log (a light view), as the Decay view is measured.
  const workflows = [];
  for (let i = 0; i < 5; i++) {
    await timed(driver, 'audit', `${q(T('nav-audit'))}.click();`, `return !${q('.workflows')};`);
    workflows.push(await timed(driver, 'workflows', `${q(T('nav-workflows'))}.click();`, WORKFLOWS_PAINTED));
  }
  result.workflows_count = Number((await driver.executeScript(`return ${q(T('workflow-count'))}.textContent;`)).replace(/\D/g, ''));
  result.workflows_click_to_list_ms = summary(workflows);

  // Quarantine: a forget run from the command line (another process) quarantines what the
  // policy forgets, as a person's "Run forget" would; once the window has seen it, Quarantine
  // → its rows and count painted (from the Overview, five times).
  const f0 = Date.now();
  const forget = JSON.parse(execFileSync(LETHE, ['--db', db, 'forget'], { encoding: 'utf8', maxBuffer: 1 << 30 }));
  result.forget_run = { soft_deleted: forget.soft_deleted.length, working_gate: forget.working_gate.length, ms: Date.now() - f0 };
  const inQuarantine = JSON.parse(execFileSync(LETHE, ['--db', db, 'stats'], { encoding: 'utf8' })).total_quarantined;
  result.quarantined = inQuarantine;
  // The window re-reads what the run changed (in a debug build this takes a while).
  await driver.manage().setTimeouts({ script: 700000 });
  await timed(driver, 'overview after the run', `${q(T('nav-overview'))}.click();`, OVERVIEW_FILLED, 600000);
  await new Promise((r) => setTimeout(r, 3000));
  const QUARANTINE_PAINTED = `
    const c = (${q(T('quarantine-count'))}?.textContent ?? '').replace(/\\D/g, '');
    return c === '${inQuarantine}' && (${inQuarantine} === 0 || ${qa(T('quarantine-row'))}.length > 0);`;
  const quarantine = [];
  for (let i = 0; i < 5; i++) {
    await timed(driver, 'audit', `${q(T('nav-audit'))}.click();`, `return !${q('.quarantine')};`);
    quarantine.push(await timed(driver, 'quarantine', `${q(T('nav-quarantine'))}.click();`, QUARANTINE_PAINTED));
  }
  result.quarantine_click_to_rows_ms = summary(quarantine);
  // A search over the whole quarantine (the engine searches), from the typing to the matching
  // rows and their count.
  result.quarantine_search_ms = r1(
    await timed(
      driver,
      'quarantine search',
      `const s = ${q(T('quarantine-search'))}; s.value = 'the'; s.dispatchEvent(new Event('input', { bubbles: true }));`,
      `return / of [\\d,]+ match/.test(${q(T('quarantine-shown'))}?.textContent ?? '') && ${q(T('quarantine-table'))}?.dataset.current === 'true';`,
    ),
  );
  result.loadavg_at_end = os.loadavg().map((x) => r1(x));
} catch (e) {
  // What was measured before the failure is printed too, with a screenshot of the window.
  result.error = String(e?.message ?? e);
  const shot = path.join(os.tmpdir(), 'bench-window-failure.png');
  try {
    result.failure_page = await driver.executeScript(`
      const t = (id) => document.querySelector('[data-testid="' + id + '"]');
      t('what-if')?.scrollIntoView();
      return {
        alerts: [...document.querySelectorAll('[role="alert"]')].map((e) => e.textContent.trim()),
        what_if_proposed: t('what-if-proposed')?.textContent ?? null,
        what_if_stale: !!t('what-if-stale'),
        what_if_problem: t('what-if-problem')?.textContent ?? null,
        what_if_charts: [...document.querySelectorAll('[data-testid="what-if-charts"] img')].map((i) => [i.complete, i.naturalWidth]),
      };`);
  } catch {}
  try {
    writeFileSync(shot, await driver.takeScreenshot(), 'base64');
    result.failure_screenshot = shot;
  } catch {}
  process.exitCode = 1;
} finally {
  await closeApp(driver);
}
console.log(JSON.stringify(result, null, 2));
