/**
 * The gauges whose values are read when scraped, from what the parts of the gateway report through
 * `Metrics` (`reported.ts`), and the build's own.
 */
import { buildInfo } from './build.js';
import { checkReady } from './checks.js';
import type { MetricDefinitions } from './define.js';
import type { Check } from './checks.js';
import type { Reported } from './reported.js';

/** What one database pool reports to `gateway_store_pool_connections`. */
export interface StorePoolCounts {
  idle: number;
  active: number;
  waiting: number;
}

/** What the token registry reports to `gateway_tokens`. */
export interface TokenCounts {
  config: number;
  store: number;
}

/** What the scraped gauges read. */
export interface ScrapedSources {
  readonly storePools: Reported<StorePoolCounts>;
  readonly tokenSources: Reported<TokenCounts>;
  readonly tokenStores: Reported<number | undefined>;
  readonly readiness: Reported<Record<string, Check>>;
}

/** The gauges read when scraped from what the parts report, and the build's. */
export function scrapedGauges(define: MetricDefinitions, sources: ScrapedSources): void {
  const { storePools, tokenSources, tokenStores, readiness } = sources;
  define.gauge({
    name: 'gateway_tokens',
    help: 'Signed-request tokens that verify now, by source (config: the YAML list, store: PostgreSQL).',
    labelNames: ['source'],
    // Every worker holds the same tokens: taken once, never summed (the fewest, a lagging worker shows).
    aggregator: 'min',
    collect() {
      const counts = tokenSources.newest() ?? { config: 0, store: 0 };
      for (const [source, value] of Object.entries(counts)) this.set({ source }, value);
    },
  });
  define.gauge({
    name: 'gateway_token_store_stale_seconds',
    help: 'How long the token store has been unreachable, from its last successful read (0 when current).',
    // Across cluster workers: the stalest.
    aggregator: 'max',
    collect() {
      const since = tokenStores.newest();
      this.set(since === undefined ? 0 : Math.max(0, (Date.now() - since) / 1000));
    },
  });
  define.gauge({
    name: 'gateway_store_pool_connections',
    help: 'PostgreSQL pool connections by state (idle, active), and requests waiting for one (waiting).',
    labelNames: ['state'],
    collect() {
      const sum = { idle: 0, active: 0, waiting: 0 };
      for (const c of storePools.all()) {
        sum.idle += c.idle;
        sum.active += c.active;
        sum.waiting += c.waiting;
      }
      for (const [state, value] of Object.entries(sum)) this.set({ state }, value);
    },
  });
  const build = buildInfo();
  define
    .gauge({
      name: 'gateway_build_info',
      help: 'Always 1; the labels name the running version and Node.js.',
      labelNames: ['version', 'node_version'],
      // Across cluster workers: taken once, never summed.
      aggregator: 'first',
    })
    .set({ version: build.version, node_version: build.node_version }, 1);
  define.gauge({
    name: 'gateway_ready',
    help: 'Each readiness check of /readyz: 1 ready, 0 not.',
    labelNames: ['check'],
    // Across cluster workers: the least ready.
    aggregator: 'min',
    collect() {
      this.reset();
      const checks = readiness.newest() ?? {};
      for (const [check, ok] of Object.entries(checks)) this.set({ check }, checkReady(ok) ? 1 : 0);
    },
  });
}
