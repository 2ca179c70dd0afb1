/**
 * The chain's per-request keys, kept for requests that repeat: a client polling one resource signs
 * the same method, target and hour again and again, and the gateway re-signs the same upstream
 * target within the hour. A hit skips two of the three HMACs, and for a request without a body all
 * three. Entries are derived from the token key and what is signed, so a hit gives exactly what
 * computing would; bounded by count and target length.
 */
import { createHmac, type Hmac } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { requestKey, SIGNED_DATE_LENGTH } from './chain.js';

/** Targets longer than this are not kept (an entry's size stays small). */
const CACHED_TARGET = 512;
/** The most keys kept for one target (tokens, methods and hours that sign it). */
const PER_TARGET = 32;

/** A hasher for one request: `update` with each body chunk, then `digest` for the signature bytes. */
export interface RequestHasher {
  update(chunk: Buffer): void;
  digest(): Buffer;
}

interface Entry {
  /** What the key was derived for, besides the target: the token, the method, the date's hour. */
  readonly tokenId: string;
  readonly method: string;
  readonly hour: string;
  /** HMAC2: the key the body is hashed with. */
  readonly key: Buffer;
  /** The signature of an empty body, and its base64, once asked for. */
  empty?: Buffer;
  emptyText?: string;
}

/**
 * Keys are kept per target, each target's few entries told apart by token, method and hour: a
 * lookup hashes the target as it came and compares three short strings, where one key string made
 * of all four was built, copied flat and hashed on every request. The bound counts entries.
 */
export class RequestKeys {
  readonly #cache: LRUCache<string, Entry[]>;

  constructor(max = 4096) {
    this.#cache = new LRUCache({ maxSize: max, sizeCalculation: (entries) => entries.length });
  }

  /** A hasher for one request of token `tokenId` (whose secret is `key`). */
  open(
    tokenId: string,
    key: string | Buffer,
    method: string,
    target: string,
    requestDate: string,
  ): RequestHasher {
    const found = this.#entry(tokenId, key, method, target, requestDate);
    let hmac: Hmac | undefined;
    return {
      update(chunk) {
        if (chunk.length > 0) (hmac ??= createHmac('sha256', found.key)).update(chunk);
      },
      digest() {
        return hmac !== undefined ? hmac.digest() : emptyOf(found);
      },
    };
  }

  /**
   * The signature bytes of a request without a body (the common GET): no hasher to make, and for a
   * request that repeats, no HMAC at all.
   */
  empty(tokenId: string, key: string | Buffer, method: string, target: string, requestDate: string): Buffer {
    return emptyOf(this.#entry(tokenId, key, method, target, requestDate));
  }

  /** `empty`'s signature as a `Signature` header value (base64), kept with it. */
  emptyText(
    tokenId: string,
    key: string | Buffer,
    method: string,
    target: string,
    requestDate: string,
  ): string {
    const entry = this.#entry(tokenId, key, method, target, requestDate);
    return (entry.emptyText ??= emptyOf(entry).toString('base64'));
  }

  #entry(tokenId: string, key: string | Buffer, method: string, target: string, requestDate: string): Entry {
    if (target.length > CACHED_TARGET || requestDate.length < SIGNED_DATE_LENGTH) {
      return derived(tokenId, key, method, target, requestDate);
    }
    const entries = this.#cache.get(target);
    if (entries !== undefined) {
      for (let i = 0; i < entries.length; i++) {
        const entry = entries[i] as Entry;
        if (entry.tokenId === tokenId && entry.method === method && requestDate.startsWith(entry.hour)) {
          return entry;
        }
      }
    }
    const entry = derived(tokenId, key, method, target, requestDate);
    const kept = entries === undefined ? [] : entries.length < PER_TARGET ? entries : entries.slice(1);
    kept.push(entry);
    // Set again: the target's size (its count of entries) is counted anew.
    this.#cache.set(target, kept);
    return entry;
  }

  /**
   * Forgets every key of token `tokenId` (revoked or rotated), also those opened under one of its
   * key's cache ids (`<token id>:<n>`, one per key during a rotation's overlap).
   */
  forget(tokenId: string): void {
    const stale = (id: string) => id === tokenId || id.startsWith(`${tokenId}:`);
    for (const [target, entries] of [...this.#cache.entries()]) {
      if (!entries.some((e) => stale(e.tokenId))) continue;
      const kept = entries.filter((e) => !stale(e.tokenId));
      if (kept.length === 0) this.#cache.delete(target);
      else this.#cache.set(target, kept);
    }
  }
}

function derived(
  tokenId: string,
  key: string | Buffer,
  method: string,
  target: string,
  requestDate: string,
): Entry {
  const hour = requestDate.slice(0, SIGNED_DATE_LENGTH);
  return { tokenId, method, hour, key: requestKey(key, method, target, requestDate) };
}

function emptyOf(entry: Entry): Buffer {
  return (entry.empty ??= createHmac('sha256', entry.key).digest());
}
