/**
 * The permission stage: runs after authentication, before any path parameter or body is looked at,
 * so that an identity without the permission learns nothing about the operation's inputs. With an
 * audit trail, each refusal is recorded there (contract §12), off the request path.
 */
import type { Refusal } from '../audit/trail.js';
import { errors } from '../errors.js';
import type { RequestContext } from '../http/context.js';
import { actorOf, hasPermission } from '../http/identity.js';

/** Where refusals are recorded: the audit trail, which never throws or waits. */
export interface RefusalLog {
  refused(refusal: Refusal): void;
}

/**
 * Throws the catalogue's 403 `not authorized` unless the request's identity holds `permission` (or
 * `*`); a refused identity is recorded in `refusals` first.
 */
export function authorize(ctx: RequestContext, permission: string, refusals?: RefusalLog): void {
  const identity = ctx.identity;
  if (identity !== undefined && hasPermission(identity, permission)) return;
  if (refusals !== undefined && identity !== undefined) {
    refusals.refused({
      actor: actorOf(identity),
      principal: identity.principal,
      requestId: ctx.id,
      sourceIp: ctx.client,
      method: ctx.req.method ?? '',
      path: ctx.path,
      permission,
    });
  }
  throw errors.notAuthorized();
}
