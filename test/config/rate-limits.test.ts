/**
 * `rate_limits` validation: every refusal names the key, and `check-config` refuses the memory
 * store with several workers (each would admit the whole limit).
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { ConfigError, parseConfig } from '../../src/config/load.js';
import { ROOT } from '../helpers/gateway.js';
import { node } from '../helpers/node-child.js';

const BACKENDS = `backends:
  collectors: { type: local, path: c }
  sso_providers: { type: upstream, url: "http://127.0.0.1:1", auth: { type: client } }
  asset_group_tags: { type: local, path: a.json }
`;

function problems(text: string): string[] {
  try {
    parseConfig(text, '/base');
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

t.test('defaults: the memory store of 100000 keys, no policy', async (t) => {
  const c = parseConfig(`${BACKENDS}rate_limits: {}\n`, '/base');
  t.same(c.rate_limits, { store: { type: 'memory', max_keys: 100_000 }, policies: [] });
  t.equal(parseConfig(BACKENDS, '/base').rate_limits, undefined, 'off when absent');
  const redis = parseConfig(
    `${BACKENDS}rate_limits: { store: { type: redis, url: "redis://r:6379/0" } }\n`,
    '/base',
  );
  t.same(redis.rate_limits?.store, {
    type: 'redis',
    url: 'redis://r:6379/0',
    timeout: 50,
    on_error: 'allow',
    key_prefix: 'gateway:',
  });
});

t.test('every bad value is refused with its key', async (t) => {
  const found = problems(`${BACKENDS}rate_limits:
  store: { type: redis, url: "http://x", on_error: maybe }
  policies:
    - { name: Default, limit: 0, window: 1500ms }
    - { name: unauthenticated, limit: 10001, window: 25h }
    - { name: ok, limit: 1, window: 1s, operations: [Nope] }
  unauthenticated: { limit: 5, window: 0s }
`);
  const expect = [
    'rate_limits.store.url: must be a redis:// or rediss:// URL',
    'rate_limits.store.on_error: ',
    'rate_limits.policies[0].name: must match [a-z0-9_-]{1,64}',
    'rate_limits.policies[0].limit: ',
    'rate_limits.policies[0].window: must be whole seconds',
    'rate_limits.policies[1].name: "unauthenticated" is reserved',
    'rate_limits.policies[1].limit: ',
    'rate_limits.policies[1].window: duration "25h" is out of range',
    'rate_limits.policies[2].operations[0]: ',
    'rate_limits.unauthenticated.window: ',
  ];
  for (const start of expect)
    t.ok(
      found.some((p) => p.startsWith(start)),
      start,
    );
  t.match(problems(`${BACKENDS}rate_limits: { store: { type: file } }\n`), [
    /rate_limits\.store\.type: type must be "memory" or "redis"/,
  ]);
});

t.test('policy names are unique', async (t) => {
  t.same(
    problems(
      `${BACKENDS}rate_limits: { policies: [{ name: a, limit: 1, window: 1s }, { name: a, limit: 2, window: 2s }] }\n`,
    ),
    ['rate_limits.policies[1].name: is the name of policies[0] too'],
  );
});

t.test('check-config refuses the memory store with several workers', async (t) => {
  const dir = t.testdir({
    'memory.yaml': `server: { workers: 2 }\n${BACKENDS}rate_limits: { policies: [{ name: p, limit: 1, window: 1s }] }\n`,
    'redis.yaml': `server: { workers: 2 }\n${BACKENDS}rate_limits: { store: { type: redis, url: "redis://127.0.0.1:6379" } }\n`,
  });
  const check = (file: string) =>
    spawnSync(...node([path.join(ROOT, 'dist', 'cli.js'), 'check-config', path.join(dir, file)]), {
      encoding: 'utf8',
    });
  const memory = check('memory.yaml');
  t.equal(memory.status, 1);
  t.match(memory.stderr, /rate_limits\.store\.type: must be "redis" while server\.workers is more than 1/);
  const redis = check('redis.yaml');
  t.equal(redis.status, 0, redis.stderr);
});
