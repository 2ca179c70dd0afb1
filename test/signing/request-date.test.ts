/** The `RequestDate` header: read strictly, written as clients write it. */
import t, { type Test } from 'tap';
import { formatRequestDate, parseRequestDate, RequestDateReader } from '../../src/signing/request-date.js';

const PREFIX = 'unable to validate request signature for client: ';

t.test('well-formed request dates give the instant they name', async (t) => {
  t.same(parseRequestDate('2024-01-01T10:15:00Z'), { at: Date.UTC(2024, 0, 1, 10, 15, 0), offset: 0 });
  t.same(parseRequestDate('2024-01-01T10:59:59+02:00'), { at: Date.UTC(2024, 0, 1, 8, 59, 59), offset: 120 });
  t.same(parseRequestDate('2024-01-01T10:15:00.123456-01:30'), {
    at: Date.UTC(2024, 0, 1, 11, 45, 0, 123),
    offset: -90,
  });
  t.same(parseRequestDate('2024-02-29t00:00:00z'), { at: Date.UTC(2024, 1, 29), offset: 0 });
  t.equal(parseRequestDate('0050-03-01T00:00:00Z').at, new Date('0050-03-01T00:00:00Z').getTime());
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

t.test('a request date is written in UTC at second precision, or in a given zone', async (t) => {
  t.equal(formatRequestDate(Date.UTC(2024, 0, 1, 10, 15, 0, 999)), '2024-01-01T10:15:00Z');
  t.equal(formatRequestDate(Date.UTC(2024, 0, 1, 0, 0, 0), -330), '2023-12-31T18:30:00-05:30');
  t.equal(formatRequestDate(Date.UTC(2024, 0, 1, 10, 0, 0), 120), '2024-01-01T12:00:00+02:00');
});

t.test('RequestDateReader reads a repeated value once and gives what parseRequestDate gives', async (t) => {
  const dates = new RequestDateReader();
  const first = dates.read('2024-01-01T10:15:00Z');
  t.same(first, parseRequestDate('2024-01-01T10:15:00Z'));
  t.equal(dates.read(`2024-01-01T10:15:00${'Z'}`), first, 'the same value (another string) is the kept one');
  t.throws(() => dates.read('2024-02-30T10:15:00Z'), { status: 400, message: /day out of range/ });
  t.throws(
    () => dates.read('2024-02-30T10:15:00Z'),
    { status: 400, message: /day out of range/ },
    'a bad value throws every time',
  );
  t.equal(dates.read('2024-01-01T10:15:00Z'), first, 'and is not kept in place of the last good one');
  t.same(dates.read('2024-01-01T10:15:00+02:00'), { at: Date.UTC(2024, 0, 1, 8, 15, 0), offset: 120 });
});
