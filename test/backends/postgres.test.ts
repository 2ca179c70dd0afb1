/**
 * The postgres store itself: migrations, readiness, the indexed member look-up, cancellation on
 * abort, the statement timeout and the pool metrics. (The shared cases are in the behaviour suite;
 * the HTTP answers in postgres-gateway.test.ts.)
 */
import t from 'tap';
import { createPostgresAssetGroupTags, MEMBER_QUERY } from '../../src/backends/asset-group-tags/postgres.js';
import { openPostgres } from '../../src/backends/postgres/index.js';
import { GATEWAY_SCHEMA } from '../../src/backends/postgres/schema.js';
import type { SsoProviderUpdate } from '../../src/backends/sso-providers/backend.js';
import { createPostgresSsoProviders } from '../../src/backends/sso-providers/postgres.js';
import { runMigrate } from '../../src/cli/migrate.js';
import { GatewayError } from '../../src/errors.js';
import { createLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { SSO, TAGS } from './behaviour.js';
import {
  createDatabase,
  createSchema,
  holdLock,
  importStores,
  postgresConfig,
  requirePostgres,
  runCli,
  sql,
  withPort,
} from '../helpers/postgres.js';
import { callOf } from '../helpers/backend.js';
import { until } from '../helpers/wait.js';

const never = () => callOf();

/** Dependencies whose log lines the test can read. */
function deps() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger('info', { write: (l: string) => void lines.push(JSON.parse(l)) });
  return { metrics: createMetrics(), logger, lines };
}

/** Walks an EXPLAIN (FORMAT JSON) plan. */
function planNodes(plan: Record<string, unknown>): Array<Record<string, unknown>> {
  const children = (plan.Plans as Array<Record<string, unknown>> | undefined) ?? [];
  return [plan, ...children.flatMap(planNodes)];
}

