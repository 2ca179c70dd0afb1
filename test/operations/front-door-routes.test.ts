/**
 * The front door's route table (contract §11) through the real gateway and a fake service: each row
 * of the service's own table, the spellings that decode or clean to a route, and what stays 404.
 */
import t from 'tap';
import { call, rawRequest, request, startGateway, TOKENS } from '../helpers/gateway.js';
import { frontDoor, lineOf } from '../helpers/front-door.js';
import { metricsText, metric } from '../helpers/metrics.js';
import { until } from '../helpers/wait.js';

/** Public requests of each row: method, target, route. */
const PUBLIC: Array<[string, string, string]> = [
  ['POST', '/api/v2/login', 'login'],
  ['POST', '/api/v2/logout', 'sso'],
  ['GET', '/api/v2/saml/sso', 'sso'],
  ['GET', '/api/v2/sso-providers', 'sso'],
  ['GET', '/api/v2/login/saml/okta', 'sso'],
  ['POST', '/api/v2/login/saml/okta/acs', 'sso'],
  ['GET', '/api/v2/sso/okta/login', 'sso'],
  ['GET', '/api/v2/sso/okta/callback?code=one-time&state=s', 'sso'],
  ['POST', '/api/v2/sso/okta/callback', 'sso'],
  ['GET', '/api/v2/sso/okta/metadata', 'sso'],
  ['GET', '/api/v2/swagger', 'spec'],
  ['GET', '/api/v2/swagger/index.html', 'spec'],
  ['GET', '/api/v2/spec', 'spec'],
  ['GET', '/', 'ui'],
  ['GET', '/ui', 'ui'],
  ['HEAD', '/ui', 'ui'],
  ['GET', '/ui/', 'ui'],
  ['GET', '/ui/assets/app.js?v=3', 'ui'],
];

/** Requests of rows that need credentials: method, target, route. */
const GUARDED: Array<[string, string, string]> = [
  ['GET', '/api/version', 'version'],
  ['POST', '/api/v2/file-upload/12', 'upload'],
  ['GET', '/api/v2/self', 'passthrough'],
  // The list is public; one provider is not.
  ['GET', '/api/v2/sso-providers/1', 'passthrough'],
  // login is a POST; other methods of its path are the service's authenticated API.
  ['GET', '/api/v2/login', 'passthrough'],
  ['POST', '/api/v2/login/', 'passthrough'],
  ['GET', '/api/v2/sso/okta/login/x', 'passthrough'],
  ['GET', '/api/v2/login/saml/', 'passthrough'],
  ['GET', '/api/v2', 'passthrough'],
];

/** Paths no route serves. */
const NOWHERE: Array<[string, string]> = [
  ['GET', '/metrics'],
  ['GET', '/uix'],
  ['HEAD', '/'],
  ['POST', '/ui/x'],
  ['HEAD', '/api/version'],
  ['GET', '/api/version/'],
  ['GET', '/api/v1/self'],
  ['TRACE', '/ui/'],
];

t.test('every public route of the service is forwarded without credentials', async (t) => {
  const { gw, service } = await frontDoor(t);
  for (const [method, target, route] of PUBLIC) {
    const before = service.seen.length;
    const res = await request(gw, { method, target, body: method === 'POST' ? '{"a":1}' : undefined });
    t.equal(res.status, 200, `${method} ${target}`);
    t.equal(service.seen.length, before + 1, `${method} ${target} reached the service`);
    const seen = service.seen.at(-1);
    t.equal(seen?.method, method);
    t.equal(seen?.url, target, 'the raw target goes out byte for byte');
    if (method === 'POST') t.equal(seen?.body.toString(), '{"a":1}', 'the body as sent');
    const line = await lineOf(gw, res);
    t.equal(line.route, route, `${method} ${target} is the ${route} route`);
    t.equal(line.operation, 'public');
    t.equal(line.auth_scheme, undefined, 'nothing was authenticated');
  }
});

t.test(
  'the routes that need credentials are refused without them, and nothing reaches the service',
  async (t) => {
    const { gw, service } = await frontDoor(t);
    for (const [method, target, route] of GUARDED) {
      const res = await request(gw, { method, target });
      t.equal(res.status, 401, `${method} ${target}`);
      t.equal(res.json().errors[0].message, 'not authenticated');
      const line = await lineOf(gw, res);
      t.equal(line.route, route, `${method} ${target} is the ${route} route`);
      t.equal(line.operation, 'passthrough');
    }
    t.equal(service.seen.length, 0);
  },
);

t.test('anything else is 404 resource not found, without a route', async (t) => {
  const { gw, service } = await frontDoor(t);
  for (const [method, target] of NOWHERE) {
    const res = await call(gw, { method, target });
    t.equal(res.status, 404, `${method} ${target}`);
    if (method !== 'HEAD') t.equal(res.json().errors[0].message, 'resource not found');
    const line = await lineOf(gw, res);
    t.equal(line.route, undefined);
    t.equal(line.operation, 'unmatched');
  }
  t.equal(service.seen.length, 0);
});

t.test('without pass-through there is no front door: public paths are 404, operations 405', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  for (const [method, target] of [
    ['POST', '/api/v2/login'],
    ['GET', '/ui/'],
    ['GET', '/api/version'],
  ] as const) {
    t.equal((await request(gw, { method, target })).status, 404, `${method} ${target}`);
  }
  const other = await call(gw, { method: 'DELETE', target: '/api/v2/sso-providers/1' });
  t.equal(other.status, 405);
  t.equal(other.headers.allow, 'PATCH');
});

