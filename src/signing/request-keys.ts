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

/** A hasher for one request: `update` with each body chunk, then `digest` for the signature bytes. */
export interface RequestHasher {
  update(chunk: Buffer): void;
  digest(): Buffer;
}

export class RequestKeys {
  readonly #cache: LRUCache<string, { key: Buffer; empty?: Buffer }>;

  constructor(max = 4096) {
    this.#cache = new LRUCache({ max });
  }

  /** A hasher for one request of token `tokenId` (whose secret is `key`). */
  open(
    tokenId: string,
    key: string | Buffer,
    method: string,
    target: string,
    requestDate: string,
  ): RequestHasher {
    const id = `${tokenId} ${requestDate.slice(0, SIGNED_DATE_LENGTH)} ${method} ${target}`;
    let entry = target.length <= CACHED_TARGET ? this.#cache.get(id) : undefined;
    if (entry === undefined) {
      entry = { key: requestKey(key, method, target, requestDate) };
      if (target.length <= CACHED_TARGET) this.#cache.set(id, entry);
    }
    const found = entry;
    let hmac: Hmac | undefined;
    return {
      update(chunk) {
        if (chunk.length > 0) (hmac ??= createHmac('sha256', found.key)).update(chunk);
      },
      digest() {
        if (hmac !== undefined) return hmac.digest();
        return (found.empty ??= createHmac('sha256', found.key).digest());
      },
    };
  }

  /**
   * Forgets every key of token `tokenId` (revoked or rotated), also those opened under one of its
   * key's cache ids (`<token id>:<n>`, one per key during a rotation's overlap).
   */
  forget(tokenId: string): void {
    const stale = [...this.#cache.keys()].filter(
      (id) => id.startsWith(`${tokenId} `) || id.startsWith(`${tokenId}:`),
    );
    for (const id of stale) this.#cache.delete(id);
  }
}
