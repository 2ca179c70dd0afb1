/**
 * The front door's limits (contract §11): the built-in login limit per client address, the
 * service's 401 on login counted against the address, route limits per identity, `version` for any
 * verified identity, the `upload` route's body limit, and an operator route's own limits.
 */
import { SignJWT } from 'jose';
import t from 'tap';
import { call, JWT_SECRET, request, TOKENS } from '../helpers/gateway.js';
import { frontDoor, lineOf } from '../helpers/front-door.js';
import { scrape } from '../helpers/metrics.js';
import { until } from '../helpers/wait.js';

/** An HS256 JWT as the service issues its session tokens (no permissions claim). */
function sessionToken(sub: string): Promise<string> {
  return new SignJWT({ sub, exp: Math.floor(Date.now() / 1000) + 600 })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt()
    .sign(Buffer.from(JWT_SECRET, 'base64'));
}

t.test('login: one request a second per client address, the second refused at the edge', async (t) => {
  const { gw, service } = await frontDoor(t);
  const first = await request(gw, { method: 'POST', target: '/api/v2/login', body: '{}' });
  t.equal(first.status, 200);
  const second = await request(gw, { method: 'POST', target: '/api/v2/login', body: '{}' });
  t.equal(second.status, 429);
  t.equal(second.json().errors[0].message, 'rate limit exceeded');
  t.equal(second.json().errors[0].context, 'rate_limit');
  t.equal(second.headers['retry-after'], '1');
  t.notOk(second.headers.ratelimit, 'a route limit adds no RateLimit header');
  t.notOk(second.headers['ratelimit-policy']);
  t.equal(service.seen.length, 1, 'nothing of a refused request is forwarded');
  const line = await lineOf(gw, second);
  t.equal(line.route, 'login');
  t.equal(line.error_code, 'GW_ROUTE_RATE_LIMITED');
  t.equal(line.rate_limit_policy, 'route:login');
  // Other routes of the same address are not held back by the login limit.
  t.equal((await request(gw, { method: 'GET', target: '/api/v2/spec' })).status, 200);
  t.equal(
    await scrape(gw.adminUrl, 'gateway_rate_limit_decisions_total', {
      policy: 'route:login',
      result: 'limited',
    }),
    1,
  );
  await until(
    'a second later the address may log in again',
    async () => {
      const again = await request(gw, { method: 'POST', target: '/api/v2/login', body: '{}' });
      return again.status === 200;
    },
    5_000,
    100,
  );
});

t.test("the service's 401 on login counts against the address's unauthenticated limit", async (t) => {
  const { gw, service } = await frontDoor(t, {
    gateway: {
      rate_limits: { store: { type: 'memory' }, unauthenticated: { limit: 2, window: '60s' } },
      // The operator replaces the built-in login limit, so two guesses go out at once.
      routes: [
        {
          name: 'login',
          path: '/api/v2/login',
          methods: ['POST'],
          auth: 'none',
          rate_limit: { limit: 10, window: '1s' },
        },
      ],
    },
  });
  service.respond = (_req, res) => {
    res.writeHead(401, { 'Content-Type': 'application/json' });
    res.end('{"errors":[{"message":"invalid login"}]}');
  };
  for (let i = 0; i < 2; i++) {
    const res = await request(gw, { method: 'POST', target: '/api/v2/login', body: '{"secret":"guess"}' });
    t.equal(res.status, 401, "the service's answer as sent");
    t.equal(res.json().errors[0].message, 'invalid login');
  }
  const stopped = await request(gw, { method: 'POST', target: '/api/v2/login', body: '{"secret":"guess"}' });
  t.equal(stopped.status, 429, 'the guesser is stopped at the edge');
  t.equal((await lineOf(gw, stopped)).error_code, 'GW_UNAUTHENTICATED_RATE_LIMITED');
  t.equal(service.seen.length, 2);
  // A 401 on another public route is the service's business, not a failed login.
  const other = await frontDoor(t, {
    gateway: { rate_limits: { unauthenticated: { limit: 1, window: '60s' } } },
  });
  other.service.respond = (_req, res) => {
    res.writeHead(401);
    res.end();
  };
  t.equal((await request(other.gw, { method: 'GET', target: '/api/v2/spec' })).status, 401);
  t.equal((await request(other.gw, { method: 'GET', target: '/api/v2/spec' })).status, 401);
});

