/**
 * The audit trail's table, `audit_logs` (the service's name), as numbered migrations applied in order
 * and recorded in `gateway_audit_migrations`, in one transaction under a transaction-scoped advisory
 * lock, so replicas that start together migrate once. A separate list from the backends' so that it
 * can be registered with the shared runner as it stands; never edit a shipped migration: add one.
 */
import type { ClientBase } from 'pg';

/**
 * One append in one round trip: under a transaction-scoped advisory lock on the table (so replicas
 * keep one chain), the next id after the head, a time never before the head's, and the hash of the
 * head's hash and the entry's canonical JSON, which the gateway sends in three parts around the
 * time and the id it cannot know. VOLATILE, so the head is read after the lock is held (each
 * statement of a volatile function takes a new snapshot in READ COMMITTED).
 */
const APPEND_SQL = `
      CREATE FUNCTION audit_append(
        p_time timestamptz, p_parts text[], p_actor_id text, p_actor_name text, p_actor_email text,
        p_action text, p_fields jsonb, p_request_id text, p_source_ip_address text, p_status text,
        p_commit_id text
      ) RETURNS TABLE (entry_id bigint, entry_time text, entry_hash text)
      LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        head_id bigint;
        head_hash text;
        head_time timestamptz;
        t timestamptz;
      BEGIN
        PERFORM pg_advisory_xact_lock((x'62776175'::int8 << 32) | 'audit_logs'::regclass::oid::int8);
        SELECT a.id, a.hash, a.created_at INTO head_id, head_hash, head_time
          FROM audit_logs a ORDER BY a.id DESC LIMIT 1;
        entry_id := coalesce(head_id, 0) + 1;
        t := greatest(date_trunc('milliseconds', p_time), head_time);
        entry_time := to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
        entry_hash := encode(sha256(convert_to(coalesce(head_hash, repeat('0', 64))
          || p_parts[1] || entry_time || p_parts[2] || entry_id::text || p_parts[3], 'UTF8')), 'hex');
        INSERT INTO audit_logs (id, created_at, actor_id, actor_name, actor_email, action, fields,
                                request_id, source_ip_address, status, commit_id, hash)
        VALUES (entry_id, t, p_actor_id, p_actor_name, p_actor_email, p_action, p_fields, p_request_id,
                p_source_ip_address, p_status, p_commit_id, entry_hash);
        RETURN NEXT;
      END $$;`;

/** One migration of the audit schema. */
export interface AuditMigration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** Every audit migration, oldest first. */
export const AUDIT_MIGRATIONS: readonly AuditMigration[] = [
  {
    version: 1,
    name: 'audit trail entries, hash-chained',
    sql: `
      CREATE TABLE audit_logs (
        id bigint PRIMARY KEY CHECK (id > 0),
        created_at timestamptz NOT NULL,
        actor_id text NOT NULL,
        actor_name text NOT NULL,
        actor_email text NOT NULL,
        action text NOT NULL,
        fields jsonb NOT NULL,
        request_id text NOT NULL,
        source_ip_address text NOT NULL,
        status text NOT NULL,
        commit_id text NOT NULL,
        -- SHA-256 of the previous entry's hash and this entry's canonical JSON (see the README).
        hash text NOT NULL
      );
      -- The read API's default order, and its time window.
      CREATE INDEX audit_logs_created_at_idx ON audit_logs (created_at, id);
      ${APPEND_SQL}`,
  },
];

/** The version the code expects. */
export const AUDIT_SCHEMA_VERSION = AUDIT_MIGRATIONS.reduce((v, m) => Math.max(v, m.version), 0);

/** A fixed key for `pg_advisory_xact_lock`: the audit migrations, in any database. */
const LOCK_KEY = 0x6277_6175; // "bwau"

const TABLE = `CREATE TABLE IF NOT EXISTS gateway_audit_migrations (
  version integer PRIMARY KEY,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
)`;

/** Applies the audit migrations `client`'s database lacks, in one transaction; resolves with their versions. */
export async function migrateAudit(client: ClientBase): Promise<number[]> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
    await client.query(TABLE);
    const { rows } = await client.query<{ version: number }>('SELECT version FROM gateway_audit_migrations');
    const done = new Set(rows.map((r) => r.version));
    const applied: number[] = [];
    for (const m of AUDIT_MIGRATIONS) {
      if (done.has(m.version)) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO gateway_audit_migrations (version, name) VALUES ($1, $2)', [
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

/** Throws, saying what to do, unless the audit schema is at the version this code expects. */
export async function checkAuditSchema(client: ClientBase): Promise<void> {
  const { rows } = await client.query<{ exists: boolean }>(
    "SELECT to_regclass('gateway_audit_migrations') IS NOT NULL AS exists",
  );
  let version = 0;
  if (rows[0]?.exists === true) {
    const max = await client.query<{ version: number }>(
      'SELECT coalesce(max(version), 0) AS version FROM gateway_audit_migrations',
    );
    version = max.rows[0]?.version ?? 0;
  }
  if (version < AUDIT_SCHEMA_VERSION) {
    throw new Error(
      `the audit schema is at version ${version}, this gateway needs ${AUDIT_SCHEMA_VERSION}: ` +
        'run the gateway once with migrate: true',
    );
  }
}
