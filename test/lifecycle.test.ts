import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { stringify } from 'yaml';
import { baseConfig, call, copySampleData, merge, patchInFlight, request } from './helpers/gateway.js';
import { scrape } from './helpers/metrics.js';
import { startGatewayProcess } from './helpers/process.js';
import { until } from './helpers/wait.js';

const startProcess = (t: Test, configFile: string) => startGatewayProcess(t, configFile);

function writeConfig(dir: string, over: Record<string, unknown> = {}): string {
  const file = path.join(dir, 'gateway.yaml');
  writeFileSync(file, stringify(merge(baseConfig(), over)));
  return file;
}

const MEMBER = '/api/v2/asset-group-tags/1/members/101';

t.test('the process logs listening with both ports and serves', async (t) => {
  const proc = await startProcess(t, writeConfig(copySampleData()));
  t.ok(proc.port > 0 && proc.adminPort > 0);
  t.equal((await call(proc, { method: 'GET', target: MEMBER })).status, 200);
  const live = await fetch(`http://127.0.0.1:${proc.adminPort}/livez`);
  t.equal(live.status, 200);
  proc.child.kill('SIGINT');
  t.equal(await proc.exited, 0, 'SIGINT exits 0');
});

t.test('SIGTERM drains: readiness goes false, the in-flight request finishes, exit 0', async (t) => {
  const proc = await startProcess(t, writeConfig(copySampleData(), { server: { shutdown_grace: '10s' } }));
  t.equal((await fetch(`http://127.0.0.1:${proc.adminPort}/readyz`)).status, 200);

  // A request whose body is still arriving when SIGTERM comes.
  const patch = await patchInFlight(proc);
  // The signal comes once the gateway holds the request.
  const admin = `http://127.0.0.1:${proc.adminPort}`;
  await until(
    'the gateway holds the request',
    async () => (await scrape(admin, 'gateway_requests_in_flight')) === 1,
  );
  proc.child.kill('SIGTERM');
  await proc.waitFor((l) => l.msg === 'draining');
  // A second signal while draining must not kill the process.
  proc.child.kill('SIGTERM');
  t.equal((await fetch(`${admin}/readyz`)).status, 503, 'not ready while draining');
  patch.finish();
  t.equal(await patch.answered, 200, 'the in-flight request completed');
  t.equal(await proc.exited, 0);
  t.ok(proc.lines.some((l) => l.msg === 'draining'));
});

t.test('SIGHUP reloads; an invalid new configuration keeps the old one', async (t) => {
  const dir = copySampleData();
  const file = writeConfig(dir, { prefer: { default_wait: 30 } });
  const proc = await startProcess(t, file);
  const applied = async () =>
    (await call(proc, { method: 'GET', target: MEMBER })).headers['preference-applied'];
  t.equal(await applied(), 'wait=30');
  const admin = `http://127.0.0.1:${proc.adminPort}`;
  const reloads = (result: string) => scrape(admin, 'gateway_config_reloads_total', { result });
  const LAST = 'gateway_config_last_reload_success_timestamp_seconds';
  t.equal(await reloads('ok'), 0, 'reloads counted from 0');
  t.equal(await reloads('error'), 0);
  const loaded = (await scrape(admin, LAST)) ?? 0;
  t.ok(Math.abs(loaded - Date.now() / 1000) < 120, 'the start is the first successful load');

  writeConfig(dir, { prefer: { default_wait: 7 } });
  proc.child.kill('SIGHUP');
  await proc.waitFor((l) => l.msg === 'configuration reloaded');
  t.equal(await applied(), 'wait=7');
  t.equal(await reloads('ok'), 1);
  const reloaded = (await scrape(admin, LAST)) ?? 0;
  t.ok(reloaded >= loaded, 'the last success moves on');

  writeFileSync(file, readFileSync(file, 'utf8').replace('default_wait: 7', 'default_wait: seven'));
  proc.child.kill('SIGHUP');
  const failed = await proc.waitFor(
    (l) => typeof l.msg === 'string' && l.msg.startsWith('configuration reload failed'),
  );
  t.match(JSON.stringify(failed.problems), /prefer\.default_wait/);
  t.equal(await applied(), 'wait=7', 'old configuration still in force');
  t.equal(await reloads('error'), 1, 'a failed reload is counted');
  t.equal(await scrape(admin, LAST), reloaded, 'and is no success');
  t.equal((await request(proc, { method: 'GET', target: '/nope' })).status, 404);
  proc.child.kill('SIGTERM');
  t.equal(await proc.exited, 0);
});
