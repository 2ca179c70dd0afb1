/**
 * undici, loaded on first use: a gateway with no upstream (local stores, no pass-through) never
 * loads its 110 modules at start.
 */
import { createRequire } from 'node:module';
import type * as Undici from 'undici';

const require = createRequire(import.meta.url);
let loaded: typeof Undici | undefined;

/** undici's exports (`Pool`, `Client`, `errors`, …). */
export function undici(): typeof Undici {
  return (loaded ??= require('undici') as typeof Undici);
}
