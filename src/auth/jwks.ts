/**
 * The key manager of `auth.jwt.jwks_url`. jose's `createRemoteJWKSet` neither refreshes in the
 * background nor keeps the last good keys when a fetch fails, and refetches on any unknown `kid`
 * once its own short cooldown passed; this one is built on jose's primitives (`importJWK`, see
 * `jwk-set.ts`) and:
 * - fetches at start and again before the keys go stale (the response's `max-age`, within bounds);
 * - keeps serving the last good keys while the identity provider is down or answers garbage;
 * - on an unknown `kid`, refetches at most once per cooldown, one fetch shared by every request
 *   waiting on it: a flood of made-up `kid`s cannot be turned against the identity provider;
 * - bounds every fetch in time and size.
 */
import { errors } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { InvalidKeySet, type LoadedKey, lookUp, readKeySet, type VerifyKey } from './jwk-set.js';

/** The largest key set document read; a larger one is refused as garbage. */
const MAX_BYTES = 1024 * 1024;

export interface JwksOptions {
  url: string;
  /** Bound of one fetch, body included (ms). */
  timeout: number;
  /** Longest time between background refreshes (ms); also the interval without `max-age`. */
  refreshInterval: number;
  /** Shortest time between two fetches caused by unknown `kid`s, and the retry delay after a failure. */
  cooldown: number;
  /** The algorithms keys may verify. */
  algorithms: readonly string[];
  metrics?: Metrics;
  logger?: Logger;
  now?: () => number;
}

/** The keys of one identity provider, kept fresh in the background. */
export interface JwksKeys {
  /** True once a key set has been loaded (it stays true: the last good keys keep serving). */
  ready(): boolean;
  /**
   * The key for a token's `alg` and `kid`, refetching the set when the `kid` is new and the cooldown
   * allows; before the first load, waits for the fetch under way. Throws the catalogue's 401.
   */
  resolve(alg: string, kid: string | undefined): Promise<{ key: VerifyKey; fingerprint: string }>;
  /** Whether the current set still holds the key with this fingerprint (for cached tokens). */
  holds(fingerprint: string): boolean;
  /** Stops the refresh timer and aborts a fetch under way. */
  close(): void;
}

type FetchResult = 'ok' | 'error' | 'timeout' | 'invalid';

/** Starts fetching `options.url` at once; see `JwksKeys`. */
export function createJwksKeys(options: JwksOptions): JwksKeys {
  const now = options.now ?? Date.now;
  const { metrics, logger } = options;
  const allowed = new Set(options.algorithms);
  const stop = new AbortController();
  const where = safeUrl(options.url);
  let keys: readonly LoadedKey[] | undefined;
  let fingerprints = new Set<string>();
  let inflight: Promise<void> | undefined;
  let lastFetch = -Infinity;
  let timer: NodeJS.Timeout | undefined;

  const schedule = (ms: number): void => {
    clearTimeout(timer);
    if (stop.signal.aborted) return;
    timer = setTimeout(() => void fetchKeys(), ms);
    timer.unref();
  };

  const load = async (): Promise<void> => {
    const timeout = AbortSignal.timeout(options.timeout);
    try {
      const { text, lifetime } = await download(options.url, AbortSignal.any([timeout, stop.signal]));
      const next = await readKeySet(text, allowed);
      if (stop.signal.aborted) return;
      keys = next;
      fingerprints = new Set(next.map((k) => k.fingerprint));
      metrics?.jwksFetches.inc({ result: 'ok' });
      metrics?.jwksKeys.set(next.length);
      logger?.info({ jwks_url: where, keys: next.length }, 'jwks loaded');
      schedule(refreshDelay(lifetime, options));
    } catch (err) {
      if (stop.signal.aborted) return;
      const result = resultOf(err, timeout.aborted);
      metrics?.jwksFetches.inc({ result });
      logger?.warn(
        { jwks_url: where, result, reason: describe(err), keys_kept: keys?.length ?? 0 },
        'jwks fetch failed',
      );
      schedule(options.cooldown);
    }
  };

  /** One fetch at a time: every caller during a fetch shares it. */
  const fetchKeys = (): Promise<void> => {
    if (inflight === undefined && !stop.signal.aborted) {
      lastFetch = now();
      inflight = load().finally(() => {
        inflight = undefined;
      });
    }
    return inflight ?? Promise.resolve();
  };

  /** The fetch under way, or a new one when the cooldown allows; undefined when neither. */
  const refetch = (): Promise<void> | undefined =>
    inflight ?? (now() - lastFetch >= options.cooldown ? fetchKeys() : undefined);

  void fetchKeys();

  return {
    ready: () => keys !== undefined,
    async resolve(alg, kid) {
      if (keys === undefined) await refetch();
      if (keys === undefined) throw errors.tokenFailed('jwks_unavailable');
      let found = lookUp(keys, alg, kid);
      if (found === 'unknown') {
        const pending = refetch();
        if (pending !== undefined) {
          await pending;
          found = lookUp(keys, alg, kid);
        }
      }
      if (typeof found === 'string') throw errors.tokenFailed(found === 'unknown' ? 'unknown_kid' : found);
      return found;
    },
    holds: (fingerprint) => fingerprints.has(fingerprint),
    close() {
      stop.abort();
      clearTimeout(timer);
    },
  };
}

