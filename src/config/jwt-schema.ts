/**
 * The schema of `auth.jwt` (contract §3, Bearer JWT): the HS256 secret, the single identity provider
 * of `jwks_url`, the providers of `issuers` (each key but `issuer`, `name`, `jwks_url`, `discovery`,
 * `audience` and `required` defaulting to its `auth.jwt` value), claims and clock settings.
 */
import { z } from 'zod';
import { bool, documentUrl, duration, int, leaf, str } from './leaves.js';
import { permission } from './permissions.js';

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

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A URL of keys or of a discovery document: a query is allowed (some providers need one). */
const keysUrl = documentUrl();
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

/** `auth.jwt`, with its defaults. */
export const jwtSchema = z
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
  .prefault({});

/** `auth.jwt` as validated. */
export type JwtConfig = z.output<typeof jwtSchema>;
/** One entry of `auth.jwt.issuers`. */
export type IssuerConfig = JwtConfig['issuers'][number];
