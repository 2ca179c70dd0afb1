/**
 * The fixed label values of the gateway's counters (contract §6: every counter whose labels come from
 * a fixed list is exported at 0 from the first scrape, so that `rate()` sees the first increment and
 * panels show 0, not "No data", after a restart), and the latency buckets fixed from `prefer.max_wait`.
 */

/**
 * `operation`: the operation ids, the pass-through, the front door's public requests, and requests
 * that matched no route.
 */
export const OPERATIONS = [
  'GetCollectorChecksum',
  'UpdateSSOProvider',
  'GetAssetGroupTagMember',
  'ListAuditLogs',
  'passthrough',
  'public',
  'unmatched',
] as const;

/** `result` of `gateway_checksum_cache_requests_total`. */
export const CACHE_RESULTS = ['hit', 'miss', 'stale'] as const;
/** `result` of `gateway_jwt_verifications_total`. */
export const JWT_RESULTS = ['verified', 'cached', 'refused'] as const;
/** `result` of the reload counters. */
export const RELOAD_RESULTS = ['ok', 'error'] as const;

/** The usual latency buckets (seconds); those at or past the longest wait give way to it. */
const BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600,
];

/**
 * The buckets of the request and upstream latency histograms: up to `maxWait` seconds
 * (`prefer.max_wait`, the longest a request may wait), which is the last bucket. Fixed at start:
 * a histogram's buckets cannot change while Prometheus reads it.
 */
export function latencyBuckets(maxWait: number): number[] {
  if (!(maxWait > 0)) return BUCKETS.filter((b) => b <= 30);
  return [...BUCKETS.filter((b) => b < maxWait), maxWait];
}
