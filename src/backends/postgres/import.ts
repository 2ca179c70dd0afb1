/**
 * Loads the local stores' JSON files (contract §1) into the database, for `gateway import`: each
 * store's tables are made to hold exactly what its file holds, in one transaction, writing only the
 * difference. Running it again with the same files changes nothing.
 *
 * What the local stores accept is accepted, with the same meaning: the last of two tags or members
 * with one id wins, a selector's member ids that name no member are ignored, a file without `roles`
 * lets `default_role_id` name any positive id. What a table cannot hold is refused with the reason:
 * two SAML records with one `id`, one selector id under two tags, a selector listed under a tag
 * other than its `asset_group_tag_id`.
 */
import type { ClientBase } from 'pg';
import type { z } from 'zod';
import type { assetGroupTagsFileSchema } from '../asset-group-tags/local.js';
import type { ssoProvidersFileSchema } from '../sso-providers/local.js';
import { deleteMissing, type SyncCounts, type TableSpec, upsertRows } from './sync.js';

type SsoFile = z.output<typeof ssoProvidersFileSchema>;
type TagsFile = z.output<typeof assetGroupTagsFileSchema>;

/** A file that the local store reads but the tables cannot hold. */
export class ImportError extends Error {}

/** Rows for one table. */
type Rows = Array<Record<string, unknown>>;

const ROLES: TableSpec = { table: 'roles', key: ['id'], columns: [{ name: 'id', type: 'integer' }] };
const SSO: TableSpec = {
  table: 'sso_providers',
  key: ['id'],
  columns: [
    { name: 'id', type: 'integer' },
    { name: 'auto_provision_enabled', type: 'boolean' },
    { name: 'auto_provision_default_role_id', type: 'integer' },
    { name: 'auto_provision_role_provision', type: 'boolean' },
  ],
};
const text = (...names: string[]) => names.map((name) => ({ name, type: 'text' as const }));
const time = (...names: string[]) => names.map((name) => ({ name, type: 'timestamptz' as const }));
const SAML: TableSpec = {
  table: 'saml_providers',
  key: ['id'],
  columns: [
    { name: 'id', type: 'integer' },
    { name: 'sso_provider_id', type: 'integer' },
    ...text('name', 'display_name', 'idp_issuer_uri', 'idp_sso_uri', 'metadata_xml'),
    { name: 'principal_attribute_mappings', type: 'text[]' },
    ...text('sp_issuer_uri', 'sp_sso_uri', 'sp_metadata_uri', 'sp_acs_uri'),
    ...time('created_at', 'updated_at', 'deleted_at'),
  ],
};
const TAGS: TableSpec = {
  table: 'asset_group_tags',
  key: ['id'],
  columns: [{ name: 'id', type: 'integer' }, ...text('name')],
};
const SELECTORS: TableSpec = {
  table: 'asset_group_tag_selectors',
  key: ['id'],
  columns: [
    { name: 'id', type: 'integer' },
    { name: 'asset_group_tag_id', type: 'integer' },
    ...time('created_at'),
    ...text('created_by'),
    ...time('updated_at'),
    ...text('updated_by'),
    ...time('disabled_at'),
    ...text('disabled_by', 'name', 'description'),
    { name: 'is_default', type: 'boolean' },
    { name: 'allow_disable', type: 'boolean' },
  ],
};
const SEEDS: TableSpec = {
  table: 'asset_group_tag_selector_seeds',
  key: ['selector_id', 'position'],
  columns: [
    { name: 'selector_id', type: 'integer' },
    { name: 'position', type: 'integer' },
    ...text('value'),
  ],
};
const MEMBERS: TableSpec = {
  table: 'asset_group_members',
  key: ['id'],
  columns: [
    { name: 'id', type: 'integer' },
    ...text('object_id', 'environment_id', 'primary_kind', 'name'),
    { name: 'properties', type: 'jsonb' },
    { name: 'source', type: 'bigint' },
  ],
};
const LINKS: TableSpec = {
  table: 'asset_group_tag_selector_members',
  key: ['selector_id', 'member_id'],
  columns: [
    { name: 'selector_id', type: 'integer' },
    { name: 'member_id', type: 'integer' },
  ],
};

