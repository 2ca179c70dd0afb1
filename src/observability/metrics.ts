/**
 * Every metric of the gateway, defined once on one registry. Names are part of the contract (alert
 * rules and dashboards rely on them); labels carry only low-cardinality values, never paths, ids or tokens.
 */
import client from 'prom-client';
import { tlsMetrics } from './tls-metrics.js';
import { buildInfo } from './build.js';
import { type Check, checkReady } from './checks.js';
import { zeroCounters } from './zero-counters.js';
import { DurationHistogram } from './durations.js';
import { latencyBuckets } from './labels.js';

/** What the metrics are shaped by: the longest wait (`prefer.max_wait`, seconds) ends the latency buckets. */
export interface MetricsOptions {
  readonly maxWait?: number;
}

/** Creates the registry with the default process metrics and every gateway metric. */
export function createMetrics(options: MetricsOptions = {}) {
  const registry = new client.Registry();
  // The event loop's delay sampled every 100 ms, not prom-client's default 10 ms: its timer woke an idle
  // gateway 200 times a second (measured: 5-7 ms of CPU a second doing nothing; 2 ms at 100 ms), and
  // a stall still shows in the next sample's delay.
  client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
  const registers = [registry];
  const buckets = latencyBuckets(options.maxWait ?? 300);
  // What /readyz checks, by name (set by the app for the configuration serving).
  let readiness: () => Record<string, Check> = () => ({});
  // The open PostgreSQL pools (issue 6), each adding its counts; read at scrape time, so a pool
  // closed by a reload simply stops counting.
  const storePools = new Set<() => StorePoolCounts>();
  // The token registry of each configuration (issue 18): the newest one is the one serving.
  const tokenSources = new Set<() => TokenCounts>();
  // Each open token store's `staleSince` (the newest is the one serving).
  const tokenStores = new Set<() => number | undefined>();
  /** Requests answered since the last scrape, by label set (see `requestRecorder`). */
  const requestCounts = new Set<RequestCount>();
  /** Requests in flight: counted per request as a plain number, set on the gauge when scraped. */
  const inFlight = { count: 0 };
  const requestDuration = new DurationHistogram(
    'gateway_request_duration_seconds',
    'Time from the request line to the end of the response, by operation.',
    'operation',
    buckets,
  );
  const upstreamDuration = new DurationHistogram(
    'gateway_upstream_request_duration_seconds',
    'Upstream request time, by backend.',
    'backend',
    buckets,
  );
  // prom-client's registry reads any metric that has a name, `get()` and `reset()`; its typings
  // name only its own four classes.
  registry.registerMetric(requestDuration as unknown as client.Metric);
  registry.registerMetric(upstreamDuration as unknown as client.Metric);
  const tokenStoreReloads = new client.Counter({
    name: 'gateway_token_store_reloads_total',
    help: 'Reads of the token store (everything, or the rows a notification named), by result (ok, error).',
    labelNames: ['result'] as const,
    registers,
  });
  for (const result of ['ok', 'error']) tokenStoreReloads.inc({ result }, 0);
  const metrics = {
    registry,
    /** The TLS metrics, registered on first use (only where TLS is on). */
    tls: tlsMetrics(registry),
    requestCounts,
    requests: new client.Counter({
      name: 'gateway_requests_total',
      help: 'Requests answered, by operation, method, status class and exact status (499: the client went away).',
      labelNames: ['operation', 'method', 'status_class', 'code'] as const,
      registers,
      // Counted per request in plain numbers (`requestRecorder`), added here when scraped: the label
      // hashing of prom-client then happens per scrape, not per request.
      collect() {
        for (const entry of requestCounts) {
          if (entry.pending === 0) continue;
          this.inc(entry.labels, entry.pending);
          entry.pending = 0;
        }
      },
    }),
    /** Requests taken and not yet over, counted by the request handler in a plain number, read when scraped. */
    inFlight,
    requestsInFlight: new client.Gauge({
      name: 'gateway_requests_in_flight',
      help: 'Requests taken and not yet answered or abandoned.',
      registers,
      collect() {
        this.set(inFlight.count);
      },
    }),
    clientAborts: new client.Counter({
      name: 'gateway_client_aborts_total',
      help: 'Requests whose client went away before its answer was finished, by operation.',
      labelNames: ['operation'] as const,
      registers,
    }),
    /** `gateway_request_duration_seconds`: observed per request in plain numbers (see `durations.ts`). */
    requestDuration,
    authFailures: new client.Counter({
      name: 'gateway_auth_failures_total',
      help: 'Failed authentications, by scheme and reason code.',
      labelNames: ['scheme', 'reason'] as const,
      registers,
    }),
    deadlineExceeded: new client.Counter({
      name: 'gateway_deadline_exceeded_total',
      help: 'Requests ended by their Prefer deadline, by operation.',
      labelNames: ['operation'] as const,
      registers,
    }),
    checksumCacheRequests: new client.Counter({
      name: 'gateway_checksum_cache_requests_total',
      help: 'Checksum cache look-ups, by result (hit, miss, stale).',
      labelNames: ['result'] as const,
      registers,
    }),
    checksumCacheBytes: new client.Gauge({
      name: 'gateway_checksum_cache_bytes',
      help: 'Bytes held by the checksum cache.',
      registers,
    }),
    checksumCacheEvictions: new client.Counter({
      name: 'gateway_checksum_cache_evictions_total',
      help: 'Entries evicted from the checksum cache to stay under its byte bound.',
      registers,
    }),
    /** `gateway_upstream_request_duration_seconds`: observed per request in plain numbers. */
    upstreamDuration,
    upstreamErrors: new client.Counter({
      name: 'gateway_upstream_errors_total',
      help: 'Upstream failures, by backend and kind (its own faults: never a client gone or the request deadline).',
      labelNames: ['backend', 'kind'] as const,
      registers,
    }),
    jwksFetches: new client.Counter({
      name: 'gateway_jwks_fetches_total',
      help: 'JWKS fetches, by identity provider and result.',
      labelNames: ['provider', 'result'] as const,
      registers,
    }),
    jwksKeys: new client.Gauge({
      name: 'gateway_jwks_keys',
      help: 'Keys loaded from the JWKS, by identity provider.',
      labelNames: ['provider'] as const,
      // Across cluster workers (each loads its own set), the fewest: a worker without keys shows.
      aggregator: 'min',
      registers,
    }),
    jwtVerifications: new client.Counter({
      name: 'gateway_jwt_verifications_total',
      help: 'Bearer JWTs checked, by result (verified, cached: served by the verified-token cache, refused).',
      labelNames: ['result'] as const,
      registers,
    }),
    storeDuration: new client.Histogram({
      name: 'gateway_store_operation_duration_seconds',
      help: 'Store operation time, by backend and operation.',
      labelNames: ['backend', 'operation'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    rateLimitDecisions: new client.Counter({
      name: 'gateway_rate_limit_decisions_total',
      help: 'Rate-limit decisions, by policy ("unauthenticated": the per-address limit) and result (allowed, limited, error).',
      labelNames: ['policy', 'result'] as const,
      registers,
    }),
    rateLimitStoreDuration: new client.Histogram({
      name: 'gateway_rate_limit_store_duration_seconds',
      help: 'Time of one rate-limit decision in the redis store (one script), answered or not.',
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers,
    }),
    storePools,
    tokenSources,
    tokens: new client.Gauge({
      name: 'gateway_tokens',
      help: 'Signed-request tokens that verify now, by source (config: the YAML list, store: PostgreSQL).',
      labelNames: ['source'] as const,
      // Every worker holds the same tokens: taken once, never summed (the fewest, a lagging worker shows).
      aggregator: 'min',
      registers,
      collect() {
        const newest = [...tokenSources].at(-1);
        const counts = newest?.() ?? { config: 0, store: 0 };
        for (const [source, value] of Object.entries(counts)) this.set({ source }, value);
      },
    }),
    tokenStoreReloads,
    tokenStores,
    tokenStoreStale: new client.Gauge({
      name: 'gateway_token_store_stale_seconds',
      help: 'How long the token store has been unreachable, from its last successful read (0 when current).',
      // Across cluster workers: the stalest.
      aggregator: 'max',
      registers,
      collect() {
        const since = [...tokenStores].at(-1)?.();
        this.set(since === undefined ? 0 : Math.max(0, (Date.now() - since) / 1000));
      },
    }),
    tokenStoreNotifyLag: new client.Histogram({
      name: 'gateway_token_store_notify_lag_seconds',
      help: 'From a change of a token row in the database to this process holding it (notified changes).',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    storePoolConnections: new client.Gauge({
      name: 'gateway_store_pool_connections',
      help: 'PostgreSQL pool connections by state (idle, active), and requests waiting for one (waiting).',
      labelNames: ['state'] as const,
      registers,
      collect() {
        const sum = { idle: 0, active: 0, waiting: 0 };
        for (const counts of storePools) {
          const c = counts();
          sum.idle += c.idle;
          sum.active += c.active;
          sum.waiting += c.waiting;
        }
        for (const [state, value] of Object.entries(sum)) this.set({ state }, value);
      },
    }),
    buildInfo: new client.Gauge({
      name: 'gateway_build_info',
      help: 'Always 1; the labels name the running version and Node.js.',
      labelNames: ['version', 'node_version'] as const,
      // Across cluster workers: taken once, never summed.
      aggregator: 'first',
      registers,
    }),
    configReloads: new client.Counter({
      name: 'gateway_config_reloads_total',
      help: 'Configuration reloads (SIGHUP), by result (ok, error: the old configuration stays).',
      labelNames: ['result'] as const,
      registers,
    }),
    configLastReloadSuccess: new client.Gauge({
      name: 'gateway_config_last_reload_success_timestamp_seconds',
      help: 'When the configuration serving now was loaded (start or last successful reload), Unix seconds.',
      // Across cluster workers: the oldest, so a worker left behind shows.
      aggregator: 'min',
      registers,
    }),
    ready: new client.Gauge({
      name: 'gateway_ready',
      help: 'Each readiness check of /readyz: 1 ready, 0 not.',
      labelNames: ['check'] as const,
      // Across cluster workers: the least ready.
      aggregator: 'min',
      registers,
      collect() {
        this.reset();
        for (const [check, ok] of Object.entries(readiness())) this.set({ check }, checkReady(ok) ? 1 : 0);
      },
    }),
    /** Names what `gateway_ready` reports: the checks of the configuration serving. */
    readiness(checks: () => Record<string, Check>) {
      readiness = checks;
    },
  };
  const build = buildInfo();
  metrics.buildInfo.set({ version: build.version, node_version: build.node_version }, 1);
  metrics.configLastReloadSuccess.setToCurrentTime();
  zeroCounters(metrics);
  return metrics;
}

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

export type Metrics = ReturnType<typeof createMetrics>;

/** The `status_class` label of a status: `2xx` … `5xx` (`4xx` for 499, a client gone before its answer). */
export function statusClass(status: number): string {
  return `${Math.floor(status / 100)}xx`;
}

/** The per-request counters' children, each made once (prom-client hashes the labels on every call otherwise). */
export interface RequestRecorder {
  /** Counts one answered request and observes its duration (seconds). */
  record(operation: string, method: string, status: number, seconds: number): void;
}

/** Requests of one label set answered since the last scrape. */
interface RequestCount {
  readonly labels: { operation: string; method: string; status_class: string; code: string };
  pending: number;
}

/** The recorder of `metrics`' request counters. */
export function requestRecorder(metrics: Metrics): RequestRecorder {
  /**
   * Each operation's duration child and its counts by status, then method: found by the values as
   * they are (the status a number), no key string made and hashed per request.
   */
  const operations = new Map<
    string,
    { duration: { observe(value: number): void }; statuses: Map<number, Map<string, RequestCount>> }
  >();
  const counts = metrics.requestCounts;
  return {
    record(operation, method, status, seconds) {
      let entry = operations.get(operation);
      if (entry === undefined) {
        entry = { duration: metrics.requestDuration.series(operation), statuses: new Map() };
        operations.set(operation, entry);
      }
      let methods = entry.statuses.get(status);
      if (methods === undefined) {
        methods = new Map();
        entry.statuses.set(status, methods);
      }
      let count = methods.get(method);
      if (count === undefined) {
        count = {
          labels: { operation, method, status_class: statusClass(status), code: String(status) },
          pending: 0,
        };
        methods.set(method, count);
        counts.add(count);
      }
      count.pending++;
      entry.duration.observe(seconds);
    },
  };
}
