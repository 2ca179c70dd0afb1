/**
 * How a bearer token is checked once its key is known: jose's options for one way to verify (the
 * HS256 secret, or one identity provider), the time bounds a cached answer keeps, and jose's errors
 * translated where they enter into the reason codes of logs, metrics and `WWW-Authenticate`.
 */
import { errors as jose, type JWTPayload, type JWTVerifyOptions } from 'jose';
import type { ClaimsConfig } from '../config/jwt-providers.js';
import { type PermissionsReader, permissionsReader } from './claims.js';

/** Reason codes of a refused token (`reason` of `gateway_auth_failures_total`). */
export const JWT_FAILURES = [
  'malformed',
  'no_key',
  'bad_algorithm',
  'bad_signature',
  'bad_issuer',
  'bad_audience',
  'expired',
  'too_old',
  'not_yet_valid',
  'missing_exp',
  'missing_iat',
  'jwks_unavailable',
  'unknown_kid',
  'ambiguous_key',
] as const;

type JwtFailure = (typeof JWT_FAILURES)[number];

/** One way a token is checked: the jose options, the time bounds and how permissions are read. */
export interface Checker {
  readonly checks: JWTVerifyOptions;
  readonly tolerance: number;
  readonly maxAge: number | undefined;
  readonly permissions: PermissionsReader;
}

/** The checks of one way to verify (seconds, as jose counts them). */
export function checker(
  algorithms: readonly string[],
  clockTolerance: number,
  maxTokenAge: number | undefined,
  claims: ClaimsConfig,
  expected: { issuer: string | undefined; audience: string | readonly string[] | undefined },
): Checker {
  const tolerance = clockTolerance / 1000;
  const maxAge = maxTokenAge === undefined ? undefined : maxTokenAge / 1000;
  return {
    // jose refuses any other `alg` (`none` included) before a key is even looked up.
    checks: {
      algorithms: [...algorithms],
      requiredClaims: ['exp'],
      clockTolerance: tolerance,
      ...(maxAge === undefined ? {} : { maxTokenAge: maxAge }),
      ...(expected.issuer === undefined ? {} : { issuer: expected.issuer }),
      ...(expected.audience === undefined ? {} : { audience: expected.audience as string | string[] }),
    },
    tolerance,
    maxAge,
    permissions: permissionsReader(claims),
  };
}

/**
 * When a verified token stops passing jose's time checks (ms): `exp` plus the tolerance, or its
 * maximum age if sooner. `exp` is a number here: jose has checked it.
 */
export function expiryOf(payload: JWTPayload, tolerance: number, maxAge: number | undefined): number {
  const byExp = ((payload.exp as number) + tolerance) * 1000;
  if (maxAge === undefined || typeof payload.iat !== 'number') return byExp;
  return Math.min(byExp, (payload.iat + maxAge + tolerance) * 1000);
}

/** jose's error, translated where it enters into a reason code. */
export function reasonOf(err: unknown): JwtFailure {
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
