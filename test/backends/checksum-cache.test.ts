import t from 'tap';
import type { ChecksumFile, ChecksumStore, CollectorType } from '../../src/backends/collectors/backend.js';
import { createChecksumCache } from '../../src/backends/collectors/cache.js';
import { createMetrics, type Metrics } from '../../src/observability/metrics.js';
import type { ForwardedRequest } from '../../src/upstream/forwarded.js';
import { callOf } from '../helpers/backend.js';

const never = () => callOf();

/**
 * A backend that counts its calls: the one place a double is right, it stands for "any backend".
 * `files` maps `type/version` to content; `latest` maps a type to its version. While `hold` is set,
 * calls wait for it (or for their signal); `fail` makes calls throw.
 */
function countingBackend(files: Record<string, string>, latest: Record<string, string> = {}) {
  const state = {
    files,
    latest,
    calls: [] as Array<{
      type: CollectorType;
      release: string;
      signal: AbortSignal;
      request: ForwardedRequest;
    }>,
    hold: undefined as Promise<void> | undefined,
    fail: undefined as Error | undefined,
    closed: false,
  };
  const backend: ChecksumStore = {
    async getChecksum(type, release, { signal, request }): Promise<ChecksumFile | undefined> {
      state.calls.push({ type, release, signal, request });
      if (state.hold) {
        await Promise.race([
          state.hold,
          new Promise((_, reject) =>
            signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
          ),
        ]);
      }
      if (state.fail) throw state.fail;
      const version = release === 'latest' ? state.latest[type] : release;
      const content = version === undefined ? undefined : state.files[`${type}/${version}`];
      return content === undefined || version === undefined
        ? undefined
        : { version, bytes: Buffer.from(content) };
    },
    async close() {
      state.closed = true;
    },
  };
  return { state, backend };
}

function release() {
  let open!: () => void;
  const hold = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { hold, open };
}

async function counted(metrics: Metrics, result: string): Promise<number> {
  const values = (await metrics.checksumCacheRequests.get()).values;
  return values.find((v) => v.labels.result === result)?.value ?? 0;
}

async function gauge(metrics: Metrics): Promise<number> {
  return (await metrics.checksumCacheBytes.get()).values[0]?.value ?? 0;
}

async function evictions(metrics: Metrics): Promise<number> {
  return (await metrics.checksumCacheEvictions.get()).values[0]?.value ?? 0;
}

function setup(
  inner: ChecksumStore,
  options: Partial<{ maxBytes: number; maxEntryBytes: number; latestTtl: number; now: () => number }> = {},
) {
  const metrics = createMetrics();
  const cache = createChecksumCache(inner, {
    maxBytes: 1024,
    maxEntryBytes: 1024,
    latestTtl: 1000,
    metrics,
    ...options,
  });
  return { metrics, cache };
}

const A40 = 'a'.repeat(40);

t.test('50 concurrent misses for one key make exactly one backend call', async (t) => {
  const { state, backend } = countingBackend({ 'sharphound/2.9.0': A40 });
  const { metrics, cache } = setup(backend);
  const gate = release();
  state.hold = gate.hold;
  const waiting = Array.from({ length: 50 }, () => cache.getChecksum('sharphound', '2.9.0', never()));
  gate.open();
  const results = await Promise.all(waiting);
  t.equal(state.calls.length, 1);
  t.ok(results.every((r) => r?.bytes.toString() === A40 && r.version === '2.9.0'));
  t.equal(await counted(metrics, 'miss'), 50);

  t.equal((await cache.getChecksum('sharphound', '2.9.0', never()))?.bytes.toString(), A40);
  t.equal(state.calls.length, 1, 'then served from the cache');
  t.equal(await counted(metrics, 'hit'), 1);
  t.equal(await gauge(metrics), 40);
});

t.test('one waiter aborting does not abort the fetch the others wait on', async (t) => {
  const { state, backend } = countingBackend({ 'sharphound/2.9.0': A40 });
  const { cache } = setup(backend);
  const gate = release();
  state.hold = gate.hold;
  const impatient = new AbortController();
  const first = cache.getChecksum('sharphound', '2.9.0', callOf(impatient.signal));
  const second = cache.getChecksum('sharphound', '2.9.0', never());
  const reason = new Error('deadline');
  impatient.abort(reason);
  await t.rejects(async () => first, reason, 'the aborted waiter gets its own reason at once');
  t.equal(state.calls[0]?.signal.aborted, false, 'the shared fetch goes on');
  gate.open();
  t.equal((await second)?.bytes.toString(), A40);
  t.equal(state.calls.length, 1);
});

t.test('the fetch is aborted once its last waiter has gone, and the next request starts anew', async (t) => {
  const { state, backend } = countingBackend({ 'sharphound/2.9.0': A40 });
  const { cache } = setup(backend);
  state.hold = release().hold;
  const alone = new AbortController();
  const pending = cache.getChecksum('sharphound', '2.9.0', callOf(alone.signal));
  alone.abort(new Error('client went away'));
  await t.rejects(async () => pending, { message: 'client went away' });
  t.equal(state.calls[0]?.signal.aborted, true);
  state.hold = undefined;
  t.equal((await cache.getChecksum('sharphound', '2.9.0', never()))?.version, '2.9.0');
  t.equal(state.calls.length, 2);
});

t.test('a signal already aborted is refused without a backend call', async (t) => {
  const { state, backend } = countingBackend({ 'sharphound/2.9.0': A40 });
  const { cache } = setup(backend);
  const reason = new Error('too late');
  await t.rejects(
    async () => cache.getChecksum('sharphound', '2.9.0', callOf(AbortSignal.abort(reason))),
    reason,
  );
  t.equal(state.calls.length, 0);
});

