/**
 * The gateway on the postgres backends, through the front door: the same answers as the local
 * store, the deadline cancelling a waiting PATCH (504, nothing applied), and readiness and 503s
 * while the database is unreachable, with recovery once it returns.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { call, errorOf, multipart, ROOT, startGateway, type TestGateway } from '../helpers/gateway.js';
import {
  createDatabase,
  createSchema,
  holdLock,
  importStores,
  requirePostgres,
  sql,
  startProxy,
  withPort,
} from '../helpers/postgres.js';
import { metric, metricsText } from '../helpers/metrics.js';
import { until } from '../helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const sample = (name: string) => JSON.parse(readFileSync(path.join(ROOT, 'config', name), 'utf8'));

/** Overrides that put both stores on the database at `url`. */
const onPostgres = (url: string, over: Record<string, unknown> = {}) => {
  const backend = { type: 'postgres', url, path: undefined, pool_size: 4, ...over };
  return { backends: { sso_providers: backend, asset_group_tags: backend } };
};

/** A schema of `database` holding the sample data and a gateway on it (closed when `t` ends). */
async function sampleGateway(t: Test, database: string) {
  const url = await createSchema(t, database);
  await importStores(t, url, { sso: sample('sso-providers.json'), tags: sample('asset-group-tags.json') });
  const gw = await startGateway(onPostgres(url));
  t.teardown(() => gw.close());
  return { url, gw };
}

const metadata = (entity: string) =>
  `<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${entity}"><IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"><SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${entity}/sso"/></IDPSSODescriptor></EntityDescriptor>`;

function patch(
  gw: { port: number },
  id: number,
  parts: Array<{ name: string; value: string; filename?: string }>,
  headers: Record<string, string> = {},
) {
  const form = multipart(parts);
  return call(gw, {
    method: 'PATCH',
    target: `/api/v2/sso-providers/${id}`,
    body: form.body,
    headers: { 'Content-Type': form.contentType, ...headers },
  });
}

const readyz = async (gw: TestGateway) => (await fetch(`${gw.adminUrl}/readyz`)).status;

