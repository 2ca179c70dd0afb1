/**
 * The checksum cache: a wrapper that implements the collectors interface in front of another backend;
 * the operation learns only where a file came from (`cache`, its `X-Cache`). A version's file never
 * changes, so it is kept until the byte bound evicts it; what `latest` means is re-resolved after
 * `latestTtl`. Concurrent misses for one key share one backend fetch, which runs on its own signal
 * and sends a neutral request (the canonical target, nobody's deadline, id or credentials): one
 * waiter giving up never aborts the fetch others wait on, and it is aborted only once nobody waits.
 * Behind an upstream that forwards the client's own credentials, everything is kept per identity.
 */
import { LRUCache } from 'lru-cache';
import type { Metrics } from '../../observability/metrics.js';
import { countedChild } from '../../observability/define.js';
import { UpstreamAnswer } from '../../upstream/answer.js';
import { type ForwardedRequest, neutralRequest } from '../../upstream/forwarded.js';
import type { BackendCall } from '../backend-call.js';
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

type Found = ChecksumFile | UpstreamAnswer | undefined;

/** What a fetch found (a file, an upstream's own answer, or no such release), and whether it is stale. */
interface Outcome {
  readonly found: Found;
  readonly stale: boolean;
}

interface Flight {
  readonly promise: Promise<Outcome>;
  readonly controller: AbortController;
  waiters: number;
}

/** The target a shared fetch sends: `/api/v2/collectors/<type>/<v…|latest>/checksum`, no query. */
function canonicalTarget(type: CollectorType, release: string): string {
  return `/api/v2/collectors/${type}/${release === 'latest' ? 'latest' : `v${release}`}/checksum`;
}

/**
 * Wraps `inner` in a byte-bounded, single-flight cache: a backend of the same kind (a store that
 * answers only with files stays one).
 */