t.test('the byte bound evicts the least recently used file and counts it', async (t) => {
  const { state, backend } = countingBackend({
    'sharphound/1.0.0': A40,
    'sharphound/2.0.0': A40,
    'sharphound/3.0.0': A40,
  });
  const { metrics, cache } = setup(backend, { maxBytes: 100, maxEntryBytes: 100 });
  for (const v of ['1.0.0', '2.0.0', '3.0.0']) await cache.getChecksum('sharphound', v, never());
  t.equal(await evictions(metrics), 1);
  t.equal(await gauge(metrics), 80);
  await cache.getChecksum('sharphound', '3.0.0', never());
  t.equal(state.calls.length, 3, 'a kept file is a hit');
  await cache.getChecksum('sharphound', '1.0.0', never());
  t.equal(state.calls.length, 4, 'the evicted file is fetched again');
});

t.test('a file larger than max_entry_bytes is served but not kept', async (t) => {
  const { state, backend } = countingBackend({ 'azurehound/2.0.0': A40 }, { azurehound: '2.0.0' });
  const { metrics, cache } = setup(backend, { maxBytes: 100, maxEntryBytes: 39 });
  for (let i = 0; i < 2; i++) {
    t.equal((await cache.getChecksum('azurehound', '2.0.0', never()))?.bytes.toString(), A40);
    t.equal((await cache.getChecksum('azurehound', 'latest', never()))?.version, '2.0.0');
  }
  t.equal(state.calls.length, 4);
  t.equal(await gauge(metrics), 0);
  t.equal(await counted(metrics, 'hit'), 0);
});

t.test('latest is re-resolved after its TTL while version entries stay', async (t) => {
  let clock = 0;
  const files = { 'sharphound/2.9.0': 'old', 'sharphound/2.10.0': 'new' };
  const { state, backend } = countingBackend(files, { sharphound: '2.9.0' });
  const { metrics, cache } = setup(backend, { latestTtl: 1000, now: () => clock });
  t.equal((await cache.getChecksum('sharphound', 'latest', never()))?.version, '2.9.0');
  state.latest.sharphound = '2.10.0';
  clock = 999;
  t.equal((await cache.getChecksum('sharphound', 'latest', never()))?.version, '2.9.0', 'within the TTL');
  t.equal(state.calls.length, 1);
  clock = 1000;
  const file = await cache.getChecksum('sharphound', 'latest', never());
  t.equal(file?.version, '2.10.0', 'after the TTL');
  t.equal(file?.bytes.toString(), 'new');
  t.equal(await counted(metrics, 'miss'), 2, 'a re-resolution is a miss');
  t.equal(await counted(metrics, 'stale'), 0, 'nothing was served stale');
  t.equal((await cache.getChecksum('sharphound', '2.9.0', never()))?.bytes.toString(), 'old');
  t.equal((await cache.getChecksum('sharphound', '2.10.0', never()))?.bytes.toString(), 'new');
  t.equal(state.calls.length, 2, 'both versions come from the cache');
});

t.test('"no release" for latest holds for the TTL; an unknown version is asked again', async (t) => {
  let clock = 0;
  const { state, backend } = countingBackend({});
  const { cache } = setup(backend, { latestTtl: 1000, now: () => clock });
  t.equal(await cache.getChecksum('openhound', 'latest', never()), undefined);
  t.equal(await cache.getChecksum('openhound', 'latest', never()), undefined);
  t.equal(state.calls.length, 1);
  state.files['openhound/1.0.0'] = 'first';
  state.latest.openhound = '1.0.0';
  clock = 1000;
  t.equal((await cache.getChecksum('openhound', 'latest', never()))?.version, '1.0.0');

  t.equal(await cache.getChecksum('sharphound', '9.9.9', never()), undefined);
  state.files['sharphound/9.9.9'] = 'late';
  t.equal((await cache.getChecksum('sharphound', '9.9.9', never()))?.bytes.toString(), 'late');
});

t.test('a failed fetch reaches every waiter and is not cached', async (t) => {
  const { state, backend } = countingBackend({ 'sharphound/2.9.0': A40 }, { sharphound: '2.9.0' });
  const { cache } = setup(backend);
  state.fail = new Error('disk on fire');
  const gate = release();
  state.hold = gate.hold;
  const both = [
    cache.getChecksum('sharphound', 'latest', never()),
    cache.getChecksum('sharphound', 'latest', never()),
  ];
  gate.open();
  for (const p of both) await t.rejects(async () => p, { message: 'disk on fire' });
  t.equal(state.calls.length, 1);
  state.fail = undefined;
  state.hold = undefined;
  t.equal((await cache.getChecksum('sharphound', 'latest', never()))?.version, '2.9.0');
  t.equal(state.calls.length, 2);
});

t.test('close drains: a fetch in flight still answers its waiters, then the backend closes', async (t) => {
  const { state, backend } = countingBackend({ 'sharphound/2.9.0': A40 }, { sharphound: '2.9.0' });
  const { cache } = setup(backend);
  const gate = release();
  state.hold = gate.hold;
  const pending = cache.getChecksum('sharphound', 'latest', never());
  let closed = false;
  const closing = cache.close().then(() => {
    closed = true;
  });
  // A full turn of the event loop: close would have finished by now if it did not wait.
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(closed, false, 'close waits for the fetch in flight');
  t.equal(state.closed, false);
  gate.open();
  t.equal((await pending)?.version, '2.9.0', 'the waiter got its answer (a reload fails no request)');
  await closing;
  t.equal(state.closed, true);
});
