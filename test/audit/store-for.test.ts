/**
 * Which trail a configuration names (contract §12): the `audit` key's schema and defaults, the trail
 * that follows the providers' backend without it, what check-config refuses or warns about, opening
 * each store, and the metrics defined once per registry.
 */
import path from 'node:path';
import t from 'tap';
import { GATEWAY_SCHEMA } from '../../src/backends/postgres/schema.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { auditStoreFor, openAuditStore } from '../../src/audit/store-for.js';
import { auditSchema } from '../../src/config/audit.js';
import { type ConfigError, parseConfig } from '../../src/config/load.js';
import { configWarnings } from '../../src/config/warnings.js';
import { createDatabase, requirePostgres } from '../helpers/postgres.js';
import { newEntry, silent } from './helpers.js';

const PG = 'postgres://gw@db.example.com/gateway';
const local = { type: 'local', path: '/srv/gateway/sso-providers.json' };

t.test('the audit key: defaults, both store types, every key checked', async (t) => {
  t.same(auditSchema.parse({}), { refused: true, serve_api: false });
  t.same(auditSchema.parse({ store: { type: 'file', path: 'a.jsonl' }, refused: false }), {
    store: { type: 'file', path: 'a.jsonl' },
    refused: false,
    serve_api: false,
  });
  t.match(auditSchema.parse({ store: { type: 'postgres', url: PG } }).store, {
    type: 'postgres',
    url: PG,
    pool_size: 4,
    migrate: true,
  });
  t.notOk(auditSchema.safeParse({ store: { type: 'sqlite', path: 'x' } }).success);
  t.notOk(auditSchema.safeParse({ store: { type: 'postgres', url: 'mysql://x' } }).success);
  t.notOk(auditSchema.safeParse({ store: { type: 'file' } }).success);
  t.notOk(auditSchema.safeParse({ stores: {} }).success, 'unknown keys are refused');
});

t.test('without audit.store the trail follows the providers` backend', async (t) => {
  t.same(auditStoreFor({ backends: { sso_providers: local } }), {
    type: 'file',
    path: '/srv/gateway/sso-providers.json.audit.jsonl',
  });
  t.match(
    auditStoreFor({
      audit: auditSchema.parse({}),
      backends: { sso_providers: { type: 'postgres', url: PG } },
    }),
    {
      type: 'postgres',
      url: PG,
      sharesProviders: true,
    },
  );
  t.equal(auditStoreFor({ backends: { sso_providers: { type: 'upstream' } } }), undefined);
});

t.test('an audit.store is used whatever the backend; the providers` own database is shared', async (t) => {
  const file = auditSchema.parse({ store: { type: 'file', path: '/var/log/audit.jsonl' } });
  t.same(auditStoreFor({ audit: file, backends: { sso_providers: { type: 'upstream' } } }), {
    type: 'file',
    path: '/var/log/audit.jsonl',
  });
  const pg = auditSchema.parse({ store: { type: 'postgres', url: PG } });
  t.match(auditStoreFor({ audit: pg, backends: { sso_providers: { type: 'postgres', url: PG } } }), {
    sharesProviders: true,
  });
  t.match(auditStoreFor({ audit: pg, backends: { sso_providers: local } }), {
    type: 'postgres',
    sharesProviders: false,
  });
  const relative = parseConfig(
    gatewayYaml('audit: { store: { type: file, path: logs/audit.jsonl } }'),
    '/etc/gw',
  );
  t.match(relative.audit?.store, { path: path.resolve('/etc/gw/logs/audit.jsonl') }, 'beside the file');
});

/** A gateway configuration with `providers` as its SSO providers backend, and `extra` lines. */
function gatewayYaml(extra: string, providers = '{ type: local, path: p.json }'): string {
  return [
    'backends:',
    '  collectors: { type: local, path: c }',
    `  sso_providers: ${providers}`,
    '  asset_group_tags: { type: local, path: t.json }',
    extra,
  ].join('\n');
}

/** The problems the configuration's check names, or [] when it is accepted. */
function problems(text: string): string[] {
  try {
    parseConfig(text, '/etc/gw');
    return [];
  } catch (err) {
    return (err as ConfigError).problems;
  }
}

t.test(
  'check-config: a file trail with several workers is refused; an upstream without a trail warns',
  async (t) => {
    const upstream = '{ type: upstream, url: "http://bh:8080", auth: { type: client } }';
    t.same(problems(gatewayYaml('audit: {}')), []);
    t.match(
      problems(
        gatewayYaml('server: { workers: 4 }\naudit: { store: { type: file, path: /a.jsonl } }', upstream),
      ),
      [/^audit\.store\.type: must be "postgres" while server\.workers is more than 1/],
    );
    t.match(problems(gatewayYaml('server: { workers: auto }')), [/^server\.workers:/]);
    t.same(
      problems(gatewayYaml('server: { workers: 8 }', `{ type: postgres, url: "${PG}" }`)),
      [],
      'PostgreSQL serves several replicas',
    );
    t.match(problems(gatewayYaml('audit: { serve_api: true }', upstream)), [
      /^audit\.serve_api: needs a trail/,
    ]);
    t.same(problems(gatewayYaml('audit: { serve_api: true }')), [], 'the providers` file keeps one');
    t.match(problems(gatewayYaml('audit: { store: { type: file } }')), [/^audit\.store\.path/]);
    t.match(problems(gatewayYaml('audit: { refused: maybe }')), [/^audit\.refused/]);
    t.match(configWarnings(parseConfig(gatewayYaml('', upstream), '/etc/gw')), [
      /under the gateway's credentials/,
    ]);
    t.same(configWarnings(parseConfig(gatewayYaml(''), '/etc/gw')), []);
    t.same(
      configWarnings(
        parseConfig(gatewayYaml('audit: { store: { type: file, path: a.jsonl } }', upstream), '/etc/gw'),
      ),
      [],
    );
  },
);

t.test('opening each target: a file, and a database of its own (closed with the store)', async (t) => {
  const file = path.join(t.testdir(), 'trail.jsonl');
  const store = await openAuditStore(
    { type: 'file', path: file },
    { logger: silent, schema: GATEWAY_SCHEMA },
  );
  t.equal(store.kind, 'file');
  t.equal(store.where, file);
  t.equal((await store.append(newEntry())).id, 1);
  await store.close();
  if (!(await requirePostgres(t))) return;
  const url = await createDatabase(t);
  const target = auditStoreFor({
    audit: auditSchema.parse({ store: { type: 'postgres', url } }),
    backends: { sso_providers: local },
  });
  if (target === undefined) throw new Error('a target was expected');
  const pg = await openAuditStore(target, { logger: silent, schema: GATEWAY_SCHEMA });
  t.equal(pg.kind, 'postgres');
  t.equal((await pg.append(newEntry())).id, 1);
  t.ok(pg.ready());
  await pg.close();
});

t.test('the metrics: every action and status at 0 from the start', async (t) => {
  const { registry } = createMetrics();
  const text = await registry.metrics();
  for (const series of [
    'gateway_audit_entries_total{action="UpdateSSOIdentityProvider",status="intent"} 0',
    'gateway_audit_entries_total{action="UpdateSSOIdentityProvider",status="success"} 0',
    'gateway_audit_entries_total{action="UpdateSSOIdentityProvider",status="failure"} 0',
    'gateway_audit_entries_total{action="UnauthorizedAccessAttempt",status="failure"} 0',
    'gateway_audit_write_failures_total 0',
    'gateway_audit_refusals_dropped_total 0',
    'gateway_audit_head_id 0',
  ]) {
    t.ok(text.includes(series), series);
  }
});