if (await requirePostgres(t)) {
  const database = await createDatabase(t);

  t.test('the member look-up is an index scan on the link table at 100k links', async (t) => {
    const url = await createSchema(t, database);
    t.equal((await runCli(runMigrate, ['--postgres', url])).code, 0);
    await sql(
      url,
      `INSERT INTO asset_group_tags VALUES (1, 'one'), (2, 'two');
       INSERT INTO asset_group_tag_selectors
         SELECT g, 1 + g % 2, now(), 'x', now(), 'x', NULL, NULL, 'selector ' || g, '', false, true
           FROM generate_series(1, 200) g;
       INSERT INTO asset_group_tag_selector_seeds SELECT g, 0, 'seed ' || g FROM generate_series(1, 200) g;
       INSERT INTO asset_group_members
         SELECT g, 'S-' || g, 'E', 'User', 'USER' || g, '{"n": 1}', 1 FROM generate_series(1, 10000) g;
       INSERT INTO asset_group_tag_selector_members
         SELECT 1 + g % 200, 1 + g / 10 FROM generate_series(0, 99999) g;
       ANALYZE;`,
    );
    const [{ count }] = (await sql(
      url,
      'SELECT count(*)::int AS count FROM asset_group_tag_selector_members',
    )) as [{ count: number }];
    t.equal(count, 100_000);
    const [row] = await sql<{ 'QUERY PLAN': Array<{ Plan: Record<string, unknown> }> }>(
      url,
      `EXPLAIN (FORMAT JSON) ${MEMBER_QUERY}`,
      [1, 5000],
    );
    const nodes = planNodes(
      (row as { 'QUERY PLAN': Array<{ Plan: Record<string, unknown> }> })['QUERY PLAN'][0]!.Plan,
    );
    const onLinks = nodes.filter((n) => n['Relation Name'] === 'asset_group_tag_selector_members');
    t.ok(onLinks.length > 0, 'the plan reads the link table');
    t.same(
      onLinks.filter((n) => n['Node Type'] === 'Seq Scan'),
      [],
      'no sequential scan on the link table',
    );
    t.ok(
      onLinks.every((n) => String(n['Node Type']).startsWith('Index')),
      'an index scan',
    );

    // And the answer is right: member 5000's links are g = 49990…49999, selectors 191…200.
    const d = deps();
    const db = await openPostgres(postgresConfig(url), d);
    t.teardown(() => db.close());
    const tags = await createPostgresAssetGroupTags(db);
    const found = (await tags.getMember(1, 5000, never())) as { selectors: Array<{ id: number }> };
    t.same(
      found.selectors.map((s) => s.id),
      [192, 194, 196, 198, 200],
      'the odd-tag selectors are left out',
    );
  });

  t.test(
    'migrations: recorded once, concurrent runs migrate once, a newer schema is tolerated',
    async (t) => {
      const url = await createSchema(t, database);
      const runs = await Promise.all([1, 2, 3].map(() => runCli(runMigrate, ['--postgres', url])));
      t.same(
        runs.map((r) => r.code),
        [0, 0, 0],
      );
      t.equal(
        runs.filter((r) => r.stdout.startsWith('applied migrations 1, 2')).length,
        1,
        'one run applied them',
      );
      t.equal(runs.filter((r) => r.stdout.startsWith('schema is up to date')).length, 2);
      const versions = await sql(url, 'SELECT version, name FROM gateway_schema_migrations ORDER BY version');
      t.same(
        versions.map((v) => v.version),
        [1, 2, 3, 4],
      );
      await sql(
        url,
        "INSERT INTO gateway_schema_migrations (version, name) VALUES (99, 'from a newer gateway')",
      );
      const d = deps();
      const db = await openPostgres(postgresConfig(url), d);
      t.teardown(() => db.close());
      t.ok(db.ready(), 'an older gateway keeps working on a newer schema');
      t.equal(GATEWAY_SCHEMA.latest, 4);
    },
  );

  t.test('migrate: false waits for the schema: not ready and 503 until someone migrates', async (t) => {
    const url = await createSchema(t, database);
    const d = deps();
    const db = await openPostgres(postgresConfig(url, { migrate: false, health_check_interval: '100ms' }), d);
    t.teardown(() => db.close());
    t.notOk(db.ready());
    const sso = await createPostgresSsoProviders(db);
    await t.rejects(sso.get(1, never()), { status: 503, message: 'store unavailable' });
    t.match(
      d.lines.find((l) => l.msg === 'database unavailable'),
      { err: /schema is at version 0, this gateway needs 4: run `gateway migrate/ },
    );
    t.equal((await sql(url, "SELECT to_regclass('roles') AS r"))[0]?.r, null, 'nothing was created');
    t.equal((await runCli(runMigrate, ['--postgres', url])).code, 0);
    await until('ready', () => db.ready());
    t.equal(await sso.get(1, never()), undefined, 'serves once the schema is there');
  });

  t.test('an unreachable database: not ready, 503, the URL never logged, close works', async (t) => {
    const d = deps();
    const url = withPort('postgres://gateway:s3cret@127.0.0.1/test', 1);
    const db = await openPostgres(postgresConfig(url, { connect_timeout: '1s' }), d);
    t.notOk(db.ready());
    const sso = await createPostgresSsoProviders(db);
    const err = await sso.get(1, never()).catch((e: unknown) => e);
    t.ok(err instanceof GatewayError);
    t.match(err, { status: 503, context: 'store', message: 'store unavailable' });
    t.match(d.lines, [{ level: 'error', msg: 'database unavailable', err: /ECONNREFUSED/ }]);
    t.notOk(JSON.stringify(d.lines).includes('s3cret'), 'no password in the logs');
    await db.close();
    await db.close();
    t.notOk(db.ready(), 'closed');
    await t.rejects(sso.get(1, never()), { status: 503, message: 'store unavailable' });
  });

  t.test('an abort cancels the running statement on the server; nothing is applied', async (t) => {
    const url = await createSchema(t, database);
    await importStores(t, url, { sso: SSO, tags: TAGS });
    const d = deps();
    const db = await openPostgres(postgresConfig(url), d);
    t.teardown(() => db.close());
    const sso = await createPostgresSsoProviders(db);
    const before = await sso.get(1, never());

    // Another session holds the provider's row, so the update waits for its lock.
    const holder = await holdLock(
      t,
      url,
      'SELECT 1 FROM saml_providers WHERE sso_provider_id = 1 FOR UPDATE',
    );

    const controller = new AbortController();
    const reason = new Error('deadline');
    const update = sso.update(1, { name: 'Never applied' }, callOf(controller.signal));
    const waiting = () =>
      sql(
        url,
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'bh-gateway' AND wait_event_type = 'Lock'",
      ).then((r) => r[0]?.n as number);
    await until('the update waits for the lock', async () => (await waiting()) === 1);
    controller.abort(reason);
    await t.rejects(update, reason, 'rejects at once with the abort reason');
    await until('the server stopped waiting', async () => (await waiting()) === 0);
    await holder.query('ROLLBACK');
    t.same(await sso.get(1, never()), before, 'the row is unchanged');
    t.ok(db.ready(), 'an abort is not a database fault');
  });

  t.test('the statement timeout ends a statement that waits too long: 503, nothing applied', async (t) => {
    const url = await createSchema(t, database);
    await importStores(t, url, { sso: SSO, tags: TAGS });
    const d = deps();
    const db = await openPostgres(postgresConfig(url, { statement_timeout: '300ms' }), d);
    t.teardown(() => db.close());
    const sso = await createPostgresSsoProviders(db);
    const holder = await holdLock(t, url, 'SELECT 1 FROM sso_providers WHERE id = 4 FOR UPDATE');
    await t.rejects(sso.update(4, { name: 'Too slow' }, never()), {
      status: 503,
      message: 'store unavailable',
    });
    await holder.query('ROLLBACK');
    t.equal((await sso.get(4, never()))?.name, 'provider 4');
    const after = (await sso.update(4, { name: 'Now' }, never())) as SsoProviderUpdate;
    t.equal(after.provider.name, 'Now', 'the pool still serves');
  });

  t.test('a failing migration leaves the schema as it was; the gateway stays not ready', async (t) => {
    const url = await createSchema(t, database);
    await sql(url, 'CREATE TABLE roles (name text)');
    const r = await runCli(runMigrate, ['--postgres', url]);
    t.equal(r.code, 1);
    t.match(r.stderr, /relation "roles" already exists/);
    t.equal(
      (await sql(url, "SELECT to_regclass('gateway_schema_migrations') AS r"))[0]?.r,
      null,
      'rolled back',
    );
    const d = deps();
    const db = await openPostgres(postgresConfig(url), d);
    t.teardown(() => db.close());
    t.notOk(db.ready());
    t.match(d.lines, [{ msg: 'database unavailable', err: /relation "roles" already exists/ }]);
  });

  t.test('a busy pool: 503 while no connection frees in time, and still ready', async (t) => {
    const url = await createSchema(t, database);
    await importStores(t, url, { sso: SSO, tags: TAGS });
    const d = deps();
    const db = await openPostgres(
      postgresConfig(url, { pool_size: 1, connect_timeout: '300ms', health_check_interval: '100ms' }),
      d,
    );
    t.teardown(() => db.close());
    const sso = await createPostgresSsoProviders(db);
    const holder = await holdLock(
      t,
      url,
      'SELECT 1 FROM saml_providers WHERE sso_provider_id = 1 FOR UPDATE',
    );
    // The only connection waits for the lock; everything else waits for the connection.
    const blocked = sso.update(1, { name: 'Later' }, never());
    const waitingOnLock = async () =>
      (
        await sql(
          url,
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name = 'bh-gateway'",
        )
      )[0]?.n === 1;
    await until('the update waits on the lock, holding the only connection', waitingOnLock);
    await t.rejects(sso.get(4, never()), { status: 503, message: 'store unavailable' });
    // The health probe queues for the connection too, and gives up after connect_timeout.
    const waiting = async () =>
      (await d.metrics.registry.getSingleMetric('gateway_store_pool_connections')?.get())?.values.find(
        (v) => v.labels.state === 'waiting',
      )?.value ?? 0;
    await until('the health probe waits for a connection', async () => (await waiting()) === 1);
    // A request queued behind the probe fails after connect_timeout: by then the probe has failed too.
    await t.rejects(sso.get(4, never()), { status: 503, message: 'store unavailable' });
    t.ok(db.ready(), 'busy is not down (the health probe could not get a connection either)');
    await holder.query('ROLLBACK');
    t.equal(((await blocked) as SsoProviderUpdate).provider.name, 'Later');
  });

  t.test('metrics: pool connections by state and store operation durations', async (t) => {
    const url = await createSchema(t, database);
    await importStores(t, url, { sso: SSO, tags: TAGS });
    const d = deps();
    const db = await openPostgres(postgresConfig(url), d);
    const tags = await createPostgresAssetGroupTags(db);
    await tags.getMember(1, 101, never());
    const text = await d.metrics.registry.metrics();
    t.match(text, /gateway_store_pool_connections\{state="idle"\} [1-9]/);
    t.match(text, /gateway_store_pool_connections\{state="active"\} 0/);
    t.match(text, /gateway_store_pool_connections\{state="waiting"\} 0/);
    t.match(
      text,
      /gateway_store_operation_duration_seconds_count\{backend="postgres",operation="asset_group_tags.get_member"\} 1/,
    );
    await db.close();
    t.match(
      await d.metrics.registry.metrics(),
      /gateway_store_pool_connections\{state="idle"\} 0/,
      'a closed pool stops counting',
    );
  });
}
