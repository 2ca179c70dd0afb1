import t from 'tap';
import {
  call,
  errorOf,
  nowDate,
  rawRequest,
  request,
  signed,
  startGateway,
  TOKENS,
} from '../helpers/gateway.js';
import { scrape } from '../helpers/metrics.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const CHECKSUM = '/api/v2/collectors/sharphound/latest/checksum';
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

t.test('every request', async (t) => {
  const gw = await startGateway({ prefer: { max_wait: 60 } });
  t.teardown(() => gw.close());

  t.test('a success carries a RequestID and the Prefer that applied', async (t) => {
    const res = await call(gw, { method: 'GET', target: MEMBER });
    t.equal(res.status, 200);
    t.match(res.headers.requestid, UUID_V4);
    t.equal(res.headers['preference-applied'], 'wait=30');
  });

  t.test('an error is the envelope with the same request id as the header', async (t) => {
    const res = await request(gw, { method: 'GET', target: '/api/v2/nope' });
    t.equal(res.status, 404);
    t.match(res.headers['content-type'], /^application\/json/);
    const body = res.json();
    t.same(Object.keys(body).sort(), ['errors', 'http_status', 'request_id', 'timestamp']);
    t.equal(body.http_status, 404);
    t.equal(body.request_id, res.headers.requestid);
    t.match(body.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+Z$/);
    t.same(body.errors, [{ context: 'path', message: 'resource not found' }]);
  });

  t.test('every request id is new', async (t) => {
    const a = await request(gw, { method: 'GET', target: '/x' });
    const b = await request(gw, { method: 'GET', target: '/x' });
    t.not(a.headers.requestid, b.headers.requestid);
  });

  t.test('a refusal before the Prefer stage still says which wait applied', async (t) => {
    const res = await request(gw, { method: 'GET', target: '/api/v2/nope', headers: { Prefer: 'wait=12' } });
    t.equal(res.status, 404);
    t.equal(res.headers['preference-applied'], 'wait=12');
    const bad = await request(gw, { method: 'GET', target: '/api/v2/nope', headers: { Prefer: 'soon' } });
    t.equal(bad.status, 404, 'routing is decided before Prefer is checked');
    t.notOk(bad.headers['preference-applied']);
  });

  t.test('a known path with another method is 405 with Allow', async (t) => {
    for (const [method, target, allow] of [
      ['POST', MEMBER, 'GET, HEAD'],
      ['DELETE', CHECKSUM, 'GET, HEAD'],
      ['GET', '/api/v2/sso-providers/1', 'PATCH'],
    ] as const) {
      const res = await request(gw, { method, target });
      t.equal(res.status, 405, `${method} ${target}`);
      t.equal(res.headers.allow, allow);
      t.equal(errorOf(res).status, 405);
    }
  });

  t.test('routing is exact: a trailing slash or another case is unknown', async (t) => {
    for (const target of [
      `${MEMBER}/`,
      '/api/v2/Asset-Group-Tags/1/members/101',
      '/api/v3/collectors/x/y/checksum',
      '/',
    ]) {
      const res = await request(gw, { method: 'GET', target });
      t.equal(res.status, 404, target);
    }
  });

  t.test('a path with // or a dot segment is answered 301 to its cleaned form', async (t) => {
    for (const [target, location] of [
      ['/api/v2/asset-group-tags/1/members/../members/101', MEMBER],
      ['/api/v2/asset-group-tags/1/./members/101', MEMBER],
      ['/api/v2/asset-group-tags/1/members/%2e%2E/members/101?a=1', `${MEMBER}?a=1`],
      ['/api/v2/asset-group-tags/1/members/%2E/101', MEMBER],
      ['/api/v2//asset-group-tags/1/members/101', MEMBER],
    ] as const) {
      const res = await call(gw, { method: 'GET', target });
      t.equal(res.status, 301, target);
      t.equal(res.headers.location, location, target);
      t.equal(res.body.length, 0);
    }
  });

  t.test('a target that could name another path is refused before routing', async (t) => {
    for (const target of [
      '/api/v2/asset-group-tags/1%2Fmembers/101',
      '/api/v2/asset-group-tags/1%5cmembers/101',
      '/api/v2/asset-group-tags\\1/members/101',
      '/api/v2/../../../x',
    ]) {
      const res = await call(gw, { method: 'GET', target });
      t.equal(res.status, 400, target);
      t.equal(errorOf(res).context, 'path');
    }
    const abs = await rawRequest(gw, `GET http://127.0.0.1:${gw.port}${MEMBER} HTTP/1.1\r\nHost: x\r\n\r\n`);
    t.match(abs, /^HTTP\/1\.1 400 /);
    t.match(abs, /"http_status":400/);
  });

  t.test('a query string does not change the route', async (t) => {
    const res = await call(gw, { method: 'GET', target: `${MEMBER}?a=1&b=%2F` });
    t.equal(res.status, 200);
  });

  t.test('HEAD gets the headers and no body', async (t) => {
    const res = await call(gw, { method: 'HEAD', target: MEMBER });
    t.equal(res.status, 200);
    t.equal(res.body.length, 0);
    t.ok(Number(res.headers['content-length']) > 0);
    const missing = await request(gw, { method: 'HEAD', target: '/api/v2/none' });
    t.equal(missing.status, 404);
    t.equal(missing.body.length, 0);
  });
});

