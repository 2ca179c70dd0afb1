/**
 * The request pipeline, in the contract's order (GATEWAY.md §2). Reading this file is reading the
 * architecture: every request is routed first, then runs its route's own stages; each stage writes
 * one field of the request context, and any stage that throws ends in the one error-envelope writer
 * (`http/envelope.ts`), run by `http/handler.ts`.
 */
import { authorize, type RefusalLog } from './auth/authorize.js';
import { type BodyReader, hold } from './auth/verified-body.js';
import type { OperationName } from './config/operation-paths.js';
import type { Config } from './config/schema.js';
import { errors } from './errors.js';
import type { HeldBody } from './http/body.js';
import type { RequestContext } from './http/context.js';
import { startDeadline } from './http/deadline.js';
import type { DeadlineClock } from './http/deadline-clock.js';
import { type PreferPolicy, preferredWait } from './http/prefer.js';
import { singleHeaders } from './http/headers.js';
import type { RouteRule } from './http/route.js';
import type { RouteTable } from './http/route-table.js';
import { routeRequest } from './http/router.js';
import type { Pipeline, Stage, Stages } from './http/stage.js';
import type { Operation } from './operations/operation.js';
import type { RateLimitStages, RouteLimits } from './ratelimit/index.js';

export interface PipelineParts {
  readonly prefer: Config['prefer'];
  /** The app's timer wheel, which fires the requests' deadlines. */
  readonly clock: DeadlineClock;
  readonly authenticate: Stage;
  readonly operations: Readonly<Record<OperationName, Operation>> & {
    /** Present with `audit.serve_api`: `GET /api/v2/audit` from the audit trail. */
    readonly ListAuditLogs?: Operation;
  };
  /** `rate_limits` (absent: the request path has no rate-limit stage at all). */
  readonly rateLimits?: RateLimitStages;
  /**
   * The service's front door (contract §11), present when pass-through is configured: its route
   * table, the pass-through and public operations, the route limits, and the reader of the bodies
   * of public requests (which no authentication reads).
   */
  readonly frontDoor?: {
    readonly table: RouteTable;
    readonly passthrough: Operation;
    readonly public: Operation;
    readonly limits: RouteLimits;
    readonly body: BodyReader;
  };
  /** The audit trail, which records each 403 (contract §12); absent: no trail. */
  readonly refusals?: RefusalLog;
}

/** The request's one `Prefer` (400 when repeated). */
const preferOf = singleHeaders(['Prefer']);

/** The pipeline of one configuration: the route stage, and each route's stages made once. */
export function createPipeline(parts: PipelineParts): Pipeline {
  const { prefer, operations, clock, authenticate, frontDoor } = parts;
  const byAddress = parts.rateLimits?.unauthenticated;
  const byIdentity = parts.rateLimits?.identity;

  // 400 for a malformed Prefer; the deadline (an AbortSignal) covers everything after this point.
  const deadlineUnder =
    (policy: PreferPolicy): Stage =>
    (ctx) => {
      ctx.deadline = startDeadline(preferOf(ctx.req)[0], policy, clock);
      ctx.headers.push('Preference-Applied', ctx.deadline.applied);
    };
  const deadline = deadlineUnder(prefer);
  // 429 for an address over its `unauthenticated` limit, before authentication is attempted.
  const addressLimit: Stages = byAddress ? [['unauthenticated', byAddress.check]] : [];
  // 401 / 400, the body read under its limit (413) and verified; writes identity and body. Its
  // refusals count against the address's `unauthenticated` limit.
  const authenticated: Stages = [
    ['authenticate', byAddress ? byAddress.counting(authenticate) : authenticate],
    // 429 over a policy of the verified identity; `RateLimit-Policy` and `RateLimit` on the answer.
    ...(byIdentity ? [['rate limit', byIdentity] as const] : []),
  ];

  /** The stages of an operation, which needs credentials. */
  const guarded = (operation: Operation): Stages => [
    ['deadline', deadline],
    ...addressLimit,
    ...authenticated,
    // 403 without the operation's permission, recorded in the audit trail.
    ['authorize', (ctx) => authorize(ctx, operation.permission, parts.refusals)],
    // path parameters (400) → existence (404) → body validation (400/413) → the backend.
    ['operation', (ctx) => operation.handle(ctx)],
  ];
  const byOperation = new Map<string, Stages>();
  for (const [id, operation] of Object.entries(operations) as Array<[string, Operation]>) {
    byOperation.set(id, guarded(operation));
  }

  /** The stages of a front-door route, by its rule (contract §11). */
  const ofRule = (door: NonNullable<PipelineParts['frontDoor']>, rule: RouteRule): Stages => {
    const wait =
      rule.maxWait === undefined
        ? deadline
        : deadlineUnder({
            ...prefer,
            max_wait: rule.maxWait,
            default_wait: Math.min(prefer.default_wait, rule.maxWait),
          });
    const limit = door.limits.stageOf(rule);
    // 429 over the route's own limit (per address on a public route, per identity otherwise).
    const limited: Stages = limit ? [['route limit', limit]] : [];
    if (rule.auth === 'none') {
      // No credentials, no identity, no permission: route → Prefer → address limits → forwarded.
      const { body, public: open } = door;
      return [
        ['deadline', wait],
        ...addressLimit,
        ...limited,
        // The body under the route's limit (413) and the slow-client timeouts (408).
        ['body', (ctx) => held(ctx, body.read(ctx))],
        ['operation', (ctx) => open.handle(ctx)],
      ];
    }
    const { permission } = rule;
    const { passthrough } = door;
    return [
      ['deadline', wait],
      ...addressLimit,
      ...authenticated,
      ...limited,
      // 403 without the route's permission; without one, any verified identity passes.
      ...(permission === undefined
        ? []
        : [['authorize', (ctx: RequestContext) => authorize(ctx, permission, parts.refusals)] as const]),
      ['operation', (ctx) => passthrough.handle(ctx)],
    ];
  };
  const byRule = new Map<RouteRule, Stages>();
  if (frontDoor) for (const rule of frontDoor.table.rules) byRule.set(rule, ofRule(frontDoor, rule));

  return {
    // 400 for a missing Host or an unsafe target, 301 for `//` or a dot segment, 404 / 405, 417 for
    // an odd Expect; 404 for a route that hides its path.
    route(ctx) {
      try {
        const route = routeRequest(
          ctx.req,
          ctx.rawTarget,
          ctx.path,
          frontDoor?.table,
          operations.ListAuditLogs !== undefined,
        );
        ctx.route = route;
        if (route.rule?.auth === 'deny') throw errors.routeDenied();
      } catch (err) {
        // Every response says which wait applied, a refusal before the Prefer stage too.
        appliedWaitOnRefusal(ctx, prefer);
        throw err;
      }
    },
    stagesOf: (route) => (route.rule ? byRule.get(route.rule) : byOperation.get(route.operation)) as Stages,
  };
}

/** Hands the body of a public request, once held, to the later stages. */
function held(ctx: RequestContext, body: HeldBody | Promise<HeldBody>): void | Promise<void> {
  return body instanceof Promise ? body.then((b) => hold(ctx, b)) : hold(ctx, body);
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
