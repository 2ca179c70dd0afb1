import { rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { stringify } from 'yaml';
import { workerCount } from '../src/cluster/primary.js';
import { baseConfig, call, copySampleData, merge, patchInFlight } from './helpers/gateway.js';
import { metric, scrape, series } from './helpers/metrics.js';
import { type GatewayProcess, type Line, spawnGateway } from './helpers/process.js';
import { until } from './helpers/wait.js';

type Proc = GatewayProcess;

/**
 * A stand-in for the upstream service: `workers` > 1 needs an sso_providers backend other than the
 * local file. It answers every request 200 with a JSON body.
 */
async function startUpstream(t: Test): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"data":{}}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.close();
    server.closeAllConnections();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A configuration with two workers and sso_providers on `upstream`, then `over` merged in. */
function clusterConfig(upstream: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  const config = merge(baseConfig(), { server: { workers: 2, shutdown_grace: '10s' } });
  (config.backends as Record<string, unknown>).sso_providers = {
    type: 'upstream',
    url: upstream,
    auth: { type: 'bearer', token: 'gateway-test' },
  };
  return merge(config, over);
}

/** A fresh data folder holding the configuration file; removed after the test. */
function dataDir(t: Test): { dir: string; file: string } {
  const dir = copySampleData();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return { dir, file: path.join(dir, 'gateway.yaml') };
}

interface Cluster {
  proc: Proc;
  port: number;
  adminPort: number;
  /** Rewrites the configuration file with `over` merged in. */
  write(over: Record<string, unknown>): void;
}

async function startCluster(t: Test, over: Record<string, unknown> = {}): Promise<Cluster> {
  const upstream = await startUpstream(t);
  const { file } = dataDir(t);
  const write = (o: Record<string, unknown>) => writeFileSync(file, stringify(clusterConfig(upstream, o)));
  write(over);
  const proc = spawnGateway(t, file);
  const listening = await proc.waitFor((l) => l.msg === 'listening');
  return { proc, port: listening.port as number, adminPort: listening.admin_port as number, write };
}

// Each case starts a primary and two workers (several seconds on a loaded 2-core machine).
t.setTimeout(600_000);

const MEMBER = '/api/v2/asset-group-tags/1/members/101';

const workerLines = (proc: Proc, msg: string) => proc.lines.filter((l) => l.msg === msg && 'worker' in l);

t.test('workers: "auto" is the number of cores the process may use', async (t) => {
  t.equal(workerCount('auto'), availableParallelism());
  t.equal(workerCount(3), 3);
});

