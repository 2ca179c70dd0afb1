/**
 * The PostgreSQL trail in the providers' database: the success entry written inside the change's
 * transaction commits with the change and vanishes with its rollback (the next entry takes its id,
 * the chain holds); the database away fails the intent closed (503) and a lost outcome is a 500; an
 * aborted request gets its deadline's error; the schema is migrated once and checked.
 */
import pg from 'pg';
import t from 'tap';
import { GATEWAY_SCHEMA } from '../../src/backends/postgres/schema.js';
import { openAuditPool } from '../../src/audit/pool.js';
import { createPostgresAuditStore } from '../../src/audit/postgres.js';
import { checkSchema, migrate } from '../../src/postgres/migrations.js';
import { createAuditTrail, type UpdateStart } from '../../src/audit/trail.js';
import { verifyTrail } from '../../src/audit/verify.js';
import { errors, GatewayError } from '../../src/errors.js';
import { openPostgres } from '../../src/backends/postgres/index.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { AuditDatabase } from '../../src/audit/store.js';
import {
  createDatabase,
  createSchema,
  postgresConfig,
  requirePostgres,
  sql,
  startProxy,
  withPort,
} from '../helpers/postgres.js';
import { newEntry, silent } from './helpers.js';

const START: UpdateStart = {
  actor: { id: 'sub-1', name: 'Alice', email: 'alice@example.com' },
  requestId: '5a1e0000-0000-4000-8000-00000000000b',
  sourceIp: '2001:db8::1',
  ssoProviderId: 1,
  provider: { id: 10, name: 'okta' },
  requested: ['config.auto_provision'],
};
const OUTCOME = { provider: { id: 10, name: 'okta' }, changed: ['config.auto_provision'] };