/** A failed fetch with the result it counts as. */
class FetchFailure extends Error {
  constructor(
    readonly result: FetchResult,
    message: string,
  ) {
    super(message);
  }
}

/** The key set document and how long the identity provider says it stays fresh (ms). */
async function download(url: string, signal: AbortSignal): Promise<{ text: string; lifetime?: number }> {
  const res = await fetch(url, {
    signal,
    // Never followed: the configured URL is the one trusted for keys.
    redirect: 'manual',
    headers: { accept: 'application/jwk-set+json, application/json' },
  });
  if (res.status >= 300 && res.status < 400) {
    await res.body?.cancel();
    throw new FetchFailure('error', `redirect refused (status ${res.status})`);
  }
  if (res.status !== 200) {
    await res.body?.cancel();
    throw new FetchFailure('error', `status ${res.status}`);
  }
  if (Number(res.headers.get('content-length')) > MAX_BYTES) {
    await res.body?.cancel();
    throw new FetchFailure('invalid', 'larger than 1 MiB');
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    size += chunk.byteLength;
    if (size > MAX_BYTES) throw new FetchFailure('invalid', 'larger than 1 MiB');
    chunks.push(chunk);
  }
  return { text: Buffer.concat(chunks).toString('utf8'), lifetime: lifetimeOf(res.headers) };
}

/** `max-age` less `Age` (ms); 0 for `no-cache`/`no-store`; undefined when the response says nothing. */
function lifetimeOf(headers: Headers): number | undefined {
  const control = headers.get('cache-control') ?? '';
  if (/(?:^|,)\s*no-(?:cache|store)\b/i.test(control)) return 0;
  const maxAge = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?/i.exec(control)?.[1];
  if (maxAge === undefined) return undefined;
  const age = Number(headers.get('age')) || 0;
  return Math.max(0, Number(maxAge) - age) * 1000;
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

/** The `result` label of a failed fetch. */
function resultOf(err: unknown, timedOut: boolean): FetchResult {
  if (timedOut) return 'timeout';
  if (err instanceof InvalidKeySet) return 'invalid';
  return err instanceof FetchFailure ? err.result : 'error';
}

/** The reason of a failure for the log: a fixed text, never a response body. */
function describe(err: unknown): string {
  if (err instanceof FetchFailure || err instanceof InvalidKeySet) return err.message;
  const cause = (err as { cause?: { code?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  return err instanceof Error ? err.name : 'unknown';
}

/** The URL without a query (which might carry a credential), for log lines. */
function safeUrl(url: string): string {
  const u = new URL(url);
  return `${u.origin}${u.pathname}`;
}
