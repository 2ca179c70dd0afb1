/**
 * The targets of one upstream (contract §5 "Several targets"): each with its own transport (an undici
 * `Pool`, or the relay's agent) and its state: requests in flight, health, ejection. A request is
 * given a target among those neither ejected nor failing their health check, by the backend's
 * balancing policy. When every target that is in has failed `consecutive_failures` times in a row
 * (the ejection cap kept them in), one request at a time still tries one of them and the others are
 * answered at once; when none is in, every request is answered at once.
 */
import { performance } from 'node:perf_hooks';
import type { TargetStates } from '../observability/target-metrics.js';
import { type Balanced, balancer } from './balance.js';
import { type Checked, Health, type HealthSettings, type Probe, startHealthChecks } from './health.js';
import { type Clock, Outlier, type OutlierSettings } from './outlier.js';
import { RetryBudget } from './retry.js';
import type { Balance, HealthCheckConfig, OutlierConfig, RetriesConfig } from '../config/upstream-targets.js';

/** How a target set behaves: the backend's `balance`, `outlier`, `health_check` and `retries`. */
export interface TargetSettings {
  readonly balance: Balance;
  readonly outlier: OutlierSettings;
  readonly healthCheck?: HealthSettings;
  readonly retries: { readonly attempts: number; readonly budget: number };
}

/** The settings of an upstream's configuration (its `balance`, `health_check`, `outlier`, `retries`). */
export function targetSettings(config: {
  readonly balance: Balance;
  readonly health_check?: HealthCheckConfig | undefined;
  readonly outlier: OutlierConfig;
  readonly retries: RetriesConfig;
}): TargetSettings {
  const { outlier, retries, health_check: check } = config;
  return {
    balance: config.balance,
    outlier: {
      consecutiveFailures: outlier.consecutive_failures,
      baseEjection: outlier.base_ejection,
      maxEjected: outlier.max_ejected,
    },
    ...(check === undefined ? {} : { healthCheck: check }),
    retries,
  };
}

/** What a target set tells its owner (logs, metrics). */
export interface TargetEvents<T> {
  /** `target` was ejected for `ms`. */
  ejected?(target: Target<T>, ms: number): void;
  /** `target`'s active health changed (see `target.health.healthy`). */
  health?(target: Target<T>): void;
}

/** What a target set is made with besides its settings; a test gives its own clock and chance. */
export interface TargetOptions<T> {
  /** The transport of the target at `url`. */
  open(url: URL): T;
  /** The health probe of the target at `url` (required with `healthCheck`). */
  probe?(url: URL, path: string): { probe: Probe; close(): Promise<void> };
  readonly events?: TargetEvents<T>;
  readonly clock?: Clock;
  readonly random?: () => number;
}

/** One target. */
export class Target<T> implements Balanced {
  /** Requests sent to it and not over yet. */
  inFlight = 0;
  readonly health = new Health();
  /** Its URL's path, put before every target (`http://svc/bh` sends `/bh/api/v2/…`). */
  readonly prefix: string;
  /** How it is named in log lines: its URL without a trailing `/`. */
  readonly name: string;

  constructor(
    readonly index: number,
    readonly url: URL,
    readonly transport: T,
  ) {
    this.prefix = url.pathname.replace(/\/+$/, '');
    this.name = url.origin + this.prefix;
  }
}

/** A target given to one attempt; `end` once the attempt is over. */
export interface Lease<T> {
  readonly target: Target<T>;
  end(): void;
}

/** The targets of one upstream, their states, and the retry budget they share. */
export class TargetSet<T> {
  readonly targets: readonly Target<T>[];
  readonly settings: TargetSettings;
  readonly budget: RetryBudget;
  readonly #outlier: Outlier;
  readonly #pick;
  readonly #events: TargetEvents<T>;
  readonly #closers: Array<() => unknown> = [];
  /** Whether a request is trying a failing target while all that are in are failing. */
  #trial = false;

  constructor(urls: readonly string[], settings: TargetSettings, options: TargetOptions<T>) {
    this.settings = settings;
    this.targets = urls.map((u, i) => new Target(i, new URL(u), options.open(new URL(u))));
    this.budget = new RetryBudget(settings.retries.budget);
    this.#outlier = new Outlier(urls.length, settings.outlier, options.clock ?? (() => performance.now()));
    this.#pick = balancer(settings.balance, options.random);
    this.#events = options.events ?? {};
    const check = settings.healthCheck;
    if (check === undefined || options.probe === undefined) return;
    const checked: Checked[] = this.targets.map((target) => {
      const made = (options.probe as NonNullable<typeof options.probe>)(target.url, check.path);
      this.#closers.push(made.close);
      return { health: target.health, probe: made.probe };
    });
    this.#closers.push(
      startHealthChecks(checked, check, (i) => this.#events.health?.(this.targets[i] as Target<T>)),
    );
  }

  /** Whether `target` is in: neither ejected nor failing its health check. */
  isIn(target: Target<T>): boolean {
    return target.health.healthy && !this.#outlier.ejected(target.index);
  }

  /**
   * A target for a request, none of `tried`; undefined when every target is out (or tried). The
   * lease counts the request in the target's `inFlight` until it ends.
   */
  pick(tried?: ReadonlySet<Target<T>>): Lease<T> | undefined {
    const open = (t: Target<T>) => this.isIn(t) && tried?.has(t) !== true;
    let trial = false;
    if (!this.targets.some((t) => this.isIn(t) && !this.#outlier.failing(t.index))) {
      // Every target that is in keeps failing: one request at a time tries one, the others are answered at once.
      if (this.#trial) return undefined;
      trial = true;
    }
    const target = this.#pick(this.targets, open);
    if (target === undefined) return undefined;
    target.inFlight++;
    if (trial) this.#trial = true;
    let ended = false;
    return {
      target,
      end: () => {
        if (ended) return;
        ended = true;
        target.inFlight--;
        if (trial) this.#trial = false;
      },
    };
  }

  /** `target` answered with anything but a failure: its run of failures ends. */
  succeeded(target: Target<T>): void {
    this.#outlier.succeeded(target.index);
  }

  /** `target` failed (a connect failure, a reset, a timeout, a 502/503/504): it may be ejected. */
  failed(target: Target<T>): void {
    if (!this.#outlier.failed(target.index)) return;
    const ms = this.#outlier.ejections(target.index) * this.settings.outlier.baseEjection;
    this.#events.ejected?.(target, ms);
  }

  /** Whether `target` is ejected now. */
  isEjected(target: Target<T>): boolean {
    return this.#outlier.ejected(target.index);
  }

  /** `target`'s ejection count now (its decay applied). */
  ejections(target: Target<T>): number {
    return this.#outlier.ejections(target.index);
  }

  /** The count of targets in each state, each counted once: ejection first, then health. */
  states(): TargetStates {
    const states = { healthy: 0, unhealthy: 0, ejected: 0 };
    for (const target of this.targets) {
      if (this.#outlier.ejected(target.index)) states.ejected++;
      else if (target.health.healthy) states.healthy++;
      else states.unhealthy++;
    }
    return states;
  }

  /** Whether `target` is in and not failing every request (the ejection cap kept it in). */
  serving(target: Target<T>): boolean {
    return this.isIn(target) && !this.#outlier.failing(target.index);
  }

  /** False when every target is out (ejected, failing its health check, or failing every request). */
  ready(): boolean {
    return this.targets.some((t) => this.serving(t));
  }

  /** Stops the health checks and closes their clients (the transports are their owner's to close). */
  async close(): Promise<void> {
    await Promise.all(this.#closers.map((close) => close()));
  }
}
