/**
 * The redis store on Sentinel: a real primary, replica and three Sentinels (each with its own
 * password) started by the test. The primary is killed (SIGKILL) or frozen (SIGSTOP): every request
 * is answered per `on_error` while the Sentinels fail over, and once they have promoted the replica
 * the gateway counts there again within `timeout` + 5 s, without a restart.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import t, { type Test } from 'tap';
import { Redis } from 'ioredis';
import { call, startGateway, TOKENS, type Tok } from '../helpers/gateway.js';
import { scrape } from '../helpers/metrics.js';
import { requireRedisServer } from '../helpers/redis.js';
import { PRIMARY_NAME, startSentinelSet, waitFor } from '../helpers/redis-topologies.js';
import { until } from '../helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const TIMEOUT_MS = 200;
const DATA_PASSWORD = 'data-secret';
const SENTINEL_PASSWORD = 'sentinel-secret';

// Starting five servers and a failover take some seconds; more on a loaded machine.
t.setTimeout(180_000);

const token = (subject: string): Tok => ({
  id: randomUUID(),
  key: `${subject}-key`,
  subject,
  permissions: ['*'],
});

/** The primary fails (`kill`: SIGKILL; `freeze`: SIGSTOP, its connections left open). */
async function failover(t: Test, how: 'kill' | 'freeze') {
  if (!requireRedisServer(t)) return;
  const set = await startSentinelSet(t, { password: DATA_PASSWORD, sentinelPassword: SENTINEL_PASSWORD });
  const during = token('during');
  const after = token('after');
  const gw = await startGateway({
    auth: { signature: { tokens: [...Object.values(TOKENS), during, after] } },
    rate_limits: {
      store: {
        type: 'redis',
        sentinels: set.sentinels.map((s) => s.address),
        name: PRIMARY_NAME,
        // The default user, named: the Sentinels get it too.
        username: 'default',
        password: DATA_PASSWORD,
        sentinel_password: SENTINEL_PASSWORD,
        timeout: `${TIMEOUT_MS}ms`,
        on_error: 'allow',
      },
      policies: [{ name: 'default', limit: 5, window: '60s' }],
    },
  });
  t.teardown(() => gw.close());
  const readyz = async () => (await (await fetch(`${gw.adminUrl}/readyz`)).json()) as any;

  t.equal((await call(gw, { method: 'GET', target: MEMBER })).headers.ratelimit, '"default";r=4;t=60');
  t.equal((await call(gw, { method: 'GET', target: MEMBER })).headers.ratelimit, '"default";r=3;t=60');
  t.equal((await readyz()).checks['rate_limits.redis'], 'ok');
  const keys = await set.primary.client.keys('gateway:rl:*');
  t.equal(keys.length, 1, 'counted on the primary');
  // Both admissions are on the replica before the primary dies (what is not replicated is lost).
  t.equal(await set.primary.client.call('WAIT', '1', '5000'), 1, 'replicated');

  // When the Sentinels announce the new primary (the first of them to do so), and which have.
  let switched: number | undefined;
  const announced = new Set<number>();
  for (const s of set.sentinels) {
    const sub = new Redis({ host: '127.0.0.1', port: s.port, password: SENTINEL_PASSWORD });
    sub.on('error', () => undefined);
    t.teardown(() => sub.disconnect());
    sub.on('message', () => {
      switched ??= performance.now();
      announced.add(s.port);
    });
    await sub.subscribe('+switch-master');
  }

  if (how === 'kill') await set.primary.kill();
  else set.primary.freeze();
  const answers: Array<{ sent: number; took: number; status: number; counted: boolean; ready: number }> = [];
  await waitFor(
    'a decision counted in Redis again',
    async () => {
      const sent = performance.now();
      const res = await call(gw, { method: 'GET', target: MEMBER, token: during });
      const took = performance.now() - sent;
      const ready = (await fetch(`${gw.adminUrl}/readyz`)).status;
      answers.push({ sent, took, status: res.status, counted: res.headers.ratelimit !== undefined, ready });
      return res.headers.ratelimit !== undefined;
    },
    60_000,
    50,
  );
  const failing = answers.filter((a) => !a.counted);
  t.ok(failing.length > 0, `${failing.length} requests answered during the failover`);
  t.same(
    answers.filter((a) => a.status !== 200),
    [],
    'on_error allow: every request admitted meanwhile',
  );
  t.same(
    answers.filter((a) => a.ready !== 200),
    [],
    '/readyz stays 200 under allow',
  );
  const slowest = Math.max(...answers.map((a) => a.took));
  t.ok(slowest < 2_000, `never a hang: the slowest answer took ${Math.round(slowest)} ms`);
  // The gateway may find the new primary (asking a Sentinel) before the announcement reaches us.
  await until('a Sentinel announces the promotion', () => switched !== undefined);
  const back = (answers.at(-1) as (typeof answers)[number]).sent;
  const lag = back - (switched as number);
  t.ok(lag <= TIMEOUT_MS + 5_000, `counting again ${Math.round(lag)} ms after the promotion`);
  t.ok(
    ((await scrape(gw.adminUrl, 'gateway_rate_limit_decisions_total', {
      policy: 'default',
      result: 'error',
    })) ?? 0) >= failing.length,
    'the failed decisions are counted as errors',
  );

  // Each Sentinel announces the switch on its own, and the client leaves its primary at each
  // announcement (a partitioned primary is left so): a Sentinel announcing late, on a loaded machine,
  // makes it reconnect once more. Once all have, the promoted replica serves every decision.
  await until('every Sentinel announced the promotion', () => announced.size === set.sentinels.length);
  await until(
    'the store is ready again after the last announcement',
    async () => (await readyz()).checks['rate_limits.redis'] === 'ok',
  );
  // The promoted replica holds the replicated counts, and enforces the limit exactly.
  t.match(
    (await call(gw, { method: 'GET', target: MEMBER })).headers.ratelimit,
    /^"default";r=2;t=\d+$/,
    'the two admissions before the failover are still counted',
  );
  for (let i = 4; i >= 0; i--) {
    const res = await call(gw, { method: 'GET', target: MEMBER, token: after });
    t.equal(res.status, 200);
    t.match(res.headers.ratelimit, new RegExp(`^"default";r=${i};t=(60|59)$`));
  }
  const refused = await call(gw, { method: 'GET', target: MEMBER, token: after });
  t.equal(refused.status, 429, 'the sixth is refused');
  t.ok(Number(refused.headers['retry-after']) >= 1);
  const counted = await set.replica.client.keys('gateway:rl:*');
  t.equal(counted.length, 3, 'three identities counted on the new primary');
  t.equal((await readyz()).checks['rate_limits.redis'], 'ok');
  const logged = JSON.stringify(gw.logs);
  t.notMatch(logged, DATA_PASSWORD, 'no password in the logs');
  t.notMatch(logged, SENTINEL_PASSWORD, 'no Sentinel password in the logs');
}

t.test('kill -9 the primary: on_error meanwhile, then the promoted replica within the bound', (t) =>
  failover(t, 'kill'),
);

// The connection to a frozen primary stays open: ioredis leaves it when the Sentinels announce the
// new primary (its failover detector), not when a command times out.
t.test('a frozen primary: on_error meanwhile, then the promoted replica within the bound', (t) =>
  failover(t, 'freeze'),
);
