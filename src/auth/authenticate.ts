/**
 * The authenticate stage: establishes who sent the request (a signed request or a bearer JWT) and
 * reads the body under the limit, hashing it as it arrives, so that no later stage ever sees a body
 * whose signature has not been verified. Checks run in the contract's order (§3), so a request with
 * several faults always gets the same answer. Without `Authorization`, a TLS client certificate may
 * be the identity (§8, `client-certificate.ts`).
 */
import type { Config } from '../config/schema.js';
import { errors, GatewayError } from '../errors.js';
import { type BodyOptions, checkDeclaredLength, emptyBody, type HeldBody, readBody } from '../http/body.js';
import type { IncomingMessage } from 'node:http';
import type { RequestContext } from '../http/context.js';
import { deadlineOf } from '../http/deadline.js';
import { singleHeaders } from '../http/headers.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing/tracing.js';
import { challengesFor } from './challenge.js';
import { createCertificateScheme } from './schemes/client-certificate.js';
import { signedSummary } from './schemes/signature-summary.js';
import type { Identity } from '../http/identity.js';
import { createJwtVerifier, type KeySourceInfo, type JwtWait } from './jwt.js';
import type { KeySources } from './key-sources.js';
import { RequestKeys } from '../signing/request-keys.js';
import { type RequestDate, RequestDateReader } from '../signing/request-date.js';
import { canonicalTokenId } from '../signing/token-id.js';
import { createTokenRegistry, type TokenRegistry, type UsableToken } from '../tokens/registry.js';
import { checkClockSkew, checkUtcOffset, parseSignature, signaturesEqual } from './schemes/signature-checks.js';

/** What the stage needs: its configuration slices, the metrics, where bodies spool, and a clock. */
export interface AuthenticateDeps {
  auth: Config['auth'];
  server: Config['server'];
  metrics: Metrics;
  tmpDir: string;
  /** ms since the epoch; injected by tests to freeze the clock. */
  now?: () => number;
  /** Where the JWKS key manager reports its fetches (none when absent). */
  logger?: Logger;
  /** The signed-request tokens (default: the YAML list alone); the caller closes it. */
  tokens?: TokenRegistry;
  /** Identity providers' key source states, kept by the app across reloads. */
  keySources?: KeySources;
  /** Where JWKS fetches are traced (contract §10); absent when tracing is off. */
  tracing?: Tracing;
}

type Scheme = 'signature' | 'bearer' | 'client_certificate' | 'none';

/** The authenticate stage, with the readiness of its key sources and a way to stop their timers. */
export interface Authenticator {
  (ctx: RequestContext): void | Promise<void>;
  /** False until every required key source (an identity provider's keys) has loaded its keys. */
  ready(): boolean;
  /** Each identity provider's readiness, for `/readyz`. */
  checks(): Record<string, boolean | string>;
  /** Every identity provider's key source. */
  sources(): KeySourceInfo[];
  /** Stops background work (key refreshes). */
  close(): void;
}

