/**
 * Pass-through against a real stub service on port 0 that verifies the gateway's outgoing signature
 * on its own: what is forwarded, what stays the gateway's, and the faults.
 */
import t, { type Test } from 'tap';
import {
  call,
  errorOf,
  rawRequest,
  request,
  signed,
  startGateway,
  TOKENS,
  type TestGateway,
} from '../helpers/gateway.js';
import { startUpstream, UPSTREAM_TOKEN_ID } from '../helpers/upstream.js';
import { until } from '../helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';

async function setup(t: Test, over: Record<string, unknown> = {}, gateway: Record<string, unknown> = {}) {
  const stub = await startUpstream();
  const gw: TestGateway = await startGateway({
    ...gateway,
    passthrough: {
      url: stub.url,
      auth: { type: 'signature', token_id: UPSTREAM_TOKEN_ID, token_key: 'upstream-key' },
      ...over,
    },
  });
  t.teardown(async () => {
    await gw.close();
    await stub.close();
  });
  return { stub, gw };
}

t.test('another /api/v2 request goes to the service, re-signed, with the raw target', async (t) => {
  const { stub, gw } = await setup(t);
  stub.respond = (_req, res) => {
    res.writeHead(201, { 'Content-Type': 'application/json', RequestID: 'up-7', 'X-Custom': 'kept' });
    res.end('{"data":{"created":true}}');
  };
  const target = '/api/v2/saved-queries?skip=0&limit=%31';
  const body = '{"name":"q","query":"MATCH (n) RETURN n"}';
  const res = await call(gw, {
    method: 'POST',
    target,
    body,
    headers: {
      'Content-Type': 'application/json',
      'X-Gateway-Subject': 'forged',
      Connection: 'keep-alive, X-Hop',
      'X-Hop': 'secret-hop',
      'Keep-Alive': 'timeout=5',
    },
  });
  t.equal(res.status, 201);
  t.equal(res.body.toString(), '{"data":{"created":true}}');
  t.equal(res.headers['x-custom'], 'kept', 'the upstream’s headers come back');
  t.equal(res.headers['x-upstream-requestid'], 'up-7');
  t.match(res.headers.requestid, /^[0-9a-f-]{36}$/, 'our RequestID stays');

  const seen = stub.seen[0];
  t.equal(seen?.method, 'POST');
  t.equal(seen?.url, target, 'the target goes out byte for byte');
  t.equal(seen?.body.toString(), body);
  t.equal(seen?.headers['content-type'], 'application/json');
  t.equal(seen?.signatureValid, true, 'signed by the gateway over what went out');
  t.equal(seen?.headers.authorization, `bhesignature ${UPSTREAM_TOKEN_ID}`);
  t.equal(seen?.headers['x-gateway-subject'], 'admin');
  t.notOk(seen?.headers['x-hop'], 'a header named in Connection is not forwarded');
  t.notOk(seen?.headers['keep-alive']);
  t.equal(seen?.headers['x-forwarded-for'], '127.0.0.1');
  t.match(seen?.headers.prefer, /^wait=\d+$/);
  const line = gw.logs.find((l) => l.msg === 'request');
  t.equal(line?.operation, 'passthrough');
  t.equal(line?.upstream_request_id, 'up-7');
});

t.test('a known path with another method is forwarded instead of 405', async (t) => {
  const { stub, gw } = await setup(t);
  const res = await call(gw, { method: 'DELETE', target: '/api/v2/sso-providers/1' });
  t.equal(res.status, 200);
  t.equal(stub.seen[0]?.method, 'DELETE');
  t.equal(stub.seen[0]?.signatureValid, true);
});

t.test('the three operations stay the gateway’s', async (t) => {
  const { stub, gw } = await setup(t);
  const res = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(res.status, 200);
  t.equal(res.json().data.member.id, 101);
  t.equal(stub.seen.length, 0);
});

