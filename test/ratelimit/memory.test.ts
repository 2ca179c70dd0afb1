/**
 * Rate limits with the memory store, through the front door: the headers, the 429, one decision per
 * request across policies, counting after authentication, the stage order, metrics and reloads.
 */
import { writeFileSync } from 'node:fs';
import t from 'tap';
import { stringify } from 'yaml';
import { loadConfigFile } from '../../src/config/load.js';
import {
  baseConfig,
  call,
  errorOf,
  merge,
  request,
  signed,
  startGateway,
  TOKENS,
  type TestGateway,
} from '../helpers/gateway.js';
import { metric, metricsText, scrape } from '../helpers/metrics.js';
import { startUpstream, UPSTREAM_TOKEN_ID } from '../helpers/upstream.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const CHECKSUM = '/api/v2/collectors/sharphound/latest/checksum';

const LIMITS = {
  rate_limits: {
    policies: [
      { name: 'default', limit: 5, window: '60s' },
      { name: 'members', limit: 2, window: '30s', operations: ['GetAssetGroupTagMember'] },
    ],
  },
};

t.test('policies per verified identity', async (t) => {
  const gw = await startGateway(LIMITS);
  t.teardown(() => gw.close());

  t.test('every admitted answer lists the policies and the one with the fewest left', async (t) => {
    const first = await call(gw, { method: 'GET', target: MEMBER });
    t.equal(first.status, 200);
    t.equal(first.headers['ratelimit-policy'], '"default";q=5;w=60, "members";q=2;w=30');
    t.equal(first.headers.ratelimit, '"members";r=1;t=30');
    const other = await call(gw, { method: 'GET', target: CHECKSUM });
    t.equal(other.status, 200);
    t.equal(other.headers['ratelimit-policy'], '"default";q=5;w=60', 'only the policies that apply');
    t.equal(other.headers.ratelimit, '"default";r=3;t=60');
  });

  t.test('over a limit: 429 in the envelope, with Retry-After, and no quota used', async (t) => {
    t.equal((await call(gw, { method: 'GET', target: MEMBER })).status, 200);
    const refused = await call(gw, { method: 'GET', target: MEMBER });
    t.equal(refused.status, 429);
    t.same(errorOf(refused), { status: 429, context: 'rate_limit', message: 'rate limit exceeded' });
    t.equal(refused.json().request_id, refused.headers.requestid);
    t.equal(refused.headers['retry-after'], '30');
    t.equal(refused.headers['ratelimit-policy'], '"default";q=5;w=60, "members";q=2;w=30');
    t.equal(refused.headers.ratelimit, '"members";r=0;t=30');
    // The refused request used none of `default`: 3 admitted so far, so 2 are left.
    const next = await call(gw, { method: 'GET', target: CHECKSUM });
    t.equal(next.headers.ratelimit, '"default";r=1;t=60');
    const line = gw.logs.find((l) => l.msg === 'request' && l.status === 429);
    t.match(line, { reason: 'rate_limited', rate_limit_policy: 'members' });
  });

  t.test('another identity has its own counts', async (t) => {
    const res = await call(gw, { method: 'GET', target: MEMBER, token: TOKENS.reader });
    t.equal(res.status, 200);
    t.equal(res.headers.ratelimit, '"members";r=1;t=30');
  });

  t.test('a bearer JWT is an identity of its own', async (t) => {
    // A JWT for the admin token's subject still counts apart from the signed token.
    const { SignJWT } = await import('jose');
    const { JWT_SECRET } = await import('../helpers/gateway.js');
    const jwt = await new SignJWT({ permissions: ['*'] })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('admin')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(Buffer.from(JWT_SECRET, 'base64'));
    const res = await request(gw, {
      method: 'GET',
      target: MEMBER,
      headers: { Authorization: `Bearer ${jwt}` },
    });
    t.equal(res.status, 200);
    t.equal(res.headers.ratelimit, '"members";r=1;t=30');
  });

  t.test('counted after authentication: a claimed token id uses none of its quota', async (t) => {
    for (let i = 0; i < 5; i++) {
      const forged = await request(gw, {
        method: 'GET',
        target: MEMBER,
        headers: { ...signed({ method: 'GET', target: MEMBER, token: { ...TOKENS.reader, key: 'wrong' } }) },
      });
      t.equal(forged.status, 401, 'the forgery is refused by authentication, not the limit');
      t.notOk(forged.headers.ratelimit);
    }
    const real = await call(gw, { method: 'GET', target: CHECKSUM, token: TOKENS.reader });
    t.equal(real.headers.ratelimit, '"default";r=3;t=60', 'only the real requests counted');
  });

  t.test('the limit comes before the permission check', async (t) => {
    const target = '/api/v2/sso-providers/1';
    const first = await call(gw, { method: 'PATCH', target, token: TOKENS.none, body: '' });
    t.equal(first.status, 403, 'under the limit: the permission decides');
    t.equal(first.headers.ratelimit, '"default";r=4;t=60');
    for (let i = 0; i < 4; i++) await call(gw, { method: 'PATCH', target, token: TOKENS.none, body: '' });
    const over = await call(gw, { method: 'PATCH', target, token: TOKENS.none, body: '' });
    t.equal(over.status, 429, 'over the limit: 429 before 403');
  });

  t.test('the decisions are counted by policy and result', async (t) => {
    t.equal(
      await scrape(gw.adminUrl, 'gateway_rate_limit_decisions_total', {
        policy: 'members',
        result: 'limited',
      }),
      1,
    );
    t.ok(
      ((await scrape(gw.adminUrl, 'gateway_rate_limit_decisions_total', {
        policy: 'default',
        result: 'allowed',
      })) ?? 0) >= 5,
    );
  });
});

