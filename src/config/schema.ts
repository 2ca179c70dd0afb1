/**
 * The configuration's closed schema: every key, its type and its default. Unknown keys are refused,
 * and every error names the key's path (see `load.ts`).
 */
import proxyaddr from 'proxy-addr';
import { z } from 'zod';
import { BACKEND_TYPES } from '../backends/table.js';
import { type AuditConfig, auditSchema } from './audit.js';
import { adminTlsSchema, clientCertificatesSchema, serverTlsSchema } from './tls.js';
import { passthroughShape } from './upstream.js';
import { checkJwtProviders } from './jwt-providers.js';
import { jwtSchema } from './jwt-schema.js';
import { asNumber, bool, duration, int, leaf, size, str, uuid } from './leaves.js';
import { permission } from './permissions.js';
import { rateLimitsSchema } from './rate-limits.js';
import { checkRoutes, routesSchema } from './routes.js';
import { tokenStoreSchema } from './token-store.js';
import { tracingSchema } from './tracing.js';

export { PERMISSIONS, type Permission } from './permissions.js';

const token = z.strictObject({
  id: uuid(),
  key: str(1),
  subject: str(1),
  permissions: z.array(permission).default([]),
});

/** A backend configuration: one of the types the backend table lists for the operation. */
function backendOf<T extends Record<string, { readonly config: z.ZodType<{ type: string }> }>>(
  types: T,
): z.ZodType<{ [K in keyof T]: z.output<T[K]['config']> }[keyof T]> {
  const names = Object.keys(types).map((n) => `"${n}"`);
  const list = names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names.at(-1)}` : names[0];
  // Each is a strict object with a literal `type`: what a discriminated union takes.
  const options = Object.values(types).map((t) => t.config) as never;
  return z.discriminatedUnion('type', options, { error: `type must be ${list}` }) as never;
}

/** An address, a CIDR, or one of proxy-addr's names (`loopback`, `linklocal`, `uniquelocal`). */
const trustedProxy = leaf(
  z.string().refine((entry) => {
    try {
      proxyaddr.compile(entry);
      return true;
    } catch {
      return false;
    }
  }, 'must be an IP address, a CIDR (10.0.0.0/8) or loopback, linklocal, uniquelocal'),
);

const server = z.strictObject({
  host: str(1).default('127.0.0.1'),
  port: int(0, 65535).default(8080),
  shutdown_grace: duration().default(25_000),
  workers: leaf(
    z.union([z.literal('auto'), z.number().int().min(1).max(256)], {
      error: 'must be a positive integer or "auto"',
    }),
    asNumber,
  ).default(1),
  /** Deprecated: `true` trusts every X-Forwarded-For hop; list the proxies in trusted_proxies instead. */
  trust_proxy: bool().default(false),
  trusted_proxies: z.array(trustedProxy).default([]),
  max_header_size: size(1024).default(16 * 1024),
  max_body_size: size().default(10 * 1024 * 1024),
  body_memory_threshold: size(0).default(64 * 1024),
  // A zero here would turn the slow-client protection off (or, for body_idle_timeout, refuse every upload).
  headers_timeout: duration(24 * 3_600_000, 1).default(10_000),
  body_idle_timeout: duration(24 * 3_600_000, 1).default(10_000),
  keep_alive_timeout: duration(24 * 3_600_000, 1).default(5_000),
  tmp_dir: str(1).optional(),
  /** HTTPS on the API listener (contract §8). */
  tls: serverTlsSchema.optional(),
});

const schema = z
  .strictObject({
    server: server.prefault({}),
    admin: z
      .strictObject({
        host: str(1).default('127.0.0.1'),
        port: int(0, 65535).default(9090),
        tls: adminTlsSchema.optional(),
      })
      .prefault({}),
    logging: z
      .strictObject({
        level: leaf(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])).default('info'),
      })
      .prefault({}),
    auth: z
      .strictObject({
        signature: z
          .strictObject({
            scheme: leaf(
              z
                .string()
                .regex(/^[a-z0-9-]{1,20}$/, 'must be a lower-case word')
                .refine((s) => s !== 'bearer', 'must not be "bearer", the JWT scheme'),
            ).default('bhesignature'),
            max_clock_skew: duration().default(3_600_000),
            // How far RequestDate's zone may be from UTC: its minutes and offset are not signed (§3).
            max_utc_offset: duration(24 * 3_600_000).default(14 * 3_600_000),
            // A digest mismatch's 401 says what the gateway signed (method, target, hour, body hash).
            explain_mismatch: bool().default(true),
            tokens: z.array(token).default([]),
            token_store: tokenStoreSchema.optional(),
          })
          .prefault({}),
        jwt: jwtSchema,
        /** Who a verified TLS client certificate is (contract §8). */
        client_certificates: clientCertificatesSchema,
      })
      .prefault({}),
    prefer: z
      .strictObject({
        default_wait: int(1, 2_147_483).default(30),
        max_wait: int(1, 2_147_483).default(300),
        allow_bypass: bool().default(false),
      })
      .prefault({})
      .refine(
        (p) =>
          typeof p.default_wait !== 'number' ||
          typeof p.max_wait !== 'number' ||
          p.default_wait <= p.max_wait,
        {
          message: 'default_wait must not exceed max_wait',
          path: ['default_wait'],
        },
      ),
    checksum_cache: z
      .strictObject({
        max_bytes: size().default(64 * 1024 * 1024),
        max_entry_bytes: size().default(1024 * 1024),
        latest_ttl: duration().default(30_000),
      })
      .prefault({}),
    forms: z
      .strictObject({
        max_parts: int(1, 1000).default(16),
        max_field_size: size().default(64 * 1024),
        max_file_size: size().default(1024 * 1024),
      })
      .prefault({}),
    backends: z.strictObject({
      collectors: backendOf(BACKEND_TYPES.collectors),
      sso_providers: backendOf(BACKEND_TYPES.sso_providers),
      asset_group_tags: backendOf(BACKEND_TYPES.asset_group_tags),
    }),
    /** Every other authenticated /api/v2 request, forwarded to the service (contract §5). */
    passthrough: passthroughShape.optional(),
    /** The operator's entries of the front door's route table (contract §11), before the service's own. */
    routes: routesSchema.optional(),
    /** Requests per verified identity and failed authentications per address (contract §7). */
    rate_limits: rateLimitsSchema.optional(),
    /** OpenTelemetry tracing (contract §10); off when absent. */
    tracing: tracingSchema.optional(),
    /** The audit trail (contract §12); without it the trail follows the sso_providers backend. */
    audit: auditSchema.optional(),
  })
  .superRefine((c, ctx) => {
    checkJwtProviders(c.auth.jwt, (path, message) =>
      ctx.addIssue({ code: 'custom', path: ['auth', 'jwt', ...path], message }),
    );
    const ids = new Map<string, number>();
    c.auth.signature.tokens.forEach((token, i) => {
      if (typeof token.id !== 'string') return;
      const first = ids.get(token.id.toLowerCase());
      if (first !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['auth', 'signature', 'tokens', i, 'id'],
          message: `is the id of tokens[${first}] too (ids are compared case-insensitively)`,
        });
      }
      ids.set(token.id.toLowerCase(), i);
    });
    const { server: api, admin } = c;
    if (
      typeof api.port === 'number' &&
      api.port !== 0 &&
      api.port === admin.port &&
      api.host === admin.host
    ) {
      ctx.addIssue({ code: 'custom', path: ['admin', 'port'], message: 'must differ from server.port' });
    }
    if (c.server.trust_proxy === true && c.server.trusted_proxies.length > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['server', 'trust_proxy'],
        message: 'must not be set with server.trusted_proxies (which lists the proxies to trust)',
      });
    }
    if (c.server.workers !== 1 && c.backends.sso_providers.type === 'local') {
      ctx.addIssue({
        code: 'custom',
        path: ['server', 'workers'],
        message: 'must be 1 while backends.sso_providers is "local" (one process owns that file)',
      });
    }
    checkRoutes(c, (path, message) => ctx.addIssue({ code: 'custom', path, message }));
    checkAudit(c, (path, message) => ctx.addIssue({ code: 'custom', path, message }));
    if (c.server.workers !== 1 && c.rate_limits?.store.type === 'memory') {
      ctx.addIssue({
        code: 'custom',
        path: ['rate_limits', 'store', 'type'],
        message:
          'must be "redis" while server.workers is more than 1 (each worker would admit the whole limit with "memory")',
      });
    }
  });

/**
 * What the `audit` key may not be with the rest (contract §12): a file trail has one writer, and
 * the read API needs a trail to answer from.
 */
function checkAudit(
  c: { server: { workers: unknown }; backends: { sso_providers: { type: string } }; audit?: AuditConfig },
  issue: (path: string[], message: string) => void,
): void {
  const store = c.audit?.store;
  if (c.server.workers !== 1 && store?.type === 'file') {
    issue(
      ['audit', 'store', 'type'],
      'must be "postgres" while server.workers is more than 1 (a file audit trail has one writer)',
    );
  }
  if (c.audit?.serve_api === true && store === undefined && c.backends.sso_providers.type === 'upstream') {
    issue(
      ['audit', 'serve_api'],
      'needs a trail to answer from: set audit.store (backends.sso_providers is "upstream", which keeps none)',
    );
  }
}

export const configSchema = schema;

/**
 * The shapes the configuration's JSON Schema names once (in `$defs`) instead of repeating them at
 * every key that takes them: the backend types (each shared by the operations it serves) and the upstream.
 */
export const namedShapes = z.registry<{ id: string }>();
const ids = new Set<string>();
for (const [operation, types] of Object.entries(BACKEND_TYPES) as Array<
  [string, Record<string, { config: z.ZodType }>]
>) {
  for (const [type, { config }] of Object.entries(types)) {
    if (namedShapes.has(config)) continue;
    // A type whose shape differs for one operation (a local store the gateway writes) is named for it.
    const id = ids.has(`${type}_backend`) ? `${type}_backend_of_${operation}` : `${type}_backend`;
    ids.add(id);
    namedShapes.add(config, { id });
  }
}
namedShapes.add(passthroughShape, { id: 'upstream' });

/** The validated configuration: durations in milliseconds, sizes in bytes, paths absolute. */
export type Config = z.output<typeof schema>;
export type TokenConfig = Config['auth']['signature']['tokens'][number];
export type { IssuerConfig, JwtConfig } from './jwt-schema.js';
