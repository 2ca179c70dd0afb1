/**
 * `rate_limits.store` of type redis: exactly one of url, sentinels, cluster, each with the keys
 * that apply to it; every refusal names the key, when loading (the start) and in `check-config`.
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

const withStore = (store: string) => `${BACKENDS}rate_limits: { store: { type: redis, ${store} } }\n`;

function problems(store: string): string[] {
  try {
    parseConfig(withStore(store), '/base');
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

t.test('sentinels and cluster: addresses parsed, the keys that apply kept', async (t) => {
  const sentinel = parseConfig(
    withStore(`sentinels: ["10.0.0.5:26379", "sentinel-2.redis:26380", "[fd00::7]:26381"], name: main,
      username: gw, password: p, sentinel_username: sgw, sentinel_password: "", db: 2, tls: { ca: certs/ca.pem }`),
    '/base',
  ).rate_limits?.store;
  t.match(sentinel, {
    sentinels: [
      { host: '10.0.0.5', port: 26379 },
      { host: 'sentinel-2.redis', port: 26380 },
      { host: 'fd00::7', port: 26381 },
    ],
    name: 'main',
    username: 'gw',
    password: 'p',
    sentinel_username: 'sgw',
    sentinel_password: '',
    db: 2,
    tls: { ca: '/base/certs/ca.pem' },
  });
  const cluster = parseConfig(withStore(`cluster: ["127.0.0.1:7000"], password: p, tls: {}`), '/base')
    .rate_limits?.store;
  t.match(cluster, { cluster: [{ host: '127.0.0.1', port: 7000 }], password: 'p', tls: {} });
  t.same(problems(`url: "rediss://r:6380", username: gw, password: p, db: 3, tls: { ca: ca.pem }`), []);
});

t.test('exactly one of url, sentinels, cluster', async (t) => {
  t.same(problems(`sentinels: ["a:1"], name: m, cluster: ["b:2"]`), [
    'rate_limits.store.cluster: cannot be used with sentinels: give one of url, sentinels, cluster',
  ]);
  t.same(problems(`url: "redis://r:6379", sentinels: ["a:1"], name: m`), [
    'rate_limits.store.sentinels: cannot be used with url: give one of url, sentinels, cluster',
  ]);
  t.same(problems(`url: "redis://r:6379", cluster: ["a:1"]`), [
    'rate_limits.store.cluster: cannot be used with url: give one of url, sentinels, cluster',
  ]);
  t.same(problems(`timeout: 1s`), ['rate_limits.store: needs one of url, sentinels, cluster']);
});

t.test('the keys of one topology are refused with another', async (t) => {
  t.same(problems(`sentinels: ["a:1"]`), [
    'rate_limits.store.name: is required with sentinels (the name the Sentinels monitor the primary under)',
  ]);
  t.same(problems(`cluster: ["a:1"], name: m, sentinel_password: x`), [
    'rate_limits.store.name: is only used with sentinels',
    'rate_limits.store.sentinel_password: is only used with sentinels',
  ]);
  t.same(problems(`cluster: ["a:1"], db: 1`), [
    'rate_limits.store.db: cannot be used with cluster (a Redis Cluster has only db 0)',
  ]);
  t.same(problems(`cluster: ["a:1"], key_prefix: "gw{x}:"`), [
    'rate_limits.store.key_prefix: must not contain { or } with cluster (the hash tag of a key is its identity hash)',
  ]);
  t.same(problems(`url: "redis://:secret@r:6379", password: other`), [
    'rate_limits.store.password: cannot be used with a url that carries credentials',
  ]);
  t.same(problems(`url: "redis://r:6379/4", db: 1`), [
    'rate_limits.store.db: cannot be used with a url that names a db',
  ]);
  t.same(problems(`url: "redis://r:6379", tls: {}`), ['rate_limits.store.tls: needs a rediss:// url']);
});

t.test('a malformed host:port is named with its index', async (t) => {
  for (const bad of [
    'redis-1',
    'redis-1:',
    'h:0',
    'h:99999',
    'u@h:1',
    '[::1',
    'h:1/0',
    'h:1?x',
    ':6379',
    'a b:1',
  ]) {
    t.same(
      problems(`sentinels: ["a:1", "${bad}"], name: m`),
      [
        `rate_limits.store.sentinels[1]: must be host:port (e.g. 10.0.0.5:26379 or [fd00::5]:6379), not ${JSON.stringify(bad)}`,
      ],
      bad,
    );
  }
  t.same(problems(`cluster: []`), ['rate_limits.store.cluster: must list at least one host:port']);
  t.same(problems(`cluster: "a:1"`).length, 1, 'a list, not a string');
});

const CLI = path.join(ROOT, 'dist', 'cli.js');
const run = (...args: string[]) =>
  spawnSync(...node([CLI, ...args]), { encoding: 'utf8', env: { PATH: process.env.PATH } });

t.test('check-config and the start refuse both sentinels and cluster, naming the key', async (t) => {
  const dir = t.testdir({
    'both.yaml': `server: { port: 0 }\nadmin: { port: 0 }\n${withStore(`sentinels: ["127.0.0.1:26379"], name: m, cluster: ["127.0.0.1:7000"]`)}`,
    'port.yaml': `server: { port: 0 }\nadmin: { port: 0 }\n${withStore(`cluster: ["127.0.0.1:7000", "127.0.0.1"]`)}`,
    'ca.yaml': `${withStore(`cluster: ["127.0.0.1:7000"], tls: { ca: missing-ca.pem }`)}`,
  });
  for (const args of [['check-config'], ['--config']]) {
    const both = run(...args, path.join(dir, 'both.yaml'));
    t.equal(both.status, 1, `${args[0]}: exit 1`);
    t.match(both.stderr, /rate_limits\.store\.cluster: cannot be used with sentinels/);
    t.notMatch(both.stderr, /\n\s+at /, 'no stack');
    const port = run(...args, path.join(dir, 'port.yaml'));
    t.equal(port.status, 1);
    t.match(port.stderr, /rate_limits\.store\.cluster\[1\]: must be host:port/);
  }
  const ca = run('check-config', path.join(dir, 'ca.yaml'));
  t.equal(ca.status, 1);
  t.match(ca.stderr, /rate_limits\.store\.tls\.ca: file .*missing-ca\.pem cannot be read \(ENOENT\)/);
});
