// The window's reach, from inside the real page: the app manifest and the capability refuse
// every command the UI does not use, the page cannot open a dialog of its own, and open, new
// and export never take a path from the page (Rust asks in the native dialog instead).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { tempDb, lethe, openApp, closeApp, byTestId, waitFor } from './harness.mjs';

/** Invokes `cmd` from the page; resolves to { ok, value } or { ok: false, error } (never throws). */
async function invokeFromPage(driver, cmd, args, waitMs = 0) {
  return driver.executeAsyncScript(
    `
    const [cmd, args, waitMs, done] = arguments;
    let settled = false;
    window.__TAURI_INTERNALS__.invoke(cmd, args).then(
      (value) => { settled = true; done({ ok: true, value }); },
      (error) => { settled = true; done({ ok: false, error: typeof error === 'string' ? error : JSON.stringify(error) }); },
    );
    // A command that opened a native dialog does not answer until a person does: report that.
    if (waitMs > 0) setTimeout(() => { if (!settled) done({ pending: true }); }, waitMs);
    `,
    cmd,
    args ?? {},
    waitMs,
  );
}

test('commands outside the manifest, and plugin commands not granted, are refused by the ACL', { timeout: 60_000 }, async () => {
  const db = tempDb();
  lethe(db, 'remember', '--type', 'semantic', '--content', 'capability check');
  const driver = await openApp(db);
  try {
    await waitFor(async () => (await (await byTestId(driver, 'tier-count-semantic')).getText()).trim() === '1', 15000, 'the store is shown');
    // A granted command works from the page: the check below is about the ACL, not IPC.
    const info = await invokeFromPage(driver, 'db_info');
    assert.equal(info.ok, true, JSON.stringify(info));
    assert.equal(info.value.path, db);

    // An app command that is not in the app manifest. Without a manifest, Tauri hands every
    // name to the app's handler (which would answer "command ... not found"); with one, the
    // ACL refuses it before any handler runs.
    for (const cmd of ['open_db_path', 'export', 'sql']) {
      const r = await invokeFromPage(driver, cmd, { path: '/tmp/x.db' });
      assert.equal(r.ok, false, `${cmd} must be refused`);
      assert.match(r.error, /not allowed|ACL/i, `${cmd}: refused by the ACL, not by a handler: ${r.error}`);
      assert.doesNotMatch(r.error, /command \S+ not found/i, r.error);
    }

    // Commands that exist in Rust (registered plugins) but are not granted to the window:
    // the dialog plugin's own open/save (the page must not pick paths) and core window calls.
    for (const [cmd, args] of [
      ['plugin:dialog|open', { options: {} }],
      ['plugin:dialog|save', { options: {} }],
      ['plugin:window|close', { label: 'main' }],
      ['plugin:path|resolve_directory', { directory: 1 }],
    ]) {
      const r = await invokeFromPage(driver, cmd, args);
      assert.equal(r.ok, false, `${cmd} must be refused`);
      assert.match(r.error, /not allowed|ACL/i, `${cmd}: ${r.error}`);
    }
  } finally {
    await closeApp(driver);
  }
});

test('open, new and export do not accept a path from the page', { timeout: 60_000 }, async () => {
  const db = tempDb();
  lethe(db, 'remember', '--type', 'semantic', '--content', 'the page names no path');
  const elsewhere = mkdtempSync(path.join(tmpdir(), 'lethe-e2e-'));
  const [openTarget, newTarget, chartTarget] = ['opened.db', 'created.db', 'chart.svg'].map((f) => path.join(elsewhere, f));
  const driver = await openApp(db);
  try {
    await waitFor(async () => (await (await byTestId(driver, 'tier-count-semantic')).getText()).trim() === '1', 15000, 'the store is shown');

    // A page passing a path gets the native dialog (opened by Rust, waiting for a person),
    // never the file it named.
    for (const [cmd, args] of [
      ['open_db', { path: openTarget }],
      ['new_db', { path: newTarget }],
      ['export_chart', { chart: 'decay', path: chartTarget, theme: 'light' }],
    ]) {
      const r = await invokeFromPage(driver, cmd, args, 1500);
      assert.deepEqual(r, { pending: true }, `${cmd} with a path from the page waits for the dialog: ${JSON.stringify(r)}`);
    }
    // While those dialogs wait, the window still answers: they are not on the main thread.
    const info = await invokeFromPage(driver, 'db_info', {}, 3000);
    assert.equal(info.ok, true, JSON.stringify(info));
    assert.equal(info.value.path, db, 'the window still shows the file it was launched on');
    for (const f of [openTarget, newTarget, chartTarget]) assert.ok(!existsSync(f), `${f} was not created`);

    // A recent file goes by its index in the list Rust handed out, and only by that.
    await invokeFromPage(driver, 'recent_files');
    for (const [args, why] of [
      [{ path: openTarget }, 'a path instead of an index'],
      [{ index: openTarget }, 'a path as the index'],
      [{ index: 10_000 }, 'an index outside the list'],
    ]) {
      const r = await invokeFromPage(driver, 'open_recent', args);
      assert.equal(r.ok, false, `open_recent with ${why} must fail`);
    }
    assert.ok(!existsSync(openTarget));
    const after = await invokeFromPage(driver, 'db_info');
    assert.equal(after.value.path, db, 'nothing the page sent changed the open file');
  } finally {
    await closeApp(driver);
    rmSync(elsewhere, { recursive: true, force: true });
  }
});
