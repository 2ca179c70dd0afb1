/**
 * The checksum cache: a wrapper that implements the collectors interface in front of another backend,
 * so the operation never knows it is there. A version's file never changes, so it is kept until the
 * byte bound evicts it; what `latest` means is re-resolved after `latestTtl`. Concurrent misses for
 * one key share one backend fetch, which runs on its own signal: one waiter giving up never aborts
 * the fetch others wait on, and it is aborted only once nobody waits for it any more.
 */
import { LRUCache } from 'lru-cache';
import type { Metrics } from '../../observability/metrics.js';
import type { ChecksumFile, CollectorsBackend, CollectorType } from './backend.js';

export interface ChecksumCacheOptions {
  /** Bytes of checksum files held at most. */
  readonly maxBytes: number;
  /** Files larger than this are served but not kept. */
  readonly maxEntryBytes: number;
  /** Milliseconds for which a resolution of `latest` is reused. */
  readonly latestTtl: number;
  readonly metrics: Metrics;
  /** Monotonic clock in milliseconds (tests move it by hand). */
  readonly now?: () => number;
}

type Result = ChecksumFile | undefined;

interface Flight {
  readonly promise: Promise<Result>;
  readonly controller: AbortController;
  waiters: number;
}

/** Wraps `inner` in a byte-bounded, single-flight cache. */
export function createChecksumCache(
  inner: CollectorsBackend,
  options: ChecksumCacheOptions,
): CollectorsBackend {
  const { metrics, maxEntryBytes, latestTtl } = options;
  const now = options.now ?? (() => performance.now());
  const files = new LRUCache<string, ChecksumFile>({
    maxSize: options.maxBytes,
    maxEntrySize: Math.min(maxEntryBytes, options.maxBytes),
    // lru-cache refuses a size of 0; an empty file still takes an entry.
    sizeCalculation: (file) => Math.max(1, file.bytes.length),
    dispose: (_file, _key, reason) => {
      if (reason === 'evict') metrics.checksumCacheEvictions.inc();
    },
  });
  /** `latest` per type: the version it meant (undefined: no release) and until when that holds. */
  const latest = new Map<CollectorType, { version: string | undefined; expiresAt: number }>();
  const flights = new Map<string, Flight>();

  const count = (result: 'hit' | 'miss' | 'stale') => metrics.checksumCacheRequests.inc({ result });

  function keep(type: CollectorType, file: ChecksumFile): void {
    if (file.bytes.length <= maxEntryBytes) files.set(`${type}/${file.version}`, file);
    metrics.checksumCacheBytes.set(files.calculatedSize);
  }

  /** Joins the fetch in flight for `key`, or starts it. */
  function join(
    key: string,
    signal: AbortSignal,
    fetch: (signal: AbortSignal) => Promise<Result>,
  ): Promise<Result> {
    let flight = flights.get(key);
    if (flight === undefined) {
      const controller = new AbortController();
      const started: Flight = {
        controller,
        waiters: 0,
        promise: fetch(controller.signal).finally(() => {
          if (flights.get(key) === started) flights.delete(key);
        }),
      };
      // Waiters handle the outcome; a fetch everyone has left must not become an unhandled rejection.
      started.promise.catch(() => {});
      flights.set(key, started);
      flight = started;
    }
    return wait(key, flight, signal);
  }

  /** Waits for `flight`, rejecting with `signal.reason` as soon as this waiter's own signal fires. */
  function wait(key: string, flight: Flight, signal: AbortSignal): Promise<Result> {
    flight.waiters++;
    return new Promise<Result>((resolve, reject) => {
      let done = false;
      const finish = (settle: () => void) => {
        if (done) return;
        done = true;
        signal.removeEventListener('abort', onAbort);
        flight.waiters--;
        settle();
      };
      const onAbort = () =>
        finish(() => {
          if (flight.waiters === 0) {
            if (flights.get(key) === flight) flights.delete(key);
            flight.controller.abort(signal.reason);
          }
          reject(signal.reason);
        });
      signal.addEventListener('abort', onAbort, { once: true });
      flight.promise.then(
        (result) => finish(() => resolve(result)),
        (err: unknown) => finish(() => reject(err)),
      );
    });
  }

  return {
    async getChecksum(type: CollectorType, release: string, signal: AbortSignal): Promise<Result> {
      signal.throwIfAborted();
      if (release !== 'latest') {
        const key = `${type}/${release}`;
        const cached = files.get(key);
        if (cached !== undefined) {
          count('hit');
          return cached;
        }
        count('miss');
        return join(key, signal, async (own) => {
          const file = await inner.getChecksum(type, release, own);
          if (file !== undefined) keep(type, file);
          return file;
        });
      }
      const resolved = latest.get(type);
      const fresh = resolved !== undefined && now() < resolved.expiresAt;
      if (fresh) {
        const cached = resolved.version === undefined ? undefined : files.get(`${type}/${resolved.version}`);
        if (resolved.version === undefined || cached !== undefined) {
          count('hit');
          return cached;
        }
      }
      // Expired: "stale"; never resolved, or its file was evicted or too large to keep: "miss".
      count(resolved !== undefined && !fresh ? 'stale' : 'miss');
      return join(`${type}/latest`, signal, async (own) => {
        const file = await inner.getChecksum(type, 'latest', own);
        latest.set(type, { version: file?.version, expiresAt: now() + latestTtl });
        if (file !== undefined) keep(type, file);
        return file;
      });
    },

    /**
     * Drains: fetches under way finish for the requests waiting on them (a reload must fail none of
     * them; each is bounded by its waiters' deadlines), then the cache is emptied.
     */
    async close() {
      await Promise.allSettled([...flights.values()].map((flight) => flight.promise));
      flights.clear();
      latest.clear();
      files.clear();
      await inner.close();
    },
  };
}
