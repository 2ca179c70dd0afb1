/**
 * `rate_limits.unauthenticated` through the front door: failed authentications per client address
 * (behind `server.trusted_proxies`, IPv6 per /64), and a 429 before authentication once at the limit.
 */
import t from 'tap';
import { call, errorOf, request, signed, startGateway, TOKENS } from '../helpers/gateway.js';
import { scrape } from '../helpers/metrics.js';
import { until } from '../helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';

t.test('an address at its limit of failed authentications gets 429 for every request', async (t) => {
  const gw = await startGateway({
    server: { trusted_proxies: ['127.0.0.1'] },
    rate_limits: { unauthenticated: { limit: 3, window: '60s' } },
  });
  t.teardown(() => gw.close());
  const from = (address: string) => ({ 'X-Forwarded-For': address });

  // Every 400 and 401 of the authentication stage counts.
  t.equal((await request(gw, { method: 'GET', target: MEMBER, headers: from('203.0.113.7') })).status, 401);
  const malformed = { ...from('203.0.113.7'), Authorization: 'one two three' };
  t.equal((await request(gw, { method: 'GET', target: MEMBER, headers: malformed })).status, 400);
  const unknown = { ...from('203.0.113.7'), Authorization: 'Basic abc' };
  t.equal((await request(gw, { method: 'GET', target: MEMBER, headers: unknown })).status, 400);

  const refused = await call(gw, { method: 'GET', target: MEMBER, headers: from('203.0.113.7') });
  t.equal(refused.status, 429, 'a valid request too: authentication is not attempted');
  t.same(errorOf(refused), { status: 429, context: 'rate_limit', message: 'rate limit exceeded' });
  t.equal(refused.headers['retry-after'], '60');
  t.notOk(refused.headers.ratelimit, 'Retry-After only');
  t.notOk(refused.headers['ratelimit-policy']);
  const line = gw.logs.find((l) => l.msg === 'request' && l.status === 429);
  t.match(line, { rate_limit_policy: 'unauthenticated', client: '203.0.113.7' });
  t.notOk(line?.auth_failure, 'not counted as an authentication failure');

  // Routing comes first: an unknown path is still 404.
  t.equal(
    (await request(gw, { method: 'GET', target: '/api/v2/nope', headers: from('203.0.113.7') })).status,
    404,
  );

  // Other addresses are untouched, and a success never counts.
  const other = await call(gw, { method: 'GET', target: MEMBER, headers: from('203.0.113.8') });
  t.equal(other.status, 200);
  t.notOk(other.headers.ratelimit, 'no identity policy is configured');
  for (let i = 0; i < 5; i++) {
    t.equal((await call(gw, { method: 'GET', target: MEMBER, headers: from('198.51.100.1') })).status, 200);
  }

  // A client cannot choose its address: an untrusted hop is ignored.
  t.equal(
    (await call(gw, { method: 'GET', target: MEMBER, headers: from('203.0.113.7, 198.51.100.9') })).status,
    200,
    'the rightmost untrusted hop is the client',
  );

  t.equal(
    await scrape(gw.adminUrl, 'gateway_rate_limit_decisions_total', {
      policy: 'unauthenticated',
      result: 'limited',
    }),
    1,
    'the one 429 (the 404 was answered before the check)',
  );
});

t.test('IPv6 addresses are counted per /64', async (t) => {
  const gw = await startGateway({
    server: { trusted_proxies: ['127.0.0.1'] },
    rate_limits: { unauthenticated: { limit: 2, window: '60s' } },
  });
  t.teardown(() => gw.close());
  const fail = (address: string) =>
    request(gw, { method: 'GET', target: MEMBER, headers: { 'X-Forwarded-For': address } });
  t.equal((await fail('2001:db8:1:2::1')).status, 401);
  t.equal((await fail('2001:db8:1:2:ffff::9')).status, 401);
  t.equal((await fail('2001:db8:1:2::abcd')).status, 429, 'another address of the same /64');
  t.equal((await fail('2001:db8:1:3::1')).status, 401, 'the next /64 is another client');
  // An IPv4-mapped IPv6 address is its IPv4 address.
  t.equal((await fail('::ffff:192.0.2.1')).status, 401);
  t.equal((await fail('192.0.2.1')).status, 401);
  t.equal((await fail('::ffff:192.0.2.1')).status, 429);
});

t.test('failures age out of the window', async (t) => {
  const gw = await startGateway({ rate_limits: { unauthenticated: { limit: 1, window: '1s' } } });
  t.teardown(() => gw.close());
  t.equal((await request(gw, { method: 'GET', target: MEMBER })).status, 401);
  const refused = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(refused.status, 429);
  t.equal(refused.headers['retry-after'], '1');
  let status = 429;
  await until('the client is admitted again', async () => {
    status = (await call(gw, { method: 'GET', target: MEMBER })).status;
    return status !== 429;
  });
  t.equal(status, 200, 'admitted again once the failure left the window');
});

t.test('only refusals of authentication count, read bodies included', async (t) => {
  const gw = await startGateway({
    server: { max_body_size: 1024 },
    rate_limits: {
      unauthenticated: { limit: 2, window: '60s' },
      policies: [{ name: 'writes', limit: 5, window: '60s', operations: ['UpdateSSOProvider'] }],
    },
  });
  t.teardown(() => gw.close());
  const target = '/api/v2/sso-providers/1';
  // Over the body limit: 413, not an authentication failure.
  for (let i = 0; i < 3; i++) {
    const big = await call(gw, { method: 'PATCH', target, body: 'x'.repeat(2048) });
    t.equal(big.status, 413);
  }
  // An operation no policy names: no rate-limit headers.
  const read = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(read.status, 200);
  t.notOk(read.headers['ratelimit-policy']);
  // A body read and verified before the refusal (a wrong key): counted.
  const forged = (body: string) =>
    request(gw, {
      method: 'PATCH',
      target,
      body,
      headers: {
        ...signed({ method: 'PATCH', target, body, token: { ...TOKENS.writer, key: 'wrong' } }),
        'Content-Type': 'text/plain',
      },
    });
  t.equal((await forged('a')).status, 401);
  t.equal((await forged('b')).status, 401);
  t.equal((await call(gw, { method: 'GET', target: MEMBER })).status, 429);
});
