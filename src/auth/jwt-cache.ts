/**
 * The verified-JWT cache: a bearer JWT seen again skips the signature check. Bounded (least
 * recently used go first), keyed by a hash of the token so that no token is held in memory as a key,
 * and each entry good only until the token would stop passing the time checks, and only while the
 * key that verified it is still in the key set.
 */
import { hash as digest } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Identity } from '../http/identity.js';

interface Entry {
  readonly identity: Identity;
  /** ms since the epoch from which the token is no longer accepted (`exp`, or the maximum age). */
  readonly expiresAt: number;
  /** The JWKS key that verified it; undefined for the HS256 secret, which never changes. */
  readonly fingerprint: string | undefined;
}

/** Verified tokens, looked up by the token text. */
export interface JwtCache {
  /** The identity of a token verified before, if it is still within its time and its key is held. */
  get(token: string, at: number, holds: (fingerprint: string) => boolean): Identity | undefined;
  set(token: string, entry: Entry): void;
}

/** A cache of at most `max` tokens; `0` turns it off. */
export function createJwtCache(max: number): JwtCache {
  if (max === 0) return { get: () => undefined, set: () => undefined };
  const lru = new LRUCache<string, Entry>({ max });
  return {
    get(token, at, holds) {
      const id = hash(token);
      const entry = lru.get(id);
      if (entry === undefined) return undefined;
      if (at >= entry.expiresAt || (entry.fingerprint !== undefined && !holds(entry.fingerprint))) {
        lru.delete(id);
        return undefined;
      }
      return entry.identity;
    },
    set(token, entry) {
      lru.set(hash(token), entry);
    },
  };
}

/** The token's SHA-256, in one call (`crypto.hash`): no `Hash` object made per request. */
function hash(token: string): string {
  return digest('sha256', token, 'base64url');
}
