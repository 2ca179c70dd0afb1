/**
 * The checksum cache: a wrapper that implements the collectors interface in front of another backend,
 * so the operation never knows it is there. A version's file never changes, so it is kept until the
 * byte bound evicts it; what `latest` means is re-resolved after `latestTtl`. Concurrent misses for
 * one key share one backend fetch, which runs on its own signal: one waiter giving up never aborts
 * the fetch others wait on, and it is aborted only once nobody waits for it any more.
 */
import { LRUCache } from 'lru-cache';
import { UpstreamStatusError } from '../../errors.js';
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

/** What a fetch found: the file (undefined: no such release), and whether it is a stale `latest`. */
interface Outcome {
  readonly file: ChecksumFile | undefined;
  readonly stale: boolean;
}

interface Flight {
  readonly promise: Promise<Outcome>;
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
  /**
   * `latest` per type: the file it meant (undefined: no release) and until when that holds. The file
   * is held here too, so that it can be served stale when re-resolving fails.
   */
  const latest = new Map<CollectorType, { file: ChecksumFile | undefined; expiresAt: number }>();
  const flights = new Map<string, Flight>();

  const count = (result: 'hit' | 'miss' | 'stale') => metrics.checksumCacheRequests.inc({ result });
  /** A fetch that failed (or whose answer was not a file) was a miss all the same. */
  const missed = (fetched: Promise<Outcome>) =>
    fetched.catch((err: unknown) => {
      count('miss');
      throw err;
    });

  function keep(type: CollectorType, file: ChecksumFile): void {
    if (file.bytes.length <= maxEntryBytes) files.set(`${type}/${file.version}`, file);
    metrics.checksumCacheBytes.set(files.calculatedSize);
  }

  /** Joins the fetch in flight for `key`, or starts it. */
  function join(
    key: string,
    signal: AbortSignal,
    fetch: (signal: AbortSignal) => Promise<Outcome>,
  ): Promise<Outcome> {
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
  function wait(key: string, flight: Flight, signal: AbortSignal): Promise<Outcome> {
    flight.waiters++;
    return new Promise<Outcome>((resolve, reject) => {
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

  /** What a waiter gets: the file marked with where it came from (`X-Cache`), counted once. */
  const served = (outcome: Outcome, from: 'hit' | 'miss'): ChecksumFile | undefined => {
    const result = outcome.stale ? 'stale' : from;
    count(result);
    return outcome.file && { ...outcome.file, cache: result === 'miss' ? 'MISS' : 'HIT' };
  };

  return {
    async getChecksum(type, release, signal, request) {
      signal.throwIfAborted();
      if (release !== 'latest') {
        const key = `${type}/${release}`;
        const cached = files.get(key);
        if (cached !== undefined) return served({ file: cached, stale: false }, 'hit');
        const outcome = await missed(
          join(key, signal, async (own) => {
            const file = await inner.getChecksum(type, release, own, request);
            if (file !== undefined) keep(type, file);
            return { file, stale: false };
          }),
        );
        return served(outcome, 'miss');
      }
      const resolved = latest.get(type);
      if (resolved !== undefined && now() < resolved.expiresAt) {
        return served({ file: resolved.file, stale: false }, 'hit');
      }
      const outcome = await missed(
        join(`${type}/latest`, signal, async (own) => {
          try {
            const file = await inner.getChecksum(type, 'latest', own, request);
            // A file too large to keep is not held here either: `latest` is then fetched every time.
            if (file === undefined || file.bytes.length <= maxEntryBytes) {
              latest.set(type, { file, expiresAt: now() + latestTtl });
            } else {
              latest.delete(type);
            }
            if (file !== undefined) keep(type, file);
            return { file, stale: false };
          } catch (err) {
            // stale-if-error: the last answer for `latest` stands for another TTL while the backend
            // fails; an upstream's own answer below 500 (a 404, a 401) is an answer, not a failure.
            if (own.aborted || resolved === undefined || answeredBelow500(err)) throw err;
            latest.set(type, { file: resolved.file, expiresAt: now() + latestTtl });
            return { file: resolved.file, stale: true };
          }
        }),
      );
      return served(outcome, 'miss');
    },

    ready: () => inner.ready?.() ?? true,

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

function answeredBelow500(err: unknown): boolean {
  return err instanceof UpstreamStatusError && err.status < 500;
}
