/** The asset group tags backend: tags, their selectors and the members the selectors cover. */
import type { UpstreamAnswer } from '../../upstream/answer.js';
import type { Closable } from '../backend-type.js';
import type { Answer, BackendCall } from '../backend-call.js';

export interface Selector {
  id: number;
  asset_group_tag_id: number;
  created_at: string;
  created_by: string;
  updated_at: string;
  updated_by: string;
  disabled_at: string | null;
  disabled_by: string | null;
  name: string;
  description: string;
  is_default: boolean;
  allow_disable: boolean;
  seeds: { value: string }[];
}

export interface Member {
  id: number;
  object_id: string;
  environment_id: string;
  primary_kind: string;
  name: string;
  properties: Record<string, unknown>;
  source: number;
}

/** A member with every selector of one tag that covers it, ordered by selector id. */
export interface MemberWithSelectors extends Member {
  selectors: Selector[];
}

export interface AssetGroupTagsBackend extends Closable {
  /**
   * Member `memberId` of tag `tagId` with the tag's selectors that cover it; undefined when the tag or
   * the member is unknown or no selector of the tag covers the member. An upstream answers with its
   * own response, relayed unchanged.
   */
  getMember(
    tagId: number,
    memberId: number,
    call: BackendCall,
  ): Answer<MemberWithSelectors | undefined | UpstreamAnswer>;
}
