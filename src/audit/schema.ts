/**
 * The audit trail's table, `audit_logs` (the service's name), as a migration of the gateway's one
 * schema (registered in `backends/postgres/schema.ts`, applied by `postgres/migrations.ts`). Never
 * edit a shipped migration: add one.
 */
import type { Migration } from '../postgres/migrations.js';

/**
 * One append in one round trip: under a transaction-scoped advisory lock on the table (so replicas
 * keep one chain), the next id after the head, a time never before the head's, and the hash of the
 * head's hash and the entry's canonical JSON, which the gateway sends in three parts around the
 * time and the id it cannot know. VOLATILE, so the head is read after the lock is held (each
 * statement of a volatile function takes a new snapshot in READ COMMITTED).
 */
const APPEND_SQL = `
      CREATE OR REPLACE FUNCTION audit_append(
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

/**
 * The audit trail's migrations. `IF NOT EXISTS` and `OR REPLACE`: a database where an earlier build
 * made the same table by itself takes this migration as it stands.
 */
export const AUDIT_MIGRATIONS: readonly Migration[] = [
  {
    version: 4,
    name: 'audit trail entries, hash-chained, appended under one lock',
    sql: `
      CREATE TABLE IF NOT EXISTS audit_logs (
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
        -- SHA-256 of the previous entry's hash and this entry's canonical JSON (docs/audit.md).
        hash text NOT NULL
      );
      -- The read API's default order, and its time window.
      CREATE INDEX IF NOT EXISTS audit_logs_created_at_idx ON audit_logs (created_at, id);
      ${APPEND_SQL}`,
  },
];
