/**
 * The codes of authentication and permission (contract §3, §8): one per reason of
 * `gateway_auth_failures_total`, whose `reason` label (and the log line's `auth_failure`) is each
 * code's `label`.
 */
import type { CodeFamily } from './entry.js';

const SIGNED = 'unable to validate request signature for client: ';

/** Refusals before a scheme is chosen, client certificates, and permission. */
export const AUTHENTICATION = {
  GW_AUTH_MISSING: {
    status: 401,
    message: 'not authenticated',
    label: 'missing',
    reason: 'No `Authorization` header and no client certificate.',
    action: 'Send a signed request or a bearer token (`WWW-Authenticate` names the schemes that are on).',
  },
  GW_CERTIFICATE_UNKNOWN: {
    status: 401,
    message: 'not authenticated',
    label: 'unknown_certificate',
    reason: 'A verified client certificate that matches no entry of `auth.client_certificates`.',
    action: "Operator: add an entry matching the certificate's SAN or CN.",
  },
  GW_CERTIFICATE_UNTRUSTED: {
    status: 401,
    message: 'not authenticated',
    label: 'untrusted_certificate',
    reason: 'A client certificate not verified against `server.tls.client_ca` (or expired, or revoked).',
    action: 'Present a current certificate issued by the configured client CA.',
  },
  GW_AUTH_HEADER_MALFORMED: {
    status: 400,
    message: 'Expected only two components for the Authorization header.',
    label: 'malformed_header',
    reason: '`Authorization` is not exactly two space-separated parts.',
    action: 'Send `Authorization: <scheme> <credential>` with one space.',
  },
  GW_AUTH_SCHEME_UNKNOWN: {
    status: 400,
    message: 'Unexpected authorization scheme: <scheme>.',
    label: 'unknown_scheme',
    reason: "`Authorization`'s scheme word is neither `Bearer` nor `auth.signature.scheme`.",
    action: 'Use `Bearer` or the signed-request scheme word.',
  },
  GW_PERMISSION_DENIED: {
    status: 403,
    message: 'not authorized',
    reason: 'The verified identity lacks the permission the operation (or route) needs.',
    action: "Operator: grant the permission to the token, the JWT's claim or the certificate entry.",
  },
} as const satisfies CodeFamily;

/** Signed requests, in the order they are checked. */
export const SIGNATURE = {
  GW_TOKEN_ID_MALFORMED: {
    status: 400,
    message: 'Token ID is malformed.',
    label: 'malformed_token_id',
    reason: 'The token id in `Authorization` is not a UUID.',
    action: 'Send the token id as issued.',
  },
  GW_REQUEST_DATE_MISSING: {
    status: 400,
    message: `${SIGNED}no request date header`,
    label: 'no_date',
    reason: 'A signed request without `RequestDate`.',
    action: 'Send `RequestDate` (RFC 3339 with a zone), the date you signed.',
  },
  GW_REQUEST_DATE_MALFORMED: {
    status: 400,
    message: `${SIGNED}malformed request date: <why>`,
    label: 'malformed_date',
    reason: '`RequestDate` is not a strict RFC 3339 date-time with a zone.',
    action: 'Send a date such as `2024-01-01T10:15:00Z`.',
  },
  GW_SIGNATURE_MISSING: {
    status: 400,
    message: `${SIGNED}no signature header`,
    label: 'no_signature',
    reason: 'A signed request without `Signature`.',
    action: 'Send `Signature` (`gateway sign` prints all three headers).',
  },
  GW_SIGNATURE_MALFORMED: {
    status: 400,
    message: `${SIGNED}malformed signature header: <why>`,
    label: 'malformed_signature',
    reason: '`Signature` is not padded standard base64 of 32 bytes.',
    action: 'Send the base64 of the final HMAC-SHA256 digest.',
  },
  GW_TOKEN_UNKNOWN: {
    status: 401,
    message: `${SIGNED}resource not found`,
    label: 'unknown_token',
    reason: 'No token has this id (the YAML list or the token store).',
    action: 'Check the token id; operator: `gateway tokens list`.',
  },
  GW_TOKEN_REVOKED: {
    status: 401,
    message: `${SIGNED}resource not found`,
    label: 'revoked_token',
    reason: 'The token was revoked in the token store.',
    action: 'Use a current token.',
  },
  GW_TOKEN_EXPIRED: {
    status: 401,
    message: `${SIGNED}resource not found`,
    label: 'expired_token',
    reason: "The token store's token is past its expiry.",
    action: 'Use a current token; operator: `gateway tokens create` or `rotate`.',
  },
  GW_UTC_OFFSET_EXCEEDED: {
    status: 401,
    message: `${SIGNED}request date offset exceeds max_utc_offset`,
    label: 'utc_offset',
    reason: "`RequestDate`'s zone offset is beyond `auth.signature.max_utc_offset`.",
    action: 'Sign with a UTC date (`Z`).',
  },
  GW_CLOCK_SKEW: {
    status: 401,
    message: `${SIGNED}signature too far <behind|ahead> by <minutes> minutes. Server time is <time>. Client time is <time>`,
    label: 'clock_skew',
    reason: "`RequestDate` differs from the gateway's clock by more than `auth.signature.max_clock_skew`.",
    action: "Sync the client's clock (NTP) and sign with the current time.",
  },
  GW_SIGNATURE_MISMATCH: {
    status: 401,
    message: `${SIGNED}digest validation failed: signature digest mismatch`,
    label: 'digest_mismatch',
    reason:
      'The signature does not match the method, raw target (with its query), date hour and body, under the key.',
    action:
      'Read the second envelope error (what the gateway signed); `gateway verify` names the usual mistakes.',
  },
} as const satisfies CodeFamily;

