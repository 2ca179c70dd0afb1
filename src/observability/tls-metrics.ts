/**
 * The TLS metrics (contract §6, §8). They exist only where TLS is on: made on first use, which the
 * app does at start when its configuration has TLS, so they are exported from the first scrape.
 */
import type client from 'prom-client';
import type { Registry } from 'prom-client';
import { each, MetricDefinitions } from './define.js';

/** The TLS metrics of one registry. */
export interface TlsMetrics {
  /** `gateway_tls_certificate_not_after_timestamp_seconds{listener}` (`api`, `admin`). */
  readonly notAfter: client.Gauge<'listener'>;
  /** `gateway_tls_reloads_total{result}` (`ok`, `error`). */
  readonly reloads: client.Counter<'result'>;
}

/** A lazy maker of the TLS metrics on `registry`: `get()` registers them the first time. */
export function tlsMetrics(registry: Registry): { get(): TlsMetrics } {
  const define = new MetricDefinitions(registry);
  let made: TlsMetrics | undefined;
  return {
    get() {
      if (made) return made;
      const reloads = define.counter({
        name: 'gateway_tls_reloads_total',
        help: 'Loads of changed TLS certificates and keys (listeners and upstreams), by result (ok, error).',
        labelNames: ['result'],
        zero: each('result', ['ok', 'error']),
      });
      let notAfter: client.Gauge<'listener'> | undefined;
      made = {
        reloads,
        // Only where a listener has TLS (an upstream's TLS alone makes no expiry series).
        get notAfter() {
          notAfter ??= define.gauge({
            name: 'gateway_tls_certificate_not_after_timestamp_seconds',
            help: "When the listener's serving certificate expires (seconds since the epoch), by listener (api, admin).",
            labelNames: ['listener'],
            // Across cluster workers, the earliest: a worker still serving an old certificate shows.
            aggregator: 'min',
          });
          return notAfter;
        },
      };
      return made;
    },
  };
}