if (await requirePostgres(t)) {
  const database = await createDatabase(t);

  t.test('the postgres backends answer exactly as the local ones on the sample data', async (t) => {
    const url = await createSchema(t, database);
    await importStores(t, url, { sso: sample('sso-providers.json'), tags: sample('asset-group-tags.json') });
    const local = await startGateway();
    t.teardown(() => local.close());
    const remote = await startGateway(onPostgres(url));
    t.teardown(() => remote.close());
    t.equal(await readyz(remote), 200);

    for (const target of [
      MEMBER,
      '/api/v2/asset-group-tags/2/members/102',
      '/api/v2/asset-group-tags/1/members/106',
    ]) {
      const [a, b] = await Promise.all([
        call(local, { method: 'GET', target }),
        call(remote, { method: 'GET', target }),
      ]);
      t.equal(b.status, a.status, `${target}: status`);
      if (a.status === 200) t.same(b.json(), a.json(), `${target}: body`);
      else t.same(errorOf(b), errorOf(a), `${target}: error`);
    }

    const parts = [
      { name: 'name', value: 'Okta (EU)' },
      { name: 'metadata', value: metadata('https://idp.eu.example.com'), filename: 'idp.xml' },
      { name: 'config.auto_provision.enabled', value: 'false' },
      { name: 'config.auto_provision.default_role_id', value: '2' },
      { name: 'config.auto_provision.role_provision', value: 'true' },
    ];
    const [a, b] = await Promise.all([patch(local, 1, parts), patch(remote, 1, parts)]);
    t.equal(b.status, 200);
    const { updated_at: ua, ...fromLocal } = a.json().data;
    const { updated_at: ub, ...fromPostgres } = b.json().data;
    t.same(fromPostgres, fromLocal, 'the same provider after the same PATCH');
    t.ok(Math.abs(Date.parse(ua) - Date.parse(ub)) < 60_000, 'both moved updated_at to now');
    t.match(
      remote.logs.find((l) => l.audit === 'sso_provider_update'),
      {
        sso_provider_id: 1,
        fields: [
          'name',
          'display_name',
          'idp_issuer_uri',
          'idp_sso_uri',
          'metadata_xml',
          'config.auto_provision.enabled',
          'config.auto_provision.default_role_id',
          'config.auto_provision.role_provision',
        ],
      },
    );
    const roleRefused = await patch(remote, 1, [
      { name: 'config.auto_provision.enabled', value: 'true' },
      { name: 'config.auto_provision.default_role_id', value: '6' },
      { name: 'config.auto_provision.role_provision', value: 'true' },
    ]);
    t.same(errorOf(roleRefused), {
      status: 400,
      context: 'form:config.auto_provision.default_role_id',
      message: '"config.auto_provision.default_role_id" parameter is invalid',
    });
    t.equal((await patch(remote, 8, [{ name: 'name', value: 'x' }])).status, 404);

    const metrics = await metricsText(remote.adminUrl);
    const update = { backend: 'postgres', operation: 'sso_providers.update' };
    t.ok(
      (metric(metrics, 'gateway_store_operation_duration_seconds_count', update) ?? 0) >= 1,
      'updates timed',
    );
    t.ok(
      (metric(metrics, 'gateway_store_pool_connections', { state: 'idle' }) ?? 0) >= 1,
      'idle connections',
    );
  });

  t.test(
    'a PATCH still waiting at its deadline is 504, cancelled on the server, and applies nothing',
    async (t) => {
      const { url, gw } = await sampleGateway(t, database);

      const holder = await holdLock(
        t,
        url,
        'SELECT 1 FROM saml_providers WHERE sso_provider_id = 7 FOR UPDATE',
      );

      // The lock is held until after the answer: only the deadline can end this request.
      const res = await patch(gw, 7, [{ name: 'name', value: 'Never applied' }], { Prefer: 'wait=1' });
      t.same(errorOf(res), { status: 504, context: 'request', message: 'request timed out' });
      const waiting = async () =>
        (
          await sql(
            url,
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'bh-gateway' AND wait_event_type = 'Lock'",
          )
        )[0]?.n === 0;
      await until('the server stopped the waiting statement', waiting);
      await holder.query('ROLLBACK');
      const [row] = await sql(url, 'SELECT name, updated_at FROM saml_providers WHERE sso_provider_id = 7');
      t.equal(row?.name, sample('sso-providers.json').providers[1].name, 'the row is unchanged');
      t.equal(await readyz(gw), 200, 'still ready');
      t.equal((await patch(gw, 7, [{ name: 'name', value: 'Applied' }])).json().data.name, 'Applied');
    },
  );

  t.test(
    'an unexpected database error is a 500 with the details in the log, and not a readiness fault',
    async (t) => {
      const { url, gw } = await sampleGateway(t, database);
      await sql(url, 'DROP TABLE asset_group_members CASCADE');
      const res = await call(gw, { method: 'GET', target: MEMBER });
      t.same(errorOf(res), { status: 500, context: 'server', message: 'an internal error occurred' });
      t.match(
        gw.logs.find((l) => l.msg === 'request' && l.status === 500),
        {
          err: { message: /relation "asset_group_members" does not exist/ },
        },
      );
      t.equal(await readyz(gw), 200);
    },
  );

  t.test('an unreachable database: /readyz 503 and requests get a 503 envelope', async (t) => {
    const gw = await startGateway(onPostgres(withPort(database, 1), { connect_timeout: '1s' }));
    t.teardown(() => gw.close());
    t.equal(await readyz(gw), 503);
    const store = { status: 503, context: 'store', message: 'store unavailable' };
    t.same(errorOf(await call(gw, { method: 'GET', target: MEMBER })), store);
    t.same(errorOf(await patch(gw, 1, [{ name: 'name', value: 'x' }])), store);
    t.equal(
      (await call(gw, { method: 'GET', target: '/api/v2/collectors/sharphound/latest/checksum' })).status,
      200,
      'the file-backed operation still serves',
    );
  });

  t.test('the gateway reconnects by itself when the database returns', async (t) => {
    const url = await createSchema(t, database);
    await importStores(t, url, { sso: sample('sso-providers.json'), tags: sample('asset-group-tags.json') });
    const proxy = await startProxy(t, url);
    const gw = await startGateway(
      onPostgres(withPort(url, proxy.port), { health_check_interval: '100ms', connect_timeout: '1s' }),
    );
    t.teardown(() => gw.close());
    t.equal(await readyz(gw), 200);
    t.equal((await call(gw, { method: 'GET', target: MEMBER })).status, 200);

    await proxy.stop();
    await until('readyz says 503', async () => (await readyz(gw)) === 503);
    t.same(errorOf(await call(gw, { method: 'GET', target: MEMBER })), {
      status: 503,
      context: 'store',
      message: 'store unavailable',
    });
    t.ok(
      gw.logs.some((l) => l.msg === 'database unavailable'),
      'logged',
    );

    await proxy.start();
    await until('readyz says 200', async () => (await readyz(gw)) === 200);
    t.equal((await call(gw, { method: 'GET', target: MEMBER })).status, 200, 'serves again');
    t.ok(
      gw.logs.some((l) => l.msg === 'database reachable'),
      'logged',
    );
  });
}