t.test('Prefer', async (t) => {
  const gw = await startGateway({ prefer: { default_wait: 20, max_wait: 60 } });
  t.teardown(() => gw.close());
  const withPrefer = (prefer: string | string[]) =>
    call(gw, { method: 'GET', target: MEMBER, headers: { Prefer: prefer } });

  t.test('wait=N applies min(N, max_wait)', async (t) => {
    t.equal((await withPrefer('wait=10')).headers['preference-applied'], 'wait=10');
    t.equal((await withPrefer('wait=60')).headers['preference-applied'], 'wait=60');
    t.equal((await withPrefer('wait=61')).headers['preference-applied'], 'wait=60');
    t.equal((await withPrefer('wait=99999999999999999999999')).headers['preference-applied'], 'wait=60');
  });

  t.test('absent and wait=0 mean the default', async (t) => {
    t.equal((await call(gw, { method: 'GET', target: MEMBER })).headers['preference-applied'], 'wait=20');
    t.equal((await withPrefer('wait=0')).headers['preference-applied'], 'wait=20');
    t.equal((await withPrefer('wait=000')).headers['preference-applied'], 'wait=20');
  });

  t.test('a value outside the pattern is 400 with the value in the message', async (t) => {
    for (const value of [
      'wait=abc',
      'respond-async, wait=10',
      'wait=-2',
      'wait= 5',
      'Wait=5',
      'wait=1.5',
      '',
    ]) {
      const res = await withPrefer(value);
      t.equal(res.status, 400, JSON.stringify(value));
      t.same(errorOf(res), {
        status: 400,
        context: 'header:Prefer',
        message: `Prefer header has an invalid value: ${value}`,
      });
      t.notOk(res.headers['preference-applied']);
    }
  });

  t.test('wait=-1 is refused while bypass is disabled', async (t) => {
    const res = await withPrefer('wait=-1');
    t.equal(res.status, 400);
    t.equal(
      errorOf(res).message,
      'Prefer header has an invalid value: failed to bypass limits: feature disabled',
    );
  });

  t.test('two Prefer headers are 400', async (t) => {
    const res = await withPrefer(['wait=1', 'wait=2']);
    t.equal(res.status, 400);
    t.equal(errorOf(res).context, 'header:Prefer');
  });

  t.test('Prefer is checked before authentication', async (t) => {
    const res = await request(gw, { method: 'GET', target: MEMBER, headers: { Prefer: 'nope' } });
    t.equal(res.status, 400);
    t.equal(errorOf(res).context, 'header:Prefer');
  });
});

t.test('wait=-1 with bypass allowed removes the deadline', async (t) => {
  const gw = await startGateway({ prefer: { allow_bypass: true } });
  t.teardown(() => gw.close());
  const res = await call(gw, { method: 'GET', target: MEMBER, headers: { Prefer: 'wait=-1' } });
  t.equal(res.status, 200);
  t.equal(res.headers['preference-applied'], 'wait=-1');
});

