/**
 * `gateway verify` (contract §3, Explaining a mismatch): replays the chain step by step, checked
 * against the contract's test vectors, and names the usual mistake that explains a mismatch.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { signatureOf as computeSignature } from '../../src/signing/chain.js';
import { runVerify } from '../../src/cli/verify.js';
import { ROOT } from '../helpers/gateway.js';
import { node } from '../helpers/node-child.js';

const ID = '5f0c3b8e-1d2a-4c7e-9b1f-0a1b2c3d4e5f';
const KEY = 'test-key';

async function verify(argv: string[], env: Record<string, string | undefined> = { GATEWAY_TOKEN_KEY: KEY }) {
  let stdout = '';
  let stderr = '';
  const code = await runVerify(argv, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s), env });
  return { code, stdout, stderr };
}

const args = (o: { method: string; uri: string; date: string; signature: string; body?: string }) => [
  '--token-id',
  ID,
  '--method',
  o.method,
  '--uri',
  o.uri,
  '--date',
  o.date,
  '--signature',
  o.signature,
  ...(o.body === undefined ? [] : ['--body', o.body]),
];

t.test("the contract's test vectors match, step by step, and the key is never printed", async (t) => {
  const dir = t.testdir({ body: '{"name":"x"}' });
  const vectors = [
    [
      'GET',
      '/api/v2/collectors/sharphound/latest/checksum',
      '2024-01-01T10:15:00Z',
      undefined,
      'FJ3lWtjygrfP7nkU2IwrK4m1ZC0syZR/MjJuGIEYU3k=',
    ],
    [
      'GET',
      '/api/v2/asset-group-tags/1/members/42?x=1',
      '2024-01-01T10:15:00Z',
      undefined,
      '6whyP01X+e/ZGiOpDLsN+WpzY6uIh9//Igyi2vgpqG4=',
    ],
    [
      'PATCH',
      '/api/v2/sso-providers/7',
      '2024-01-01T10:59:59+02:00',
      path.join(dir, 'body'),
      'cSYOFDrTDsNQ7Nr1ATFxsOPuQmmSyImpsasv0UdjWfU=',
    ],
  ] as const;
  for (const [method, uri, date, body, signature] of vectors) {
    const r = await verify(args({ method, uri, date, signature, ...(body ? { body } : {}) }));
    t.equal(r.code, 0, `${method} ${uri}`);
    t.match(
      r.stdout,
      `step 1: HMAC-SHA256(token key, method + target, nothing between)\n  input:  ${method}${uri}\n  digest: `,
    );
    t.match(
      r.stdout,
      `step 2: HMAC-SHA256(step 1, the first 13 characters of RequestDate)\n  input:  ${date.slice(0, 13)}\n`,
    );
    t.match(
      r.stdout,
      /step 3: HMAC-SHA256\(step 2, the body\)\n {2}input: {2}(empty \(0 bytes\)|12 bytes, sha256 [0-9a-f]{64})\n {2}digest: [0-9a-f]{64}\n/,
    );
    t.match(r.stdout, `expected Signature: ${signature}\n`);
    t.match(r.stdout, 'result: the signature matches');
    t.notMatch(r.stdout + r.stderr, KEY, 'never the key');
  }
});

t.test('a mismatch names the usual mistake that explains it', async (t) => {
  const dir = t.testdir({ body: '{"name":"x"}' });
  const body = path.join(dir, 'body');
  const sign = (method: string, target: string, date: string, b?: Buffer) =>
    computeSignature(KEY, method, target, date, b);
  const cases: Array<[string, Parameters<typeof args>[0], RegExp]> = [
    [
      'the query left out (the Python SDK, the C# example)',
      {
        method: 'GET',
        uri: '/api/v2/x?a=1',
        date: '2024-01-01T10:15:00Z',
        signature: sign('GET', '/api/v2/x', '2024-01-01T10:15:00Z'),
      },
      /the target without its query \(\/api\/v2\/x\): matches\n.*the client signed the target without its query \(\/api\/v2\/x\): sign the target exactly as sent, its query string included/s,
    ],
    [
      'a "?" signed but not sent',
      {
        method: 'GET',
        uri: '/api/v2/x',
        date: '2024-01-01T10:15:00Z',
        signature: sign('GET', '/api/v2/x?', '2024-01-01T10:15:00Z'),
      },
      /the client signed the target with an empty query \(\/api\/v2\/x\?\)/,
    ],
    [
      'the clock read twice across the hour',
      {
        method: 'GET',
        uri: '/api/v2/x',
        date: '2024-01-01T10:00:01Z',
        signature: sign('GET', '/api/v2/x', '2024-01-01T09:59:59Z'),
      },
      /the client signed the hour before \(2024-01-01T09\)/,
    ],
    [
      'the next hour',
      {
        method: 'GET',
        uri: '/api/v2/x',
        date: '2024-01-01T23:59:59-01:00',
        signature: sign('GET', '/api/v2/x', '2024-01-02T00:00:00-01:00'),
      },
      /the client signed the hour after \(2024-01-02T00\)/,
    ],
    [
      'the hour in UTC while sending local time',
      {
        method: 'PATCH',
        uri: '/api/v2/x',
        date: '2024-01-01T10:59:59+02:00',
        signature: sign('PATCH', '/api/v2/x', '2024-01-01T08:59:59Z'),
      },
      /the client signed the hour in UTC \(2024-01-01T08\)/,
    ],
    [
      'an empty body',
      {
        method: 'PATCH',
        uri: '/api/v2/x',
        date: '2024-01-01T10:15:00Z',
        signature: sign('PATCH', '/api/v2/x', '2024-01-01T10:15:00Z'),
        body,
      },
      /the client signed an empty body instead of the one sent: sign the body bytes exactly as sent/,
    ],
    [
      'the method in lower case',
      {
        method: 'PATCH',
        uri: '/api/v2/x',
        date: '2024-01-01T10:15:00Z',
        signature: sign('patch', '/api/v2/x', '2024-01-01T10:15:00Z'),
      },
      /the method as patch: matches/,
    ],
    [
      'another key',
      {
        method: 'GET',
        uri: '/api/v2/x?a=1',
        date: '2024-01-01T10:15:00+02:00',
        signature: computeSignature('other-key', 'GET', '/api/v2/x?a=1', '2024-01-01T10:15:00+02:00'),
      },
      /none of them matches: the key or the body differs/,
    ],
  ];
  for (const [what, o, expected] of cases) {
    const r = await verify(args(o));
    t.equal(r.code, 1, what);
    t.match(r.stdout, 'result: the signature does not match\ntrying the usual mistakes:', what);
    t.match(r.stdout, expected, what);
    t.notMatch(r.stdout, KEY);
  }
  const r = await verify(args({ method: 'GET', uri: '/x', date: '2024-01-01T10:15:00Z', signature: 'abc' }));
  t.equal(r.code, 1);
  t.match(r.stdout, 'not padded standard base64 of 32 bytes: the gateway answers 400');
});

t.test('the key comes from a file or the environment, never the command line', async (t) => {
  const dir = t.testdir({ key: `${KEY}\n` });
  const o = {
    method: 'GET',
    uri: '/x',
    date: '2024-01-01T10:15:00Z',
    signature: computeSignature(KEY, 'GET', '/x', '2024-01-01T10:15:00Z'),
  };
  t.equal((await verify([...args(o), '--token-key-file', path.join(dir, 'key')], {})).code, 0, 'a file');
  const flag = await verify([...args(o), '--token-key', 'a-key-typed-on-the-command-line']);
  t.equal(flag.code, 2, '--token-key is not an option of verify');
  t.notMatch(flag.stderr, 'a-key-typed-on-the-command-line');
  const none = await verify(args(o), {});
  t.equal(none.code, 2);
  t.match(none.stderr, 'a token key is required');
});

t.test('usage mistakes exit 2; an unreadable file exits 1', async (t) => {
  const o = { method: 'GET', uri: '/x', date: '2024-01-01T10:15:00Z', signature: 'x' };
  for (const [what, argv, message] of [
    ['no signature', args(o).slice(0, -2), '--signature is required'],
    ['a bad token id', ['--token-id', 'nope', ...args(o).slice(2)], '--token-id must be a UUID'],
    ['a bad date', args({ ...o, date: '2024-01-01 10:15' }), '--date must be the RequestDate value as sent'],
    ['a bad uri', args({ ...o, uri: 'x' }), '--uri must be the target as sent'],
    ['a bad method', args({ ...o, method: 'G T' }), '--method must be an HTTP method'],
    ['a stray argument', [...args(o), 'stray'], 'unexpected argument'],
  ] as const) {
    const r = await verify([...argv]);
    t.equal(r.code, 2, what);
    t.match(r.stderr, message, what);
    t.match(r.stderr, 'usage: gateway verify');
  }
  t.equal((await verify(['--help'])).code, 0);
  const missing = await verify(args({ ...o, body: '/no/such/file' }));
  t.equal(missing.code, 1);
  t.match(missing.stderr, '/no/such/file: ENOENT');
});

/** `gateway verify` as a user runs it: the built command in a process of its own. */
function cli(o: Parameters<typeof args>[0]) {
  const r = spawnSync(...node([path.join(ROOT, 'dist', 'cli.js'), 'verify', ...args(o)]), {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, GATEWAY_TOKEN_KEY: KEY },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

t.test('npx gateway verify runs from the command line', async (t) => {
  const signature = '6whyP01X+e/ZGiOpDLsN+WpzY6uIh9//Igyi2vgpqG4=';
  const run = (uri: string) => cli({ method: 'GET', uri, date: '2024-01-01T10:15:00Z', signature });
  const ok = run('/api/v2/asset-group-tags/1/members/42?x=1');
  t.equal(ok.code, 0, ok.stderr);
  t.match(ok.stdout, 'result: the signature matches');
  const wrong = run('/api/v2/asset-group-tags/1/members/42?x=2');
  t.equal(wrong.code, 1);
  t.match(wrong.stdout, 'none of them matches');
});

t.test('a target signed in another spelling than the one sent: the spelling is named', async (t) => {
  const date = '2024-01-01T10:15:00Z';
  const member = '/api/v2/asset-group-tags/1/members/42';
  // [what, the target the client signed, the target it sent, the conclusion expected]
  const cases: Array<[string, string, string, RegExp]> = [
    [
      'a query signed before percent-encoding',
      `${member}?q=svc sql`,
      `${member}?q=svc%20sql`,
      /the client signed the target before percent-encoding \(\/api\/v2\/asset-group-tags\/1\/members\/42\?q=svc sql\): sign the target exactly as sent, after percent-encoding it/,
    ],
    [
      'a path signed before the HTTP library encoded a character of it',
      '/api/v2/sso-providers/7',
      '/api/v2/sso%2Dproviders/7',
      /the client signed the target before percent-encoding \(\/api\/v2\/sso-providers\/7\)/,
    ],
    [
      'a query whose spaces were sent as "+" (a form encoder) but signed as spaces',
      `${member}?q=svc sql`,
      `${member}?q=svc+sql`,
      /the client signed the target before percent-encoding, with "\+" in the query as a space \(.*\?q=svc sql\)/,
    ],
    [
      "encodeURI's spelling signed, another encoder's sent",
      encodeURI(`${member}?name=O'Brien & co`),
      `${member}?name=O%27Brien%20%26%20co`,
      /the client signed the target re-encoded as encodeURI would \(.*\?name=O'Brien%20&%20co\): sign the target exactly as sent: the HTTP library percent-encodes it otherwise/,
    ],
    [
      'upper-case hex digits signed, lower-case sent',
      `${member}?path=a%2Fb`,
      `${member}?path=a%2fb`,
      /the client signed the target with upper-case percent-escapes \(.*\?path=a%2Fb\): .*%2f and %2F differ/,
    ],
    [
      'lower-case hex digits signed, upper-case sent',
      `${member}?path=a%2fb%3a`,
      `${member}?path=a%2Fb%3A`,
      /the client signed the target with lower-case percent-escapes \(.*\?path=a%2fb%3a\)/,
    ],
    [
      '"+" signed, "%20" sent',
      `${member}?q=svc+sql&r=1`,
      `${member}?q=svc%20sql&r=1`,
      /the client signed the target with "\+" and "%20" swapped in the query \(.*\?q=svc\+sql&r=1\)/,
    ],
    [
      'the path signed, a "//" from a base URL ending in "/" sent',
      `${member}?x=1`,
      `/${member}?x=1`,
      /the client signed the path cleaned \(\/api\/v2\/asset-group-tags\/1\/members\/42\?x=1\): .*which the gateway answers with 301/,
    ],
    [
      'the path signed, dot segments (one encoded) and a "//" sent',
      '/api/v2/sso-providers/7/',
      '/api/v2/./x/%2e%2E//sso-providers//7/',
      /the client signed the path cleaned \(\/api\/v2\/sso-providers\/7\/\)/,
    ],
  ];
  for (const [what, signedTarget, sentTarget, expected] of cases) {
    const r = cli({
      method: 'GET',
      uri: sentTarget,
      date,
      signature: computeSignature(KEY, 'GET', signedTarget, date),
    });
    t.equal(r.code, 1, what);
    t.match(
      r.stdout,
      `step 1: HMAC-SHA256(token key, method + target, nothing between)\n  input:  GET${sentTarget}\n`,
    );
    t.match(r.stdout, expected, what);
    t.equal(r.stdout.match(/: matches\n/g)?.length, 1, `${what}: one spelling matches`);
    t.notMatch(r.stdout + r.stderr, KEY, 'never the key');
  }
  // The same captured request, signed as sent, is a match: no spelling is tried.
  const sent = `${member}?q=svc%20sql&path=a%2fb`;
  const ok = cli({ method: 'GET', uri: sent, date, signature: computeSignature(KEY, 'GET', sent, date) });
  t.equal(ok.code, 0, ok.stderr);
  t.match(ok.stdout, 'result: the signature matches');
  t.notMatch(ok.stdout, 'trying the usual mistakes');
  // Signed with another key: no spelling explains it.
  const other = cli({
    method: 'GET',
    uri: sent,
    date,
    signature: computeSignature('other-key', 'GET', sent, date),
  });
  t.equal(other.code, 1);
  t.match(other.stdout, /the target before percent-encoding \(.*\): no\n/);
  t.match(other.stdout, 'none of them matches: the key or the body differs');
});
