/**
 * The authenticate stage: asks the schemes (`schemes/index.ts`) in order who sent the request, and
 * counts, logs and traces their answer in one place. The `Authorization` header's scheme word picks
 * the scheme; without the header a TLS client certificate may answer; a request no scheme claims is
 * refused (contract §3). The body is read under the limit, and verified where the scheme signs it,
 * before any later stage sees it.
 */
import { CODES, errors, GatewayError } from '../errors.js';
import { checkDeclaredLength, type HeldBody } from '../http/body.js';
import type { RequestContext } from '../http/context.js';
import type { Identity } from '../http/identity.js';
import type { Stage } from '../http/stage.js';
import { credentialsOf } from './credentials.js';
import type { KeySourceInfo } from './jwt.js';
import { SCHEMES } from './schemes/index.js';
import { type Claim, NOT_MINE, type OpenScheme, type SchemeDeps } from './schemes/scheme.js';
import { BodyReader, bodyLimit, hold } from './verified-body.js';

/** What the stage needs: the schemes' (`schemes/scheme.ts`), and where bodies spool. */
export type AuthenticateDeps = Omit<SchemeDeps, 'now' | 'body'> & {
  readonly tmpDir: string;
  /** ms since the epoch; injected by tests to freeze the clock. */
  readonly now?: () => number;
};

/** The authenticate stage, with the readiness of its schemes and a way to stop their timers. */
export interface Authenticator extends Stage {
  /** False until every scheme has what it needs (every required identity provider its keys). */
  ready(): boolean;
  /** Each scheme's readiness checks, for `/readyz`. */
  checks(): Record<string, boolean | string>;
  /** Every identity provider's key source. */
  sources(): KeySourceInfo[];
  /** Stops background work (key refreshes). */
  close(): void;
}

/** The stage's own refusals (scheme `none`): no scheme could be asked, or none claimed the request. */
const UNCLAIMED = ['missing', 'malformed_header', 'unknown_scheme'];

/** `scheme` and `reason` of every refusal `gateway_auth_failures_total` counts (exported at 0). */
export const AUTH_FAILURES: Readonly<Record<string, readonly string[]>> = Object.fromEntries([
  ['none', UNCLAIMED],
  ...SCHEMES.map((s) => [s.name, s.reasons]),
]);

/** A scheme opened for the configuration, with what the stage needs of it per request. */
interface Asked {
  readonly name: string;
  readonly reasons: ReadonlySet<string>;
  readonly scheme: OpenScheme;
}

/** The authenticate stage for one configuration; writes `ctx.identity` and `ctx.body`. */
export function createAuthenticate(deps: AuthenticateDeps): Authenticator {
  const { metrics, server, tracing } = deps;
  const schemeDeps = { ...deps, now: deps.now ?? Date.now, body: new BodyReader(server, deps.tmpDir) };
  const asked: Asked[] = SCHEMES.map((s) => ({
    name: s.name,
    reasons: new Set(s.reasons),
    scheme: s.open(schemeDeps),
  }));
  // Without credentials: the challenge of every scheme that is on (with none on, of every scheme).
  const challengers = asked.filter((a) => a.scheme.challenge !== undefined);
  const on = challengers.filter((a) => a.scheme.on);
  const unclaimed = (on.length > 0 ? on : challengers).map((a) => a.scheme.challenge?.()).join(', ');

  /**
   * Counts and logs a refusal by its reason code (never a header value), then throws `err`: the
   * stage's own (scheme `none`), or one of a scheme's reasons. Anything else a claim throws goes on.
   */
  const refuse = (ctx: RequestContext, a: Asked | undefined, err: unknown): never => {
    const why = err instanceof GatewayError ? (err.reason ?? CODES[err.code].label) : undefined;
    if (why !== undefined && (a === undefined || a.reasons.has(why))) {
      metrics.authFailures.inc({ scheme: a?.name ?? 'none', reason: why });
      ctx.log.auth_failure = why;
      const { log, status } = err as GatewayError;
      if (log) Object.assign(ctx.log, log);
      if (a !== undefined) ctx.log.auth_scheme = a.name;
      if (status === 401) ctx.headers.push('WWW-Authenticate', a?.scheme.challenge?.(why) ?? unclaimed);
    }
    throw err;
  };
  /** Accepts `identity` once the body is held: the scheme's, verified, or read now. */
  const admit = (ctx: RequestContext, identity: Identity): void | Promise<void> => {
    const body = ctx.body ?? schemeDeps.body.read(ctx);
    if (body instanceof Promise) return body.then((b) => accept(ctx, identity, b));
    return accept(ctx, identity, body);
  };

  const stage = (ctx: RequestContext): void | Promise<void> => {
    checkDeclaredLength(ctx.req, bodyLimit(ctx, server));
    const credentials = credentialsOf(ctx.req);
    if (credentials === undefined) return refuse(ctx, undefined, errors.authTwoComponents());
    for (const a of asked) {
      let claim: Claim;
      try {
        claim = a.scheme.claim(ctx, credentials);
      } catch (err) {
        return refuse(ctx, a, err);
      }
      if (claim === NOT_MINE) continue;
      if (!(claim instanceof Promise)) return admit(ctx, claim);
      return claim.then(
        (identity) => admit(ctx, identity),
        (err: unknown) => refuse(ctx, a, err),
      );
    }
    const { word } = credentials;
    return word === undefined
      ? refuse(ctx, undefined, errors.notAuthenticated())
      : refuse(ctx, undefined, errors.authUnknownScheme(word));
  };
  // Traced: a key fetch the stage causes hangs from the stage's span, until the stage is done.
  const traced: Stage =
    tracing === undefined
      ? stage
      : (ctx) => {
          const outer = ctx.span;
          return tracing.span('authenticate', 'internal', {}, outer, (span) => {
            ctx.span = span;
            const restore = () => {
              ctx.span = outer;
            };
            try {
              const done = stage(ctx);
              if (done instanceof Promise) return done.finally(restore);
              restore();
              return done;
            } catch (err) {
              restore();
              throw err;
            }
          });
        };
  return Object.assign(traced, {
    ready: () => asked.every((a) => a.scheme.ready?.() ?? true),
    checks: () =>
      Object.assign({}, ...asked.map((a) => a.scheme.checks?.() ?? {})) as Record<string, boolean | string>,
    sources: () => asked.flatMap((a) => a.scheme.sources?.() ?? []),
    close: () => {
      for (const a of asked) a.scheme.close?.();
    },
  });
}

function accept(ctx: RequestContext, identity: Identity, body: HeldBody): void | Promise<void> {
  ctx.identity = identity;
  ctx.log.auth_scheme = identity.scheme;
  ctx.log.subject = identity.subject;
  if (identity.tokenId !== undefined) ctx.log.token_id = identity.tokenId;
  return hold(ctx, body);
}
