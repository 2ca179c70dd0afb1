/**
 * Which requests go to another target, over real servers: a request of which no byte was written,
 * whatever its method; a GET or HEAD that failed or got a 502/503/504; never a PATCH whose bytes
 * reached a target, nor a public request once written; within `attempts`, the deadline and the
 * retry budget.
 */
import { performance } from 'node:perf_hooks';
import t, { type Test } from 'tap';
import { errors } from '../../src/errors.js';
import { startReplica, type Replica } from '../helpers/targets.js';
import { GET, send, targetSet } from '../helpers/target-set.js';
import { until } from '../helpers/wait.js';

async function pair(t: Test): Promise<[Replica, Replica]> {
  const made = await Promise.all([startReplica('a'), startReplica('b')]);
  t.teardown(() => Promise.all(made.map((r) => r.stop())));
  return made as [Replica, Replica];
}

const PATCH = { method: 'PATCH', path: '/sso-providers/1', body: Buffer.alloc(4 * 1024 * 1024, 'x') };

t.test('a request refused at connect goes to another target, whatever its method', async (t) => {
  const [a, b] = await pair(t);
  await a.stop();
  const set = targetSet(t, [a, b], { balance: 'round_robin' });
  const reasons: string[] = [];
  for (const sent of [GET, PATCH, { method: 'POST', path: '/login', body: Buffer.from('{}') }]) {
    const got = await send(set, sent, { retried: (r) => reasons.push(r) });
    t.equal(got.status, 200, `${sent.method} answered`);
    t.equal(got.from, b.url);
  }
  // Round robin: each one's retry to b leaves a next in turn.
  t.same(reasons, ['not_sent', 'not_sent', 'not_sent']);
  const public_ = await send(set, GET, { replayable: false, retried: (r) => reasons.push(r) });
  t.equal(public_.status, 200, 'a public request refused before any byte too');
});

t.test('a GET or HEAD that failed or got a 502/503/504 goes to another target', async (t) => {
  const [a, b] = await pair(t);
  const set = targetSet(t, [a, b], {
    balance: 'round_robin',
    // a fails every time here: it stays in.
    outlier: { consecutiveFailures: 1000, baseEjection: 30_000, maxEjected: 0.5 },
  });
  for (const mode of [503, 502, 504, 'reset', 'garbage'] as const) {
    a.mode = mode;
    const reasons: string[] = [];
    const got = await send(set, GET, { retried: (r) => reasons.push(r) });
    t.same([got.status, got.from], [200, b.url], `${mode}: answered by b`);
    // Round robin: the next request starts with a again.
    t.same(reasons, [typeof mode === 'number' ? 'status' : 'failure'], `${mode}: retried`);
    const head = await send(set, { method: 'HEAD', path: '/x' });
    t.equal(head.status, 200, `${mode}: a HEAD too`);
  }
});

t.test('a PATCH whose bytes reached a target is never retried; a public GET neither', async (t) => {
  const [a, b] = await pair(t);
  const set = targetSet(t, [a, b], { balance: 'round_robin' });
  a.mode = 'reset-mid-body';
  const reasons: string[] = [];
  await t.rejects(send(set, PATCH, { retried: (r) => reasons.push(r) }), 'the PATCH cut mid-body fails');
  t.same(reasons, [], 'not retried');
  t.equal(b.received.length, 0, 'b never saw it');
  a.mode = 503;
  await send(set, GET);
  const patched = await send(set, PATCH, { retried: (r) => reasons.push(r) });
  t.same([patched.status, patched.from], [503, a.url], "a PATCH's 503 is the target's answer");
  a.mode = 'reset';
  await send(set, GET);
  await t.rejects(send(set, GET, { replayable: false, retried: (r) => reasons.push(r) }));
  a.mode = 503;
  await send(set, GET);
  const public_ = await send(set, GET, { replayable: false, retried: (r) => reasons.push(r) });
  t.equal(public_.status, 503, 'a public GET answered 503 once written stays so');
  t.same(reasons, []);
});

t.test('at most `attempts` retries, each to a target not tried yet', async (t) => {
  const all = await Promise.all(['a', 'b', 'c', 'd'].map((n) => startReplica(n)));
  t.teardown(() => Promise.all(all.map((r) => r.stop())));
  for (const r of all) r.mode = 503;
  const none = targetSet(t, all, { retries: { attempts: 0, budget: 1 } });
  t.equal((await send(none, GET)).status, 503);
  t.equal(
    all.reduce((n, r) => n + r.received.length, 0),
    1,
    'attempts 0: no retry',
  );
  const two = targetSet(t, all, { retries: { attempts: 2, budget: 1 } });
  t.equal((await send(two, GET)).status, 503, 'the last answer is relayed');
  t.equal(
    all.reduce((n, r) => n + r.received.length, 0),
    4,
    'attempts 2: three tries',
  );
  t.ok(
    all.every((r) => r.received.length <= 2),
    'no target tried twice by one request',
  );
  const five = targetSet(t, all, { retries: { attempts: 5, budget: 1 } });
  await send(five, GET);
  t.equal(
    all.reduce((n, r) => n + r.received.length, 0),
    8,
    'four targets: four tries at most',
  );
});

t.test('no retry once the deadline has passed or the request stopped', async (t) => {
  const [a, b] = await pair(t);
  const set = targetSet(t, [a, b], { balance: 'round_robin' });
  a.mode = 503;
  const late = await send(set, GET, { deadlineAt: performance.now() - 1 });
  t.same([late.status, late.from], [503, a.url], 'past its deadline: the answer as it is');
  await send(set, GET);
  a.mode = 'hang';
  const stop = new AbortController();
  const started = performance.now();
  const hung = send(set, { ...GET, signal: stop.signal });
  await until('the request held by a', () => a.held.length === 1);
  stop.abort(errors.deadline());
  await t.rejects(hung, errors.deadline(), 'a hanging target costs the request its deadline, no more');
  t.ok(performance.now() - started < 10_000);
  t.equal(b.received.length, 1, 'and nothing went to b for it');
  t.equal(set.targets[0]?.inFlight, 0);
});

t.test('the retry budget: at most max(3, floor(budget × requests in flight)) retries at once', async (t) => {
  for (const [budget, expected] of [
    [0.2, 4],
    [0, 3],
  ] as const) {
    const [a, b] = await pair(t);
    const set = targetSet(t, [a, b], { balance: 'round_robin', retries: { attempts: 1, budget } });
    // 20 requests at once, 10 on each: b holds its own and every retry; a answers its 10 with 503
    // once all 20 are in flight.
    a.mode = 'hang';
    b.mode = 'hang';
    const reasons: string[] = [];
    const burst = Array.from({ length: 20 }, () => send(set, GET, { retried: (r) => reasons.push(r) }));
    await until('the burst spread over a and b', () => a.held.length === 10 && b.held.length === 10);
    for (const res of a.held.splice(0)) res.writeHead(503).end();
    await until(
      'the retries held by b',
      () => set.budget.requests === 20 - (10 - reasons.length) && b.held.length === 10 + reasons.length,
    );
    t.equal(reasons.length, expected, `budget ${budget * 100}%: ${expected} retries`);
    b.release();
    const answers = await Promise.all(burst);
    t.equal(answers.filter((x) => x.status === 503).length, 10 - expected, 'the others answered 503');
    t.equal(set.budget.retries, 0, 'every place given back');
    t.equal(set.budget.requests, 0);
  }
});
