import t, { type Test } from 'tap';
import {
  checkClockSkew,
  computeSignature,
  parseRequestDate,
  RequestKeys,
  requestDateOffset,
  parseSignature,
  rfc3339,
  SignatureDigest,
  signaturesEqual,
} from '../../src/auth/signature.js';
import { GatewayError } from '../../src/errors.js';

const PREFIX = 'unable to validate request signature for client: ';

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
  const digest = new SignatureDigest(
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

t.test('well-formed request dates give the instant they name', async (t) => {
  t.equal(parseRequestDate('2024-01-01T10:15:00Z'), Date.UTC(2024, 0, 1, 10, 15, 0));
  t.equal(parseRequestDate('2024-01-01T10:59:59+02:00'), Date.UTC(2024, 0, 1, 8, 59, 59));
  t.equal(parseRequestDate('2024-01-01T10:15:00.123456-01:30'), Date.UTC(2024, 0, 1, 11, 45, 0, 123));
  t.equal(parseRequestDate('2024-02-29t00:00:00z'), Date.UTC(2024, 1, 29));
  t.equal(parseRequestDate('0050-03-01T00:00:00Z'), new Date('0050-03-01T00:00:00Z').getTime());
});

function malformedDate(t: Test, value: string, reason: string) {
  t.throws(
    () => parseRequestDate(value),
    { status: 400, context: 'header:RequestDate', message: `${PREFIX}malformed request date: ${reason}` },
    JSON.stringify(value),
  );
}

t.test('malformed request dates are refused with a short reason', async (t) => {
  malformedDate(t, '2024-01-01', 'a date without a time and zone');
  malformedDate(t, '2024-01-01T10:15:00', 'no time zone offset');
  malformedDate(t, '2024-01-01T10:15', 'no time zone offset');
  malformedDate(t, '2024-01-01 10:15:00.5', 'no time zone offset');
  malformedDate(t, 'Mon, 01 Jan 2024 10:15:00 GMT', 'not an RFC 3339 date-time');
  malformedDate(t, '2024-01-01T10:15:00+0200', 'not an RFC 3339 date-time');
  malformedDate(t, '2024-1-01T10:15:00Z', 'not an RFC 3339 date-time');
  malformedDate(t, ' 2024-01-01T10:15:00Z', 'not an RFC 3339 date-time');
  malformedDate(t, '2024-01-01T10:15:00.Z', 'not an RFC 3339 date-time');
  malformedDate(t, '2024-13-01T10:15:00Z', 'month out of range');
  malformedDate(t, '2024-00-01T10:15:00Z', 'month out of range');
  malformedDate(t, '2024-02-30T10:15:00Z', 'day out of range');
  malformedDate(t, '2023-02-29T10:15:00Z', 'day out of range');
  malformedDate(t, '2024-04-31T10:15:00Z', 'day out of range');
  malformedDate(t, '2024-01-00T10:15:00Z', 'day out of range');
  malformedDate(t, '2024-01-01T24:00:00Z', 'hour out of range');
  malformedDate(t, '2024-01-01T10:60:00Z', 'minute out of range');
  malformedDate(t, '2024-01-01T10:15:60Z', 'second out of range');
  malformedDate(t, '2024-01-01T10:15:00+24:00', 'zone offset out of range');
  malformedDate(t, '2024-01-01T10:15:00+02:60', 'zone offset out of range');
});

t.test('a well-formed signature decodes to its 32 bytes', async (t) => {
  const bytes = parseSignature('FJ3lWtjygrfP7nkU2IwrK4m1ZC0syZR/MjJuGIEYU3k=');
  t.equal(bytes.length, 32);
  t.equal(bytes.toString('base64'), 'FJ3lWtjygrfP7nkU2IwrK4m1ZC0syZR/MjJuGIEYU3k=');
});

t.test('malformed signatures are refused with a short reason', async (t) => {
  const cases: Array<[string, string]> = [
    ['FJ3lWtjygrfP7nkU2IwrK4m1ZC0syZR/MjJuGIEYU3k', 'not padded standard base64'],
    ['FJ3lWtjygrfP7nkU2IwrK4m1ZC0syZR_MjJuGIEYU3k=', 'not padded standard base64'],
    ['FJ3lWtjygrfP7nkU2IwrK4m1ZC0syZR/MjJuGIEYU3k= ', 'not padded standard base64'],
    ['FJ3l Wtjy', 'not padded standard base64'],
    ['!!!!', 'not padded standard base64'],
    ['AAAA', 'decodes to 3 bytes, expected 32'],
    [Buffer.alloc(33).toString('base64'), 'decodes to 33 bytes, expected 32'],
    ['FJ3lWtjygrfP7nkU2IwrK4m1ZC0syZR/MjJuGIEYU3l=', 'not canonical base64'],
  ];
  for (const [value, reason] of cases) {
    t.throws(
      () => parseSignature(value),
      { status: 400, context: 'header:Signature', message: `${PREFIX}malformed signature header: ${reason}` },
      value,
    );
  }
});

t.test('clock skew is allowed up to the limit in both directions', async (t) => {
  const now = Date.UTC(2024, 0, 1, 10, 15, 0);
  const hour = 3_600_000;
  t.doesNotThrow(() => checkClockSkew(now - hour, now, hour));
  t.doesNotThrow(() => checkClockSkew(now + hour, now, hour));
  t.doesNotThrow(() => checkClockSkew(now, now, 0));
});

t.test('a client behind the skew window is told by how much, with both times', async (t) => {
  const now = Date.UTC(2024, 0, 1, 12, 15, 0, 700);
  const client = Date.UTC(2024, 0, 1, 10, 13, 30);
  t.throws(() => checkClockSkew(client, now, 3_600_000), {
    status: 401,
    context: 'header:RequestDate',
    reason: 'clock_skew',
    message: `${PREFIX}signature too far behind by 61.51 minutes. Server time is 2024-01-01T12:15:00Z. Client time is 2024-01-01T10:13:30Z`,
  });
});

t.test('a client ahead of the skew window is told by how much', async (t) => {
  const now = Date.UTC(2024, 0, 1, 10, 15, 0);
  const client = Date.UTC(2024, 0, 1, 12, 15, 0);
  let err: unknown;
  try {
    checkClockSkew(client, now, 3_600_000);
  } catch (e) {
    err = e;
  }
  t.type(err, GatewayError);
  t.equal(
    (err as GatewayError).message,
    `${PREFIX}signature too far ahead by 60.00 minutes. Server time is 2024-01-01T10:15:00Z. Client time is 2024-01-01T12:15:00Z`,
  );
});

t.test('rfc3339 writes UTC at second precision', async (t) => {
  t.equal(rfc3339(Date.UTC(2024, 0, 1, 10, 15, 0, 999)), '2024-01-01T10:15:00Z');
});

t.test('the skew message writes both times in the client zone, as the reference does', async (t) => {
  const now = Date.UTC(2024, 0, 1, 10, 15, 0);
  const date = '2024-01-01T14:30:00+02:00';
  t.equal(requestDateOffset(date), 120);
  t.equal(requestDateOffset('2024-01-01T08:30:00-05:30'), -330);
  t.equal(requestDateOffset('2024-01-01T08:30:00Z'), 0);
  t.throws(() => checkClockSkew(parseRequestDate(date), now, 3_600_000, requestDateOffset(date)), {
    message: `${PREFIX}signature too far ahead by 75.00 minutes. Server time is 2024-01-01T12:15:00+02:00. Client time is 2024-01-01T14:30:00+02:00`,
  });
  t.equal(rfc3339(Date.UTC(2024, 0, 1, 0, 0, 0), -330), '2023-12-31T18:30:00-05:30');
});

t.test('signatures compare by content and length, never throwing', async (t) => {
  const a = Buffer.alloc(32, 1);
  t.ok(signaturesEqual(a, Buffer.alloc(32, 1)));
  t.notOk(signaturesEqual(a, Buffer.alloc(32, 2)));
  t.notOk(signaturesEqual(a, Buffer.alloc(31, 1)));
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
