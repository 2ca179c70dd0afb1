/**
 * `routes` validation (contract §11): every malformed entry is refused with its key's path, at
 * start and by `check-config`; an entry that would match an operation is refused; the warnings of a
 * front door whose service judges users by the gateway's own token.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { ConfigError, parseConfig } from '../../src/config/load.js';
import { configWarnings } from '../../src/config/warnings.js';
import { ROOT } from '../helpers/gateway.js';
import { node } from '../helpers/node-child.js';

const UPSTREAM = '{ type: upstream, url: "http://svc:8080", auth: { type: client } }';
const BACKENDS = `backends:
  collectors: ${UPSTREAM}
  sso_providers: ${UPSTREAM}
  asset_group_tags: ${UPSTREAM}
# A trail of the gateway's own: without it §12 warns that the service records changes under the gateway's token.
audit: { store: { type: postgres, url: "postgres://db/gateway" } }
`;
const PASSTHROUGH = 'passthrough: { url: "http://svc:8080", auth: { type: client } }\n';

function problems(text: string): string[] {
  try {
    parseConfig(text, '/base');
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

t.test('defaults: auth required, passthrough.max_body 1 GiB', async (t) => {
  const c = parseConfig(`${BACKENDS}${PASSTHROUGH}routes:\n  - { name: x, path: /api/v2/x }\n`, '/base');
  t.same(c.routes, [{ name: 'x', path: '/api/v2/x', auth: 'required' }]);
  t.equal(c.passthrough?.max_body, 1024 ** 3);
  t.same(configWarnings(c), [], 'client auth and upstream backends: nothing to warn about');
});

t.test('every malformed entry is refused with its key path', async (t) => {
  const found = problems(`${BACKENDS}${PASSTHROUGH}routes:
  - { name: ok, path: /api/v2/ok }
  - { name: both, path: /a, prefix: /b/ }
  - { name: slash, prefix: /ui }
  - { name: auth, path: /c, auth: open }
  - { name: ok, path: /d }
  - { name: Bad Name, path: /e }
  - { name: neither }
  - { name: dots, prefix: /ui/../api/ }
  - { name: perm, path: /f, auth: none, permission: passthrough }
  - { name: method, path: /g, methods: [get] }
  - { name: deny-limit, path: /h, auth: deny, rate_limit: { limit: 1, window: 1s } }
  - { name: enc, path: /a%2Fb }
  - { name: extra, path: /i, header: x }
`);
  const expect = [
    'routes[1].prefix: must not be set with path',
    'routes[2].prefix: must end with "/"',
    'routes[3].auth: must be "required", "none" or "deny"',
    'routes[4].name: is the name of routes[0] too',
    'routes[5].name: must match [a-z0-9_-]{1,64}',
    'routes[6].path: is required (or prefix',
    'routes[7].prefix: must not hold a dot segment',
    'routes[8].permission: applies only with auth: required',
    'routes[9].methods[0]: must be an HTTP method',
    'routes[10].rate_limit: does not apply with auth: deny',
    'routes[11].path: must not hold an encoded "/"',
    'routes[12].header: unknown key',
  ];
  for (const e of expect)
    t.ok(
      found.some((p) => p.startsWith(e)),
      e,
    );
  t.equal(found.length, expect.length, found.join('\n'));
});

t.test('an entry that would match one of the three operations is refused', async (t) => {
  const refused = [
    '{ name: a, prefix: /api/v2/ }',
    '{ name: b, prefix: /api/v2/sso-providers/, methods: [PATCH, GET] }',
    '{ name: c, path: /api/v2/sso%2Dproviders/7, methods: [PATCH] }',
    '{ name: d, path: /api/v2/asset-group-tags/1/members/2 }',
    '{ name: e, prefix: /api/v2/collectors/sharphound/ }',
    '{ name: f, prefix: / , auth: none }',
  ];
  for (const entry of refused) {
    const found = problems(`${BACKENDS}${PASSTHROUGH}routes:\n  - ${entry}\n`);
    t.equal(found.length, 1, entry);
    t.match(found[0], /^routes\[0\]\.(path|prefix): would match .* which is always the gateway's own/, entry);
  }
  const allowed = [
    '{ name: a, prefix: /api/v2/sso-providers/, methods: [GET, DELETE] }',
    '{ name: b, path: /api/v2/sso-providers }',
    '{ name: c, prefix: /api/v2/asset-group-tags/1/members/2/ }',
    '{ name: d, path: /api/v2/collectors/sharphound/latest, methods: [GET] }',
  ];
  for (const entry of allowed)
    t.same(problems(`${BACKENDS}${PASSTHROUGH}routes:\n  - ${entry}\n`), [], entry);
});

t.test('routes need passthrough; route limits need redis with several workers', async (t) => {
  t.same(problems(`${BACKENDS}routes: []\n`), [
    'routes: needs passthrough (the routes lead to the service it names)',
  ]);
  const workers = problems(`${BACKENDS}${PASSTHROUGH}server: { workers: 2 }\n`);
  t.match(workers, [/^server\.workers: must be 1 while route rate limits \(login\)/]);
  t.same(
    problems(
      `${BACKENDS}${PASSTHROUGH}server: { workers: 2 }\nrate_limits: { store: { type: redis, url: "redis://r:6379" } }\n`,
    ),
    [],
  );
  t.same(
    problems(
      `${BACKENDS}${PASSTHROUGH}server: { workers: 2 }\nroutes: [{ name: login, path: /api/v2/login, methods: [POST], auth: none }]\n`,
    ),
    [],
    'without a route limit, nothing to share',
  );
});

t.test('warnings: the web application with the gateway’s token, and two stores of one thing', async (t) => {
  const signature = `passthrough: { url: "http://svc", auth: { type: signature, token_id: "0d9e8f7a-6b5c-4d3e-9f1a-2b3c4d5e6f70", token_key: k } }\n`;
  const warned = configWarnings(parseConfig(`${BACKENDS}${signature}`, '/base'));
  t.match(warned, [/^passthrough\.auth: type "signature" while the ui and login routes are in use/]);
  const restricted = configWarnings(
    parseConfig(
      `${BACKENDS}${signature}routes:\n  - { name: ui, prefix: /ui/, auth: deny }\n  - { name: login, path: /api/v2/login, auth: deny }\n`,
      '/base',
    ),
  );
  t.same(restricted, []);
  const local = configWarnings(
    parseConfig(
      `backends:\n  collectors: { type: local, path: c }\n  sso_providers: ${UPSTREAM}\n  asset_group_tags: { type: local, path: a.json }\n${PASSTHROUGH}`,
      '/base',
    ),
  );
  t.match(local, [
    /^audit: backends\.sso_providers is "upstream" and no audit\.store is set/,
    /^backends\.collectors: type "local" while passthrough is on/,
    /^backends\.asset_group_tags:/,
  ]);
});

t.test('check-config refuses a route over an operation, and warns about the web application', async (t) => {
  const dir = t.testdir({
    'bad.yaml': `${BACKENDS}${PASSTHROUGH}routes:\n  - { name: open, prefix: /api/v2/, auth: none }\n`,
    'warn.yaml': `${BACKENDS}passthrough: { url: "http://svc", auth: { type: bearer, token: t } }\n`,
  });
  const run = (file: string) =>
    new Promise<{ status: number; stderr: string }>((resolve) => {
      execFile(
        ...node([path.join(ROOT, 'dist', 'cli.js'), 'check-config', path.join(dir, file)]),
        (err, _o, stderr) => resolve({ status: err ? Number(err.code) : 0, stderr }),
      );
    });
  const [bad, warn] = await Promise.all([run('bad.yaml'), run('warn.yaml')]);
  t.equal(bad.status, 1);
  t.match(bad.stderr, /routes\[0\]\.prefix: would match GET\/HEAD \/api\/v2\/collectors/);
  t.equal(warn.status, 0);
  t.match(warn.stderr, /warning: passthrough\.auth: type "bearer" while the ui and login routes are in use/);
});
