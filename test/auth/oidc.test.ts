/**
 * The gateway against a real OpenID provider (`oidc-provider` from npm, started here on port 0):
 * client_credentials tokens from its token endpoint, its discovery document, its own key rotation,
 * the provider stopped and started, several providers at once. Through the front door only.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { generateKeyPair, SignJWT } from 'jose';
import t, { type Test } from 'tap';
import { stringify } from 'yaml';
import { loadConfigFile } from '../../src/config/load.js';
import {
  baseConfig,
  errorOf,
  JWT_SECRET,
  merge,
  readyz,
  request,
  startGateway,
  type TestGateway,
} from '../helpers/gateway.js';
import { until } from '../helpers/wait.js';
import { scrape } from '../helpers/metrics.js';
import { type OidcProvider, RESOURCE, startOidcProvider } from '../helpers/oidc.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const CHECKSUM = '/api/v2/collectors/sharphound/latest/checksum';
/** The provider's scopes as the gateway's permissions. */
const MAP = { 'members:read': ['asset_group_tags:read'], 'checksums:read': ['collectors:read'] };

/** Every token sent and every gateway's log lines, searched at the end. */
const sent: string[] = [];
const allLogs: Array<Array<Record<string, unknown>>> = [];

async function provider(t: Test, options: Parameters<typeof startOidcProvider>[0] = {}) {
  const idp = await startOidcProvider(options);
  t.teardown(() => idp.close());
  return idp;
}

/** An `issuers` entry for `idp` (discovery), mapping its scopes to permissions. */
const entry = (idp: OidcProvider, over: Record<string, unknown> = {}) => ({
  issuer: idp.issuer,
  audience: RESOURCE,
  permissions_claim: 'scope',
  permission_map: MAP,
  ...over,
});

async function gateway(t: Test, jwt: Record<string, unknown>, wait = true) {
  const gw = await startGateway({ auth: { jwt } });
  t.teardown(() => gw.close());
  allLogs.push(gw.logs);
  if (wait) await until('the gateway is ready', async () => (await readyz(gw)).status === 200);
  return gw;
}

function bearer(gw: TestGateway, token: string, target = MEMBER) {
  sent.push(token);
  return request(gw, { method: 'GET', target, headers: { Authorization: `Bearer ${token}` } });
}

const refusals = (gw: TestGateway) =>
  scrape(gw.adminUrl, 'gateway_auth_failures_total', { scheme: 'bearer' });

/** A token that names `issuer` and a made-up `kid`, signed by a key nobody published. */
async function madeUp(issuer: string, kid = randomUUID()): Promise<string> {
  const { privateKey } = await generateKeyPair('ES256');
  return new SignJWT({ scope: 'members:read', aud: RESOURCE, iss: issuer })
    .setProtectedHeader({ alg: 'ES256', kid })
    .setExpirationTime('5m')
    .sign(privateKey);
}

/** Rewrites the gateway's configuration file with `jwt` and reloads it, as SIGHUP does. */
async function reload(gw: TestGateway, jwt: Record<string, unknown>) {
  const config = merge(baseConfig(), { auth: { jwt } });
  writeFileSync(gw.configFile, stringify(config));
  await gw.app.reload(loadConfigFile(gw.configFile));
}

