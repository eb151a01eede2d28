// Load with the window open: 8 agent processes (`lethe mcp`, spoken to over stdio as an
// agent host does) write 1,000 memories each while a ninth recalls in a loop; every write
// lands, no call fails, and the window shows the final counts without an error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { tempDb, lethe, openApp, closeApp, byTestId, waitFor, LETHE } from './harness.mjs';

const PER_WRITER = Number(process.env.LETHE_LOAD_PER_WRITER ?? 1000);

/** A minimal MCP client over stdio: newline-delimited JSON-RPC. */
function mcpClient(db, name) {
  const p = spawn(LETHE, ['--db', db, 'mcp'], { stdio: ['pipe', 'pipe', 'pipe'] });
  const pending = new Map();
  let nextId = 1;
  let stderr = '';
  p.stderr.on('data', (d) => (stderr += d));
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
      const r = await request('initialize', { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name, version: '1' } });
      p.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
      return r;
    },
    async call(tool, args) {
      const r = await request('tools/call', { name: tool, arguments: args });
      if (r.error || r.result?.isError) return { ok: false, detail: JSON.stringify(r.error ?? r.result) };
      return { ok: true, value: JSON.parse(r.result.content[0].text) };
    },
    close() {
      p.stdin.end();
      return new Promise((r) => p.on('close', r));
    },
    stderr: () => stderr,
  };
}

test(`8 agents x ${PER_WRITER} writes and a recall loop with the window open`, { timeout: 600_000 }, async () => {
  const db = tempDb();
  lethe(db, 'remember', '--type', 'semantic', '--content', 'seed memory so the window opens on data');
  const driver = await openApp(db);
  try {
    await byTestId(driver, 'tier-count-episodic');
    const started = Date.now();
    let stop = false;
    const reader = (async () => {
      const c = mcpClient(db, 'reader');
      await c.init();
      let ok = 0;
      const errors = [];
      while (!stop) {
        const r = await c.call('recall', { query: 'deploy token rotated' });
        if (r.ok) ok++;
        else errors.push(r.detail);
      }
      await c.close();
      return { ok, errors };
    })();
    const writers = Array.from({ length: 8 }, async (_, w) => {
      const c = mcpClient(db, `writer${w}`);
      await c.init();
      const errors = [];
      for (let i = 0; i < PER_WRITER; i++) {
        const r = await c.call('remember', { type: 'episodic', content: `deploy token w${w}n${i} rotated for service ${w}-${i}` });
        if (!r.ok || r.value.stored !== true) errors.push(r.detail ?? JSON.stringify(r.value));
      }
      await c.close();
      return errors;
    });
    const writerErrors = (await Promise.all(writers)).flat();
    stop = true;
    const { ok: reads, errors: readErrors } = await reader;
    const seconds = (Date.now() - started) / 1000;
    console.log(`load: ${8 * PER_WRITER} writes by 8 processes and ${reads} recalls in ${seconds.toFixed(1)} s, ${writerErrors.length + readErrors.length} errors`);
    assert.deepEqual(writerErrors.slice(0, 3), [], 'no write failed');
    assert.deepEqual(readErrors.slice(0, 3), [], 'no recall failed');
    assert.equal(lethe(db, 'stats').tiers.episodic.active, 8 * PER_WRITER, 'every write is present');
    const el = await byTestId(driver, 'tier-count-episodic');
    await waitFor(async () => (await el.getText()).replace(/,/g, '').trim() === String(8 * PER_WRITER), 30000, 'the window shows every write');
    const problems = await driver.executeScript(`return document.querySelectorAll('[data-testid="db-problem"], [data-testid="db-status-banner"], .banner.error').length`);
    assert.equal(problems, 0, 'no error surfaced in the window');
  } finally {
    await closeApp(driver);
  }
});