t.test('an encoded spelling of a route is that route; of an operation, never public', async (t) => {
  const { gw, service } = await frontDoor(t, {
    gateway: {
      routes: [{ name: 'sso-read', prefix: '/api/v2/sso-providers/', methods: ['GET'], auth: 'none' }],
    },
  });
  const login = await request(gw, { method: 'POST', target: '/api/v2/%6cogin', body: '{}' });
  t.equal(login.status, 200);
  t.equal((await lineOf(gw, login)).route, 'login');
  t.equal(service.seen.at(-1)?.url, '/api/v2/%6cogin', 'forwarded as sent');
  const ui = await request(gw, { method: 'GET', target: '/%75i/app%2Ejs' });
  t.equal(ui.status, 200);
  t.equal((await lineOf(gw, ui)).route, 'ui');
  const listed = await request(gw, { method: 'GET', target: '/api/v2/sso%2Dproviders/1' });
  t.equal(listed.status, 200, "the operator's public GET, encoded");
  t.equal((await lineOf(gw, listed)).route, 'sso-read');

  const seen = service.seen.length;
  // The operations, however spelt, ask for credentials and never reach the service.
  for (const [method, target] of [
    ['PATCH', '/api/v2/sso%2Dproviders/1'],
    ['PATCH', '/api/v2/%73so-providers/%31'],
    ['GET', '/api/v2/asset-group-tags/1/members/%31%30%31'],
    ['GET', '/api/v2/%63ollectors/sharphound/latest/checksum'],
  ]) {
    const res = await request(gw, { method: method as string, target: target as string });
    t.equal(res.status, 401, `${method} ${target}`);
    const line = await lineOf(gw, res);
    t.not(line.operation, 'public');
    t.not(line.operation, 'passthrough');
  }
  t.equal(service.seen.length, seen);
  const member = await call(gw, { method: 'GET', target: '/api/v2/asset-group-tags/1/members/%31%30%31' });
  t.equal(member.status, 200, 'the operation, answered by the gateway');
  t.equal(service.seen.length, seen);
});

t.test('`//` and dot segments get the 301 to the cleaned path before any route', async (t) => {
  const { gw, service } = await frontDoor(t);
  const cases: Array<[string, string]> = [
    ['/ui/../api/v2/self', '/api/v2/self'],
    ['/ui/%2e%2e/api/v2/self?x=1', '/api/v2/self?x=1'],
    ['//ui/app.js', '/ui/app.js'],
    ['/api/v2/./login', '/api/v2/login'],
    ['/api/v2/sso/okta/callback/../../../sso-providers/1', '/api/v2/sso-providers/1'],
  ];
  for (const [target, location] of cases) {
    const raw = await rawRequest(
      gw,
      `POST ${target} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
    );
    t.match(raw, /^HTTP\/1\.1 301 /, target);
    t.match(raw, new RegExp(`\\r\\nLocation: ${location.replace(/[?.]/g, '\\$&')}\\r\\n`, 'i'), target);
  }
  t.match(
    await rawRequest(gw, 'GET /ui/../../etc HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    /^HTTP\/1\.1 400 /,
    'climbing above the root is refused',
  );
  t.match(
    await rawRequest(gw, 'GET /ui/a%2Fb HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    /^HTTP\/1\.1 400 /,
    'an encoded slash is refused before routing',
  );
  t.equal(service.seen.length, 0);
});

t.test('a public request still obeys the body limit and the address limit', async (t) => {
  const { gw, service } = await frontDoor(t, {
    gateway: {
      server: { max_body_size: 64 },
      rate_limits: { unauthenticated: { limit: 2, window: '60s' } },
    },
  });
  const big = await request(gw, { method: 'POST', target: '/api/v2/logout', body: 'x'.repeat(65) });
  t.equal(big.status, 413);
  const chunked = await rawRequest(
    gw,
    `POST /api/v2/logout HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n41\r\n${'y'.repeat(65)}\r\n0\r\n\r\n`,
  );
  t.match(chunked, /^HTTP\/1\.1 413 /, 'a chunked body over the limit too');
  t.equal(service.seen.length, 0);
  // Two failed authentications put the address over its limit: public routes are refused too.
  for (let i = 0; i < 2; i++)
    t.equal((await request(gw, { method: 'GET', target: '/api/v2/self' })).status, 401);
  const refused = await request(gw, { method: 'GET', target: '/ui/' });
  t.equal(refused.status, 429);
  t.ok(refused.headers['retry-after']);
  t.equal(service.seen.length, 0);
});

t.test('metrics: public requests as operation="public", every routed request by route', async (t) => {
  const { gw } = await frontDoor(t);
  await request(gw, { method: 'GET', target: '/ui/' });
  await request(gw, { method: 'GET', target: '/ui/x' });
  await request(gw, { method: 'GET', target: '/api/v2/self' });
  await call(gw, { method: 'GET', target: '/api/v2/asset-group-tags/1/members/101', token: TOKENS.reader });
  await request(gw, { method: 'GET', target: '/nowhere' });
  let text = '';
  await until('the requests are counted', async () => {
    text = await metricsText(gw.adminUrl);
    return metric(text, 'gateway_route_requests_total', { route: 'ui', code: '200' }) === 2;
  });
  t.equal(metric(text, 'gateway_requests_total', { operation: 'public', code: '200' }), 2);
  t.equal(metric(text, 'gateway_route_requests_total', { route: 'passthrough', code: '401' }), 1);
  t.equal(metric(text, 'gateway_route_requests_total', { route: 'GetAssetGroupTagMember', code: '200' }), 1);
  t.equal(
    metric(text, 'gateway_route_requests_total', { code: '404' }),
    undefined,
    'an unrouted 404 has no route',
  );
  t.equal(metric(text, 'gateway_client_aborts_total', { operation: 'public' }), 0, 'exported at 0');
});
