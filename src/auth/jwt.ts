/**
 * Bearer JWTs, verified with jose: HS256 against `hs256_secret`, the asymmetric algorithms against
 * the keys of `jwks_url` (see `jwks.ts`). Every failure becomes the catalogue's 401 `Token
 * Authorization failed.` carrying a low-cardinality reason code for the log and the metric, never
 * for the client.
 */
import { createSecretKey, type KeyObject } from 'node:crypto';
import {
  type JWSHeaderParameters,
  type JWTPayload,
  type JWTVerifyOptions,
  errors as jose,
  jwtVerify,
} from 'jose';
import type { Config } from '../config/schema.js';
import { errors, GatewayError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Identity } from './identity.js';
import { ASYMMETRIC_ALGORITHMS, type VerifyKey } from './jwk-set.js';
import { createJwksKeys, type JwksKeys } from './jwks.js';
import { createTokenCache } from './token-cache.js';

type JwtConfig = Config['auth']['jwt'];

/** Reason codes of a refused token (`reason` of `gateway_auth_failures_total`). */
export type JwtFailure =
  | 'malformed'
  | 'bad_algorithm'
  | 'bad_signature'
  | 'expired'
  | 'too_old'
  | 'not_yet_valid'
  | 'missing_exp'
  | 'missing_iat'
  | 'bad_issuer'
  | 'bad_audience'
  | 'no_key'
  | 'unknown_kid'
  | 'ambiguous_key'
  | 'jwks_unavailable';

/** Verifies bearer tokens against one configuration. */
export interface JwtVerifier {
  /** The identity a valid token carries; throws the catalogue's 401 with a reason code otherwise. */
  verify(token: string): Promise<Identity>;
  /** False until every key source has its keys (a JWKS loaded at least once). */
  ready(): boolean;
  /** Stops background refreshes. */
  close(): void;
}

/** What the verifier reports to and reads the time from; all optional (unit tests pass a clock). */
export interface JwtVerifierOptions {
  now?: () => number;
  metrics?: Metrics;
  logger?: Logger;
}

/**
 * A verifier for `config`: the HS256 secret is imported once here, not per request, and the JWKS
 * key manager starts fetching at once (`ready()` stays false until it has keys).
 */
