/**
 * The audit trail under real processes: two gateways on one PostgreSQL database under 50 concurrent
 * PATCHes (every 200 has exactly one success entry, every success entry is a committed change, one
 * unbroken chain), and a gateway killed with SIGKILL between an intent and its outcome, on each
 * store (a verifiable chain, the intent listed; the next start continues it).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { stringify } from 'yaml';
import type { AuditEntry } from '../../src/audit/entry.js';
import { readFileTrail } from '../../src/audit/file-read.js';
import { walkRows } from '../../src/audit/postgres.js';
import type { EntryRow } from '../../src/audit/sql-query.js';
import { verifyTrail } from '../../src/audit/verify.js';
import { provider } from '../helpers/backend.js';
import { baseConfig, copySampleData, ROOT } from '../helpers/gateway.js';
import { createDatabase, holdLock, importStores, requirePostgres, sql } from '../helpers/postgres.js';
import { startGatewayProcess, stopGatewayProcess } from '../helpers/process.js';
import { until } from '../helpers/wait.js';
import { patch } from './gateway-helpers.js';

const PROVIDERS = 10;
const PATCHES = 50;

/** A configuration file in a folder of `t`'s own, its backends `backends`. */
function configIn(t: Test, backends: Record<string, unknown>, dir?: string): string {
  const folder = dir ?? mkdtempSync(path.join(tmpdir(), 'gateway-audit-'));
  if (dir === undefined) t.teardown(() => rmSync(folder, { recursive: true, force: true }));
  const file = path.join(folder, 'gateway.yaml');
  const config = {
    ...baseConfig(),
    backends: {
      collectors: { type: 'local', path: path.join(ROOT, 'config', 'collectors') },
      asset_group_tags: { type: 'local', path: path.join(ROOT, 'config', 'asset-group-tags.json') },
      ...backends,
    },
  };
  writeFileSync(file, stringify(config));
  return file;
}

const tableEntries = async (url: string) => {
  const out: AuditEntry[] = [];
  for await (const item of walkRows((text, values) => sql<EntryRow>(url, text, values)))
    out.push(item.entry as AuditEntry);
  return out;
};

if (await requirePostgres(t)) {
  t.test(
    'two processes, 50 concurrent PATCHes: one success per 200, each committed, one chain',
    async (t) => {
      const url = await createDatabase(t);
      const ids = Array.from({ length: PROVIDERS }, (_, k) => k + 1);
      await importStores(t, url, { sso: { roles: [1], providers: ids.map((i) => provider(i, 100 + i)) } });
      const backend = { type: 'postgres', url, pool_size: 5, connect_timeout: '30s' };
      const file = configIn(t, { sso_providers: backend });
      const gateways = await Promise.all([startGatewayProcess(t, file), startGatewayProcess(t, file)]);
      t.teardown(() => Promise.all(gateways.map(stopGatewayProcess)));

      // Five changes of each provider at once, from both processes.
      const answers = await Promise.all(
        Array.from({ length: PATCHES }, (_, k) =>
          patch(gateways[k % 2] as { port: number }, (k % PROVIDERS) + 1, [
            { name: 'name', value: `n-${k}` },
          ]),
        ),
      );
      t.same(
        answers.filter((r) => r.status !== 200).map((r) => r.body.toString()),
        [],
        'every PATCH answered 200',
      );
      const entries = await tableEntries(url);
      const successes = entries.filter((e) => e.status === 'success');
      for (const res of answers) {
        const mine = successes.filter((e) => e.request_id === res.headers.requestid);
        if (mine.length !== 1) t.fail(`${res.headers.requestid} has ${mine.length} success entries`);
      }
      t.equal(successes.length, PATCHES, 'one success entry per 200');
      // Each provider's changes commit in the order of their success entries: the last one is what stands.
      const stored = await sql<{ sso_provider_id: number; name: string }>(
        url,
        'SELECT sso_provider_id, name FROM saml_providers',
      );
      for (const row of stored) {
        const last = successes.filter((e) => e.fields.sso_provider_id === row.sso_provider_id).at(-1);
        t.equal(
          last?.fields.name,
          row.name,
          `provider ${row.sso_provider_id}: its last success is what stands`,
        );
      }
      t.match(await verifyTrail(walkRows((text, values) => sql<EntryRow>(url, text, values))), {
        ok: true,
        entries: 2 * PATCHES,
        pending: [],
      });
      t.ok(
        gateways.every((g) => g.lines.some((l) => l.msg === 'audit entry appended')),
        'both processes appended to the one chain',
      );
    },
  );

  t.test('postgres: SIGKILL between intent and outcome: the chain holds, the intent is listed', async (t) => {
    const url = await createDatabase(t);
    await importStores(t, url, { sso: { roles: [1], providers: [provider(1, 101)] } });
    const file = configIn(t, { sso_providers: { type: 'postgres', url } });
    const first = await startGatewayProcess(t, file);
    t.equal((await patch(first, 1, [{ name: 'name', value: 'before' }])).status, 200);
    const holder = await holdLock(
      t,
      url,
      'SELECT * FROM saml_providers WHERE sso_provider_id = 1 FOR UPDATE',
    );
    const cut = patch(first, 1, [{ name: 'name', value: 'never' }]).catch((err: unknown) => err);
    await until('the intent is written', async () => (await tableEntries(url)).length === 3);
    first.child.kill('SIGKILL');
    await first.exited;
    t.ok((await cut) instanceof Error, 'the request was cut');
    await holder.query('ROLLBACK');
    const [, , intent] = await tableEntries(url);
    t.match(await verifyTrail(walkRows((text, values) => sql<EntryRow>(url, text, values))), {
      ok: true,
      pending: [{ commit_id: intent?.commit_id }],
    });
    t.same(await sql(url, 'SELECT name FROM saml_providers'), [{ name: 'before' }], 'nothing applied');
    const next = await startGatewayProcess(t, file);
    t.teardown(() => stopGatewayProcess(next));
    t.equal((await patch(next, 1, [{ name: 'name', value: 'after' }])).status, 200);
    t.match(await verifyTrail(walkRows((text, values) => sql<EntryRow>(url, text, values))), {
      ok: true,
      entries: 5,
      pending: [{ commit_id: intent?.commit_id }],
    });
  });
}

