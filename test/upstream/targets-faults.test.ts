/**
 * Faults of targets through the real gateway, over three replicas that are real processes the tests
 * start, stop (kill -9) and restart: one target stopped under a steady load of GETs, `max_ejected`,
 * the retry budget under a burst, a PATCH cut mid-body (never retried) or refused at connect (sent
 * elsewhere), and retries inside `Prefer: wait=1`.
 */
import t, { type Test } from 'tap';
import {
  call,
  errorOf,
  multipart,
  startGateway,
  type TestGateway,
  type TestResponse,
} from '../helpers/gateway.js';
import { scrape } from '../helpers/metrics.js';
import { type ReplicaProcess, startReplicas, targetsConfig } from '../helpers/replicas.js';
import { until } from '../helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const PROVIDER = '/api/v2/sso-providers/1';

/** Three replicas and a gateway whose `backend` they are (`over` on its configuration). */
async function setup(
  t: Test,
  over: Record<string, unknown> = {},
  backend = 'asset_group_tags',
): Promise<{ gw: TestGateway; replicas: [ReplicaProcess, ReplicaProcess, ReplicaProcess] }> {
  const replicas = await startReplicas(t, 3);
  const gw = await startGateway({
    backends: { [backend]: { type: 'upstream', ...targetsConfig(replicas, over) } },
  });
  t.teardown(() => gw.close());
  return { gw, replicas: replicas as [ReplicaProcess, ReplicaProcess, ReplicaProcess] };
}

const get = (gw: TestGateway, headers: Record<string, string> = {}) =>
  call(gw, { method: 'GET', target: MEMBER, headers });

const retries = (gw: TestGateway, reason: string, backend = 'asset_group_tags') =>
  scrape(gw.adminUrl, 'gateway_upstream_retries_total', { backend, reason });

t.test(
  'one target stopped under steady GETs: no failed GET beyond those in flight, ejected, tried again later',
  async (t) => {
    const { gw, replicas } = await setup(t, { outlier: { consecutive_failures: 3, base_ejection: '2s' } });
    const stopped = replicas[1];
    let running = true;
    let inFlight = 0;
    let answered = 0;
    const failed: number[] = [];
    const worker = async () => {
      while (running) {
        inFlight++;
        const res = await get(gw);
        inFlight--;
        answered++;
        if (res.status !== 200) failed.push(res.status);
      }
    };
    const workers = Array.from({ length: 4 }, worker);
    await until('40 GETs answered', () => answered >= 40);
    const atStop = inFlight;
    await stopped.stop();
    await until('the stopped target is ejected', async () => {
      return (
        (await scrape(gw.adminUrl, 'gateway_upstream_ejections_total', { backend: 'asset_group_tags' })) === 1
      );
    });
    const ejected = gw.logs.find((l) => l.msg === 'upstream target ejected');
    t.equal(ejected?.target, stopped.url);
    t.equal(ejected?.ejection_ms, 2000, 'for base_ejection × 1');
    const after = answered;
    await until('40 more GETs answered', () => answered >= after + 40);
    await stopped.start();
    const before = stopped.received.length;
    await until('the restarted target gets requests again', () => stopped.received.length > before);
    const waited = Date.now() - Date.parse(ejected?.time as string);
    running = false;
    await Promise.all(workers);
    t.ok(failed.length <= atStop, `${failed.length} failed GETs, ${atStop} were in flight at the stop`);
    t.ok(waited >= 2000, `tried again ${waited} ms after its ejection (base_ejection 2 s)`);
    t.ok(((await retries(gw, 'not_sent')) ?? 0) + ((await retries(gw, 'failure')) ?? 0) >= 1, 'retried');
  },
);

t.test('max_ejected: of two failing targets only one is ejected; the other stays in', async (t) => {
  const { gw, replicas } = await setup(t, {
    balance: 'round_robin',
    outlier: { consecutive_failures: 2, base_ejection: '60s', max_ejected: '34%' },
  });
  const [first, second] = replicas;
  await first.set({ mode: 503 });
  await second.set({ mode: 503 });
  for (let i = 0; i < 20; i++) await get(gw);
  t.equal(await scrape(gw.adminUrl, 'gateway_upstream_ejections_total', { backend: 'asset_group_tags' }), 1);
  const state = (s: string) =>
    scrape(gw.adminUrl, 'gateway_upstream_targets', { backend: 'asset_group_tags', state: s });
  t.equal(await state('ejected'), 1, 'floor(34% × 3) = 1');
  t.equal(await state('healthy'), 2);
  t.equal(first.received.length, 2, 'the first ejected after its second failure, and sent nothing since');
  t.ok(second.received.length > 2, 'the second, failing too, stays in: the cap keeps it');
});

