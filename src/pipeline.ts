/**
 * The request pipeline, in the contract's order (GATEWAY.md §2). Reading this list is reading the
 * architecture: each stage writes one field of the request context, and any stage that throws ends
 * in the one error-envelope writer (`http/envelope.ts`), run by `http/handler.ts`.
 */
import { authorize } from './auth/authorize.js';
import type { Config } from './config/schema.js';
import type { RequestContext } from './http/context.js';
import type { Stage, Stages } from './http/stage.js';
import { type DeadlineClock, preferredWait, startDeadline } from './http/deadline.js';
import { singleHeaders } from './http/headers.js';
import { type OperationId, routeRequest } from './http/router.js';
import type { Tracing } from './observability/tracing/tracing.js';
import type { Operation } from './operations/operation.js';
import type { RateLimitStages } from './ratelimit/index.js';

export interface PipelineParts {
  readonly prefer: Config['prefer'];
  /** The app's timer wheel, which fires the requests' deadlines. */
  readonly clock: DeadlineClock;
  readonly authenticate: Stage;
  /** With tracing on, authentication is a child span of the request's (contract §10). */
  readonly tracing?: Tracing;
  readonly operations: Readonly<Record<Exclude<OperationId, 'passthrough'>, Operation>> & {
    /** Present when pass-through is configured: every other `/api/v2` request goes to it. */
    readonly passthrough?: Operation;
  };
  /** `rate_limits` (absent: the request path has no rate-limit stage at all). */
  readonly rateLimits?: RateLimitStages;
}

/** The request's one `Prefer` (400 when repeated). */
const preferOf = singleHeaders(['Prefer']);

/** The ordered stages for one configuration. */
export function createPipeline(parts: PipelineParts): Stages {
  const { prefer, operations, clock, tracing } = parts;
  const authenticate = tracing === undefined ? parts.authenticate : traced(tracing, parts.authenticate);
  const byAddress = parts.rateLimits?.unauthenticated;
  const byIdentity = parts.rateLimits?.identity;
  return [
    // 400 for a missing Host or an unsafe target, 301 for `//` or a dot segment, 404 / 405, 417 for an
    // odd Expect.
    [
      'route',
      (ctx) => {
        try {
          ctx.route = routeRequest(ctx.req, ctx.rawTarget, ctx.path, operations.passthrough !== undefined);
        } catch (err) {
          // Every response says which wait applied, a refusal before the Prefer stage too.
          appliedWaitOnRefusal(ctx, prefer);
          throw err;
        }
      },
    ],
    // 400 for a malformed Prefer; the deadline (an AbortSignal) covers everything after this point.
    [
      'deadline',
      (ctx) => {
        ctx.deadline = startDeadline(preferOf(ctx.req)[0], prefer, clock);
        ctx.headers.push('Preference-Applied', ctx.deadline.applied);
      },
    ],
    // 429 for an address over its `unauthenticated` limit, before authentication is attempted.
    ...(byAddress ? [['unauthenticated', byAddress.check] as const] : []),
    // 401 / 400, the body read under its limit (413) and verified; writes identity and body. Its
    // refusals count against the address's `unauthenticated` limit.
    ['authenticate', byAddress ? byAddress.counting(authenticate) : authenticate],
    // 429 over a policy of the verified identity; `RateLimit-Policy` and `RateLimit` on the answer.
    ...(byIdentity ? [['rate limit', byIdentity] as const] : []),
    // 403 without the operation's permission.
    ['authorize', (ctx) => authorize(ctx, operationOf(ctx, operations).permission)],
    // path parameters (400) → existence (404) → body validation (400/413) → the backend.
    ['operation', (ctx) => operationOf(ctx, operations).handle(ctx)],
  ];
}

/** `stage` as the span `authenticate`: a refusal marks it failed with its reason. */
function traced(tracing: Tracing, stage: Stage): Stage {
  return (ctx) => tracing.span('authenticate', 'internal', {}, () => stage(ctx));
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

function operationOf(ctx: RequestContext, operations: PipelineParts['operations']): Operation {
  // The router names `passthrough` only when that operation is configured.
  return operations[(ctx.route as NonNullable<RequestContext['route']>).operation] as Operation;
}
