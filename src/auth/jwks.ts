/**
 * The key manager of one identity provider (contract §3, Bearer JWT). jose's `createRemoteJWKSet`
 * neither refreshes in the background nor keeps the last good keys when a fetch fails; this one is
 * built on jose's primitives (`importJWK`, see `jwk-set.ts`) and:
 * - fetches at start and again before the keys go stale (the response's `max-age`, within bounds),
 *   re-reading the discovery document first when the keys come from discovery;
 * - keeps serving the last good keys while the identity provider is down or answers garbage, across
 *   reloads too (its state lives in `key-sources.ts`);
 * - on an unknown `kid`, fetches at once unless a fetch *caused by an unknown kid* started within the
 *   cooldown; a request inside that cooldown waits for the next allowed fetch when it comes before
 *   the request's deadline (at most `MAX_WAITING` per process). A rotation is therefore never refused,
 *   and a flood of made-up `kid`s costs the provider at most one fetch per cooldown;
 * - bounds every fetch in time and size.
 */
import { errors } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { SpanHandle, SpanParent, Tracing } from '../observability/tracing/tracing.js';
import { describe, discover, download, type FetchResult, resultOf, safeUrl } from './jwks-fetch.js';
import { type Lookup, lookUp, readKeySet, type VerifyKey } from './jwk-set.js';
import { type KeySourceState, newKeySourceState } from './key-sources.js';

/** Requests of the whole process that may wait for a cooldown to end; beyond, refused at once. */
export const MAX_WAITING = 1000;

const RESULTS: readonly FetchResult[] = ['ok', 'error', 'timeout', 'invalid'];
const JWKS_TYPES = 'application/jwk-set+json, application/json';

/** Where a provider's keys come from: a key set, or the discovery document that names one. */
export type KeySource =
  { readonly jwksUrl: string } | { readonly discoveryUrl: string; readonly issuer: string };

export interface JwksOptions {
  source: KeySource;
  /** The `provider` label of the metrics and log lines. */
  provider: string;
  /** Bound of one fetch, body included (ms). */
  timeout: number;
  /** Longest time between background refreshes (ms); also the interval without `max-age`. */
  refreshInterval: number;
  /** Shortest time between two fetches caused by unknown `kid`s, and the retry delay after a failure. */
  cooldown: number;
  /** The algorithms keys may verify. */
  algorithms: readonly string[];
  /** What this source learnt before (a reload with the source unchanged); a new state when absent. */
  state?: KeySourceState;
  /**
   * The count of requests waiting for a cooldown to end, shared by every provider of the app
   * instance (at most `MAX_WAITING`); this manager's own when absent.
   */
  waiters?: { count: number };
  metrics?: Metrics;
  logger?: Logger;
  /** Traces each fetch as a client span (of the request that caused it, if any). */
  tracing?: Tracing;
  now?: () => number;
}

/** How long a request may wait for keys: its deadline (the manager's clock, ms) and its signal. */
export interface KeyWait {
  readonly deadline?: number;
  readonly signal?: AbortSignal;
  /** With tracing on, where a fetch this lookup starts hangs (the authenticate stage's span). */
  readonly parent?: SpanParent | undefined;
}

/** The keys of one identity provider, kept fresh in the background. */
export interface JwksKeys {
  /** True once a key set has been loaded (it stays true: the last good keys keep serving). */
  ready(): boolean;
  /** What `/readyz` says: true when loaded, else false or why (a discovery document at jwks_url). */
  status(): true | false | string;
  /**
   * The key for a token's `alg` and `kid`, fetching the set when the `kid` is new as the cooldown
   * allows; before the first load, waits for the fetch under way. Throws the catalogue's 401.
   */
  resolve(
    alg: string,
    kid: string | undefined,
    wait?: KeyWait,
  ): Promise<{ key: VerifyKey; fingerprint: string }>;
  /** Whether the current set still holds the key with this fingerprint (for cached tokens). */
  holds(fingerprint: string): boolean;
  /**
   * Stops background refreshes. A fetch under way, and the requests waiting for keys, still finish
   * (a reload's old configuration drains), into the state the successor shares.
   */
  close(): void;
}

