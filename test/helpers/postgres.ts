/**
 * The real PostgreSQL for tests: each test run works in a database (or schema) of its own, created
 * here and dropped at teardown. Where PostgreSQL is unreachable the tests are skipped with a visible
 * message, except in CI (`CI=true`), where that is a failure.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Test } from 'tap';
import { runImport } from '../../src/cli/import.js';
import type { PostgresConfig } from '../../src/backends/postgres/config.js';
import { configSchema } from '../../src/config/schema.js';

/** The database tests connect to first (trust auth); override with `GATEWAY_TEST_POSTGRES_URL`. */
export const ADMIN_URL = process.env.GATEWAY_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

let reachable: Promise<boolean> | undefined;

/**
 * True when PostgreSQL answers. Otherwise: in CI a failing assertion, elsewhere a skipped test whose
 * name says why; the caller then returns.
 */
export async function requirePostgres(t: Test): Promise<boolean> {
  reachable ??= sql(ADMIN_URL, 'SELECT 1').then(
    () => true,
    () => false,
  );
  if (await reachable) return true;
  const where = new URL(ADMIN_URL).host;
  if (process.env.CI === 'true') {
    t.fail(`PostgreSQL is not reachable at ${where}, and CI requires these tests to run`);
  } else {
    t.comment(`PostgreSQL is not reachable at ${where}: the PostgreSQL tests are skipped`);
    t.skip(`PostgreSQL is not reachable at ${where}`, () => undefined);
  }
  return false;
}

/** Runs one statement on a connection of its own. */
export async function sql<R extends pg.QueryResultRow = pg.QueryResultRow>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<R[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/**
 * Another session on `url` that has begun a transaction and run `statement` (a row or table lock):
 * what a concurrent writer holds. Closed when `t` ends; `ROLLBACK` it to let the waiters go.
 */
export async function holdLock(t: Test, url: string, statement: string): Promise<pg.Client> {
  const holder = new pg.Client({ connectionString: url });
  holder.on('error', () => undefined);
  await holder.connect();
  t.teardown(() => holder.end());
  await holder.query('BEGIN');
  await holder.query(statement);
  return holder;
}

const unique = (prefix: string) => `${prefix}_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;

/** `url` with its database replaced by `name`. */
export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * A new, empty database (owned by `owner` when given), dropped (its connections cut) when `t` ends;
 * resolves to its URL.
 */
export async function createDatabase(t: Test, owner?: string): Promise<string> {
  const name = unique('gw_test');
  await sql(ADMIN_URL, `CREATE DATABASE ${name}${owner === undefined ? '' : ` OWNER ${owner}`}`);
  t.teardown(() => sql(ADMIN_URL, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  return withDatabase(ADMIN_URL, name);
}

/**
 * A new role that may log in and is no superuser (connection limits hold for it), dropped when `t`
 * ends: create it before the objects it owns, whose teardowns then run first.
 */
export async function createRole(t: Test): Promise<string> {
  const name = unique('gw_role');
  await sql(ADMIN_URL, `CREATE ROLE ${name} LOGIN NOSUPERUSER`);
  t.teardown(() => sql(ADMIN_URL, `DROP ROLE IF EXISTS ${name}`));
  return name;
}

/** `url` logging in as `user` instead (no password: the test server trusts local connections). */
export function withUser(url: string, user: string): string {
  const u = new URL(url);
  u.username = user;
  u.password = '';
  return u.toString();
}

/** A new schema in the database at `url`, dropped when `t` ends; resolves to a URL that works in it. */
export async function createSchema(t: Test, url: string): Promise<string> {
  const name = unique('s');
  await sql(url, `CREATE SCHEMA ${name}`);
  t.teardown(() => sql(url, `DROP SCHEMA IF EXISTS ${name} CASCADE`));
  const u = new URL(url);
  u.searchParams.set('options', `-c search_path=${name}`);
  return u.toString();
}

/** Output of a command run in process. */
export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command function (`runImport`, `runMigrate`) in process, capturing what it writes. */
export async function runCli(
  run: (
    argv: string[],
    io: { stdout(s: string): void; stderr(s: string): void; env: NodeJS.ProcessEnv },
  ) => Promise<number>,
  argv: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<CommandResult> {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s), env });
  return { code, stdout, stderr };
}

/** Writes the given stores (local JSON formats) to a temporary folder and imports them into `url`. */
export async function importStores(
  t: Test,
  url: string,
  stores: { sso?: unknown; tags?: unknown },
): Promise<CommandResult> {
  const dir = mkdtempSync(path.join(tmpdir(), 'gateway-import-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const argv = ['--postgres', url];
  if (stores.sso !== undefined) {
    writeFileSync(path.join(dir, 'sso.json'), JSON.stringify(stores.sso));
    argv.push('--sso-providers', path.join(dir, 'sso.json'));
  }
  if (stores.tags !== undefined) {
    writeFileSync(path.join(dir, 'tags.json'), JSON.stringify(stores.tags));
    argv.push('--asset-group-tags', path.join(dir, 'tags.json'));
  }
  const result = await runCli(runImport, argv);
  if (result.code !== 0) throw new Error(`import failed: ${result.stderr}`);
  return result;
}

/** A TCP proxy in front of PostgreSQL that a test can stop (cutting every connection) and start again. */
export interface Proxy {
  readonly port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops carrying bytes either way on every connection, the connections left open (a silent database). */
  freeze(): void;
  /** Carries them again, what was held included. */
  thaw(): void;
}

/** Starts a proxy on a free port forwarding to the host and port of `url`; closed when `t` ends. */
export async function startProxy(t: Test, url: string): Promise<Proxy> {
  const target = new URL(url);
  const sockets = new Set<Socket>();
  let frozen = false;
  const server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    if (frozen) for (const s of [client, upstream]) s.pause();
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  const port = (server.address() as AddressInfo).port;
  const stop = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of sockets) s.destroy();
    await closed;
  };
  t.teardown(() => (server.listening ? stop() : undefined));
  return {
    port,
    stop,
    start: () => listen(port),
    freeze() {
      frozen = true;
      for (const s of sockets) s.pause();
    },
    thaw() {
      frozen = false;
      for (const s of sockets) s.resume();
    },
  };
}

/** `url` pointing at `port` on 127.0.0.1 instead (a proxy, or a port where nothing listens). */
export function withPort(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}

/** The validated `type: postgres` backend configuration for `url`, with `over` applied. */
export function postgresConfig(url: string, over: Record<string, unknown> = {}): PostgresConfig {
  const parsed = configSchema.shape.backends.shape.sso_providers.parse({
    type: 'postgres',
    url,
    pool_size: 4,
    ...over,
  });
  if (parsed.type !== 'postgres') throw new Error('not a postgres configuration');
  return parsed;
}
