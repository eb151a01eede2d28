// Drives `lethe mcp` with the official TypeScript MCP SDK, a second independent client
// beside the Python one: initialize negotiates 2025-11-25, tools/list shows enums and
// annotations, every tool is driven, every structuredContent validates against its
// outputSchema (ajv, JSON Schema 2020-12), and bad arguments are isError results with
// code invalid_input.
//
// Run: npm test   (LETHE_BIN points at the binary; default ../../target/debug/lethe)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import Ajv2020 from 'ajv/dist/2020.js';

const here = dirname(fileURLToPath(import.meta.url));
const LETHE = process.env.LETHE_BIN ?? join(here, '../../target/debug/lethe');
const TOOLS = [
  'remember', 'recall', 'forget', 'restore', 'pin', 'unpin', 'feedback', 'get_memory',
  'get_meta_memory_stats', 'add_reflection_note', 'archive_observation', 'restore_archive',
  'memory_stats', 'list_memories', 'similar', 'end_session', 'undo_forget_run',
];

/** Records the protocol version the client settled on. */
class Recording extends StdioClientTransport {
  setProtocolVersion(v) { this.negotiated = v; }
}

test('every tool through the TypeScript SDK', async () => {
  const db = join(mkdtempSync(join(tmpdir(), 'lethe-ts-')), 'ts.db');
  const transport = new Recording({ command: LETHE, args: ['--db', db, 'mcp'], env: { ...process.env }, stderr: 'inherit' });
  const client = new Client({ name: 'ts-host', version: '1.0.0' });
  await client.connect(transport);
  try {
    assert.equal(transport.negotiated, '2025-11-25');
    assert.equal(client.getServerVersion().name, 'lethe');

    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    const validators = {};
    for (const name of TOOLS) {
      const t = byName[name];
      assert.ok(t, `${name} listed`);
      const a = t.annotations;
      assert.ok(a && a.title, `${name} annotations`);
      for (const k of ['readOnlyHint', 'destructiveHint', 'idempotentHint']) assert.equal(typeof a[k], 'boolean', `${name}.${k}`);
      assert.equal(a.openWorldHint, false, name);
      assert.equal(t.inputSchema.additionalProperties, false, `${name} rejects unknown keys`);
      for (const [k, p] of Object.entries(t.inputSchema.properties ?? {})) assert.ok(p.description, `${name}.${k} described`);
      assert.ok(ajv.validateSchema(t.inputSchema), `${name} inputSchema is valid JSON Schema`);
      assert.ok(t.outputSchema, `${name} outputSchema`);
      validators[name] = ajv.compile(t.outputSchema);
    }
    assert.deepEqual(byName.remember.inputSchema.properties.type.enum, ['working', 'episodic', 'semantic', 'procedural']);
    assert.deepEqual(byName.add_reflection_note.inputSchema.properties.failure_type.enum, ['tool_error', 'user_feedback', 'metric_failure']);
    assert.equal(byName.remember.inputSchema.properties.importance.maximum, 1);
    assert.equal(byName.recall.annotations.readOnlyHint, true);
    assert.equal(byName.forget.annotations.destructiveHint, true);

    const used = new Set();
    const call = async (name, args) => {
      used.add(name);
      const r = await client.callTool({ name, arguments: args });
      assert.notEqual(r.isError, true, `${name}: ${JSON.stringify(r.content)}`);
      const ok = validators[name](r.structuredContent);
      assert.ok(ok, `${name} result fits its outputSchema: ${JSON.stringify(validators[name].errors)}`);
      assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
      return r.structuredContent;
    };
    const error = async (name, args) => {
      const r = await client.callTool({ name, arguments: args });
      assert.equal(r.isError, true, `${name} ${JSON.stringify(args)} is an error result`);
      return JSON.parse(r.content[0].text).error;
    };

    const id = (await call('remember', { type: 'semantic', content: 'Grafana dashboards live in the ops repo', tags: ['ops'] })).id;
    assert.equal((await call('recall', { query: 'grafana dashboards', limit: 3 })).results[0].id, id);
    assert.equal((await call('get_meta_memory_stats', { memory_id: id })).recall_count, 1);
    const all = await call('get_meta_memory_stats', {});
    assert.deepEqual([all.memories, all.total_recalls, all.never_recalled], [1, 1, 0]);
    const topic = await call('get_meta_memory_stats', { query: 'grafana' });
    assert.deepEqual([topic.memories, topic.total_recalls], [1, 1]);
    assert.equal((await call('forget', { id, reason: 'test' })).action, 'soft');
    assert.equal((await call('restore', { id })).is_deleted, false);
    assert.equal((await call('pin', { id })).pinned, true);
    assert.equal((await call('list_memories', { pinned: true, sort: 'importance' })).total, 1);
    assert.equal((await call('unpin', { id })).pinned, false);
    assert.equal((await call('feedback', { memory_id: id, helpful: true })).cite_count, 1);
    assert.equal((await call('get_memory', { id })).view_count, 1);
    assert.ok(Array.isArray((await call('similar', { memory_id: id })).items));
    const p = await call('remember', { type: 'procedural', content: 'Restart the ingest worker', steps: ['drain', 'restart'] });
    assert.equal((await call('add_reflection_note', { memory_id: p.id, failure_type: 'metric_failure', failure_description: 'lag stayed high' })).notes, 1);
    const o = await call('remember', { type: 'episodic', source: 'tool:kubectl', content: 'kubectl get pods listed 80 pods, 3 pending' });
    const a = await call('archive_observation', { memory_id: o.id, memo: 'pod list' });
    assert.equal((await call('restore_archive', { archive_no: a.archive_no })).content, 'kubectl get pods listed 80 pods, 3 pending');
    assert.equal((await call('memory_stats', {})).total_active, 3);
    await call('remember', { type: 'working', session_id: 'ts-s1', content: 'tried restarting the ingest worker twice' });
    const end = await call('end_session', { session_id: 'ts-s1', task_kind: 'ingest', rules: [{ content: 'Drain the ingest worker before a restart' }] });
    assert.equal(end.task_logs.length, 1);
    assert.equal(end.rules[0].stored, true);
    assert.equal((await call('end_session', { session_id: 'ts-s1', task_kind: 'ingest' })).already_ended, true);
    // A forget run can be undone: a working note written three days ago (by the CLI, which may
    // back-date) is quarantined by the policy run, and undo_forget_run brings it back.
    const lethe = (...a) => JSON.parse(execFileSync(LETHE, ['--db', db, ...a], { env: process.env }).toString());
    const before = new Date(Date.now() - 3 * 86_400_000).toISOString();
    const scratch = lethe('remember', '--type', 'working', '--content', 'scratch: the staging port is 8081', '--created-at', before);
    const run = lethe('forget');
    assert.ok(run.working_gate.includes(scratch.id), JSON.stringify(run));
    const undo = await call('undo_forget_run', { run_id: run.run_id });
    assert.ok(undo.restored.some((i) => i.id === scratch.id), JSON.stringify(undo));
    assert.deepEqual([...used].sort(), [...TOOLS].sort(), 'every tool driven');

    // Bad arguments: tool results the model can read, and nothing written.
    assert.equal((await error('remember', { type: 'semantic', content: 'x y', bogus_key: 1 })).code, 'invalid_input');
    assert.equal((await error('remember', { type: 'semantik', content: 'x y' })).code, 'invalid_input');
    assert.equal((await error('remember', { type: 'semantic', content: 'x y', importance: 2 })).code, 'invalid_input');
    assert.equal((await error('get_memory', { id: 'mem_missing' })).code, 'not_found');
    // 3, the session's task log and its rule, and the scratch note the undo restored.
    assert.equal((await call('memory_stats', {})).total_active, 6);
  } finally {
    await client.close();
  }
});
