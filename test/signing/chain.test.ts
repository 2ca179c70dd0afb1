/** The HMAC chain, shared by verification, outgoing signing and the CLI. */
import t from 'tap';
import { signatureOf as computeSignature } from '../../src/signing/chain.js';
import { RequestKeys } from '../../src/signing/request-keys.js';

t.test('the three test vectors of the contract match exactly', async (t) => {
  t.equal(
    computeSignature(
      'test-key',
      'GET',
      '/api/v2/collectors/sharphound/latest/checksum',
      '2024-01-01T10:15:00Z',
    ),
    'FJ3lWtjygrfP7nkU2IwrK4m1ZC0syZR/MjJuGIEYU3k=',
  );
  t.equal(
    computeSignature('test-key', 'GET', '/api/v2/asset-group-tags/1/members/42?x=1', '2024-01-01T10:15:00Z'),
    '6whyP01X+e/ZGiOpDLsN+WpzY6uIh9//Igyi2vgpqG4=',
  );
  t.equal(
    computeSignature(
      'test-key',
      'PATCH',
      '/api/v2/sso-providers/7',
      '2024-01-01T10:59:59+02:00',
      Buffer.from('{"name":"x"}'),
    ),
    'cSYOFDrTDsNQ7Nr1ATFxsOPuQmmSyImpsasv0UdjWfU=',
  );
});

t.test('the streaming digest equals the one-shot signature, however the body is cut', async (t) => {
  const body = Buffer.from('{"name":"x"}');
  const digest = new RequestKeys().open(
    'id',
    'test-key',
    'PATCH',
    '/api/v2/sso-providers/7',
    '2024-01-01T10:59:59+02:00',
  );
  for (const byte of body) digest.update(Buffer.from([byte]));
  t.equal(digest.digest().toString('base64'), 'cSYOFDrTDsNQ7Nr1ATFxsOPuQmmSyImpsasv0UdjWfU=');
});

t.test('only the date hour is bound, and the query is part of the target', async (t) => {
  const sign = (target: string, date: string) => computeSignature('k', 'GET', target, date);
  t.equal(sign('/a', '2024-01-01T10:15:00Z'), sign('/a', '2024-01-01T10:59:59.999+05:00'));
  t.not(sign('/a', '2024-01-01T10:15:00Z'), sign('/a', '2024-01-01T11:15:00Z'));
  t.not(sign('/a', '2024-01-01T10:15:00Z'), sign('/a?x=1', '2024-01-01T10:15:00Z'));
  t.equal(computeSignature('k', 'GET', '/a', 'x', Buffer.alloc(0)), computeSignature('k', 'GET', '/a', 'x'));
});

t.test('RequestKeys gives the same signature as computing it, cached or not', async (t) => {
  const keys = new RequestKeys(2);
  const date = '2024-05-01T10:15:00Z';
  const expect = (method: string, target: string, body: Buffer, d = date) =>
    Buffer.from(computeSignature('k', method, target, d, body), 'base64');
  const run = (method: string, target: string, body: Buffer, d = date) => {
    const h = keys.open('id', 'k', method, target, d);
    if (body.length > 0) {
      h.update(body.subarray(0, 3));
      h.update(body.subarray(3));
    }
    return h.digest();
  };
  const body = Buffer.from('{"some":"body"}');
  for (let i = 0; i < 2; i++) {
    t.same(run('GET', '/a', Buffer.alloc(0)), expect('GET', '/a', Buffer.alloc(0)), `empty body, pass ${i}`);
    t.same(run('PATCH', '/a', body), expect('PATCH', '/a', body), `with a body, pass ${i}`);
  }
  t.same(
    run('GET', '/a', Buffer.alloc(0), '2024-05-01T11:00:00Z'),
    expect('GET', '/a', Buffer.alloc(0), '2024-05-01T11:00:00Z'),
    'another hour is another key',
  );
  t.notSame(run('GET', '/a', Buffer.alloc(0), '2024-05-01T11:00:00Z'), expect('GET', '/a', Buffer.alloc(0)));
  const long = `/a?${'x'.repeat(1000)}`;
  t.same(run('GET', long, body), expect('GET', long, body), 'a long target is computed, not kept');
  t.same(
    run('GET', '/b', Buffer.alloc(0)),
    expect('GET', '/b', Buffer.alloc(0)),
    'past the bound, old entries go',
  );
});

t.test('forgetting a token drops its keys and keeps the others', async (t) => {
  const keys = new RequestKeys();
  const date = '2024-05-01T10:15:00Z';
  const a = keys.open('a', 'key-a', 'GET', '/x', date).digest();
  keys.open('b', 'key-b', 'GET', '/x', date).digest();
  keys.forget('a');
  // The same id with another secret (a rotated key): computed anew, not served from the cache.
  t.notSame(keys.open('a', 'key-rotated', 'GET', '/x', date).digest(), a);
  t.same(
    keys.open('b', 'ignored: cached', 'GET', '/x', date).digest(),
    Buffer.from(computeSignature('key-b', 'GET', '/x', date), 'base64'),
    'the other token’s keys stay',
  );
});
