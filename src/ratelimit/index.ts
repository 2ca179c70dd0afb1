/**
 * Rate limits (contract §7), built for one configuration: the store (the memory one is kept by the
 * app across reloads, so unchanged policies keep their counts), the stages, and what `/readyz`
 * says of the store.
 */
import type { RateLimitsConfig } from '../config/rate-limits.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { MemoryStore } from './memory.js';
import { createRouteLimits, type RouteLimits } from './routes.js';
import { createRateLimitStages, type RateLimitStages } from './stages.js';
import type { RateLimitStore } from './store.js';

export type { RateLimitStages } from './stages.js';
export type { RouteLimits } from './routes.js';

/** The keys of the memory store that holds the front door's route limits without `rate_limits`. */
const ROUTE_KEYS = 100_000;

/** How long a start or a reload waits for Redis before going on without it (it never fails for it). */
const CONNECT_WAIT = 2_000;

/** What outlives a configuration: the memory store's counts. */
export class RateLimitCounts {
  #memory: MemoryStore | undefined;

  /** The memory store, bounded by `maxKeys` (created on first use, then kept). */
  memory(maxKeys: number): MemoryStore {
    if (this.#memory === undefined) this.#memory = new MemoryStore(maxKeys);
    else this.#memory.resize(maxKeys);
    return this.#memory;
  }
}

export interface RateLimits {
  readonly stages: RateLimitStages;
  /** The front door's route limits (contract §11), deciding in the same store. */
  readonly routes: RouteLimits;
  /** `/readyz`'s word on the store. */
  checks(): Record<string, boolean | string>;
  /** False only while a `deny` store cannot decide (every request would be refused). */
  ready(): boolean;
  close(): Promise<void>;
}

/** The rate limits of `config`. */
export async function createRateLimits(
  config: RateLimitsConfig,
  deps: { logger: Logger; metrics: Metrics; counts: RateLimitCounts },
): Promise<RateLimits> {
  let store: RateLimitStore;
  if (config.store.type === 'redis') {
    // Loaded only here: a gateway without a Redis store never loads the client library.
    const { createRedisStore } = await import('./redis.js');
    const redis = createRedisStore(config.store, deps);
    await redis.connected(CONNECT_WAIT);
    store = redis;
  } else {
    store = deps.counts.memory(config.store.max_keys);
  }
  const deny = config.store.type === 'redis' && config.store.on_error === 'deny';
  return {
    stages: createRateLimitStages(config, store, deps.metrics),
    routes: createRouteLimits(store, deps.metrics, deny),
    checks: () => ({ [`rate_limits.${config.store.type}`]: store.check() }),
    ready: () => !deny || store.check() === true,
    close: () => store.close(),
  };
}

/**
 * The front door's route limits without `rate_limits` (they hold either way, contract §11): in the
 * per-process memory store, kept across reloads.
 */
export function routeLimitsInMemory(deps: { metrics: Metrics; counts: RateLimitCounts }): RouteLimits {
  return createRouteLimits(deps.counts.memory(ROUTE_KEYS), deps.metrics, false);
}