/** The authenticate stage for one configuration; writes `ctx.identity` and `ctx.body`. */
export function createAuthenticate(deps: AuthenticateDeps): Authenticator {
  const now = deps.now ?? Date.now;
  const { server, metrics } = deps;
  const signatureScheme = deps.auth.signature.scheme.toLowerCase();
  const maxSkew = deps.auth.signature.max_clock_skew;
  const maxOffset = deps.auth.signature.max_utc_offset;
  const tokens = deps.tokens ?? createTokenRegistry({ tokens: deps.auth.signature.tokens });
  const requestKeys = new RequestKeys();
  const dates = new RequestDateReader();
  // A revoked, rotated or removed token's cached signing keys go with it.
  tokens.onDrop((id) => requestKeys.forget(id));
  const explainMismatch = deps.auth.signature.explain_mismatch;
  const challenges = challengesFor(deps.auth);
  // Only a listener asking for client certificates can make this scheme answer (contract §8).
  const certificates =
    (server.tls?.client_auth ?? 'none') === 'none'
      ? undefined
      : createCertificateScheme(deps.auth.client_certificates);
  const jwt = createJwtVerifier(deps.auth.jwt, {
    now,
    metrics,
    ...(deps.logger ? { logger: deps.logger } : {}),
    ...(deps.keySources ? { keySources: deps.keySources } : {}),
    ...(deps.tracing ? { tracing: deps.tracing } : {}),
  });

  const bodyOptions = (ctx: RequestContext, onChunk?: (chunk: Buffer) => void): BodyOptions => {
    // The headers are verified: now the client may send the body it held back for `100 Continue`.
    if (ctx.req.headers.expect?.toLowerCase() === '100-continue') ctx.res.writeContinue();
    return {
      limit: server.max_body_size,
      memoryThreshold: server.body_memory_threshold,
      tmpDir: deps.tmpDir,
      idleTimeout: server.body_idle_timeout,
      signal: deadlineOf(ctx),
      ...(onChunk ? { onChunk } : {}),
    };
  };

  /**
   * Counts and logs a refusal by its reason code (never a header value), then throws `err`. Every
   * 401 of every scheme gets its `WWW-Authenticate` here, in this one place.
   */
  const refuse = (ctx: RequestContext, scheme: Scheme, reason: string, err: GatewayError): never => {
    metrics.authFailures.inc({ scheme, reason });
    ctx.log.auth_failure = reason;
    if (err.log) Object.assign(ctx.log, err.log);
    if (scheme !== 'none') ctx.log.auth_scheme = scheme;
    if (err.status === 401) {
      const challenge =
        scheme === 'bearer'
          ? challenges.bearer(reason)
          : scheme === 'signature'
            ? challenges.signature
            : challenges.none;
      ctx.headers.push('WWW-Authenticate', challenge);
    }
    throw err;
  };

  /**
   * Refuses a signed request whose check `reason` threw `err`: a catalogue error is a counted
   * refusal, anything else goes on as it is.
   */
  const refuseSigned = (ctx: RequestContext, reason: string, err: unknown): never => {
    if (err instanceof GatewayError) refuse(ctx, 'signature', reason, err);
    throw err;
  };

  /** The request's body, at once when it has none (the common GET), else read under the limit. */
  const bodyOf = (ctx: RequestContext): HeldBody | Promise<HeldBody> =>
    emptyBody(ctx.req) ?? readBody(ctx.req, bodyOptions(ctx));

  /** Admits a signed request whose signature `matched`, once its body is held (verified). */
  const admitSigned = (
    ctx: RequestContext,
    token: UsableToken,
    date: string,
    matched: boolean,
    body: HeldBody,
  ): void | Promise<void> => {
    if (!matched) return mismatch(ctx, ctx.req.method ?? '', date, body);
    accept(ctx, token.identity);
    token.used();
    ctx.log.token_id = token.identity.tokenId;
    return hold(ctx, body);
  };

  // The checks in the contract's order, each refusal with its reason; no closure is made per request.
  const signed = (ctx: RequestContext, tokenId: string, headers: AuthHeaders): void | Promise<void> => {
    // The registry holds canonical ids: an id it knows as sent is canonical, and only an id it does
    // not know is read for its form (and looked up again in its canonical form).
    let token = tokens.get(tokenId);
    let canonicalId = tokenId;
    if (!token.ok && token.reason === 'unknown_token') {
      const canonical = canonicalTokenId(tokenId);
      if (canonical === undefined) {
        return refuse(ctx, 'signature', 'malformed_token_id', errors.tokenIdMalformed());
      }
      canonicalId = canonical;
      if (canonical !== tokenId) token = tokens.get(canonical);
    }
    // The id is public (a user name, not a secret): log the one claimed, known or not.
    ctx.log.token_id = canonicalId;
    const date = headers.requestDate;
    if (date === undefined) return refuse(ctx, 'signature', 'no_date', errors.noRequestDate());
    let clientTime: RequestDate;
    try {
      clientTime = dates.read(date);
    } catch (err) {
      return refuseSigned(ctx, 'malformed_date', err);
    }
    const header = headers.signature;
    if (header === undefined) return refuse(ctx, 'signature', 'no_signature', errors.noSignature());
    let given: Buffer;
    try {
      given = parseSignature(header);
    } catch (err) {
      return refuseSigned(ctx, 'malformed_signature', err);
    }
    if (!token.ok) return refuse(ctx, 'signature', token.reason, errors.unknownToken(token.reason));
    // The minutes and zone of RequestDate are not signed: a zone far from UTC would let a captured
    // request look current for hours (§3 "Replay bound").
    try {
      checkUtcOffset(clientTime, maxOffset);
    } catch (err) {
      return refuseSigned(ctx, 'utc_offset', err);
    }
    try {
      checkClockSkew(clientTime, now(), maxSkew);
    } catch (err) {
      return refuseSigned(ctx, 'clock_skew', err);
    }

    // During a rotation's overlap two keys verify: both are hashed and both compared.
    const method = ctx.req.method ?? '';
    const keys = token.keys;
    const empty = emptyBody(ctx.req);
    if (empty !== undefined) {
      // No body (the common GET): the signature of an empty body, kept for a request that repeats.
      let matched = false;
      for (const k of keys) {
        if (signaturesEqual(requestKeys.empty(k.cacheId, k.key, method, ctx.rawTarget, date), given))
          matched = true;
      }
      return admitSigned(ctx, token, date, matched, empty);
    }
    const digests = keys.map((k) => requestKeys.open(k.cacheId, k.key, method, ctx.rawTarget, date));
    const verify = (body: HeldBody): void | Promise<void> => {
      let matched = false;
      for (const digest of digests) if (signaturesEqual(digest.digest(), given)) matched = true;
      return admitSigned(ctx, token, date, matched, body);
    };
    const onChunk = (chunk: Buffer) => {
      for (const digest of digests) digest.update(chunk);
    };
    return readBody(ctx.req, bodyOptions(ctx, onChunk)).then(verify);
  };

  /** Refuses a digest mismatch, saying what was signed (in the response body only: it holds the query). */
  const mismatch = async (
    ctx: RequestContext,
    method: string,
    date: string,
    body: HeldBody,
  ): Promise<void> => {
    const summary = explainMismatch
      ? await signedSummary(method, ctx.rawTarget, date, body).catch(() => undefined)
      : undefined;
    await body.dispose();
    return refuse(ctx, 'signature', 'digest_mismatch', errors.digestMismatch(summary));
  };

  /** Accepts `identity` once the body (if any) is read under the limit. */
  const admit = (ctx: RequestContext, identity: Identity): void | Promise<void> => {
    const body = bodyOf(ctx);
    const held = (b: HeldBody) => {
      accept(ctx, identity);
      return hold(ctx, b);
    };
    return body instanceof Promise ? body.then(held) : held(body);
  };

  /** A request with no `Authorization`: its connection's client certificate, if it presented one. */
  const certificate = (ctx: RequestContext): void | Promise<void> => {
    const outcome = certificates?.identify(ctx.req.socket);
    if (outcome === undefined) return refuse(ctx, 'none', 'missing', errors.notAuthenticated());
    if (!outcome.ok) return refuse(ctx, 'client_certificate', outcome.reason, errors.notAuthenticated());
    return admit(ctx, outcome.identity);
  };

  const bearer = (ctx: RequestContext, token: string): void | Promise<void> => {
    // An unknown `kid` may wait for the identity provider's keys, within the request's deadline (the
    // signal is made only if it does).
    const verified = jwt.verify(token, new BearerWait(ctx));
    if (!(verified instanceof Promise)) return admit(ctx, verified);
    return verified.then(
      (identity) => admit(ctx, identity),
      (err: unknown) => {
        // The deadline or a client gone while waiting is no refusal of the token.
        if (err instanceof GatewayError && err.status === 401) {
          return refuse(ctx, 'bearer', err.reason ?? 'malformed', err);
        }
        throw err;
      },
    );
  };

  const stage = (ctx: RequestContext): void | Promise<void> => {
    checkDeclaredLength(ctx.req, server.max_body_size);
    const headers = authHeaders(ctx.req);
    const { authorization } = headers;
    if (authorization === undefined) return certificate(ctx);
    const space = authorization.indexOf(' ');
    if (space === -1 || authorization.indexOf(' ', space + 1) !== -1) {
      return refuse(ctx, 'none', 'malformed_header', errors.authTwoComponents());
    }
    const scheme = authorization.slice(0, space).toLowerCase();
    const credential = authorization.slice(space + 1);
    if (scheme === 'bearer') return bearer(ctx, credential);
    if (scheme === signatureScheme) return signed(ctx, credential, headers);
    return refuse(ctx, 'none', 'unknown_scheme', errors.authUnknownScheme(scheme));
  };
  return Object.assign(stage, {
    ready: () => jwt.ready(),
    checks: () => jwt.checks(),
    sources: () => jwt.sources(),
    close: () => jwt.close(),
  });
}

