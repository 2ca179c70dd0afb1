/**
 * A reload and the requests in flight on the PostgreSQL backends (contract §2, "Reload"): a request
 * that started before the reload ends on the pool it started with, which closes only after it or
 * once `server.shutdown_grace` has passed, and a stop lets it end too (refusing further reloads); a
 * new configuration that cannot reach its database does not take over from one that can. Under load,
 * with terminated sessions: lifecycle-reload.test.ts.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { stringify } from 'yaml';
import { loadConfigFile } from '../../src/config/load.js';
import {
  baseConfig,
  call,
  errorOf,
  merge,
  ROOT,
  startGateway,
  type TestGateway,
} from '../helpers/gateway.js';
import { scrape } from '../helpers/metrics.js';
import {
  createDatabase,
  createSchema,
  importStores,
  requirePostgres,
  startProxy,
  withPort,
} from '../helpers/postgres.js';
import { patchInParts } from '../helpers/upload.js';
import { until } from '../helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const sample = (name: string) => JSON.parse(readFileSync(path.join(ROOT, 'config', name), 'utf8'));

/** Overrides that put both stores on the database at `url`. */
const onPostgres = (url: string) => {
  const backend = { type: 'postgres', url, path: undefined, pool_size: 4 };
  return { backends: { sso_providers: backend, asset_group_tags: backend } };
};

/** A gateway (in process) on a fresh schema of `database` holding the sample stores. */
async function gatewayOn(t: Test, database: string, over: Record<string, unknown> = {}) {
  const url = await createSchema(t, database);
  await importStores(t, url, { sso: sample('sso-providers.json'), tags: sample('asset-group-tags.json') });
  const gw = await startGateway(merge(onPostgres(url), over));
  t.teardown(() => gw.close());
  return { gw, url };
}

/** Starts a PATCH of provider 1 and resolves once the gateway holds it, its body half sent. */
async function heldPatch(gw: TestGateway, name: string) {
  const held = patchInParts(gw, '/api/v2/sso-providers/1', name);
  await until(
    'the PATCH in flight',
    async () => (await scrape(gw.adminUrl, 'gateway_requests_in_flight')) === 1,
  );
  return held;
}

if (await requirePostgres(t)) {
  const database = await createDatabase(t);

  t.test('a PATCH that started before a reload ends on the pool it started with', async (t) => {
    const { gw } = await gatewayOn(t, database);
    const held = await heldPatch(gw, 'Renamed across a reload');
    await gw.app.reload(loadConfigFile(gw.configFile));
    const res = await held.rest();
    t.equal(res.status, 200, 'the PATCH is answered 200');
    t.equal(res.json().data.name, 'Renamed across a reload', 'applied');
    t.equal((await call(gw, { method: 'GET', target: MEMBER })).status, 200, 'the new pool serves');
    t.notOk(
      gw.logs.some((l) => l.msg === 'request' && (l.status as number) >= 500),
      'no request failed',
    );
  });

  t.test('a request held past server.shutdown_grace loses the replaced pool', async (t) => {
    const { gw } = await gatewayOn(t, database, { server: { shutdown_grace: '200ms' } });
    const held = await heldPatch(gw, 'Never applied');
    await gw.app.reload(loadConfigFile(gw.configFile));
    const closing = (l: Record<string, unknown>) => typeof l.msg === 'string' && l.msg.startsWith('replaced');
    await until('the replaced configuration closed', () => gw.logs.some(closing));
    t.match(gw.logs.find(closing), {
      level: 'warn',
      requests: 1,
      msg: 'replaced configuration closed with requests still on it: server.shutdown_grace passed',
    });
    const res = await held.rest();
    t.same(errorOf(res), { status: 503, context: 'store', message: 'store unavailable' });
    t.equal((await call(gw, { method: 'GET', target: MEMBER })).status, 200, 'the new pool serves');
  });

  t.test(
    'a stop while a request holds a replaced configuration lets it end, and refuses reloads',
    async (t) => {
      const { gw } = await gatewayOn(t, database);
      const held = await heldPatch(gw, 'Renamed while stopping');
      await gw.app.reload(loadConfigFile(gw.configFile));
      const stopped = gw.app.close();
      await t.rejects(gw.app.reload(loadConfigFile(gw.configFile)), { message: 'the gateway is stopping' });
      const res = await held.rest();
      t.equal(res.status, 200, 'the request on the replaced configuration is answered');
      t.equal(res.json().data.name, 'Renamed while stopping');
      await stopped;
      t.ok(
        gw.logs.some((l) => l.msg === 'stopped'),
        'stopped, both configurations closed',
      );
    },
  );

  t.test(
    'a configuration whose database is unreachable does not take over from one that serves',
    async (t) => {
      const { gw } = await gatewayOn(t, database);
      const proxy = await startProxy(t, database);
      await proxy.stop();
      const file = path.join(gw.dataDir, 'unreachable.yaml');
      writeFileSync(file, stringify(merge(baseConfig(), onPostgres(withPort(database, proxy.port)))));
      await t.rejects(gw.app.reload(loadConfigFile(file)), {
        message: 'postgres: not ready within 5 s',
      });
      t.equal(
        (await call(gw, { method: 'GET', target: MEMBER })).status,
        200,
        'the old configuration serves',
      );
      t.equal((await fetch(`${gw.adminUrl}/readyz`)).status, 200, 'and stays ready');
      t.equal(await scrape(gw.adminUrl, 'gateway_config_reloads_total', { result: 'error' }), 1);
    },
  );
}
