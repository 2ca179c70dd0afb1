/**
 * The replay bound (contract §3): the chain signs only the date and hour of `RequestDate` as the
 * client wrote it, so a captured request whose zone offset is changed looks current hours later.
 * `auth.signature.max_utc_offset` bounds the offset, and with it how long a capture can be replayed.
 */
import t, { type Test } from 'tap';
import { errorOf, request, signed, startGateway, type TestGateway } from '../helpers/gateway.js';
import { scrape } from '../helpers/metrics.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const MESSAGE = 'unable to validate request signature for client: request date offset exceeds max_utc_offset';
const HOUR = 3_600_000;

/** `ms` written in the zone `offsetMinutes` east of UTC, second precision: what a client in that zone sends. */
function zoned(ms: number, offsetMinutes: number): string {
  const local = new Date(Math.floor(ms / 1000) * 1000 + offsetMinutes * 60_000).toISOString().slice(0, 19);
  if (offsetMinutes === 0) return `${local}Z`;
  const abs = Math.abs(offsetMinutes);
  const zone = `${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return `${local}${offsetMinutes < 0 ? '-' : '+'}${zone}`;
}

/**
 * A request signed `ago` ms in the past (in UTC, as a client would), replayed now with only the
 * unsigned part of its `RequestDate` changed: the same local digits under the offset that makes
 * the instant look current.
 */
function replayed(ago: number): Record<string, string> {
  const captured = zoned(Date.now() - ago, 0);
  const headers = signed({ method: 'GET', target: MEMBER, date: captured });
  const offsetHours = -Math.round(ago / HOUR);
  const sign = offsetHours < 0 ? '-' : '+';
  const replayDate = `${captured.slice(0, 19)}${sign}${String(Math.abs(offsetHours)).padStart(2, '0')}:00`;
  return { ...headers, RequestDate: replayDate };
}

async function refusedForOffset(t: Test, gw: TestGateway, headers: Record<string, string>, name: string) {
  const res = await request(gw, { method: 'GET', target: MEMBER, headers });
  t.equal(res.status, 401, name);
  t.same(errorOf(res), { status: 401, context: 'header:RequestDate', message: MESSAGE }, name);
}

t.test('the default max_utc_offset (14h) takes every real zone and refuses beyond', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  for (const offset of [0, 14 * 60, -12 * 60, 5 * 60 + 45, -(9 * 60 + 30)]) {
    const headers = signed({ method: 'GET', target: MEMBER, date: zoned(Date.now(), offset) });
    const res = await request(gw, { method: 'GET', target: MEMBER, headers });
    t.equal(res.status, 200, `offset ${offset} minutes`);
  }
  for (const offset of [14 * 60 + 1, -(14 * 60 + 1), 23 * 60 + 59]) {
    const headers = signed({ method: 'GET', target: MEMBER, date: zoned(Date.now(), offset) });
    await refusedForOffset(t, gw, headers, `offset ${offset} minutes`);
  }
  const line = gw.logs.find((l) => l.msg === 'request' && l.status === 401);
  t.equal(line?.auth_failure, 'utc_offset');
  t.equal(
    await scrape(gw.adminUrl, 'gateway_auth_failures_total', { scheme: 'signature', reason: 'utc_offset' }),
    3,
  );
});

t.test('a capture replayed hours later with a changed offset', async (t) => {
  t.test('passes within max_utc_offset (the window it leaves)', async (t) => {
    const gw = await startGateway();
    t.teardown(() => gw.close());
    const res = await request(gw, { method: 'GET', target: MEMBER, headers: replayed(5 * HOUR) });
    t.equal(res.status, 200, 'five hours later, inside the default 14h: the documented window');
  });
  t.test('is refused beyond it (20 and 23 hours with the default)', async (t) => {
    const gw = await startGateway({ auth: { signature: { max_clock_skew: '5m' } } });
    t.teardown(() => gw.close());
    for (const hours of [20, 23]) await refusedForOffset(t, gw, replayed(hours * HOUR), `${hours}h later`);
  });
  t.test('is refused at 5 and 12 hours with max_utc_offset: 0s', async (t) => {
    const gw = await startGateway({ auth: { signature: { max_utc_offset: '0s' } } });
    t.teardown(() => gw.close());
    for (const hours of [5, 12]) await refusedForOffset(t, gw, replayed(hours * HOUR), `${hours}h later`);
    for (const date of [zoned(Date.now(), 0), zoned(Date.now(), 0).replace('Z', '+00:00')]) {
      const res = await request(gw, {
        method: 'GET',
        target: MEMBER,
        headers: signed({ method: 'GET', target: MEMBER, date }),
      });
      t.equal(res.status, 200, date);
    }
    const minusZero = zoned(Date.now(), 0).replace('Z', '-00:00');
    const res = await request(gw, {
      method: 'GET',
      target: MEMBER,
      headers: signed({ method: 'GET', target: MEMBER, date: minusZero }),
    });
    t.equal(res.status, 200, minusZero);
    await refusedForOffset(
      t,
      gw,
      signed({ method: 'GET', target: MEMBER, date: zoned(Date.now(), 60) }),
      'a real zone at +01:00',
    );
  });
});

t.test('the offset is checked after the token is known and before the skew', async (t) => {
  const gw = await startGateway({ auth: { signature: { max_utc_offset: '1h' } } });
  t.teardown(() => gw.close());
  // An offset out of bounds on a request also far off in time: the offset answers.
  const far = signed({ method: 'GET', target: MEMBER, date: zoned(Date.now() - 5 * HOUR, 120) });
  await refusedForOffset(t, gw, far, 'offset before skew');
  // An unknown token answers first.
  const unknown = {
    ...far,
    Authorization: 'bhesignature 00000000-0000-4000-8000-000000000000',
  };
  const res = await request(gw, { method: 'GET', target: MEMBER, headers: unknown });
  t.equal(errorOf(res).message, 'unable to validate request signature for client: resource not found');
});
