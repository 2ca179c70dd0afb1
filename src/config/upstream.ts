/**
 * The configuration of an upstream service speaking this API (contract §5): the shape of a
 * `type: upstream` backend, and of `passthrough`.
 */
import { z } from 'zod';
import { duration, httpUrl, int, leaf, size, str, uuid } from './leaves.js';
import { upstreamTlsSchema } from './tls.js';
import { targetsFields, withTargetChecks } from './upstream-targets.js';

/** How the gateway authenticates its own requests to an upstream. */
const upstreamAuth = z.discriminatedUnion(
  'type',
  [
    z.strictObject({
      type: z.literal('signature'),
      token_id: uuid(),
      token_key: str(1),
      scheme: leaf(z.string().regex(/^[a-z0-9-]{1,20}$/, 'must be a lower-case word')).default(
        'bhesignature',
      ),
    }),
    z.strictObject({ type: z.literal('bearer'), token: str(1) }),
    z.strictObject({ type: z.literal('client') }),
  ],
  { error: 'type must be "signature", "bearer" or "client"' },
);

/** The keys of an upstream service: its one `url`, or its `targets` (contract §5 "Several targets"). */
const upstreamFields = {
  url: httpUrl().optional(),
  ...targetsFields,
  auth: upstreamAuth,
  connect_timeout: duration(3_600_000, 1).default(5_000),
  headers_timeout: duration(24 * 3_600_000, 1).default(30_000),
  body_timeout: duration(24 * 3_600_000, 1).default(30_000),
  connections: int(1, 10_000).default(64),
  max_response_size: size().default(16 * 1024 * 1024),
  /** A private CA to trust and a client certificate to present (mTLS to the service). */
  tls: upstreamTlsSchema.optional(),
};

/** `backends.<operation>: {type: upstream, ...}`. */
export const upstreamBackendShape = withTargetChecks(
  z.strictObject({ type: z.literal('upstream'), ...upstreamFields }),
);
/**
 * `passthrough: {...}`: every other authenticated `/api/v2` request goes to this service, and the
 * front door's routes (contract §11); `max_body` is the body limit of the `upload` route.
 */
export const passthroughShape = withTargetChecks(
  z.strictObject({ ...upstreamFields, max_body: size().default(1024 ** 3) }),
);

/** An upstream service's keys (a backend's without its `type`, pass-through's without `max_body`). */
export type UpstreamConfig = z.output<z.ZodObject<typeof upstreamFields>>;
export type PassthroughConfig = z.output<typeof passthroughShape>;
export type UpstreamAuthConfig = z.output<typeof upstreamAuth>;