/** Starts fetching at once (unless the state already holds keys, which then serve meanwhile). */
export function createJwksKeys(options: JwksOptions): JwksKeys {
  const now = options.now ?? Date.now;
  const { metrics, logger, source, provider, cooldown } = options;
  const allowed = new Set(options.algorithms);
  const state = options.state ?? newKeySourceState();
  const waiters = options.waiters ?? { count: 0 };
  // Closed (a reload replaced this configuration): no more background refreshes, but a request
  // already here still gets its fetch, as old backends drain. The state is shared with the successor.
  let closed = false;
  const where =
    'jwksUrl' in source
      ? { jwks_url: safeUrl(source.jwksUrl) }
      : { discovery_url: safeUrl(source.discoveryUrl) };
  let inflight: { readonly promise: Promise<void>; readonly startedAt: number } | undefined;
  let lastFetch = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  const wake = sleeper(now);

  for (const result of RESULTS) metrics?.jwksFetches.inc({ provider, result }, 0);
  metrics?.jwksKeys.set({ provider }, state.keys?.length ?? 0);

  const schedule = (ms: number): void => {
    clearTimeout(timer);
    if (closed) return;
    timer = setTimeout(() => void fetchKeys('refresh'), ms);
    timer.unref();
  };

  /** One fetch, traced when tracing is on (a span `jwks fetch` with the key source's address). */
  const load = (keysOnly: boolean, parent: SpanParent | undefined): Promise<void> => {
    const { tracing } = options;
    if (tracing === undefined) return fetchOnce(keysOnly);
    const url = new URL('jwksUrl' in source ? source.jwksUrl : source.discoveryUrl);
    const attributes = {
      'server.address': url.hostname,
      'server.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
      'url.full': `${url.origin}${url.pathname}`,
      'gateway.jwks.provider': provider,
    };
    return tracing.span('jwks fetch', 'client', attributes, parent, (span) => fetchOnce(keysOnly, span));
  };

  /** One fetch: the discovery document first unless a key fetch can use the key set's URL it named. */
  const fetchOnce = async (keysOnly: boolean, span?: SpanHandle): Promise<void> => {
    const signal = AbortSignal.timeout(options.timeout);
    try {
      let url: string;
      if ('jwksUrl' in source) url = source.jwksUrl;
      else if (keysOnly && state.jwksUri !== undefined) url = state.jwksUri;
      else url = await discover(source.discoveryUrl, source.issuer, signal);
      const { text, lifetime } = await download(url, signal, JWKS_TYPES);
      const next = await readKeySet(text, allowed);
      if (!('jwksUrl' in source)) state.jwksUri = url;
      state.keys = next;
      state.fingerprints = new Set(next.map((k) => k.fingerprint));
      state.problem = undefined;
      metrics?.jwksFetches.inc({ provider, result: 'ok' });
      // A closed manager's provider may be gone from the configuration (its series removed).
      if (!closed) metrics?.jwksKeys.set({ provider }, next.length);
      logger?.info({ provider, ...where, keys: next.length }, 'jwks loaded');
      schedule(refreshDelay(lifetime, options));
    } catch (err) {
      const result = resultOf(err, signal.aborted);
      state.problem = describe(err);
      metrics?.jwksFetches.inc({ provider, result });
      span?.set({ 'error.type': result });
      logger?.warn(
        { provider, ...where, result, reason: state.problem, keys_kept: state.keys?.length ?? 0 },
        'jwks fetch failed',
      );
      schedule(cooldown);
    }
  };

  /**
   * One fetch at a time: a refresh during a fetch shares it. `kid`: caused by an unknown `kid`.
   * `parent`: the span of the request that caused it (none: a background refresh, a root span).
   */
  const fetchKeys = (why: 'refresh' | 'kid', parent?: SpanParent): Promise<void> => {
    if (inflight !== undefined) return inflight.promise;
    const startedAt = now();
    lastFetch = startedAt;
    if (why === 'kid') state.lastKidFetch = startedAt;
    const promise = load(why === 'kid', parent).finally(() => {
      inflight = undefined;
    });
    inflight = { promise, startedAt };
    return promise;
  };

  /**
   * Looks `kid` up again after a fetch that started once it was found unknown: joins a fetch under
   * way (enough if it started after this request arrived), starts one when the cooldown allows, or
   * waits for the cooldown's end when that comes before the deadline and few enough wait.
   */
  const afterFetch = async (alg: string, kid: string | undefined, wait: KeyWait): Promise<Lookup> => {
    const arrived = now();
    for (;;) {
      const current = inflight;
      if (current !== undefined) {
        await within(current.promise, wait.signal);
        const found = lookUp(state.keys ?? [], alg, kid);
        if (found !== 'unknown' || current.startedAt >= arrived) return found;
        continue;
      }
      const next = state.lastKidFetch + cooldown;
      if (now() >= next) {
        void fetchKeys('kid', wait.parent);
        continue;
      }
      if (next >= (wait.deadline ?? Number.POSITIVE_INFINITY) || waiters.count >= MAX_WAITING)
        return 'unknown';
      waiters.count += 1;
      try {
        await within(wake(next), wait.signal);
      } finally {
        waiters.count -= 1;
      }
    }
  };

  if (state.keys === undefined) void fetchKeys('refresh');
  else schedule(0);

  return {
    ready: () => state.keys !== undefined,
    status: () =>
      state.keys !== undefined || (state.problem === undefined ? false : `not ready: ${state.problem}`),
    async resolve(alg, kid, wait = {}) {
      if (state.keys === undefined) {
        // Before the first load: the fetch under way, or a retry when the cooldown allows.
        const first =
          inflight?.promise ??
          (now() - lastFetch >= cooldown ? fetchKeys('refresh', wait.parent) : undefined);
        if (first !== undefined) await within(first, wait.signal);
      }
      if (state.keys === undefined) throw errors.tokenFailed('jwks_unavailable');
      let found = lookUp(state.keys, alg, kid);
      if (found === 'unknown') found = await afterFetch(alg, kid, wait);
      if (found === 'unknown') {
        throw errors.tokenFailed('unknown_kid', kid === undefined ? undefined : { kid: shownKid(kid) });
      }
      if (typeof found === 'string') throw errors.tokenFailed(found);
      return found;
    },
    holds: (fingerprint) => state.fingerprints.has(fingerprint),
    close() {
      closed = true;
      clearTimeout(timer);
    },
  };
}

