/**
 * The PostgreSQL driver (`pg`), loaded on first use: a gateway with no PostgreSQL store, token store
 * or audit table never loads it (about 30 modules at every start otherwise).
 */
import { createRequire } from 'node:module';
import type pg from 'pg';

const require = createRequire(import.meta.url);
let loaded: typeof pg | undefined;

/** `pg`'s exports (`Pool`, `Client`, …). */
export function pgDriver(): typeof pg {
  return (loaded ??= require('pg') as typeof pg);
}
