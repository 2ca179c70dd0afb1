import { SignJWT } from 'jose';
import t, { type Test } from 'tap';
import { createJwtVerifier } from '../../src/auth/jwt.js';
import { type Config, configSchema } from '../../src/config/schema.js';
import { createMetrics } from '../../src/observability/metrics.js';

const SECRET = Buffer.from('a-shared-secret-of-32-bytes-long');
const NOW = Date.UTC(2024, 0, 1, 10, 0, 0);
const NOW_S = NOW / 1000;

type JwtConfig = Config['auth']['jwt'];
const config = (over: Partial<JwtConfig> = {}): JwtConfig => ({
  hs256_secret: SECRET.toString('base64'),
  clock_tolerance: 0,
  permissions_claim: 'permissions',
  default_permissions: [],
  jwks_refresh_interval: 300_000,
  jwks_cooldown: 30_000,
  jwks_timeout: 5_000,
  token_cache_size: 100,
  issuers: [],
  ...over,
});
const verifier = (over: Partial<JwtConfig> = {}) => createJwtVerifier(config(over), { now: () => NOW });

async function token(claims: Record<string, unknown>, opts: { secret?: Uint8Array; alg?: string } = {}) {
  return new SignJWT({ exp: NOW_S + 600, ...claims })
    .setProtectedHeader({ alg: opts.alg ?? 'HS256' })
    .sign(opts.secret ?? SECRET);
}

