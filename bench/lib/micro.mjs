/**
 * In-process micro-benchmarks of the two credential checks, run after every target is stopped:
 * signed-request verification (the gateway's own functions from dist/signing/ and dist/auth/schemes/signature-checks.js, over a
 * typical GET) and HS256 JWT verification (jose directly, and the gateway's verifier with and
 * without its verified-token cache).
 */
import { createSecretKey } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { jwtVerify } from 'jose';
import { checkClockSkew, parseSignature, signaturesEqual } from '../../dist/auth/schemes/signature-checks.js';
import { requestKey, bodySignature, signatureOf as computeSignature } from '../../dist/signing/chain.js';
import { formatRequestDate as rfc3339, parseRequestDate } from '../../dist/signing/request-date.js';
import { configSchema } from '../../dist/config/schema.js';
import { jwtFor } from './gateway.mjs';

let jwtModule;
try {
  jwtModule = await import('../../dist/auth/jwt.js');
} catch {
  jwtModule = {};
}

/** Operations per second of `fn` (sync) over about `ms` milliseconds. */
function opsPerSecond(fn, ms) {
  for (let i = 0; i < 1000; i++) fn(); // warm-up: let the JIT settle
  let n = 0;
  const start = performance.now();
  let now = start;
  while (now - start < ms) {
    for (let i = 0; i < 256; i++) fn();
    n += 256;
    now = performance.now();
  }
  return (n * 1000) / (now - start);
}

/** Operations per second of `fn` (async, awaited one after the other) over about `ms` milliseconds. */
async function asyncOpsPerSecond(fn, ms) {
  for (let i = 0; i < 1000; i++) await fn();
  let n = 0;
  const start = performance.now();
  let now = start;
  while (now - start < ms) {
    for (let i = 0; i < 64; i++) await fn();
    n += 64;
    now = performance.now();
  }
  return (n * 1000) / (now - start);
}

/** Each micro-benchmark as `{name, ops}` (operations per second, one core). */
export async function microBenchmarks(creds, ms) {
  const target = '/api/v2/asset-group-tags/1/members/101';
  const date = rfc3339(Date.now());
  const signature = computeSignature(creds.tokenKey, 'GET', target, date);
  const results = [];

  results.push({
    name: 'signed request: full check (parse RequestDate and Signature, skew, HMAC chain, compare)',
    ops: opsPerSecond(() => {
      const at = parseRequestDate(date);
      checkClockSkew(at, Date.now(), 3_600_000);
      const given = parseSignature(signature);
      const expected = bodySignature(requestKey(creds.tokenKey, 'GET', target, date));
      if (!signaturesEqual(expected, given)) throw new Error('signature mismatch');
    }, ms),
  });
  results.push({
    name: 'signed request: computeSignature only (the HMAC chain)',
    ops: opsPerSecond(() => computeSignature(creds.tokenKey, 'GET', target, date), ms),
  });

  const jwt = await jwtFor(creds);
  const key = createSecretKey(creds.jwtSecret);
  results.push({
    name: 'JWT HS256: jose jwtVerify',
    ops: await asyncOpsPerSecond(
      () => jwtVerify(jwt, key, { algorithms: ['HS256'], requiredClaims: ['exp'] }),
      ms,
    ),
  });

  if (typeof jwtModule.createJwtVerifier === 'function') {
    for (const [label, size] of [
      ['uncached (token_cache_size: 0)', 0],
      ['cached (default token cache, a token seen before)', undefined],
    ]) {
      const config = configSchema.parse({
        auth: {
          jwt: {
            hs256_secret: creds.jwtSecret.toString('base64'),
            ...(size === undefined ? {} : { token_cache_size: size }),
          },
        },
        backends: {
          collectors: { type: 'local', path: '.' },
          sso_providers: { type: 'local', path: 'x.json' },
          asset_group_tags: { type: 'local', path: 'y.json' },
        },
      });
      const verifier = jwtModule.createJwtVerifier(config.auth.jwt);
      results.push({
        name: `JWT HS256: gateway createJwtVerifier, ${label}`,
        ops: await asyncOpsPerSecond(() => verifier.verify(jwt), ms),
      });
      verifier.close();
    }
  }
  return results;
}
