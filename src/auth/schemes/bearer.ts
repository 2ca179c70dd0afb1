/**
 * Bearer JWTs (contract §3): `Authorization: Bearer <JWT>`, verified by `../jwt.ts` against the HS256
 * secret or the keys of the identity provider the token's `iss` names. A refusal is the catalogue's
 * 401 with a reason that `WWW-Authenticate` explains in RFC 6750's form, never with the token.
 */
import type { RequestContext } from '../../http/context.js';
import type { SpanParent } from '../../observability/tracing/tracing.js';
import { deadlineOf } from '../../http/deadline.js';
import { JWT_FAILURES } from '../jwt-checks.js';
import { createJwtVerifier, type JwtWait } from '../jwt.js';
import { type AuthScheme, NOT_MINE } from './scheme.js';

/** `error_description` by reason code: fixed texts, never anything of the token. */
const TEXT: Readonly<Record<string, string>> = {
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

const CHALLENGE = 'Bearer realm="api"';

/** The bearer scheme: on with an HS256 secret or an identity provider. */
export const bearer: AuthScheme = {
  name: 'bearer',
  reasons: JWT_FAILURES,
  open(deps) {
    const { jwt: config } = deps.auth;
    const jwt = createJwtVerifier(config, {
      now: deps.now,
      metrics: deps.metrics,
      ...(deps.logger ? { logger: deps.logger } : {}),
      ...(deps.keySources ? { keySources: deps.keySources } : {}),
      ...(deps.tracing ? { tracing: deps.tracing } : {}),
    });
    return {
      on: config.hs256_secret !== undefined || config.jwks_url !== undefined || config.issuers.length > 0,
      challenge: (reason) =>
        reason === undefined
          ? CHALLENGE
          : `${CHALLENGE}, error="invalid_token", error_description="${TEXT[reason] ?? 'malformed token'}"`,
      claim(ctx, credentials) {
        if (credentials.word !== 'bearer') return NOT_MINE;
        // An unknown `kid` may wait for the identity provider's keys, within the request's deadline.
        return jwt.verify(credentials.credential as string, new BearerWait(ctx));
      },
      ready: () => jwt.ready(),
      checks: () => jwt.checks(),
      sources: () => jwt.sources(),
      close: () => jwt.close(),
    };
  },
};

/**
 * What an unknown `kid` may wait for: the request's deadline, its signal made only if it waits. A
 * class, its getter on the prototype, so that every request's object has the one shape.
 */
class BearerWait implements JwtWait {
  readonly expiresAt: number | undefined;
  readonly #ctx: RequestContext;
  readonly parent: SpanParent | undefined;
  constructor(ctx: RequestContext) {
    this.#ctx = ctx;
    this.expiresAt = ctx.deadline?.expiresAt;
    this.parent = ctx.span;
  }
  get signal(): AbortSignal {
    return deadlineOf(this.#ctx);
  }
}
