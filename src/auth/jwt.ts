/**
 * Bearer JWTs, verified with jose. Every failure becomes the catalogue's 401 `Token Authorization
 * failed.` carrying a low-cardinality reason code for the log and the metric, never for the client.
 */
import { createSecretKey, type KeyObject } from 'node:crypto';
import { type JWTPayload, type JWTVerifyOptions, errors as jose, jwtVerify } from 'jose';
import type { Config } from '../config/schema.js';
import { errors } from '../errors.js';
import type { Identity } from './identity.js';

type JwtConfig = Config['auth']['jwt'];

/** Reason codes of a refused token (`reason` of `gateway_auth_failures_total`). */
export type JwtFailure =
  | 'malformed'
  | 'bad_algorithm'
  | 'bad_signature'
  | 'expired'
  | 'not_yet_valid'
  | 'missing_exp'
  | 'bad_issuer'
  | 'bad_audience'
  | 'no_key';

/** Verifies bearer tokens against one configuration. */
export interface JwtVerifier {
  /** The identity a valid token carries; throws the catalogue's 401 with a reason code otherwise. */
  verify(token: string): Promise<Identity>;
  /** False until every key source has its keys (a JWKS loaded at least once). */
  ready(): boolean;
  /** Stops background refreshes. */
  close(): void;
}

/**
 * A verifier for `config`: the HS256 secret is decoded and imported once here, not per request.
 * (`jwks_url` is not read yet; asymmetric keys will be a second key source beside the secret.)
 */
export function createJwtVerifier(config: JwtConfig, options: { now?: () => number } = {}): JwtVerifier {
  const now = options.now ?? Date.now;
  const key: KeyObject | undefined =
    config.hs256_secret === undefined
      ? undefined
      : createSecretKey(Buffer.from(config.hs256_secret, 'base64'));
  const tolerance = config.clock_tolerance / 1000; // seconds, as jose counts them
  const checks: JWTVerifyOptions = {
    algorithms: ['HS256'],
    requiredClaims: ['exp'],
    clockTolerance: tolerance,
    ...(config.issuer === undefined ? {} : { issuer: config.issuer }),
    ...(config.audience === undefined ? {} : { audience: config.audience }),
  };
  const defaults = new Set<string>(config.default_permissions);

  return {
    async verify(token: string): Promise<Identity> {
      if (key === undefined) throw errors.tokenFailed('no_key');
      const at = now();
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, key, { ...checks, currentDate: new Date(at) }));
      } catch (err) {
        throw errors.tokenFailed(reasonOf(err));
      }
      // jose checks `iat` only with maxTokenAge: a token issued in the future is refused here.
      if (typeof payload.iat === 'number' && payload.iat > Math.floor(at / 1000) + tolerance) {
        throw errors.tokenFailed('not_yet_valid');
      }
      return {
        scheme: 'bearer',
        subject: typeof payload.sub === 'string' && payload.sub !== '' ? payload.sub : 'unknown',
        permissions: permissionsOf(payload[config.permissions_claim], defaults),
      };
    },
    ready: () => true,
    close: () => undefined,
  };
}

/** The claim's permissions: an array of strings or a space-separated string; absent: the defaults. */
function permissionsOf(claim: unknown, defaults: ReadonlySet<string>): ReadonlySet<string> {
  if (claim === undefined) return defaults;
  if (typeof claim === 'string') return new Set(claim.split(' ').filter((p) => p !== ''));
  if (Array.isArray(claim)) return new Set(claim.filter((p): p is string => typeof p === 'string'));
  return new Set();
}

/** jose's error, translated where it enters into a reason code. */
function reasonOf(err: unknown): JwtFailure {
  if (err instanceof jose.JWTExpired) return 'expired';
  if (err instanceof jose.JOSEAlgNotAllowed || err instanceof jose.JOSENotSupported) return 'bad_algorithm';
  if (err instanceof jose.JWSSignatureVerificationFailed) return 'bad_signature';
  if (err instanceof jose.JWTClaimValidationFailed) {
    if (err.claim === 'exp') return err.reason === 'missing' ? 'missing_exp' : 'malformed';
    if (err.claim === 'nbf' || err.claim === 'iat')
      return err.reason === 'check_failed' ? 'not_yet_valid' : 'malformed';
    if (err.claim === 'iss') return 'bad_issuer';
    if (err.claim === 'aud') return 'bad_audience';
  }
  return 'malformed';
}
