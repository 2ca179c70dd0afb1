/**
 * The permissions an identity may hold (contract §1); `*` grants all. Unknown names in the
 * configuration are refused with the list.
 */
import { z } from 'zod';
import { leaf } from './leaves.js';

export const PERMISSIONS = [
  'collectors:read',
  'sso_providers:write',
  'asset_group_tags:read',
  'passthrough',
  '*',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** One permission of the configuration. */
export const permission = leaf(z.enum(PERMISSIONS, { error: `must be one of ${PERMISSIONS.join(', ')}` }));
