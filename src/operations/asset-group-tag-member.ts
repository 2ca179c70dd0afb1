/**
 * Get asset group tag member: one member of a tag with exactly the tag's selectors that cover it.
 */
import type { AssetGroupTagsBackend, MemberWithSelectors } from '../backends/asset-group-tags/backend.js';
import { errors } from '../errors.js';
import type { RequestContext } from '../http/context.js';
import { backendCall } from '../http/forwarded.js';
import { JSON_TYPE, relay, sendBytes } from '../http/respond.js';
import { UpstreamAnswer } from '../upstream/answer.js';
import { parseId } from '../validate/ids.js';
import type { Operation } from './operation.js';

/** The operation on `backend`. */
export function createAssetGroupTagMember(deps: { backend: AssetGroupTagsBackend }): Operation {
  /**
   * The answer's bytes per member. A store that hands out the same object for the same member (the
   * local store does) has it serialised once, not on every request.
   */
  const bodies = new WeakMap<MemberWithSelectors, Buffer>();
  const serialised = (member: MemberWithSelectors): Buffer => {
    let body = bodies.get(member);
    if (body === undefined) {
      body = Buffer.from(JSON.stringify({ data: { member } }));
      bodies.set(member, body);
    }
    return body;
  };
  return {
    id: 'GetAssetGroupTagMember',
    permission: 'asset_group_tags:read',
    handle(ctx: RequestContext) {
      const params = ctx.route?.params ?? {};
      const tagId = parseId(params.asset_group_tag_id, 'asset_group_tag_id');
      const memberId = parseId(params.asset_group_member_id, 'asset_group_member_id');
      const found = deps.backend.getMember(tagId, memberId, backendCall(ctx));
      // A store in memory answers at once: no promise, no turn of the event loop.
      if (found instanceof Promise) return found.then((member) => answer(ctx, member));
      return answer(ctx, found);
    },
  };

  function answer(ctx: RequestContext, member: MemberWithSelectors | UpstreamAnswer | undefined) {
    if (member instanceof UpstreamAnswer) return relay(ctx, member);
    if (!member) throw errors.notFound('path:asset_group_member_id');
    sendBytes(ctx, 200, serialised(member), JSON_TYPE);
    return undefined;
  }
}