t.test('the deadline covers reading the body: a slow upload gets 504', async (t) => {
  const gw = await startGateway({
    prefer: { default_wait: 1, max_wait: 1 },
    server: { body_idle_timeout: '10s' },
  });
  t.teardown(() => gw.close());
  const target = '/api/v2/sso-providers/1';
  const auth = signed({ method: 'PATCH', target, body: 'x'.repeat(10) });
  const head =
    `PATCH ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth.Authorization}\r\nRequestDate: ${auth.RequestDate}\r\n` +
    `Signature: ${auth.Signature}\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 10\r\n\r\nxxx`;
  const started = Date.now();
  const answer = await rawRequest(gw, head, 5000);
  t.match(answer, /^HTTP\/1\.1 504 /);
  t.match(answer, /"message":"request timed out"/);
  t.ok(Date.now() - started < 4000, 'answered when the deadline fired');
  const line = gw.logs.find((l) => l.msg === 'request' && l.status === 504);
  t.equal(line?.operation, 'UpdateSSOProvider');
  t.equal(
    await scrape(gw.adminUrl, 'gateway_deadline_exceeded_total', { operation: 'UpdateSSOProvider' }),
    1,
  );
});

t.test('limits and parser errors get the envelope', async (t) => {
  const gw = await startGateway({
    server: { max_header_size: 2048, headers_timeout: '300ms', body_idle_timeout: '300ms' },
  });
  t.teardown(() => gw.close());

  t.test('headers over the limit: 431', async (t) => {
    const answer = await rawRequest(
      gw,
      `GET ${MEMBER} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(4096)}\r\n\r\n`,
    );
    t.match(answer, /^HTTP\/1\.1 431 /);
    t.match(answer, /RequestID: [0-9a-f-]{36}/);
    t.match(answer, /"http_status":431/);
  });

  t.test('a malformed request line: 400 envelope', async (t) => {
    const answer = await rawRequest(gw, 'GARBAGE\r\n\r\n');
    t.match(answer, /^HTTP\/1\.1 400 /);
    t.match(answer, /"http_status":400/);
  });

  t.test('headers that never finish: 408', async (t) => {
    const answer = await rawRequest(gw, `GET ${MEMBER} HTTP/1.1\r\nHost: x\r\n`, 3000);
    t.match(answer, /^HTTP\/1\.1 408 /);
    t.match(answer, /"http_status":408/);
    t.match(answer, /"message":"request headers were not received in time"/);
  });

  t.test('a stalled upload: 408', async (t) => {
    const target = '/api/v2/sso-providers/1';
    const auth = signed({ method: 'PATCH', target, body: 'x'.repeat(100) });
    const answer = await rawRequest(
      gw,
      `PATCH ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth.Authorization}\r\nRequestDate: ${auth.RequestDate}\r\n` +
        `Signature: ${auth.Signature}\r\nContent-Length: 100\r\n\r\nxxxx`,
      3000,
    );
    t.match(answer, /^HTTP\/1\.1 408 /);
    t.match(answer, /Connection: close/i);
  });

  t.test('CONNECT gets a 400 envelope, not a silent close', async (t) => {
    const answer = await rawRequest(gw, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    t.match(answer, /^HTTP\/1\.1 400 /);
    t.match(answer, /"context":"path"/);
  });

  t.test('an HTTP/1.1 request without Host: 400 envelope; HTTP/1.0 needs none', async (t) => {
    const answer = await rawRequest(gw, `GET ${MEMBER} HTTP/1.1\r\n\r\n`);
    t.match(answer, /^HTTP\/1\.1 400 /);
    t.match(answer, /"context":"header:Host"/);
    const old = await rawRequest(gw, `GET ${MEMBER} HTTP/1.0\r\n\r\n`);
    t.match(old, /^HTTP\/1\.1 401 /);
  });

  t.test('an Expect other than 100-continue: 417 envelope, after routing', async (t) => {
    const res = await request(gw, { method: 'GET', target: MEMBER, headers: { Expect: 'teapot' } });
    t.equal(res.status, 417);
    t.same(errorOf(res), {
      status: 417,
      context: 'header:Expect',
      message: 'only "Expect: 100-continue" is supported',
    });
    t.match(res.headers.requestid, UUID_V4);
    const unknown = await request(gw, {
      method: 'GET',
      target: '/api/v2/nope',
      headers: { Expect: 'teapot' },
    });
    t.equal(unknown.status, 404, 'the route is decided first');
    const dots = await request(gw, { method: 'GET', target: '/api/v2/../x', headers: { Expect: 'teapot' } });
    t.equal(dots.status, 301, 'the raw target is checked first');
    const outside = await request(gw, { method: 'GET', target: '/../x', headers: { Expect: 'teapot' } });
    t.equal(outside.status, 400, 'the raw target is checked first');
  });

  t.test('a request pipelined before garbage is answered first', async (t) => {
    const auth = signed({ method: 'GET', target: MEMBER });
    const answer = await rawRequest(
      gw,
      `GET ${MEMBER} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth.Authorization}\r\nRequestDate: ${auth.RequestDate}\r\n` +
        `Signature: ${auth.Signature}\r\n\r\nGARBAGE\r\n\r\n`,
    );
    t.match(answer, /^HTTP\/1\.1 200 [\s\S]*HTTP\/1\.1 400 /);
  });

  t.test('a client that half-closes after its request still gets the answer', async (t) => {
    const { connect } = await import('node:net');
    // A checksum not read yet: the answer needs file I/O, so the client's FIN arrives before it.
    const target = '/api/v2/collectors/azurehound/v2.8.1/checksum';
    const auth = signed({ method: 'GET', target });
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(gw.port, '127.0.0.1');
      const chunks: Buffer[] = [];
      socket.on('data', (c) => chunks.push(c));
      socket.on('error', reject);
      socket.on('close', () => resolve(Buffer.concat(chunks).toString()));
      socket.end(
        `GET ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth.Authorization}\r\n` +
          `RequestDate: ${auth.RequestDate}\r\nSignature: ${auth.Signature}\r\n\r\n`,
      );
    });
    // Interim `102 Processing` answers may come first: they tell a half-closed client from a gone one.
    t.match(answer, /^(HTTP\/1\.1 102 Processing\r\n\r\n)*HTTP\/1\.1 200 /);
    t.match(answer, /azurehound-v2\.8\.1\.zip/);
  });

  t.test('the process is still serving after all of that', async (t) => {
    t.equal((await call(gw, { method: 'GET', target: MEMBER })).status, 200);
  });
});

