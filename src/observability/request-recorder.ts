/**
 * The per-request counts of `gateway_requests_total` and the request durations, kept in plain
 * numbers by the request's recorder and handed to prom-client when scraped: the label hashing then
 * happens per scrape, not per request.
 */
import type { DurationHistogram } from './durations.js';

/** Requests of one label set answered since the last scrape. */
export interface RequestCount {
  readonly labels: { operation: string; method: string; status_class: string; code: string };
  pending: number;
}

/** What the recorder counts into: the counts the request counter collects, and the durations. */
export interface RequestMetrics {
  readonly requestCounts: Set<RequestCount>;
  readonly requestDuration: DurationHistogram;
}

/** The `status_class` label of a status: `2xx` … `5xx` (`4xx` for 499, a client gone before its answer). */
export function statusClass(status: number): string {
  return `${Math.floor(status / 100)}xx`;
}

/** The per-request counters' children, each made once (prom-client hashes the labels on every call otherwise). */
export interface RequestRecorder {
  /** Counts one answered request and observes its duration (seconds). */
  record(operation: string, method: string, status: number, seconds: number): void;
}

/** The recorder of `metrics`' request counters. */
export function requestRecorder(metrics: RequestMetrics): RequestRecorder {
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

/** Counts routed requests by route name and status (`gateway_route_requests_total`). */
export interface RouteRecorder {
  record(route: string, status: number): void;
}

/**
 * The recorder of `gateway_route_requests_total`: each (route, status) child made once, found by the
 * values as they are. Route names are bounded by the configuration.
 */
export function routeRecorder(counter: {
  labels(labels: { route: string; code: string }): { inc(): void };
}): RouteRecorder {
  const routes = new Map<string, Map<number, { inc(): void }>>();
  return {
    record(route, status) {
      let statuses = routes.get(route);
      if (statuses === undefined) {
        statuses = new Map();
        routes.set(route, statuses);
      }
      let child = statuses.get(status);
      if (child === undefined) {
        child = counter.labels({ route, code: String(status) });
        statuses.set(status, child);
      }
      child.inc();
    },
  };
}
