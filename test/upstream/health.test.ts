/**
 * Active health checks over real servers: a target whose `GET /health` fails `unhealthy` times in a
 * row (a 5xx, no answer within the timeout, a refused connection) is out until `healthy` passes in a
 * row; with every target out, requests are answered 502 `upstream unreachable` at once.
 */
import t, { type Test } from 'tap';
import { errors } from '../../src/errors.js';
import { startReplica, type Replica } from '../helpers/targets.js';
import { GET, send, targetSet } from '../helpers/target-set.js';
import { until } from '../helpers/wait.js';

const CHECK = { path: '/health', interval: 20, timeout: 200, healthy: 2, unhealthy: 2 };

/** Replicas whose health answers what `status[name]` says. */
async function checked(t: Test, names: string[]) {
  const status: Record<string, number> = Object.fromEntries(names.map((n) => [n, 200]));
  const made = await Promise.all(names.map((n) => startReplica(n, () => status[n] as number)));
  t.teardown(() => Promise.all(made.map((r) => r.stop())));
  return { replicas: made, status };
}

t.test('a failing health check takes a target out, passing ones bring it back', async (t) => {
  const { replicas, status } = await checked(t, ['a', 'b', 'c']);
  const [, b] = replicas as [Replica, Replica, Replica];
  const changes: string[] = [];
  const set = targetSet(
    t,
    replicas,
    { healthCheck: CHECK },
    { events: { health: (target) => changes.push(`${target.url.origin} ${target.health.healthy}`) } },
  );
  t.same(set.states(), { healthy: 3, unhealthy: 0, ejected: 0 }, 'targets start healthy');
  status.b = 503;
  await until('b unhealthy', () => set.states().unhealthy === 1);
  t.same(changes, [`${b.url} false`]);
  const before = b.received.length;
  for (let i = 0; i < 12; i++) t.equal((await send(set, GET)).status, 200);
  t.equal(b.received.length, before, 'no request reaches a target failing its health check');
  status.b = 200;
  await until('b healthy again', () => set.states().healthy === 3);
  t.same(changes, [`${b.url} false`, `${b.url} true`]);
  await until('b answering again', async () => (await send(set, GET)).from === b.url);
});

t.test('a check that hangs past its timeout, or is refused, fails', async (t) => {
  const { replicas, status } = await checked(t, ['a', 'b']);
  const [a, b] = replicas as [Replica, Replica];
  const set = targetSet(t, replicas, { healthCheck: CHECK });
  status.a = 0;
  await b.stop();
  await until('both unhealthy', () => set.states().unhealthy === 2);
  t.notOk(set.ready(), 'every target out: not ready');
  const started = Date.now();
  const err = await send(set, GET).catch((e: unknown) => e);
  t.same(err, errors.upstreamUnavailable('all_out'), '502 upstream unreachable');
  t.match(err, { status: 502, message: 'upstream unreachable', code: 'GW_UPSTREAM_ALL_TARGETS_OUT' });
  t.ok(Date.now() - started < 1000, 'at once');
  t.equal(a.received.length + b.received.length, 0, 'nothing was sent');
  status.a = 200;
  await b.start();
  await until('both healthy again', () => set.states().healthy === 2);
  t.ok(set.ready());
  t.equal((await send(set, GET)).status, 200);
});

t.test('ejection is counted before health: each target once', async (t) => {
  const { replicas, status } = await checked(t, ['a', 'b', 'c']);
  const [a] = replicas as [Replica];
  const set = targetSet(t, replicas, {
    healthCheck: CHECK,
    balance: 'round_robin',
    retries: { attempts: 0, budget: 0.2 },
  });
  a.mode = 503;
  for (let i = 0; i < 15; i++) await send(set, GET);
  status.a = 503;
  status.b = 503;
  await until('b unhealthy', () => set.states().unhealthy === 1 && !set.targets[1]?.health.healthy);
  t.same(set.states(), { healthy: 1, unhealthy: 1, ejected: 1 }, 'a ejected and unhealthy counts as ejected');
  t.equal((await send(set, GET)).from, replicas[2]?.url, 'c takes every request');
});
