/**
 * The request pipeline, in the contract's order (GATEWAY.md §2). Reading this file is reading the
 * architecture: every request is routed first, then runs its route's own stages; each stage writes
 * one field of the request context, and any stage that throws ends in the one error-envelope writer
 * (`http/envelope.ts`), run by `http/handler.ts`.
 */
import { authorize, type RefusalLog } from './auth/authorize.js';
import type { Config } from './config/schema.js';
import type { RequestContext } from './http/context.js';
import { startDeadline } from './http/deadline.js';
import type { DeadlineClock } from './http/deadline-clock.js';
import { preferredWait } from './http/prefer.js';
import { singleHeaders } from './http/headers.js';
import { type OperationId, routeRequest } from './http/router.js';
import type { Pipeline, Stage, Stages } from './http/stage.js';
import type { Operation } from './operations/operation.js';
import type { RateLimitStages } from './ratelimit/index.js';

export interface PipelineParts {
  readonly prefer: Config['prefer'];
  /** The app's timer wheel, which fires the requests' deadlines. */
  readonly clock: DeadlineClock;
  readonly authenticate: Stage;
  readonly operations: Readonly<Record<Exclude<OperationId, 'passthrough' | 'ListAuditLogs'>, Operation>> & {
    /** Present when pass-through is configured: every other `/api/v2` request goes to it. */
    readonly passthrough?: Operation;
    /** Present with `audit.serve_api`: `GET /api/v2/audit` from the audit trail. */
    readonly ListAuditLogs?: Operation;
  };
  /** `rate_limits` (absent: the request path has no rate-limit stage at all). */
  readonly rateLimits?: RateLimitStages;
  /** The audit trail, which records each 403 (contract §12); absent: no trail. */
  readonly refusals?: RefusalLog;
}

/** The request's one `Prefer` (400 when repeated). */
const preferOf = singleHeaders(['Prefer']);

/** The pipeline of one configuration: the route stage, and each operation's stages made once. */
export function createPipeline(parts: PipelineParts): Pipeline {
  const { prefer, operations, clock, authenticate } = parts;
  const byAddress = parts.rateLimits?.unauthenticated;
  const byIdentity = parts.rateLimits?.identity;

  // 400 for a malformed Prefer; the deadline (an AbortSignal) covers everything after this point.
  const deadline: Stage = (ctx) => {
    ctx.deadline = startDeadline(preferOf(ctx.req)[0], prefer, clock);
    ctx.headers.push('Preference-Applied', ctx.deadline.applied);
  };
  // 429 for an address over its `unauthenticated` limit, before authentication is attempted.
  const addressLimit: Stages = byAddress ? [['unauthenticated', byAddress.check]] : [];

  /** The stages of an operation that needs credentials. */
  const guarded = (operation: Operation): Stages => [
    ['deadline', deadline],
    ...addressLimit,
    // 401 / 400, the body read under its limit (413) and verified; writes identity and body. Its
    // refusals count against the address's `unauthenticated` limit.
    ['authenticate', byAddress ? byAddress.counting(authenticate) : authenticate],
    // 429 over a policy of the verified identity; `RateLimit-Policy` and `RateLimit` on the answer.
    ...(byIdentity ? [['rate limit', byIdentity] as const] : []),
    // 403 without the operation's permission, recorded in the audit trail.
    ['authorize', (ctx) => authorize(ctx, operation.permission, parts.refusals)],
    // path parameters (400) → existence (404) → body validation (400/413) → the backend.
    ['operation', (ctx) => operation.handle(ctx)],
  ];
  /** The stages of a public operation (contract §11): no credentials, no identity, no permission. */
  const open = (operation: Operation): Stages => [
    ['deadline', deadline],
    ...addressLimit,
    ['operation', (ctx) => operation.handle(ctx)],
  ];
  const byOperation = new Map<string, Stages>();
  for (const [id, operation] of Object.entries(operations) as Array<[string, Operation]>) {
    byOperation.set(id, operation.public === true ? open(operation) : guarded(operation));
  }

  return {
    // 400 for a missing Host or an unsafe target, 301 for `//` or a dot segment, 404 / 405, 417 for
    // an odd Expect.
    route(ctx) {
      try {
        ctx.route = routeRequest(
          ctx.req,
          ctx.rawTarget,
          ctx.path,
          operations.passthrough !== undefined,
          operations.ListAuditLogs !== undefined,
        );
      } catch (err) {
        // Every response says which wait applied, a refusal before the Prefer stage too.
        appliedWaitOnRefusal(ctx, prefer);
        throw err;
      }
    },
    // The router names `passthrough` only when that operation is configured.
    stagesOf: (route) => byOperation.get(route.operation) as Stages,
  };
}

/** Sets `Preference-Applied` for a request refused before its deadline started, if its Prefer is valid. */
function appliedWaitOnRefusal(ctx: RequestContext, prefer: Config['prefer']): void {
  try {
    const seconds = preferredWait(preferOf(ctx.req)[0], prefer);
    ctx.headers.push('Preference-Applied', `wait=${seconds}`);
  } catch {
    // An invalid or repeated Prefer applied nothing.
  }
}
