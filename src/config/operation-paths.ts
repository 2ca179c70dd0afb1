/**
 * The method and path of each of the three operations (contract §4), in one place: the router
 * matches requests on them, and the configuration refuses a `routes` entry that would overlap them
 * (the operations are always the gateway's own).
 */

/** The operation ids, used as the `operation` label of metrics and in log lines. */
export type OperationName = 'GetCollectorChecksum' | 'UpdateSSOProvider' | 'GetAssetGroupTagMember';

export interface OperationPath {
  readonly operation: OperationName;
  readonly methods: readonly string[];
  /** Path segments; `{name}` is a parameter (any non-empty segment). */
  readonly segments: readonly string[];
}

export const OPERATION_PATHS: readonly OperationPath[] = [
  {
    operation: 'GetCollectorChecksum',
    methods: ['GET', 'HEAD'],
    segments: ['api', 'v2', 'collectors', '{collector_type}', '{release_tag}', 'checksum'],
  },
  {
    operation: 'UpdateSSOProvider',
    methods: ['PATCH'],
    segments: ['api', 'v2', 'sso-providers', '{sso_provider_id}'],
  },
  {
    operation: 'GetAssetGroupTagMember',
    methods: ['GET', 'HEAD'],
    segments: ['api', 'v2', 'asset-group-tags', '{asset_group_tag_id}', 'members', '{asset_group_member_id}'],
  },
];

/** Whether `segment` (decoded) can stand at `pattern`'s place: the same word, or any non-empty parameter. */
function fits(pattern: string, segment: string): boolean {
  return pattern.startsWith('{') ? segment !== '' : pattern === segment;
}

/**
 * The operation some request matching `entry` would be (a path of the same segments, or under a
 * prefix, with one of the entry's methods), or undefined. `segments` are the entry's path (or
 * prefix, without its trailing empty segment) decoded; `prefix` says which it is.
 */
export function overlappedOperation(
  segments: readonly string[],
  prefix: boolean,
  methods: readonly string[] | undefined,
): OperationPath | undefined {
  return OPERATION_PATHS.find((op) => {
    if (methods !== undefined && !methods.some((m) => op.methods.includes(m))) return false;
    const pattern = op.segments;
    // A prefix covers its own segments and at least one more; a path is exactly its segments.
    if (prefix ? segments.length >= pattern.length : segments.length !== pattern.length) return false;
    return segments.every((s, i) => fits(pattern[i] as string, s));
  });
}
