/**
 * Several targets through the real gateway, over three replicas that are real processes the tests
 * start and control: spreading under both policies, the target that answered in the request line,
 * active health taking a target out and back, every target out (502 at once, `/readyz`), and the
 * checksum cache's fetches and pass-through on the same machinery.
 */
import t, { type Test } from 'tap';
import {
  call,
  errorOf,
  readyz,
  startGateway,
  type TestGateway,
  type TestResponse,
} from '../helpers/gateway.js';
import { scrape } from '../helpers/metrics.js';
import { type ReplicaProcess, startReplicas, targetsConfig } from '../helpers/replicas.js';
import { until } from '../helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';

/** Three replicas and a gateway whose asset group tags backend they are (`over` on its configuration). */
async function setup(
  t: Test,
  over: Record<string, unknown> = {},
): Promise<{ gw: TestGateway; replicas: ReplicaProcess[] }> {
  const replicas = await startReplicas(t, 3);
  const gw = await startGateway({
    backends: { asset_group_tags: { type: 'upstream', ...targetsConfig(replicas, over) } },
  });
  t.teardown(() => gw.close());
  return { gw, replicas };
}

const get = (gw: TestGateway, headers: Record<string, string> = {}) =>
  call(gw, { method: 'GET', target: MEMBER, headers });

/** The request line of `res`, once logged. */
async function lineOf(gw: TestGateway, res: TestResponse) {
  const id = res.headers.requestid;
  await until('the request is logged', () => gw.logs.some((l) => l.request_id === id));
  return gw.logs.find((l) => l.request_id === id) as Record<string, unknown>;
}

const targets = (gw: TestGateway, state: string) =>
  scrape(gw.adminUrl, 'gateway_upstream_targets', { backend: 'asset_group_tags', state });

t.test('round_robin takes the targets in turn; the request line names the one that answered', async (t) => {
  const { gw, replicas } = await setup(t, { balance: 'round_robin' });
  const froms: string[] = [];
  for (let i = 0; i < 9; i++) {
    const res = await get(gw);
    t.equal(res.status, 200);
    const from = res.json().from as string;
    froms.push(from);
    const line = await lineOf(gw, res);
    t.equal(line.upstream_target, replicas.find((r) => r.name === from)?.url, 'upstream_target');
    t.equal(line.upstream_request_id, `${from}-id`);
  }
  t.same(froms, ['r0', 'r1', 'r2', 'r0', 'r1', 'r2', 'r0', 'r1', 'r2']);
  const text = await (await fetch(`${gw.adminUrl}/metrics`)).text();
  t.notMatch(text, /gateway_upstream_request_duration_seconds_bucket\{[^}]*target/, 'no target label');
  t.equal(await targets(gw, 'healthy'), 3);
  t.equal(await targets(gw, 'ejected'), 0, 'every state exported, 0 included');
  t.equal(await targets(gw, 'unhealthy'), 0);
});

t.test('least_request: requests in flight spread evenly, and a slow target gets no more', async (t) => {
  const { gw, replicas } = await setup(t);
  for (const r of replicas) await r.set({ mode: 'hang' });
  const held = Array.from({ length: 12 }, () => get(gw));
  await until('12 requests are held', () => replicas.every((r) => r.received.length === 4), 10_000);
  t.same(
    replicas.map((r) => r.received.length),
    [4, 4, 4],
    'the fewest in flight each time',
  );
  for (const r of replicas) await r.set({ mode: 'answer', release: true });
  t.same(
    (await Promise.all(held)).map((r) => r.status),
    Array(12).fill(200),
  );

  // One target holds a request: every other request goes to the two that have none in flight.
  const slow = replicas[0] as ReplicaProcess;
  const before = slow.received.length;
  await slow.set({ mode: 'hang' });
  let hanging: Promise<TestResponse> | undefined;
  let answered = 0;
  while (answered < 20 || hanging === undefined) {
    const res = get(gw);
    const at = slow.received.length;
    let settled = false;
    void res.then(() => (settled = true));
    await until('the request is answered or held', () => settled || slow.received.length > at);
    if (settled) answered++;
    else hanging = res;
  }
  t.equal(slow.received.length, before + 1, 'the slow target got one request, the others 20');
  await slow.set({ mode: 'answer', release: true });
  t.equal((await hanging)?.status, 200);
});

t.test('a failing health check takes a target out; passing ones bring it back', async (t) => {
  const { gw, replicas } = await setup(t, {
    balance: 'round_robin',
    health_check: { path: '/health', interval: '50ms', timeout: '500ms', healthy: 2, unhealthy: 2 },
  });
  const [, sick] = replicas as [ReplicaProcess, ReplicaProcess, ReplicaProcess];
  await until('three healthy targets', async () => (await targets(gw, 'healthy')) === 3);
  await sick.set({ health: 503 });
  await until('one target unhealthy', async () => (await targets(gw, 'unhealthy')) === 1);
  t.ok(gw.logs.some((l) => l.msg === 'upstream target unhealthy' && l.target === sick.url));
  const before = sick.received.length;
  for (let i = 0; i < 8; i++) t.equal((await get(gw)).status, 200);
  t.equal(sick.received.length, before, 'no request reaches a target failing its health check');
  await sick.set({ health: 200 });
  await until('three healthy targets again', async () => (await targets(gw, 'healthy')) === 3);
  for (let i = 0; i < 6; i++) t.equal((await get(gw)).status, 200);
  t.equal(sick.received.length, before + 2, 'back in its turn');
});

