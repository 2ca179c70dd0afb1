/**
 * The signed-request tokens of one configuration: the registry the authenticate stage asks, fed by
 * the YAML list and, when configured, the token store. A reload whose `token_store` is unchanged
 * keeps the store it had (its tokens stay loaded, even while the database is away).
 */
import { createTokenRegistry, type TokenRegistry } from './registry.js';
import type { Config } from '../config/schema.js';
import type { Check } from '../observability/checks.js';
import { openTokenStore, type TokenStore, type TokenStoreDeps } from './store.js';

/** The tokens of one configuration. */
export interface Tokens {
  readonly registry: TokenRegistry;
  readonly store: TokenStore | undefined;
  /** False only until the store (when configured) has read every token once. */
  ready(): boolean;
  /**
   * `token_store` for /readyz, when configured: not ready until the first read, then ready, and
   * `stale since <RFC 3339>` (still ready: the held tokens serve) while the store cannot be reached.
   */
  checks(): Record<string, Check>;
  close(): Promise<void>;
}

/** Opens the tokens of `signature`, keeping `previous`'s store when its configuration is the same. */
export function openTokens(
  signature: Config['auth']['signature'],
  deps: TokenStoreDeps,
  previous?: Tokens,
): Tokens {
  const config = signature.token_store;
  let store: TokenStore | undefined;
  if (config) {
    store = previous?.store?.matches(config) ? previous.store.retain() : openTokenStore(config, deps);
  }
  const registry = createTokenRegistry({ ...deps, tokens: signature.tokens, ...(store && { store }) });
  return {
    registry,
    store,
    ready: () => store?.ready() ?? true,
    checks(): Record<string, Check> {
      if (!store) return {};
      const since = store.ready() ? store.staleSince() : undefined;
      return {
        token_store:
          since === undefined ? store.ready() : { degraded: `stale since ${new Date(since).toISOString()}` },
      };
    },
    async close() {
      registry.close();
      await store?.close();
    },
  };
}