t.test('the retry budget under a burst: at most 3 retries in flight (its minimum)', async (t) => {
  const { gw, replicas } = await setup(t, {
    balance: 'round_robin',
    outlier: { consecutive_failures: 1000 },
    retries: { attempts: 1, budget: '0%' },
  });
  const [failing, slow1, slow2] = replicas;
  await failing.set({ mode: 503 });
  await slow1.set({ mode: 'hang' });
  await slow2.set({ mode: 'hang' });
  const burst = Array.from({ length: 30 }, () => get(gw));
  const answers: TestResponse[] = [];
  for (const res of burst) void res.then((r) => answers.push(r));
  const held = () => slow1.received.length + slow2.received.length;
  await until('every request of the burst is answered 503 or held', async () => {
    const retried = (await retries(gw, 'status')) ?? 0;
    return answers.length + held() === 30 && answers.length === failing.received.length - retried;
  });
  t.equal(await retries(gw, 'status'), 3, 'three retries, held by the slow targets: the budget is spent');
  t.ok(answers.length > 0, `${answers.length} 503s answered as they came, not retried`);
  t.ok(answers.every((r) => r.status === 503));
  const refused = answers.length;
  await slow1.set({ mode: 'answer', release: true });
  await slow2.set({ mode: 'answer', release: true });
  const statuses = (await Promise.all(burst)).map((r) => r.status);
  t.equal(statuses.filter((s) => s === 200).length, 30 - refused, 'the held ones answered once released');
});

/** A valid PATCH renaming provider 1. */
const patch = (gw: TestGateway) => {
  const form = multipart([{ name: 'name', value: 'renamed' }]);
  return call(gw, {
    method: 'PATCH',
    target: PROVIDER,
    body: form.body,
    headers: { 'Content-Type': form.contentType },
  });
};

t.test('a PATCH cut mid-body is never retried', async (t) => {
  const { gw, replicas } = await setup(t, { balance: 'round_robin' }, 'sso_providers');
  await replicas[0].set({ mode: 'reset-mid-body' });
  const res = await patch(gw);
  t.same(errorOf(res), { status: 502, context: 'upstream', message: 'upstream service unavailable' });
  t.same(
    replicas.map((r) => r.received.map((seen) => seen.method)),
    [['PATCH'], [], []],
    'its outcome is the first target’s: nothing went elsewhere',
  );
  for (const reason of ['not_sent', 'failure', 'status']) {
    t.equal(await retries(gw, reason, 'sso_providers'), 0, reason);
  }
});

t.test('a PATCH refused at connect goes to another target', async (t) => {
  const { gw, replicas } = await setup(t, { balance: 'round_robin' }, 'sso_providers');
  await replicas[0].stop();
  const res = await patch(gw);
  t.equal(res.status, 200);
  t.equal(res.json().from, 'r1');
  t.same(
    replicas[1].received.map((seen) => seen.method),
    ['PATCH'],
  );
  t.equal(await retries(gw, 'not_sent', 'sso_providers'), 1);
  // A 503 to a PATCH that was written is the target's answer: relayed, never sent again.
  await replicas[2].set({ mode: 503 });
  const refused = await patch(gw);
  t.equal(refused.status, 503);
  t.equal(await retries(gw, 'status', 'sso_providers'), 0);
});

t.test('retries inside Prefer: wait=1: a 503 or a cut connection, then another target answers', async (t) => {
  const { gw, replicas } = await setup(t, { balance: 'round_robin' });
  await replicas[0].set({ mode: 503 });
  await replicas[2].set({ mode: 'reset' });
  for (const [failed, from] of [
    ['status', 'r1'],
    ['failure', 'r0'],
  ] as const) {
    const started = performance.now();
    const res = await get(gw, { Prefer: 'wait=1' });
    const took = performance.now() - started;
    t.equal(res.status, 200);
    t.equal(res.json().from, from);
    t.ok(took < 1000, `answered in ${Math.round(took)} ms, within the deadline`);
    t.equal(await retries(gw, failed), 1, failed);
    // The next one (round robin) goes to the target that cuts its connections; the one it retries on answers.
    await replicas[0].set({ mode: 'answer' });
  }
  t.equal(replicas[1].received[0]?.prefer, 'wait=1', 'the retry carries the seconds left');
});

t.test('a hung target costs a request its headers_timeout, then another answers', async (t) => {
  const { gw, replicas } = await setup(t, { balance: 'round_robin', headers_timeout: '300ms' });
  await replicas[0].set({ mode: 'hang' });
  const started = performance.now();
  const res = await get(gw, { Prefer: 'wait=5' });
  const took = performance.now() - started;
  t.equal(res.status, 200);
  t.equal(res.json().from, 'r1');
  // undici checks its headers timeout on a timer wheel of about a second.
  t.ok(took >= 300 && took < 3000, `answered in ${Math.round(took)} ms`);
  t.equal(await retries(gw, 'failure'), 1);
  t.equal(await scrape(gw.adminUrl, 'gateway_upstream_errors_total', { kind: 'headers_timeout' }), 1);
});

t.test('no retry past the deadline: a target hung beyond Prefer: wait=1 is a 504', async (t) => {
  const { gw, replicas } = await setup(t, { balance: 'round_robin', headers_timeout: '5s' });
  await replicas[0].set({ mode: 'hang' });
  const started = performance.now();
  const res = await get(gw, { Prefer: 'wait=1' });
  const took = performance.now() - started;
  t.same(errorOf(res), { status: 504, context: 'request', message: 'request timed out' });
  t.ok(took >= 900 && took < 3000, `answered after ${Math.round(took)} ms: the deadline`);
  t.same(
    replicas.map((r) => r.received.length),
    [1, 0, 0],
  );
  for (const reason of ['not_sent', 'failure', 'status']) t.equal(await retries(gw, reason), 0, reason);
});
