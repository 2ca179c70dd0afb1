/**
 * `auth.jwt` with several identity providers (contract §3): what the configuration accepts and
 * refuses, the per-entry defaults, and `check-config`'s warning about a provider without audience.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { jwtProviders, jwtWarnings } from '../../src/config/jwt-providers.js';
import { ConfigError, parseConfig } from '../../src/config/load.js';
import { ROOT } from '../helpers/gateway.js';
import { node } from '../helpers/node-child.js';

const BACKENDS = `backends:
  collectors: { type: local, path: c }
  sso_providers: { type: local, path: s.json }
  asset_group_tags: { type: local, path: a.json }
`;
const parse = (jwt: string) => parseConfig(`auth: { jwt: ${jwt} }\n${BACKENDS}`, '/base');
function problems(jwt: string): string {
  try {
    parse(jwt);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.join('\n');
    throw err;
  }
  return '';
}

t.test('each entry takes the auth.jwt value of every key it does not set', async (t) => {
  const c = parse(`{
    clock_tolerance: 5s, permissions_claim: scope, default_permissions: [collectors:read], jwks_cooldown: 10s,
    permission_map: { reader: [asset_group_tags:read] },
    issuers: [
      { issuer: "https://kc.example.com/realms/corp/", audience: gateway },
      { name: okta, issuer: "https://corp.okta.com/oauth2/default", jwks_url: "https://corp.okta.com/keys?client=1",
        required: false, clock_tolerance: 1s, permissions_claim: [ "https://corp/claims", roles ],
        permission_map: { admin: ["*"] }, default_permissions: [], algorithms: [RS256], jwks_timeout: 2s }
    ] }`);
  const [kc, okta] = jwtProviders(c.auth.jwt);
  t.match(kc, {
    name: 'kc.example.com',
    at: 'auth.jwt.issuers[0]',
    issuer: 'https://kc.example.com/realms/corp/',
    source: { discoveryUrl: 'https://kc.example.com/realms/corp/.well-known/openid-configuration' },
    audience: 'gateway',
    required: true,
    clockTolerance: 5_000,
    claims: { permissionsClaim: 'scope', permissionMap: { reader: ['asset_group_tags:read'] } },
    cooldown: 10_000,
    timeout: 5_000,
  });
  t.same(kc!.claims.defaultPermissions, ['collectors:read']);
  t.equal(kc!.algorithms, undefined, 'any algorithm a key can verify');
  t.match(okta, {
    name: 'okta',
    source: { jwksUrl: 'https://corp.okta.com/keys?client=1' },
    required: false,
    clockTolerance: 1_000,
    claims: { permissionsClaim: ['https://corp/claims', 'roles'], permissionMap: { admin: ['*'] } },
    algorithms: ['RS256'],
    timeout: 2_000,
  });
  t.same(okta!.claims.defaultPermissions, []);
});

t.test(
  'the single-provider keys stay a provider of their own, named after the issuer or the key set',
  async (t) => {
    const single = jwtProviders(parse('{ jwks_url: "https://idp.example.com/jwks", audience: gw }').auth.jwt);
    t.match(single, [{ name: 'idp.example.com', at: 'auth.jwt', issuer: undefined, required: true }]);
    const named = jwtProviders(
      parse('{ jwks_url: "https://keys.example.com/jwks", issuer: "https://login.example.com" }').auth.jwt,
    );
    t.equal(named[0]!.name, 'login.example.com');
    t.same(jwtProviders(parse('{ hs256_secret: "c2VjcmV0" }').auth.jwt), [], 'HS256 alone is no provider');
  },
);

t.test('defaults: clock_tolerance 60s, the permissions claim, no map', async (t) => {
  const { jwt } = parse('{}').auth;
  t.equal(jwt.clock_tolerance, 60_000);
  t.equal(jwt.permissions_claim, 'permissions');
  t.equal(jwt.permission_map, undefined);
  t.same(jwt.issuers, []);
});

t.test('what the configuration refuses, by key path', async (t) => {
  const cases: Array<[string, RegExp]> = [
    [
      '{ issuers: [{ issuer: "https://a", jwks_url: "https://a/k", discovery: true }] }',
      /auth\.jwt\.issuers\[0\]\.discovery: give jwks_url or discovery: true, not both/,
    ],
    [
      '{ issuers: [{ issuer: "https://a", discovery: false }] }',
      /auth\.jwt\.issuers\[0\]: needs jwks_url or discovery: true/,
    ],
    [
      '{ issuers: [{ issuer: "corp-idp" }] }',
      /auth\.jwt\.issuers\[0\]\.issuer: must be an http:\/\/ or https:\/\/ URL to be discovered/,
    ],
    [
      '{ issuers: [{ issuer: "https://kc/realms/a" }, { issuer: "https://kc/realms/b" }] }',
      /auth\.jwt\.issuers\[1\]\.name: "kc" names auth\.jwt\.issuers\[0\] too .*give each provider a name/,
    ],
    [
      '{ issuers: [{ name: a, issuer: "https://kc" }, { name: b, issuer: "https://kc" }] }',
      /auth\.jwt\.issuers\[1\]\.issuer: is the issuer of auth\.jwt\.issuers\[0\] too/,
    ],
    [
      '{ jwks_url: "https://kc/k", issuer: "https://kc", issuers: [{ name: b, issuer: "https://kc" }] }',
      /auth\.jwt\.issuers\[0\]\.issuer: is the issuer of auth\.jwt too/,
    ],
    [
      '{ issuers: [{ name: "a b", issuer: "https://kc" }] }',
      /auth\.jwt\.issuers\[0\]\.name: must be 1 to 64 letters/,
    ],
    ['{ issuers: [{ issuer: "https://kc", extra: 1 }] }', /auth\.jwt\.issuers\[0\]\.extra: unknown key/],
    ['{ issuers: [{ audience: gw }] }', /auth\.jwt\.issuers\[0\]\.issuer/],
    [
      '{ jwks_url: "https://user:pw@idp/jwks" }',
      /auth\.jwt\.jwks_url: must not carry credentials or a fragment/,
    ],
    [
      '{ jwks_url: "https://idp/jwks#keys" }',
      /auth\.jwt\.jwks_url: must not carry credentials or a fragment/,
    ],
    [
      '{ issuers: [{ issuer: "https://kc", jwks_url: "https://idp/jwks#" }] }',
      /auth\.jwt\.issuers\[0\]\.jwks_url: must not carry/,
    ],
    ['{ permissions_claim: ".roles" }', /auth\.jwt\.permissions_claim: must be a claim name, a dotted path/],
    ['{ permissions_claim: "realm_access..roles" }', /auth\.jwt\.permissions_claim/],
    ['{ permissions_claim: [] }', /auth\.jwt\.permissions_claim/],
    ['{ permission_map: { reader: [reads] } }', /auth\.jwt\.permission_map\.reader\[0\]: must be one of/],
    [
      '{ issuers: [{ issuer: "https://kc", clock_tolerance: soon }] }',
      /auth\.jwt\.issuers\[0\]\.clock_tolerance: invalid duration/,
    ],
  ];
  for (const [jwt, expected] of cases) t.match(problems(jwt), expected, jwt);
  t.equal(problems('{ jwks_url: "https://idp/jwks?tenant=corp" }'), '', 'a query is allowed');
  t.equal(problems('{ permissions_claim: [ "https://example.com/claims", roles ] }'), '');
  t.equal(problems('{ permissions_claim: resource_access.gateway.roles }'), '');
});

t.test('check-config warns, exit 0, when an asymmetric provider has no audience', async (t) => {
  const dir = t.testdir({
    'g.yaml': `auth: { jwt: { jwks_url: "https://idp.example.com/jwks", issuers: [{ name: corp, issuer: "https://corp.example.com" }, { issuer: "https://b.example.com", audience: gw }] } }\n${BACKENDS}`,
    'hs.yaml': `auth: { jwt: { hs256_secret: "c2VjcmV0" } }\n${BACKENDS}`,
  });
  const check = (file: string) =>
    spawnSync(...node([path.join(ROOT, 'dist', 'cli.js'), 'check-config', path.join(dir, file)]), {
      encoding: 'utf8',
      env: { PATH: process.env.PATH },
    });
  const r = check('g.yaml');
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, 'configuration is valid');
  const warnings = r.stderr.trim().split('\n');
  t.equal(warnings.length, 2);
  t.match(
    warnings[0],
    /g\.yaml: warning: auth\.jwt\.audience: not set: tokens this identity provider issued for any other service are accepted too/,
  );
  t.match(warnings[1], /warning: auth\.jwt\.issuers\[0\]\.audience: not set/);
  const hs = check('hs.yaml');
  t.equal(hs.stderr, '', 'HS256 alone: nothing to warn about');
  t.same(jwtWarnings(parse('{ jwks_url: "https://i/k", audience: [a, b] }').auth.jwt), []);
});
