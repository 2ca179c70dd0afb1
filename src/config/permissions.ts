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
  // Reading the audit trail (`GET /api/v2/audit`, contract §12): `*` grants it, `passthrough` does not.
  'audit:read',
  '*',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** One permission of the configuration. */
export const permission = leaf(z.enum(PERMISSIONS, { error: `must be one of ${PERMISSIONS.join(', ')}` }));
