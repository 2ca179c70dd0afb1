/**
 * Active health checks (contract §5, optional): `GET <path>` on every target every `interval`, with
 * `timeout`; a 2xx is a pass. `unhealthy` consecutive fails take a target out, `healthy` consecutive
 * passes bring it back; targets start healthy. Each target is checked on its own undici client (one
 * keep-alive connection), so a check never queues behind the traffic it judges.
 */
import type { Client } from 'undici';
import { undici } from './undici.js';

export interface HealthSettings {
  readonly path: string;
  /** Milliseconds between checks. */
  readonly interval: number;
  /** Milliseconds a check may take. */
  readonly timeout: number;
  readonly healthy: number;
  readonly unhealthy: number;
}

/** One check of one target: resolves true for a pass, false for a fail (never rejects). */
export type Probe = (signal: AbortSignal) => Promise<boolean>;

/** One target's health, as its checks found it. */
export class Health {
  /** False once `unhealthy` checks failed in a row, true again after `healthy` passed in a row. */
  healthy = true;
  #passes = 0;
  #fails = 0;

  /** Counts a check's result; true when it changed `healthy`. */
  record(pass: boolean, settings: HealthSettings): boolean {
    if (pass) {
      this.#fails = 0;
      this.#passes++;
      if (this.healthy || this.#passes < settings.healthy) return false;
      this.healthy = true;
      return true;
    }
    this.#passes = 0;
    this.#fails++;
    if (!this.healthy || this.#fails < settings.unhealthy) return false;
    this.healthy = false;
    return true;
  }
}

/** A target under checks: its health and how to check it. */
export interface Checked {
  readonly health: Health;
  readonly probe: Probe;
}

/**
 * Checks every one of `targets` now and then every `interval` (a check still running is not
 * started again); `changed` is told the index of each target whose health changed. Returns the stop.
 */
export function startHealthChecks(
  targets: readonly Checked[],
  settings: HealthSettings,
  changed: (index: number) => void,
): () => void {
  const running = new Set<number>();
  const round = () => {
    targets.forEach((target, i) => {
      if (running.has(i)) return;
      running.add(i);
      void target.probe(AbortSignal.timeout(settings.timeout)).then((pass) => {
        running.delete(i);
        if (!stopped && target.health.record(pass, settings)) changed(i);
      });
    });
  };
  let stopped = false;
  round();
  const timer = setInterval(round, settings.interval).unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

/**
 * The probe of the service at `url` (its path prefix put before `path`), on a client of its own
 * made with `connect` (the backend's connect timeout, or its TLS connector). Returns the probe and
 * the client's close.
 */
export function httpProbe(
  url: URL,
  path: string,
  connect: Client.Options['connect'],
): { probe: Probe; close(): Promise<void> } {
  const client = new (undici().Client)(url.origin, { connect, pipelining: 1 });
  const target = url.pathname.replace(/\/+$/, '') + path;
  return {
    async probe(signal) {
      try {
        const answer = await client.request({ method: 'GET', path: target, signal });
        await answer.body.dump();
        return answer.statusCode >= 200 && answer.statusCode < 300;
      } catch {
        return false;
      }
    },
    close: () => client.close().catch(() => client.destroy()),
  };
}
