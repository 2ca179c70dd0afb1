/**
 * The asset group tags file (GATEWAY.md §1), read once at start and indexed so that a member look-up
 * is two map reads and a pre-sorted list, with each member's response bytes built once.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { type BackendType, type LocalConfig, localBackendShape } from '../backend-type.js';
import type { AssetGroupTagsBackend, Member, MemberWithSelectors, Selector } from './backend.js';

const id = z.number().int().min(1).max(2_147_483_647);
const selector = z.strictObject({
  id,
  asset_group_tag_id: id,
  created_at: z.string(),
  created_by: z.string(),
  updated_at: z.string(),
  updated_by: z.string(),
  disabled_at: z.string().nullable().default(null),
  disabled_by: z.string().nullable().default(null),
  name: z.string(),
  description: z.string(),
  is_default: z.boolean(),
  allow_disable: z.boolean(),
  seeds: z.array(z.strictObject({ value: z.string() })),
  members: z.array(id),
});
const member = z.strictObject({
  id,
  object_id: z.string(),
  environment_id: z.string(),
  primary_kind: z.string(),
  name: z.string(),
  properties: z.record(z.string(), z.unknown()),
  source: z.number().int(),
});
const file = z.strictObject({
  tags: z.array(z.strictObject({ id, name: z.string(), selectors: z.array(selector) })),
  members: z.array(member),
});

/** `{type: local, path: <file.json>}` for the asset group tags. */
export const localAssetGroupTags: BackendType<LocalConfig, AssetGroupTagsBackend> = {
  config: localBackendShape,
  open: (config) => createLocalAssetGroupTags(config.path),
};

/** Loads `path` and serves look-ups from memory. Throws at start when the file is missing or malformed. */
export async function createLocalAssetGroupTags(path: string): Promise<AssetGroupTagsBackend> {
  let parsed: z.infer<typeof file>;
  try {
    parsed = file.parse(JSON.parse(await readFile(path, 'utf8')));
  } catch (err) {
    const why = err instanceof z.ZodError ? z.prettifyError(err) : (err as Error).message;
    throw new Error(`asset group tags file ${path} cannot be used: ${why}`);
  }
  const members = new Map<number, Member>(parsed.members.map((m) => [m.id, m]));
  // tag id → member id → the covering selectors, ordered by id (storage-only `members` left out).
  const index = new Map<number, Map<number, MemberWithSelectors>>();
  for (const tag of parsed.tags) {
    const covering = new Map<number, Selector[]>();
    for (const { members: ids, ...sel } of [...tag.selectors].sort((a, b) => a.id - b.id)) {
      for (const memberId of new Set(ids)) {
        if (!members.has(memberId)) continue;
        const list = covering.get(memberId) ?? [];
        list.push(sel);
        covering.set(memberId, list);
      }
    }
    const byMember = new Map<number, MemberWithSelectors>();
    for (const [memberId, selectors] of covering) {
      byMember.set(memberId, { ...(members.get(memberId) as Member), selectors });
    }
    index.set(tag.id, byMember);
  }
  return {
    // From memory, at once: the pipeline has checked the deadline just before.
    getMember: (tagId, memberId) => index.get(tagId)?.get(memberId),
    async close() {},
  };
}

/** The file's schema, also read by `gateway import` (the postgres backend's loader). */
export { file as assetGroupTagsFileSchema };