t.test('two workers share the API port; /metrics adds up their registries', async (t) => {
  const c = await startCluster(t);
  const listening = c.proc.lines.filter((l) => l.msg === 'listening');
  t.equal(listening.length, 1, 'one listening line, from the primary');
  t.match(listening[0], { port: Number, admin_port: Number, workers: 2 });
  t.not(c.port, 0);
  const started = workerLines(c.proc, 'worker listening');
  t.equal(new Set(started.map((l) => l.pid)).size, 2, 'two worker processes');
  t.equal((await fetch(`http://127.0.0.1:${c.adminPort}/readyz`)).status, 200);
  t.equal((await fetch(`http://127.0.0.1:${c.adminPort}/livez`)).status, 200);

  const K = 12;
  // One connection per request: node:cluster hands connections to the workers in turn.
  for (let i = 0; i < K; i++) t.equal((await call(c, { method: 'GET', target: MEMBER })).status, 200);
  // A request's log line may trail its answer.
  const isServed = (l: Line) => l.msg === 'request' && l.path === MEMBER;
  await c.proc.waitForCount(isServed, K);
  const served = c.proc.lines.filter(isServed);
  t.equal(new Set(served.map((l) => l.worker)).size, 2, 'both workers served requests');

  const res = await fetch(`http://127.0.0.1:${c.adminPort}/metrics`);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/plain/);
  const text = await res.text();
  const labels = { operation: 'GetAssetGroupTagMember', method: 'GET', status_class: '2xx', code: '200' };
  t.equal(metric(text, 'gateway_requests_total', labels), K, 'the counts of both workers, summed');
  t.equal(metric(text, 'gateway_request_duration_seconds_count', { operation: 'GetAssetGroupTagMember' }), K);
  t.ok((metric(text, 'process_resident_memory_bytes') ?? 0) > 0, 'process metrics of the workers');
  t.equal(series(text, 'nodejs_version_info').length, 1, 'one version line, not one per worker');
  // The primary's own start time, not a meaningless sum of the workers' (GatewayAbsent relies on it).
  const start = metric(text, 'process_start_time_seconds') ?? 0;
  t.equal(series(text, 'process_start_time_seconds').length, 1, 'one start time');
  t.ok(Math.abs(start - Date.now() / 1000) < 600, 'a start time, not a sum');
  t.equal(metric(text, 'gateway_worker_restarts_total'), 0, 'no restart yet, exported at 0');
  // Taken once, never summed: build info, readiness, the reload timestamp.
  t.equal(series(text, 'gateway_build_info').length, 1);
  t.equal(metric(text, 'gateway_build_info'), 1, 'build info is 1, not 2');
  t.equal(metric(text, 'gateway_ready', { check: 'keys' }), 1, 'readiness is the least ready, not a sum');
  const reload = metric(text, 'gateway_config_last_reload_success_timestamp_seconds') ?? 0;
  t.ok(Math.abs(reload - Date.now() / 1000) < 600, "the reload timestamp is one worker's, not a sum");
  t.equal(metric(text, 'gateway_client_aborts_total', { operation: 'GetAssetGroupTagMember' }), 0);

  c.proc.child.kill('SIGTERM');
  t.equal(await c.proc.exited, 0);
});

t.test('a worker that dies is replaced and the port keeps serving', async (t) => {
  const c = await startCluster(t);
  const first = workerLines(c.proc, 'worker listening');
  const victim = first[0]!;
  process.kill(victim.pid as number, 'SIGKILL');
  const exited = await c.proc.waitFor((l) => l.msg === 'worker exited; starting another');
  t.match(exited, { level: 'error', pid: victim.pid, signal: 'SIGKILL', restart_in_ms: Number });
  const replacement = await c.proc.waitFor(
    (l) => l.msg === 'worker listening' && !first.some((f) => f.pid === l.pid),
  );
  t.ok(replacement.pid);
  for (let i = 0; i < 6; i++) t.equal((await call(c, { method: 'GET', target: MEMBER })).status, 200);
  // node:cluster hands the connections out in turn: the new worker gets its share.
  await c.proc.waitFor((l) => l.msg === 'request' && l.worker === replacement.worker);
  t.equal((await fetch(`http://127.0.0.1:${c.adminPort}/readyz`)).status, 200);
  const restarts = await scrape(`http://127.0.0.1:${c.adminPort}`, 'gateway_worker_restarts_total');
  t.equal(restarts, 1, 'the replacement is counted');
  c.proc.child.kill('SIGTERM');
  t.equal(await c.proc.exited, 0);
});

t.test('SIGTERM drains every worker: not ready, in-flight request answered, exit 0', async (t) => {
  const c = await startCluster(t);
  t.equal((await fetch(`http://127.0.0.1:${c.adminPort}/readyz`)).status, 200);

  // A request whose body is still arriving when SIGTERM comes.
  const patch = await patchInFlight(c);
  // The signal comes once a worker holds the request.
  const admin = `http://127.0.0.1:${c.adminPort}`;
  await until(
    'a worker holds the request',
    async () => (await scrape(admin, 'gateway_requests_in_flight')) === 1,
  );

  c.proc.child.kill('SIGTERM');
  await c.proc.waitFor((l) => l.msg === 'draining' && !('worker' in l));
  // A second signal while draining changes nothing.
  c.proc.child.kill('SIGTERM');
  t.equal((await fetch(`http://127.0.0.1:${c.adminPort}/readyz`)).status, 503, 'not ready while draining');
  patch.finish();
  t.equal(await patch.answered, 200, 'the in-flight request finished (the upstream stand-in answers 200)');
  t.equal(await c.proc.exited, 0);
  t.equal(workerLines(c.proc, 'stopped').length, 2, 'each worker stopped');
  t.match(c.proc.lines.at(-1), { msg: 'stopped' });
  t.notOk('worker' in c.proc.lines.at(-1)!, 'the primary stops last');
});

