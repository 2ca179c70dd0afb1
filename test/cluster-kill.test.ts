/**
 * A worker killed under load (`server.workers: 2`): 50 clients send requests in a loop, half on
 * keep-alive connections, half on a new connection each, while workers are killed with SIGKILL right
 * after the primary hands them a connection (the test-only `GATEWAY_TEST_KILL_ON_HANDOFF`), the moment
 * a worker dying is at its worst. Every request is answered, or sees its connection closed soon after
 * the kill (a client can retry); none hangs; the primary replaces each worker killed.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import t, { type Test } from 'tap';
import { stringify } from 'yaml';
import { baseConfig, copySampleData, merge, signed } from './helpers/gateway.js';
import { scrape } from './helpers/metrics.js';
import { type Line, spawnGateway } from './helpers/process.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const CLIENTS = 50;
const KILLS = 2;
/** How soon after the primary sees its worker exit a request not answered must see its connection closed. */
const CLOSED_WITHIN = 1_000;
/**
 * A request idle this long is hung: far beyond any answer's time on a loaded machine, far below the
 * timeout of a client that would wait (before the fix, such a request waited for as long as its client).
 */
const HUNG = 10_000;

/** A stand-in for the upstream service (`workers` > 1 needs an sso_providers backend other than a file). */
async function startUpstream(t: Test): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"data":{}}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.close();
    server.closeAllConnections();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

interface Outcome {
  status?: number;
  /** When the connection was seen closed without an answer. */
  closedAt?: number;
  hung?: boolean;
}

/** One signed GET on `agent` (false: a connection of its own), settled by its answer, its close, or a hang. */
function send(port: number, agent: Agent | false): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = httpRequest({
      host: '127.0.0.1',
      port,
      path: MEMBER,
      agent,
      headers: signed({ method: 'GET', target: MEMBER }),
    });
    const closed = () => resolve({ closedAt: Date.now() });
    req.setTimeout(HUNG, () => {
      resolve({ hung: true });
      req.destroy();
    });
    req.on('response', (res) => {
      res.on('error', closed);
      res.on('end', () => resolve({ status: res.statusCode! }));
      res.resume();
    });
    req.on('error', closed);
    req.end();
  });
}

t.setTimeout(300_000);

t.test('workers killed right after being handed a connection: no request hangs', async (t) => {
  const dir = copySampleData();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'gateway.yaml');
  const config = merge(baseConfig(), { server: { workers: 2 } });
  (config.backends as Record<string, unknown>).sso_providers = {
    type: 'upstream',
    url: await startUpstream(t),
    auth: { type: 'bearer', token: 'gateway-test' },
  };
  writeFileSync(file, stringify(config));
  const proc = spawnGateway(t, file, { env: { GATEWAY_TEST_KILL_ON_HANDOFF: String(KILLS) } });
  const listening = await proc.waitFor((l) => l.msg === 'listening');
  const port = listening.port as number;
  const admin = `http://127.0.0.1:${listening.admin_port as number}`;

  const outcomes: Outcome[] = [];
  let running = true;
  const keepAlive = new Agent({ keepAlive: true, maxSockets: CLIENTS / 2 });
  t.teardown(() => keepAlive.destroy());
  const client = async (agent: Agent | false) => {
    while (running) outcomes.push(await send(port, agent));
  };
  const clients = Array.from({ length: CLIENTS }, (_, i) => client(i % 2 === 0 ? keepAlive : false));

  const isKill = (l: Line) => l.msg === 'test hook: killing the worker just handed a connection';
  const isStarted = (l: Line) => l.msg === 'worker listening';
  // Each kill is followed by a replacement: the last one must serve before the load stops.
  await proc.waitForCount(isKill, KILLS);
  await proc.waitForCount(isStarted, 2 + KILLS);
  const last = proc.lines.filter(isStarted).at(-1)!;
  await proc.waitFor((l) => l.msg === 'request' && l.worker === last.worker);
  running = false;
  await Promise.all(clients);

  const kills = proc.lines.filter(isKill);
  t.equal(kills.length, KILLS, 'the hook killed as many workers as asked, no more');
  const exits = proc.lines.filter((l) => l.msg === 'worker exited; starting another');
  t.same(
    exits.map((l) => [l.pid, l.signal]),
    kills.map((l) => [l.pid, 'SIGKILL']),
    'the workers killed are the ones that exited',
  );
  t.equal(outcomes.filter((o) => o.hung).length, 0, 'no request hung');
  const answered = outcomes.filter((o) => o.status !== undefined);
  const dropped = outcomes.filter((o) => o.closedAt !== undefined);
  t.ok(answered.length > CLIENTS, `requests answered (${answered.length})`);
  t.same(new Set(answered.map((o) => o.status)), new Set([200]), 'every answer a 200');
  t.ok(dropped.length >= KILLS, `a connection closed at each kill at least (${dropped.length})`);
  // From the kill to the primary's noticing the exit is the scheduler's time; from then, the gateway's.
  const windows = kills.map((l, i) => [Date.parse(l.time as string), Date.parse(exits[i]!.time as string)]);
  const late = dropped.filter(
    ({ closedAt }) =>
      !windows.some(([killed, seen]) => closedAt! >= killed! && closedAt! <= seen! + CLOSED_WITHIN),
  );
  t.same(
    late,
    [],
    `each connection closed without an answer was closed by ${CLOSED_WITHIN} ms after its worker's exit`,
  );
  t.equal(await scrape(admin, 'gateway_worker_restarts_total'), KILLS, 'each replacement counted');
  t.equal((await fetch(`${admin}/readyz`)).status, 200, 'ready again');
  proc.child.kill('SIGTERM');
  t.equal(await proc.exited, 0);
});
