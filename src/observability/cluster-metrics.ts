/**
 * What the cluster primary's `/metrics` serves (contract §6): the workers' registries aggregated as
 * each metric declares (counters and histograms summed; build info, readiness, timestamps and token
 * counts taken once), beside the primary's own registry: its `process_start_time_seconds` (a
 * worker's start time summed would be meaningless, and without it `GatewayAbsent` fires for ever)
 * and `gateway_worker_restarts_total`.
 */
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue, Registry } from 'prom-client';
import { MetricDefinitions } from './define.js';

/** One worker's registry, as `getMetricsAsJSON` gives it (what the primary asks each worker for). */
export type WorkerMetrics = Array<MetricObjectWithValues<MetricValue<string>>>;

/** The primary's own metrics and the aggregation of its workers'. */
export interface PrimaryMetrics {
  /** Counts a worker replaced after it died. */
  restarted(): void;
  /**
   * The primary's series that combine with the workers' as theirs do (the admin listener's TLS
   * metrics: the earliest expiry, the reloads summed).
   */
  readonly shared: Registry;
  /** The Prometheus text of the workers' `answers` (those that answered) and the primary's registry. */
  text(answers: WorkerMetrics[]): Promise<string>;
}

/** The primary's registry. */
export function createPrimaryMetrics(): PrimaryMetrics {
  const registry = new Registry();
  const define = new MetricDefinitions(registry);
  const start = define.gauge({
    name: 'process_start_time_seconds',
    help: 'Start time of the process since unix epoch in seconds.',
  });
  // As prom-client's own default metric computes it.
  start.set(Math.round(Date.now() / 1000 - process.uptime()));
  const restarts = define.counter({
    name: 'gateway_worker_restarts_total',
    help: 'Workers that died and were replaced by the primary.',
    zero: [{}],
  });
  const shared = new Registry();
  return {
    restarted: () => restarts.inc(),
    shared,
    async text(answers) {
      const all = [...answers, (await shared.getMetricsAsJSON()) as WorkerMetrics];
      return Registry.merge([AggregatorRegistry.aggregate(all), registry]).metrics();
    },
  };
}
