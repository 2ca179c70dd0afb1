/**
 * A front-door route's own rate limit (contract §11): counted per client address on a public route,
 * per verified identity on an authenticated one, under the key `route:<name>`, in the store of
 * `rate_limits` (or a per-process memory store without it). A refusal is the 429 of §7, with
 * `Retry-After` and no `RateLimit*` header (the answer is the service's).
 */
import { errors } from '../errors.js';
import type { RequestContext } from '../http/context.js';
import type { RouteRule } from '../http/route.js';
import type { Stage } from '../http/stage.js';
import type { Metrics } from '../observability/metrics.js';
import { addressSubject } from './address.js';
import { admitter, countsOf } from './policies.js';
import { type RateLimitStore, ruleOf } from './store.js';

/** Makes each route's limit stage, deciding in one store. */
export interface RouteLimits {
  /** The stage of `rule`'s limit; undefined when it has none. */
  stageOf(rule: RouteRule): Stage | undefined;
}

/** The route limits deciding in `store`; with `deny`, an undecided request is refused (503). */
export function createRouteLimits(store: RateLimitStore, metrics: Metrics, deny: boolean): RouteLimits {
  return {
    stageOf(rule) {
      const limit = rule.rateLimit;
      if (limit === undefined) return undefined;
      const policy = `route:${rule.name}`;
      const rules = [ruleOf(policy, limit.limit, limit.window)];
      const perIdentity = rule.auth === 'required';
      const admit = admitter(countsOf(metrics, policy), policy, deny, errors.routeRateLimited);
      return (ctx) => {
        const subject = perIdentity
          ? (ctx.identity as NonNullable<RequestContext['identity']>).principal
          : addressSubject(ctx.client);
        const reply = store.decide(subject, rules, true);
        return reply instanceof Promise ? reply.then((r) => admit(ctx, r)) : admit(ctx, reply);
      };
    },
  };
}
