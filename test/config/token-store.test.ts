/**
 * `auth.signature.token_store`: defaults, the 32-byte base64 encryption keys (a problem names the
 * key, never its value).
 */
import t from 'tap';
import { ConfigError, parseConfig } from '../../src/config/load.js';
import { ENCRYPTION_KEYS } from '../helpers/tokens.js';

const BACKENDS = `backends:
  collectors: { type: local, path: c }
  sso_providers: { type: local, path: s.json }
  asset_group_tags: { type: local, path: a.json }
`;
const [A, B] = ENCRYPTION_KEYS;

function parse(store: string, env: Record<string, string> = {}) {
  return parseConfig(`auth: { signature: { token_store: ${store} } }\n${BACKENDS}`, '/base', { env });
}

function problems(store: string, env: Record<string, string> = {}): string[] {
  try {
    parse(store, env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

t.test('defaults', async (t) => {
  const c = parse(`{ type: postgres, url: "postgres://h/db", encryption_key: "${A}" }`);
  t.same(c.auth.signature.token_store, {
    type: 'postgres',
    url: 'postgres://h/db',
    encryption_key: A,
    previous_encryption_keys: [],
    poll: 30_000,
    last_used_interval: 60_000,
    connect_timeout: 5_000,
    migrate: true,
  });
  const longer = parse(
    `{ type: postgres, url: "postgres://h/db", encryption_key: "${A}", last_used_interval: 24h }`,
  );
  t.equal(longer.auth.signature.token_store?.last_used_interval, 86_400_000);
  t.equal(parseConfig(BACKENDS, '/base').auth.signature.token_store, undefined, 'absent: no store');
});

t.test('encryption keys are 32 bytes of standard base64, each once; a problem never shows one', async (t) => {
  const short = Buffer.alloc(16, 1).toString('base64');
  t.same(problems(`{ type: postgres, url: "postgres://h/db", encryption_key: "${short}" }`), [
    'auth.signature.token_store.encryption_key: must be 32 bytes in standard base64 (openssl rand -base64 32)',
  ]);
  t.same(
    problems(`{ type: postgres, url: "postgres://h/db", encryption_key: "\${env:K}" }`, { K: 'not-base64!' }),
    [
      'auth.signature.token_store.encryption_key: must be 32 bytes in standard base64 (openssl rand -base64 32)',
    ],
  );
  t.same(
    problems(
      `{ type: postgres, url: "postgres://h/db", encryption_key: "${A}", previous_encryption_keys: ["${B}", "${A}"] }`,
    ),
    ['auth.signature.token_store.previous_encryption_keys[1]: repeats encryption_key or an earlier entry'],
  );
  t.match(problems(`{ type: mysql, url: "postgres://h/db", encryption_key: "${A}" }`), [/token_store\.type/]);
  t.match(problems(`{ type: postgres, url: "http://h", encryption_key: "${A}" }`), [
    /token_store\.url: must be a postgres:\/\/ URL/,
  ]);
  t.match(problems(`{ type: postgres, url: "postgres://h/db", encryption_key: "${A}", poll: 10ms }`), [
    /token_store\.poll: duration "10ms" is out of range: must be from 100ms to 24h/,
  ]);
  t.match(problems(`{ type: postgres, url: "postgres://h/db", encryption_key: "${A}", extra: 1 }`), [
    'auth.signature.token_store.extra: unknown key',
  ]);
  const all = problems(
    `{ type: postgres, url: "postgres://h/db", encryption_key: "${A.slice(0, 20)}" }`,
  ).join(' ');
  t.notMatch(all, A.slice(0, 20));
});