function unsigned(claims: Record<string, unknown>): string {
  const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part({ exp: NOW_S + 600, ...claims })}.`;
}

async function refusal(t: Test, verified: unknown, reason: string, name = reason) {
  await t.rejects(
    async () => verified,
    { status: 401, context: 'header:Authorization', message: 'Token Authorization failed.', reason },
    name,
  );
}

t.test('a good HS256 token gives its subject and permissions', async (t) => {
  const id = await verifier().verify(await token({ sub: 'alice', permissions: ['collectors:read', 'x:y'] }));
  t.equal(id.scheme, 'bearer');
  t.equal(id.subject, 'alice');
  t.same([...id.permissions].sort(), ['collectors:read', 'x:y']);
  t.equal(id.tokenId, undefined);
});

t.test('permissions may be a space-separated string', async (t) => {
  const id = await verifier().verify(await token({ permissions: 'collectors:read  asset_group_tags:read' }));
  t.same([...id.permissions].sort(), ['asset_group_tags:read', 'collectors:read']);
  t.equal(id.subject, 'unknown');
});

t.test('a token without the claim gets the default permissions', async (t) => {
  const v = verifier({ default_permissions: ['collectors:read'] });
  t.same([...(await v.verify(await token({ sub: 'svc' }))).permissions], ['collectors:read']);
});

t.test(
  'the permissions claim name is configurable; a malformed claim grants nothing, a null one the defaults',
  async (t) => {
    const v = verifier({ permissions_claim: 'scope', default_permissions: ['*'] });
    t.same([...(await v.verify(await token({ scope: 'passthrough' }))).permissions], ['passthrough']);
    t.same([...(await v.verify(await token({ scope: 42 }))).permissions], []);
    t.same(
      [...(await v.verify(await token({ scope: ['a', 7] }))).permissions],
      [],
      'a list with a non-string',
    );
    t.same([...(await v.verify(await token({ scope: null }))).permissions], ['*'], 'null is an unset claim');
  },
);

t.test('a token signed with another secret is refused', async (t) => {
  await refusal(
    t,
    verifier().verify(await token({}, { secret: Buffer.from('another-secret-of-32-bytes-long!') })),
    'bad_signature',
  );
});

t.test('alg none and other algorithms are refused', async (t) => {
  await refusal(t, verifier().verify(unsigned({ sub: 'mallory' })), 'bad_algorithm', 'none');
  await refusal(t, verifier().verify(await token({}, { alg: 'HS512' })), 'bad_algorithm', 'HS512');
});

t.test('expiry is required and enforced', async (t) => {
  await refusal(t, verifier().verify(await token({ exp: NOW_S - 1 })), 'expired');
  await refusal(t, verifier().verify(await token({ exp: NOW_S })), 'expired', 'exp equal to now');
  await refusal(t, verifier().verify(await token({ exp: undefined })), 'missing_exp');
  await refusal(t, verifier().verify(await token({ exp: 'soon' })), 'malformed', 'exp not a number');
});

t.test('nbf and iat in the future are refused beyond the clock tolerance', async (t) => {
  await refusal(t, verifier().verify(await token({ nbf: NOW_S + 5 })), 'not_yet_valid', 'nbf');
  await refusal(t, verifier().verify(await token({ iat: NOW_S + 5 })), 'not_yet_valid', 'iat');
  const tolerant = verifier({ clock_tolerance: 10_000 });
  t.ok(await tolerant.verify(await token({ nbf: NOW_S + 5, iat: NOW_S + 5 })));
  t.ok(await tolerant.verify(await token({ exp: NOW_S - 5 })), 'exp within tolerance');
  await refusal(
    t,
    tolerant.verify(await token({ iat: NOW_S + 11 })),
    'not_yet_valid',
    'iat beyond tolerance',
  );
});

t.test('issuer and audience are checked where configured', async (t) => {
  const v = verifier({ issuer: 'https://idp', audience: ['gw', 'other'] });
  t.ok(await v.verify(await token({ iss: 'https://idp', aud: 'other' })), 'audience from the list');
  t.ok(await v.verify(await token({ iss: 'https://idp', aud: ['x', 'gw'] })), 'one of the token audiences');
  await refusal(t, v.verify(await token({ iss: 'https://evil', aud: 'gw' })), 'bad_issuer');
  await refusal(t, v.verify(await token({ aud: 'gw' })), 'bad_issuer', 'issuer missing');
  await refusal(t, v.verify(await token({ iss: 'https://idp', aud: 'nope' })), 'bad_audience');
  await refusal(t, v.verify(await token({ iss: 'https://idp' })), 'bad_audience', 'audience missing');
  t.ok(await verifier({ audience: 'gw' }).verify(await token({ aud: 'gw' })), 'a single audience');
});

t.test('a token that is not a JWS is malformed', async (t) => {
  const good = await token({});
  for (const bad of ['', 'abc', 'a.b.c', 'a.b', `${good.slice(0, -3)}!!!`]) {
    await refusal(t, verifier().verify(bad), 'malformed', JSON.stringify(bad));
  }
  const tampered = `${good.slice(0, -6)}${good.slice(-6, -5) === 'A' ? 'B' : 'A'}${good.slice(-5)}`;
  await refusal(t, verifier().verify(tampered), 'bad_signature', 'a tampered signature');
  const notJson = `${Buffer.from('{"alg":"HS256"}').toString('base64url')}.${Buffer.from('[1]').toString('base64url')}.x`;
  await refusal(t, verifier().verify(notJson), 'malformed', 'claims not an object');
});

t.test('without a secret every bearer token fails with no_key', async (t) => {
  await refusal(t, verifier({ hs256_secret: undefined }).verify(await token({})), 'no_key');
});

t.test('the reason never carries the token', async (t) => {
  const jwt = await token({ exp: NOW_S - 1 });
  const err = await Promise.resolve()
    .then(() => verifier().verify(jwt))
    .catch((e: Error) => e);
  t.notMatch(JSON.stringify({ ...(err as object), message: (err as Error).message }), jwt);
});

t.test('a verified token is served from the cache until its exp, then refused', async (t) => {
  const metrics = createMetrics();
  let clock = NOW;
  const v = createJwtVerifier(config(), { now: () => clock, metrics });
  const jwt = await token({ sub: 'alice', exp: NOW_S + 60 });
  const count = async (result: string) =>
    (await metrics.jwtVerifications.get()).values.find((x) => x.labels.result === result)?.value ?? 0;
  t.equal((await v.verify(jwt)).subject, 'alice');
  t.equal((await v.verify(jwt)).subject, 'alice');
  t.equal(await count('verified'), 1);
  t.equal(await count('cached'), 1);
  clock = NOW + 59_999;
  t.ok(await v.verify(jwt), 'a millisecond before exp');
  clock = NOW + 60_000;
  await refusal(t, v.verify(jwt), 'expired', 'at exp the cache does not answer');
  t.equal(await count('refused'), 1);
  t.equal(await count('cached'), 2);
});

t.test('token_cache_size 0 verifies every time', async (t) => {
  const metrics = createMetrics();
  const v = createJwtVerifier(config({ token_cache_size: 0 }), { now: () => NOW, metrics });
  const jwt = await token({});
  await v.verify(jwt);
  await v.verify(jwt);
  // Every result is exported from 0: only `verified` has moved.
  t.same(
    (await metrics.jwtVerifications.get()).values
      .filter((x) => x.value > 0)
      .map((x) => [x.labels.result, x.value]),
    [['verified', 2]],
  );
});

t.test('max_token_age refuses old tokens, cached ones included, and needs iat', async (t) => {
  let clock = NOW;
  const v = createJwtVerifier(config({ max_token_age: 60_000, clock_tolerance: 1_000 }), {
    now: () => clock,
  });
  const jwt = await token({ iat: NOW_S - 30 });
  t.ok(await v.verify(jwt));
  clock = NOW + 30_000;
  t.ok(await v.verify(jwt), 'at the maximum age');
  clock = NOW + 31_000;
  t.ok(await v.verify(jwt), 'within the tolerance');
  clock = NOW + 32_000;
  await refusal(t, v.verify(jwt), 'too_old', 'beyond the maximum age and the tolerance');
  clock = NOW;
  await refusal(t, v.verify(await token({})), 'missing_iat');
  await refusal(t, v.verify(await token({ iat: NOW_S - 62 })), 'too_old');
});

t.test('with jwks_url alone, an HMAC token is never accepted, whatever its secret', async (t) => {
  const v = createJwtVerifier(
    config({ hs256_secret: undefined, jwks_url: 'http://127.0.0.1:9/jwks', jwks_timeout: 100 }),
    { now: () => NOW },
  );
  t.teardown(() => v.close());
  t.notOk(v.ready(), 'not ready before the keys load');
  await refusal(t, v.verify(await token({})), 'bad_algorithm');
  await refusal(t, v.verify(unsigned({})), 'bad_algorithm', 'none');
  const rs = `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from(`{"exp":${NOW_S + 60}}`).toString('base64url')}.AAAA`;
  await refusal(t, v.verify(rs), 'jwks_unavailable', 'no keys: refused once the fetch failed');
});

t.test('without jwks_url the verifier is ready at once and close does nothing', async (t) => {
  const v = verifier();
  t.ok(v.ready());
  v.close();
  t.ok(await v.verify(await token({})), 'still verifies');
});

t.test('permissions_claim: a dotted path, or a list of keys for claim names holding dots', async (t) => {
  const perms = async (over: Partial<JwtConfig>, claims: Record<string, unknown>) =>
    [
      ...(await verifier({ default_permissions: ['passthrough'], ...over }).verify(await token(claims)))
        .permissions,
    ].sort();
  const keycloak = {
    realm_access: { roles: ['collectors:read'] },
    resource_access: { gateway: { roles: 'a b' } },
  };
  t.same(await perms({ permissions_claim: 'realm_access.roles' }, keycloak), ['collectors:read']);
  t.same(await perms({ permissions_claim: 'resource_access.gateway.roles' }, keycloak), ['a', 'b']);
  t.same(
    await perms({ permissions_claim: 'scp' }, { scp: ['x', 'y'] }),
    ['x', 'y'],
    'Okta and Entra ID: scp',
  );
  t.same(
    await perms(
      { permissions_claim: ['https://example.com/claims', 'roles'] },
      {
        'https://example.com/claims': { roles: ['collectors:read'] },
      },
    ),
    ['collectors:read'],
  );
  t.same(
    await perms({ permissions_claim: 'https://example.com/claims' }, { 'https://example.com/claims': ['x'] }),
    ['passthrough'],
    'a string is a path: a claim name with dots needs the list form',
  );
  t.same(
    await perms({ permissions_claim: 'realm_access.roles' }, { realm_access: 'admin' }),
    ['passthrough'],
    'no object on the way: the defaults',
  );
  t.same(await perms({ permissions_claim: 'realm_access.roles' }, {}), ['passthrough']);
  t.same(
    await perms({ permissions_claim: 'constructor' }, {}),
    ['passthrough'],
    'own claims only, never inherited members',
  );
  t.same(await perms({ permissions_claim: 'a.toString' }, { a: {} }), ['passthrough']);
});

t.test('permission_map translates the identity provider names; unmapped names grant nothing', async (t) => {
  const v = verifier({
    permissions_claim: 'roles',
    permission_map: { 'gw-reader': ['collectors:read', 'asset_group_tags:read'], 'gw-admin': ['*'] },
    default_permissions: ['passthrough'],
  });
  const perms = async (claims: Record<string, unknown>) =>
    [...(await v.verify(await token(claims))).permissions].sort();
  t.same(await perms({ roles: ['gw-reader', 'offline_access'] }), [
    'asset_group_tags:read',
    'collectors:read',
  ]);
  t.same(await perms({ roles: 'gw-admin' }), ['*']);
  t.same(
    await perms({ roles: ['collectors:read'] }),
    [],
    "a gateway permission's own name is not in the map",
  );
  t.same(await perms({}), ['passthrough'], 'no claim: default_permissions, not mapped');
});

t.test('clock_tolerance defaults to 60 s: an expired token stays valid 60 s longer', async (t) => {
  const parsed = configSchema.parse({
    auth: { jwt: { hs256_secret: SECRET.toString('base64') } },
    backends: {
      collectors: { type: 'local', path: 'c' },
      sso_providers: { type: 'local', path: 's' },
      asset_group_tags: { type: 'local', path: 'a' },
    },
  });
  const v = createJwtVerifier(parsed.auth.jwt, { now: () => NOW });
  t.ok(await v.verify(await token({ exp: NOW_S - 59 })), 'expired 59 s ago: accepted');
  t.ok(await v.verify(await token({ iat: NOW_S + 50, nbf: NOW_S + 50 })), "an issuer's clock 50 s ahead");
  await refusal(t, v.verify(await token({ exp: NOW_S - 60 })), 'expired', 'expired 60 s ago');
  await refusal(t, v.verify(await token({ nbf: NOW_S + 61 })), 'not_yet_valid');
});
