/**
 * The permission stage: runs after authentication, before any path parameter or body is looked at,
 * so that an identity without the permission learns nothing about the operation's inputs.
 */
import { errors } from '../errors.js';
import type { RequestContext } from '../http/context.js';
import { hasPermission } from '../http/identity.js';

/** Throws the catalogue's 403 `not authorized` unless the request's identity holds `permission` (or `*`). */
export function authorize(ctx: RequestContext, permission: string): void {
  if (ctx.identity === undefined || !hasPermission(ctx.identity, permission)) throw errors.notAuthorized();
}
