import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ROOT } from '../helpers/gateway.js';
import { Pki } from '../helpers/tls.js';
import { node } from '../helpers/node-child.js';

const CLI = path.join(ROOT, 'dist', 'cli.js');
const gateway = (...args: string[]) =>
  spawnSync(...node([CLI, ...args]), { encoding: 'utf8', env: { PATH: process.env.PATH } });

t.setTimeout(180_000);

const pki = new Pki();
t.teardown(() => pki.close());
const ca = pki.ca('check-ca');
ca.issue('good', { cn: 'good', san: ['DNS:localhost'] });
const other = ca.issue('other', { cn: 'other', san: ['DNS:localhost'] });
const expired = ca.issue('old', { cn: 'old', san: ['DNS:localhost'], days: -2 });

const BACKENDS = `backends:
  collectors: { type: local, path: ${path.join(ROOT, 'config', 'collectors')} }
  sso_providers: { type: local, path: ${path.join(ROOT, 'config', 'sso-providers.json')} }
  asset_group_tags: { type: local, path: ${path.join(ROOT, 'config', 'asset-group-tags.json')} }
`;
const write = (name: string, text: string) => {
  const file = path.join(pki.dir, name);
  writeFileSync(file, `${text}\n${BACKENDS}`);
  return file;
};
const keyLine = (file: string) => readFileSync(file, 'utf8').split('\n')[1] as string;

t.test('check-config accepts good TLS files, relative paths taken from the file', async (t) => {
  const file = write('good.yaml', `server: { tls: { cert: good.pem, key: good.key } }`);
  const r = gateway('check-config', file);
  t.equal(r.status, 0, r.stderr);
});

t.test('a missing or unreadable TLS file is named by its key path, with or without --resolve', async (t) => {
  const file = write(
    'missing.yaml',
    `server: { tls: { cert: nope.pem, key: good.key, client_auth: optional, client_ca: nope-ca.pem } }
admin: { tls: { cert: good.pem, key: ${pki.dir} } }`,
  );
  for (const args of [[file], [file, '--resolve']]) {
    const r = gateway('check-config', ...args);
    t.equal(r.status, 1);
    t.match(r.stderr, /server\.tls\.cert: file .*nope\.pem cannot be read \(ENOENT\)/);
    t.match(r.stderr, /server\.tls\.client_ca: file .*nope-ca\.pem cannot be read \(ENOENT\)/);
    t.match(r.stderr, /admin\.tls\.key: file .* cannot be read \(EISDIR\)/);
  }
});

t.test(
  'a key that is not the certificate, or an expired certificate, is named; no key is printed',
  async (t) => {
    const file = write(
      'mismatch.yaml',
      `server: { tls: { cert: good.pem, key: other.key } }
admin: { tls: { cert: old.pem, key: old.key } }
passthrough: { url: "https://127.0.0.1:1", auth: { type: bearer, token: x }, tls: { cert: good.pem, key: other.key } }`,
    );
    const r = gateway('check-config', file);
    t.equal(r.status, 1);
    t.match(r.stderr, /server\.tls\.key: does not match server\.tls\.cert/);
    t.match(r.stderr, /admin\.tls\.cert: the certificate expired/);
    t.match(r.stderr, /passthrough\.tls\.key: does not match passthrough\.tls\.cert/);
    for (const key of [other.key, expired.key]) t.notOk((r.stderr + r.stdout).includes(keyLine(key)));
  },
);

t.test(
  'the schema: client_auth needs client_ca, match names one field, cert and key go together',
  async (t) => {
    const file = write(
      'schema.yaml',
      `server: { tls: { cert: good.pem, key: good.key, client_auth: require } }
admin: { tls: { cert: good.pem, key: good.key, client_auth: optional, min_version: TLSv1.1 } }
auth:
  client_certificates:
    - { match: { uri: "spiffe://a", dns: b }, subject: x }
    - { match: { cn: c }, subject: y, permissions: [nope] }
passthrough: { url: "https://127.0.0.1:1", auth: { type: bearer, token: x }, tls: { cert: good.pem } }`,
    );
    const r = gateway('check-config', file);
    t.equal(r.status, 1);
    t.match(r.stderr, /server\.tls\.client_ca: is required when client_auth is "optional" or "require"/);
    t.match(r.stderr, /admin\.tls\.min_version: must be "TLSv1\.2" or "TLSv1\.3"/);
    t.match(r.stderr, /admin\.tls\.client_auth: unknown key/);
    t.match(r.stderr, /auth\.client_certificates\[0\]\.match: must name exactly one of uri, dns, email, cn/);
    t.match(r.stderr, /auth\.client_certificates\[1\]\.permissions\[0\]/);
    t.match(r.stderr, /passthrough\.tls\.key: cert and key go together/);
  },
);

t.test('client certificates without a listener asking for them: a warning', async (t) => {
  const file = write(
    'warn.yaml',
    `auth: { client_certificates: [ { match: { cn: c }, subject: y } ] }
passthrough: { url: "http://127.0.0.1:1", auth: { type: bearer, token: x }, tls: { servername: svc } }`,
  );
  const r = gateway('check-config', file);
  t.equal(r.status, 0);
  t.match(r.stderr, /warning: auth\.client_certificates: no listener asks for client certificates/);
  t.match(r.stderr, /warning: passthrough\.tls: has no effect on an http:\/\/ url/);
});

t.test('the gateway does not start on an expired certificate (exit 1, naming the key)', async (t) => {
  const file = write(
    'start.yaml',
    `server: { port: 0, tls: { cert: old.pem, key: old.key } }\nadmin: { port: 0 }`,
  );
  const r = gateway('--config', file);
  t.equal(r.status, 1);
  t.match(r.stderr, /server\.tls\.cert: the certificate expired/);
});
