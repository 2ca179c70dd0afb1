/**
 * Balancing and passive ejection over real servers: three replicas on their own ports, switched
 * between answering, 503, garbage and stopped; time moved by hand where an ejection's length matters.
 */
import t, { type Test } from 'tap';
import { errors } from '../../src/errors.js';
import { openPool, startReplica, type Replica } from '../helpers/targets.js';
import { GET, manualClock, send, targetSet } from '../helpers/target-set.js';
import { until } from '../helpers/wait.js';

async function replicas(t: Test, n = 3): Promise<Replica[]> {
  const made = await Promise.all(['a', 'b', 'c', 'd'].slice(0, n).map((name) => startReplica(name)));
  t.teardown(() => Promise.all(made.map((r) => r.stop())));
  return made;
}

/** The replica whose URL `from` is. */
const nameOf = (all: Replica[], from: string) => all.find((r) => r.url === from)?.name;

t.test('round_robin takes the targets in turn', async (t) => {
  const all = await replicas(t);
  const set = targetSet(t, all, { balance: 'round_robin' });
  const order: Array<string | undefined> = [];
  for (let i = 0; i < 6; i++) order.push(nameOf(all, (await send(set, GET)).from));
  t.same(order, ['a', 'b', 'c', 'a', 'b', 'c']);
});

t.test('least_request sends each request to a target with the fewest in flight', async (t) => {
  const all = await replicas(t);
  for (const r of all) r.mode = 'hang';
  const set = targetSet(t, all);
  const pending = Array.from({ length: 6 }, () => send(set, GET));
  await until('two requests held by each target', () => all.every((r) => r.held.length === 2));
  t.same(
    set.targets.map((target) => target.inFlight),
    [2, 2, 2],
    'six requests at once: two each',
  );
  const [a] = all as [Replica];
  a.mode = 'answer';
  a.release();
  await until('a emptied', () => set.targets[0]?.inFlight === 0);
  const next = await send(set, { ...GET, path: '/next' });
  t.equal(nameOf(all, next.from), 'a', 'the next one goes to the target with none in flight');
  for (const r of all) r.release();
  await Promise.all(pending);
});

t.test('least_request breaks ties at random', async (t) => {
  const all = await replicas(t);
  const set = targetSet(t, all);
  const counts = new Map<string, number>();
  for (let i = 0; i < 60; i++) {
    const name = nameOf(all, (await send(set, GET)).from) as string;
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  t.equal(counts.size, 3, `every target got some: ${JSON.stringify([...counts])}`);
});

t.test('five failures in a row eject a target for base_ejection; then it is tried again', async (t) => {
  const all = await replicas(t);
  const [, b] = all as [Replica, Replica, Replica];
  const clock = manualClock();
  const ejected: Array<[string, number]> = [];
  const set = targetSet(
    t,
    all,
    { balance: 'round_robin', retries: { attempts: 0, budget: 0.2 } },
    { clock: clock.now, events: { ejected: (target, ms) => ejected.push([target.url.origin, ms]) } },
  );
  b.mode = 503;
  const statuses: number[] = [];
  for (let i = 0; i < 15; i++) statuses.push((await send(set, GET)).status);
  t.equal(statuses.filter((s) => s === 503).length, 5, "b's five 503s were relayed (no retries here)");
  t.same(ejected, [[b.url, 30_000]]);
  t.same(set.states(), { healthy: 2, unhealthy: 0, ejected: 1 });
  const before = b.received.length;
  for (let i = 0; i < 10; i++) t.equal((await send(set, GET)).status, 200);
  t.equal(b.received.length, before, 'nothing reaches b while it is out');
  clock.advance(29_999);
  await send(set, GET);
  t.equal(b.received.length, before, 'still out 1 ms before base_ejection');
  b.mode = 'answer';
  clock.advance(1);
  for (let i = 0; i < 3; i++) await send(set, GET);
  t.equal(b.received.length, before + 1, 'back after base_ejection');
  t.same(set.states(), { healthy: 3, unhealthy: 0, ejected: 0 });
});

t.test(
  'a failure is a connect failure, a reset, a timeout, garbage or a 502/503/504; never another status',
  async (t) => {
    const [a, b] = (await replicas(t, 2)) as [Replica, Replica];
    const fails = async (mode: Replica['mode'], stop = false) => {
      const set = targetSet(
        t,
        [a, b],
        { balance: 'round_robin', retries: { attempts: 0, budget: 0.2 } },
        { open: (url) => openPool(url, 300) },
      );
      b.mode = mode;
      if (stop) await b.stop();
      for (let i = 0; i < 10; i++) await send(set, GET).catch(() => undefined);
      if (stop) await b.start();
      b.mode = 'answer';
      b.release();
      return set.isEjected(set.targets[1] as (typeof set.targets)[number]);
    };
    for (const mode of [502, 503, 504, 'garbage', 'reset', 'hang'] as const)
      t.ok(await fails(mode), `${mode} ejects`);
    t.ok(await fails('answer', true), 'a refused connection ejects');
    for (const mode of [500, 404, 429, 401, 400] as const) t.notOk(await fails(mode), `${mode} never ejects`);
  },
);

t.test('max_ejected: the targets past it stay in, and take requests', async (t) => {
  const all = await replicas(t, 4);
  const set = targetSet(t, all, { balance: 'round_robin', retries: { attempts: 0, budget: 0.2 } });
  for (const r of all.slice(1)) r.mode = 503;
  for (let i = 0; i < 40; i++) await send(set, GET);
  t.same(set.states(), { healthy: 2, unhealthy: 0, ejected: 2 }, 'floor(50% × 4) = 2');
  const kept = all.slice(1).find((r) => !set.isEjected(set.targets[all.indexOf(r)] as never)) as Replica;
  const before = kept.received.length;
  for (let i = 0; i < 4; i++) await send(set, GET);
  t.equal(kept.received.length, before + 2, 'the third failing target still takes its turn');
  t.ok(set.ready(), 'one target answers: the backend is ready');
});

t.test('every target failing: one request at a time tries, the others are answered at once', async (t) => {
  const [only] = (await replicas(t, 1)) as [Replica];
  const set = targetSet(t, [only], { retries: { attempts: 0, budget: 0.2 } });
  only.mode = 503;
  for (let i = 0; i < 5; i++) t.equal((await send(set, GET)).status, 503);
  t.notOk(set.isEjected(set.targets[0] as never), 'a single target is never ejected');
  t.notOk(set.ready(), 'but it fails every request: the backend is not ready');
  only.mode = 'hang';
  const trial = send(set, GET);
  await until('the trial held', () => only.held.length === 1);
  await t.rejects(send(set, GET), errors.upstreamUnavailable('all_out'), 'another is answered at once');
  t.equal(only.received.length, 6, 'and never reached the target');
  only.mode = 'answer';
  only.release();
  t.equal((await trial).status, 200, 'the trial went through');
  t.ok(set.ready(), 'the target answered: it is in again');
  t.equal((await send(set, GET)).status, 200);
});
