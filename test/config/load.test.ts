import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ConfigError, loadConfigFile, parseConfig } from '../../src/config/load.js';
import { parseDuration, parseSize } from '../../src/config/units.js';

const BACKENDS = `backends:
  collectors: { type: local, path: c }
  sso_providers: { type: local, path: s.json }
  asset_group_tags: { type: local, path: a.json }
`;

function problems(text: string, options = {}): string[] {
  try {
    parseConfig(text, '/base', options);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

t.test('defaults fill every key and paths resolve against the file folder', async (t) => {
  const c = parseConfig(BACKENDS, '/base');
  t.match(c, {
    server: {
      host: '127.0.0.1',
      port: 8080,
      shutdown_grace: 25_000,
      workers: 1,
      trust_proxy: false,
      max_body_size: 10 * 1024 * 1024,
    },
    admin: { host: '127.0.0.1', port: 9090 },
    auth: {
      signature: { scheme: 'bhesignature', max_clock_skew: 3_600_000, explain_mismatch: true, tokens: [] },
      jwt: {
        clock_tolerance: 60_000,
        permissions_claim: 'permissions',
        default_permissions: [],
        issuers: [],
      },
    },
    prefer: { default_wait: 30, max_wait: 300, allow_bypass: false },
  });
  t.match(c.backends.collectors, { type: 'local', path: '/base/c' });
  t.ok(Object.isFrozen(c) && Object.isFrozen(c.server), 'frozen');
});

t.test('durations and sizes', async (t) => {
  t.equal(parseDuration('500ms'), 500);
  t.equal(parseDuration('30s'), 30_000);
  t.equal(parseDuration('10m'), 600_000);
  t.equal(parseDuration('1h'), 3_600_000);
  t.equal(parseDuration('12'), 12_000);
  t.equal(parseDuration(1.5), 1500);
  t.equal(parseDuration('1d'), undefined);
  t.equal(parseDuration(-1), undefined);
  t.equal(parseSize('10MiB'), 10 * 1024 * 1024);
  t.equal(parseSize('64kB'), 64_000);
  t.equal(parseSize(4096), 4096);
  t.equal(parseSize('1.5MiB'), undefined);
  const c = parseConfig(`server: { shutdown_grace: 500ms, max_body_size: 1KiB }\n${BACKENDS}`, '/');
  t.equal(c.server.shutdown_grace, 500);
  t.equal(c.server.max_body_size, 1024);
});

t.test('every problem names its key path', async (t) => {
  const found = problems(`server: { port: 70000, bogus: 1, shutdown_grace: soon }
prefer: { default_wait: 500, max_wait: 100 }
auth:
  signature:
    tokens:
      - { id: not-a-uuid, key: "", subject: s, permissions: [root] }
backends: { collectors: { type: s3, path: c } }
`);
  const text = found.join('\n');
  t.match(text, /server\.port: /);
  t.match(text, /server\.bogus: unknown key/);
  t.match(text, /server\.shutdown_grace: invalid duration/);
  t.match(text, /prefer\.default_wait: default_wait must not exceed max_wait/);
  t.match(text, /auth\.signature\.tokens\[0\]\.id: must be a UUID/);
  t.match(text, /auth\.signature\.tokens\[0\]\.key: /);
  t.match(text, /auth\.signature\.tokens\[0\]\.permissions\[0\]: must be one of/);
  t.match(text, /backends\.collectors\.type: /);
  t.match(text, /backends\.sso_providers: /);
});

t.test('wrong types are refused, not coerced', async (t) => {
  t.match(problems(`server: { port: "8080" }\n${BACKENDS}`).join(), /server\.port/);
  t.match(problems(`prefer: { allow_bypass: "yes" }\n${BACKENDS}`).join(), /prefer\.allow_bypass/);
  t.match(problems(`prefer: { max_wait: 2147484 }\n${BACKENDS}`).join(), /prefer\.max_wait/);
  t.match(
    problems(`auth: { jwt: { hs256_secret: "not base64!" } }\n${BACKENDS}`).join(),
    /auth\.jwt\.hs256_secret/,
  );
});

t.test('YAML errors and duplicate keys are reported', async (t) => {
  t.match(problems('server: [unclosed').join(), /YAML/);
  t.match(problems(`server: { port: 1 }\nserver: { port: 2 }\n${BACKENDS}`).join(), /YAML/);
});

t.test('workers > 1 is refused while SSO providers use the local file', async (t) => {
  t.match(problems(`server: { workers: 2 }\n${BACKENDS}`).join(), /server\.workers: must be 1/);
  t.match(problems(`server: { workers: auto }\n${BACKENDS}`).join(), /server\.workers/);
});

t.test('env and file references are parsed as the key type', async (t) => {
  const dir = t.testdir({ 'secret.txt': 'c2VjcmV0\n' });
  const c = parseConfig(
    `server: { port: "\${env:GW_PORT}", trust_proxy: "\${env:GW_TRUST}" }
auth: { jwt: { hs256_secret: "\${file:secret.txt}" } }
${BACKENDS}`,
    dir,
    { env: { GW_PORT: '8443', GW_TRUST: 'true' } },
  );
  t.equal(c.server.port, 8443);
  t.equal(c.server.trust_proxy, true);
  t.equal(c.auth.jwt.hs256_secret, 'c2VjcmV0', 'trailing newline of the file dropped');
});

t.test(
  'reference problems: unset variable, unreadable file, bad form, wrong type after resolution',
  async (t) => {
    const text = problems(
      `server: { port: "\${env:NOPE_NOT_SET}", host: "\${file:/no/such/file}" }
admin: { host: "\${env:bad-name}" }
${BACKENDS}`,
      { env: {} },
    ).join('\n');
    t.match(text, /server\.port: environment variable NOPE_NOT_SET is not set/);
    t.match(text, /server\.host: file \/no\/such\/file cannot be read/);
    t.match(text, /admin\.host: .*not a valid environment variable name/);
    t.match(
      problems(`server: { port: "\${env:P}" }\n${BACKENDS}`, { env: { P: 'eighty' } }).join(),
      /server\.port/,
    );
  },
);

t.test('without resolution, references are checked for form only', async (t) => {
  t.same(problems(`server: { port: "\${env:UNSET_VAR}" }\n${BACKENDS}`, { resolve: false }), []);
  t.match(
    problems(`server: { port: "\${env:1bad}" }\n${BACKENDS}`, { resolve: false }).join(),
    /server\.port/,
  );
});

t.test('loadConfigFile names an unreadable file', async (t) => {
  const dir = t.testdir({ 'g.yaml': BACKENDS });
  t.match(loadConfigFile(path.join(dir, 'g.yaml')).backends.collectors, { path: path.join(dir, 'c') });
  t.throws(() => loadConfigFile(path.join(dir, 'missing.yaml')), /cannot be read \(ENOENT\)/);
  writeFileSync(path.join(dir, 'empty.yaml'), '');
  t.throws(() => loadConfigFile(path.join(dir, 'empty.yaml')), /backends/);
});

t.test('the embedded default configuration is valid', async (t) => {
  const c = loadConfigFile(path.resolve('config/gateway.yaml'));
  t.equal(c.server.port, 8080);
  t.ok(c.auth.signature.tokens.length > 0);
});

t.test('a value that came from a reference is never echoed in a problem', async (t) => {
  const text = problems(
    `auth: { signature: { max_clock_skew: "\${env:SKEW}" } }\nserver: { max_body_size: "\${env:SIZE}" }\n${BACKENDS}`,
    { env: { SKEW: 'hunter2-secret', SIZE: 'another-secret' } },
  ).join('\n');
  t.match(text, /auth\.signature\.max_clock_skew: invalid duration \(the value of \$\{env:SKEW\}\)/);
  t.match(text, /server\.max_body_size: invalid size \(the value of \$\{env:SIZE\}\)/);
  t.notMatch(text, /hunter2|another-secret/);
});

t.test('a reference where a list or a map belongs is named as such', async (t) => {
  const text = problems(`auth: { signature: { tokens: "\${env:T}" } }\n${BACKENDS}`, {
    env: { T: 'x' },
  }).join();
  t.match(text, /auth\.signature\.tokens: .*reference, which may stand only for a scalar/);
  t.notMatch(text, /ConfigReference/);
});

t.test('configurations that would break the gateway are refused', async (t) => {
  const id = '5f0c3b8e-1d2a-4c7e-9b1f-0a1b2c3d4e5f';
  const tokens = `auth: { signature: { tokens: [{ id: ${id}, key: a, subject: a }, { id: ${id.toUpperCase()}, key: b, subject: b }] } }`;
  t.match(
    problems(`${tokens}\n${BACKENDS}`).join(),
    /auth\.signature\.tokens\[1\]\.id: is the id of tokens\[0\] too/,
  );
  t.match(
    problems(`auth: { signature: { scheme: bearer } }\n${BACKENDS}`).join(),
    /auth\.signature\.scheme: must not be "bearer"/,
  );
  for (const key of ['headers_timeout', 'body_idle_timeout', 'keep_alive_timeout']) {
    t.match(
      problems(`server: { ${key}: 0 }\n${BACKENDS}`).join(),
      new RegExp(`server\\.${key}: duration 0 is out of range: must be from 1ms to 24h`),
      key,
    );
  }
  t.match(
    problems(`server: { port: 9000 }\nadmin: { port: 9000 }\n${BACKENDS}`).join(),
    /admin\.port: must differ/,
  );
  t.same(
    problems(`server: { port: 0 }\nadmin: { port: 0 }\n${BACKENDS}`),
    [],
    'two "any free port" are fine',
  );
});

t.test('merge keys and aliases resolve', async (t) => {
  const text = `server: &s { host: 127.0.0.1 }
admin: { <<: *s, port: 9191 }
${BACKENDS}`;
  const c = parseConfig(text, '/');
  t.equal(c.admin.host, '127.0.0.1');
  t.equal(c.admin.port, 9191);
  t.match(
    problems(`server: { __proto__: { port: 1 } }\n${BACKENDS}`).join(),
    /server\.__proto__: unknown key/,
  );
});

t.test('YAML problems name their line and column', async (t) => {
  t.match(
    problems(`server: { port: 1 }\nserver: { port: 2 }\n${BACKENDS}`).join(),
    /YAML: Map keys must be unique at line 2, column 1/,
  );
  t.match(problems('server: { host: "unclosed }').join(), /at line 1, column \d+/);
});
