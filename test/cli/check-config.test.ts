import { spawnSync } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { ROOT } from '../helpers/gateway.js';

const CLI = path.join(ROOT, 'dist', 'cli.js');
const gateway = (...args: string[]) =>
  spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { PATH: process.env.PATH } });

// Every case starts the real command, a process of its own: some seconds each on a loaded machine.
t.setTimeout(600_000);

const BACKENDS = `backends:
  collectors: { type: local, path: c }
  sso_providers: { type: local, path: s.json }
  asset_group_tags: { type: local, path: a.json }
`;

t.test('check-config accepts the embedded default', async (t) => {
  const r = gateway('check-config', path.join(ROOT, 'config', 'gateway.yaml'));
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /configuration is valid/);
});

t.test('check-config exits 1 with every reason', async (t) => {
  const dir = t.testdir({ 'bad.yaml': `server: { port: x, extra: 1 }\n${BACKENDS}` });
  const r = gateway('check-config', path.join(dir, 'bad.yaml'));
  t.equal(r.status, 1);
  t.match(r.stderr, /server\.port/);
  t.match(r.stderr, /server\.extra: unknown key/);
});

t.test('references are checked for form, and resolved only with --resolve', async (t) => {
  const dir = t.testdir({
    'refs.yaml': `auth: { jwt: { hs256_secret: "\${env:GATEWAY_TEST_UNSET}" } }\n${BACKENDS}`,
  });
  const file = path.join(dir, 'refs.yaml');
  t.equal(gateway('check-config', file).status, 0);
  const resolved = gateway('check-config', file, '--resolve');
  t.equal(resolved.status, 1);
  t.match(resolved.stderr, /auth\.jwt\.hs256_secret: environment variable GATEWAY_TEST_UNSET is not set/);
});

t.test('usage errors exit 2', async (t) => {
  t.equal(gateway('check-config').status, 2);
  t.equal(gateway().status, 2);
  t.equal(gateway('--bogus').status, 2);
  const help = gateway('--help');
  t.equal(help.status, 0);
  t.match(help.stdout, /check-config/);
});

t.test('start fails with exit 1 on an invalid configuration or unreadable data', async (t) => {
  const dir = t.testdir({ 'g.yaml': `server: { port: 0 }\nadmin: { port: 0 }\n${BACKENDS}` });
  const r = gateway('--config', path.join(dir, 'g.yaml'));
  t.equal(r.status, 1);
  t.match(r.stderr, /gateway: /);
});

t.test('a URL that does not parse is named by its key path, never a stack', async (t) => {
  for (const url of ['http://x:99999/', 'http://[::1', 'http://a b/']) {
    const dir = t.testdir({
      'u.yaml': `backends:
  collectors: { type: upstream, url: "${url}", auth: { type: bearer, token: t } }
  sso_providers: { type: local, path: s.json }
  asset_group_tags: { type: local, path: a.json }
passthrough: { url: "${url}", auth: { type: client } }
`,
    });
    const r = gateway('check-config', path.join(dir, 'u.yaml'));
    t.equal(r.status, 1, url);
    t.match(r.stderr, /backends\.collectors\.url: must be an http:\/\/ or https:\/\/ URL/);
    t.match(r.stderr, /passthrough\.url: must be an http:\/\/ or https:\/\/ URL/);
    t.notMatch(r.stderr, /TypeError|\n\s+at /, 'no stack');
  }
});

t.test('a jwks_url may carry a query, never credentials or a fragment', async (t) => {
  const check = (url: string) => {
    const dir = t.testdir({ 'j.yaml': `auth: { jwt: { jwks_url: "${url}" } }\n${BACKENDS}` });
    return gateway('check-config', path.join(dir, 'j.yaml'));
  };
  t.equal(check('https://idp.example.com/keys?tenant=a&v=2').status, 0);
  for (const url of ['https://user:pw@idp.example.com/keys', 'https://idp.example.com/keys#main']) {
    const r = check(url);
    t.equal(r.status, 1, url);
    t.match(r.stderr, /auth\.jwt\.jwks_url: must not carry credentials or a fragment/);
    t.notMatch(r.stderr, /pw@/, 'the credentials are not echoed');
  }
});

t.test('a duration out of range says the range it must be in', async (t) => {
  const dir = t.testdir({
    'd.yaml': `server: { headers_timeout: 0, shutdown_grace: 48h }
auth: { jwt: { jwks_cooldown: 5ms }, signature: { max_utc_offset: 25h } }
${BACKENDS}`,
  });
  const r = gateway('check-config', path.join(dir, 'd.yaml'));
  t.equal(r.status, 1);
  t.match(r.stderr, /server\.headers_timeout: duration 0 is out of range: must be from 1ms to 24h/);
  t.match(r.stderr, /server\.shutdown_grace: duration "48h" is out of range: must be from 0s to 24h/);
  t.match(r.stderr, /auth\.jwt\.jwks_cooldown: duration "5ms" is out of range: must be from 10ms to 1h/);
  t.match(
    r.stderr,
    /auth\.signature\.max_utc_offset: duration "25h" is out of range: must be from 0s to 24h/,
  );
  t.notMatch(r.stderr, /e\.g\./, 'no example that contradicts the value');
  const bad = t.testdir({ 'b.yaml': `server: { shutdown_grace: soon }\n${BACKENDS}` });
  t.match(
    gateway('check-config', path.join(bad, 'b.yaml')).stderr,
    /server\.shutdown_grace: invalid duration "soon" \(write e\.g\. 500ms, 30s, 10m, 1h\)/,
  );
});

t.test('server.trusted_proxies: addresses, CIDRs or names; not with trust_proxy', async (t) => {
  const check = (server: string) => {
    const dir = t.testdir({ 'p.yaml': `server: ${server}\n${BACKENDS}` });
    return gateway('check-config', path.join(dir, 'p.yaml'));
  };
  t.equal(check('{ trusted_proxies: [10.0.0.0/8, "192.0.2.7", "::1", "fd00::/8", loopback] }').status, 0);
  const bad = check('{ trusted_proxies: [10.0.0.0/33, proxy.example.com] }');
  t.equal(bad.status, 1);
  t.match(bad.stderr, /server\.trusted_proxies\[0\]: must be an IP address, a CIDR/);
  t.match(bad.stderr, /server\.trusted_proxies\[1\]: must be an IP address, a CIDR/);
  const both = check('{ trust_proxy: true, trusted_proxies: [10.0.0.0/8] }');
  t.equal(both.status, 1);
  t.match(both.stderr, /server\.trust_proxy: must not be set with server\.trusted_proxies/);
});
