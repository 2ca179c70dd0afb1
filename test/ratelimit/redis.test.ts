/**
 * The redis store against the real shared Redis (a key prefix per test): the same answers as the
 * memory store, the keys' shape (prefix, hash tag, no identity in clear), and the exactness of the
 * sliding log read from Redis's own admission times.
 */
import t from 'tap';
import { call, request, startGateway, TOKENS, type TestGateway } from '../helpers/gateway.js';
import { scrape } from '../helpers/metrics.js';
import { cleanUp, REDIS_URL, redisClient, requireRedis, uniquePrefix } from '../helpers/redis.js';
import { until } from '../helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const CHECKSUM = '/api/v2/collectors/sharphound/latest/checksum';

function redisLimits(prefix: string, extra: Record<string, unknown> = {}) {
  return {
    rate_limits: {
      store: { type: 'redis', url: REDIS_URL, key_prefix: prefix, timeout: '500ms' },
      ...extra,
    },
  };
}

t.test('policies in Redis', async (t) => {
  if (!(await requireRedis(t))) return;
  const prefix = uniquePrefix();
  cleanUp(t, prefix);
  const gw = await startGateway(
    redisLimits(prefix, {
      policies: [
        { name: 'default', limit: 5, window: '60s' },
        { name: 'members', limit: 2, window: '30s', operations: ['GetAssetGroupTagMember'] },
      ],
      unauthenticated: { limit: 2, window: '60s' },
    }),
  );
  t.teardown(() => gw.close());
  const redis = redisClient(t);

  const first = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(first.status, 200);
  t.equal(first.headers['ratelimit-policy'], '"default";q=5;w=60, "members";q=2;w=30');
  t.equal(first.headers.ratelimit, '"members";r=1;t=30');
  t.equal((await call(gw, { method: 'GET', target: MEMBER })).status, 200);
  const refused = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(refused.status, 429);
  t.equal(refused.headers['retry-after'], '30');
  t.equal(refused.headers.ratelimit, '"members";r=0;t=30');
  const other = await call(gw, { method: 'GET', target: CHECKSUM });
  t.equal(other.headers.ratelimit, '"default";r=2;t=60', 'the refused request used none of default');

  const keys = (await redis.keys(`${prefix}*`)).sort();
  t.equal(keys.length, 2, 'one key per policy of the identity');
  for (const key of keys) {
    t.match(
      key,
      /^gwtest:[^{]*rl:\{[A-Za-z0-9_-]{43}\}:(default:5:60|members:2:30)$/,
      'prefixed, hash-tagged',
    );
    t.notMatch(key, TOKENS.admin.id, 'the identity only ever hashed');
    t.ok((await redis.pttl(key)) > 0, 'expires');
  }
  t.equal(await redis.zcard(keys.find((k) => k.includes(':default:')) as string), 3);

  // Failed authentications per address are kept in Redis too.
  t.equal((await request(gw, { method: 'GET', target: MEMBER })).status, 401);
  t.equal((await request(gw, { method: 'GET', target: MEMBER })).status, 401);
  t.equal((await call(gw, { method: 'GET', target: MEMBER, token: TOKENS.reader })).status, 429);
  t.equal((await redis.keys(`${prefix}*:unauthenticated:2:60`)).length, 1);

  const ready = (await (await fetch(`${gw.adminUrl}/readyz`)).json()) as any;
  t.equal(ready.checks['rate_limits.redis'], 'ok');
  t.ok(((await scrape(gw.adminUrl, 'gateway_rate_limit_store_duration_seconds_count')) ?? 0) >= 8);
  t.equal(await scrape(gw.adminUrl, 'gateway_rate_limit_decisions_total', { result: 'error' }), 0);
});

/**
 * Reads every admission of `key` with its Redis time (µs) as long as `running()` holds: each stays in
 * the sorted set for at least a window, so polling far more often than that sees all of them.
 */
async function collectAdmissions(
  redis: ReturnType<typeof redisClient>,
  key: () => Promise<string | undefined>,
  running: () => boolean,
): Promise<Map<string, number>> {
  const seen = new Map<string, number>();
  for (;;) {
    // Read once more after the last request was answered.
    const last = !running();
    const k = await key();
    if (k !== undefined) {
      const entries = await redis.zrange(k, 0, -1, 'WITHSCORES');
      for (let i = 0; i < entries.length; i += 2) seen.set(entries[i] as string, Number(entries[i + 1]));
    }
    if (last) return seen;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The most admissions found in any half-open interval of `window` µs. */
function busiestWindow(times: number[], window: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let start = 0;
  for (let end = 0; end < sorted.length; end++) {
    while ((sorted[end] as number) - (sorted[start] as number) >= window) start++;
    most = Math.max(most, end - start + 1);
  }
  return most;
}

/** Sends `n` requests at once; resolves with how many were admitted. */
async function burst(gw: TestGateway | { port: number }, n: number): Promise<number> {
  const answers = await Promise.all(
    Array.from({ length: n }, () => call(gw, { method: 'GET', target: MEMBER, token: TOKENS.reader })),
  );
  return answers.filter((a) => a.status === 200).length;
}

t.test('exact: no interval of the window admits more than the limit', async (t) => {
  if (!(await requireRedis(t))) return;
  const prefix = uniquePrefix();
  cleanUp(t, prefix);
  const LIMIT = 10;
  const gw = await startGateway(
    redisLimits(prefix, { policies: [{ name: 'exact', limit: LIMIT, window: '1s' }] }),
  );
  t.teardown(() => gw.close());
  const redis = redisClient(t);
  const keyOf = async () => (await redis.keys(`${prefix}*:exact:*`))[0];
  let running = true;
  const collecting = collectAdmissions(redis, keyOf, () => running);

  // Three windows at three times the limit: one request every 1/30 s.
  let admitted = 0;
  const redisNow = async () => {
    const [s, us] = await redis.time();
    return Number(s) * 1e6 + Number(us);
  };
  const start = await redisNow();
  const sent: Array<Promise<void>> = [];
  while ((await redisNow()) - start < 3e6) {
    sent.push(
      call(gw, { method: 'GET', target: MEMBER, token: TOKENS.reader }).then((r) => {
        if (r.status === 200) admitted++;
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 1000 / (3 * LIMIT)));
  }
  await Promise.all(sent);
  // Then bursts at different phases of the window: just after a refusal, and a third and two
  // thirds into the next window.
  for (const phase of [0, 333, 666, 100, 900]) {
    const target = (await redisNow()) + phase * 1000;
    await until(
      "the phase is reached on Redis's clock",
      async () => (await redisNow()) >= target,
      undefined,
      5,
    );
    admitted += await burst(gw, LIMIT * 2);
  }
  // An idle window later, the whole limit at once.
  const last = await redisNow();
  await until(
    "an idle window passes on Redis's clock",
    async () => (await redisNow()) >= last + 1_050_000,
    undefined,
    20,
  );
  const fresh = await burst(gw, LIMIT);
  admitted += fresh;
  t.equal(fresh, LIMIT, 'a client idle for a window may send the limit at once');
  running = false;
  const seen = await collecting;
  t.equal(seen.size, admitted, 'every admission seen, with its Redis time');
  t.ok(admitted >= 3 * LIMIT, `admitted ${admitted}`);
  t.ok(
    busiestWindow([...seen.values()], 1e6) <= LIMIT,
    `busiest 1 s: ${busiestWindow([...seen.values()], 1e6)}`,
  );
  t.equal(busiestWindow([...seen.values()], 1e6), LIMIT, 'the limit is reached');
});
