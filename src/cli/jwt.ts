/**
 * `gateway jwt --config FILE ...`: mints an HS256 bearer token that the configuration's
 * `auth.jwt` accepts (its secret, issuer, audience and permissions claim), for trying the bearer
 * scheme without an identity provider. The token goes to stdout; the secret is never printed.
 */
import { createSecretKey } from 'node:crypto';
import { parseArgs } from 'node:util';
import { SignJWT } from 'jose';
import { parseDuration } from '../config/units.js';
import { CliError, reportFailure } from './error.js';
import type { CommandIo } from './postgres.js';

const USAGE = `usage: gateway jwt --config FILE [--subject S] [--permissions P[,P...]] [--expires-in 1h]
  Prints an HS256 token signed with the configuration's auth.jwt.hs256_secret, carrying its issuer
  and audience (when set) and the permissions under its permissions_claim. Defaults: subject
  "demo-jwt", no permissions, expiry in 1h (at most 24h).`;

/** The claims object with `value` at `path` (`permissions`, `realm_access.roles`, or a list of keys). */
function claimAt(path: string | readonly string[], value: unknown): Record<string, unknown> {
  const keys = typeof path === 'string' ? path.split('.') : path;
  return keys.reduceRight<Record<string, unknown>>((inner, key) => ({ [key]: inner }), value as never);
}

/** Runs `gateway jwt` with `argv` (the arguments after `jwt`); resolves to the exit code. */
export async function runJwt(argv: string[], io: CommandIo): Promise<number> {
  try {
    let values: {
      config?: string;
      subject?: string;
      permissions?: string;
      'expires-in'?: string;
      help?: boolean;
    };
    try {
      ({ values } = parseArgs({
        args: argv,
        strict: true,
        options: {
          config: { type: 'string' },
          subject: { type: 'string' },
          permissions: { type: 'string' },
          'expires-in': { type: 'string' },
          help: { type: 'boolean', short: 'h' },
        },
      }));
    } catch (err) {
      throw CliError.usage((err as Error).message);
    }
    if (values.help) {
      io.stdout(`${USAGE}\n`);
      return 0;
    }
    if (values.config === undefined) throw CliError.usage('--config FILE is required');
    const expiresMs = parseDuration(values['expires-in'] ?? '1h');
    if (expiresMs === undefined || expiresMs < 1000 || expiresMs > 24 * 3_600_000) {
      throw CliError.usage('--expires-in must be a duration from 1s to 24h (e.g. 15m, 1h)');
    }
    const { ConfigError, loadConfigFile } = await import('../config/load.js');
    let jwt;
    try {
      jwt = loadConfigFile(values.config).auth.jwt;
    } catch (err) {
      if (err instanceof ConfigError) throw new CliError(`${values.config}: ${err.message}`);
      throw err;
    }
    if (jwt.hs256_secret === undefined) {
      throw new CliError(`${values.config}: auth.jwt.hs256_secret is not set: no HS256 token can be made`);
    }
    const permissions = (values.permissions ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== '');
    const now = Math.floor(Date.now() / 1000);
    let token = new SignJWT(claimAt(jwt.permissions_claim, permissions))
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(values.subject ?? 'demo-jwt')
      .setIssuedAt(now)
      .setExpirationTime(now + Math.round(expiresMs / 1000));
    if (jwt.issuer !== undefined) token = token.setIssuer(jwt.issuer);
    if (jwt.audience !== undefined) token = token.setAudience(jwt.audience as string | string[]);
    io.stdout(`${await token.sign(createSecretKey(Buffer.from(jwt.hs256_secret, 'base64')))}\n`);
    return 0;
  } catch (err) {
    return reportFailure(err, io.stderr, 'jwt', USAGE);
  }
}
