/**
 * The SSO providers store on PostgreSQL, for several gateway replicas. An update is one transaction
 * that locks the provider's rows (`SELECT … FOR UPDATE`), so concurrent PATCHes, from any process,
 * apply one after the other and never lose one another; `COMMIT` is the one commit point.
 */
import type { BackendType } from '../backend-type.js';
import type { BackendCall } from '../backend-call.js';
import { type PostgresConfig, postgresBackendShape } from '../postgres/config.js';
import { type PostgresPool, type Query, sqlTimestamp } from '../postgres/index.js';
import type { SsoProvider, SsoProviderPatch, SsoProviderUpdate, SsoProvidersStore } from './backend.js';
import { changesOf } from './patch.js';

const MAX_ID = 2_147_483_647;
const NOT_DELETED = '0001-01-01T00:00:00Z';

/** A provider as its rows hold it: the wire fields, the metadata and the auto-provision settings. */
interface Row {
  id: number;
  created_at: string;
  updated_at: string;
  name: string;
  display_name: string;
  idp_issuer_uri: string;
  idp_sso_uri: string;
  metadata_xml: string;
  principal_attribute_mappings: string[];
  sp_issuer_uri: string;
  sp_sso_uri: string;
  sp_metadata_uri: string;
  sp_acs_uri: string;
  sso_provider_id: number;
  enabled: boolean;
  default_role_id: number;
  role_provision: boolean;
}

/**
 * An addressable provider: named by the path's id and not deleted (as the local store decides), so
 * its `deleted_at` is never valid. `metadata_xml` (up to a MiB) is read only by an update.
 */
const select = (metadata: boolean) => `
  SELECT s.id, ${sqlTimestamp('s.created_at')} AS created_at, ${sqlTimestamp('s.updated_at')} AS updated_at,
         s.name, s.display_name, s.idp_issuer_uri, s.idp_sso_uri,${metadata ? ' s.metadata_xml,' : ''}
         s.principal_attribute_mappings, s.sp_issuer_uri, s.sp_sso_uri, s.sp_metadata_uri, s.sp_acs_uri,
         s.sso_provider_id, p.auto_provision_enabled AS enabled,
         p.auto_provision_default_role_id AS default_role_id,
         p.auto_provision_role_provision AS role_provision
    FROM saml_providers s JOIN sso_providers p ON p.id = s.sso_provider_id
   WHERE s.sso_provider_id = $1 AND s.deleted_at IS NULL`;
const GET = select(false);
const LOCK = `${select(true)} FOR UPDATE OF s, p`;

const ROLE_EXISTS = `
  SELECT EXISTS (SELECT 1 FROM roles WHERE id = $1)
      OR coalesce((SELECT value = 'true'::jsonb FROM gateway_settings WHERE key = 'sso_providers.any_role'),
                  false) AS ok`;

const UPDATE_SAML = `
  UPDATE saml_providers
     SET name = $2, display_name = $3, idp_issuer_uri = $4, idp_sso_uri = $5, metadata_xml = $6,
         updated_at = statement_timestamp()
   WHERE id = $1
  RETURNING ${sqlTimestamp('updated_at')} AS updated_at`;

const UPDATE_AUTO_PROVISION = `
  UPDATE sso_providers
     SET auto_provision_enabled = $2, auto_provision_default_role_id = $3, auto_provision_role_provision = $4
   WHERE id = $1`;

/** `{type: postgres, url, …}` for the SSO providers. */
export const postgresSsoProviders: BackendType<PostgresConfig, SsoProvidersStore> = {
  config: postgresBackendShape,
  open: async (config, deps) => createPostgresSsoProviders(await deps.database(config)),
};

/** The backend on `db`; nothing is read until a request comes. */
export function createPostgresSsoProviders(db: PostgresPool): SsoProvidersStore {
  const timed = <T>(operation: string, call: BackendCall, work: () => Promise<T>): Promise<T> =>
    db.timed(`sso_providers.${operation}`, call, work);

  return {
    get: (ssoProviderId, call) =>
      timed('get', call, async () => {
        const { signal } = call;
        const [row] = await db.query<Row>(GET, [ssoProviderId], signal);
        return row && toWire(row);
      }),

    roleExists: (roleId, call) =>
      timed('role_exists', call, async () => {
        const { signal } = call;
        if (!Number.isInteger(roleId) || roleId < 1 || roleId > MAX_ID) return false;
        const [row] = await db.query<{ ok: boolean }>(ROLE_EXISTS, [roleId], signal);
        return row?.ok === true;
      }),

    update: (ssoProviderId, patch, call, hooks) =>
      timed('update', call, () =>
        db.transaction(call.signal, async (query) => {
          const result = await apply(query, ssoProviderId, patch);
          // The last statements before COMMIT: they commit with the change, or neither does.
          if (result !== undefined && hooks?.beforeCommit) await hooks.beforeCommit(result, query);
          return result;
        }),
      ),

    // The pool is shared and closed by its owner (backends/index.ts).
    async close() {},
  };
}

/** Locks the provider's rows, applies `patch`, and writes only when something changed. */
async function apply(
  query: Query,
  ssoProviderId: number,
  patch: SsoProviderPatch,
): Promise<SsoProviderUpdate | undefined> {
  const [current] = await query<Row>(LOCK, [ssoProviderId]);
  if (!current) return undefined;
  const { next, changed } = applyPatch(current, patch);
  if (changed.length === 0) return { provider: toWire(current), changed };
  const [written] = await query<{ updated_at: string }>(UPDATE_SAML, [
    next.id,
    next.name,
    next.display_name,
    next.idp_issuer_uri,
    next.idp_sso_uri,
    next.metadata_xml,
  ]);
  if (changed.some((field) => field.startsWith('config.'))) {
    await query(UPDATE_AUTO_PROVISION, [
      next.sso_provider_id,
      next.enabled,
      next.default_role_id,
      next.role_provision,
    ]);
  }
  next.updated_at = (written as { updated_at: string }).updated_at;
  return { provider: toWire(next), changed };
}

/** The row after `patch`, and the fields whose value changed, named and ordered as the local store does. */
function applyPatch(current: Row, patch: SsoProviderPatch): { next: Row; changed: string[] } {
  const { enabled, default_role_id, role_provision } = current;
  const changes = changesOf(
    { ...current, auto_provision: { enabled, default_role_id, role_provision } },
    patch,
  );
  const next = { ...current };
  // The auto-provision settings are columns of the row, beside the others.
  for (const change of changes) (next as Record<string, unknown>)[change.key] = change.value;
  return { next, changed: changes.map((c) => c.field) };
}

/** The API's view of the rows: `config.auto_provision`, never `metadata_xml`. */
function toWire(r: Row): SsoProvider {
  return {
    id: r.id,
    created_at: r.created_at,
    updated_at: r.updated_at,
    deleted_at: { time: NOT_DELETED, valid: false },
    name: r.name,
    display_name: r.display_name,
    idp_issuer_uri: r.idp_issuer_uri,
    idp_sso_uri: r.idp_sso_uri,
    principal_attribute_mappings: [...r.principal_attribute_mappings],
    sp_issuer_uri: r.sp_issuer_uri,
    sp_sso_uri: r.sp_sso_uri,
    sp_metadata_uri: r.sp_metadata_uri,
    sp_acs_uri: r.sp_acs_uri,
    sso_provider_id: { int32: r.sso_provider_id, valid: true },
    config: {
      auto_provision: {
        enabled: r.enabled,
        default_role_id: r.default_role_id,
        role_provision: r.role_provision,
      },
    },
  };
}
