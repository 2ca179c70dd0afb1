/**
 * `WWW-Authenticate` (RFC 9110 §11.6.1) on every 401 the gateway writes, one header field: a bearer
 * failure says why in RFC 6750's form, a signed-request failure names its scheme, and a request with
 * no credentials gets the challenge of every scheme that is on, Bearer first (contract §3).
 */
import type { Config } from '../config/schema.js';

/** `error_description` by reason code: fixed texts, never anything of the token. */
const BEARER_TEXT: Readonly<Record<string, string>> = {
  expired: 'token expired',
  not_yet_valid: 'token not yet valid',
  too_old: 'token too old',
  missing_exp: 'token has no expiry',
  bad_issuer: 'wrong issuer',
  bad_audience: 'wrong audience',
  bad_signature: 'signature invalid',
  bad_algorithm: 'algorithm not allowed',
  unknown_kid: 'unknown signing key',
  ambiguous_key: 'unknown signing key',
  jwks_unavailable: 'signing keys unavailable',
  no_key: 'signing keys unavailable',
};

/** The challenges of one configuration. */
interface Challenges {
  /** A refused bearer token, by its reason code. */
  bearer(reason: string): string;
  /** A refused signed request (every 401 of that scheme). */
  readonly signature: string;
  /** A request without credentials: every scheme that is on. */
  readonly none: string;
}

/** The challenges for `auth`: bearer is on with a secret or an identity provider, signatures with a token. */
export function challengesFor(auth: Config['auth']): Challenges {
  const bearer = 'Bearer realm="api"';
  const signature = `${auth.signature.scheme} realm="api"`;
  const { jwt } = auth;
  const on = [
    ...(jwt.hs256_secret !== undefined || jwt.jwks_url !== undefined || jwt.issuers.length > 0
      ? [bearer]
      : []),
    ...(auth.signature.tokens.length > 0 ? [signature] : []),
  ];
  return {
    bearer: (reason) =>
      `${bearer}, error="invalid_token", error_description="${BEARER_TEXT[reason] ?? 'malformed token'}"`,
    signature,
    // With no scheme on, every request is refused: still name both, so that the 401 carries one.
    none: (on.length > 0 ? on : [bearer, signature]).join(', '),
  };
}
