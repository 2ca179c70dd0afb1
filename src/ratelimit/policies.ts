/**
 * The policies of `rate_limits.policies`, compiled once per configuration: for each operation, the
 * rules that apply to it in configuration order, its `RateLimit-Policy` value, and the metric
 * children of its decisions (made once, not per request).
 */
import { errors } from '../errors.js';
import { LIMITED_OPERATIONS, type RateLimitsConfig } from '../config/rate-limits.js';
import type { RequestContext } from '../http/context.js';
import type { Metrics } from '../observability/metrics.js';
import { countedChild } from '../observability/define.js';
import { type LimitRule, type Reply, ruleOf } from './store.js';

type Operation = (typeof LIMITED_OPERATIONS)[number];

/** A counter child (`gateway_rate_limit_decisions_total{policy,result}`). */
interface Count {
  inc(): void;
}

/** The decisions' counters of one policy. */
export interface PolicyCounts {
  readonly allowed: Count;
  readonly limited: Count;
  readonly error: Count;
}

/** What applies to one operation. */
export interface Applied {
  readonly rules: readonly LimitRule[];
  readonly names: readonly string[];
  readonly counts: readonly PolicyCounts[];
  /** `RateLimit-Policy`: `"default";q=55;w=1, "writes";q=10;w=60`. */
  readonly header: string;
}

/** The counters of `policy`, each series exported at 0 from now on. */
export function countsOf(metrics: Metrics, policy: string): PolicyCounts {
  const counter = metrics.rateLimitDecisions;
  const child = (result: string) => countedChild(counter, { policy, result });
  return { allowed: child('allowed'), limited: child('limited'), error: child('error') };
}

/** The policies that apply to each operation (absent: none does). */
export function compilePolicies(
  policies: RateLimitsConfig['policies'],
  metrics: Metrics,
): Partial<Record<Operation, Applied>> {
  const counts = policies.map((p) => countsOf(metrics, p.name));
  const byOperation: Partial<Record<Operation, Applied>> = {};
  for (const operation of LIMITED_OPERATIONS) {
    const indexes = policies.flatMap((p, i) =>
      p.operations === undefined || p.operations.includes(operation) ? [i] : [],
    );
    if (indexes.length === 0) continue;
    const chosen = indexes.map((i) => policies[i] as RateLimitsConfig['policies'][number]);
    byOperation[operation] = {
      rules: chosen.map((p) => ruleOf(p.name, p.limit, p.window)),
      names: chosen.map((p) => p.name),
      counts: indexes.map((i) => counts[i] as PolicyCounts),
      header: chosen.map((p) => `"${p.name}";q=${p.limit};w=${p.window / 1000}`).join(', '),
    };
  }
  return byOperation;
}

/** `t` of a reset in microseconds: whole seconds, rounded up, at least 1. */
export function resetSeconds(microseconds: number): number {
  return Math.max(1, Math.ceil(microseconds / 1e6));
}

/**
 * What one policy's decision does to the request: counted, then passed, refused with `refuse`'s 429
 * (its reset in seconds), or, when the store did not answer, refused (503) only with `deny`.
 */
export function admitter(
  counts: PolicyCounts,
  policy: string,
  deny: boolean,
  refuse: (resetSeconds: number) => Error,
): (ctx: RequestContext, reply: Reply | undefined) => void {
  return (ctx, reply) => {
    if (reply === undefined) {
      counts.error.inc();
      if (deny) throw errors.rateLimitStoreUnavailable();
      return;
    }
    if (reply[0] === 1) {
      counts.allowed.inc();
      return;
    }
    counts.limited.inc();
    ctx.log.rate_limit_policy = policy;
    throw refuse(resetSeconds(reply[2] as number));
  };
}
