/**
 * The gateway on the postgres backends while the database refuses connections or drops one under a
 * transaction, through the front door against the real PostgreSQL: each case owns its database (and
 * role) and checks the status and envelope of every request, the time each takes, `/readyz`, and
 * recovery without a restart.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import t, { type Test } from 'tap';
import { call, errorOf, multipart, ROOT, startGateway, type TestGateway } from '../helpers/gateway.js';
import {
  ADMIN_URL,
  createDatabase,
  createRole,
  holdLock,
  importStores,
  requirePostgres,
  sql,
  withUser,
} from '../helpers/postgres.js';
import { until } from '../helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const STORE = { status: 503, context: 'store', message: 'store unavailable' };
/** The gateways' `health_check_interval`, in ms. */
const INTERVAL = 1_000;
/** What a bound on this shared machine allows beyond the interval (polling, scheduling). */
const SLACK = 1_000;
/** "Every request during a refusal is answered 503 in under two seconds." */
const REFUSAL_BOUND = 2_000;
/**
 * The requests sent at once during a refusal (half GETs, half PATCHes), and the gateways' pool: one
 * connection each, so the bound measures a refusal, not rounds of this test's pool queue (each a
 * server process started and refused, slow on a loaded machine).
 */
const BURST = 12;

const sample = (name: string) => JSON.parse(readFileSync(path.join(ROOT, 'config', name), 'utf8'));
const SSO = sample('sso-providers.json');
const TAGS = sample('asset-group-tags.json');

/** Both stores on the database at `url`; the default `connect_timeout` (5 s) stays. */
const onPostgres = (url: string, over: Record<string, unknown> = {}) => {
  const backend = {
    type: 'postgres',
    url,
    path: undefined,
    pool_size: BURST,
    health_check_interval: `${INTERVAL}ms`,
    ...over,
  };
  return { backends: { sso_providers: backend, asset_group_tags: backend } };
};

const rename = (gw: TestGateway, name: string, headers: Record<string, string> = {}) => {
  const form = multipart([{ name: 'name', value: name }]);
  return call(gw, {
    method: 'PATCH',
    target: '/api/v2/sso-providers/1',
    body: form.body,
    headers: { 'Content-Type': form.contentType, ...headers },
  });
};
const member = (gw: TestGateway) => call(gw, { method: 'GET', target: MEMBER });

/** `/readyz`'s status and what it says of the `postgres` check. */
async function readiness(gw: TestGateway) {
  const res = await fetch(`${gw.adminUrl}/readyz`);
  const body = (await res.json()) as { checks?: Record<string, string> };
  return { status: res.status, postgres: body.checks?.postgres };
}

/** Waits until `/readyz` answers `status`; resolves to the ms since `since` (a `Date.now()`). */
async function readyzTurns(gw: TestGateway, status: number, since = Date.now()): Promise<number> {
  await until(`/readyz answers ${status}`, async () => (await readiness(gw)).status === status);
  return Date.now() - since;
}

/**
 * Sends member GETs and PATCHes at once and checks that every one is the 503 envelope, answered in
 * under two seconds, and that the PATCHes changed nothing.
 */
async function everyRequestRefused(t: Test, gw: TestGateway, label: string) {
  const timed = async (send: () => ReturnType<typeof member>) => {
    const started = performance.now();
    const res = await send();
    return { error: errorOf(res), ms: performance.now() - started };
  };
  const answers = await Promise.all([
    ...Array.from({ length: BURST / 2 }, () => timed(() => member(gw))),
    ...Array.from({ length: BURST / 2 }, () => timed(() => rename(gw, 'Never applied'))),
  ]);
  t.same(
    answers.map((a) => a.error),
    answers.map(() => STORE),
    `${label}: every request is 503 store unavailable`,
  );
  const slowest = Math.max(...answers.map((a) => a.ms));
  t.ok(slowest < REFUSAL_BOUND, `${label}: the slowest answer took ${Math.round(slowest)} ms (< 2 s)`);
}

/** Ends the gateway's own sessions on database `name` and waits until they are gone. */
const terminateGatewaySessions = (name: string) =>
  sql(
    ADMIN_URL,
    `SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity
      WHERE datname = $1 AND application_name = 'bh-gateway'`,
    [name],
  );

