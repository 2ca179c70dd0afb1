/**
 * The gateway under test: its generated configurations (ports 0, logging at `info`, metrics on, the
 * sample data of config/ copied to the bench's temporary folder), its start as `node dist/cli.js`
 * in its own process, and the credentials the load generator sends (a signed request computed
 * once per target, as `gateway sign` does, and one HS256 JWT).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { signatureOf as computeSignature } from '../../dist/signing/chain.js';
import { formatRequestDate as rfc3339 } from '../../dist/signing/request-date.js';
import { startChild } from './processes.mjs';

const ROOT = new URL('../../', import.meta.url).pathname;
const CLI = join(ROOT, 'dist', 'cli.js');

/** One token with every permission, for the signed requests; one secret, for the JWTs. */
export function createCredentials() {
  return {
    tokenId: randomUUID(),
    tokenKey: randomBytes(24).toString('base64url'),
    jwtSecret: randomBytes(32),
    upstreamTokenId: randomUUID(),
    upstreamTokenKey: randomBytes(24).toString('base64url'),
  };
}

/** Copies config/ into `dir` (the gateway writes the SSO providers file there, never in the checkout). */
export function copySampleData(dir) {
  cpSync(join(ROOT, 'config'), dir, { recursive: true });
}

/** The path of the checksum file the stub serves (the one the cached-checksum target asks for). */
export function checksumFile(dir) {
  return join(dir, 'collectors', 'sharphound', 'sharphound-v2.10.0.zip.sha256');
}

/**
 * Writes `<dir>/<name>.yaml` (JSON is YAML) and returns its path. `upstream` (a URL, or a list of
 * them: its `targets`) moves asset_group_tags there; `workers` > 1 moves sso_providers there too (a local store needs one process);
 * `rateLimit` turns a default rate-limit policy on.
 */
export function writeConfig(dir, name, creds, { upstream, workers = 1, rateLimit = false, passthrough } = {}) {
  const viaUpstream = () => ({
    type: 'upstream',
    ...(Array.isArray(upstream) ? { targets: upstream } : { url: upstream }),
    auth: { type: 'signature', token_id: creds.upstreamTokenId, token_key: creds.upstreamTokenKey },
  });
  const config = {
    server: { host: '127.0.0.1', port: 0, workers, shutdown_grace: '1s' },
    admin: { host: '127.0.0.1', port: 0 },
    logging: { level: 'info' },
    auth: {
      signature: {
        tokens: [{ id: creds.tokenId, key: creds.tokenKey, subject: 'bench', permissions: ['*'] }],
      },
      jwt: { hs256_secret: creds.jwtSecret.toString('base64') },
    },
    forms: { max_file_size: '2MiB' },
    backends: {
      collectors: { type: 'local', path: 'collectors' },
      sso_providers: workers > 1 ? viaUpstream() : { type: 'local', path: 'sso-providers.json' },
      asset_group_tags: upstream ? viaUpstream() : { type: 'local', path: 'asset-group-tags.json' },
    },
    // A default policy in the memory store, high enough that the load is never refused.
    // The front door (issue 28): pass-through to the stub, signing as the gateway on authenticated routes.
    ...(passthrough && {
      passthrough: {
        url: passthrough,
        auth: { type: 'signature', token_id: creds.upstreamTokenId, token_key: creds.upstreamTokenKey },
      },
    }),
    ...(rateLimit && { rate_limits: { policies: [{ name: 'default', limit: 10_000, window: '1s' }] } }),
  };
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`);
  return file;
}

/**
 * Starts the gateway on `configFile`; its log lines go to `<dir>/<name>.out`. Resolves with the
 * child and the API and admin URLs from its `listening` line.
 */
export async function startGateway(dir, name, configFile) {
  const entry = await startChild(name, process.execPath, [CLI, '--config', configFile], { dir });
  return {
    ...entry,
    url: `http://127.0.0.1:${entry.ready.port}`,
    adminUrl: `http://127.0.0.1:${entry.ready.admin_port}`,
  };
}

/**
 * The three signed-request headers for `method target` (and `body`), as `gateway sign` prints them:
 * valid for `auth.signature.max_clock_skew` (1 h) from now, far longer than a bench run.
 */
export function signedHeaders(creds, method, target, body) {
  const date = rfc3339(Date.now());
  return {
    authorization: `bhesignature ${creds.tokenId}`,
    requestdate: date,
    signature: computeSignature(creds.tokenKey, method, target, date, body),
  };
}

/** An HS256 JWT with every permission, valid for an hour. */
export async function jwtFor(creds) {
  return new SignJWT({ permissions: ['*'] })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject('bench')
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(creds.jwtSecret);
}

/** `Authorization: Bearer <jwt>`. */
export function bearerHeaders(jwt) {
  return { authorization: `Bearer ${jwt}` };
}