t.test('a client_credentials token from the token endpoint, keys found by discovery', async (t) => {
  const idp = await provider(t);
  const gw = await gateway(t, { issuers: [entry(idp)] });
  t.ok(idp.requests('/.well-known/openid-configuration') >= 1, 'the discovery document was read');
  const res = await bearer(gw, await idp.token('members:read'));
  t.equal(res.status, 200, 'members:read maps to asset_group_tags:read');
  t.equal(
    (await bearer(gw, await idp.token('checksums:read'))).status,
    403,
    'another scope, another permission',
  );
  t.equal((await bearer(gw, await idp.token('checksums:read'), CHECKSUM)).status, 200);
  t.equal(
    (await bearer(gw, await idp.token('admin'), CHECKSUM)).status,
    403,
    'a scope the map does not list grants nothing',
  );
  const { body } = await readyz(gw);
  t.equal(
    body.checks[`keys:127.0.0.1:${idp.port}`],
    'ok',
    "the provider's check, named by the issuer's host",
  );
  t.equal(
    await scrape(gw.adminUrl, 'gateway_jwks_fetches_total', {
      provider: `127.0.0.1:${idp.port}`,
      result: 'ok',
    }),
    1,
    'the JWKS metrics carry the provider',
  );
  t.equal(await scrape(gw.adminUrl, 'gateway_jwks_keys', { provider: `127.0.0.1:${idp.port}` }), 1);
  t.equal(await scrape(gw.adminUrl, 'gateway_jwks_fetches_total', { result: 'error' }), 0, 'exported at 0');
});

t.test('claims at a dotted path or under a key holding dots, as Keycloak and Auth0 write them', async (t) => {
  const idp = await provider(t, {
    extraClaims: {
      realm_access: { roles: ['gateway-reader', 'offline_access'] },
      'https://gateway.test/claims': { roles: 'gateway-reader' },
    },
  });
  const map = { 'gateway-reader': ['asset_group_tags:read'] };
  const keycloak = await gateway(t, {
    issuers: [entry(idp, { permissions_claim: 'realm_access.roles', permission_map: map })],
  });
  const auth0 = await gateway(t, {
    issuers: [
      entry(idp, { permissions_claim: ['https://gateway.test/claims', 'roles'], permission_map: map }),
    ],
  });
  const token = await idp.token();
  t.equal((await bearer(keycloak, token)).status, 200, 'realm_access.roles');
  t.equal((await bearer(auth0, token)).status, 200, 'a namespaced claim, as a list of keys');
  t.equal((await bearer(keycloak, token, CHECKSUM)).status, 403);
});

t.test('the provider rotates its key right after the gateway started: no refusal', async (t) => {
  const idp = await provider(t);
  const gw = await gateway(t, { issuers: [entry(idp)] });
  const fetched = idp.requests('/jwks');
  await idp.rotate();
  const res = await bearer(gw, await idp.token());
  t.equal(res.status, 200, `signed with ${idp.kid}, published a moment ago`);
  t.equal(idp.requests('/jwks'), fetched + 1, 'one fetch, at once');
  t.equal(await refusals(gw), 0, 'no 401 at all');
});

t.test('the provider rotates its key right after a reload: no refusal', async (t) => {
  const idp = await provider(t);
  const jwt = { issuers: [entry(idp)] };
  const gw = await gateway(t, jwt);
  t.equal((await bearer(gw, await idp.token())).status, 200);
  await reload(gw, jwt);
  await idp.rotate();
  t.equal((await bearer(gw, await idp.token())).status, 200, 'the new key, right after the reload');
  t.equal(await refusals(gw), 0);
});

t.test('a rotation inside the cooldown of an unknown kid: the request waits, then passes', async (t) => {
  const idp = await provider(t);
  const gw = await gateway(t, { issuers: [entry(idp)], jwks_cooldown: '1s' });
  const began = performance.now();
  const junk = await bearer(gw, await madeUp(idp.issuer));
  t.equal(junk.status, 401);
  const fetched = idp.requests('/jwks');
  await idp.rotate();
  t.equal((await bearer(gw, await idp.token())).status, 200, 'not refused');
  // The junk's fetch started after `began`; the next one may not start within the cooldown (1 s,
  // less the millisecond of the gateway's clock).
  t.ok(performance.now() - began >= 998, 'it waited for the next allowed fetch');
  t.equal(idp.requests('/jwks'), fetched + 1, 'which was one fetch');
});

