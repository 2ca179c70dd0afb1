/**
 * Replicas appending to one PostgreSQL trail keep one chain: two processes (the compiled store)
 * make 50 appends at once between them, half inside a transaction with a change of their own, and
 * the trail ends with ids 1 to 50, each given to exactly one append, and a chain that holds.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import t, { type Test } from 'tap';
import { openAuditPool } from '../../src/audit/pool.js';
import { GATEWAY_SCHEMA } from '../../src/backends/postgres/schema.js';
import { createPostgresAuditStore } from '../../src/audit/postgres.js';
import { verifyTrail } from '../../src/audit/verify.js';
import { createDatabase, requirePostgres, sql } from '../helpers/postgres.js';

const SCRIPT = path.join(import.meta.dirname, 'append-postgres.mjs');

/** A started appender, and its stdout lines as they come. */
function appender(t: Test, url: string, name: string, count: number) {
  const child: ChildProcess = spawn(process.execPath, [SCRIPT, url, name, String(count)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
  const next = async () => {
    const { value, done } = await lines.next();
    if (done) throw new Error(`${name} ended before it answered`);
    return value as string;
  };
  return { child, next };
}

if (await requirePostgres(t)) {
  t.test('50 concurrent appends from two processes: one unbroken chain, ids 1 to 50', async (t) => {
    const url = await createDatabase(t);
    // The schema is in place before either starts, and the changes' own table beside it.
    await (await openAuditPool({ url, schema: GATEWAY_SCHEMA })).close();
    await sql(url, 'CREATE TABLE changes (who text, n integer)');
    const a = appender(t, url, 'a', 25);
    const b = appender(t, url, 'b', 25);
    t.equal(await a.next(), 'ready');
    t.equal(await b.next(), 'ready');
    a.child.stdin?.end('go\n');
    b.child.stdin?.end('go\n');
    const ids = [...(JSON.parse(await a.next()) as number[]), ...(JSON.parse(await b.next()) as number[])];
    t.same(
      [...ids].sort((x, y) => x - y),
      Array.from({ length: 50 }, (_, i) => i + 1),
      'each id given to exactly one append',
    );

    const rows = await sql<{ id: string; request_id: string }>(
      url,
      'SELECT id::text, request_id FROM audit_logs ORDER BY id',
    );
    t.equal(rows.length, 50);
    t.equal(new Set(rows.map((r) => r.request_id)).size, 50, 'every append is there once');
    t.same(await sql(url, 'SELECT count(*)::int AS n FROM changes'), [{ n: 24 }], 'every change committed');

    const pool = await openAuditPool({ url, schema: GATEWAY_SCHEMA });
    t.teardown(() => pool.close());
    const report = await verifyTrail(createPostgresAuditStore(pool).walk());
    t.match(report, { ok: true, entries: 50, head: { id: 50 } });
  });
}
