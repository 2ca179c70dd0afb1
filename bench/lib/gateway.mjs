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

/** How many signed-request tokens the bench makes (rows with `identities: n` cycle through n of them). */
export const TOKENS = 8;

/** Tokens with every permission, for the signed requests; one secret, for the JWTs. */
export function createCredentials() {
  const tokens = Array.from({ length: TOKENS }, () => ({
    id: randomUUID(),
    key: randomBytes(24).toString('base64url'),
  }));
  return {
    tokens,
    tokenId: tokens[0].id,
    tokenKey: tokens[0].key,
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
 * The gateway's configuration for the bench (JSON is YAML), as an object. Options:
 * - `upstream`: a URL, or a list of them: asset_group_tags goes there (the first URL; an `edit` may
 *   use the others), re-signed with the upstream token;
 * - `workers` > 1 moves sso_providers upstream too (a local store needs one process);
 * - `rateLimit`: 'memory' or 'redis' (127.0.0.1:6379, keys under a prefix of their own) with one
 *   policy of 10,000 a second per identity (the schema's largest);
 * - `tracing`: a sample ratio, spans exported to `sink` (an OTLP/HTTP URL).
 */
export function gatewayConfig(creds, { upstream, workers = 1, rateLimit, tracing, sink } = {}) {
  const upstreams = upstream === undefined ? [] : [upstream].flat();
  const viaUpstream = () => ({
    type: 'upstream',
    url: upstreams[0],
    auth: { type: 'signature', token_id: creds.upstreamTokenId, token_key: creds.upstreamTokenKey },
  });
  return {
    server: { host: '127.0.0.1', port: 0, workers, shutdown_grace: '1s' },
    admin: { host: '127.0.0.1', port: 0 },
    logging: { level: 'info' },
    auth: {
      signature: {
        tokens: creds.tokens.map((t, i) => ({
          id: t.id,
          key: t.key,
          subject: `bench-${i + 1}`,
          permissions: ['*'],
        })),
      },
      jwt: { hs256_secret: creds.jwtSecret.toString('base64') },
    },
    forms: { max_file_size: '2MiB' },
    backends: {
      collectors: { type: 'local', path: 'collectors' },
      sso_providers: workers > 1 ? viaUpstream() : { type: 'local', path: 'sso-providers.json' },
      asset_group_tags:
        upstreams.length > 0 ? viaUpstream() : { type: 'local', path: 'asset-group-tags.json' },
    },
    ...(rateLimit && {
      rate_limits: {
        store:
          rateLimit === 'redis'
            ? { type: 'redis', url: 'redis://127.0.0.1:6379', key_prefix: `bench-${randomUUID()}:` }
            : { type: 'memory' },
        policies: [{ name: 'default', limit: 10_000, window: '1s' }],
      },
    }),
    ...(tracing !== undefined && {
      tracing: { otlp_endpoint: sink, service_name: 'bench', sample_ratio: tracing },
    }),
  };
}

/**
 * Writes `<dir>/<name>.yaml` and returns its path: `gatewayConfig(creds, options)`, then
 * `options.edit(config)` when given (it may change the object, or return another).
 */
export function writeConfig(dir, name, creds, options = {}) {
  const base = gatewayConfig(creds, options);
  // The local providers' audit trail has one writer (contract §12): each gateway its own file.
  if (base.backends.sso_providers.type === 'local')
    base.audit = { store: { type: 'file', path: `${name}.audit.jsonl` } };
  const config = options.edit?.(base, options.fx) ?? base;
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`);
  return file;
}

/**
 * Starts the gateway on `configFile` (`nodeArgs` before the script: `--cpu-prof`, …); its log lines go
 * to `<dir>/<name>.out`. Resolves with the child and the API and admin URLs from its `listening` line.
 */
export async function startGateway(dir, name, configFile, nodeArgs = []) {
  const entry = await startChild(name, process.execPath, [...nodeArgs, CLI, '--config', configFile], { dir });
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
export function signedHeaders(creds, method, target, body, token = 0) {
  const date = rfc3339(Date.now());
  const { id, key } = creds.tokens?.[token] ?? { id: creds.tokenId, key: creds.tokenKey };
  return {
    authorization: `bhesignature ${id}`,
    requestdate: date,
    signature: computeSignature(key, method, target, date, body),
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
