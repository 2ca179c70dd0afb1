import { execFile } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { ROOT } from '../helpers/gateway.js';
import { node } from '../helpers/node-child.js';

const CLI = path.join(ROOT, 'dist', 'cli.js');
/** Runs the real command; resolves with its exit status and output (several run at once). */
const gateway = (...args: string[]) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(...node([CLI, ...args]), { env: { PATH: process.env.PATH } }, (err, stdout, stderr) =>
      resolve({ status: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }),
    );
  });

// Every case starts the real command, a process of its own: some seconds each on a loaded machine.
t.setTimeout(600_000);

const BACKENDS = `backends:
  collectors: { type: local, path: c }
  sso_providers: { type: local, path: s.json }
  asset_group_tags: { type: local, path: a.json }
`;

t.test('check-config accepts the embedded default', async (t) => {
  const r = await gateway('check-config', path.join(ROOT, 'config', 'gateway.yaml'));
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /configuration is valid/);
});

t.test('check-config exits 1 with every reason', async (t) => {
  const dir = t.testdir({ 'bad.yaml': `server: { port: x, extra: 1 }\n${BACKENDS}` });
  const r = await gateway('check-config', path.join(dir, 'bad.yaml'));
  t.equal(r.status, 1);
  t.match(r.stderr, /server\.port/);
  t.match(r.stderr, /server\.extra: unknown key/);
});

t.test('references are checked for form, and resolved only with --resolve', async (t) => {
  const dir = t.testdir({
    'refs.yaml': `auth: { jwt: { hs256_secret: "\${env:GATEWAY_TEST_UNSET}" } }\n${BACKENDS}`,
  });
  const file = path.join(dir, 'refs.yaml');
  const [plain, resolved] = await Promise.all([
    gateway('check-config', file),
    gateway('check-config', file, '--resolve'),
  ]);
  t.equal(plain.status, 0);
  t.equal(resolved.status, 1);
  t.match(resolved.stderr, /auth\.jwt\.hs256_secret: environment variable GATEWAY_TEST_UNSET is not set/);
});

t.test('usage errors exit 2', async (t) => {
  const [noFile, none, bogus, help] = await Promise.all([
    gateway('check-config'),
    gateway(),
    gateway('--bogus'),
    gateway('--help'),
  ]);
  t.equal(noFile.status, 2);
  t.equal(none.status, 2);
  t.equal(bogus.status, 2);
  t.equal(help.status, 0);
  t.match(help.stdout, /check-config/);
});

t.test('start fails with exit 1 on an invalid configuration or unreadable data', async (t) => {
  const dir = t.testdir({ 'g.yaml': `server: { port: 0 }\nadmin: { port: 0 }\n${BACKENDS}` });
  const r = await gateway('--config', path.join(dir, 'g.yaml'));
  t.equal(r.status, 1);
  t.match(r.stderr, /gateway: /);
});

t.test('a URL that does not parse is named by its key path, never a stack', async (t) => {
  const urls = ['http://x:99999/', 'http://[::1', 'http://a b/'];
  const config = (url: string) => `backends:
  collectors: { type: upstream, url: "${url}", auth: { type: bearer, token: t } }
  sso_providers: { type: local, path: s.json }
  asset_group_tags: { type: local, path: a.json }
passthrough: { url: "${url}", auth: { type: client } }
`;
  const dir = t.testdir(Object.fromEntries(urls.map((url, i) => [`u${i}.yaml`, config(url)])));
  const runs = await Promise.all(urls.map((_, i) => gateway('check-config', path.join(dir, `u${i}.yaml`))));
  for (const [i, url] of urls.entries()) {
    const r = runs[i]!;
    t.equal(r.status, 1, url);
    t.match(r.stderr, /backends\.collectors\.url: must be an http:\/\/ or https:\/\/ URL/);
    t.match(r.stderr, /passthrough\.url: must be an http:\/\/ or https:\/\/ URL/);
    t.notMatch(r.stderr, /TypeError|\n\s+at /, 'no stack');
  }
});

