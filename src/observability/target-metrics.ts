/**
 * The metrics of upstreams with several targets (contract §5): how many targets are in each state,
 * the retries by reason and the ejections, by backend. No metric carries a target label: a target is
 * not a bounded label; the request's log line names the target that answered.
 */
import type { Registry } from 'prom-client';
import { MetricDefinitions } from './define.js';

/** The states of `gateway_upstream_targets`, each target counted once: ejection first, then health. */
export interface TargetStates {
  healthy: number;
  unhealthy: number;
  ejected: number;
}

/** Why a request went to another target (`gateway_upstream_retries_total{reason}`). */
export const RETRY_REASONS = ['not_sent', 'failure', 'status'] as const;
export type RetryReason = (typeof RETRY_REASONS)[number];

/** What an upstream's targets report. */
export interface TargetMetrics {
  /**
   * Reports `backend`'s target states from now on, read when scraped (the newest report of a backend
   * replaces the one before, as a reload opens the backend again). Returns the stop.
   */
  track(backend: string, states: () => TargetStates): () => void;
  /** Counts one retry of `backend`'s. */
  retried(backend: string, reason: RetryReason): void;
  /** Counts one ejection of one of `backend`'s targets. */
  ejected(backend: string): void;
}

/** The target metrics, on `registry`. */
export function targetMetrics(registry: Registry): TargetMetrics {
  const define = new MetricDefinitions(registry);
  const reports = new Map<string, () => TargetStates>();
  define.gauge({
    name: 'gateway_upstream_targets',
    help: "An upstream's targets by state (healthy, unhealthy: failing its health check, ejected), each counted once.",
    labelNames: ['backend', 'state'],
    // Each worker balances, checks and ejects on its own: across workers, the largest count of each state.
    aggregator: 'max',
    collect() {
      this.reset();
      for (const [backend, states] of reports) {
        for (const [state, value] of Object.entries(states())) this.set({ backend, state }, value);
      }
    },
  });
  const retries = define.counter({
    name: 'gateway_upstream_retries_total',
    help: 'Requests sent again to another target, by backend and reason (not_sent: no byte had been written; failure: a GET or HEAD failed; status: a GET or HEAD got a 502, 503 or 504).',
    labelNames: ['backend', 'reason'],
  });
  const ejections = define.counter({
    name: 'gateway_upstream_ejections_total',
    help: 'Targets ejected after consecutive failures, by backend.',
    labelNames: ['backend'],
  });
  return {
    track(backend, states) {
      reports.set(backend, states);
      for (const reason of RETRY_REASONS) retries.inc({ backend, reason }, 0);
      ejections.inc({ backend }, 0);
      return () => {
        if (reports.get(backend) === states) reports.delete(backend);
      };
    },
    retried: (backend, reason) => retries.inc({ backend, reason }),
    ejected: (backend) => ejections.inc({ backend }),
  };
}
