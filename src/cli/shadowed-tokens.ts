/**
 * What `check-config --resolve` adds for a token store (contract §9): the YAML tokens whose id the
 * store also holds, which the gateway will ignore, each named by its path.
 */
import type { Config } from '../config/schema.js';
import { withClient } from './postgres.js';

/** Warnings about `config`'s YAML tokens shadowed by the store (or why the store could not be read). */
export async function shadowedTokens(config: Config): Promise<string[]> {
  const store = config.auth.signature.token_store;
  const tokens = config.auth.signature.tokens;
  if (store === undefined || tokens.length === 0) return [];
  let held: Set<string>;
  try {
    held = await withClient(store.url, async (client) => {
      const { rows } = await client.query<{ id: string }>(
        `SELECT id::text AS id FROM gateway_tokens WHERE id = ANY($1::uuid[])`,
        [tokens.map((t) => t.id)],
      );
      return new Set(rows.map((r) => r.id));
    });
  } catch (err) {
    const { code, message } = err as { code?: string; message: string };
    // No table yet (the gateway creates it): nothing can be shadowed.
    if (code === '42P01') return [];
    return [`auth.signature.token_store: the store could not be read to compare token ids (${message})`];
  }
  return tokens.flatMap((t, i) =>
    held.has(t.id.toLowerCase())
      ? [`auth.signature.tokens[${i}]: ignored, the token store holds id ${t.id.toLowerCase()}`]
      : [],
  );
}
