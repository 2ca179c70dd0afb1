/**
 * The configuration's closed schema: every key, its type and its default. Unknown keys are refused,
 * and every error names the key's path (see `load.ts`).
 */
import { z } from 'zod';
import { checkJwtProviders } from './jwt-providers.js';
import { asNumber, bool, duration, int, leaf, size, str } from './leaves.js';

/** The permissions an identity may hold; `*` grants all. */
const PERMISSIONS = [
  'collectors:read',
  'sso_providers:write',
  'asset_group_tags:read',
  'passthrough',
  '*',
] as const;
export type Permission = (typeof PERMISSIONS)[number];
const permission = leaf(z.enum(PERMISSIONS, { error: `must be one of ${PERMISSIONS.join(', ')}` }));

/** The asymmetric JWS algorithms a JWKS key may verify. `none` and the HMAC family are never here. */
export const ASYMMETRIC_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

const token = z.strictObject({
  id: leaf(z.string().regex(UUID, 'must be a UUID')),
  key: str(1),
  subject: str(1),
  permissions: z.array(permission).default([]),
});

const localBackend = z.strictObject({
  type: z.literal('local'),
  path: str(1),
});

/** How the gateway authenticates its own requests to an upstream (contract §5). */
const upstreamAuth = z.discriminatedUnion(
  'type',
  [
    z.strictObject({
      type: z.literal('signature'),
      token_id: leaf(z.string().regex(UUID, 'must be a UUID')),
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

const httpUrl = leaf(
  z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).refine((u) => {
    const url = new URL(u);
    return url.search === '' && url.hash === '' && url.username === '' && url.password === '';
  }, 'must not carry a query, a fragment or credentials'),
);

/** An upstream service speaking this API; also the shape of `passthrough`. */
const upstreamFields = {
  url: httpUrl,
  auth: upstreamAuth,
  connect_timeout: duration(3_600_000, 1).default(5_000),
  headers_timeout: duration(24 * 3_600_000, 1).default(30_000),
  body_timeout: duration(24 * 3_600_000, 1).default(30_000),
  connections: int(1, 10_000).default(64),
  max_response_size: size().default(16 * 1024 * 1024),
};
const upstreamBackend = z.strictObject({ type: z.literal('upstream'), ...upstreamFields });

const postgresBackend = z.strictObject({
  type: z.literal('postgres'),
  url: leaf(z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')),
  pool_size: int(1, 1000).default(10),
  statement_timeout: duration(24 * 3_600_000, 1).default(30_000),
  connect_timeout: duration(3_600_000, 1).default(5_000),
  migrate: bool().default(true),
  // How often an idle pool proves the database answers (and, before the schema is ready, retries it).
  health_check_interval: duration(3_600_000, 100).default(5_000),
});

const BACKEND_TYPES = 'must be "local", "upstream" or "postgres"';
const collectorsBackend = z.discriminatedUnion('type', [localBackend, upstreamBackend], {
  error: 'type must be "local" or "upstream"',
});
const storeBackend = z.discriminatedUnion('type', [localBackend, upstreamBackend, postgresBackend], {
  error: `type ${BACKEND_TYPES}`,
});

/** A URL of keys or of a discovery document: a query is allowed (some providers need one). */
const keysUrl = leaf(
  z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).refine((u) => {
    const url = new URL(u);
    return !u.includes('#') && url.username === '' && url.password === '';
  }, 'must not carry credentials or a fragment'),
);
const audience = z.union([str(1), z.array(str(1)).min(1)]);
const algorithms = z
  .array(
    leaf(
      z.enum(ASYMMETRIC_ALGORITHMS, {
        error: 'must be an asymmetric JWS algorithm (RS*, PS*, ES*, EdDSA, Ed25519)',
      }),
    ),
  )
  .min(1);
const maxTokenAge = duration(366 * 24 * 3_600_000, 1000);
/** A claim's dotted path (`realm_access.roles`), or its keys as a list for names holding dots. */
const claimPath = z.union(
  [
    leaf(z.string().regex(/^[^.]+(?:\.[^.]+)*$/, 'must be a claim name or a dotted path')),
    z.array(str(1)).min(1).max(16),
  ],
  { error: 'must be a claim name, a dotted path (realm_access.roles) or a list of keys' },
);
/** An identity provider's role or scope names, each translated into the gateway's permissions. */
const permissionMap = z.record(z.string().min(1), z.array(permission));
const refreshInterval = duration(24 * 3_600_000, 1000);
const cooldown = duration(3_600_000, 10);
const fetchTimeout = duration(60_000, 10);
const MAX_ISSUERS = 32;

/** One identity provider of `auth.jwt.issuers`; unset keys default to their `auth.jwt` value. */
const issuerEntry = z.strictObject({
  name: leaf(
    z
      .string()
      .regex(
        /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/,
        'must be 1 to 64 letters, digits, ".", "_", ":" or "-" (a metric label)',
      ),
  ).optional(),
  issuer: str(1),
  jwks_url: keysUrl.optional(),
  discovery: bool().optional(),
  audience: audience.optional(),
  required: bool().default(true),
  algorithms: algorithms.optional(),
  clock_tolerance: duration().optional(),
  max_token_age: maxTokenAge.optional(),
  permissions_claim: claimPath.optional(),
  permission_map: permissionMap.optional(),
  default_permissions: z.array(permission).optional(),
  jwks_refresh_interval: refreshInterval.optional(),
  jwks_cooldown: cooldown.optional(),
  jwks_timeout: fetchTimeout.optional(),
});

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
  trust_proxy: bool().default(false),
  max_header_size: size(1024).default(16 * 1024),
  max_body_size: size().default(10 * 1024 * 1024),
  body_memory_threshold: size(0).default(64 * 1024),
  // A zero here would turn the slow-client protection off (or, for body_idle_timeout, refuse every upload).
  headers_timeout: duration(24 * 3_600_000, 1).default(10_000),
  body_idle_timeout: duration(24 * 3_600_000, 1).default(10_000),
  keep_alive_timeout: duration(24 * 3_600_000, 1).default(5_000),
  tmp_dir: str(1).optional(),
});

const schema = z
  .strictObject({
    server: server.prefault({}),
    admin: z
      .strictObject({ host: str(1).default('127.0.0.1'), port: int(0, 65535).default(9090) })
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
            // A digest mismatch's 401 says what the gateway signed (method, target, hour, body hash).
            explain_mismatch: bool().default(true),
            tokens: z.array(token).default([]),
          })
          .prefault({}),
        jwt: z
          .strictObject({
            hs256_secret: leaf(z.string().min(1).regex(BASE64, 'must be standard base64')).optional(),
            jwks_url: keysUrl.optional(),
            issuer: str(1).optional(),
            audience: audience.optional(),
            // The asymmetric algorithms JWKS tokens may use (HS256 is enabled by hs256_secret alone);
            // absent: whatever a key of the set can verify. `none` and HMAC can never be listed.
            algorithms: algorithms.optional(),
            clock_tolerance: duration().default(60_000),
            max_token_age: maxTokenAge.optional(),
            permissions_claim: claimPath.default('permissions'),
            permission_map: permissionMap.optional(),
            default_permissions: z.array(permission).default([]),
            jwks_refresh_interval: refreshInterval.default(300_000),
            jwks_cooldown: cooldown.default(30_000),
            jwks_timeout: fetchTimeout.default(5_000),
            token_cache_size: int(0, 1_000_000).default(10_000),
            /** Several identity providers at once (contract §3), each picked by a token's `iss`. */
            issuers: z.array(issuerEntry).max(MAX_ISSUERS).default([]),
          })
          .prefault({}),
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
      collectors: collectorsBackend,
      sso_providers: storeBackend,
      asset_group_tags: storeBackend,
    }),
    /** Every other authenticated /api/v2 request, forwarded to the service (contract §5). */
    passthrough: z.strictObject(upstreamFields).optional(),
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
    if (c.server.workers !== 1 && c.backends.sso_providers.type === 'local') {
      ctx.addIssue({
        code: 'custom',
        path: ['server', 'workers'],
        message: 'must be 1 while backends.sso_providers is "local" (one process owns that file)',
      });
    }
  });

export const configSchema = schema;

/** The validated configuration: durations in milliseconds, sizes in bytes, paths absolute. */
export type Config = z.output<typeof schema>;
export type UpstreamConfig = z.output<typeof upstreamBackend>;
export type UpstreamAuthConfig = z.output<typeof upstreamAuth>;
export type PostgresConfig = z.output<typeof postgresBackend>;
export type TokenConfig = Config['auth']['signature']['tokens'][number];
export type JwtConfig = Config['auth']['jwt'];
export type IssuerConfig = JwtConfig['issuers'][number];