t.test('a flood of made-up kids costs the provider at most one fetch per cooldown', async (t) => {
  const idp = await provider(t);
  // Short, so that five waves take about a second; the bound below scales with it.
  const cooldown = 250;
  const gw = await gateway(t, { issuers: [entry(idp)], jwks_cooldown: `${cooldown}ms` });
  const before = idp.requests('/jwks');
  const began = performance.now();
  const answers = [];
  // Each wave once the one before is answered: the first at once; every later one inside the
  // cooldown of the fetch the wave before caused, so it waits for the next allowed fetch.
  for (let wave = 0; wave < 5; wave++) {
    const tokens = await Promise.all(Array.from({ length: 40 }, () => madeUp(idp.issuer)));
    answers.push(...(await Promise.all(tokens.map((tok) => bearer(gw, tok)))));
  }
  const elapsed = performance.now() - began;
  t.same(new Set(answers.map((r) => r.status)), new Set([401]));
  t.same(
    new Set(answers.map((r) => r.headers['www-authenticate'])),
    new Set(['Bearer realm="api", error="invalid_token", error_description="unknown signing key"']),
  );
  const fetched = idp.requests('/jwks') - before;
  t.ok(
    // One fetch at once, then at most one per cooldown: the gateway's clock counts whole
    // milliseconds, so each cooldown may end up to 1 ms early by this test's clock.
    fetched >= 1 && fetched <= Math.floor((elapsed + 5) / cooldown) + 1,
    `${fetched} fetches in ${Math.round(elapsed)} ms`,
  );
  t.equal(
    await scrape(gw.adminUrl, 'gateway_auth_failures_total', { reason: 'unknown_kid' }),
    200,
    'each counted as unknown_kid',
  );
  // A log line is written when its response closes: wait for the last ones.
  const refusals = () => gw.logs.filter((l) => l.auth_failure === 'unknown_kid');
  await until('the 200 refusals are logged', () => refusals().length >= 200);
  const kids = refusals().map((l) => l.kid);
  t.equal(kids.length, 200, 'each refusal logs the kid');
  t.ok(kids.every((k) => typeof k === 'string' && k.length === 36));
});

t.test('the provider stopped: a reload keeps /readyz at 200 and tokens working', async (t) => {
  const idp = await provider(t);
  const jwt = { issuers: [entry(idp)] };
  const gw = await gateway(t, jwt);
  const token = await idp.token();
  t.equal((await bearer(gw, token)).status, 200);
  await idp.stop();
  const began = performance.now();
  await reload(gw, jwt);
  t.ok(performance.now() - began < 4_000, 'the reload did not wait for the provider');
  t.equal((await readyz(gw)).status, 200, 'still ready');
  t.equal((await bearer(gw, token)).status, 200, 'the last good keys verify');
  await until('a failed key fetch is logged', () => gw.logs.some((l) => l.msg === 'jwks fetch failed'));
  t.equal((await readyz(gw)).status, 200, 'still ready after the failed fetch');
  await idp.start();
  await idp.rotate();
  t.equal((await bearer(gw, await idp.token())).status, 200, 'back: a new key is fetched');
});

t.test(
  'a reload to a provider that cannot load keys within 5 s fails; the old configuration stays',
  async (t) => {
    const idp = await provider(t);
    const other = await provider(t);
    await other.stop();
    const gw = await gateway(t, { issuers: [entry(idp)] });
    const token = await idp.token();
    await t.rejects(
      reload(gw, { issuers: [entry(idp), entry(other, { name: 'other' })] }),
      /auth\.jwt\.issuers\[1\] \(other\): no keys loaded within 5 s/,
    );
    t.equal((await readyz(gw)).status, 200);
    t.notOk('keys:other' in (await readyz(gw)).body.checks, 'the old configuration serves');
    t.equal((await bearer(gw, token)).status, 200);
  },
);

