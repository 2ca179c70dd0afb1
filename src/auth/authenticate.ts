/**
 * The authenticate stage: establishes who sent the request (a signed request or a bearer JWT) and
 * reads the body under the limit, hashing it as it arrives, so that no later stage ever sees a body
 * whose signature has not been verified. Checks run in the contract's order (§3), so a request with
 * several faults always gets the same answer.
 */
import type { Config, TokenConfig } from '../config/schema.js';
import { errors, GatewayError } from '../errors.js';
import { type BodyOptions, checkDeclaredLength, type HeldBody, readBody } from '../http/body.js';
import type { RequestContext } from '../http/context.js';
import type { Metrics } from '../observability/metrics.js';
import type { Identity } from './identity.js';
import { createJwtVerifier } from './jwt.js';
import {
  checkClockSkew,
  parseRequestDate,
  parseSignature,
  requestDateOffset,
  SignatureDigest,
  signaturesEqual,
} from './signature.js';

/** What the stage needs: its configuration slices, the metrics, where bodies spool, and a clock. */
export interface AuthenticateDeps {
  auth: Config['auth'];
  server: Config['server'];
  metrics: Metrics;
  tmpDir: string;
  /** ms since the epoch; injected by tests to freeze the clock. */
  now?: () => number;
}

type Scheme = 'signature' | 'bearer' | 'none';

interface KnownToken {
  readonly key: Buffer;
  readonly identity: Identity;
}

/**
 * The token id forms the reference's UUID parser reads: canonical, 32 hex digits, either of them in
 * braces or after `urn:uuid:`. Group 1 or 2 holds the hex digits.
 */
const UUID =
  /^(?:urn:uuid:|\{(?=.*\}$))?(?:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})|([0-9a-f]{32}))\}?$/i;

