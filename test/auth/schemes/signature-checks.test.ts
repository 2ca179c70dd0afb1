import t from 'tap';
import {
  checkClockSkew,
  checkUtcOffset,
  parseSignature,
  signaturesEqual,
} from '../../../src/auth/schemes/signature-checks.js';
import { parseRequestDate } from '../../../src/signing/request-date.js';
import { GatewayError } from '../../../src/errors.js';

const PREFIX = 'unable to validate request signature for client: ';
const OFFSET = `${PREFIX}request date offset exceeds max_utc_offset`;
/** A date read from a `Z` value: the instant in UTC. */
const utc = (at: number) => ({ at, offset: 0 });

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
  t.doesNotThrow(() => checkClockSkew(utc(now - hour), now, hour));
  t.doesNotThrow(() => checkClockSkew(utc(now + hour), now, hour));
  t.doesNotThrow(() => checkClockSkew(utc(now), now, 0));
});

t.test('a client behind the skew window is told by how much, with both times', async (t) => {
  const now = Date.UTC(2024, 0, 1, 12, 15, 0, 700);
  const client = Date.UTC(2024, 0, 1, 10, 13, 30);
  t.throws(() => checkClockSkew(utc(client), now, 3_600_000), {
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
    checkClockSkew(utc(client), now, 3_600_000);
  } catch (e) {
    err = e;
  }
  t.type(err, GatewayError);
  t.equal(
    (err as GatewayError).message,
    `${PREFIX}signature too far ahead by 60.00 minutes. Server time is 2024-01-01T10:15:00Z. Client time is 2024-01-01T12:15:00Z`,
  );
});

t.test('the skew message writes both times in the client zone, as the reference does', async (t) => {
  const now = Date.UTC(2024, 0, 1, 10, 15, 0);
  t.throws(() => checkClockSkew(parseRequestDate('2024-01-01T14:30:00+02:00'), now, 3_600_000), {
    message: `${PREFIX}signature too far ahead by 75.00 minutes. Server time is 2024-01-01T12:15:00+02:00. Client time is 2024-01-01T14:30:00+02:00`,
  });
});

t.test('the zone offset is bounded by max_utc_offset, both ways', async (t) => {
  const offset = (value: string) => () => checkUtcOffset(parseRequestDate(value), 2 * 3_600_000);
  t.doesNotThrow(offset('2024-01-01T10:15:00Z'));
  t.doesNotThrow(offset('2024-01-01T10:15:00+02:00'));
  t.doesNotThrow(offset('2024-01-01T10:15:00-02:00'));
  for (const value of ['2024-01-01T10:15:00+02:01', '2024-01-01T10:15:00-05:30']) {
    t.throws(offset(value), { message: OFFSET, status: 401, reason: 'utc_offset' }, value);
  }
  t.doesNotThrow(() => checkUtcOffset(parseRequestDate('2024-01-01T10:15:00-00:00'), 0));
  t.throws(() => checkUtcOffset(parseRequestDate('2024-01-01T10:15:00+00:01'), 0), { message: OFFSET });
});

t.test('signatures compare by content and length, never throwing', async (t) => {
  const a = Buffer.alloc(32, 1);
  t.ok(signaturesEqual(a, Buffer.alloc(32, 1)));
  t.notOk(signaturesEqual(a, Buffer.alloc(32, 2)));
  t.notOk(signaturesEqual(a, Buffer.alloc(31, 1)));
});