export function createJwtVerifier(config: JwtConfig, options: JwtVerifierOptions = {}): JwtVerifier {
  const now = options.now ?? Date.now;
  const { metrics } = options;
  const secret: KeyObject | undefined =
    config.hs256_secret === undefined
      ? undefined
      : createSecretKey(Buffer.from(config.hs256_secret, 'base64'));
  const asymmetric = config.algorithms ?? ASYMMETRIC_ALGORITHMS;
  const jwks: JwksKeys | undefined =
    config.jwks_url === undefined
      ? undefined
      : createJwksKeys({
          url: config.jwks_url,
          timeout: config.jwks_timeout,
          refreshInterval: config.jwks_refresh_interval,
          cooldown: config.jwks_cooldown,
          algorithms: asymmetric,
          now,
          ...(metrics ? { metrics } : {}),
          ...(options.logger ? { logger: options.logger } : {}),
        });
  const tolerance = config.clock_tolerance / 1000; // seconds, as jose counts them
  const maxAge = config.max_token_age === undefined ? undefined : config.max_token_age / 1000;
  // jose refuses any other `alg` (`none` included) before a key is even looked up.
  const checks: JWTVerifyOptions = {
    algorithms: [...(secret ? ['HS256'] : []), ...(jwks ? asymmetric : [])],
    requiredClaims: ['exp'],
    clockTolerance: tolerance,
    ...(maxAge === undefined ? {} : { maxTokenAge: maxAge }),
    ...(config.issuer === undefined ? {} : { issuer: config.issuer }),
    ...(config.audience === undefined ? {} : { audience: config.audience }),
  };
  const defaults = new Set<string>(config.default_permissions);
  const cache = createTokenCache(config.token_cache_size);
  const holds = (fingerprint: string) => jwks?.holds(fingerprint) ?? false;

  const verifyUncached = async (token: string, at: number): Promise<Identity> => {
    if (secret === undefined && jwks === undefined) throw errors.tokenFailed('no_key');
    let fingerprint: string | undefined;
    const keyFor = async (header: JWSHeaderParameters): Promise<VerifyKey | KeyObject> => {
      // Only listed algorithms get here; HS256 only with a secret, so never with a public key.
      if (header.alg === 'HS256' && secret) return secret;
      if (jwks === undefined || typeof header.alg !== 'string') throw errors.tokenFailed('bad_algorithm');
      if (header.kid !== undefined && typeof header.kid !== 'string') throw errors.tokenFailed('malformed');
      const found = await jwks.resolve(header.alg, header.kid);
      fingerprint = found.fingerprint;
      return found.key;
    };
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keyFor, { ...checks, currentDate: new Date(at) }));
    } catch (err) {
      if (err instanceof GatewayError) throw err;
      throw errors.tokenFailed(reasonOf(err));
    }
    // jose checks `iat` only with maxTokenAge: a token issued in the future is refused here.
    if (typeof payload.iat === 'number' && payload.iat > Math.floor(at / 1000) + tolerance) {
      throw errors.tokenFailed('not_yet_valid');
    }
    const subject = typeof payload.sub === 'string' && payload.sub !== '' ? payload.sub : 'unknown';
    const identity: Identity = Object.freeze({
      scheme: 'bearer',
      subject,
      principal: `jwt:${typeof payload.iss === 'string' ? payload.iss : ''} ${subject}`,
      permissions: permissionsOf(payload[config.permissions_claim], defaults),
    });
    cache.set(token, { identity, expiresAt: expiryOf(payload, tolerance, maxAge), fingerprint });
    return identity;
  };

  return {
    async verify(token: string): Promise<Identity> {
      const at = now();
      const cached = cache.get(token, at, holds);
      if (cached) {
        metrics?.jwtVerifications.inc({ result: 'cached' });
        return cached;
      }
      try {
        const identity = await verifyUncached(token, at);
        metrics?.jwtVerifications.inc({ result: 'verified' });
        return identity;
      } catch (err) {
        metrics?.jwtVerifications.inc({ result: 'refused' });
        throw err;
      }
    },
    ready: () => jwks?.ready() ?? true,
    close: () => jwks?.close(),
  };
}

/**
 * When a verified token stops passing jose's time checks (ms): `exp` plus the tolerance, or its
 * maximum age if sooner. `exp` is a number here: jose has checked it.
 */
function expiryOf(payload: JWTPayload, tolerance: number, maxAge: number | undefined): number {
  const byExp = ((payload.exp as number) + tolerance) * 1000;
  if (maxAge === undefined || typeof payload.iat !== 'number') return byExp;
  return Math.min(byExp, (payload.iat + maxAge + tolerance) * 1000);
}

/** The claim's permissions: an array of strings or a space-separated string; absent or null: the defaults. */
function permissionsOf(claim: unknown, defaults: ReadonlySet<string>): ReadonlySet<string> {
  // `null` is how many identity providers write an unset claim: the same as no claim.
  if (claim === undefined || claim === null) return defaults;
  if (typeof claim === 'string') return new Set(claim.split(' ').filter((p) => p !== ''));
  // A list with anything but strings is malformed as a whole: it grants nothing.
  if (Array.isArray(claim) && claim.every((p) => typeof p === 'string')) return new Set(claim);
  return new Set();
}

/** jose's error, translated where it enters into a reason code. */
function reasonOf(err: unknown): JwtFailure {
  if (err instanceof jose.JWTExpired) return err.claim === 'iat' ? 'too_old' : 'expired';
  if (err instanceof jose.JOSEAlgNotAllowed || err instanceof jose.JOSENotSupported) return 'bad_algorithm';
  if (err instanceof jose.JWSSignatureVerificationFailed) return 'bad_signature';
  if (err instanceof jose.JWTClaimValidationFailed) {
    if (err.claim === 'exp') return err.reason === 'missing' ? 'missing_exp' : 'malformed';
    if (err.claim === 'iat' && err.reason === 'missing') return 'missing_iat';
    if (err.claim === 'nbf' || err.claim === 'iat')
      return err.reason === 'check_failed' ? 'not_yet_valid' : 'malformed';
    if (err.claim === 'iss') return 'bad_issuer';
    if (err.claim === 'aud') return 'bad_audience';
  }
  return 'malformed';
}