t.test('duplicated authentication headers are 400', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  const auth = signed({ method: 'GET', target: MEMBER });
  for (const name of ['Authorization', 'RequestDate', 'Signature'] as const) {
    const headers: Record<string, string | string[]> = {
      ...auth,
      [name]: [auth[name] as string, auth[name] as string],
    };
    const res = await request(gw, { method: 'GET', target: MEMBER, headers });
    t.equal(res.status, 400, name);
    t.equal(errorOf(res).context, `header:${name}`);
  }
  // Several repeated at once (read in one pass): the first in the contract's order is named, wherever
  // it stands in the request; names match in any case, and an empty first value is still a first.
  const both = await request(gw, {
    method: 'GET',
    target: MEMBER,
    headers: {
      signature: [auth.Signature as string, auth.Signature as string],
      REQUESTDATE: [auth.RequestDate as string, auth.RequestDate as string],
      authorization: auth.Authorization as string,
    },
  });
  t.equal(both.status, 400);
  t.equal(errorOf(both).context, 'header:RequestDate');
  const emptyFirst = await request(gw, {
    method: 'GET',
    target: MEMBER,
    headers: { ...auth, Signature: ['', auth.Signature as string] },
  });
  t.equal(emptyFirst.status, 400);
  t.equal(errorOf(emptyFirst).context, 'header:Signature');
  const prefer = await request(gw, {
    method: 'GET',
    target: MEMBER,
    headers: { ...auth, PREFER: ['wait=5', 'wait=6'] },
  });
  t.equal(prefer.status, 400);
  t.equal(errorOf(prefer).context, 'header:Prefer');
  const mixedCase = await request(gw, {
    method: 'GET',
    target: MEMBER,
    headers: {
      aUtHoRiZaTiOn: auth.Authorization as string,
      requestdate: auth.RequestDate as string,
      SIGNATURE: auth.Signature as string,
    },
  });
  t.equal(mixedCase.status, 200, 'names in any case are the headers');
});

