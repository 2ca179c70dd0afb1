/**
 * The gateway's own schema, as numbered migrations applied in order and recorded in
 * `gateway_schema_migrations`. They run in one transaction under a transaction-scoped advisory
 * lock, so replicas that start together migrate once: the others wait, then find nothing to do.
 * Migrations only ever add, so an older gateway keeps working on a newer schema during a rolling
 * upgrade. The tables live in the connection's `search_path` (the URL may set it).
 */
import type { ClientBase } from 'pg';
import { TOKENS_SQL } from '../tokens/schema.js';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** Every migration, oldest first. Never edit one that has shipped: add the next. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'sso providers, their SAML data and roles',
    sql: `
      CREATE TABLE gateway_settings (
        key text PRIMARY KEY,
        value jsonb NOT NULL
      );
      CREATE TABLE roles (
        id integer PRIMARY KEY CHECK (id > 0)
      );
      -- The provider the API path names (sso_provider_id), with its auto-provision configuration.
      CREATE TABLE sso_providers (
        id integer PRIMARY KEY,
        auto_provision_enabled boolean NOT NULL,
        auto_provision_default_role_id integer NOT NULL,
        auto_provision_role_provision boolean NOT NULL
      );
      -- The SAML record: the API's wire shape; id is its own, sso_provider_id links the provider.
      CREATE TABLE saml_providers (
        id integer PRIMARY KEY,
        sso_provider_id integer REFERENCES sso_providers (id) ON DELETE SET NULL,
        name text NOT NULL,
        display_name text NOT NULL,
        idp_issuer_uri text NOT NULL,
        idp_sso_uri text NOT NULL,
        metadata_xml text NOT NULL,
        principal_attribute_mappings text[] NOT NULL,
        sp_issuer_uri text NOT NULL,
        sp_sso_uri text NOT NULL,
        sp_metadata_uri text NOT NULL,
        sp_acs_uri text NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        deleted_at timestamptz,
        -- Deferred, so that an import may move a provider from one record to another.
        CONSTRAINT saml_providers_sso_provider_id_key UNIQUE (sso_provider_id) DEFERRABLE INITIALLY DEFERRED
      );`,
  },
  {
    version: 2,
    name: 'asset group tags, selectors with seeds, members and their links',
    sql: `
      CREATE TABLE asset_group_tags (
        id integer PRIMARY KEY,
        name text NOT NULL
      );
      CREATE TABLE asset_group_tag_selectors (
        id integer PRIMARY KEY,
        asset_group_tag_id integer NOT NULL REFERENCES asset_group_tags (id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL,
        created_by text NOT NULL,
        updated_at timestamptz NOT NULL,
        updated_by text NOT NULL,
        disabled_at timestamptz,
        disabled_by text,
        name text NOT NULL,
        description text NOT NULL,
        is_default boolean NOT NULL,
        allow_disable boolean NOT NULL
      );
      CREATE INDEX asset_group_tag_selectors_tag_idx ON asset_group_tag_selectors (asset_group_tag_id, id);
      CREATE TABLE asset_group_tag_selector_seeds (
        selector_id integer NOT NULL REFERENCES asset_group_tag_selectors (id) ON DELETE CASCADE,
        position integer NOT NULL,
        value text NOT NULL,
        PRIMARY KEY (selector_id, position)
      );
      CREATE TABLE asset_group_members (
        id integer PRIMARY KEY,
        object_id text NOT NULL,
        environment_id text NOT NULL,
        primary_kind text NOT NULL,
        name text NOT NULL,
        properties jsonb NOT NULL,
        source bigint NOT NULL
      );
      CREATE TABLE asset_group_tag_selector_members (
        selector_id integer NOT NULL REFERENCES asset_group_tag_selectors (id) ON DELETE CASCADE,
        member_id integer NOT NULL REFERENCES asset_group_members (id) ON DELETE CASCADE,
        PRIMARY KEY (selector_id, member_id)
      );
      -- The member look-up starts from the member: this index makes it an index scan.
      CREATE INDEX asset_group_tag_selector_members_member_idx
        ON asset_group_tag_selector_members (member_id, selector_id);`,
  },
  {
    version: 3,
    name: 'signed-request tokens, their keys sealed, changes notified',
    sql: TOKENS_SQL,
  },
];

/** The version the code expects. */
export const LATEST_VERSION = MIGRATIONS.reduce((v, m) => Math.max(v, m.version), 0);

/** A fixed key for `pg_advisory_xact_lock`: the gateway's migrations, in any database. */
const LOCK_KEY = 0x6277_6d67; // "bwmg"

const TABLE = `CREATE TABLE IF NOT EXISTS gateway_schema_migrations (
  version integer PRIMARY KEY,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
)`;

/**
 * Applies the migrations `client`'s database lacks, all in one transaction (DDL is transactional in
 * PostgreSQL: a failure leaves the schema as it was). Resolves with the versions applied now.
 */
export async function migrate(client: ClientBase): Promise<number[]> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
    await client.query(TABLE);
    const { rows } = await client.query<{ version: number }>('SELECT version FROM gateway_schema_migrations');
    const done = new Set(rows.map((r) => r.version));
    const applied: number[] = [];
    for (const m of MIGRATIONS) {
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
export async function checkSchema(client: ClientBase): Promise<void> {
  const version = await schemaVersion(client);
  if (version < LATEST_VERSION) {
    throw new Error(
      `the database schema is at version ${version}, this gateway needs ${LATEST_VERSION}: ` +
        'run `gateway migrate --postgres URL` (or set migrate: true)',
    );
  }
}