t.test(
  'several providers: the iss picks one; HS256 tokens are checked against the secret only',
  async (t) => {
    const [a, b, gone] = [await provider(t), await provider(t), await provider(t)];
    await gone.stop();
    const gw = await gateway(t, {
      issuers: [
        entry(a, { name: 'corp-a' }),
        entry(b, { name: 'corp-b', permission_map: { 'members:read': ['collectors:read'] } }),
        entry(gone, { name: 'optional', required: false }),
      ],
    });
    t.equal((await bearer(gw, await a.token())).status, 200, 'provider a');
    t.equal((await bearer(gw, await b.token(), CHECKSUM)).status, 200, 'provider b, with its own map');
    t.equal((await bearer(gw, await b.token())).status, 403);
    const stranger = await bearer(gw, await madeUp('https://stranger.example'));
    t.same(errorOf(stranger), {
      status: 401,
      context: 'header:Authorization',
      message: 'Token Authorization failed.',
    });
    t.equal(
      stranger.headers['www-authenticate'],
      'Bearer realm="api", error="invalid_token", error_description="wrong issuer"',
    );
    const { status, body } = await readyz(gw);
    t.equal(status, 200, 'a provider that is not required does not hold readiness');
    t.match(body.checks, { 'keys:corp-a': 'ok', 'keys:corp-b': 'ok', 'keys:optional': /\(not required\)$/ });
    for (const name of ['corp-a', 'corp-b']) {
      t.equal(
        await scrape(gw.adminUrl, 'gateway_jwks_fetches_total', { provider: name, result: 'ok' }),
        1,
        name,
      );
    }
    t.ok(
      ((await scrape(gw.adminUrl, 'gateway_jwks_fetches_total', { provider: 'optional', result: 'error' })) ??
        0) >= 1,
    );
    const hs = (claims: Record<string, unknown>) =>
      new SignJWT({ permissions: ['asset_group_tags:read'], ...claims })
        .setProtectedHeader({ alg: 'HS256' })
        .setExpirationTime('5m')
        .sign(Buffer.from(JWT_SECRET, 'base64'));
    t.equal(
      (await bearer(gw, await hs({ iss: a.issuer }))).status,
      200,
      "an HS256 token naming a's issuer: the secret",
    );
    const res = await bearer(gw, await hs({ iss: a.issuer, scope: 'members:read', permissions: undefined }));
    t.equal(res.status, 403, "never a's claims settings");
  },
);

t.test('a jwks_url that answers a discovery document is named as such', async (t) => {
  const idp = await provider(t);
  const gw = await gateway(
    t,
    { jwks_url: `${idp.issuer}/.well-known/openid-configuration`, audience: RESOURCE },
    false,
  );
  await until('a failed key fetch is logged', () => gw.logs.some((l) => l.msg === 'jwks fetch failed'));
  const line = gw.logs.find((l) => l.msg === 'jwks fetch failed');
  t.match(line, { result: 'invalid', reason: /^a discovery document, not a key set/ });
  const { status, body } = await readyz(gw);
  t.equal(status, 503);
  t.match(body.checks[`keys:127.0.0.1:${idp.port}`], /^not ready: a discovery document, not a key set/);
});

t.test('discovery: the document must name the configured issuer byte for byte', async (t) => {
  const idp = await provider(t);
  const gw = await gateway(t, { issuers: [entry(idp, { issuer: `${idp.issuer}/` })] }, false);
  await until('a failed key fetch is logged', () => gw.logs.some((l) => l.msg === 'jwks fetch failed'));
  t.equal(idp.requests('/.well-known/openid-configuration'), 1, 'one trailing slash removed to find it');
  t.match(
    gw.logs.find((l) => l.msg === 'jwks fetch failed'),
    { reason: /its issuer is not the configured one/ },
  );
  t.equal(idp.requests('/jwks'), 0, 'no key set from a document of another issuer');
  t.equal((await readyz(gw)).status, 503);
});

t.test('no token ever reaches a log line', async (t) => {
  const text = JSON.stringify(allLogs);
  t.ok(sent.length > 200);
  t.notOk(
    sent.some((token) => text.includes(token.split('.')[2] as string)),
    'no token signature in a log',
  );
});
