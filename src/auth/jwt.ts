/**
 * Bearer JWTs, verified with jose: HS256 against `hs256_secret` only (with `auth.jwt`'s issuer and
 * audience), the asymmetric algorithms against the keys of the identity provider the token's `iss`
 * picks (`jwks_url`, or an entry of `issuers`; see `jwks.ts`). Every failure becomes the catalogue's
 * 401 `Token Authorization failed.` carrying a low-cardinality reason code for the log, the metric
 * and `WWW-Authenticate`, never the token.
 */
import { createSecretKey, type KeyObject } from 'node:crypto';
import {
  decodeJwt,
  decodeProtectedHeader,
  type JWSHeaderParameters,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
} from 'jose';
import { jwtClaims, type JwtProvider, jwtProviders } from '../config/jwt-providers.js';
import type { JwtConfig } from '../config/schema.js';
import { errors, GatewayError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { countedChild } from '../observability/define.js';
import type { SpanParent, Tracing } from '../observability/tracing/tracing.js';
import type { Identity } from '../http/identity.js';
import { ASYMMETRIC_ALGORITHMS } from './jwk-set.js';
import { createJwksKeys, type JwksKeys } from './jwks.js';
import { type Checker, checker, expiryOf, reasonOf } from './jwt-checks.js';
import type { KeySources } from './key-sources.js';
import { createJwtCache } from './jwt-cache.js';

/** How long a request may wait for keys: its deadline (`performance.now()` ms) and signal. */
export interface JwtWait {
  readonly expiresAt?: number | undefined;
  readonly signal?: AbortSignal;
  /** With tracing on, where a key fetch the token causes hangs. */
  readonly parent?: SpanParent | undefined;
}

/** An identity provider's key source, as readiness and a reload see it. */
export interface KeySourceInfo {
  /** The key source's identity (where its keys come from, for which algorithms). */
  readonly id: string;
  readonly name: string;
  readonly at: string;
  readonly required: boolean;
  readonly loaded: boolean;
}

/** Verifies bearer tokens against one configuration. */
export interface JwtVerifier {
  /**
   * The identity a valid token carries, at once for a token verified before; rejects with the
   * catalogue's 401 with a reason code otherwise.
   */
  verify(token: string, wait?: JwtWait): Identity | Promise<Identity>;
  /** False until every required identity provider has its keys (loaded at least once). */
  ready(): boolean;
  /** Each identity provider's readiness for `/readyz` (`keys:<name>`): true, false or why not. */
  checks(): Record<string, boolean | string>;
  /** Every identity provider's key source. */
  sources(): KeySourceInfo[];
  /** Stops background refreshes. */
  close(): void;
}

/** What the verifier reports to and reads the time from; all optional (unit tests pass a clock). */
export interface JwtVerifierOptions {
  now?: () => number;
  metrics?: Metrics;
  logger?: Logger;
  /** Key source states kept across reloads (the app's); new ones when absent. */
  keySources?: KeySources;
  /** Where JWKS fetches are traced; absent when tracing is off. */
  tracing?: Tracing;
}

interface Provider extends Checker {
  readonly config: JwtProvider;
  readonly id: string;
  readonly keys: JwksKeys;
}

/**
 * A verifier for `config`: the HS256 secret is imported once here, not per request, and each
 * identity provider's key manager starts fetching at once (`ready()` stays false until they have keys).
 */
export function createJwtVerifier(config: JwtConfig, options: JwtVerifierOptions = {}): JwtVerifier {
  const now = options.now ?? Date.now;
  const secret: KeyObject | undefined =
    config.hs256_secret === undefined
      ? undefined
      : createSecretKey(Buffer.from(config.hs256_secret, 'base64'));
  // HS256 tokens: only the secret, with auth.jwt's own checks, never an entry of `issuers`.
  const hs = checker(['HS256'], config.clock_tolerance, config.max_token_age, jwtClaims(config), {
    issuer: config.issuer,
    audience: config.audience,
  });
  const providers: Provider[] = jwtProviders(config).map((p) => provider(p, options, now));
  const byIssuer = new Map(
    providers.filter((p) => p.config.issuer !== undefined).map((p) => [p.config.issuer, p]),
  );
  // A single jwks_url without `issuer` takes every `iss` no entry names, as it always has.
  const anyIssuer = providers.find((p) => p.config.issuer === undefined);
  const asymmetric = new Set(providers.flatMap((p) => p.checks.algorithms ?? []));
  const cache = createJwtCache(config.token_cache_size);
  const holds = (fingerprint: string) => {
    const cut = fingerprint.indexOf('\n');
    return providers[Number(fingerprint.slice(0, cut))]?.keys.holds(fingerprint.slice(cut + 1)) ?? false;
  };

  const verifyUncached = async (token: string, at: number, wait: JwtWait): Promise<Identity> => {
    if (secret === undefined && providers.length === 0) throw errors.tokenFailed('no_key');
    let header: JWSHeaderParameters;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      throw errors.tokenFailed('malformed');
    }
    if (header.alg === 'HS256' && secret) return check(token, at, hs, secret, undefined);
    // jose would refuse these too; refusing here first gives the reason before an issuer is looked up.
    if (typeof header.alg !== 'string' || !asymmetric.has(header.alg))
      throw errors.tokenFailed('bad_algorithm');
    if (header.kid !== undefined && typeof header.kid !== 'string') throw errors.tokenFailed('malformed');
    const p = pick(token);
    const index = providers.indexOf(p);
    let fingerprint: string | undefined;
    const deadline = wait.expiresAt === undefined ? undefined : now() + (wait.expiresAt - performance.now());
    const keyFor = async (h: JWSHeaderParameters) => {
      const found = await p.keys.resolve(h.alg as string, h.kid, {
        ...(deadline === undefined ? {} : { deadline }),
        ...(wait.signal ? { signal: wait.signal } : {}),
        parent: wait.parent,
      });
      fingerprint = `${index}\n${found.fingerprint}`;
      return found.key;
    };
    return check(token, at, p, keyFor, () => fingerprint);
  };

  /** The identity provider a token's (not yet verified) `iss` names. */
  const pick = (token: string): Provider => {
    let iss: unknown;
    try {
      iss = decodeJwt(token).iss;
    } catch {
      throw errors.tokenFailed('malformed');
    }
    const found = (typeof iss === 'string' ? byIssuer.get(iss) : undefined) ?? anyIssuer;
    if (found === undefined) throw errors.tokenFailed('bad_issuer');
    return found;
  };

  /** jose's verification with `c`'s checks; the identity is cached with the key that verified it. */
  const check = async (
    token: string,
    at: number,
    c: Checker,
    key: KeyObject | JWTVerifyGetKey,
    fingerprint: (() => string | undefined) | undefined,
  ): Promise<Identity> => {
    let payload: JWTPayload;
    try {
      const options = { ...c.checks, currentDate: new Date(at) };
      ({ payload } =
        typeof key === 'function'
          ? await jwtVerify(token, key, options)
          : await jwtVerify(token, key, options));
    } catch (err) {
      if (err instanceof GatewayError) throw err;
      throw errors.tokenFailed(reasonOf(err));
    }
    // jose checks `iat` only with maxTokenAge: a token issued in the future is refused here.
    if (typeof payload.iat === 'number' && payload.iat > Math.floor(at / 1000) + c.tolerance) {
      throw errors.tokenFailed('not_yet_valid');
    }
    const subject = typeof payload.sub === 'string' && payload.sub !== '' ? payload.sub : 'unknown';
    const identity: Identity = Object.freeze({
      scheme: 'bearer',
      subject,
      principal: `jwt:${typeof payload.iss === 'string' ? payload.iss : ''} ${subject}`,
      permissions: c.permissions(payload),
      // The audit trail's actor (contract §12): claims a token carries as strings only.
      ...(typeof payload.name === 'string' && { name: payload.name }),
      ...(typeof payload.email === 'string' && { email: payload.email }),
    });
    cache.set(token, {
      identity,
      expiresAt: expiryOf(payload, c.tolerance, c.maxAge),
      fingerprint: fingerprint?.(),
    });
    return identity;
  };

  const counter = options.metrics?.jwtVerifications;
  const results = {
    cached: counter && countedChild(counter, { result: 'cached' }),
    verified: counter && countedChild(counter, { result: 'verified' }),
    refused: counter && countedChild(counter, { result: 'refused' }),
  };
  return {
    verify(token, wait = {}) {
      const at = now();
      const cached = cache.get(token, at, holds);
      // A token verified before answers at once, without a promise.
      if (cached) {
        results.cached?.inc();
        return cached;
      }
      return verifyUncached(token, at, wait).then(
        (identity) => {
          results.verified?.inc();
          return identity;
        },
        (err: unknown) => {
          results.refused?.inc();
          throw err;
        },
      );
    },
    ready: () => providers.every((p) => !p.config.required || p.keys.ready()),
    checks: () =>
      Object.fromEntries(
        providers.map((p) => {
          const status = p.keys.status();
          const shown =
            status === true || p.config.required ? status : `${status || 'not ready'} (not required)`;
          return [`keys:${p.config.name}`, shown];
        }),
      ),
    sources: () =>
      providers.map((p) => ({
        id: p.id,
        name: p.config.name,
        at: p.config.at,
        required: p.config.required,
        loaded: p.keys.ready(),
      })),
    close: () => {
      for (const p of providers) p.keys.close();
    },
  };
}

/** An identity provider's checks and key manager; its key source's state comes from `keySources`. */
function provider(config: JwtProvider, options: JwtVerifierOptions, now: () => number): Provider {
  const algorithms = config.algorithms ?? ASYMMETRIC_ALGORITHMS;
  const id = JSON.stringify([config.source, [...algorithms].sort()]);
  const keys = createJwksKeys({
    source: config.source,
    provider: config.name,
    timeout: config.timeout,
    refreshInterval: config.refreshInterval,
    cooldown: config.cooldown,
    algorithms,
    now,
    ...(options.keySources
      ? { state: options.keySources.state(id), waiters: options.keySources.waiters }
      : {}),
    ...(options.metrics ? { metrics: options.metrics } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.tracing ? { tracing: options.tracing } : {}),
  });
  const c = checker(algorithms, config.clockTolerance, config.maxTokenAge, config.claims, config);
  return { ...c, config, id, keys };
}
