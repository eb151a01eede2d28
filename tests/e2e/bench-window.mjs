// Window latencies with the real app (issue: benchmarks): open a large DB to first rows
// painted, agent commit (CLI in another process) to the row visible (p50/p95 over 20
// writes), and the app's idle CPU over 10 s. Not part of `make test`: `make bench-window`.
//   xvfb-run -a -s "-screen 0 1280x800x24" node bench-window.mjs [N] [--app PATH]
// BENCH_WORKLOAD=reference|realistic builds the store with `lethe-bench --make-db` (the engine's
// generators, ages counted back from now; LETHE_BENCH is its path); unset, the script's own
// reference-like JSONL is imported as before.
import { spawn, execFileSync } from 'node:child_process';
import { writeFileSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { tempDb, lethe, openApp, closeApp, byTestId, waitFor, By, LETHE, APP } from './harness.mjs';

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

const t0 = Date.now();
const db = buildDb(N);
console.log(`built ${N} ${WORKLOAD || 'script-reference'} memories in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
const launch = Date.now();
const driver = await openApp(db);
const result = { n: N, workload: WORKLOAD || 'script-reference', app: APP };
try {
  const firstCount = await byTestId(driver, 'tier-count-episodic', 60000);
  await waitFor(async () => (await firstCount.getText()).trim() !== '', 60000, 'counts');
  result.launch_to_overview_ms = Date.now() - launch;
  const click = Date.now();
  await (await byTestId(driver, 'nav-memories')).click();
  await waitFor(async () => (await driver.findElements(By.css('[data-testid="memory-row"]'))).length > 0, 60000, 'first rows');
  result.memories_click_to_first_rows_ms = Date.now() - click;
  result.launch_to_first_rows_ms = Date.now() - launch;

  // Agent writes from another process → row visible (newest first, so new rows are on top).
  const sortSel = await byTestId(driver, 'sort-select');
  await driver.executeScript(`const s = arguments[0]; s.value = 'created'; s.dispatchEvent(new Event('change', { bubbles: true }));`, sortSel);
  await new Promise((r) => setTimeout(r, 1500));
  const lat = [];
  for (let i = 0; i < 20; i++) {
    const before = Date.now();
    const out = await new Promise((resolve, reject) => {
      const p = spawn(LETHE, ['--db', db, '--actor', 'agent:bench', 'remember', '--type', 'semantic', '--content', `bench live write ${i} ${Date.now()}`]);
      let s = '';
      p.stdout.on('data', (d) => (s += d));
      p.on('close', (code) => (code === 0 ? resolve({ id: JSON.parse(s).id, at: Date.now() }) : reject(new Error(`exit ${code}`))));
    });
    await waitFor(async () => (await driver.findElements(By.css(`[data-testid="memory-row"][data-id="${out.id}"]`))).length > 0, 10000, `row ${out.id}`);
    lat.push(Date.now() - out.at);
    void before;
  }
  result.agent_write_visible_ms = { p50: pct(lat, 50), p95: pct(lat, 95), max: Math.max(...lat), samples: lat.length };

  // Idle CPU: nothing happens for 10 s.
  await new Promise((r) => setTimeout(r, 2000));
  const pid = appPid();
  const hz = 100;
  const c0 = cpuTicks(pid);
  await new Promise((r) => setTimeout(r, 10000));
  const c1 = cpuTicks(pid);
  result.idle_cpu_percent_of_one_core = Math.round(((c1 - c0) / hz / 10) * 1000) / 10;
} finally {
  await closeApp(driver);
}
console.log(JSON.stringify(result, null, 2));
