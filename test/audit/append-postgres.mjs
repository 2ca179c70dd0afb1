/* global process, AbortController */
// Run from dist-test/test/audit, where ../../src is the build (dist-test/src links to dist/).
// One of several processes appending to one PostgreSQL trail (the compiled store): opens the
// database, says `ready`, waits for `go` on stdin, then makes `count` appends at once, every other
// one inside a transaction that also records a change (as the providers' update does), and prints
// the ids it was given as JSON.
import { createInterface } from 'node:readline';
import { openAuditPool } from '../../src/audit/pool.js';
import { GATEWAY_SCHEMA } from '../../src/backends/postgres/schema.js';
import { createPostgresAuditStore } from '../../src/audit/postgres.js';

const [url, name, count] = process.argv.slice(2);
const pool = await openAuditPool({ url, pool_size: 10, schema: GATEWAY_SCHEMA });
const store = createPostgresAuditStore(pool);
const signal = new AbortController().signal;
const entry = (i) => ({
  actor_id: name,
  actor_name: name,
  actor_email: '',
  action: 'UpdateSSOIdentityProvider',
  fields: { sso_provider_id: i, id: i, name: `${name}-${i}`, changed: ['name', 'display_name'] },
  request_id: `${name}-${i}`,
  source_ip_address: '127.0.0.1',
  status: 'success',
  commit_id: '00000000-0000-4000-8000-000000000000',
});
process.stdout.write('ready\n');
for await (const line of createInterface({ input: process.stdin })) if (line === 'go') break;
const ids = await Promise.all(
  Array.from({ length: Number(count) }, (_, i) =>
    i % 2 === 0
      ? store.append(entry(i)).then((e) => e.id)
      : pool.transaction(signal, async (query) => {
          await query('INSERT INTO changes (who, n) VALUES ($1, $2)', [name, i]);
          return (await store.appendIn(query, entry(i))).id;
        }),
  ),
);
await pool.close();
process.stdout.write(`${JSON.stringify(ids)}\n`);
