/**
 * The two rate-limit stages of the pipeline (contract §2, §7): before authentication, an address
 * that has failed authentication `unauthenticated.limit` times within the window gets 429; after
 * it, the verified identity is admitted only when every policy of the operation has room, in one
 * decision of the store, and the answer says so in `RateLimit-Policy` and `RateLimit`.
 */
import type { RateLimitsConfig } from '../config/rate-limits.js';
import { errors, GatewayError } from '../errors.js';
import type { RequestContext } from '../http/context.js';
import type { Route } from '../http/route.js';
import type { Stage } from '../http/stage.js';
import type { Metrics } from '../observability/metrics.js';
import { addressSubject } from './address.js';
import {
  admitter,
  type Applied,
  compilePolicies,
  countsOf,
  type PolicyCounts,
  resetSeconds,
} from './policies.js';
import { type RateLimitStore, type Reply, ruleOf } from './store.js';

/** The limit on failed authentications per address: a check before the stage, a count after it. */
export interface AddressLimit {
  /** 429 for an address at its limit, before authentication is attempted. */
  readonly check: Stage;
  /** `authenticate`, counting its refusals (every 400 and 401) against the client's address. */
  counting(authenticate: Stage): Stage;
  /** Counts a failed authentication the service answered (a 401 on `login`) against the client's address. */
  record(ctx: RequestContext): void;
}

export interface RateLimitStages {
  readonly unauthenticated?: AddressLimit;
  /** The verified identity's policies (absent when no policy is configured). */
  readonly identity?: Stage;
}

/** The stages for one configuration, deciding in `store`. */
export function createRateLimitStages(
  config: RateLimitsConfig,
  store: RateLimitStore,
  metrics: Metrics,
): RateLimitStages {
  const deny = config.store.type === 'redis' && config.store.on_error === 'deny';
  return {
    ...(config.unauthenticated && {
      unauthenticated: addressLimit(config.unauthenticated, store, metrics, deny),
    }),
    ...(config.policies.length > 0 && { identity: identityLimit(config.policies, store, metrics, deny) }),
  };
}

function identityLimit(
  policies: RateLimitsConfig['policies'],
  store: RateLimitStore,
  metrics: Metrics,
  deny: boolean,
): Stage {
  const byOperation = compilePolicies(policies, metrics);
  const settle = (ctx: RequestContext, applied: Applied, reply: Reply | undefined): void => {
    if (reply === undefined) {
      for (const count of applied.counts) count.error.inc();
      if (deny) throw errors.rateLimitStoreUnavailable();
      ctx.headers.push('RateLimit-Policy', applied.header);
      return;
    }
    // The policy shown in `RateLimit`: the fewest remaining, and of those the later reset.
    let shown = 0;
    for (let i = 1; i < applied.rules.length; i++) {
      const remaining = reply[1 + 2 * i] as number;
      const best = reply[1 + 2 * shown] as number;
      if (
        remaining < best ||
        (remaining === best && (reply[2 + 2 * i] as number) > (reply[2 + 2 * shown] as number))
      )
        shown = i;
    }
    const name = applied.names[shown] as string;
    const t = resetSeconds(reply[2 + 2 * shown] as number);
    ctx.headers.push(
      'RateLimit-Policy',
      applied.header,
      'RateLimit',
      `"${name}";r=${reply[1 + 2 * shown]};t=${t}`,
    );
    if (reply[0] === 1) {
      for (const count of applied.counts) count.allowed.inc();
      return;
    }
    applied.counts.forEach((count, i) => {
      if (reply[1 + 2 * i] === 0) count.limited.inc();
    });
    ctx.log.rate_limit_policy = name;
    throw errors.rateLimited(t, name);
  };
  return (ctx) => {
    const applied = (byOperation as Partial<Record<string, Applied>>)[(ctx.route as Route).operation];
    if (applied === undefined) return undefined;
    const principal = (ctx.identity as NonNullable<RequestContext['identity']>).principal;
    const reply = store.decide(principal, applied.rules, true);
    if (reply instanceof Promise) return reply.then((r) => settle(ctx, applied, r));
    return settle(ctx, applied, reply);
  };
}

function addressLimit(
  limit: NonNullable<RateLimitsConfig['unauthenticated']>,
  store: RateLimitStore,
  metrics: Metrics,
  deny: boolean,
): AddressLimit {
  const rules = [ruleOf('unauthenticated', limit.limit, limit.window)];
  const counts: PolicyCounts = countsOf(metrics, 'unauthenticated');
  const admit = admitter(counts, 'unauthenticated', deny, (reset) =>
    errors.rateLimited(reset, 'unauthenticated'),
  );
  /** Counts a refusal of the authenticate stage, then passes it on. */
  const failed = (ctx: RequestContext, err: unknown): Promise<never> => {
    if (!(err instanceof GatewayError) || (err.status !== 400 && err.status !== 401)) throw err;
    const counted = (reply: Reply | undefined): never => {
      if (reply === undefined) counts.error.inc();
      throw err;
    };
    const reply = store.decide(addressSubject(ctx.client), rules, true);
    return reply instanceof Promise ? reply.then(counted) : counted(reply);
  };
  return {
    check(ctx) {
      const reply = store.decide(addressSubject(ctx.client), rules, false);
      return reply instanceof Promise ? reply.then((r) => admit(ctx, r)) : admit(ctx, reply);
    },
    record(ctx) {
      const reply = store.decide(addressSubject(ctx.client), rules, true);
      if (reply === undefined) counts.error.inc();
      else if (reply instanceof Promise) void reply.then((r) => r === undefined && counts.error.inc());
    },
    counting(authenticate) {
      return (ctx) => {
        let result: void | Promise<void>;
        try {
          result = authenticate(ctx);
        } catch (err) {
          return failed(ctx, err);
        }
        return result === undefined ? undefined : result.catch((err: unknown) => failed(ctx, err));
      };
    },
  };
}
