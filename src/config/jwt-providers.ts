/**
 * The identity providers of `auth.jwt` with every per-provider key resolved: each entry of `issuers`
 * (unset keys taken from `auth.jwt`), and the single provider of `auth.jwt.jwks_url` as one more.
 * What the verifier, the configuration's cross-checks and `check-config`'s warnings read.
 */
import type { JwtConfig } from './jwt-schema.js';

/** One identity provider, ready to use. */
export interface JwtProvider {
  /** The `provider` label of the JWKS metrics: the entry's `name`, default the issuer's host. */
  readonly name: string;
  /** Where it is configured (`auth.jwt`, `auth.jwt.issuers[1]`), for messages. */
  readonly at: string;
  /** The `iss` its tokens carry; undefined for a single `jwks_url` without `issuer` (any `iss`). */
  readonly issuer: string | undefined;
  /** Where its keys come from: a key set, or the discovery document that names one. */
  readonly source: { readonly jwksUrl: string } | { readonly discoveryUrl: string; readonly issuer: string };
  readonly audience: string | readonly string[] | undefined;
  /** Whether `/readyz` (and a reload) waits for its keys. */
  readonly required: boolean;
  readonly algorithms: readonly string[] | undefined;
  readonly clockTolerance: number;
  readonly maxTokenAge: number | undefined;
  readonly claims: ClaimsConfig;
  readonly refreshInterval: number;
  readonly cooldown: number;
  readonly timeout: number;
}

/** How a token's permissions are read (contract §3, Claims). */
export interface ClaimsConfig {
  readonly permissionsClaim: string | readonly string[];
  readonly permissionMap: Readonly<Record<string, readonly string[]>> | undefined;
  readonly defaultPermissions: readonly string[];
}

/** The discovery document of `issuer`: one trailing `/` removed, then the well-known path. */
function discoveryUrl(issuer: string): string {
  return `${issuer.endsWith('/') ? issuer.slice(0, -1) : issuer}/.well-known/openid-configuration`;
}

/** The claims settings of `auth.jwt` itself (HS256 tokens and the single provider). */
export function jwtClaims(jwt: JwtConfig): ClaimsConfig {
  return {
    permissionsClaim: jwt.permissions_claim,
    permissionMap: jwt.permission_map,
    defaultPermissions: jwt.default_permissions,
  };
}

/** Every asymmetric provider of `jwt`, the single `jwks_url` one first. */
export function jwtProviders(jwt: JwtConfig): JwtProvider[] {
  const providers: JwtProvider[] = [];
  const inherited = {
    algorithms: jwt.algorithms,
    clockTolerance: jwt.clock_tolerance,
    maxTokenAge: jwt.max_token_age,
    refreshInterval: jwt.jwks_refresh_interval,
    cooldown: jwt.jwks_cooldown,
    timeout: jwt.jwks_timeout,
  };
  if (jwt.jwks_url !== undefined) {
    providers.push({
      ...inherited,
      name: hostOf(jwt.issuer) ?? hostOf(jwt.jwks_url) ?? 'jwks',
      at: 'auth.jwt',
      issuer: jwt.issuer,
      source: { jwksUrl: jwt.jwks_url },
      audience: jwt.audience,
      required: true,
      claims: jwtClaims(jwt),
    });
  }
  jwt.issuers.forEach((entry, i) => {
    providers.push({
      name: entry.name ?? hostOf(entry.issuer) ?? hostOf(entry.jwks_url) ?? String(entry.issuer),
      at: `auth.jwt.issuers[${i}]`,
      issuer: entry.issuer,
      source:
        entry.jwks_url === undefined
          ? { discoveryUrl: discoveryUrl(entry.issuer), issuer: entry.issuer }
          : { jwksUrl: entry.jwks_url },
      audience: entry.audience,
      required: entry.required,
      algorithms: entry.algorithms ?? inherited.algorithms,
      clockTolerance: entry.clock_tolerance ?? inherited.clockTolerance,
      maxTokenAge: entry.max_token_age ?? inherited.maxTokenAge,
      claims: {
        permissionsClaim: entry.permissions_claim ?? jwt.permissions_claim,
        permissionMap: entry.permission_map ?? jwt.permission_map,
        defaultPermissions: entry.default_permissions ?? jwt.default_permissions,
      },
      refreshInterval: entry.jwks_refresh_interval ?? inherited.refreshInterval,
      cooldown: entry.jwks_cooldown ?? inherited.cooldown,
      timeout: entry.jwks_timeout ?? inherited.timeout,
    });
  });
  return providers;
}

/**
 * The cross-checks of `auth.jwt` the schema's types cannot say: an entry gives `jwks_url` or
 * `discovery: true` (the default without `jwks_url`), discovery needs an http(s) issuer, and names
 * and issuers are unique. Values still given by an unresolved reference are not compared.
 */
export function checkJwtProviders(
  jwt: JwtConfig,
  problem: (path: Array<string | number>, message: string) => void,
): void {
  jwt.issuers.forEach((entry, i) => {
    if (entry.jwks_url !== undefined && entry.discovery === true) {
      problem(['issuers', i, 'discovery'], 'give jwks_url or discovery: true, not both');
    } else if (entry.jwks_url === undefined && entry.discovery === false) {
      problem(['issuers', i], 'needs jwks_url or discovery: true');
    } else if (
      entry.jwks_url === undefined &&
      typeof entry.issuer === 'string' &&
      !isIssuerUrl(entry.issuer)
    ) {
      problem(
        ['issuers', i, 'issuer'],
        'must be an http:// or https:// URL to be discovered (or give jwks_url)',
      );
    }
  });
  const names = new Map<string, string>();
  const issuers = new Map<string, string>();
  for (const [i, p] of jwtProviders(jwt).entries()) {
    const path =
      i === 0 && jwt.jwks_url !== undefined ? [] : ['issuers', jwt.jwks_url === undefined ? i : i - 1];
    const sameName = names.get(p.name);
    if (sameName !== undefined) {
      problem(
        [...path, 'name'],
        `"${p.name}" names ${sameName} too (the issuer's host by default): give each provider a name`,
      );
    }
    names.set(p.name, p.at);
    if (typeof p.issuer !== 'string') continue;
    const sameIssuer = issuers.get(p.issuer);
    if (sameIssuer !== undefined) problem([...path, 'issuer'], `is the issuer of ${sameIssuer} too`);
    issuers.set(p.issuer, p.at);
  }
}

/** What `check-config` warns about (each `key.path: reason`); the configuration stays valid. */
export function jwtWarnings(jwt: JwtConfig): string[] {
  return jwtProviders(jwt)
    .filter((p) => p.audience === undefined)
    .map(
      (p) =>
        `${p.at}.audience: not set: tokens this identity provider issued for any other service are accepted too`,
    );
}

function hostOf(url: unknown): string | undefined {
  if (typeof url !== 'string') return undefined;
  try {
    return new URL(url).host || undefined;
  } catch {
    return undefined;
  }
}

function isIssuerUrl(issuer: string): boolean {
  try {
    const url = new URL(issuer);
    return (
      (url.protocol === 'https:' || url.protocol === 'http:') &&
      url.search === '' &&
      !issuer.includes('#') &&
      url.username === '' &&
      url.password === ''
    );
  } catch {
    return false;
  }
}