/** What an import did, per table. */
export type ImportReport = Record<string, SyncCounts>;

/** The SSO providers file's rows: providers with their SAML records, and roles. */
export function ssoRows(file: SsoFile): Map<TableSpec, Rows> {
  const ids = new Set<number>();
  const sso: Rows = [];
  const saml: Rows = [];
  for (const p of file.providers) {
    if (ids.has(p.id)) throw new ImportError(`two providers have the id ${p.id}`);
    ids.add(p.id);
    // A record without a valid sso_provider_id is never served; its auto-provision has nowhere to live.
    const ssoId = p.sso_provider_id.valid ? p.sso_provider_id.int32 : null;
    if (ssoId !== null) {
      const a = p.auto_provision;
      sso.push({
        id: ssoId,
        auto_provision_enabled: a.enabled,
        auto_provision_default_role_id: a.default_role_id,
        auto_provision_role_provision: a.role_provision,
      });
    }
    saml.push({ ...p, sso_provider_id: ssoId, deleted_at: p.deleted_at.valid ? p.deleted_at.time : null });
  }
  const roles = [...new Set(file.roles ?? [])].map((id) => ({ id }));
  return new Map([
    [ROLES, roles],
    [SSO, sso],
    [SAML, saml],
  ]);
}

/** The asset group tags file's rows: tags, selectors, seeds, members and the links between them. */
export function tagRows(file: TagsFile): Map<TableSpec, Rows> {
  const members = new Map(file.members.map((m) => [m.id, m]));
  const tags = new Map(file.tags.map((t) => [t.id, t]));
  const selectors: Rows = [];
  const seeds: Rows = [];
  const links: Rows = [];
  const owner = new Map<number, number>();
  for (const tag of tags.values()) {
    for (const { members: covered, seeds: seedList, ...s } of tag.selectors) {
      if (s.asset_group_tag_id !== tag.id) {
        throw new ImportError(
          `selector ${s.id} is listed under tag ${tag.id} but names tag ${s.asset_group_tag_id}`,
        );
      }
      if (owner.has(s.id)) throw new ImportError(`selector ${s.id} appears twice`);
      owner.set(s.id, tag.id);
      selectors.push(s);
      seedList.forEach((seed, position) => seeds.push({ selector_id: s.id, position, value: seed.value }));
      for (const memberId of new Set(covered)) {
        if (members.has(memberId)) links.push({ selector_id: s.id, member_id: memberId });
      }
    }
  }
  return new Map([
    [TAGS, [...tags.values()].map(({ id, name }) => ({ id, name }))],
    [SELECTORS, selectors],
    [SEEDS, seeds],
    [MEMBERS, [...members.values()]],
    [LINKS, links],
  ]);
}

/**
 * Writes `tables` (parents first) into the database on `client`, inside the caller's transaction:
 * new and changed rows first, in order, then the rows no longer there, children first.
 */
export async function syncTables(client: ClientBase, tables: Map<TableSpec, Rows>): Promise<ImportReport> {
  const report: ImportReport = {};
  for (const [spec, rows] of tables) {
    report[spec.table] = { ...(await upsertRows(client, spec, rows)), deleted: 0 };
  }
  for (const spec of [...tables.keys()].reverse()) {
    (report[spec.table] as SyncCounts).deleted = await deleteMissing(client, spec);
  }
  return report;
}

/** Records whether `default_role_id` may name any positive id (a file without `roles`). */
export async function setAnyRole(client: ClientBase, anyRole: boolean): Promise<SyncCounts> {
  const { rows } = await client.query<{ inserted: boolean }>(
    `INSERT INTO gateway_settings AS t (key, value) VALUES ('sso_providers.any_role', $1::jsonb)
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value WHERE t.value <> EXCLUDED.value
     RETURNING (xmax = 0) AS inserted`,
    [JSON.stringify(anyRole)],
  );
  const inserted = rows.filter((r) => r.inserted).length;
  return { inserted, updated: rows.length - inserted, deleted: 0 };
}