t.test('a jwks_url may carry a query, never credentials or a fragment', async (t) => {
  const urls = [
    'https://idp.example.com/keys?tenant=a&v=2',
    'https://user:pw@idp.example.com/keys',
    'https://idp.example.com/keys#main',
  ];
  const config = (url: string) => `auth: { jwt: { jwks_url: "${url}" } }\n${BACKENDS}`;
  const dir = t.testdir(Object.fromEntries(urls.map((url, i) => [`j${i}.yaml`, config(url)])));
  const [query, ...refused] = await Promise.all(
    urls.map((_, i) => gateway('check-config', path.join(dir, `j${i}.yaml`))),
  );
  t.equal(query!.status, 0);
  for (const [i, url] of urls.slice(1).entries()) {
    const r = refused[i]!;
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
  const r = await gateway('check-config', path.join(dir, 'd.yaml'));
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
    (await gateway('check-config', path.join(bad, 'b.yaml'))).stderr,
    /server\.shutdown_grace: invalid duration "soon" \(write e\.g\. 500ms, 30s, 10m, 1h\)/,
  );
});

t.test('server.trusted_proxies: addresses, CIDRs or names; not with trust_proxy', async (t) => {
  const servers = [
    '{ trusted_proxies: [10.0.0.0/8, "192.0.2.7", "::1", "fd00::/8", loopback] }',
    '{ trusted_proxies: [10.0.0.0/33, proxy.example.com] }',
    '{ trust_proxy: true, trusted_proxies: [10.0.0.0/8] }',
  ];
  const dir = t.testdir(
    Object.fromEntries(servers.map((s, i) => [`p${i}.yaml`, `server: ${s}\n${BACKENDS}`])),
  );
  const [good, bad, both] = await Promise.all(
    servers.map((_, i) => gateway('check-config', path.join(dir, `p${i}.yaml`))),
  );
  t.equal(good!.status, 0);
  t.equal(bad!.status, 1);
  t.match(bad!.stderr, /server\.trusted_proxies\[0\]: must be an IP address, a CIDR/);
  t.match(bad!.stderr, /server\.trusted_proxies\[1\]: must be an IP address, a CIDR/);
  t.equal(both!.status, 1);
  t.match(both!.stderr, /server\.trust_proxy: must not be set with server\.trusted_proxies/);
});

t.test('several targets: each bad key is named by its path, by check-config and at start', async (t) => {
  const dir = t.testdir({
    'targets.yaml': `backends:
  collectors: { type: upstream, targets: [], auth: { type: bearer, token: t } }
  sso_providers:
    type: upstream
    url: http://a:1
    targets: [http://a:1]
    auth: { type: bearer, token: t }
  asset_group_tags:
    type: upstream
    targets: [http://a:1, https://b:2, http://a:1/]
    auth: { type: bearer, token: t }
    outlier: { max_ejected: 150% }
    retries: { attempts: 6 }
    health_check: { path: health }
passthrough: { targets: [http://a:1, http://user:pw@b:2], auth: { type: client } }
`,
  });
  const file = path.join(dir, 'targets.yaml');
  const [check, start] = await Promise.all([gateway('check-config', file), gateway('--config', file)]);
  for (const r of [check, start]) {
    t.equal(r.status, 1);
    t.match(r.stderr, /backends\.collectors\.targets: must list at least one target URL/);
    t.match(r.stderr, /backends\.sso_providers\.targets: must not be set with url/);
    t.match(r.stderr, /backends\.asset_group_tags\.targets\[1\]: must use the same scheme as targets\[0\]/);
    t.match(r.stderr, /backends\.asset_group_tags\.targets\[2\]: is targets\[0\] again/);
    t.match(
      r.stderr,
      /backends\.asset_group_tags\.outlier\.max_ejected: must be a percentage from 0% to 100%/,
    );
    t.match(r.stderr, /backends\.asset_group_tags\.retries\.attempts/);
    t.match(r.stderr, /backends\.asset_group_tags\.health_check\.path: must be a path starting with \//);
    t.match(r.stderr, /passthrough\.targets\[1\]: must not carry a query, a fragment or credentials/);
    t.notMatch(r.stderr, /pw/, 'the password is not echoed');
  }
});
