/**
 * The targets of one upstream as its clients open them (the backends' undici client and the
 * pass-through's relay alike, contract §5 "Several targets"): a `TargetSet` over its `targets` (or
 * its one `url`), each target with its transport and its reachability, the active health checks on
 * clients of their own, ejections and health changes logged and counted, the states exported, and
 * the one readiness rule (some target in, not failing, and reached at its last contact).
 */
import type { Client } from 'undici';
import { GatewayError } from '../errors.js';
import type { UpstreamConfig } from '../config/upstream.js';
import { targetUrls } from '../config/upstream-targets.js';
import { type Answered, type Sending, sendToTargets, type Transport } from './attempts.js';
import type { UpstreamDeps } from './endpoint.js';
import { httpProbe } from './health.js';
import { probeReachability, type Reachability } from './probe.js';
import { type Target, targetSettings, TargetSet } from './targets.js';

/** A target's transport and whether it was reached at its last contact. */
export interface Reached<T> {
  readonly transport: T;
  readonly reach: Reachability;
}

/** One target of an upstream, as its client sees it. */
export type UpstreamTarget<T> = Target<Reached<T>>;

export interface UpstreamTargets<T> {
  readonly set: TargetSet<Reached<T>>;
  /**
   * Sends `request` through `transport` as `sendToTargets` does, retries counted; 502 `upstream
   * unreachable` at once (counted as `all_out`) when every target is out.
   */
  send<R>(request: Sending, transport: Transport<Reached<T>, R>): Promise<Answered<Reached<T>, R>>;
  /** Records what a request found of `target`: an answer (`ok`), or a failure of the catalogue. */
  contact(target: UpstreamTarget<T>, ok: boolean, err?: unknown): void;
  /** False when every target is out, or none of those in was reached at its last contact. */
  ready(): boolean;
  /** Stops the probes, the health checks and the states' report (the transports are the caller's). */
  close(): Promise<void>;
}

/** Failures that say a target cannot be reached (its readiness), not that it answered badly. */
const UNREACHED = new Set(['connect', 'dns', 'connect_timeout']);

/**
 * The targets of the upstream `config`, named `name` in metrics and logs; `open` makes a target's
 * transport, `connect` the connector of its health checks (the backend's timeout, or its TLS).
 */
export function openTargets<T>(
  config: UpstreamConfig,
  name: string,
  deps: UpstreamDeps,
  open: (url: URL) => T,
  connect: Client.Options['connect'],
): UpstreamTargets<T> {
  const { logger, metrics } = deps;
  const urls = targetUrls(config);
  const set: TargetSet<Reached<T>> = new TargetSet(urls, targetSettings(config), {
    open: (url) => ({
      transport: open(url),
      reach: probeReachability(url, config.connect_timeout, name, logger, url.href.replace(/\/+$/, '')),
    }),
    probe: (url, path) => httpProbe(url, path, connect),
    events: {
      ejected(target, ms) {
        metrics.targets.ejected(name);
        logger.warn(
          { backend: name, target: target.name, ejection_ms: ms, ejections: set.ejections(target) },
          'upstream target ejected',
        );
      },
      health(target) {
        const healthy = target.health.healthy;
        const line = { backend: name, target: target.name };
        if (healthy) logger.info(line, 'upstream target healthy');
        else logger.warn(line, 'upstream target unhealthy');
      },
    },
  });
  const untrack = metrics.targets.track(name, () => set.states());
  const retried = (reason: Parameters<typeof metrics.targets.retried>[1]) =>
    metrics.targets.retried(name, reason);
  return {
    set,
    send(request, transport) {
      return sendToTargets(set, request, { ...transport, retried }).catch((err: unknown) => {
        if (err instanceof GatewayError && err.code === 'GW_UPSTREAM_ALL_TARGETS_OUT') {
          metrics.upstreamErrors.inc({ backend: name, kind: 'all_out' });
        }
        throw err;
      });
    },
    contact(target, ok, err) {
      if (ok) return target.transport.reach.mark(true);
      const kind = err instanceof GatewayError ? err.reason : undefined;
      if (kind !== undefined && UNREACHED.has(kind)) target.transport.reach.mark(false, kind);
    },
    ready: () => set.targets.some((t) => set.serving(t) && t.transport.reach.ready()),
    async close() {
      untrack();
      for (const target of set.targets) target.transport.reach.close();
      await set.close();
    },
  };
}
