import { spawnSync } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { ROOT } from '../helpers/gateway.js';

const CLI = path.join(ROOT, 'dist', 'cli.js');
const gateway = (...args: string[]) =>
  spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { PATH: process.env.PATH } });

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
