// The window's types. Every shape the Rust shell sends or takes is generated from the Rust
// types into ./bindings.ts (`make types`, never edited by hand); this module re-exports them
// and adds only what is the UI's own: constants and names for the UI's convenience.
import type { Components, Features, Tier } from './bindings';

export type * from './bindings';

/** The tiers in the order the window lists them: the engine's order (Tier::ALL), as in charts and the CLI. */
export const TIERS: Tier[] = ['working', 'episodic', 'procedural', 'semantic'];

/** The five parts of a ForgetScore: `features` (raw) and `components` (signed) share them. */
export type ScoreParts = Features & Components;
export const SCORE_PARTS: (keyof ScoreParts)[] = [
  'recency',
  'usage',
  'duplication',
  'importance',
  'pinned',
];