t.test('version: any verified identity, a token without passthrough included', async (t) => {
  const { gw, service } = await frontDoor(t, {
    gateway: { auth: { jwt: { default_permissions: [] } } },
  });
  service.respond = (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{"data":{"server_version":"v7.0.0","API":{"current_version":"v2","deprecated_version":"v1"}}}');
  };
  const bearer = { Authorization: `Bearer ${await sessionToken('carol')}` };
  const version = await request(gw, { method: 'GET', target: '/api/version', headers: bearer });
  t.equal(version.status, 200);
  t.equal(version.json().data.server_version, 'v7.0.0');
  t.equal(service.seen[0]?.headers.authorization, bearer.Authorization, 'client auth: the token goes on');
  const line = await lineOf(gw, version);
  t.equal(line.route, 'version');
  t.equal(line.subject, 'carol');
  const signedVersion = await call(gw, { method: 'GET', target: '/api/version', token: TOKENS.none });
  t.equal(signedVersion.status, 200, 'a signed-request token with no permission at all');
  const self = await request(gw, { method: 'GET', target: '/api/v2/self', headers: bearer });
  t.equal(self.status, 403, 'every other /api/v2 route still needs passthrough');
  t.equal(service.seen.length, 2);
});

t.test('upload: passthrough permission, and the body limit of passthrough.max_body', async (t) => {
  const { gw, service } = await frontDoor(t, {
    passthrough: { max_body: 2048 },
    gateway: { server: { max_body_size: 512 } },
  });
  const body = 'z'.repeat(1500);
  const upload = await call(gw, { method: 'POST', target: '/api/v2/file-upload/7', body });
  t.equal(upload.status, 200);
  t.equal(service.seen[0]?.body.length, 1500);
  t.equal((await lineOf(gw, upload)).route, 'upload');
  const elsewhere = await call(gw, { method: 'POST', target: '/api/v2/saved-queries', body });
  t.equal(elsewhere.status, 413, 'elsewhere, server.max_body_size');
  const tooBig = await call(gw, { method: 'POST', target: '/api/v2/file-upload/7', body: 'z'.repeat(2049) });
  t.equal(tooBig.status, 413);
  t.match(tooBig.json().errors[0].message, /2048 bytes/);
  const reader = await call(gw, {
    method: 'POST',
    target: '/api/v2/file-upload/7',
    body: 'x',
    token: TOKENS.reader,
  });
  t.equal(reader.status, 403);
  t.equal(service.seen.length, 1);
});

