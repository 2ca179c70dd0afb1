/**
 * What `gateway tokens` does to the token table: create, rotate, revoke, list, import and reencrypt,
 * each in one transaction. Keys are sealed here (`seal.ts`) and leave only as the return value of
 * `createToken` and `rotateToken`, the two operations that make one.
 */
import { randomUUID } from 'node:crypto';
import type { ClientBase } from 'pg';
import { inTransaction } from '../postgres/transaction.js';
import { TOKEN_COLUMNS, type TokenRow } from './schema.js';
import { type BoundFields, type Keyring, newTokenKey, type TokenSecrets, UnsealError } from './seal.js';

/** A failure an operator must hear of (exit 1): an unknown id, a revoked token, a row that does not open. */
export class TokenAdminError extends Error {}

/** A token as `create` and `rotate` print it (`--json`), its key included. */
export interface IssuedToken {
  id: string;
  key: string;
  subject: string;
  permissions: string[];
  name: string | null;
  expires_at: string | null;
}

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

const boundOf = (row: Pick<TokenRow, 'id' | 'subject' | 'permissions' | 'expires_at'>): BoundFields => ({
  id: row.id,
  subject: row.subject,
  permissions: row.permissions,
  expiresAt: row.expires_at?.getTime() ?? null,
});

/** The row of `id`, locked for the rest of the transaction; a `TokenAdminError` when there is none. */
async function lockRow(client: ClientBase, id: string): Promise<TokenRow> {
  const { rows } = await client.query<TokenRow>(
    `SELECT ${TOKEN_COLUMNS} FROM gateway_tokens WHERE id = $1 FOR UPDATE`,
    [id],
  );
  if (rows[0] === undefined) throw new TokenAdminError(`no token ${id} in the store`);
  return rows[0];
}

/** The secrets of a row, or a `TokenAdminError` saying it does not open (never what it holds). */
function openRow(keyring: Keyring, row: TokenRow): TokenSecrets {
  if (row.key_id === null || row.sealed_key === null) throw new TokenAdminError(`token ${row.id} is revoked`);
  try {
    return keyring.open({ keyId: row.key_id, sealed: row.sealed_key }, boundOf(row));
  } catch (err) {
    if (!(err instanceof UnsealError)) throw err;
    throw new TokenAdminError(`token ${row.id} does not decrypt (${err.why}); revoke it and create another`);
  }
}

/** What a new token is given. */
export interface NewToken {
  subject: string;
  permissions: string[];
  name: string | null;
  /** ms since the epoch, or null: never expires. */
  expiresAt: number | null;
  /** The id (import); a new UUID when absent. */
  id?: string;
  /** The key (import); a new random key when absent. */
  key?: string;
}

/** Inserts a token; `replace` overwrites a row with the same id. Resolves undefined when one existed and `replace` is false. */
async function insert(
  client: ClientBase,
  keyring: Keyring,
  token: NewToken,
  replace: boolean,
): Promise<IssuedToken | undefined> {
  const id = token.id ?? randomUUID();
  const key = token.key ?? newTokenKey();
  const expires = token.expiresAt === null ? null : new Date(token.expiresAt);
  const bound = { id, subject: token.subject, permissions: token.permissions, expiresAt: token.expiresAt };
  const { keyId, sealed } = keyring.seal({ key }, bound);
  const conflict = replace
    ? `DO UPDATE SET name = EXCLUDED.name, subject = EXCLUDED.subject, permissions = EXCLUDED.permissions,
         created_at = now(), expires_at = EXCLUDED.expires_at, rotated_at = NULL, revoked_at = NULL,
         last_used_at = NULL, key_id = EXCLUDED.key_id, sealed_key = EXCLUDED.sealed_key`
    : 'DO NOTHING';
  const { rowCount } = await client.query(
    `INSERT INTO gateway_tokens (id, name, subject, permissions, expires_at, key_id, sealed_key)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) ${conflict}`,
    [id, token.name, token.subject, token.permissions, expires, keyId, sealed],
  );
  if (rowCount === 0) return undefined;
  return {
    id,
    key,
    subject: token.subject,
    permissions: token.permissions,
    name: token.name,
    expires_at: iso(expires),
  };
}

/** Creates a token with a new id and key. */
export async function createToken(
  client: ClientBase,
  keyring: Keyring,
  token: NewToken,
): Promise<IssuedToken> {
  return (await insert(client, keyring, token, false)) as IssuedToken;
}

/**
 * Gives token `id` a new key; the old one keeps verifying for `overlap` ms (0: not at all). A
 * rotation during an overlap ends the older overlap: only the key being replaced stays.
 */