t.test('SIGHUP reloads every worker; an invalid configuration keeps the old one', async (t) => {
  const c = await startCluster(t, { prefer: { default_wait: 30 } });
  const applied = async () => {
    const answers = [];
    for (let i = 0; i < 4; i++) {
      answers.push((await call(c, { method: 'GET', target: MEMBER })).headers['preference-applied']);
    }
    return [...new Set(answers)];
  };
  t.same(await applied(), ['wait=30']);

  c.write({ prefer: { default_wait: 7 } });
  c.proc.child.kill('SIGHUP');
  await c.proc.waitForCount((l) => l.msg === 'configuration reloaded' && 'worker' in l, 2);
  t.same(await applied(), ['wait=7'], 'every worker took the new configuration');

  c.write({ prefer: { default_wait: 'seven' } });
  c.proc.child.kill('SIGHUP');
  const failed = (l: Line) => typeof l.msg === 'string' && l.msg.startsWith('configuration reload failed');
  await c.proc.waitForCount(failed, 2);
  t.match(c.proc.lines.find(failed), { problems: [/prefer\.default_wait/] }, 'each worker says why');
  t.same(await applied(), ['wait=7'], 'old configuration still in force');
  c.proc.child.kill('SIGTERM');
  t.equal(await c.proc.exited, 0);
});

t.test('a worker that hangs: /metrics 500, /readyz 503, and a stop kills it after the grace', async (t) => {
  const c = await startCluster(t, { server: { shutdown_grace: '1s' } });
  const [hung] = workerLines(c.proc, 'worker listening');
  process.kill(hung!.pid as number, 'SIGSTOP');
  t.teardown(() => {
    try {
      process.kill(hung!.pid as number, 'SIGKILL');
    } catch {
      // Killed by the primary, as it should be.
    }
  });
  const admin = `http://127.0.0.1:${c.adminPort}`;
  const [metrics, ready] = await Promise.all([fetch(`${admin}/metrics`), fetch(`${admin}/readyz`)]);
  t.equal(metrics.status, 500, 'no partial scrape: counters would seem to reset');
  t.equal(ready.status, 503);
  c.proc.child.kill('SIGTERM');
  await c.proc.waitFor((l) => l.msg === 'workers still running; killing them');
  t.equal(await c.proc.exited, 1, 'a worker that did not stop is a failed shutdown');
  t.match(c.proc.lines.at(-1), { msg: 'stopped' });
});

t.test('a worker that cannot start stops the whole gateway with exit 1', async (t) => {
  const { dir, file } = dataDir(t);
  writeFileSync(path.join(dir, 'asset-group-tags.json'), '{ not json');
  writeFileSync(file, stringify(clusterConfig(await startUpstream(t))));
  const proc = spawnGateway(t, file);
  t.equal(await proc.exited, 1);
  t.match(proc.stderr(), /asset-group-tags\.json/);
  t.ok(proc.lines.some((l) => l.msg === 'a worker failed to start'));
  t.notOk(proc.lines.some((l) => l.msg === 'listening'));
});

t.test('an admin port already taken stops the primary before any worker starts', async (t) => {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.teardown(() => taken.close());
  const { file } = dataDir(t);
  const admin = { port: (taken.address() as AddressInfo).port };
  writeFileSync(file, stringify(clusterConfig(await startUpstream(t), { admin })));
  const proc = spawnGateway(t, file);
  t.equal(await proc.exited, 1);
  t.match(proc.stderr(), /EADDRINUSE/);
  t.equal(proc.lines.length, 0);
});
