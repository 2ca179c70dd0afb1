/**
 * Every metric of the gateway, defined once on one registry, in one way (`define.ts`): the label sets
 * of a fixed list are exported at 0 from the first scrape, and a value read when scraped comes from
 * what the parts of the gateway report (`reported.ts`). Names are part of the contract (alert rules
 * and dashboards rely on them); labels carry only low-cardinality values, never paths, ids or tokens.
 */
import client, { type Registry } from 'prom-client';
import { type AuditMetrics, auditMetrics } from './audit-metrics.js';
import type { Check } from './checks.js';
import { each, MetricDefinitions } from './define.js';
import { DurationHistogram } from './durations.js';
import { CACHE_RESULTS, JWT_RESULTS, latencyBuckets, OPERATIONS, RELOAD_RESULTS } from './labels.js';
import { Reported } from './reported.js';
import { scrapedGauges, type StorePoolCounts, type TokenCounts } from './scraped.js';
import type { RequestCount } from './request-recorder.js';
import { type TargetMetrics, targetMetrics } from './target-metrics.js';
import { type TlsMetrics, tlsMetrics } from './tls-metrics.js';

/** What the metrics are shaped by. */
export interface MetricsOptions {
  /** The longest wait (`prefer.max_wait`, seconds): it ends the latency buckets. */
  readonly maxWait?: number;
  /** `gateway_auth_failures_total`'s reasons by scheme (the schemes' own), exported at 0. */
  readonly authFailures?: Readonly<Record<string, readonly string[]>>;
}

/** The metrics the parts of the gateway count into, and the readers they report through. */
export interface Metrics {
  readonly registry: Registry;
  /** The TLS metrics, registered on first use (only where TLS is on). */
  readonly tls: { get(): TlsMetrics };
  /** Requests answered since the last scrape, counted by the request recorder. */
  readonly requestCounts: Set<RequestCount>;
  /** Requests taken and not yet over, counted by the request handler, read when scraped. */
  readonly inFlight: { count: number };
  /** `gateway_request_duration_seconds`, observed per request in plain numbers. */
  readonly requestDuration: DurationHistogram;
  readonly clientAborts: client.Counter<'operation'>;
  /** `gateway_route_requests_total{route,code}`: every routed request by route name (contract §11). */
  readonly routeRequests: client.Counter<'route' | 'code'>;
  readonly authFailures: client.Counter<'scheme' | 'reason'>;
  readonly deadlineExceeded: client.Counter<'operation'>;
  readonly checksumCacheRequests: client.Counter<'result'>;
  readonly checksumCacheBytes: client.Gauge;
  readonly checksumCacheEvictions: client.Counter;
  /** `gateway_upstream_request_duration_seconds`, observed per request in plain numbers. */
  readonly upstreamDuration: DurationHistogram;
  readonly upstreamErrors: client.Counter<'backend' | 'kind'>;
  /** The states, retries and ejections of each upstream's targets. */
  readonly targets: TargetMetrics;
  readonly jwksFetches: client.Counter<'provider' | 'result'>;
  readonly jwksKeys: client.Gauge<'provider'>;
  readonly jwtVerifications: client.Counter<'result'>;
  readonly storeDuration: client.Histogram<'backend' | 'operation'>;
  readonly rateLimitDecisions: client.Counter<'policy' | 'result'>;
  readonly rateLimitStoreDuration: DurationHistogram;
  readonly tokenStoreReloads: client.Counter<'result'>;
  readonly tokenStoreNotifyLag: client.Histogram;
  readonly configReloads: client.Counter<'result'>;
  readonly configLastReloadSuccess: client.Gauge;
  /** The open database pools' counts (`gateway_store_pool_connections`, summed). */
  readonly storePools: Reported<StorePoolCounts>;
  /** Each configuration's token counts (`gateway_tokens`: the newest, the one serving). */
  readonly tokenSources: Reported<TokenCounts>;
  /** Each open token store's `staleSince` (`gateway_token_store_stale_seconds`: the newest). */
  readonly tokenStores: Reported<number | undefined>;
  /** The readiness checks of the configuration serving (`gateway_ready`). */
  readonly readiness: Reported<Record<string, Check>>;
  /** The audit trail's (contract §12). */
  readonly audit: AuditMetrics;
}