const databaseOf = (url: string) => new URL(url).pathname.slice(1);

/** The name of provider 1 in the database at `url`, read on a connection of its own. */
const providerName = async (url: string) =>
  (await sql<{ name: string }>(url, 'SELECT name FROM saml_providers WHERE sso_provider_id = 1'))[0]?.name;

if (await requirePostgres(t)) {
  t.test(
    'a database closed to new connections (ALLOW_CONNECTIONS false) is away: 503 within 2 s, not ready, back without a restart',
    async (t) => {
      const url = await createDatabase(t);
      const name = databaseOf(url);
      t.teardown(() => sql(ADMIN_URL, `ALTER DATABASE ${name} ALLOW_CONNECTIONS true`));
      await importStores(t, url, { sso: SSO, tags: TAGS });
      const gw = await startGateway(onPostgres(url));
      t.teardown(() => gw.close());
      t.equal((await member(gw)).status, 200);
      t.same(await readiness(gw), { status: 200, postgres: 'ok' });

      await sql(ADMIN_URL, `ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      await terminateGatewaySessions(name);
      const closed = Date.now();
      // The first requests may come before the gateway has noticed: they are refused all the same.
      // /readyz is watched meanwhile.
      const [turned] = await Promise.all([
        readyzTurns(gw, 503, closed),
        everyRequestRefused(t, gw, 'closed'),
      ]);
      t.ok(turned <= INTERVAL + SLACK, `/readyz turned 503 ${turned} ms after the sessions ended`);
      t.same(await readiness(gw), { status: 503, postgres: 'not ready' }, '/readyz names the database');
      await everyRequestRefused(t, gw, 'closed, known to be down');
      t.match(
        gw.logs.find((l) => l.msg === 'database unavailable'),
        { level: 'error', err: /is not currently accepting connections/ },
        'the reason is logged',
      );
      t.match(
        gw.logs.find((l) => l.msg === 'request' && l.status === 503),
        { err: { message: /is not currently accepting connections/ } },
        'and each refused request says why in its log line',
      );
      t.notOk(
        gw.logs.some((l) => l.msg === 'request' && l.status === 500),
        'no request was answered 500',
      );

      await sql(ADMIN_URL, `ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      const back = await readyzTurns(gw, 200, Date.now());
      t.ok(back <= INTERVAL + SLACK, `/readyz back to 200 after ${back} ms`);
      t.same(await readiness(gw), { status: 200, postgres: 'ok' });
      t.equal(await providerName(url), SSO.providers[0].name, 'no refused PATCH was applied');
      t.equal((await member(gw)).status, 200, 'serves again');
      t.equal((await rename(gw, 'After the window')).json().data.name, 'After the window');
      t.ok(
        gw.logs.some((l) => l.msg === 'database reachable'),
        'the recovery is logged',
      );
    },
  );

  t.test(
    'a role at its CONNECTION LIMIT is away: 503 within 2 s, not ready, back once a connection frees',
    async (t) => {
      const role = await createRole(t);
      const url = withUser(await createDatabase(t, role), role);
      const name = databaseOf(url);
      await importStores(t, url, { sso: SSO, tags: TAGS });
      const gw = await startGateway(onPostgres(url));
      t.teardown(() => gw.close());
      t.equal((await member(gw)).status, 200);
      t.same(await readiness(gw), { status: 200, postgres: 'ok' });

      // Two sessions of the role's own take every slot the limit leaves.
      const holders = [new pg.Client({ connectionString: url }), new pg.Client({ connectionString: url })];
      for (const h of holders) {
        h.on('error', () => undefined);
        await h.connect();
      }
      t.teardown(() => Promise.all(holders.map((h) => h.end().catch(() => undefined))));
      await sql(ADMIN_URL, `ALTER ROLE ${role} CONNECTION LIMIT 2`);
      await terminateGatewaySessions(name);

      // No request this time: the gateway finds out by itself.
      const turned = await readyzTurns(gw, 503, Date.now());
      t.ok(turned <= INTERVAL + SLACK, `/readyz turned 503 ${turned} ms after the sessions ended`);
      t.same(await readiness(gw), { status: 503, postgres: 'not ready' });
      await everyRequestRefused(t, gw, 'limit reached');
      t.match(
        gw.logs.find((l) => l.msg === 'database unavailable'),
        { err: /too many connections for role/ },
      );
      t.notOk(gw.logs.some((l) => l.msg === 'request' && l.status === 500));

      await Promise.all(holders.map((h) => h.end()));
      const back = await readyzTurns(gw, 200, Date.now());
      t.ok(back <= INTERVAL + SLACK, `/readyz back to 200 after ${back} ms`);
      t.equal(await providerName(url), SSO.providers[0].name, 'no refused PATCH was applied');
      t.equal((await member(gw)).status, 200, 'serves again');
      t.equal((await rename(gw, 'After the limit')).json().data.name, 'After the limit');
    },
  );

  t.test(
    'a login refused at connect is away: 503 within 2 s, not ready, back once it is allowed',
    async (t) => {
      const role = await createRole(t);
      const url = withUser(await createDatabase(t, role), role);
      await importStores(t, url, { sso: SSO, tags: TAGS });
      const gw = await startGateway(onPostgres(url));
      t.teardown(() => gw.close());
      t.equal((await member(gw)).status, 200);

      await sql(ADMIN_URL, `ALTER ROLE ${role} NOLOGIN`);
      await terminateGatewaySessions(databaseOf(url));
      const refused = Date.now();
      const [turned] = await Promise.all([
        readyzTurns(gw, 503, refused),
        everyRequestRefused(t, gw, 'login refused'),
      ]);
      t.ok(turned <= INTERVAL + SLACK, `/readyz turned 503 ${turned} ms after the sessions ended`);
      t.match(
        gw.logs.find((l) => l.msg === 'database unavailable'),
        { err: /is not permitted to log in/ },
      );

      await sql(ADMIN_URL, `ALTER ROLE ${role} LOGIN`);
      const back = await readyzTurns(gw, 200, Date.now());
      t.ok(back <= INTERVAL + SLACK, `/readyz back to 200 after ${back} ms`);
      t.equal((await member(gw)).status, 200, 'serves again');
    },
  );

  t.test(
    'a session terminated mid-transaction is 503 with nothing applied; the database is not away',
    async (t) => {
      const url = await createDatabase(t);
      const name = databaseOf(url);
      await importStores(t, url, { sso: SSO, tags: TAGS });
      const gw = await startGateway(onPostgres(url));
      t.teardown(() => gw.close());

      // Another session holds provider 1's row: the PATCH's transaction waits for its lock.
      const holder = await holdLock(
        t,
        url,
        'SELECT 1 FROM saml_providers WHERE sso_provider_id = 1 FOR UPDATE',
      );
      const patching = rename(gw, 'Never applied', { Prefer: 'wait=30' });
      const waiting = () =>
        sql<{ pid: number }>(
          ADMIN_URL,
          `SELECT pid FROM pg_stat_activity
            WHERE datname = $1 AND application_name = 'bh-gateway' AND wait_event_type = 'Lock'`,
          [name],
        );
      await until('the PATCH waits for the row lock', async () => (await waiting()).length === 1);
      const [victim] = await waiting();
      const killed = performance.now();
      await sql(ADMIN_URL, 'SELECT pg_terminate_backend($1, 5000)', [victim!.pid]);

      const res = await patching;
      const ms = performance.now() - killed;
      t.same(errorOf(res), STORE, 'the PATCH is 503 store unavailable, not its deadline');
      t.ok(ms < REFUSAL_BOUND, `answered ${Math.round(ms)} ms after its session ended`);
      await holder.query('ROLLBACK');
      t.equal(await providerName(url), SSO.providers[0].name, 'nothing was applied');

      t.same(await readiness(gw), { status: 200, postgres: 'ok' }, 'still ready: connections succeed');
      t.equal((await member(gw)).status, 200, 'the next request is served');
      t.equal((await rename(gw, 'Applied')).json().data.name, 'Applied', 'and the next PATCH applies');
      t.same(await readiness(gw), { status: 200, postgres: 'ok' });
      t.notOk(
        gw.logs.some((l) => l.msg === 'database unavailable'),
        'a lost session is not reported as the database being away',
      );
      t.match(
        gw.logs.find((l) => l.msg === 'request' && l.status === 503),
        { err: { message: /terminating connection due to administrator command/ } },
        'the request log line says why',
      );
    },
  );
}
