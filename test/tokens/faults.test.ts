/**
 * The token store when the database goes away: readiness waits only for the first read, tokens held
 * keep working and no request waits on the database, a change missed while disconnected is caught
 * by the full re-read on reconnect, and connections cut by `pg_terminate_backend` (the LISTEN one
 * included) come back without a restart. And `last_used_at`: written off the request path, at most
 * once per interval per token across replicas.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { baseConfig, merge, readyz, TOKENS } from '../helpers/gateway.js';
import {
  ADMIN_URL,
  createDatabase,
  createSchema,
  requirePostgres,
  sql,
  startProxy,
  withPort,
} from '../helpers/postgres.js';
import { createToken, status, storeGateway, tokensCli, tokenStore } from '../helpers/tokens.js';
import { until } from '../helpers/wait.js';
import { metric, metricsText } from '../helpers/metrics.js';

/** A configuration file (for `gateway tokens`) whose store is `url`. */
function configFor(dir: string, url: string): string {
  const file = path.join(dir, 'direct.yaml');
  writeFileSync(
    file,
    stringify(merge(baseConfig(), { auth: { signature: { token_store: tokenStore(url) } } })),
  );
  return file;
}

if (await requirePostgres(t)) {
  const database = await createDatabase(t);

  t.test(
    'the database away: ready only after the first read, held tokens keep working, nothing hangs',
    async (t) => {
      const url = await createSchema(t, database);
      const direct = configFor(t.testdir(), url);
      const tok = await createToken(direct, 'held');
      const proxy = await startProxy(t, url);
      await proxy.stop();
      const gw = await storeGateway(t, withPort(url, proxy.port), { connect_timeout: '500ms' });

      const before = await readyz(gw);
      t.equal(before.status, 503, 'not ready before the first read');
      t.equal(before.body.checks.token_store, 'not ready', '/readyz names the token store');
      t.equal(await status(gw, TOKENS.admin), 200, 'YAML tokens verify meanwhile');
      t.equal(await status(gw, tok), 401, 'store tokens are not known yet');

      await proxy.start();
      await until('the first read', async () => (await readyz(gw)).status === 200);
      t.equal(await status(gw, tok), 200);

      await proxy.stop();
      const started = performance.now();
      t.equal(await status(gw, tok), 200, 'a held token verifies with the database away');
      t.ok(performance.now() - started < 500, 'and without waiting for it');
      // Revoked while this gateway cannot hear it: the full re-read on reconnect catches it.
      t.equal((await tokensCli(direct, 'revoke', tok.id)).code, 0);
      t.equal(await status(gw, tok), 200, 'not heard while disconnected');
      t.equal((await readyz(gw)).status, 200, 'readiness stays 200 once loaded');

      await proxy.start();
      await until('the missed revocation is read on reconnect', async () => (await status(gw, tok)) === 401);
      t.ok(gw.logs.some((l) => l.msg === 'token store listening again'));
      t.ok(gw.logs.some((l) => l.msg === 'token store connection lost; reconnecting'));
    },
  );

  t.test(
    'the database refusing new connections, the LISTEN one alive: /readyz says since when the tokens are stale',
    async (t) => {
      // A database of its own: it is the one made to refuse connections.
      const url = await createDatabase(t);
      const name = new URL(url).pathname.slice(1);
      const gw = await storeGateway(t, url);
      await until('loaded', async () => (await readyz(gw)).status === 200);
      const tok = await createToken(gw.configFile, 'held');
      // Held, seen without a request (a verified one would write last_used_at on the pool).
      await until(
        'held',
        async () => metric(await metricsText(gw.adminUrl), 'gateway_tokens', { source: 'store' }) === 1,
      );
      t.equal((await readyz(gw)).body.checks.token_store, 'ok');
      t.equal(
        metric(await metricsText(gw.adminUrl), 'gateway_token_store_stale_seconds'),
        0,
        'the gauge is 0 while current',
      );

      const sessions = 'FROM pg_stat_activity WHERE datname = $1 AND application_name = $2';
      const listening = await sql(ADMIN_URL, `SELECT pid ${sessions}`, [name, 'bh-gateway tokens listen']);
      t.equal(listening.length, 1, 'one LISTEN connection');
      await sql(ADMIN_URL, `ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      t.teardown(() => sql(ADMIN_URL, `ALTER DATABASE ${name} ALLOW_CONNECTIONS true`));
      // The pool's sessions cut, each with its last statement, when it began and whether it was over.
      const cut = await sql<{ query: string; query_start: Date; state: string }>(
        ADMIN_URL,
        `SELECT query, query_start, state, pg_terminate_backend(pid) ${sessions}`,
        [name, 'bh-gateway tokens'],
      );
      const cutAt = performance.now();
      t.ok(cut.length >= 1, `${cut.length} pool sessions cut`);
      // Nothing was verified, so nothing was written: the latest statement is a read of the table.
      const reads = cut.filter((c) => /^\s*SELECT\b[\s\S]*\bgateway_tokens\b/.test(c.query));
      t.ok(reads.length >= 1, 'the latest statements were reads of the store');
      const lastRead = Math.max(...reads.map((c) => c.query_start.getTime()));
      // A read cut while it ran never succeeded: then the last good one is the probe before it.
      const within = cut.every((c) => c.state === 'idle') ? 1_000 : 2_500;

      const stale = /^stale since (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)$/;
      let check = '';
      await until('the store is noticed stale', async () =>
        stale.test((check = (await readyz(gw)).body.checks.token_store ?? '')),
      );
      const noticed = performance.now() - cutAt;
      t.ok(noticed < 2_000, `noticed after ${Math.round(noticed)} ms (poll is 30 s)`);
      const since = Date.parse(stale.exec(check)?.[1] ?? '');
      t.ok(
        since <= lastRead && lastRead - since < within,
        `${check}: the last successful read (${new Date(lastRead).toISOString()} by the database's clock)`,
      );
      const ready = await readyz(gw);
      t.equal(ready.status, 200, '/readyz stays 200');
      t.match(ready.body.checks.token_store, stale);
      const text = await metricsText(gw.adminUrl);
      t.ok((metric(text, 'gateway_token_store_stale_seconds') ?? 0) > 0, 'the gauge says it is stale');
      t.ok(
        (metric(text, 'gateway_token_store_stale_seconds') ?? Infinity) <= (Date.now() - since) / 1000,
        'since that read',
      );
      t.equal(metric(text, 'gateway_ready', { check: 'token_store' }), 1, 'gateway_ready stays 1');
      t.equal(await status(gw, tok), 200, 'the held token verifies');
      t.same(
        await sql(ADMIN_URL, `SELECT pid ${sessions}`, [name, 'bh-gateway tokens listen']),
        listening,
        'the LISTEN connection stayed',
      );

      await sql(ADMIN_URL, `ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      const back = await until(
        'current again',
        async () => (await readyz(gw)).body.checks.token_store === 'ok',
      );
      t.ok(back < 2_000, `ok again after ${Math.round(back)} ms`);
      t.equal(
        metric(await metricsText(gw.adminUrl), 'gateway_token_store_stale_seconds'),
        0,
        'the gauge is 0 again',
      );
      t.equal((await readyz(gw)).status, 200);
    },
  );

  t.test('a database that stops answering: stale within 2 s, ok again once it answers', async (t) => {
    const url = await createSchema(t, database);
    const proxy = await startProxy(t, url);
    const gw = await storeGateway(t, withPort(url, proxy.port));
    await until('loaded', async () => (await readyz(gw)).status === 200);
    t.equal((await readyz(gw)).body.checks.token_store, 'ok');

    // Every connection open and silent: no statement fails before its 10 s bound.
    proxy.freeze();
    const frozenAt = performance.now();
    await until('noticed', async () => (await readyz(gw)).body.checks.token_store !== 'ok');
    const noticed = performance.now() - frozenAt;
    t.ok(noticed < 2_000, `noticed after ${Math.round(noticed)} ms (poll is 30 s)`);
    const ready = await readyz(gw);
    t.equal(ready.status, 200);
    t.match(ready.body.checks.token_store, /^stale since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    t.ok((metric(await metricsText(gw.adminUrl), 'gateway_token_store_stale_seconds') ?? 0) > 0);

    proxy.thaw();
    const thawedAt = performance.now();
    await until('ok again', async () => (await readyz(gw)).body.checks.token_store === 'ok');
    const back = performance.now() - thawedAt;
    t.ok(back < 2_000, `ok again after ${Math.round(back)} ms`);
    t.equal(metric(await metricsText(gw.adminUrl), 'gateway_token_store_stale_seconds'), 0);
  });

  t.test('pg_terminate_backend of every gateway connection: it recovers without a restart', async (t) => {
    const url = await createSchema(t, database);
    const gw = await storeGateway(t, url);
    await until('loaded', async () => (await readyz(gw)).status === 200);
    const tok = await createToken(gw.configFile, 'steady');
    await until('the token verifies', async () => (await status(gw, tok)) === 200);

    // Requests keep going while the connections are cut; every one of them must verify.
    let running = true;
    const answers: number[] = [];
    const load = (async () => {
      while (running) answers.push(await status(gw, tok));
    })();
    const listeners = `SELECT pid FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = 'bh-gateway tokens listen'`;
    const first = await sql(url, listeners);
    t.equal(first.length, 1, 'one LISTEN connection');
    const cut = await sql(
      url,
      `SELECT pg_terminate_backend(pid) AS cut, application_name FROM pg_stat_activity
        WHERE datname = current_database() AND application_name LIKE 'bh-gateway tokens%'`,
    );
    t.ok(cut.length >= 1 && cut.every((r) => r.cut === true), `cut ${cut.map((r) => r.application_name)}`);

    await until('a new LISTEN connection', async () => {
      const now = await sql(url, listeners);
      return now.length === 1 && now[0]?.pid !== first[0]?.pid;
    });
    const added = await createToken(gw.configFile, 'after');
    const seen = await until(
      'a token created after the cut verifies',
      async () => (await status(gw, added)) === 200,
    );
    t.ok(seen < 1000, `heard through the new LISTEN connection after ${Math.round(seen)} ms`);
    t.equal((await tokensCli(gw.configFile, 'revoke', added.id)).code, 0);
    await until('its revocation is heard too', async () => (await status(gw, added)) === 401);
    running = false;
    await load;
    t.ok(answers.length > 0);
    t.same(
      answers.filter((s) => s !== 200),
      [],
      `all ${answers.length} requests during the cut verified`,
    );
    t.equal((await readyz(gw)).status, 200);
  });

  t.test('last_used_at: written at most once per interval per token across replicas', async (t) => {
    const url = await createSchema(t, database);
    const interval = 1.5;
    const gateways = [
      await storeGateway(t, url, { last_used_interval: `${interval}s` }),
      await storeGateway(t, url, { last_used_interval: `${interval}s` }),
    ];
    for (const gw of gateways) await until('loaded', async () => (await readyz(gw)).status === 200);
    // Every write of last_used_at, as the database sees it.
    await sql(url, 'CREATE TABLE uses (id uuid, at timestamptz)');
    await sql(
      url,
      `CREATE FUNCTION log_use() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN INSERT INTO uses VALUES (NEW.id, NEW.last_used_at); RETURN NULL; END $$`,
    );
    await sql(
      url,
      'CREATE TRIGGER log_use AFTER UPDATE OF last_used_at ON gateway_tokens FOR EACH ROW EXECUTE FUNCTION log_use()',
    );
    const tok = await createToken(gateways[0]!.configFile, 'busy');
    const idle = await createToken(gateways[0]!.configFile, 'idle');
    for (const gw of gateways) await until('verifies', async () => (await status(gw, tok)) === 200);

    // Both replicas serve the token for about three intervals (a bounded workload, not a wait).
    const start = performance.now();
    let sent = 0;
    while (performance.now() - start < 3 * interval * 1000 && sent < 20_000) {
      await Promise.all(gateways.map((gw) => status(gw, tok)));
      sent += 2;
    }
    const elapsed = (performance.now() - start) / 1000;
    await until('a use is written', async () => (await sql(url, 'SELECT 1 FROM uses')).length > 0);
    const writes = await sql<{ id: string; at: Date }>(
      url,
      'SELECT id::text AS id, at FROM uses ORDER BY at',
    );
    t.ok(
      writes.every((w) => w.id === tok.id),
      'only the token in use is written',
    );
    const gaps = writes.slice(1).map((w, i) => (w.at.getTime() - writes[i]!.at.getTime()) / 1000);
    t.ok(
      gaps.every((g) => g >= interval),
      `writes ${interval} s apart or more (gaps ${gaps.map((g) => g.toFixed(2)).join(', ') || 'none'})`,
    );
    t.ok(
      writes.length <= Math.floor(elapsed / interval) + 2,
      `${writes.length} writes for ${sent} requests over ${elapsed.toFixed(1)} s`,
    );
    const listed = JSON.parse((await tokensCli(gateways[0]!.configFile, 'list', '--json')).stdout) as Array<{
      id: string;
      last_used_at: string | null;
    }>;
    t.ok(listed.find((l) => l.id === tok.id)?.last_used_at, 'tokens list shows when it was used');
    t.equal(listed.find((l) => l.id === idle.id)?.last_used_at, null, 'an unused token has none');
  });
}