/** Bearer JWTs: every reason a token is refused (`error_description` of `WWW-Authenticate` says it too). */
export const BEARER = {
  GW_JWT_MALFORMED: {
    status: 401,
    message: 'Token Authorization failed.',
    label: 'malformed',
    reason: 'The token is not a well-formed JWT, or a claim has the wrong type.',
    action: 'Send the token as the identity provider issued it.',
  },
  GW_JWT_NO_KEY: {
    status: 401,
    message: 'Token Authorization failed.',
    label: 'no_key',
    reason: 'Bearer tokens are not configured: no `hs256_secret`, `jwks_url` or `issuers`.',
    action: 'Use a signed request, or operator: configure `auth.jwt`.',
  },
  GW_JWT_ALGORITHM_NOT_ALLOWED: {
    status: 401,
    message: 'Token Authorization failed.',
    label: 'bad_algorithm',
    reason: "The token's `alg` (`none` included) is not allowed for its key.",
    action: "Sign with an algorithm of the provider's `algorithms`.",
  },
  GW_JWT_SIGNATURE_INVALID: {
    status: 401,
    message: 'Token Authorization failed.',
    label: 'bad_signature',
    reason: "The token's signature does not verify under its key.",
    action: 'Send an unaltered token from the configured issuer.',
  },
  GW_JWT_ISSUER_INVALID: {
    status: 401,
    message: 'Token Authorization failed.',
    label: 'bad_issuer',
    reason: "The token's `iss` is not the configured issuer (or names no configured provider).",
    action: 'Use a token of a configured issuer; operator: check `auth.jwt.issuer` or `issuers`.',
  },
  GW_JWT_AUDIENCE_INVALID: {
    status: 401,
    message: 'Token Authorization failed.',
    label: 'bad_audience',
    reason: "The token's `aud` does not name the configured audience.",
    action: "Request a token for the gateway's audience.",
  },
  GW_JWT_EXPIRED: {
    status: 401,
    message: 'Token Authorization failed.',
    label: 'expired',
    reason: 'The token is past its `exp` (beyond `clock_tolerance`).',
    action: 'Get a new token.',
  },
  GW_JWT_TOO_OLD: {
    status: 401,
    message: 'Token Authorization failed.',
    label: 'too_old',
    reason: "The token's `iat` is older than `max_token_age`.",
    action: 'Get a new token.',
  },
  GW_JWT_NOT_YET_VALID: {
    status: 401,
    message: 'Token Authorization failed.',
    label: 'not_yet_valid',
    reason: "The token's `nbf` or `iat` is in the future (beyond `clock_tolerance`).",
    action: 'Check the clocks of the identity provider and the gateway.',
  },
  GW_JWT_EXPIRY_MISSING: {
    status: 401,
    message: 'Token Authorization failed.',
    label: 'missing_exp',
    reason: 'The token has no `exp` claim.',
    action: 'Use tokens that expire.',
  },
  GW_JWT_ISSUED_AT_MISSING: {
    status: 401,
    message: 'Token Authorization failed.',
    label: 'missing_iat',
    reason: 'The token has no `iat` claim while `max_token_age` is set.',
    action: 'Use tokens with `iat`, or operator: unset `max_token_age`.',
  },
  GW_JWT_KEY_UNKNOWN: {
    status: 401,
    message: 'Token Authorization failed.',
    label: 'unknown_kid',
    reason: "The token's `kid` is not in the identity provider's key set, even after a fetch.",
    action: 'Check that the token comes from the configured provider; the log names the `kid`.',
  },
  GW_JWT_KEY_AMBIGUOUS: {
    status: 401,
    message: 'Token Authorization failed.',
    label: 'ambiguous_key',
    reason: 'The token has no `kid` and several keys of the set could verify it.',
    action: 'Issue tokens with a `kid`.',
  },
  GW_JWKS_UNAVAILABLE: {
    status: 401,
    message: 'Token Authorization failed.',
    label: 'jwks_unavailable',
    reason: "The identity provider's keys have never loaded.",
    action: 'Operator: check `jwks_url` or discovery (`/readyz`, the `jwks` log lines).',
  },
} as const satisfies CodeFamily;
