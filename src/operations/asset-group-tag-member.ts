/**
 * Get asset group tag member: one member of a tag with exactly the tag's selectors that cover it.
 */
import type { AssetGroupTagsBackend } from '../backends/asset-group-tags/backend.js';
import { errors } from '../errors.js';
import type { RequestContext } from '../http/context.js';
import { RelayedResponse } from '../backends/relayed.js';
import { requestSignal } from '../http/deadline.js';
import { relay, sendJson } from '../http/respond.js';
import { parseId } from '../validate/ids.js';
import type { Operation } from './operation.js';

/** The operation on `backend`. */
export function createAssetGroupTagMember(deps: { backend: AssetGroupTagsBackend }): Operation {
  return {
    id: 'GetAssetGroupTagMember',
    permission: 'asset_group_tags:read',
    async handle(ctx: RequestContext) {
      const params = ctx.route?.params ?? {};
      const tagId = parseId(params.asset_group_tag_id, 'asset_group_tag_id');
      const memberId = parseId(params.asset_group_member_id, 'asset_group_member_id');
      const member = await deps.backend.getMember(tagId, memberId, requestSignal(ctx), ctx);
      if (member instanceof RelayedResponse) return relay(ctx, member);
      if (!member) throw errors.notFound('path:asset_group_member_id');
      sendJson(ctx, 200, { data: { member } });
    },
  };
}