t.test('every target out: 502 upstream unreachable at once, and /readyz names the backend', async (t) => {
  const { gw, replicas } = await setup(t, {
    health_check: { path: '/health', interval: '50ms', timeout: '200ms', healthy: 1, unhealthy: 1 },
    connect_timeout: '10s',
  });
  await until('the gateway is ready', async () => (await readyz(gw)).status === 200);
  for (const r of replicas) await r.set({ health: 503, mode: 'hang' });
  await until('every target unhealthy', async () => (await targets(gw, 'unhealthy')) === 3);
  const started = performance.now();
  const res = await get(gw);
  const took = performance.now() - started;
  t.same(errorOf(res), { status: 502, context: 'upstream', message: 'upstream unreachable' });
  t.ok(took < 2000, `answered in ${Math.round(took)} ms, without trying a target`);
  t.same(
    replicas.map((r) => r.received.length),
    [0, 0, 0],
  );
  t.equal((await lineOf(gw, res)).error_code, 'GW_UPSTREAM_ALL_TARGETS_OUT');
  const ready = await readyz(gw);
  t.equal(ready.status, 503);
  t.equal(ready.body.checks.asset_group_tags, 'not ready');
  t.equal(await scrape(gw.adminUrl, 'gateway_upstream_errors_total', { kind: 'all_out' }), 1);

  for (const r of replicas) await r.set({ health: 200, mode: 'answer' });
  await until('the gateway is ready again', async () => (await readyz(gw)).status === 200);
  t.equal((await get(gw)).status, 200);
});

t.test('every target stopped: ejection and failing make every request a 502 at once', async (t) => {
  const { gw, replicas } = await setup(t, { outlier: { consecutive_failures: 1, base_ejection: '1s' } });
  await until('the gateway is ready', async () => (await readyz(gw)).status === 200);
  for (const r of replicas) await r.stop();
  // One request at a time still tries a failing target; the others are answered at once.
  await until('a request is answered at once, every target being out', async () => {
    const burst = await Promise.all(Array.from({ length: 4 }, () => get(gw)));
    t.same(
      burst.map((res) => res.status),
      [502, 502, 502, 502],
    );
    const lines = await Promise.all(burst.map((res) => lineOf(gw, res)));
    return lines.some((line) => line.error_code === 'GW_UPSTREAM_ALL_TARGETS_OUT');
  });
  t.equal((await readyz(gw)).status, 503);
  t.ok(((await targets(gw, 'ejected')) ?? 0) <= 1, 'never more than max_ejected');
  for (const r of replicas) await r.start();
  await until('a request is answered again', async () => (await get(gw)).status === 200);
  await until('the gateway is ready again', async () => (await readyz(gw)).status === 200);
});

t.test('the checksum cache and pass-through go to the targets too', async (t) => {
  const replicas = await startReplicas(t, 3);
  const [down] = replicas as [ReplicaProcess];
  const gw = await startGateway({
    backends: { collectors: { type: 'upstream', ...targetsConfig(replicas, { balance: 'round_robin' }) } },
    passthrough: targetsConfig(replicas, { balance: 'round_robin' }),
  });
  t.teardown(() => gw.close());
  await down.stop();
  const checksum = await call(gw, { method: 'GET', target: '/api/v2/collectors/sharphound/v2.4.1/checksum' });
  t.equal(checksum.status, 200, 'refused at connect by the first target, fetched from the next');
  t.equal(checksum.json().from, 'r1');
  t.equal((await lineOf(gw, checksum)).upstream_target, replicas[1]?.url);

  const passed = await call(gw, { method: 'GET', target: '/api/v2/self?x=1' });
  t.equal(passed.status, 200);
  t.equal(passed.json().from, 'r1', 'pass-through: the stopped first target refused, the next answered');
  t.equal((await lineOf(gw, passed)).upstream_target, replicas[1]?.url);
  t.equal(replicas[1]?.received.at(-1)?.url, '/api/v2/self?x=1', 'the raw target');
  await down.start();
  await (replicas[2] as ReplicaProcess).set({ mode: 503 });
  const retried = await call(gw, { method: 'GET', target: '/api/v2/self' });
  t.equal(retried.status, 200, "a pass-through GET's 503 is retried on another target");
  t.equal(retried.json().from, 'r0');
  t.equal(
    await scrape(gw.adminUrl, 'gateway_upstream_retries_total', { backend: 'passthrough', reason: 'status' }),
    1,
  );
});
