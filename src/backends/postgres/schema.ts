/**
 * The postgres backends' tables (migrations 1 and 2), and the gateway's whole schema: these, the
 * token store's (`tokens/schema.ts`) and the audit trail's (`audit/schema.ts`), in one sequence. It
 * is put together here, the lowest layer that sees every owner; the token store and the audit
 * trail, which sit below, are handed it.
 */
import { AUDIT_MIGRATIONS } from '../../audit/schema.js';
import { type Migration, schemaOf } from '../../postgres/migrations.js';
import { TOKEN_MIGRATIONS } from '../../tokens/schema.js';

/** The SSO providers' and the asset group tags' tables. */
export const BACKEND_MIGRATIONS: readonly Migration[] = [
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
];

/** Every migration of the gateway, whoever owns its tables. */
export const GATEWAY_SCHEMA = schemaOf(BACKEND_MIGRATIONS, TOKEN_MIGRATIONS, AUDIT_MIGRATIONS);