t.test('nothing unauthenticated, unauthorized or unsafe reaches the service', async (t) => {
  const { stub, gw } = await setup(t);
  t.equal((await request(gw, { method: 'GET', target: '/api/v2/self' })).status, 401);
  const reader = await call(gw, { method: 'GET', target: '/api/v2/self', token: TOKENS.reader });
  t.equal(reader.status, 403, 'the passthrough permission is needed');
  t.equal(errorOf(reader).message, 'not authorized');
  const bad = signed({ method: 'GET', target: '/api/v2/self' });
  const wrong = await request(gw, {
    method: 'GET',
    target: '/api/v2/self',
    headers: { ...bad, Signature: Buffer.alloc(32).toString('base64') },
  });
  t.equal(wrong.status, 401);
  const dots = await rawRequest(
    gw,
    'GET /api/v2/%2e%2e/admin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
  );
  t.match(dots, /^HTTP\/1\.1 301 [^]*\r\nLocation: \/api\/admin\r\n/, 'redirected, not forwarded');
  const above = await rawRequest(gw, 'GET /api/../../admin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  t.match(above, /^HTTP\/1\.1 400 /);
  const outside = await call(gw, { method: 'GET', target: '/metrics' });
  t.equal(outside.status, 404, 'only /api/v2 is forwarded');
  t.equal(stub.seen.length, 0);
});

t.test('an unreachable service is 502, a slow one 504 and aborted', async (t) => {
  const { stub, gw } = await setup(t);
  stub.respond = () => undefined;
  const slow = await call(gw, { method: 'GET', target: '/api/v2/self', headers: { Prefer: 'wait=1' } });
  t.equal(slow.status, 504);
  t.same(errorOf(slow), { status: 504, context: 'request', message: 'request timed out' });
  await until('the upstream request is aborted', () => stub.seen[0]?.aborted === true);
  t.equal(stub.seen[0]?.aborted, true, 'the upstream request was aborted');
  await stub.close();
  const down = await call(gw, { method: 'GET', target: '/api/v2/self' });
  t.equal(down.status, 502);
  t.same(errorOf(down), { status: 502, context: 'upstream', message: 'upstream service unavailable' });
  t.equal((await fetch(`${gw.adminUrl}/readyz`)).status, 503);
});

t.test('an upstream silent past headers_timeout is 504 upstream timed out', async (t) => {
  const { stub, gw } = await setup(t, { headers_timeout: '200ms' });
  stub.respond = () => undefined;
  const res = await call(gw, { method: 'GET', target: '/api/v2/self' });
  t.equal(res.status, 504);
  t.equal(errorOf(res).context, 'upstream');
});

t.test('connections to the service are kept alive and reused', async (t) => {
  const { stub, gw } = await setup(t);
  for (let i = 0; i < 5; i++)
    t.equal((await call(gw, { method: 'GET', target: '/api/v2/self' })).status, 200);
  t.equal(stub.connections(), 1);
  t.not(stub.seen[0]?.headers.connection, 'close');
});

t.test('bearer credentials replace the client’s signature headers', async (t) => {
  const { stub, gw } = await setup(t, { auth: { type: 'bearer', token: 'svc-token' } });
  await call(gw, { method: 'GET', target: '/api/v2/self' });
  t.equal(stub.seen[0]?.headers.authorization, 'Bearer svc-token');
  t.notOk(stub.seen[0]?.headers.signature);
  t.notOk(stub.seen[0]?.headers.requestdate);
});

t.test(
  'the answer keeps its headers but not the upstream’s connection ones; Connection: close is honoured',
  async (t) => {
    const { stub, gw } = await setup(t);
    stub.respond = (_req, res) => {
      res.writeHead(200, {
        'Content-Type': 'text/plain',
        Connection: 'keep-alive, X-Secret-Hop',
        'Keep-Alive': 'timeout=60',
        'X-Secret-Hop': 'zz',
        'Set-Cookie': ['a=1', 'b=2'],
        RequestID: 'up-1',
      });
      res.end('hello');
    };
    const auth = signed({ method: 'GET', target: '/api/v2/self' });
    const answer = await rawRequest(
      gw,
      `GET /api/v2/self HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: ${auth.Authorization}\r\n` +
        `RequestDate: ${auth.RequestDate}\r\nSignature: ${auth.Signature}\r\n\r\n`,
    );
    t.match(answer, /^HTTP\/1\.1 200 /);
    t.match(answer, /\r\nConnection: close\r\n/i, 'the client asked to close, and the connection closed');
    t.notMatch(answer, /keep-alive/i);
    t.notMatch(answer, /x-secret-hop/i);
    t.match(answer, /Set-Cookie: a=1\r\nSet-Cookie: b=2/);
    t.match(answer, /X-Upstream-RequestID: up-1/);
    t.match(answer, /\r\nhello\r\n/);
  },
);

t.test('an empty query, forwarding headers from an untrusted client, and TRACE', async (t) => {
  const { stub, gw } = await setup(t);
  const empty = await call(gw, { method: 'GET', target: '/api/v2/self?' });
  t.equal(empty.status, 200);
  t.equal(stub.seen[0]?.url, '/api/v2/self?', 'the raw target, even an empty query');
  t.equal(stub.seen[0]?.signatureValid, true);
  await call(gw, {
    method: 'GET',
    target: '/api/v2/self',
    headers: {
      Forwarded: 'for=1.2.3.4',
      'X-Forwarded-Port': '1',
      'X-Real-IP': '1.2.3.4',
      'X-Original-URL': '/admin',
    },
  });
  const seen = stub.seen[1]?.headers;
  t.notOk(seen?.forwarded);
  t.notOk(seen?.['x-forwarded-port']);
  t.notOk(seen?.['x-real-ip']);
  t.notOk(seen?.['x-original-url']);
  t.equal(seen?.['x-forwarded-for'], '127.0.0.1');
  t.equal(seen?.['x-forwarded-proto'], 'http', 'what the gateway saw');
  t.equal(seen?.['x-forwarded-host'], `127.0.0.1:${gw.port}`);
  const trace = await call(gw, { method: 'TRACE', target: '/api/v2/self' });
  t.equal(trace.status, 404, 'TRACE is never forwarded');
  t.equal(stub.seen.length, 2);
});

t.test(
  'behind a trusted proxy: X-Forwarded-* as the gateway computed them, other forwarding kept',
  async (t) => {
    const { stub, gw } = await setup(t, {}, { server: { trusted_proxies: ['127.0.0.1'] } });
    await call(gw, {
      method: 'GET',
      target: '/api/v2/self',
      headers: {
        'X-Forwarded-For': '198.51.100.1, 203.0.113.9',
        'X-Forwarded-Proto': 'https',
        'X-Forwarded-Host': 'bh.example.com',
        'X-Forwarded-Port': '443',
        Forwarded: 'for=203.0.113.9;proto=https',
      },
    });
    const seen = stub.seen[0]?.headers;
    t.equal(seen?.['x-forwarded-for'], '203.0.113.9', 'the client, and none of the hops nobody vouched for');
    t.equal(seen?.['x-forwarded-proto'], 'https', 'from the trusted proxy');
    t.equal(seen?.['x-forwarded-host'], 'bh.example.com');
    t.equal(seen?.['x-forwarded-port'], '443', 'kept: a trusted proxy set it');
    t.equal(seen?.forwarded, 'for=203.0.113.9;proto=https');
  },
);

t.test('a pause inside the body is bounded by body_timeout, not headers_timeout', async (t) => {
  // A pause twice headers_timeout (a loaded machine only makes it longer, never shorter), far
  // inside body_timeout.
  const { stub, gw } = await setup(t, { headers_timeout: '200ms', body_timeout: '10s' });
  stub.respond = (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.write('a');
    setTimeout(() => res.end('b'), 400);
  };
  const res = await call(gw, { method: 'GET', target: '/api/v2/self' });
  t.equal(res.status, 200);
  t.equal(res.body.toString(), 'ab');
});

t.test('garbage from the service is a 502 invalid answer', async (t) => {
  const { stub, gw } = await setup(t);
  stub.respond = (_req, res) => {
    res.socket?.end('NOT HTTP\r\n\r\n');
  };
  const res = await call(gw, { method: 'GET', target: '/api/v2/self' });
  t.equal(res.status, 502);
  t.equal(errorOf(res).message, 'upstream service sent an invalid answer');
});
