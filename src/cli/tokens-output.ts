/**
 * How `gateway tokens` prints: a token just issued (id and key, the one time a key is shown) and
 * the list, as text for people or `--json` for scripts.
 */
import type { IssuedToken, ListedToken } from '../tokens/admin.js';
import type { CommandIo } from './postgres.js';

/** Prints a created or rotated token: `id: …` and `key: …`, or the contract's `--json` object. */
export function printIssued(io: CommandIo, token: IssuedToken, json: boolean): void {
  if (json) {
    const { id, key, subject, permissions, name, expires_at } = token;
    io.stdout(`${JSON.stringify({ id, key, subject, permissions, name, expires_at })}\n`);
    return;
  }
  io.stdout(`id: ${token.id}\nkey: ${token.key}\n`);
  io.stderr('the key is shown this once: hand it to the client now (gateway sign --token-key-file)\n');
}

const COLUMNS = [
  'id',
  'name',
  'subject',
  'permissions',
  'created_at',
  'expires_at',
  'last_used_at',
  'revoked_at',
] as const;

/** Prints the store's tokens: a table with one row per token, or a JSON array. */
export function printList(io: CommandIo, tokens: ListedToken[], json: boolean): void {
  if (json) {
    io.stdout(`${JSON.stringify(tokens)}\n`);
    return;
  }
  const cells = tokens.map((t) =>
    COLUMNS.map((c) => {
      const v = t[c];
      return v === null ? '-' : Array.isArray(v) ? v.join(',') || '-' : v;
    }),
  );
  const rows = [[...COLUMNS] as string[], ...cells];
  const widths = COLUMNS.map((_, i) => Math.max(...rows.map((r) => (r[i] as string).length)));
  for (const r of rows)
    io.stdout(
      `${r
        .map((v, i) => v.padEnd(widths[i] as number))
        .join('  ')
        .trimEnd()}\n`,
    );
}
