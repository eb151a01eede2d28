// Drives the real Lethe window: tauri-driver + WebKitWebDriver under Xvfb (see TAURI-NOTES).
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after } from 'node:test';
import { Builder, By, until } from 'selenium-webdriver';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const APP = process.env.LETHE_APP ?? path.join(root, 'target/debug/lethe-app');
export const LETHE = process.env.LETHE_CLI ?? path.join(root, 'target/debug/lethe');
export { By, until };

// Every temporary directory a test file made goes when its process exits: the larger suites
// leave databases of up to ~1 GB with their WAL, and CI machines have little spare disk.
const made = [];
process.on('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});
function tempDir(prefix) {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

export function tempDb(name = 'e2e.db') {
  return path.join(tempDir('lethe-e2e-'), name);
}

/** Runs the lethe CLI and parses its JSON output. */
export function lethe(db, ...args) {
  const out = execFileSync(LETHE, ['--db', db, ...args], { encoding: 'utf8', maxBuffer: 512 * 1024 * 1024 });
  return out.trim() ? JSON.parse(out) : null;
}

/**
 * Drops what Lethe derives for scoring (neighbour lists, similarity signatures), as in a store
 * another program wrote (memento, a copy made with `sqlite3`): the next scoring searches
 * every memory again. `lethe import` stores them, so an imported store alone scores at once.
 */
export function dropDerived(db) {
  const script = 'import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\n' +
    'c.execute("DELETE FROM lethe_neighbour")\nc.execute("DELETE FROM lethe_signature")\nc.commit()\nc.close()';
  execFileSync('python3', ['-c', script, db]);
}

let driverProc = null;
/** Each session's drivers' process. */
const owner = new WeakMap();
const tail = [];

/**
 * A fresh home for one window: its data, config and cache directories (the recent list, the
 * default database, the window's remembered size and view) start empty, as for a new user,
 * and no test sees what another one left.
 */
export function tempHome() {
  return tempDir('lethe-home-');
}

function homeEnv(home) {
  return {
    ...process.env,
    XDG_DATA_HOME: path.join(home, 'data'),
    XDG_CONFIG_HOME: path.join(home, 'config'),
    XDG_CACHE_HOME: path.join(home, 'cache'),
  };
}

function startTauriDriver(env) {
  // Never the default native port 4445 with --port 4445: that spins for ever (TAURI-NOTES #3).
  // detached: its own process group, so closeApp can end tauri-driver *and* the
  // WebKitWebDriver it spawns (killing only tauri-driver orphans WebKitWebDriver, which
  // keeps port 4455 and the stderr pipe open: node never exits and the suite hangs).
  driverProc = spawn('tauri-driver', ['--port', '4444', '--native-port', '4455'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
    env,
  });
  driverProc.stderr.on('data', (d) => {
    tail.push(String(d));
    while (tail.length > 50) tail.shift();
  });
  // Neither keeps this process alive: a test that timed out before its closeApp leaves them
  // running, and the file's process must still end (and end them, below).
  driverProc.unref();
  driverProc.stderr.unref();
}

/** Ends the drivers' process group (tauri-driver, WebKitWebDriver and the window), if any. */
function killDriver() {
  const p = driverProc;
  if (!p) return;
  driverProc = null;
  try {
    process.kill(-p.pid, 'SIGKILL'); // the group we created: tauri-driver + WebKitWebDriver
  } catch {
    p.kill('SIGKILL');
  }
  p.stderr?.destroy();
}
// A window left by a test that timed out (its closeApp never ran, or hangs on a driver that
// does not answer) goes when the file's tests are done, so that the file's process ends and
// the drivers' ports are free for the files after it.
after(killDriver);
process.on('exit', killDriver);

/**
 * Starts the window on `db` (none: the app chooses, as when started from the desktop) with
 * the data and config directories of `home` (a fresh one unless given).
 */
export async function openApp(db, { home = tempHome() } = {}) {
  if (!existsSync(APP)) throw new Error(`build the app first: ${APP} is missing`);
  tail.length = 0;
  // The window of a test of this file that timed out before its closeApp.
  killDriver();
  startTauriDriver(homeEnv(home));
  const args = db ? ['--db', db] : [];
  await new Promise((r) => setTimeout(r, 800));
  let lastErr;
  for (let i = 0; i < 20; i++) {
    try {
      const driver = await new Builder()
        .usingServer('http://127.0.0.1:4444/')
        .withCapabilities({ browserName: 'wry', 'tauri:options': { application: APP, args } })
        .build();
      owner.set(driver, driverProc);
      return driver;
    } catch (e) {
      lastErr = e;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  throw new Error(`could not start a session: ${lastErr}\n${tail.join('')}`);
}

export async function closeApp(driver) {
  try {
    if (driver) await driver.quit();
  } finally {
    // A test that timed out closes late, when the next test's window may already be up (and
    // its own drivers ended): only the drivers of this session are ended here.
    const p = driverProc;
    if (p && (!driver || owner.get(driver) === p)) {
      // What the window said on stderr (it reopened the file, its page process ended, a
      // write failed): in the test's output, so that a failure elsewhere explains itself.
      const said = tail.join('').split('\n').filter((l) => l.startsWith('lethe:'));
      for (const line of said) console.log(`window: ${line}`);
      const exited = p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise((r) => p.once('exit', r));
      killDriver();
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
    }
  }
}

export async function byTestId(driver, id, timeout = 10000) {
  return driver.wait(until.elementLocated(By.css(`[data-testid="${id}"]`)), timeout);
}

/** Waits until `fn` returns a truthy value (polled every 25 ms). */
export async function waitFor(fn, timeout = 10000, what = 'condition') {
  const start = Date.now();
  let last;
  while (Date.now() - start < timeout) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what} (last: ${last})`);
}

export const css = (s) => By.css(s);
export const rowSel = (id) => `[data-testid="memory-row"][data-id="${id}"]`;

/** Clicks the sidebar entry of `view` and waits until it is the current page. */
export async function nav(driver, view) {
  // Located again at each try: the sidebar re-renders when the store reports a change, and a
  // click on the element found just before it is refused as stale.
  await waitFor(
    async () => {
      await (await byTestId(driver, `nav-${view}`)).click();
      return true;
    },
    5000,
    `a click on nav-${view}`,
  );
  await waitFor(
    async () => (await (await byTestId(driver, `nav-${view}`)).getAttribute('aria-current')) === 'page',
    5000,
    `view ${view} active`,
  );
}
