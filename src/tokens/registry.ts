/**
 * The signed-request tokens one configuration verifies: the YAML list and, with
 * `auth.signature.token_store`, the store's, held in memory (the request path never reads the
 * database). A store token wins over a YAML entry with the same id, which is then ignored with a
 * warning naming its path. Expiry and the end of a rotation's overlap are checked on every look-up.
 */
import { randomUUID } from 'node:crypto';
import type { TokenConfig } from '../config/schema.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { TokenCounts } from '../observability/scraped.js';
import type { StoreToken, TokenStore } from './store.js';

/**
 * Who a token is: what the authenticate stage makes the request's identity (it has the shape of
 * `http/identity.ts`'s `Identity`, which this layer, below the request path, does not import).
 */
export interface TokenIdentity {
  readonly scheme: 'signature';
  readonly subject: string;
  readonly tokenId: string;
  /** `token:<lower-case token id>`. */
  readonly principal: string;
  readonly permissions: ReadonlySet<string>;
}

/** One key a token verifies with; `cacheId` names it in the signing-key cache (never the key). */
export interface VerifyKey {
  readonly cacheId: string;
  readonly key: Buffer;
}

/** A token that may verify now: its identity, the keys to try, and where to report a verified use. */
export interface UsableToken {
  readonly ok: true;
  readonly identity: TokenIdentity;
  /** One key, or two during a rotation's overlap (each to be compared in constant time). */
  readonly keys: readonly VerifyKey[];
  /** Records a verified request (for `last_used_at`); costs a set insertion. */
  used(): void;
}

/** A token id that verifies nothing: every one gets the same 401, `reason` goes to logs and metrics. */
export interface RefusedToken {
  readonly ok: false;
  readonly reason: 'unknown_token' | 'revoked_token' | 'expired_token';
}

/** What the authenticate stage asks. */
export interface TokenRegistry {
  /** The token with canonical id `id`, as of now. */
  get(id: string): UsableToken | RefusedToken;
  /** Calls `listener` with a token id whose keys changed or went, so cached signing keys are dropped. */
  onDrop(listener: (id: string) => void): void;
  /** Stops following the store. */
  close(): void;
}

interface Entry {
  /** With the previous key (before `previousUntil`), and without. */
  readonly both: UsableToken;
  readonly single: UsableToken;
  readonly previousUntil: number;
  readonly expiresAt: number;
}
/** A store token that verifies nothing (revoked, or its row does not open). */
type Held = Entry | { readonly refused: RefusedToken };

const UNKNOWN: RefusedToken = Object.freeze({ ok: false, reason: 'unknown_token' });
const REVOKED: RefusedToken = Object.freeze({ ok: false, reason: 'revoked_token' });
const EXPIRED: RefusedToken = Object.freeze({ ok: false, reason: 'expired_token' });

function entry(
  identity: TokenIdentity,
  keys: { key: string; previous?: { key: string; until: number } },
  expiresAt: number,
  used: () => void,
): Entry {
  const id = identity.tokenId;
  const current = { cacheId: `${id}:${randomUUID()}`, key: Buffer.from(keys.key, 'utf8') };
  const single: UsableToken = Object.freeze({ ok: true, identity, keys: Object.freeze([current]), used });
  if (keys.previous === undefined) return { both: single, single, previousUntil: 0, expiresAt };
  const previous = { cacheId: `${id}:${randomUUID()}`, key: Buffer.from(keys.previous.key, 'utf8') };
  const both: UsableToken = Object.freeze({
    ok: true,
    identity,
    keys: Object.freeze([current, previous]),
    used,
  });
  return { both, single, previousUntil: keys.previous.until, expiresAt };
}

function identityOf(id: string, subject: string, permissions: readonly string[]): TokenIdentity {
  return Object.freeze({
    scheme: 'signature',
    subject,
    tokenId: id,
    principal: `token:${id.toLowerCase()}`,
    permissions: new Set(permissions),
  });
}

const noop = () => undefined;

function fromStore(token: StoreToken, store: TokenStore): Held {
  if (token.revoked) return { refused: REVOKED };
  if (token.secrets === undefined) return { refused: UNKNOWN };
  const identity = identityOf(token.id, token.subject, token.permissions);
  return entry(identity, token.secrets, token.expiresAt ?? Infinity, () => store.touch(token.id));
}

export interface TokenRegistryDeps {
  readonly tokens: readonly TokenConfig[];
  readonly store?: TokenStore;
  readonly logger?: Logger;
  /** Where `gateway_tokens` reads the counts (none in unit tests). */
  readonly metrics?: Metrics;
  /** ms since the epoch; injected by tests. */
  readonly now?: () => number;
}

/** The registry of one configuration. */
export function createTokenRegistry(deps: TokenRegistryDeps): TokenRegistry {
  const now = deps.now ?? Date.now;
  const { store } = deps;
  const configured = new Map<string, Entry>();
  const paths = new Map<string, string>();
  deps.tokens.forEach((t, i) => {
    const id = t.id.toLowerCase();
    configured.set(id, entry(identityOf(id, t.subject, t.permissions), { key: t.key }, Infinity, noop));
    paths.set(id, `auth.signature.tokens[${i}]`);
  });
  const stored = new Map<string, Held>();
  const drops = new Set<(id: string) => void>();
  const warned = new Set<string>();

  const take = (ids: Iterable<string>) => {
    if (!store) return;
    const held = store.tokens();
    for (const id of ids) {
      const token = held.get(id);
      if (token === undefined) stored.delete(id);
      else stored.set(id, fromStore(token, store));
      const path = paths.get(id);
      if (token !== undefined && path !== undefined && !warned.has(id)) {
        warned.add(id);
        deps.logger?.warn({ path, token_id: id }, 'token ignored: the token store holds this id');
      }
      for (const drop of drops) drop(id);
    }
  };
  const unsubscribe = store?.subscribe(take);
  if (store) take(store.tokens().keys());

  const counts = (): TokenCounts => {
    const at = now();
    let config = 0;
    for (const id of configured.keys()) if (!stored.has(id)) config++;
    let fromStoreCount = 0;
    for (const e of stored.values()) if ('both' in e && e.expiresAt > at) fromStoreCount++;
    return { config, store: fromStoreCount };
  };
  deps.metrics?.tokenSources.add(counts);

  return {
    get(id) {
      const e = stored.get(id) ?? configured.get(id);
      if (e === undefined) return UNKNOWN;
      if ('refused' in e) return e.refused;
      const at = now();
      if (at >= e.expiresAt) return EXPIRED;
      return at < e.previousUntil ? e.both : e.single;
    },
    onDrop(listener) {
      drops.add(listener);
    },
    close() {
      unsubscribe?.();
      deps.metrics?.tokenSources.delete(counts);
    },
  };
}
