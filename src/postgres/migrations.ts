/**
 * The gateway's schema, as numbered migrations applied in order and recorded in
 * `gateway_schema_migrations`. They run in one transaction under a transaction-scoped advisory
 * lock, so replicas that start together migrate once: the others wait, then find nothing to do.
 * Migrations only ever add, so an older gateway keeps working on a newer schema during a rolling
 * upgrade. The tables live in the connection's `search_path` (the URL may set it).
 *
 * Each owner of tables defines its own migrations beside its code (`backends/postgres/schema.ts`,
 * `tokens/schema.ts`) and registers them in the one sequence with `schemaOf`; this runner knows
 * none of them.
 */
import type { ClientBase } from 'pg';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** Every owner's migrations in one sequence, oldest first, and the version it ends at. */
export interface Schema {
  readonly migrations: readonly Migration[];
  /** The version the code expects. */
  readonly latest: number;
}

/**
 * The schema made of `owners`' migrations. Never edit a migration that has shipped: add the next.
 * Throws when two owners claim one version (a mistake caught at start, not in a database).
 */
export function schemaOf(...owners: ReadonlyArray<readonly Migration[]>): Schema {
  const migrations = owners.flat().sort((a, b) => a.version - b.version);
  migrations.forEach((m, i) => {
    if (i > 0 && (migrations[i - 1] as Migration).version === m.version) {
      throw new Error(`migration ${m.version} is registered twice`);
    }
  });
  return Object.freeze({
    migrations: Object.freeze(migrations),
    latest: migrations.reduce((v, m) => Math.max(v, m.version), 0),
  });
}

/** A fixed key for `pg_advisory_xact_lock`: the gateway's migrations, in any database. */
const LOCK_KEY = 0x6277_6d67; // "bwmg"

const TABLE = `CREATE TABLE IF NOT EXISTS gateway_schema_migrations (
  version integer PRIMARY KEY,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
)`;

/**
 * Applies the migrations of `schema` that `client`'s database lacks, all in one transaction (DDL is transactional in
 * PostgreSQL: a failure leaves the schema as it was). Resolves with the versions applied now.
 */
export async function migrate(client: ClientBase, schema: Schema): Promise<number[]> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
    await client.query(TABLE);
    const { rows } = await client.query<{ version: number }>('SELECT version FROM gateway_schema_migrations');
    const done = new Set(rows.map((r) => r.version));
    const applied: number[] = [];
    for (const m of schema.migrations) {
      if (done.has(m.version)) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO gateway_schema_migrations (version, name) VALUES ($1, $2)', [
        m.version,
        m.name,
      ]);
      applied.push(m.version);
    }
    await client.query('COMMIT');
    return applied;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/** The highest applied version, 0 when the database was never migrated. */
export async function schemaVersion(client: ClientBase): Promise<number> {
  const { rows } = await client.query<{ exists: boolean }>(
    "SELECT to_regclass('gateway_schema_migrations') IS NOT NULL AS exists",
  );
  if (!(rows[0] as { exists: boolean }).exists) return 0;
  const max = await client.query<{ version: number }>(
    'SELECT coalesce(max(version), 0) AS version FROM gateway_schema_migrations',
  );
  return (max.rows[0] as { version: number }).version;
}

/** Throws, saying what to do, unless the schema is at least the version this code expects. */
export async function checkSchema(client: ClientBase, schema: Schema): Promise<void> {
  const version = await schemaVersion(client);
  if (version < schema.latest) {
    throw new Error(
      `the database schema is at version ${version}, this gateway needs ${schema.latest}: ` +
        'run `gateway migrate --postgres URL` (or set migrate: true)',
    );
  }
}
