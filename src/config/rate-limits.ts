/**
 * `rate_limits` (contract §7): the store the counts live in, the policies per verified identity, and
 * the limit on failed authentications per client address. Apart from `schema.ts` so that the rate
 * limits' keys sit in one place.
 */
import { z } from 'zod';
import { duration, int, leaf } from './leaves.js';
import { redisStoreSchema } from './redis-store.js';

/** The operations a policy may name (`passthrough`: every other `/api/v2` request). */
export const LIMITED_OPERATIONS = [
  'GetCollectorChecksum',
  'UpdateSSOProvider',
  'GetAssetGroupTagMember',
  'ListAuditLogs',
  'passthrough',
] as const;

/** A window: whole seconds, from 1 s to 24 h (milliseconds once parsed). */
export const windowSchema = () =>
  duration(24 * 3_600_000, 1000).refine(
    (ms) => typeof ms !== 'number' || ms % 1000 === 0,
    'must be whole seconds (e.g. 1s, 60s, 1h)',
  );

/** A limit: 1 to 10,000 requests. */
export const limitSchema = () => int(1, 10_000);

const policy = z.strictObject({
  name: leaf(
    z
      .string()
      .regex(/^[a-z0-9_-]{1,64}$/, 'must match [a-z0-9_-]{1,64}')
      .refine(
        (n) => n !== 'unauthenticated',
        '"unauthenticated" is reserved for rate_limits.unauthenticated',
      ),
  ),
  limit: limitSchema(),
  window: windowSchema(),
  /** The operations the policy counts; none listed: every operation, pass-through included. */
  operations: z.array(leaf(z.enum(LIMITED_OPERATIONS))).optional(),
});

const memoryStore = z.strictObject({
  type: z.literal('memory'),
  max_keys: int(1, 100_000_000).default(100_000),
});

/** `rate_limits`; absent: no limits, and no cost on the request path. */
export const rateLimitsSchema = z
  .strictObject({
    store: z
      .discriminatedUnion('type', [memoryStore, redisStoreSchema], {
        error: 'type must be "memory" or "redis"',
      })
      .default({ type: 'memory', max_keys: 100_000 }),
    policies: z.array(policy).default([]),
    unauthenticated: z.strictObject({ limit: limitSchema(), window: windowSchema() }).optional(),
  })
  .superRefine((c, ctx) => {
    const seen = new Map<string, number>();
    c.policies.forEach((p, i) => {
      if (typeof p.name !== 'string') return;
      const first = seen.get(p.name);
      if (first !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['policies', i, 'name'],
          message: `is the name of policies[${first}] too`,
        });
      }
      seen.set(p.name, i);
    });
  });

/** The validated `rate_limits`: windows in milliseconds. */
export type RateLimitsConfig = z.output<typeof rateLimitsSchema>;
export type RateLimitStoreConfig = RateLimitsConfig['store'];
