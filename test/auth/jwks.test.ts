import { createPublicKey, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT } from 'jose';
import t, { type Test } from 'tap';
import { ASYMMETRIC_ALGORITHMS } from '../../src/auth/jwk-set.js';
import { createJwksKeys, type JwksOptions, MAX_WAITING } from '../../src/auth/jwks.js';
import { ConfigError, loadConfigFile, parseConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { errorOf, JWT_SECRET, request, startGateway, type TestGateway } from '../helpers/gateway.js';
import { type JwksServer, startJwksServer, testKey, type TestKey } from '../helpers/jwks.js';
import { scrape } from '../helpers/metrics.js';
import { until } from '../helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const READ = { permissions: ['asset_group_tags:read'] };

/** Every token sent, and every gateway's log lines, searched at the end. */
const sent: string[] = [];
const logs: Array<Array<Record<string, unknown>>> = [];

function bearer(gw: TestGateway, token: string) {
  sent.push(token);
  return request(gw, { method: 'GET', target: MEMBER, headers: { Authorization: `Bearer ${token}` } });
}

async function idp(t: Test, keys: TestKey[]): Promise<JwksServer> {
  const server = await startJwksServer(keys.map((k) => k.jwk));
  t.teardown(() => server.close());
  return server;
}

async function gateway(t: Test, server: JwksServer, jwt: Record<string, unknown> = {}) {
  const gw = await startGateway({ auth: { jwt: { jwks_url: server.url, jwks_cooldown: '50ms', ...jwt } } });
  t.teardown(() => gw.close());
  logs.push(gw.logs);
  return gw;
}

const ready = async (gw: TestGateway) => (await fetch(`${gw.adminUrl}/readyz`)).status;

const failures = (gw: TestGateway, reason: string) =>
  scrape(gw.adminUrl, 'gateway_auth_failures_total', { scheme: 'bearer', reason });
const fetches = (gw: TestGateway, result: string) =>
  scrape(gw.adminUrl, 'gateway_jwks_fetches_total', { result });

/** `error_description` of `WWW-Authenticate` by reason (contract §3). */
const DESCRIPTION: Record<string, string> = {
  jwks_unavailable: 'signing keys unavailable',
  unknown_kid: 'unknown signing key',
  ambiguous_key: 'unknown signing key',
  bad_algorithm: 'algorithm not allowed',
  bad_signature: 'signature invalid',
  expired: 'token expired',
  not_yet_valid: 'token not yet valid',
  bad_issuer: 'wrong issuer',
  bad_audience: 'wrong audience',
  missing_exp: 'token has no expiry',
  malformed: 'malformed token',
};

/** A refused bearer token: 401 in the envelope, counted under `reason`, which the log line names. */
async function refused(t: Test, gw: TestGateway, token: string, reason: string) {
  const before = (await failures(gw, reason)) ?? 0;
  const res = await bearer(gw, token);
  t.equal(res.status, 401, reason);
  t.same(errorOf(res), {
    status: 401,
    context: 'header:Authorization',
    message: 'Token Authorization failed.',
  });
  t.equal(await failures(gw, reason), before + 1, `counted as ${reason}`);
  t.equal(
    res.headers['www-authenticate'],
    `Bearer realm="api", error="invalid_token", error_description="${DESCRIPTION[reason]}"`,
    'WWW-Authenticate says why',
  );
  // The log line is written when the response closes: wait for it.
  await until('the request is logged', () => gw.logs.some((l) => l.request_id === res.headers.requestid));
  const line = gw.logs.find((l) => l.request_id === res.headers.requestid);
  t.equal(line?.auth_failure, reason, 'the log line names the reason');
}

t.test('keys load at start: /readyz is 503 until the JWKS answers', async (t) => {
  const rsa = await testKey('RS256', 'rsa-1');
  const ec = await testKey('ES256', 'ec-1');
  const server = await idp(t, [rsa, ec]);
  server.mode = 'down';
  const gw = await gateway(t, server);
  t.equal(await ready(gw), 503, 'not ready without keys');
  await refused(t, gw, await rsa.sign(READ), 'jwks_unavailable');
  server.mode = 'ok';
  await until('the gateway is ready', async () => (await ready(gw)) === 200);
  t.equal((await bearer(gw, await rsa.sign(READ))).status, 200, 'RS256');
  t.equal((await bearer(gw, await ec.sign(READ))).status, 200, 'ES256');
  t.equal(await scrape(gw.adminUrl, 'gateway_jwks_keys'), 2);
  t.equal(await fetches(gw, 'ok'), 1, 'one good fetch');
  t.ok(((await fetches(gw, 'error')) ?? 0) >= 1, 'the failed ones counted');
  const hs = await new SignJWT({ exp: Math.floor(Date.now() / 1000) + 60, ...READ })
    .setProtectedHeader({ alg: 'HS256' })
    .sign(Buffer.from(JWT_SECRET, 'base64'));
  t.equal((await bearer(gw, hs)).status, 200, 'hs256_secret keeps working beside jwks_url');
});

t.test('a request that arrives during the first fetch waits for it', async (t) => {
  const rsa = await testKey('RS256', 'rsa-1');
  const server = await idp(t, [rsa]);
  server.mode = 'hang';
  const gw = await gateway(t, server);
  await server.fetched(1);
  t.equal(await ready(gw), 503);
  let settled = false;
  const answer = bearer(gw, await rsa.sign(READ)).finally(() => (settled = true));
  // Released only once the gateway holds the request: a 200 then proves it waited for the keys
  // (without them it is refused at once, 401 jwks_unavailable).
  await until(
    'the gateway holds the request',
    async () => (await scrape(gw.adminUrl, 'gateway_requests_in_flight')) === 1,
  );
  t.notOk(settled, 'the request waits for the keys');
  server.mode = 'ok';
  server.release();
  t.equal((await answer).status, 200, 'answered once the keys came');
  t.equal(server.fetches, 1, 'the request shared the fetch at start');
  t.equal(await ready(gw), 200);
});

t.test('rotation: a new kid is accepted after one fetch; a removed one is refused after it', async (t) => {
  const [one, two, three] = await Promise.all(
    ['k1', 'k2', 'k3'].map((kid, n) => testKey('ES256', kid, { n })),
  );
  const server = await idp(t, [one!]);
  const gw = await gateway(t, server);
  await until('the gateway is ready', async () => (await ready(gw)) === 200);
  const old = await one!.sign(READ);
  t.equal((await bearer(gw, old)).status, 200);
  server.keys = [one!.jwk, two!.jwk];
  // Right after the fetch at start: that fetch was no unknown kid's, so the new kid is fetched at once.
  t.equal((await bearer(gw, await two!.sign(READ))).status, 200, 'the new kid, after one fetch');
  t.equal(server.fetches, 2);
  server.keys = [two!.jwk, three!.jwk];
  t.equal((await bearer(gw, old)).status, 200, 'until the next fetch, the old key serves');
  // Within the cooldown of that fetch: the request waits for the next allowed one.
  t.equal((await bearer(gw, await three!.sign(READ))).status, 200, 'another new kid: one more fetch');
  t.equal(server.fetches, 3);
  await refused(t, gw, old, 'unknown_kid');
  t.equal(await scrape(gw.adminUrl, 'gateway_jwks_keys'), 2);
});

t.test(
  'inside the cooldown a request waits when the next fetch comes before its Prefer deadline',
  async (t) => {
    const [one, two] = await Promise.all(['k1', 'k2'].map((kid, n) => testKey('ES256', kid, { n })));
    const server = await idp(t, [one!]);
    const gw = await gateway(t, server, { jwks_cooldown: '2s' });
    await until('the gateway is ready', async () => (await ready(gw)) === 200);
    await refused(t, gw, await one!.sign(READ, { kid: 'made-up' }), 'unknown_kid');
    server.keys = [one!.jwk, two!.jwk];
    const token = await two!.sign(READ);
    let began = performance.now();
    const hurried = await request(gw, {
      method: 'GET',
      target: MEMBER,
      headers: { Authorization: `Bearer ${token}`, Prefer: 'wait=1' },
    });
    t.equal(hurried.status, 401, 'the next allowed fetch comes after a 1 s deadline');
    t.ok(performance.now() - began < 900, 'refused at once, not at the deadline');
    began = performance.now();
    t.equal((await bearer(gw, token)).status, 200, 'with the default 30 s deadline it waits');
    t.ok(performance.now() - began >= 500, 'for the cooldown to end');
    t.equal(server.fetches, 3, 'start, the made-up kid, the new key');
  },
);

t.test('a deadline that fires while the request waits for keys is a 504, not a refusal', async (t) => {
  const rsa = await testKey('RS256', 'rsa-1');
  const server = await idp(t, [rsa]);
  const gw = await gateway(t, server, { jwks_timeout: '10s' });
  await until('the gateway is ready', async () => (await ready(gw)) === 200);
  server.mode = 'hang';
  const began = performance.now();
  const res = await request(gw, {
    method: 'GET',
    target: MEMBER,
    headers: { Authorization: `Bearer ${await rsa.sign(READ, { kid: 'rsa-2' })}`, Prefer: 'wait=1' },
  });
  t.same(errorOf(res), { status: 504, context: 'request', message: 'request timed out' });
  t.ok(performance.now() - began < 5_000, 'at the deadline, not at the end of the fetch');
  t.equal(await failures(gw, 'unknown_kid'), 0, 'no refusal counted');
  server.mode = 'ok';
  server.release();
});

t.test('a request waiting for the next allowed fetch when a reload happens still gets its key', async (t) => {
  const [one, two] = await Promise.all(['k1', 'k2'].map((kid, n) => testKey('ES256', kid, { n })));
  const server = await idp(t, [one!]);
  const gw = await gateway(t, server, { jwks_cooldown: '1s' });
  await until('the gateway is ready', async () => (await ready(gw)) === 200);
  await refused(t, gw, await one!.sign(READ, { kid: 'made-up' }), 'unknown_kid');
  server.keys = [one!.jwk, two!.jwk];
  const waiting = bearer(gw, await two!.sign(READ));
  await gw.app.reload(loadConfigFile(gw.configFile));
  t.equal((await waiting).status, 200, 'the old configuration drained its waiting request');
  t.equal((await bearer(gw, await two!.sign({ ...READ, jti: 'x' }))).status, 200, 'the new one has the key');
  t.equal(await failures(gw, 'unknown_kid'), 1, 'only the made-up kid was refused');
});

t.test('a background refresh drops a withdrawn key, cached tokens included', async (t) => {
  const [one, two] = await Promise.all(['k1', 'k2'].map((kid, n) => testKey('RS256', kid, { n })));
  const server = await idp(t, [one!, two!]);
  // The cooldown forbids any refetch on demand: only the background refresh can see the change.
  const gw = await gateway(t, server, { jwks_refresh_interval: '1s', jwks_cooldown: '10m' });
  await until('the gateway is ready', async () => (await ready(gw)) === 200);
  const token = await one!.sign(READ);
  t.equal((await bearer(gw, token)).status, 200);
  t.equal((await bearer(gw, token)).status, 200);
  t.equal(await scrape(gw.adminUrl, 'gateway_jwt_verifications_total', { result: 'cached' }), 1, 'cached');
  server.keys = [two!.jwk];
  await until('the background refresh fetches', async () => (await fetches(gw, 'ok')) === 2);
  await refused(t, gw, token, 'unknown_kid');
  t.equal(server.fetches, 3, 'the withdrawn kid: one fetch on demand, the first an unknown kid caused');
  t.equal((await bearer(gw, await two!.sign(READ))).status, 200);
  await refused(t, gw, token, 'unknown_kid');
  t.equal(server.fetches, 3, 'none more within the cooldown (the request is refused at its deadline)');
  t.equal(await scrape(gw.adminUrl, 'gateway_jwks_keys'), 1);
});

t.test('the identity provider down, answering garbage, hanging, and back', async (t) => {
  const rsa = await testKey('RS256', 'rsa-1');
  const ec = await testKey('ES256', 'ec-1');
  const server = await idp(t, [rsa, ec]);
  // `no-cache`: the gateway refreshes every cooldown, so each state below is fetched quickly.
  server.headers = { 'Cache-Control': 'no-cache' };
  const gw = await gateway(t, server, { jwks_timeout: '200ms' });
  await until('the gateway is ready', async () => (await ready(gw)) === 200);
  const serving = async (what: string) => {
    await server.fetched(server.fetches + 2);
    t.equal(await ready(gw), 200, `${what}: still ready`);
    t.equal((await bearer(gw, await rsa.sign({ ...READ, jti: randomUUID() }))).status, 200, `${what}: RS256`);
    t.equal((await bearer(gw, await ec.sign({ ...READ, jti: randomUUID() }))).status, 200, `${what}: ES256`);
    t.equal(await scrape(gw.adminUrl, 'gateway_jwks_keys'), 2, `${what}: the last keys kept`);
  };
  server.mode = 'down';
  await serving('down');
  t.ok(((await fetches(gw, 'error')) ?? 0) >= 2);
  server.mode = 'garbage';
  const bigKey = { ...rsa.jwk, x5c: ['A'.repeat(1024 * 1024)] };
  for (const garbage of [
    'not json',
    '{"keys": "not a list"}',
    '[]',
    '{"keys": []}',
    JSON.stringify({ keys: Array.from({ length: 101 }, () => rsa.jwk) }),
    JSON.stringify({ keys: [{ ...rsa.jwk, d: 'private-part' }, { kty: 'oct', k: 'c2VjcmV0' }, 'x'] }),
    JSON.stringify({
      keys: [
        { ...ec.jwk, x: 'AAAA' },
        { ...rsa.jwk, use: 'enc' },
        { ...rsa.jwk, alg: 'HS256' },
      ],
    }),
    JSON.stringify({ keys: [bigKey] }),
  ]) {
    server.garbage = garbage;
    await serving(`garbage ${garbage.slice(0, 30)}`);
  }
  const invalid = (await fetches(gw, 'invalid')) ?? 0;
  t.ok(invalid >= 8, `${invalid} invalid`);
  server.mode = 'hang';
  await serving('hanging');
  await until('a fetch times out', async () => ((await fetches(gw, 'timeout')) ?? 0) >= 1);
  const fresh = await testKey('ES256', 'ec-2', { n: 1 });
  server.keys = [fresh.jwk];
  server.mode = 'ok';
  await until(
    'a token of the new key passes',
    async () => (await bearer(gw, await fresh.sign(READ))).status === 200,
  );
  await refused(t, gw, await rsa.sign(READ), 'unknown_kid');
  t.equal(await scrape(gw.adminUrl, 'gateway_jwks_keys'), 1);
});

t.test('a flood of made-up kids does not reach the identity provider', async (t) => {
  const rsa = await testKey('RS256', 'rsa-1');
  const server = await idp(t, [rsa]);
  const gw = await gateway(t, server, { jwks_cooldown: '10m' });
  await until('the gateway is ready', async () => (await ready(gw)) === 200);
  const tokens = await Promise.all(Array.from({ length: 100 }, () => rsa.sign(READ, { kid: randomUUID() })));
  const answers = await Promise.all(tokens.map((tok) => bearer(gw, tok)));
  t.same(new Set(answers.map((r) => r.status)), new Set([401]));
  t.equal(await failures(gw, 'unknown_kid'), 100);
  t.equal(server.fetches, 2, 'the fetch at start, and one the unknown kids caused');
  await Promise.all(tokens.slice(0, 20).map((tok) => bearer(gw, tok)));
  t.equal(server.fetches, 2, 'none more within the cooldown');
});

t.test('the checks on a token from the identity provider', async (t) => {
  const rsa = await testKey('RS256', 'rsa-1');
  const ec = await testKey('ES256', 'ec-1');
  const server = await idp(t, [rsa, ec]);
  const gw = await gateway(t, server, { issuer: 'https://idp.test', audience: ['gw', 'gw-2'] });
  await until('the gateway is ready', async () => (await ready(gw)) === 200);
  const now = Math.floor(Date.now() / 1000);
  const good = { ...READ, iss: 'https://idp.test', aud: 'gw' };
  t.equal((await bearer(gw, await rsa.sign(good))).status, 200);
  t.equal((await bearer(gw, await ec.sign({ ...good, aud: ['x', 'gw-2'] }))).status, 200, 'audience list');

  const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const none = `${part({ alg: 'none', kid: 'rsa-1' })}.${part({ ...good, exp: now + 60 })}.`;
  await refused(t, gw, none, 'bad_algorithm');
  // The classic confusion: HS256 "signed" with the public key an attacker can download.
  const pem = createPublicKey({ key: rsa.jwk as never, format: 'jwk' }).export({
    type: 'spki',
    format: 'pem',
  });
  const confused = (alg: string) =>
    new SignJWT({ ...good, exp: now + 60 }).setProtectedHeader({ alg, kid: 'rsa-1' }).sign(Buffer.from(pem));
  await refused(t, gw, await confused('HS256'), 'bad_signature');
  await refused(t, gw, await confused('HS384'), 'bad_algorithm');
  await refused(t, gw, await rsa.sign({ ...good, exp: now - 120 }), 'expired');
  await refused(t, gw, await ec.sign({ ...good, nbf: now + 120 }), 'not_yet_valid');
  await refused(t, gw, await ec.sign({ ...good, iat: now + 120 }), 'not_yet_valid');
  await refused(t, gw, await rsa.sign({ ...good, iss: 'https://evil.test' }), 'bad_issuer');
  await refused(t, gw, await rsa.sign({ ...good, aud: 'other' }), 'bad_audience');
  await refused(t, gw, await rsa.sign({ ...good, exp: undefined }), 'missing_exp');
  const fetched = server.fetches;
  await refused(t, gw, await ec.sign(good, { kid: 'rsa-1' }), 'bad_algorithm');
  t.equal(server.fetches, fetched, 'a known kid with the wrong algorithm is not a rotation');
  await refused(t, gw, await rsa.sign(good, { kid: 7 }), 'malformed');
  const other = await testKey('RS256', 'rsa-1', { n: 1 });
  await refused(t, gw, await other.sign(good), 'bad_signature');
});

t.test('a single configured audience', async (t) => {
  const ec = await testKey('ES256', 'ec-1');
  const server = await idp(t, [ec]);
  const gw = await gateway(t, server, { audience: 'gw' });
  await until('the gateway is ready', async () => (await ready(gw)) === 200);
  t.equal((await bearer(gw, await ec.sign({ ...READ, aud: 'gw' }))).status, 200);
  await refused(t, gw, await ec.sign({ ...READ, aud: 'gw-2' }), 'bad_audience');
  await refused(t, gw, await ec.sign(READ), 'bad_audience');
});

t.test('the algorithm allow-list and tokens without a kid', async (t) => {
  const rsa = await testKey('RS256', 'rsa-1', { bare: true });
  const ec = await testKey('ES256', 'ec-1');
  const server = await idp(t, [rsa, ec]);
  const gw = await gateway(t, server, { algorithms: ['ES256', 'PS256'] });
  await until('the gateway is ready', async () => (await ready(gw)) === 200);
  t.equal((await bearer(gw, await ec.sign(READ))).status, 200);
  await refused(t, gw, await rsa.sign(READ), 'bad_algorithm');
  const ps = await testKey('PS256', 'rsa-1');
  await refused(t, gw, await ps.sign(READ), 'bad_signature');
  t.equal(
    (await bearer(gw, await ec.sign(READ, { kid: undefined }))).status,
    200,
    'one key fits: no kid needed',
  );
  const ec2 = await testKey('ES256', 'ec-2', { n: 1 });
  server.keys = [rsa.jwk, ec.jwk, ec2.jwk];
  // Unknown kids were just fetched for: a new kid inside the cooldown waits for the next fetch.
  t.equal((await bearer(gw, await ec2.sign(READ))).status, 200);
  await refused(t, gw, await ec.sign(READ, { kid: undefined }), 'ambiguous_key');
});

t.test('permissions come from the claim; a token without it gets default_permissions', async (t) => {
  const ec = await testKey('ES256', 'ec-1');
  const server = await idp(t, [ec]);
  const gw = await gateway(t, server, { permissions_claim: 'scope' });
  await until('the gateway is ready', async () => (await ready(gw)) === 200);
  const status = async (claims: Record<string, unknown>) => (await bearer(gw, await ec.sign(claims))).status;
  t.equal(await status({ scope: 'openid asset_group_tags:read' }), 200, 'a space-separated string');
  t.equal(await status({ scope: ['asset_group_tags:read'] }), 200, 'an array');
  t.equal(await status({ scope: ['collectors:read'] }), 403);
  t.equal(await status({ sub: 'alice' }), 403, 'no claim: the default, []');
  await until("alice's request is logged", () =>
    gw.logs.some((l) => l.msg === 'request' && l.subject === 'alice'),
  );
});

t.test('the verified-token cache', async (t) => {
  const ec = await testKey('ES256', 'ec-1');
  const server = await idp(t, [ec]);
  const gw = await gateway(t, server);
  const off = await gateway(t, server, { token_cache_size: 0 });
  await until('both gateways are ready', async () => (await ready(gw)) === 200 && (await ready(off)) === 200);
  const token = await ec.sign(READ);
  for (let i = 0; i < 3; i++) {
    t.equal((await bearer(gw, token)).status, 200);
    t.equal((await bearer(off, token)).status, 200);
  }
  const verified = (g: TestGateway, result: string) =>
    scrape(g.adminUrl, 'gateway_jwt_verifications_total', { result });
  t.equal(await verified(gw, 'verified'), 1, 'one signature check');
  t.equal(await verified(gw, 'cached'), 2, 'then the cache');
  t.equal(await verified(off, 'verified'), 3, 'token_cache_size 0: every time');
  t.equal(await verified(off, 'cached'), 0);
  await bearer(gw, `${token}x`);
  t.equal(await verified(gw, 'refused'), 1);
});

t.test('configuration of auth.jwt', async (t) => {
  const BACKENDS =
    'backends: { collectors: { type: local, path: c }, sso_providers: { type: local, path: s.json }, ' +
    'asset_group_tags: { type: local, path: a.json } }\n';
  const problems = (jwt: string): string[] => {
    try {
      parseConfig(`auth: { jwt: ${jwt} }\n${BACKENDS}`, '/base');
    } catch (err) {
      if (err instanceof ConfigError) return err.problems;
      throw err;
    }
    return [];
  };
  const c = parseConfig(`auth: { jwt: { jwks_url: "https://idp.example.com/jwks" } }\n${BACKENDS}`, '/base');
  t.match(c.auth.jwt, {
    jwks_url: 'https://idp.example.com/jwks',
    jwks_refresh_interval: 300_000,
    jwks_cooldown: 30_000,
    jwks_timeout: 5_000,
    token_cache_size: 10_000,
  });
  t.equal(c.auth.jwt.algorithms, undefined);
  t.equal(c.auth.jwt.max_token_age, undefined);
  t.same(problems('{ algorithms: [ES256, EdDSA], max_token_age: 1h, jwks_cooldown: 50ms }'), []);
  t.match(problems('{ jwks_url: "ftp://idp/jwks" }').join(), /auth\.jwt\.jwks_url: must be an http/);
  t.match(problems('{ algorithms: [HS256] }').join(), /auth\.jwt\.algorithms\[0\]: must be an asymmetric/);
  t.match(problems('{ algorithms: [none] }').join(), /auth\.jwt\.algorithms\[0\]/);
  t.match(problems('{ algorithms: [] }').join(), /auth\.jwt\.algorithms/);
  t.match(problems('{ jwks_cooldown: 0s }').join(), /auth\.jwt\.jwks_cooldown/);
  t.match(problems('{ jwks_timeout: 2m }').join(), /auth\.jwt\.jwks_timeout/);
  t.match(problems('{ token_cache_size: -1 }').join(), /auth\.jwt\.token_cache_size/);
});

t.test('the key manager on its own', async (t) => {
  const ec = await testKey('ES256', 'ec-1');
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger('info', { write: (l: string) => void lines.push(JSON.parse(l)) });
  const manager = (server: JwksServer, over: Partial<JwksOptions> = {}) => {
    const metrics = createMetrics();
    const keys = createJwksKeys({
      source: { jwksUrl: server.url },
      provider: 'test',
      timeout: 1_000,
      refreshInterval: 3_600_000,
      cooldown: 30_000,
      algorithms: ASYMMETRIC_ALGORITHMS,
      metrics,
      logger,
      ...over,
    });
    t.teardown(() => keys.close());
    const count = async (result: string) =>
      (await metrics.jwksFetches.get()).values.find((v) => v.labels.result === result)?.value ?? 0;
    return { keys, metrics, count };
  };
  const reason = (p: Promise<unknown>) =>
    p.then(
      () => 'accepted',
      (err: { reason?: string }) => err.reason,
    );

  t.test(
    'frozen clock: one fetch per cooldown for unknown kids, shared by every request on it',
    async (t) => {
      const server = await idp(t, [ec]);
      let clock = 1_000_000;
      const { keys } = manager(server, { now: () => clock });
      await until('the keys are loaded', () => keys.ready());
      // A deadline before the cooldown's end: a request inside it is refused at once.
      const soon = () => ({ deadline: clock + 1 });
      const flood = () =>
        Promise.all(Array.from({ length: 50 }, () => reason(keys.resolve('ES256', randomUUID(), soon()))));
      t.same(new Set(await flood()), new Set(['unknown_kid']), 'made-up kids right after the fetch at start');
      t.equal(server.fetches, 2, "the fetch at start is no unknown kid's: one fetch at once, shared by 50");
      t.same(new Set(await flood()), new Set(['unknown_kid']));
      t.equal(server.fetches, 2, 'within the cooldown: none');
      clock += 29_999;
      await flood();
      t.equal(server.fetches, 2, 'none until the cooldown has passed');
      clock += 1;
      const fresh = await testKey('ES256', 'ec-2', { n: 1 });
      server.keys = [ec.jwk, fresh.jwk];
      server.delay = 50; // every request below arrives while the one fetch is under way
      const [answers, found] = await Promise.all([flood(), reason(keys.resolve('ES256', 'ec-2', soon()))]);
      t.same(new Set(answers), new Set(['unknown_kid']));
      t.equal(found, 'accepted', 'the new kid, found by the shared fetch');
      t.equal(server.fetches, 3, 'one fetch for 51 unknown kids');
    },
  );

  t.test(
    'inside the cooldown a request waits for the next allowed fetch, if it comes before its deadline',
    async (t) => {
      const server = await idp(t, [ec]);
      const { keys } = manager(server, { cooldown: 400 });
      await until('the keys are loaded', () => keys.ready());
      t.equal(await reason(keys.resolve('ES256', 'made-up')), 'unknown_kid');
      t.equal(server.fetches, 2, 'a fetch at once for the first unknown kid');
      const fresh = await testKey('ES256', 'ec-2', { n: 1 });
      server.keys = [ec.jwk, fresh.jwk];
      let began = performance.now();
      t.equal(
        await reason(keys.resolve('ES256', 'ec-2', { deadline: Date.now() + 100 })),
        'unknown_kid',
        'the next fetch would start after the deadline: refused',
      );
      t.ok(performance.now() - began < 100, 'at once');
      began = performance.now();
      const waited = await Promise.all([
        reason(keys.resolve('ES256', 'ec-2', { deadline: Date.now() + 5_000 })),
        reason(keys.resolve('ES256', 'ec-2')),
      ]);
      t.same(waited, ['accepted', 'accepted'], 'the new key, from the next allowed fetch');
      t.ok(performance.now() - began >= 200, 'they waited for the cooldown to end');
      t.equal(server.fetches, 3, 'one fetch for both');
      const gone = new AbortController();
      const pending = keys.resolve('ES256', 'other-made-up', { signal: gone.signal });
      gone.abort(new Error('client gone'));
      await t.rejects(pending, { message: 'client gone' }, 'a request whose client left stops waiting');
    },
  );

  t.test('at most 1,000 requests wait; beyond, a request is refused at once', async (t) => {
    const server = await idp(t, [ec]);
    const { keys } = manager(server, { cooldown: 1_500 });
    await until('the keys are loaded', () => keys.ready());
    t.equal(await reason(keys.resolve('ES256', 'made-up')), 'unknown_kid');
    let settled = 0;
    const waiting = Array.from({ length: MAX_WAITING }, (_, i) =>
      reason(keys.resolve('ES256', `wait-${i}`)).finally(() => (settled += 1)),
    );
    const began = performance.now();
    t.equal(await reason(keys.resolve('ES256', 'one-too-many')), 'unknown_kid');
    t.ok(performance.now() - began < 500, 'refused at once');
    t.equal(settled, 0, 'the first 1,000 still wait');
    t.same(new Set(await Promise.all(waiting)), new Set(['unknown_kid']), 'then get their one fetch');
    t.equal(server.fetches, 3, 'start, the made-up kid, one for the 1,000');
    t.equal(await reason(keys.resolve('ES256', 'made-up', { deadline: Date.now() + 100 })), 'unknown_kid');
  });

  t.test('a refusal for an unknown kid names it, cut at 64 characters and cleaned', async (t) => {
    const server = await idp(t, [ec]);
    const { keys } = manager(server);
    await until('the keys are loaded', () => keys.ready());
    const kid = `evil\n${'k'.repeat(100)}`;
    const err = (await keys.resolve('ES256', kid).catch((e: unknown) => e)) as {
      log?: Record<string, string>;
    };
    t.same(err.log, { kid: `evil?${'k'.repeat(59)}` });
  });

  t.test('discovery: the document must name the issuer and a usable jwks_uri', async (t) => {
    const keysServer = await idp(t, [ec]);
    let doc = '';
    const discovery = createServer((_req, res) => res.writeHead(200).end(doc));
    discovery.listen(0, '127.0.0.1');
    await once(discovery, 'listening');
    t.teardown(() => new Promise<void>((resolve) => discovery.close(() => resolve())));
    const url = `http://127.0.0.1:${(discovery.address() as AddressInfo).port}/.well-known/openid-configuration`;
    const issuer = 'https://issuer.test';
    const cases: Array<[string, string]> = [
      ['not json', 'discovery document: not JSON'],
      ['[1]', 'discovery document: its issuer is not the configured one'],
      [
        JSON.stringify({ issuer: `${issuer}/`, jwks_uri: keysServer.url }),
        'discovery document: its issuer is not the configured one',
      ],
      [JSON.stringify({ issuer }), 'discovery document: no usable jwks_uri'],
      [JSON.stringify({ issuer, jwks_uri: 'not a url' }), 'discovery document: no usable jwks_uri'],
      [JSON.stringify({ issuer, jwks_uri: 'ftp://idp/keys' }), 'discovery document: no usable jwks_uri'],
      [JSON.stringify({ issuer, jwks_uri: `${keysServer.url}#x` }), 'discovery document: no usable jwks_uri'],
      [
        JSON.stringify({ issuer, jwks_uri: keysServer.url.replace('http://', 'http://u:p@') }),
        'discovery document: no usable jwks_uri',
      ],
    ];
    for (const [body, reason] of cases) {
      doc = body;
      const before = lines.length;
      const { keys, count } = manager(keysServer, { source: { discoveryUrl: url, issuer } });
      await until('an invalid fetch is counted', async () => (await count('invalid')) === 1);
      t.match(
        lines.slice(before).find((l) => l.msg === 'jwks fetch failed'),
        { reason, provider: 'test' },
        reason,
      );
      t.equal(keys.status(), `not ready: ${reason}`);
      keys.close();
    }
    t.equal(keysServer.fetches, 0, 'no key set fetched from a document that does not qualify');
    doc = JSON.stringify({ issuer, jwks_uri: `${keysServer.url}?tenant=a` });
    const { keys } = manager(keysServer, { source: { discoveryUrl: url, issuer } });
    await until('the keys are loaded', () => keys.ready());
    t.equal(keys.status(), true);
    t.equal(keysServer.fetches, 1, 'a jwks_uri with a query is fine');
  });

  t.test('before the first load, a lookup waits for the fetch, bounded by the timeout', async (t) => {
    const server = await idp(t, [ec]);
    server.mode = 'hang';
    const { keys, count } = manager(server, { timeout: 100 });
    t.equal(await reason(keys.resolve('ES256', 'ec-1')), 'jwks_unavailable');
    t.equal(await count('timeout'), 1);
    t.notOk(keys.ready());
    t.match(lines.at(-1), { msg: 'jwks fetch failed', result: 'timeout', keys_kept: 0 });
  });

  t.test('refreshes follow max-age within [cooldown, refresh interval]', async (t) => {
    const servers = await Promise.all([1, 2, 3, 4, 5].map(() => idp(t, [ec])));
    const [honoured, plain, capped, stale, longLived] = servers as [
      JwksServer,
      JwksServer,
      JwksServer,
      JwksServer,
      JwksServer,
    ];
    honoured.headers = { 'Cache-Control': 'public, max-age=1' };
    capped.headers = { 'Cache-Control': 'max-age=3600' };
    stale.headers = { 'Cache-Control': 'max-age="3600"', Age: '3600' };
    longLived.headers = { 'Cache-Control': 'max-age=3600' };
    manager(honoured, { cooldown: 10 });
    manager(plain, { refreshInterval: 1_000 });
    manager(capped, { refreshInterval: 1_000 });
    manager(stale, { cooldown: 50 });
    manager(longLived, { cooldown: 10 });
    await Promise.all([honoured.fetched(2), plain.fetched(2), capped.fetched(2), stale.fetched(3)]);
    t.equal(longLived.fetches, 1, 'a long max-age: no refresh yet');
  });

  t.test('a fetch is bounded in size and never follows a redirect', async (t) => {
    const big = await idp(t, [ec]);
    big.mode = 'garbage';
    big.garbage = ' '.repeat(2 * 1024 * 1024);
    big.headers = { 'Content-Length': String(big.garbage.length) };
    const target = await idp(t, [ec]);
    const moved = await idp(t, []);
    moved.mode = 'down';
    moved.status = 302;
    moved.headers = { Location: target.url };
    const [a, b] = [manager(big), manager(moved)];
    await until(
      'both fetches fail',
      async () => (await a.count('invalid')) === 1 && (await b.count('error')) === 1,
    );
    t.equal(target.fetches, 0, 'the redirect was not followed');
    t.ok(
      lines.some((l) => JSON.stringify(l).includes('redirect refused')),
      'the log says why',
    );
    t.notOk(a.keys.ready() || b.keys.ready());
  });

  t.test(
    'close stops background refreshes; a fetch under way and waiting requests still finish',
    async (t) => {
      const server = await idp(t, [ec]);
      server.mode = 'hang';
      const settings = { cooldown: 10, refreshInterval: 1_000 };
      const { keys } = manager(server, settings);
      await server.fetched(1);
      const waiting = reason(keys.resolve('ES256', 'ec-1'));
      keys.close();
      server.mode = 'ok';
      server.release();
      t.equal(await waiting, 'accepted', 'the request on the fetch under way gets its key');
      t.ok(keys.ready());
      // A manager left open, loaded after the closed one, refreshes after it would have: once it
      // has, the closed one's refresh would be due too.
      const control = await idp(t, [ec]);
      const open = manager(control, settings);
      await until('the open key manager is ready', () => open.keys.ready());
      await control.fetched(2, 15_000);
      t.equal(server.fetches, 1, 'no background refresh after close');
      t.equal(await reason(keys.resolve('ES256', 'made-up')), 'unknown_kid');
      t.equal(server.fetches, 2, 'a request may still cause its fetch');
    },
  );

  t.test('log lines name the result, never the response or the query', async (t) => {
    const server = await idp(t, [ec]);
    server.mode = 'garbage';
    server.garbage = 'secret-looking-garbage';
    const { keys, count } = manager(
      Object.assign(Object.create(server) as JwksServer, { url: `${server.url}?api_key=hunter2` }),
      { cooldown: 10 },
    );
    await until('an invalid fetch is counted', async () => (await count('invalid')) >= 1);
    server.mode = 'ok';
    await until('the keys are loaded', () => keys.ready());
    const text = JSON.stringify(lines);
    t.notMatch(text, /hunter2|secret-looking/);
    const mine = lines.filter((l) => l.jwks_url === server.url);
    t.match(mine[0], { msg: 'jwks fetch failed', result: 'invalid', reason: 'not JSON', level: 'warn' });
    t.match(mine.at(-1), { msg: 'jwks loaded', keys: 1, level: 'info' });
  });
});

t.test('no token ever reaches a log line', async (t) => {
  const text = JSON.stringify(logs);
  t.ok(sent.length > 100 && logs.length > 5);
  t.notOk(
    sent.some((token) => text.includes(token) || text.includes(token.split('.')[2] || token)),
    'no token in a log',
  );
});