/** The canonical lower-case form of a token id, or undefined when it is not a UUID. */
function canonicalTokenId(value: string): string | undefined {
  const m = UUID.exec(value);
  if (!m || (value.endsWith('}') && !value.startsWith('{'))) return undefined;
  const hex = (m[1] ?? (m[2] as string)).replace(/-/g, '').toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
const NEVER = new AbortController().signal;

/** The authenticate stage for one configuration; writes `ctx.identity` and `ctx.body`. */
export function createAuthenticate(deps: AuthenticateDeps): (ctx: RequestContext) => Promise<void> {
  const now = deps.now ?? Date.now;
  const { server, metrics } = deps;
  const signatureScheme = deps.auth.signature.scheme.toLowerCase();
  const maxSkew = deps.auth.signature.max_clock_skew;
  const tokens = new Map(deps.auth.signature.tokens.map((t) => [t.id.toLowerCase(), known(t)]));
  const jwt = createJwtVerifier(deps.auth.jwt, { now });

  const bodyOptions = (ctx: RequestContext, onChunk?: (chunk: Buffer) => void): BodyOptions => {
    // The headers are verified: now the client may send the body it held back for `100 Continue`.
    if (ctx.req.headers.expect?.toLowerCase() === '100-continue') ctx.res.writeContinue();
    return {
      limit: server.max_body_size,
      memoryThreshold: server.body_memory_threshold,
      tmpDir: deps.tmpDir,
      idleTimeout: server.body_idle_timeout,
      signal: ctx.deadline?.signal ?? NEVER,
      ...(onChunk ? { onChunk } : {}),
    };
  };

  /** Counts and logs a refusal by its reason code (never a header value), then throws `err`. */
  const refuse = (ctx: RequestContext, scheme: Scheme, reason: string, err: GatewayError): never => {
    metrics.authFailures.inc({ scheme, reason });
    ctx.log.auth_failure = reason;
    if (scheme !== 'none') ctx.log.auth_scheme = scheme;
    throw err;
  };

  /** Runs one of the scheme's checks, turning its catalogue error into a counted refusal. */
  const check = <T>(ctx: RequestContext, reason: string, run: () => T): T => {
    try {
      return run();
    } catch (err) {
      if (err instanceof GatewayError) refuse(ctx, 'signature', reason, err);
      throw err;
    }
  };

  const signed = async (ctx: RequestContext, tokenId: string): Promise<void> => {
    const canonicalId = canonicalTokenId(tokenId);
    if (canonicalId === undefined) {
      return refuse(ctx, 'signature', 'malformed_token_id', errors.tokenIdMalformed());
    }
    // The id is public (a user name, not a secret): log the one claimed, known or not.
    ctx.log.token_id = canonicalId;
    const date = single(ctx.req.headers.requestdate);
    if (date === undefined) return refuse(ctx, 'signature', 'no_date', errors.noRequestDate());
    const clientTime = check(ctx, 'malformed_date', () => parseRequestDate(date));
    const header = single(ctx.req.headers.signature);
    if (header === undefined) return refuse(ctx, 'signature', 'no_signature', errors.noSignature());
    const given = check(ctx, 'malformed_signature', () => parseSignature(header));
    const token = tokens.get(canonicalId);
    if (token === undefined) return refuse(ctx, 'signature', 'unknown_token', errors.unknownToken());
    check(ctx, 'clock_skew', () => checkClockSkew(clientTime, now(), maxSkew, requestDateOffset(date)));

    const digest = new SignatureDigest(token.key, ctx.req.method ?? '', ctx.rawTarget, date);
    const body = await readBody(
      ctx.req,
      bodyOptions(ctx, (chunk) => digest.update(chunk)),
    );
    if (!signaturesEqual(digest.digest(), given)) {
      await body.dispose();
      return refuse(ctx, 'signature', 'digest_mismatch', errors.digestMismatch());
    }
    accept(ctx, token.identity);
    ctx.log.token_id = token.identity.tokenId;
    await hold(ctx, body);
  };

  const bearer = async (ctx: RequestContext, token: string): Promise<void> => {
    let identity: Identity;
    try {
      identity = await jwt.verify(token);
    } catch (err) {
      if (err instanceof GatewayError) return refuse(ctx, 'bearer', err.reason ?? 'malformed', err);
      throw err;
    }
    const body = await readBody(ctx.req, bodyOptions(ctx));
    accept(ctx, identity);
    await hold(ctx, body);
  };

  return async (ctx: RequestContext): Promise<void> => {
    checkDeclaredLength(ctx.req, server.max_body_size);
    const authorization = single(ctx.req.headers.authorization);
    if (authorization === undefined) return refuse(ctx, 'none', 'missing', errors.notAuthenticated());
    const parts = authorization.split(' ');
    if (parts.length !== 2) return refuse(ctx, 'none', 'malformed_header', errors.authTwoComponents());
    const [word = '', credential = ''] = parts;
    const scheme = word.toLowerCase();
    if (scheme === 'bearer') return bearer(ctx, credential);
    if (scheme === signatureScheme) return signed(ctx, credential);
    return refuse(ctx, 'none', 'unknown_scheme', errors.authUnknownScheme(scheme));
  };
}

/** A configured token, prepared once per configuration. */
function known(token: TokenConfig): KnownToken {
  const identity: Identity = Object.freeze({
    scheme: 'signature',
    subject: token.subject,
    tokenId: token.id,
    permissions: new Set<string>(token.permissions),
  });
  return { key: Buffer.from(token.key, 'utf8'), identity };
}

/**
 * Hands the verified body to later stages. A client that went away while the last bytes were being
 * settled may have closed the response already (whose cleanup then found no body): remove it here.
 */
async function hold(ctx: RequestContext, body: HeldBody): Promise<void> {
  ctx.body = body;
  if (ctx.res.closed) {
    await body.dispose();
    throw errors.bodyAborted();
  }
}

function accept(ctx: RequestContext, identity: Identity): void {
  ctx.identity = identity;
  ctx.log.auth_scheme = identity.scheme;
  ctx.log.subject = identity.subject;
}

/** A header's value when present and not empty (duplicates were refused by an earlier stage). */
function single(value: string | string[] | undefined): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return v === undefined || v === '' ? undefined : v;
}
