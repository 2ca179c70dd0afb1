/**
 * Puts every counter series whose labels come from a fixed list at 0 (contract §6), so that they
 * exist from the first scrape: a panel shows 0 rather than "No data" after a restart, and `rate()`
 * sees the first increment.
 */
import { CACHE_RESULTS, JWT_RESULTS, OPERATIONS, RELOAD_RESULTS } from './labels.js';

/** A counter as far as this needs it. */
interface Countable<L extends string> {
  inc(labels: Partial<Record<L, string>>, value: number): void;
}

/** The counters with fixed labels (the registry's own, from `createMetrics`). */
export interface FixedCounters {
  readonly clientAborts: Countable<'operation'>;
  readonly deadlineExceeded: Countable<'operation'>;
  readonly checksumCacheRequests: Countable<'result'>;
  readonly jwtVerifications: Countable<'result'>;
  readonly configReloads: Countable<'result'>;
}

/** Sets each fixed label set of `metrics` at 0. */
export function zeroCounters(metrics: FixedCounters): void {
  for (const operation of OPERATIONS) {
    metrics.clientAborts.inc({ operation }, 0);
    metrics.deadlineExceeded.inc({ operation }, 0);
  }
  for (const result of CACHE_RESULTS) metrics.checksumCacheRequests.inc({ result }, 0);
  for (const result of JWT_RESULTS) metrics.jwtVerifications.inc({ result }, 0);
  for (const result of RELOAD_RESULTS) metrics.configReloads.inc({ result }, 0);
}
