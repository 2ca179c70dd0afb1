/**
 * The asset group tags store on PostgreSQL. A member look-up is one statement that starts from the
 * member and follows the link table's `(member_id, selector_id)` index, so its cost does not grow
 * with the number of links; the covering selectors and their seeds are aggregated in the same
 * statement, ordered by id, in the wire shape.
 */
import type { BackendType } from '../backend-type.js';
import { type PostgresConfig, postgresBackendShape } from '../postgres/config.js';
import { type PostgresPool, sqlTimestamp } from '../postgres/index.js';
import type { AssetGroupTagsBackend, MemberWithSelectors, Selector } from './backend.js';

/** `$1` the tag, `$2` the member. One row when the member exists; `selectors` null when none covers it. */
export const MEMBER_QUERY = `
  SELECT m.id, m.object_id, m.environment_id, m.primary_kind, m.name, m.properties, m.source,
         (SELECT json_agg(json_build_object(
                   'id', s.id,
                   'asset_group_tag_id', s.asset_group_tag_id,
                   'created_at', ${sqlTimestamp('s.created_at')},
                   'created_by', s.created_by,
                   'updated_at', ${sqlTimestamp('s.updated_at')},
                   'updated_by', s.updated_by,
                   'disabled_at', ${sqlTimestamp('s.disabled_at')},
                   'disabled_by', s.disabled_by,
                   'name', s.name,
                   'description', s.description,
                   'is_default', s.is_default,
                   'allow_disable', s.allow_disable,
                   'seeds', (SELECT coalesce(json_agg(json_build_object('value', d.value) ORDER BY d.position),
                                             '[]'::json)
                               FROM asset_group_tag_selector_seeds d
                              WHERE d.selector_id = s.id)
                 ) ORDER BY s.id)
            FROM asset_group_tag_selector_members l
            JOIN asset_group_tag_selectors s ON s.id = l.selector_id
           WHERE l.member_id = m.id AND s.asset_group_tag_id = $1) AS selectors
    FROM asset_group_members m
   WHERE m.id = $2`;

interface Row {
  id: number;
  object_id: string;
  environment_id: string;
  primary_kind: string;
  name: string;
  properties: Record<string, unknown>;
  /** bigint, which pg hands out as text. */
  source: string;
  selectors: Selector[] | null;
}

/** `{type: postgres, url, …}` for the asset group tags. */
export const postgresAssetGroupTags: BackendType<PostgresConfig, AssetGroupTagsBackend> = {
  config: postgresBackendShape,
  open: async (config, deps) => createPostgresAssetGroupTags(await deps.database(config)),
};

/** The backend on `db`; nothing is read until a request comes. */
export function createPostgresAssetGroupTags(db: PostgresPool): AssetGroupTagsBackend {
  return {
    getMember(tagId, memberId, call): Promise<MemberWithSelectors | undefined> {
      return db.timed('asset_group_tags.get_member', call, async () => {
        const [row] = await db.query<Row>(MEMBER_QUERY, [tagId, memberId], call.signal);
        if (!row?.selectors) return undefined;
        return {
          id: row.id,
          object_id: row.object_id,
          environment_id: row.environment_id,
          primary_kind: row.primary_kind,
          name: row.name,
          properties: row.properties,
          source: Number(row.source),
          selectors: row.selectors,
        };
      });
    },
    // The pool is shared and closed by its owner (backends/index.ts).
    async close() {},
  };
}
