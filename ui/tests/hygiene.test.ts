import { describe, it, expect } from 'vitest';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

// Static guarantees that are cheaper to check than to review: only api.ts knows Tauri,
// and no agent text can reach the DOM as markup.
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}
const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');
const sources = files(SRC).filter((f) => /\.(ts|svelte)$/.test(f));

describe('source hygiene', () => {
  it('only api.ts imports @tauri-apps', () => {
    const offenders = sources.filter((f) => !f.endsWith('api.ts') && readFileSync(f, 'utf8').includes('@tauri-apps'));
    expect(offenders).toEqual([]);
  });

  it('never opens a file dialog from the page: the shell does, so the page never names a path', () => {
    // The capability grants no dialog permission; a call from here would be refused at run time.
    const offenders = sources.filter((f) => /plugin-dialog|plugin:dialog/.test(readFileSync(f, 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('never renders raw HTML', () => {
    const offenders = sources.filter((f) => /\{@html|innerHTML|outerHTML|insertAdjacentHTML/.test(readFileSync(f, 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('declares no Rust type by hand: those come from bindings.ts', () => {
    const generated = [...readFileSync(join(SRC, 'bindings.ts'), 'utf8').matchAll(/^export type (\w+)/gm)].map((m) => m[1]);
    expect(generated).toContain('MemoryDetail');
    const mirrors = sources
      .filter((f) => !f.endsWith('bindings.ts'))
      .flatMap((f) => {
        const text = readFileSync(f, 'utf8');
        return generated.filter((n) => new RegExp(`^\\s*(export\\s+)?(interface|type)\\s+${n}\\s*[=<{]`, 'm').test(text)).map((n) => `${n} in ${f.slice(SRC.length + 1)}`);
      });
    expect(mirrors).toEqual([]);
  });

  it('uses no polling timers outside the play animation and the toast', () => {
    const withTimers = sources
      .filter((f) => /set(Interval|Timeout)\(/.test(readFileSync(f, 'utf8')))
      .map((f) => f.slice(SRC.length + 1));
    expect(withTimers.sort()).toEqual(['state.svelte.ts', 'views/Decay.svelte']);
  });
});
