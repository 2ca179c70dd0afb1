/**
 * A Redis down, slow or restarted never holds a request: a private `redis-server` that the test
 * stops, pauses (SIGSTOP) and restarts, with `on_error: allow` and `deny`.
 */
import { performance } from 'node:perf_hooks';
import t from 'tap';
import { call, errorOf, request, startGateway } from '../helpers/gateway.js';
import { scrape } from '../helpers/metrics.js';
import { freePort, privateRedis, requireRedisServer } from '../helpers/redis.js';
import { until } from '../helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';

const limits = (url: string, onError: 'allow' | 'deny') => ({
  rate_limits: {
    store: { type: 'redis', url, timeout: '100ms', on_error: onError },
    policies: [{ name: 'default', limit: 100, window: '60s' }],
    unauthenticated: { limit: 100, window: '60s' },
  },
});

const readyz = async (adminUrl: string) => {
  const res = await fetch(`${adminUrl}/readyz`);
  return { status: res.status, body: (await res.json()) as any };
};

t.test('a Redis that is down: allow admits, counts and logs once; readyz names it', async (t) => {
  if (!requireRedisServer(t)) return;
  const port = await freePort();
  const gw = await startGateway(limits(`redis://127.0.0.1:${port}/0`, 'allow'));
  t.teardown(() => gw.close());
  for (let i = 0; i < 5; i++) {
    const res = await call(gw, { method: 'GET', target: MEMBER });
    t.equal(res.status, 200);
    t.equal(res.headers['ratelimit-policy'], '"default";q=100;w=60', 'the policy is named');
    t.notOk(res.headers.ratelimit, 'no count is known');
  }
  t.equal(
    await scrape(gw.adminUrl, 'gateway_rate_limit_decisions_total', { policy: 'default', result: 'error' }),
    5,
  );
  t.equal(
    await scrape(gw.adminUrl, 'gateway_rate_limit_decisions_total', {
      policy: 'unauthenticated',
      result: 'error',
    }),
    5,
  );
  // A failed authentication is recorded against the address: that fails too, and is counted.
  t.equal((await request(gw, { method: 'GET', target: MEMBER })).status, 401);
  t.equal(
    await scrape(gw.adminUrl, 'gateway_rate_limit_decisions_total', {
      policy: 'unauthenticated',
      result: 'error',
    }),
    7,
    'the check and the record',
  );
  const warnings = gw.logs.filter((l) => l.msg === 'rate limit store unavailable');
  t.equal(warnings.length, 1, 'logged at most once a minute');
  t.notMatch(JSON.stringify(warnings), 'redis://', 'never the URL');
  const ready = await readyz(gw.adminUrl);
  t.equal(ready.status, 200, 'allow: still ready');
  t.equal(ready.body.checks['rate_limits.redis'], 'redis unavailable');
});

t.test('a Redis that is down: deny answers 503 and the gateway is not ready', async (t) => {
  if (!requireRedisServer(t)) return;
  const port = await freePort();
  const gw = await startGateway(limits(`redis://127.0.0.1:${port}/0`, 'deny'));
  t.teardown(() => gw.close());
  const res = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(res.status, 503);
  t.same(errorOf(res), { status: 503, context: 'rate_limit', message: 'rate limit store unavailable' });
  t.notOk(res.headers['retry-after']);
  // The address check comes first: a request without credentials gets the same 503.
  t.equal((await request(gw, { method: 'GET', target: MEMBER })).status, 503);
  t.equal((await readyz(gw.adminUrl)).status, 503);
});

t.test('deny without the address limit: the identity decision answers 503', async (t) => {
  if (!requireRedisServer(t)) return;
  const port = await freePort();
  const config = limits(`redis://127.0.0.1:${port}/0`, 'deny');
  delete (config.rate_limits as { unauthenticated?: unknown }).unauthenticated;
  const gw = await startGateway(config);
  t.teardown(() => gw.close());
  t.equal((await request(gw, { method: 'GET', target: MEMBER })).status, 401, 'authentication first');
  const res = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(res.status, 503);
  t.notOk(res.headers['ratelimit-policy']);
  t.equal(
    await scrape(gw.adminUrl, 'gateway_rate_limit_decisions_total', { policy: 'default', result: 'error' }),
    1,
  );
});

t.test('a slow Redis (paused) never holds a request; it is found again once it answers', async (t) => {
  if (!requireRedisServer(t)) return;
  const redis = await privateRedis(t);
  const gw = await startGateway(limits(redis.url, 'allow'));
  t.teardown(() => gw.close());
  const before = await call(gw, { method: 'GET', target: MEMBER });
  const first = performance.now();
  t.equal(before.headers.ratelimit, '"default";r=99;t=60');
  t.equal((await readyz(gw.adminUrl)).body.checks['rate_limits.redis'], 'ok');

  redis.pause();
  const started = performance.now();
  const slow = await call(gw, { method: 'GET', target: MEMBER });
  const took = performance.now() - started;
  t.equal(slow.status, 200, 'allow admits');
  t.notOk(slow.headers.ratelimit);
  // Two decisions (address, identity) of at most 100 ms each, and the machine's own slowness.
  t.ok(took < 2_000, `answered in ${Math.round(took)} ms`);
  t.equal((await readyz(gw.adminUrl)).body.checks['rate_limits.redis'], 'redis unavailable');

  redis.resume();
  await until(
    '/readyz finds Redis again',
    async () => (await readyz(gw.adminUrl)).body.checks['rate_limits.redis'] === 'ok',
  );
  const after = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(after.status, 200);
  const counted = /^"default";r=9[78];t=(\d+)$/.exec(String(after.headers.ratelimit ?? ''));
  t.ok(counted, `counted in Redis again: ${after.headers.ratelimit}`);
  // t: the seconds until the first admission leaves the 60 s window (a loaded machine may take a
  // few seconds to get here).
  const elapsed = Math.ceil((performance.now() - first) / 1000);
  t.ok(Number(counted?.[1]) <= 60 && Number(counted?.[1]) >= 60 - elapsed, `t=${counted?.[1]}`);
});

t.test('a Redis restarted mid-run: requests go on, counting resumes', async (t) => {
  if (!requireRedisServer(t)) return;
  const redis = await privateRedis(t);
  const gw = await startGateway(limits(redis.url, 'deny'));
  t.teardown(() => gw.close());
  t.equal((await call(gw, { method: 'GET', target: MEMBER })).headers.ratelimit, '"default";r=99;t=60');
  await redis.stop();
  const down = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(down.status, 503, 'deny while it is down');
  await until('/readyz answers 503', async () => (await readyz(gw.adminUrl)).status === 503);
  await redis.start();
  await until('/readyz answers 200', async () => (await readyz(gw.adminUrl)).status === 200);
  const back = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(back.status, 200);
  // A new server holds no counts: this is its first admission.
  t.equal(back.headers.ratelimit, '"default";r=99;t=60');
});