t.test('operator routes: required with a permission, none with a limit, max_body and max_wait', async (t) => {
  const { gw, service } = await frontDoor(t, {
    gateway: {
      server: { max_body_size: 100 },
      routes: [
        { name: 'private-spec', prefix: '/api/v2/swagger/', auth: 'required', permission: 'passthrough' },
        {
          name: 'features',
          path: '/api/v2/features',
          methods: ['GET'],
          auth: 'none',
          rate_limit: { limit: 2, window: '60s' },
        },
        {
          name: 'graph',
          path: '/api/v2/graphs/cypher',
          methods: ['POST'],
          auth: 'required',
          max_body: 1000,
          max_wait: 600,
          rate_limit: { limit: 1, window: '60s' },
        },
      ],
    },
  });
  t.equal((await request(gw, { method: 'GET', target: '/api/v2/swagger/index.html' })).status, 401);
  t.equal(
    (await call(gw, { method: 'GET', target: '/api/v2/swagger/index.html', token: TOKENS.reader })).status,
    403,
  );
  const spec = await call(gw, { method: 'GET', target: '/api/v2/swagger/index.html' });
  t.equal(spec.status, 200);
  t.equal((await lineOf(gw, spec)).route, 'private-spec');
  t.equal(
    (await request(gw, { method: 'GET', target: '/api/v2/swagger' })).status,
    200,
    'the prefix covers what is below it only',
  );

  t.equal((await request(gw, { method: 'GET', target: '/api/v2/features' })).status, 200);
  t.equal((await request(gw, { method: 'GET', target: '/api/v2/features' })).status, 200);
  const third = await request(gw, { method: 'GET', target: '/api/v2/features' });
  t.equal(third.status, 429);
  t.ok(Number(third.headers['retry-after']) > 50);
  t.equal(
    (await request(gw, { method: 'POST', target: '/api/v2/features' })).status,
    401,
    'other methods: the pass-through',
  );

  const seen = service.seen.length;
  const cypher = await call(gw, {
    method: 'POST',
    target: '/api/v2/graphs/cypher',
    body: 'q'.repeat(900),
    headers: { Prefer: 'wait=500' },
  });
  t.equal(cypher.status, 200, "the route's own body limit");
  t.equal(cypher.headers['preference-applied'], 'wait=500', "the route's own Prefer ceiling");
  t.equal(service.seen.length, seen + 1);
  // Per identity: the admin is over the route's limit, another identity is not.
  t.equal((await call(gw, { method: 'POST', target: '/api/v2/graphs/cypher', body: '{}' })).status, 429);
  const writer = await call(gw, {
    method: 'POST',
    target: '/api/v2/graphs/cypher',
    body: '{}',
    token: TOKENS.writer,
  });
  t.equal(writer.status, 200, 'any verified identity: the route names no permission');
  const elsewhere = await call(gw, {
    method: 'GET',
    target: '/api/v2/self',
    headers: { Prefer: 'wait=500' },
  });
  t.equal(elsewhere.headers['preference-applied'], 'wait=300', 'elsewhere, prefer.max_wait');
});

t.test('deny: 404 resource not found, as if the path did not exist, nothing forwarded', async (t) => {
  const { gw, service } = await frontDoor(t, {
    gateway: { routes: [{ name: 'no-ui', prefix: '/ui/', auth: 'deny' }] },
  });
  const res = await call(gw, { method: 'GET', target: '/ui/index.html' });
  t.equal(res.status, 404);
  t.equal(res.json().errors[0].message, 'resource not found');
  const line = await lineOf(gw, res);
  t.equal(line.route, 'no-ui');
  t.equal(line.error_code, 'GW_ROUTE_DENIED');
  t.equal((await request(gw, { method: 'GET', target: '/%75i/index.html' })).status, 404, 'however spelt');
  t.equal(service.seen.length, 0);
  t.equal((await request(gw, { method: 'GET', target: '/ui' })).status, 200, '/ui is not under /ui/');
  t.equal(await scrape(gw.adminUrl, 'gateway_route_requests_total', { route: 'no-ui', code: '404' }), 2);
});

t.test('replacing passthrough by name restricts what authenticated identities reach', async (t) => {
  const { gw, service } = await frontDoor(t, {
    auth: 'signature',
    gateway: {
      routes: [
        { name: 'passthrough', prefix: '/api/v2/graphs/', auth: 'required', permission: 'passthrough' },
      ],
    },
  });
  const allowed = await call(gw, { method: 'GET', target: '/api/v2/graphs/search?q=x' });
  t.equal(allowed.status, 200);
  t.equal((await lineOf(gw, allowed)).route, 'passthrough');
  t.equal(service.seen[0]?.signatureValid, true, "signed by the gateway's own token");
  for (const target of ['/api/v2/self', '/api/v2/graphs', '/api/v2/sso-providers/1']) {
    const res = await call(gw, { method: 'DELETE', target });
    t.equal(res.status, 404, `${target}: no route`);
  }
  t.equal((await request(gw, { method: 'GET', target: '/api/v2/spec' })).status, 200, 'public routes stay');
  t.equal(service.seen.length, 2);
});
