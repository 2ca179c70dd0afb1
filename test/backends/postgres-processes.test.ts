/**
 * Two gateway processes on one database: 200 concurrent PATCHes of different fields of the same
 * providers, split between them, and every update is there at the end (none lost to another).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { baseConfig, call, multipart, ROOT } from '../helpers/gateway.js';
import {
  type ListeningGateway as Proc,
  startGatewayProcess as startProcess,
  stopGatewayProcess as stop,
} from '../helpers/process.js';
import { createDatabase, importStores, requirePostgres, sql } from '../helpers/postgres.js';
import { provider } from '../helpers/backend.js';
import { until } from '../helpers/wait.js';

const PROVIDERS = 100;

const metadata = (entity: string) =>
  `<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${entity}"><IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"><SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${entity}/sso"/></IDPSSODescriptor></EntityDescriptor>`;

/** The second change of provider `i`: its metadata (even `i`) or its auto-provisioning (odd `i`). */
function secondChange(i: number) {
  if (i % 2 === 0)
    return [{ name: 'metadata', value: metadata(`https://idp-${i}.example.com`), filename: 'idp.xml' }];
  return [
    { name: 'config.auto_provision.enabled', value: 'true' },
    { name: 'config.auto_provision.default_role_id', value: String(1 + (i % 5)) },
    { name: 'config.auto_provision.role_provision', value: 'true' },
  ];
}

function patch(
  gw: { port: number },
  id: number,
  parts: Array<{ name: string; value: string; filename?: string }>,
) {
  const form = multipart(parts);
  return call(gw, {
    method: 'PATCH',
    target: `/api/v2/sso-providers/${id}`,
    body: form.body,
    headers: { 'Content-Type': form.contentType },
  });
}

if (await requirePostgres(t)) {
  t.test('two processes, 200 concurrent PATCHes of different fields: every update is kept', async (t) => {
    const url = await createDatabase(t);
    const ids = Array.from({ length: PROVIDERS }, (_, k) => k + 1);
    await importStores(t, url, {
      sso: { roles: [1, 2, 3, 4, 5], providers: ids.map((i) => provider(i, 1000 + i)) },
    });

    const dir = mkdtempSync(path.join(tmpdir(), 'gateway-processes-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    // 100 PATCHes per process share 5 connections: on a loaded machine a request may wait longer
    // than the default connect_timeout (5 s) for one, a 503 that says nothing of lost updates.
    const backend = { type: 'postgres', url, pool_size: 5, migrate: true, connect_timeout: '30s' };
    const config = {
      ...baseConfig(),
      logging: { level: 'info' },
      backends: {
        collectors: { type: 'local', path: path.join(ROOT, 'config', 'collectors') },
        sso_providers: backend,
        asset_group_tags: backend,
      },
    };
    const configFile = path.join(dir, 'gateway.yaml');
    writeFileSync(configFile, stringify(config));
    const gateways = await Promise.all([startProcess(t, configFile), startProcess(t, configFile)]);
    t.teardown(() => Promise.all(gateways.map(stop)));
    t.not(gateways[0]?.port, gateways[1]?.port);

    // Both changes of one provider go to different processes, all 200 at once.
    const sent = ids.flatMap((i) => [
      patch(gateways[i % 2] as Proc, i, [{ name: 'name', value: `renamed ${i}` }]),
      patch(gateways[(i + 1) % 2] as Proc, i, secondChange(i)),
    ]);
    const answers = await Promise.all(sent);
    t.same(
      answers.filter((r) => r.status !== 200).map((r) => r.body.toString()),
      [],
      'all 200 PATCHes answered 200',
    );

    const rows = await sql(
      url,
      `SELECT a.id, s.name, s.display_name, s.idp_issuer_uri, a.auto_provision_enabled AS enabled,
              a.auto_provision_default_role_id AS role, a.auto_provision_role_provision AS role_provision
         FROM saml_providers s JOIN sso_providers a ON a.id = s.sso_provider_id
        ORDER BY a.id`,
    );
    const lost = rows.filter((r) => {
      const i = r.id as number;
      if (r.name !== `renamed ${i}` || r.display_name !== `renamed ${i}`) return true;
      if (i % 2 === 0) return r.idp_issuer_uri !== `https://idp-${i}.example.com` || r.enabled !== false;
      return (
        r.enabled !== true ||
        r.role !== 1 + (i % 5) ||
        r.role_provision !== true ||
        r.idp_issuer_uri !== 'urn:idp'
      );
    });
    t.equal(rows.length, PROVIDERS);
    t.same(lost, [], 'no update was lost');

    // Log lines come through a pipe, and may arrive after the answers: wait for them.
    const audits = () => gateways.flatMap((g) => g.lines.filter((l) => l.audit === 'sso_provider_update'));
    const applied = answers.filter((r) => r.status === 200).length;
    await until('every applied update is audited', () => audits().length >= applied);
    t.equal(audits().length, 200, 'one audit line per change');
    t.ok(
      gateways.every((g) => g.lines.filter((l) => l.audit).length > 50),
      'both processes did a share of the work',
    );
  });
}