export function createChecksumCache<B extends CollectorsBackend>(inner: B, options: ChecksumCacheOptions): B {
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
   * `latest` per scope and type: the file it meant (undefined: no release) and until when that
   * holds. The file is held here too, so that it can be served stale when re-resolving fails.
   */
  const latest = new Map<string, { file: ChecksumFile | undefined; expiresAt: number }>();
  const flights = new Map<string, Flight>();
  const perIdentity = inner.perIdentity === true;

  const counted = {
    hit: countedChild(metrics.checksumCacheRequests, { result: 'hit' }),
    miss: countedChild(metrics.checksumCacheRequests, { result: 'miss' }),
    stale: countedChild(metrics.checksumCacheRequests, { result: 'stale' }),
  };
  const count = (result: 'hit' | 'miss' | 'stale') => counted[result].inc();

  /** Whose entries a request reads: everybody's, or under per-identity credentials its identity's. */
  const scopeOf = (call: BackendCall) => (perIdentity ? `${call.request.principal ?? ''}\n` : '');

  /**
   * The request a shared fetch sends. With the gateway's own credentials: the canonical target and
   * nothing of any waiter. With the client's (per identity): its target and credentials, which its
   * signature covers, and still no deadline, forwarded headers or request id.
   */
  const sharedRequest = (type: CollectorType, release: string, call: BackendCall): ForwardedRequest => {
    if (!perIdentity) return neutralRequest('GET', canonicalTarget(type, release));
    const { target, credentials, principal } = call.request;
    return Object.freeze({ ...neutralRequest('GET', target), credentials, principal });
  };

  function keep(scope: string, type: CollectorType, file: ChecksumFile): void {
    if (file.bytes.length <= maxEntryBytes) files.set(`${scope}${type}/${file.version}`, file);
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
    return wait(key, flight, signal).catch((err: unknown) => {
      // A fetch that failed was a miss all the same.
      count('miss');
      throw err;
    });
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

  /** Each file as served from the cache and as fetched for the request (`X-Cache`), made once. */
  const marked = new WeakMap<ChecksumFile, { HIT: ChecksumFile; MISS: ChecksumFile }>();
  const mark = (file: ChecksumFile, cache: 'HIT' | 'MISS'): ChecksumFile => {
    let variants = marked.get(file);
    if (variants === undefined) {
      variants = {
        HIT: Object.freeze({ ...file, cache: 'HIT' }),
        MISS: Object.freeze({ ...file, cache: 'MISS' }),
      };
      marked.set(file, variants);
    }
    return variants[cache];
  };

  /** What a waiter gets: a file marked with where it came from (`X-Cache`), counted once. */
  const served = (outcome: Outcome, from: 'hit' | 'miss'): Found => {
    const result = outcome.stale ? 'stale' : from;
    count(result);
    const { found } = outcome;
    if (found === undefined || found instanceof UpstreamAnswer) return found;
    return mark(found, result === 'miss' ? 'MISS' : 'HIT');
  };

  /** A version's file fetched for `call` (and kept), shared by the requests that want it meanwhile. */
  const fetchVersion = async (type: CollectorType, release: string, call: BackendCall, scope: string) => {
    call.signal.throwIfAborted();
    const key = `${scope}${type}/${release}`;
    const request = sharedRequest(type, release, call);
    const outcome = await join(key, call.signal, async (own) => {
      const found = await inner.getChecksum(type, release, {
        signal: own,
        stop: own,
        request,
        spent: (ms) => call.spent?.(ms),
        answeredBy: (target) => call.answeredBy?.(target),
      });
      if (isFile(found)) keep(scope, type, found);
      return { found, stale: false };
    });
    return served(outcome, 'miss');
  };

  /** What `latest` means, resolved again through the backend (stale-if-error). */
  const fetchLatest = async (type: CollectorType, call: BackendCall, scope: string) => {
    call.signal.throwIfAborted();
    const latestKey = `${scope}${type}`;
    const resolved = latest.get(latestKey);
    const request = sharedRequest(type, 'latest', call);
    const outcome = await join(`${scope}${type}/latest`, call.signal, async (own) => {
      let found: Found;
      try {
        found = await inner.getChecksum(type, 'latest', {
          signal: own,
          stop: own,
          request,
          spent: (ms) => call.spent?.(ms),
          answeredBy: (target) => call.answeredBy?.(target),
        });
      } catch (err) {
        if (own.aborted || resolved === undefined) throw err;
        return stale(latestKey, resolved.file);
      }
      // stale-if-error: an upstream's 5xx is a failure; its answer below 500 (a 404, a 401) stands.
      if (found instanceof UpstreamAnswer) {
        return found.status >= 500 && resolved !== undefined
          ? stale(latestKey, resolved.file)
          : { found, stale: false };
      }
      // A file too large to keep is not held here either: `latest` is then fetched every time.
      if (found === undefined || found.bytes.length <= maxEntryBytes) {
        latest.set(latestKey, { file: found, expiresAt: now() + latestTtl });
      } else {
        latest.delete(latestKey);
      }
      if (found !== undefined) keep(scope, type, found);
      return { found, stale: false };
    });
    return served(outcome, 'miss');
  };

  const cache: CollectorsBackend = {
    perIdentity,
    /** A hit answers at once (the pipeline has checked the deadline just before); a miss waits. */
    getChecksum(type, release, call) {
      // A HEAD under the client's own credentials is signed as a HEAD: it goes through as it came.
      if (perIdentity && call.request.method === 'HEAD') return inner.getChecksum(type, release, call);
      const scope = scopeOf(call);
      if (release !== 'latest') {
        const cached = files.get(`${scope}${type}/${release}`);
        if (cached !== undefined) return served({ found: cached, stale: false }, 'hit');
        return fetchVersion(type, release, call, scope);
      }
      const resolved = latest.get(`${scope}${type}`);
      if (resolved !== undefined && now() < resolved.expiresAt) {
        return served({ found: resolved.file, stale: false }, 'hit');
      }
      return fetchLatest(type, call, scope);
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
  return cache as B;

  /** The last answer for `latest`, standing for another TTL while the backend fails. */
  function stale(key: string, file: ChecksumFile | undefined): Outcome {
    latest.set(key, { file, expiresAt: now() + latestTtl });
    return { found: file, stale: true };
  }
}

function isFile(found: Found): found is ChecksumFile {
  return found !== undefined && !(found instanceof UpstreamAnswer);
}