/**
 * What an unknown `kid` may wait for: the request's deadline, its signal made only if it waits. A
 * class, its getter on the prototype: an object literal with a getter made per request gave every
 * request a hidden class of its own, which the garbage collector then had to carry (measured: the
 * JWT path's scavenges 4–10 times the signed path's, with three times the heap).
 */
class BearerWait implements JwtWait {
  readonly expiresAt: number | undefined;
  readonly #ctx: RequestContext;
  constructor(ctx: RequestContext) {
    this.#ctx = ctx;
    this.expiresAt = ctx.deadline?.expiresAt;
  }
  get signal(): AbortSignal {
    return deadlineOf(this.#ctx);
  }
}

/**
 * Hands the verified body to later stages. A client that went away while the last bytes were being
 * settled may have closed the response already (whose cleanup then found no body): remove it here.
 */
function hold(ctx: RequestContext, body: HeldBody): void | Promise<void> {
  ctx.body = body;
  if (!ctx.res.closed) return undefined;
  const disposed = body.dispose();
  if (disposed === undefined) throw errors.bodyAborted();
  return disposed.then(() => {
    throw errors.bodyAborted();
  });
}

function accept(ctx: RequestContext, identity: Identity): void {
  ctx.identity = identity;
  ctx.log.auth_scheme = identity.scheme;
  ctx.log.subject = identity.subject;
}

interface AuthHeaders {
  readonly authorization: string | undefined;
  readonly requestDate: string | undefined;
  readonly signature: string | undefined;
}

/** The three authentication headers' raw values, read in one pass. */
const readAuthHeaders = singleHeaders(['Authorization', 'RequestDate', 'Signature']);

/**
 * The three authentication headers, each read once from the raw list (400 when one is repeated:
 * Node would keep only the first `Authorization`); an empty value counts as absent.
 */
function authHeaders(req: IncomingMessage): AuthHeaders {
  const values = readAuthHeaders(req);
  return {
    authorization: values[0] || undefined,
    requestDate: values[1] || undefined,
    signature: values[2] || undefined,
  };
}
