import { execFile } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { JWT_SECRET, ROOT, request, startGateway } from '../helpers/gateway.js';
import { node } from '../helpers/node-child.js';

const CLI = path.join(ROOT, 'dist', 'cli.js');
const gateway = (...args: string[]) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(...node([CLI, ...args]), { env: { PATH: process.env.PATH } }, (err, stdout, stderr) =>
      resolve({ status: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }),
    );
  });

// Each case starts the real command, a process of its own.
t.setTimeout(300_000);

const JWT = {
  hs256_secret: JWT_SECRET,
  issuer: 'https://issuer.example',
  audience: ['bh-gateway', 'other'],
  permissions_claim: 'realm_access.roles',
};
const BACKENDS = {
  collectors: { type: 'local', path: 'c' },
  sso_providers: { type: 'local', path: 's.json' },
  asset_group_tags: { type: 'local', path: 'a.json' },
};
const MEMBER = '/api/v2/asset-group-tags/1/members/101';

t.test('a minted token carries the configuration claims and the gateway accepts it', async (t) => {
  const dir = t.testdir({ 'g.yaml': stringify({ auth: { jwt: JWT }, backends: BACKENDS }) });
  const gw = await startGateway({ auth: { jwt: JWT } });
  t.teardown(() => gw.close());
  const [reader, none] = await Promise.all([
    gateway(
      'jwt',
      '--config',
      path.join(dir, 'g.yaml'),
      '--subject',
      'ci',
      '--permissions',
      'asset_group_tags:read',
    ),
    gateway('jwt', '--config', path.join(dir, 'g.yaml')),
  ]);
  t.equal(reader.status, 0, reader.stderr);
  const token = reader.stdout.trim();
  const claims = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString());
  t.match(claims, {
    sub: 'ci',
    iss: 'https://issuer.example',
    aud: ['bh-gateway', 'other'],
    realm_access: { roles: ['asset_group_tags:read'] },
  });
  t.equal(claims.exp - claims.iat, 3600, 'an hour by default');
  const ok = await request(gw, {
    method: 'GET',
    target: MEMBER,
    headers: { Authorization: `Bearer ${token}` },
  });
  t.equal(ok.status, 200);
  const refused = await request(gw, {
    method: 'GET',
    target: MEMBER,
    headers: { Authorization: `Bearer ${none.stdout.trim()}` },
  });
  t.equal(refused.status, 403, 'no permissions: authenticated, not authorized');
});

t.test('jwt refuses what cannot make a token', async (t) => {
  const dir = t.testdir({
    'nosecret.yaml': stringify({ backends: BACKENDS }),
    'bad.yaml': stringify({ server: { port: 'x' }, backends: BACKENDS }),
  });
  const [missing, noSecret, bad, expiry] = await Promise.all([
    gateway('jwt'),
    gateway('jwt', '--config', path.join(dir, 'nosecret.yaml')),
    gateway('jwt', '--config', path.join(dir, 'bad.yaml')),
    gateway('jwt', '--config', path.join(ROOT, 'config', 'gateway.yaml'), '--expires-in', '2d'),
  ]);
  t.equal(missing.status, 2);
  t.match(missing.stderr, /--config FILE is required/);
  t.equal(noSecret.status, 1);
  t.match(noSecret.stderr, /hs256_secret is not set/);
  t.equal(bad.status, 1);
  t.match(bad.stderr, /server\.port/);
  t.equal(expiry.status, 2);
  t.match(expiry.stderr, /--expires-in/);
  t.notMatch(noSecret.stderr + bad.stderr, JWT_SECRET, 'the secret is never printed');
});