t.test('metrics are exported from the first scrape', async (t) => {
  const gw = await startGateway({
    rate_limits: { ...LIMITS.rate_limits, unauthenticated: { limit: 3, window: '1s' } },
  });
  t.teardown(() => gw.close());
  const text = await metricsText(gw.adminUrl);
  for (const policy of ['default', 'members', 'unauthenticated']) {
    for (const result of ['allowed', 'limited', 'error']) {
      t.equal(
        metric(text, 'gateway_rate_limit_decisions_total', { policy, result }),
        0,
        `${policy} ${result}`,
      );
    }
  }
  t.equal(metric(text, 'gateway_rate_limit_store_duration_seconds_count'), 0);
  const ready = (await (await fetch(`${gw.adminUrl}/readyz`)).json()) as any;
  t.equal(ready.checks['rate_limits.memory'], 'ok');
});

t.test('without rate_limits: no headers and no rate-limit stage', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  const res = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(res.status, 200);
  t.notOk(res.headers['ratelimit-policy']);
  t.notOk(res.headers.ratelimit);
});

/** Writes `overrides` over the base configuration of `gw` and reloads it, as SIGHUP does. */
async function reload(gw: TestGateway, overrides: Record<string, unknown>): Promise<void> {
  const config = merge(merge(baseConfig(), { server: { port: 0 }, admin: { port: 0 } }), overrides);
  writeFileSync(gw.configFile, stringify(config));
  await gw.app.reload(loadConfigFile(gw.configFile));
}

t.test('a reload keeps the counts of unchanged policies; a changed one starts from zero', async (t) => {
  const two = (limit: number) => ({
    rate_limits: {
      policies: [
        { name: 'kept', limit: 10, window: '60s' },
        { name: 'changed', limit, window: '60s' },
      ],
    },
  });
  const gw = await startGateway(two(10));
  t.teardown(() => gw.close());
  for (let i = 0; i < 3; i++) await call(gw, { method: 'GET', target: MEMBER });
  await reload(gw, two(20));
  const res = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(res.headers['ratelimit-policy'], '"kept";q=10;w=60, "changed";q=20;w=60');
  t.equal(res.headers.ratelimit, '"kept";r=6;t=60', 'kept: 4 admitted; changed: 1 since the reload');
  await reload(gw, { rate_limits: { store: { type: 'memory', max_keys: 5 }, ...two(20).rate_limits } });
  const resized = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(resized.headers.ratelimit, '"kept";r=5;t=60', 'a new max_keys keeps the counts too');
});

t.test('the memory store holds at most max_keys identities', async (t) => {
  const gw = await startGateway({
    rate_limits: {
      store: { type: 'memory', max_keys: 1 },
      policies: [{ name: 'p', limit: 2, window: '60s' }],
    },
  });
  t.teardown(() => gw.close());
  t.equal((await call(gw, { method: 'GET', target: MEMBER })).headers.ratelimit, '"p";r=1;t=60');
  t.equal(
    (await call(gw, { method: 'GET', target: MEMBER, token: TOKENS.reader })).headers.ratelimit,
    '"p";r=1;t=60',
  );
  // The admin's counts were the least recently used key: dropped for the reader's.
  t.equal((await call(gw, { method: 'GET', target: MEMBER })).headers.ratelimit, '"p";r=1;t=60');
});

t.test("pass-through: policies apply, and the service's own RateLimit headers are replaced", async (t) => {
  const stub = await startUpstream();
  const gw = await startGateway({
    passthrough: {
      url: stub.url,
      auth: { type: 'signature', token_id: UPSTREAM_TOKEN_ID, token_key: 'upstream-key' },
    },
    rate_limits: {
      policies: [
        { name: 'default', limit: 3, window: '10s' },
        { name: 'members', limit: 1, window: '10s', operations: ['GetAssetGroupTagMember'] },
      ],
    },
  });
  t.teardown(async () => {
    await gw.close();
    await stub.close();
  });
  stub.respond = (_req, res) => {
    res.writeHead(200, {
      'Content-Type': 'application/json',
      RateLimit: '"upstream";r=54;t=1',
      'RateLimit-Policy': '"upstream";q=55;w=1',
      'X-Custom': 'kept',
    });
    res.end('{"data":{}}');
  };
  const target = '/api/v2/saved-queries';
  const res = await call(gw, { method: 'GET', target });
  t.equal(res.status, 200);
  t.equal(
    res.headers['ratelimit-policy'],
    '"default";q=3;w=10',
    'an operation not listed is not limited by it',
  );
  t.equal(res.headers.ratelimit, '"default";r=2;t=10');
  t.equal(res.headers['x-custom'], 'kept');
  t.equal((await call(gw, { method: 'GET', target })).status, 200);
  t.equal((await call(gw, { method: 'GET', target })).status, 200);
  const refused = await call(gw, { method: 'GET', target });
  t.equal(refused.status, 429);
  t.equal(stub.seen.length, 3, 'a refused request is never forwarded');
});
