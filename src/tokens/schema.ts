/**
 * The token table and its triggers (migration 3 of the gateway's schema, see
 * `postgres/migrations.ts`), and the one query every reader of it shares.
 *
 * A key is never stored in the clear: `sealed_key` holds it under AES-256-GCM (see `seal.ts`), and
 * `key_id` names the encryption key that sealed it. Revoking sets both to NULL. Every change of what
 * a gateway holds (not `last_used_at`) is announced by `pg_notify` on a channel named after the
 * table's schema, with only `{"op", "id"}`: the replicas then read the row themselves.
 */
import type { Migration } from '../postgres/migrations.js';

/** The columns a gateway reads; `changed_at` says when the row last changed (for the notify lag). */
export const TOKEN_COLUMNS = `id::text AS id, name, subject, permissions, created_at, expires_at, rotated_at,
  revoked_at, last_used_at, key_id, sealed_key, changed_at`;

/** A row of `gateway_tokens` as node-postgres returns it. */
export interface TokenRow {
  id: string;
  name: string | null;
  subject: string;
  permissions: string[];
  created_at: Date;
  expires_at: Date | null;
  rotated_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  key_id: string | null;
  sealed_key: Buffer | null;
  changed_at: Date;
}

/** The columns whose change a gateway must learn of: every one but `last_used_at` and `changed_at`. */
const WATCHED =
  'id, name, subject, permissions, created_at, expires_at, rotated_at, revoked_at, key_id, sealed_key';

/** The table, `changed_at` kept by a trigger, and the notification trigger. */
const TOKENS_SQL = `
  CREATE TABLE gateway_tokens (
    id uuid PRIMARY KEY,
    name text,
    subject text NOT NULL,
    permissions text[] NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz,
    rotated_at timestamptz,
    revoked_at timestamptz,
    last_used_at timestamptz,
    -- Which encryption key sealed the key (see the README); both NULL once revoked.
    key_id text,
    sealed_key bytea,
    changed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT gateway_tokens_sealed CHECK ((key_id IS NULL) = (sealed_key IS NULL)),
    CONSTRAINT gateway_tokens_key_or_revoked CHECK (sealed_key IS NOT NULL OR revoked_at IS NOT NULL)
  );

  CREATE FUNCTION gateway_tokens_touch() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    NEW.changed_at := clock_timestamp();
    RETURN NEW;
  END $$;
  CREATE TRIGGER gateway_tokens_touch BEFORE INSERT OR UPDATE OF ${WATCHED} ON gateway_tokens
    FOR EACH ROW EXECUTE FUNCTION gateway_tokens_touch();

  -- The channel is the schema's name, so that gateways in other schemas of the database hear nothing.
  CREATE FUNCTION gateway_tokens_notify() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE
    channel text := TG_TABLE_SCHEMA;
  BEGIN
    IF TG_OP = 'TRUNCATE' THEN
      PERFORM pg_notify(channel, json_build_object('op', 'truncate', 'id', NULL)::text);
    ELSIF TG_OP = 'INSERT' THEN
      PERFORM pg_notify(channel, json_build_object('op', 'create', 'id', NEW.id)::text);
    ELSIF TG_OP = 'DELETE' THEN
      PERFORM pg_notify(channel, json_build_object('op', 'delete', 'id', OLD.id)::text);
    ELSIF NEW.id <> OLD.id THEN
      PERFORM pg_notify(channel, json_build_object('op', 'delete', 'id', OLD.id)::text);
      PERFORM pg_notify(channel, json_build_object('op', 'create', 'id', NEW.id)::text);
    ELSIF NEW.revoked_at IS NOT NULL AND OLD.revoked_at IS NULL THEN
      PERFORM pg_notify(channel, json_build_object('op', 'revoke', 'id', NEW.id)::text);
    ELSIF NEW.rotated_at IS DISTINCT FROM OLD.rotated_at THEN
      PERFORM pg_notify(channel, json_build_object('op', 'rotate', 'id', NEW.id)::text);
    ELSE
      PERFORM pg_notify(channel, json_build_object('op', 'update', 'id', NEW.id)::text);
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER gateway_tokens_notify AFTER INSERT OR DELETE OR UPDATE OF ${WATCHED} ON gateway_tokens
    FOR EACH ROW EXECUTE FUNCTION gateway_tokens_notify();
  CREATE TRIGGER gateway_tokens_truncate AFTER TRUNCATE ON gateway_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION gateway_tokens_notify();`;

/** The token store's migrations, registered in the gateway's schema (`backends/postgres/schema.ts`). */
export const TOKEN_MIGRATIONS: readonly Migration[] = [
  { version: 3, name: 'signed-request tokens, their keys sealed, changes notified', sql: TOKENS_SQL },
];

/** The schema that holds `gateway_tokens` for this connection: the channel its changes go on. */
export const TOKENS_SCHEMA_SQL = `SELECT n.nspname AS schema FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass('gateway_tokens')`;