if (await requirePostgres(t)) {
  t.test('success inside the change`s transaction: it commits with the change, or not at all', async (t) => {
    const url = await createDatabase(t);
    const pool = await openAuditPool({ url, schema: GATEWAY_SCHEMA });
    t.teardown(() => pool.close());
    await sql(url, 'CREATE TABLE changes (n integer)');
    const store = createPostgresAuditStore(pool);
    const trail = createAuditTrail(store, {
      logger: silent,
      metrics: createMetrics().audit,
      sharesTransactions: true,
    });
    const signal = new AbortController().signal;

    const kept = trail.update(START);
    await kept.intent();
    t.ok(kept.inTransaction, 'offered when the trail shares the database');
    await pool.transaction(signal, async (query) => {
      await query('INSERT INTO changes (n) VALUES (1)');
      await kept.inTransaction?.(query, OUTCOME);
    });
    await kept.succeeded(OUTCOME);

    const rolledBack = trail.update(START);
    await rolledBack.intent();
    await t.rejects(
      pool.transaction(signal, async (query) => {
        await query('INSERT INTO changes (n) VALUES (2)');
        await rolledBack.inTransaction?.(query, OUTCOME);
        throw new Error('the change fails after its success entry');
      }),
    );
    await rolledBack.failed('an internal error occurred');

    const rows = await sql<{ id: string; status: string; commit_id: string }>(
      url,
      'SELECT id::text, status, commit_id FROM audit_logs ORDER BY id',
    );
    t.same(
      rows.map((r) => [r.id, r.status, r.commit_id]),
      [
        ['1', 'intent', kept.commitId],
        ['2', 'success', kept.commitId],
        ['3', 'intent', rolledBack.commitId],
        ['4', 'failure', rolledBack.commitId],
      ],
      'the rolled-back success left nothing; its id was taken by the failure',
    );
    t.same(await sql(url, 'SELECT n FROM changes'), [{ n: 1 }]);
    t.ok((await verifyTrail(store.walk())).ok);
  });

  t.test('a success that cannot be written in the transaction fails it (503), counted', async (t) => {
    const url = await createDatabase(t);
    const pool = await openAuditPool({ url, schema: GATEWAY_SCHEMA });
    t.teardown(() => pool.close());
    const { registry, audit: auditMetrics } = createMetrics();
    const trail = createAuditTrail(createPostgresAuditStore(pool), {
      logger: silent,
      metrics: auditMetrics,
      sharesTransactions: true,
    });
    const update = trail.update(START);
    await update.intent();
    await t.rejects(
      pool.transaction(new AbortController().signal, async (query) => {
        // A statement of the change failed: the transaction takes no more statements.
        await query('SELECT 1 / 0').catch(() => undefined);
        await update.inTransaction?.(query, OUTCOME);
      }),
      { status: 503, message: 'audit trail unavailable', cause: { code: '25P02' } },
    );
    await update.failed('an internal error occurred');
    t.match(await registry.metrics(), /gateway_audit_write_failures_total 1/);
    await trail.close();
    const rows = await sql<{ status: string }>(url, 'SELECT status FROM audit_logs ORDER BY id');
    t.same(
      rows.map((r) => r.status),
      ['intent', 'failure'],
    );
  });

  t.test('the database away: the intent fails closed (503), a lost outcome is a 500', async (t) => {
    const url = await createDatabase(t);
    const proxy = await startProxy(t, url);
    const pool = await openAuditPool({
      url: withPort(url, proxy.port),
      connect_timeout: 2_000,
      schema: GATEWAY_SCHEMA,
    });
    t.teardown(() => pool.close());
    const { registry, audit: auditMetrics } = createMetrics();
    const trail = createAuditTrail(createPostgresAuditStore(pool), {
      logger: silent,
      metrics: auditMetrics,
    });
    const update = trail.update(START);
    await update.intent();
    await proxy.stop();
    const refused = trail.update(START);
    const err = await refused.intent().catch((e: unknown) => e);
    t.ok(err instanceof GatewayError);
    t.match(err, { status: 503, message: 'audit trail unavailable', context: 'audit' });
    t.notOk(trail.store.ready(), 'not ready while appends fail');
    const lost = await update.succeeded(OUTCOME).catch((e: unknown) => e);
    t.match(lost, { status: 500, message: 'audit outcome not recorded' });
    t.match(await registry.metrics(), /gateway_audit_write_failures_total 2/);

    await proxy.start();
    await update.succeeded(OUTCOME);
    t.ok(trail.store.ready(), 'ready again once an append succeeds');
    const rows = await sql<{ status: string }>(url, 'SELECT status FROM audit_logs ORDER BY id');
    t.same(
      rows.map((r) => r.status),
      ['intent', 'success'],
      'nothing half-written',
    );
  });

  t.test('an intent under an aborted request gets the deadline`s error, and writes nothing', async (t) => {
    const url = await createDatabase(t);
    const pool = await openAuditPool({ url, schema: GATEWAY_SCHEMA });
    t.teardown(() => pool.close());
    const trail = createAuditTrail(createPostgresAuditStore(pool), {
      logger: silent,
      metrics: createMetrics().audit,
    });
    const controller = new AbortController();
    controller.abort(errors.deadline());
    await t.rejects(trail.update(START).intent(controller.signal), {
      status: 504,
      message: 'request timed out',
    });
    t.same(await sql(url, 'SELECT id FROM audit_logs'), []);
  });

  t.test('the gateway`s shared pool serves the trail as it is, a trail per schema', async (t) => {
    const database = await createDatabase(t);
    const trails = [];
    for (const url of [await createSchema(t, database), await createSchema(t, database)]) {
      const shared = await openPostgres(postgresConfig(url), { metrics: createMetrics(), logger: silent });
      t.teardown(() => shared.close());
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await migrate(client, GATEWAY_SCHEMA);
      await client.end();
      const database: AuditDatabase = shared;
      trails.push({ shared, store: createPostgresAuditStore(database) });
    }
    const signal = new AbortController().signal;
    for (let round = 0; round < 3; round++) {
      for (const { shared, store } of trails) {
        const trail = createAuditTrail(store, {
          logger: silent,
          metrics: createMetrics().audit,
          sharesTransactions: true,
        });
        const update = trail.update(START);
        await update.intent(signal);
        await shared.transaction(signal, async (query) => update.inTransaction?.(query, OUTCOME));
        await update.succeeded(OUTCOME);
      }
    }
    for (const { store } of trails) {
      t.match(await verifyTrail(store.walk()), { ok: true, entries: 6, head: { id: 6 } });
    }
  });

  t.test(
    'the database allocates id and time: a gateway clock behind the head takes the head`s time',
    async (t) => {
      const url = await createDatabase(t);
      const pool = await openAuditPool({ url, schema: GATEWAY_SCHEMA });
      t.teardown(() => pool.close());
      let now = Date.parse('2026-11-27T18:13:33.123Z');
      const store = createPostgresAuditStore(pool, { now: () => now });
      const first = await store.append(newEntry());
      now -= 60_000;
      const second = await store.append(newEntry());
      t.match(first, { id: 1, created_at: '2026-11-27T18:13:33.123Z' });
      t.match(second, { id: 2, created_at: '2026-11-27T18:13:33.123Z' }, 'never before the head');
      now += 120_000;
      t.equal((await store.append(newEntry())).created_at, '2026-11-27T18:14:33.123Z');
      t.same(await store.head(), { id: 3, hash: (await verifyTrail(store.walk())).head?.hash, time: now });
    },
  );

  t.test(
    'the schema: the gateway`s migrations, applied once by concurrent starts, recorded, and checked',
    async (t) => {
      const url = await createDatabase(t);
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      t.teardown(() => client.end());
      await t.rejects(
        openAuditPool({ url, migrate: false, schema: GATEWAY_SCHEMA }),
        /schema is at version 0/,
      );
      const runs = await Promise.all([0, 1, 2].map(() => openAuditPool({ url, schema: GATEWAY_SCHEMA })));
      await Promise.all(runs.map((p) => p.close()));
      const recorded = await sql<{ version: number }>(
        url,
        'SELECT version FROM gateway_schema_migrations WHERE version = 4',
      );
      t.same(recorded, [{ version: 4 }], 'the audit migration, in the gateway`s one sequence, applied once');
      t.same(await migrate(client, GATEWAY_SCHEMA), [], 'nothing left to apply');
      await checkSchema(client, GATEWAY_SCHEMA);
      const checked = await openAuditPool({ url, migrate: false, schema: GATEWAY_SCHEMA });
      await checked.close();
    },
  );
}