t.test(
  'file: SIGKILL under concurrent changes: the next start repairs the tail and the chain goes on',
  async (t) => {
    const dir = copySampleData();
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const file = configIn(
      t,
      { sso_providers: { type: 'local', path: path.join(dir, 'sso-providers.json') } },
      dir,
    );
    const trail = path.join(dir, 'sso-providers.json.audit.jsonl');
    const first = await startGatewayProcess(t, file);
    const sent = Array.from({ length: 40 }, (_, k) =>
      patch(first, 1, [{ name: 'name', value: `n-${k}` }]).then(
        (res) => ({ id: res.headers.requestid as string, status: res.status }),
        () => undefined,
      ),
    );
    await until('the trail is being written', () => lines(trail) >= 10);
    first.child.kill('SIGKILL');
    await first.exited;
    const answered = (await Promise.all(sent)).filter((a) => a?.status === 200);
    const before = await verifyTrail(readFileTrail(trail));
    t.ok(before.ok, 'the chain up to the cut holds');
    const successes = new Set<string>();
    for await (const item of readFileTrail(trail)) {
      const e = item.entry as AuditEntry | undefined;
      if (e?.status === 'success') successes.add(e.request_id);
    }
    t.same(
      answered.filter((a) => !successes.has(a?.id as string)),
      [],
      'every 200 has its success entry',
    );
    t.ok(
      before.pending.length <= sent.length - answered.length,
      'an intent without outcome is a cut request',
    );

    const next = await startGatewayProcess(t, file);
    t.teardown(() => stopGatewayProcess(next));
    t.notOk(
      next.lines.some((l) => String(l.msg).includes('locked')),
      'the dead process`s lock is taken over',
    );
    t.equal((await patch(next, 1, [{ name: 'name', value: 'after' }])).status, 200);
    const after = await verifyTrail(readFileTrail(trail));
    t.match(after, { ok: true, entries: before.entries + 2 });
    t.equal(after.incompleteTail, undefined, 'no torn line left in the trail');
    t.ok(
      readdirSync(dir).filter((f) => f.includes('.torn-')).length <= 1,
      'a torn line, if the kill cut one, is moved aside',
    );
  },
);

function lines(file: string): number {
  try {
    return readFileSync(file, 'utf8').split('\n').length - 1;
  } catch {
    return 0;
  }
}