/** Creates the registry with the default process metrics and every gateway metric. */
export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new client.Registry();
  // The event loop's delay is sampled every 100 ms rather than prom-client's 10 ms: an idle gateway
  // then stays idle, and a stall still shows in the next sample's delay.
  client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
  const define = new MetricDefinitions(registry);
  const buckets = latencyBuckets(options.maxWait ?? 300);
  const requestCounts = new Set<RequestCount>();
  const inFlight = { count: 0 };
  const storePools = new Reported<StorePoolCounts>();
  const tokenSources = new Reported<TokenCounts>();
  const tokenStores = new Reported<number | undefined>();
  const readiness = new Reported<Record<string, Check>>();
  const requestDuration = define.own(
    new DurationHistogram(
      'gateway_request_duration_seconds',
      'Time from the request line to the end of the response, by operation.',
      'operation',
      buckets,
    ),
  );
  const upstreamDuration = define.own(
    new DurationHistogram(
      'gateway_upstream_request_duration_seconds',
      'Upstream request time, by backend.',
      'backend',
      buckets,
    ),
  );
  const tokenStoreReloads = define.counter({
    name: 'gateway_token_store_reloads_total',
    help: 'Reads of the token store (everything, or the rows a notification named), by result (ok, error).',
    labelNames: ['result'],
    zero: each('result', ['ok', 'error']),
  });
  const tls = tlsMetrics(registry);
  define.counter({
    name: 'gateway_requests_total',
    help: 'Requests answered, by operation, method, status class and exact status (499: the client went away).',
    labelNames: ['operation', 'method', 'status_class', 'code'],
    collect() {
      for (const entry of requestCounts) {
        if (entry.pending === 0) continue;
        this.inc(entry.labels, entry.pending);
        entry.pending = 0;
      }
    },
  });
  define.gauge({
    name: 'gateway_requests_in_flight',
    help: 'Requests taken and not yet answered or abandoned.',
    collect() {
      this.set(inFlight.count);
    },
  });
  const perOperation = each('operation', OPERATIONS);
  const metrics: Metrics = {
    registry,
    tls,
    requestCounts,
    inFlight,
    requestDuration,
    clientAborts: define.counter({
      name: 'gateway_client_aborts_total',
      help: 'Requests whose client went away before its answer was finished, by operation.',
      labelNames: ['operation'],
      zero: perOperation,
    }),
    routeRequests: define.counter({
      name: 'gateway_route_requests_total',
      help: 'Routed requests, by route name (an operation, a front-door route of the service or of the operator) and exact status.',
      labelNames: ['route', 'code'],
    }),
    authFailures: define.counter({
      name: 'gateway_auth_failures_total',
      help: 'Failed authentications, by scheme and reason code.',
      labelNames: ['scheme', 'reason'],
      zero: Object.entries(options.authFailures ?? {}).flatMap(([scheme, reasons]) =>
        reasons.map((reason) => ({ scheme, reason })),
      ),
    }),
    deadlineExceeded: define.counter({
      name: 'gateway_deadline_exceeded_total',
      help: 'Requests ended by their Prefer deadline, by operation.',
      labelNames: ['operation'],
      zero: perOperation,
    }),
    checksumCacheRequests: define.counter({
      name: 'gateway_checksum_cache_requests_total',
      help: 'Checksum cache look-ups, by result (hit, miss, stale).',
      labelNames: ['result'],
      zero: each('result', CACHE_RESULTS),
    }),
    checksumCacheBytes: define.gauge({
      name: 'gateway_checksum_cache_bytes',
      help: 'Bytes held by the checksum cache.',
    }),
    checksumCacheEvictions: define.counter({
      name: 'gateway_checksum_cache_evictions_total',
      help: 'Entries evicted from the checksum cache to stay under its byte bound.',
    }),
    upstreamDuration,
    upstreamErrors: define.counter({
      name: 'gateway_upstream_errors_total',
      help: 'Upstream failures, by backend and kind (its own faults: never a client gone or the request deadline).',
      labelNames: ['backend', 'kind'],
    }),
    targets: targetMetrics(registry),
    jwksFetches: define.counter({
      name: 'gateway_jwks_fetches_total',
      help: 'JWKS fetches, by identity provider and result.',
      labelNames: ['provider', 'result'],
    }),
    jwksKeys: define.gauge({
      name: 'gateway_jwks_keys',
      help: 'Keys loaded from the JWKS, by identity provider.',
      labelNames: ['provider'],
      // Across cluster workers (each loads its own set), the fewest: a worker without keys shows.
      aggregator: 'min',
    }),
    jwtVerifications: define.counter({
      name: 'gateway_jwt_verifications_total',
      help: 'Bearer JWTs checked, by result (verified, cached: served by the verified-token cache, refused).',
      labelNames: ['result'],
      zero: each('result', JWT_RESULTS),
    }),
    storeDuration: define.histogram({
      name: 'gateway_store_operation_duration_seconds',
      help: 'Store operation time, by backend and operation.',
      labelNames: ['backend', 'operation'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    }),
    rateLimitDecisions: define.counter({
      name: 'gateway_rate_limit_decisions_total',
      help: 'Rate-limit decisions, by policy ("unauthenticated": the per-address limit) and result (allowed, limited, error).',
      labelNames: ['policy', 'result'],
    }),
    rateLimitStoreDuration: define.own(
      new DurationHistogram(
        'gateway_rate_limit_store_duration_seconds',
        'Time of one rate-limit decision in the redis store (one script), answered or not.',
        undefined,
        [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      ),
    ),
    storePools,
    tokenSources,
    tokenStoreReloads,
    tokenStores,
    tokenStoreNotifyLag: define.histogram({
      name: 'gateway_token_store_notify_lag_seconds',
      help: 'From a change of a token row in the database to this process holding it (notified changes).',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    }),
    configReloads: define.counter({
      name: 'gateway_config_reloads_total',
      help: 'Configuration reloads (SIGHUP), by result (ok, error: the old configuration stays).',
      labelNames: ['result'],
      zero: each('result', RELOAD_RESULTS),
    }),
    configLastReloadSuccess: define.gauge({
      name: 'gateway_config_last_reload_success_timestamp_seconds',
      help: 'When the configuration serving now was loaded (start or last successful reload), Unix seconds.',
      // Across cluster workers: the oldest, so a worker left behind shows.
      aggregator: 'min',
    }),
    readiness,
    audit: auditMetrics(define),
  };
  metrics.configLastReloadSuccess.setToCurrentTime();
  scrapedGauges(define, metrics);
  return metrics;
}
