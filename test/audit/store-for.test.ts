/**
 * Which trail a configuration names (contract §12): the `audit` key's schema and defaults, the trail
 * that follows the providers' backend without it, what check-config refuses or warns about, opening
 * each store, and the metrics defined once per registry.
 */
import path from 'node:path';
import { Registry } from 'prom-client';
import t from 'tap';
import { createAuditMetrics } from '../../src/audit/metrics.js';
import {
  auditConfigProblems,
  auditStoreFor,
  auditWarnings,
  openAuditStore,
  resolveAuditPath,
} from '../../src/audit/store-for.js';
import { auditSchema } from '../../src/config/audit.js';
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
  const relative = auditSchema.parse({ store: { type: 'file', path: 'logs/audit.jsonl' } });
  t.match(resolveAuditPath(relative, '/etc/gateway')?.store, {
    path: path.resolve('/etc/gateway/logs/audit.jsonl'),
  });
});

t.test(
  'check-config: a file trail with several workers is refused; an upstream without a trail warns',
  async (t) => {
    t.same(auditConfigProblems({ backends: { sso_providers: local }, server: { workers: 1 } }), []);
    const file = auditSchema.parse({ store: { type: 'file', path: '/a.jsonl' } });
    t.match(
      auditConfigProblems({
        audit: file,
        backends: { sso_providers: { type: 'upstream' } },
        server: { workers: 4 },
      }),
      [/^audit\.store\.type: a file audit trail has one writer/],
    );
    t.match(auditConfigProblems({ backends: { sso_providers: local }, server: { workers: 'auto' } }), [
      /^server\.workers:/,
    ]);
    t.same(
      auditConfigProblems({
        backends: { sso_providers: { type: 'postgres', url: PG } },
        server: { workers: 8 },
      }),
      [],
    );
    t.match(auditWarnings({ backends: { sso_providers: { type: 'upstream' } } }), [
      /under the gateway's credentials/,
    ]);
    t.same(auditWarnings({ backends: { sso_providers: local } }), []);
  },
);

t.test('opening each target: a file, and a database of its own (closed with the store)', async (t) => {
  const file = path.join(t.testdir(), 'trail.jsonl');
  const store = await openAuditStore({ type: 'file', path: file }, { logger: silent });
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
  const pg = await openAuditStore(target, { logger: silent });
  t.equal(pg.kind, 'postgres');
  t.equal((await pg.append(newEntry())).id, 1);
  t.ok(pg.ready());
  await pg.close();
});

t.test('the metrics: defined once per registry, every action and status at 0 from the start', async (t) => {
  const registry = new Registry();
  const first = createAuditMetrics(registry);
  const again = createAuditMetrics(registry);
  t.equal(again.entries, first.entries, 'a reload gets the same metrics');
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