/**
 * A shared timer for the requests waiting for one instant: `wait(at)` resolves at `at` (the manager's
 * clock).
 */
function sleeper(now: () => number) {
  let pending: { at: number; promise: Promise<void> } | undefined;
  return (at: number): Promise<void> => {
    if (pending?.at !== at) {
      const entry = { at, promise: Promise.resolve() };
      entry.promise = new Promise<void>((resolve) => {
        const done = () => {
          // Asked again for the same instant (a clock that stepped back): a new timer, never a spin.
          if (pending === entry) pending = undefined;
          resolve();
        };
        setTimeout(done, Math.max(1, at - now())).unref();
      });
      pending = entry;
    }
    return pending.promise;
  };
}

/**
 * `promise`, or its rejection with `signal`'s reason when that comes first: a request whose deadline
 * fires (504) or whose client goes away stops waiting; the shared fetch goes on for the others.
 */
function within(promise: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    void promise.then(() => {
      signal.removeEventListener('abort', abort);
      resolve();
    });
  });
}

/** A `kid` as it may appear in a log line: cut at 64 characters, control characters replaced. */
function shownKid(kid: string): string {
  return Array.from(kid)
    .slice(0, 64)
    .join('')
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
}

/**
 * When to refresh next: a tenth before the keys go stale, never sooner than the cooldown (an
 * identity provider saying `no-cache` is not polled in a loop) nor later than the refresh interval
 * (a key the provider withdrew stops being accepted within it).
 */
function refreshDelay(lifetime: number | undefined, options: JwksOptions): number {
  if (lifetime === undefined) return options.refreshInterval;
  return Math.min(options.refreshInterval, Math.max(options.cooldown, lifetime * 0.9));
}