t.test('request log lines', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  const target = `${MEMBER}?secret-query=1`;
  const res = await call(gw, {
    method: 'GET',
    target,
    token: TOKENS.reader,
    headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
  });
  t.equal(res.status, 200);
  const line = gw.logs.find((l) => l.msg === 'request' && l.request_id === res.headers.requestid);
  t.ok(line, 'one line for the request');
  t.match(line, {
    operation: 'GetAssetGroupTagMember',
    method: 'GET',
    path: MEMBER,
    status: 200,
    auth_scheme: 'signature',
    subject: 'reader',
    token_id: TOKENS.reader.id,
    traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  });
  t.type(line?.duration_ms, 'number');
  const all = JSON.stringify(gw.logs);
  t.notMatch(all, 'secret-query', 'no query string in logs');
  t.notMatch(all, TOKENS.reader.key, 'no token key in logs');
  t.equal(gw.logs.filter((l) => l.request_id === res.headers.requestid).length, 1);
  t.ok(nowDate());
});

t.test('the client address: the rightmost X-Forwarded-For hop that is not a trusted proxy', async (t) => {
  const forwarded = '198.51.100.1, 203.0.113.9, 10.0.0.1';
  for (const [server, client] of [
    [{}, '127.0.0.1'],
    // The peer is trusted, and so is 10.0.0.1 (an inner proxy): 203.0.113.9 is the client. The
    // leftmost hop is whatever the client itself wrote, and is never taken.
    [{ trusted_proxies: ['127.0.0.1', '10.0.0.0/8'] }, '203.0.113.9'],
    [{ trusted_proxies: ['loopback'] }, '10.0.0.1'],
    [{ trusted_proxies: ['192.0.2.0/24'] }, '127.0.0.1'],
    [{ trust_proxy: true }, '198.51.100.1'],
  ] as const) {
    const gw = await startGateway({ server });
    const res = await call(gw, { method: 'GET', target: MEMBER, headers: { 'X-Forwarded-For': forwarded } });
    const line = gw.logs.find((l) => l.request_id === res.headers.requestid);
    t.equal(line?.client, client, JSON.stringify(server));
    if ('trust_proxy' in server) {
      t.ok(
        gw.logs.some((l) => l.level === 'warn' && /trusted_proxies/.test(String(l.warning))),
        'trust_proxy: true is warned about',
      );
    }
    await gw.close();
  }
});

t.test('Expect: 100-continue is answered only once the request is authenticated', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  const { request: httpRequest } = await import('node:http');
  const target = '/api/v2/sso-providers/1';
  const form = '--b\r\nContent-Disposition: form-data; name="name"\r\n\r\nViaContinue\r\n--b--\r\n';
  const attempt = (headers: Record<string, string>) =>
    new Promise<{ continued: boolean; status: number }>((resolve, reject) => {
      let continued = false;
      const req = httpRequest(
        {
          port: gw.port,
          host: '127.0.0.1',
          method: 'PATCH',
          path: target,
          agent: false,
          headers: {
            ...headers,
            Expect: '100-continue',
            'Content-Type': 'multipart/form-data; boundary=b',
            'Content-Length': String(Buffer.byteLength(form)),
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ continued, status: res.statusCode ?? 0 }));
        },
      );
      req.on('continue', () => {
        continued = true;
        req.end(form);
      });
      req.on('error', reject);
      req.flushHeaders();
    });
  t.same(await attempt({}), { continued: false, status: 401 }, 'refused before the upload');
  t.same(await attempt(signed({ method: 'PATCH', target, body: form })), { continued: true, status: 200 });
});
