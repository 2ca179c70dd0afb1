/**
 * Audit trails for tests: the same trail on each real store (a file in the test's folder, a table in
 * a database of the test's own), ways to tamper with each as an attacker with write access would,
 * and entries to append.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Test } from 'tap';
import { GATEWAY_SCHEMA } from '../../src/backends/postgres/schema.js';
import type { NewAuditEntry } from '../../src/audit/entry.js';
import { openFileAuditStore } from '../../src/audit/file.js';
import { openAuditPool } from '../../src/audit/pool.js';
import { createPostgresAuditStore } from '../../src/audit/postgres.js';
import type { AuditStore } from '../../src/audit/store.js';
import { createLogger } from '../../src/observability/logger.js';
import { createDatabase, requirePostgres, sql } from '../helpers/postgres.js';

export const silent = createLogger('silent');

/** A store under test and the attacker's edits of what it keeps (ids are the entries' ids). */
export interface StoreUnderTest {
  readonly kind: 'file' | 'postgres';
  readonly store: AuditStore;
  /** The file's path, or the database's URL. */
  readonly location: string;
  /** Changes entry `id`'s `actor_name` in place, leaving its hash. */
  edit(id: number): Promise<void>;
  /** Removes entry `id`. */
  remove(id: number): Promise<void>;
  /** Swaps entries `id` and `id + 1` (their content, so that each sits in the other's place). */
  swap(id: number): Promise<void>;
  /** Removes every entry after `id`. */
  cutAfter(id: number): Promise<void>;
}

/** A clock a test moves by hand: starts at `start`, `tick(ms)` moves it. */
export function manualClock(start = Date.parse('2026-03-01T10:00:00.000Z')) {
  let now = start;
  return { now: () => now, tick: (ms: number) => void (now += ms), set: (t: number) => void (now = t) };
}

/** A file trail in `t`'s folder; closed when `t` ends. */
export async function fileUnderTest(t: Test, now?: () => number): Promise<StoreUnderTest> {
  const file = path.join(t.testdir(), 'trail.jsonl');
  const store = await openFileAuditStore(file, { logger: silent, ...(now ? { now } : {}) });
  t.teardown(() => store.close());
  const lines = () => readFileSync(file, 'utf8').split('\n').slice(0, -1);
  const write = (ls: string[]) => writeFileSync(file, ls.map((l) => `${l}\n`).join(''));
  const index = (ls: string[], id: number) =>
    ls.findIndex((l) => (JSON.parse(l) as { id: number }).id === id);
  return {
    kind: 'file',
    store,
    location: file,
    async edit(id) {
      const ls = lines();
      const i = index(ls, id);
      ls[i] = JSON.stringify({ ...JSON.parse(ls[i] as string), actor_name: 'mallory' });
      write(ls);
    },
    async remove(id) {
      const ls = lines();
      ls.splice(index(ls, id), 1);
      write(ls);
    },
    async swap(id) {
      const ls = lines();
      const i = index(ls, id);
      [ls[i], ls[i + 1]] = [ls[i + 1] as string, ls[i] as string];
      write(ls);
    },
    async cutAfter(id) {
      const ls = lines();
      write(ls.slice(0, index(ls, id) + 1));
    },
  };
}

/** A PostgreSQL trail in a new database; undefined (the test skipped or failed) without PostgreSQL. */
export async function postgresUnderTest(t: Test, now?: () => number): Promise<StoreUnderTest | undefined> {
  if (!(await requirePostgres(t))) return undefined;
  const url = await createDatabase(t);
  const pool = await openAuditPool({ url, schema: GATEWAY_SCHEMA });
  t.teardown(() => pool.close());
  const store = createPostgresAuditStore(pool, now ? { now } : {});
  return {
    kind: 'postgres',
    store,
    location: url,
    edit: async (id) =>
      void (await sql(url, `UPDATE audit_logs SET actor_name = 'mallory' WHERE id = $1`, [id])),
    remove: async (id) => void (await sql(url, 'DELETE FROM audit_logs WHERE id = $1', [id])),
    async swap(id) {
      // Each row takes the other's id (through a free one): the pair reads back in the other order.
      const free = 4_000_000_000;
      await sql(url, 'UPDATE audit_logs SET id = $1 WHERE id = $2', [free, id]);
      await sql(url, 'UPDATE audit_logs SET id = $1 WHERE id = $2', [id, id + 1]);
      await sql(url, 'UPDATE audit_logs SET id = $1 WHERE id = $2', [id + 1, free]);
    },
    cutAfter: async (id) => void (await sql(url, 'DELETE FROM audit_logs WHERE id > $1', [id])),
  };
}

/** The stores available here: always the file, and PostgreSQL when it answers. */
export async function storesUnderTest(t: Test, now?: () => number): Promise<StoreUnderTest[]> {
  const stores = [await fileUnderTest(t, now)];
  const pg = await postgresUnderTest(t, now);
  if (pg) stores.push(pg);
  return stores;
}

/** An entry to append, with `over` applied. */
export function newEntry(over: Partial<NewAuditEntry> = {}): NewAuditEntry {
  return {
    actor_id: 'c0ffee00-0000-4000-8000-000000000001',
    actor_name: 'alice',
    actor_email: 'alice@example.com',
    action: 'UpdateSSOIdentityProvider',
    fields: { sso_provider_id: 1, id: 11, name: 'okta', changed: ['name', 'display_name'] },
    request_id: '5a1e0000-0000-4000-8000-000000000001',
    source_ip_address: '192.0.2.10',
    status: 'intent',
    commit_id: '0d15ea5e-0000-4000-8000-000000000001',
    ...over,
  };
}