export async function rotateToken(
  client: ClientBase,
  keyring: Keyring,
  id: string,
  overlap: number,
  now = Date.now(),
): Promise<IssuedToken & { previous_key_until: string | null }> {
  return inTransaction(client, async () => {
    const row = await lockRow(client, id);
    const old = openRow(keyring, row);
    const key = newTokenKey();
    const previous = overlap > 0 ? { key: old.key, until: now + overlap } : undefined;
    const { keyId, sealed } = keyring.seal({ key, ...(previous && { previous }) }, boundOf(row));
    await client.query(
      'UPDATE gateway_tokens SET key_id = $2, sealed_key = $3, rotated_at = now() WHERE id = $1',
      [id, keyId, sealed],
    );
    return {
      id,
      key,
      subject: row.subject,
      permissions: row.permissions,
      name: row.name,
      expires_at: iso(row.expires_at),
      previous_key_until: previous ? new Date(previous.until).toISOString() : null,
    };
  });
}

/** Revokes token `id`, erasing its key; resolves with when it was revoked and whether that was now. */
export async function revokeToken(
  client: ClientBase,
  id: string,
): Promise<{ revokedAt: string; now: boolean }> {
  return inTransaction(client, async () => {
    const row = await lockRow(client, id);
    if (row.revoked_at !== null) return { revokedAt: row.revoked_at.toISOString(), now: false };
    const { rows } = await client.query<{ revoked_at: Date }>(
      `UPDATE gateway_tokens SET revoked_at = now(), key_id = NULL, sealed_key = NULL WHERE id = $1
       RETURNING revoked_at`,
      [id],
    );
    return { revokedAt: (rows[0] as { revoked_at: Date }).revoked_at.toISOString(), now: true };
  });
}

/** A token as `list` shows it: never a key. */
export interface ListedToken {
  id: string;
  name: string | null;
  subject: string;
  permissions: string[];
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}

/** Every store token, oldest first. */
export async function listTokens(client: ClientBase): Promise<ListedToken[]> {
  const { rows } = await client.query<TokenRow>(
    `SELECT ${TOKEN_COLUMNS} FROM gateway_tokens ORDER BY created_at, id`,
  );
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    subject: r.subject,
    permissions: r.permissions,
    created_at: r.created_at.toISOString(),
    expires_at: iso(r.expires_at),
    last_used_at: iso(r.last_used_at),
    revoked_at: iso(r.revoked_at),
  }));
}

/** Imports tokens (from the YAML list) in one transaction: each is `imported`, `replaced` or `skipped`. */
export async function importTokens(
  client: ClientBase,
  keyring: Keyring,
  tokens: ReadonlyArray<NewToken & { id: string; key: string }>,
  force: boolean,
): Promise<Array<{ id: string; result: 'imported' | 'replaced' | 'skipped' }>> {
  return inTransaction(client, async () => {
    const out: Array<{ id: string; result: 'imported' | 'replaced' | 'skipped' }> = [];
    for (const token of tokens) {
      const { rows } = await client.query('SELECT 1 FROM gateway_tokens WHERE id = $1 FOR UPDATE', [
        token.id,
      ]);
      const existed = rows.length > 0;
      if (existed && !force) {
        out.push({ id: token.id, result: 'skipped' });
        continue;
      }
      await insert(client, keyring, token, true);
      out.push({ id: token.id, result: existed ? 'replaced' : 'imported' });
    }
    return out;
  });
}

/**
 * Seals every live token's key again under the current encryption key. Rows that do not open are
 * left as they are and named in `failed`.
 */
export async function reencryptTokens(
  client: ClientBase,
  keyring: Keyring,
): Promise<{ reencrypted: number; current: number; failed: string[] }> {
  return inTransaction(client, async () => {
    const { rows } = await client.query<TokenRow>(
      `SELECT ${TOKEN_COLUMNS} FROM gateway_tokens WHERE revoked_at IS NULL ORDER BY id FOR UPDATE`,
    );
    const result = { reencrypted: 0, current: 0, failed: [] as string[] };
    for (const row of rows) {
      if (row.key_id === keyring.currentId) {
        result.current++;
        continue;
      }
      let secrets: TokenSecrets;
      try {
        secrets = openRow(keyring, row);
      } catch (err) {
        if (!(err instanceof TokenAdminError)) throw err;
        result.failed.push(row.id);
        continue;
      }
      const { keyId, sealed } = keyring.seal(secrets, boundOf(row));
      await client.query('UPDATE gateway_tokens SET key_id = $2, sealed_key = $3 WHERE id = $1', [
        row.id,
        keyId,
        sealed,
      ]);
      result.reencrypted++;
    }
    return result;
  });
}
