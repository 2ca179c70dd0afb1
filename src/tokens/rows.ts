/**
 * Rows of `gateway_tokens` turned into what a gateway holds: each key opened once, and opened again
 * only when the row changes. A row that does not open is kept as unreadable (it still overrides a
 * YAML token of the same id, and is refused), logged by id only.
 */
import type { Logger } from '../observability/logger.js';
import type { TokenRow } from './schema.js';
import { type Keyring, type TokenSecrets, UnsealError } from './seal.js';

/** A store token as the registry sees it. */
export interface StoreToken {
  readonly id: string;
  readonly name: string | null;
  readonly subject: string;
  readonly permissions: readonly string[];
  /** ms since the epoch; null: never expires. */
  readonly expiresAt: number | null;
  readonly revoked: boolean;
  /** The opened keys; undefined when revoked or unreadable. */
  readonly secrets: TokenSecrets | undefined;
  /** True when the row's sealed key does not open (edited in the database, or an unknown key id). */
  readonly unreadable: boolean;
}

/** The fields of a row that decide what the gateway holds: equal text, nothing to open again. */
function fingerprint(row: TokenRow): string {
  return JSON.stringify([
    row.name,
    row.subject,
    row.permissions,
    row.expires_at?.getTime() ?? null,
    row.revoked_at !== null,
    row.key_id,
    row.sealed_key?.toString('base64') ?? null,
  ]);
}

/** Opens rows into tokens, reusing what it opened before for rows that did not change. */
export class RowReader {
  readonly #keyring: Keyring;
  readonly #opened = new Map<string, { fingerprint: string; token: StoreToken }>();

  constructor(keyring: Keyring) {
    this.#keyring = keyring;
  }

  /**
   * The token of `row`, and whether it is new or changed since the last read of that id.
   * `unreadable` is reported only when the row changed into (or first appeared as) unreadable.
   */
  read(row: TokenRow): { token: StoreToken; changed: boolean; failure?: UnsealError } {
    const print = fingerprint(row);
    const before = this.#opened.get(row.id);
    if (before?.fingerprint === print) return { token: before.token, changed: false };
    const bound = {
      id: row.id,
      subject: row.subject,
      permissions: row.permissions,
      expiresAt: row.expires_at?.getTime() ?? null,
    };
    let secrets: TokenSecrets | undefined;
    let failure: UnsealError | undefined;
    if (row.revoked_at === null && row.key_id !== null && row.sealed_key !== null) {
      try {
        secrets = this.#keyring.open({ keyId: row.key_id, sealed: row.sealed_key }, bound);
      } catch (err) {
        failure = err instanceof UnsealError ? err : new UnsealError('malformed');
      }
    }
    const token: StoreToken = Object.freeze({
      id: row.id,
      name: row.name,
      subject: row.subject,
      permissions: Object.freeze([...row.permissions]),
      expiresAt: bound.expiresAt,
      revoked: row.revoked_at !== null,
      secrets,
      unreadable: failure !== undefined,
    });
    this.#opened.set(row.id, { fingerprint: print, token });
    return { token, changed: true, ...(failure && { failure }) };
  }

  /** Forgets a row that is gone. */
  forget(id: string): void {
    this.#opened.delete(id);
  }
}

/** The tokens a store holds now, by canonical id, and the subscribers told of each change. */
export class HeldTokens {
  readonly tokens = new Map<string, StoreToken>();
  readonly #listeners = new Set<(ids: readonly string[]) => void>();
  readonly #reader: RowReader;
  readonly #log: Logger;

  constructor(reader: RowReader, log: Logger) {
    this.#reader = reader;
    this.#log = log;
  }

  /** Calls `listener` with the ids whose token changed, appeared or went; returns an unsubscribe. */
  subscribe(listener: (ids: readonly string[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Takes rows (all of them, or those of `ids`) as what is held and tells the subscribers; returns
   * how many of the rows do not open.
   */
  apply(rows: readonly TokenRow[], ids: readonly string[] | 'all'): number {
    const held = this.tokens;
    const seen = new Set<string>();
    const changed: string[] = [];
    let unreadable = 0;
    for (const row of rows) {
      seen.add(row.id);
      const read = this.#reader.read(row);
      if (read.token.unreadable) unreadable++;
      if (read.failure)
        this.#log.error({ token_id: row.id, why: read.failure.why }, 'token does not decrypt; skipped');
      if (read.changed) {
        held.set(row.id, read.token);
        changed.push(row.id);
      }
    }
    for (const id of ids === 'all' ? [...held.keys()] : ids) {
      if (seen.has(id) || !held.has(id)) continue;
      held.delete(id);
      this.#reader.forget(id);
      changed.push(id);
    }
    if (changed.length > 0) for (const l of this.#listeners) l(changed);
    return unreadable;
  }
}
