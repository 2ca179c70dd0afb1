/**
 * The security property of the front door (contract §11): a public request carries no credential of
 * the gateway's, whatever pass-through's `auth` type; the client's own credentials and cookies go
 * through as sent, `X-Gateway-Subject` is removed, the service's answer comes back as sent, and a
 * public request is never sent twice.
 */
import t from 'tap';
import { call, request, signed, startGateway, TOKENS } from '../helpers/gateway.js';
import { AUTH_TYPES, type AuthType, frontDoor } from '../helpers/front-door.js';
import { startUpstream, UPSTREAM_TOKEN_ID } from '../helpers/upstream.js';

const GATEWAY_CREDENTIALS = [`bhesignature ${UPSTREAM_TOKEN_ID}`, 'Bearer gateway-service-token'];

for (const auth of Object.keys(AUTH_TYPES) as AuthType[]) {
  t.test(`auth ${auth}: a public request carries the client's credentials only`, async (t) => {
    const { gw, service } = await frontDoor(t, { auth });
    service.respond = (_req, res) => {
      res.writeHead(302, [
        'Location',
        'https://idp.example/authorize?state=abc',
        'Set-Cookie',
        'token=session-1; Path=/; HttpOnly',
        'Set-Cookie',
        'csrf=2; Path=/',
        'RequestID',
        'svc-1',
        'RateLimit',
        '"svc";r=9;t=1',
        'Content-Type',
        'text/html',
      ]);
      res.end('<a href="https://idp.example">moved</a>');
    };
    const own = signed({ method: 'GET', target: '/api/v2/sso/okta/login', token: TOKENS.reader });
    const res = await request(gw, {
      method: 'GET',
      target: '/api/v2/sso/okta/login',
      headers: {
        ...own,
        Cookie: 'token=old; other=1',
        'X-Gateway-Subject': 'forged-admin',
        'X-Forwarded-For': '10.9.9.9',
      },
    });
    t.equal(res.status, 302, 'the status as sent');
    t.equal(res.headers.location, 'https://idp.example/authorize?state=abc');
    t.same(res.headers['set-cookie'], ['token=session-1; Path=/; HttpOnly', 'csrf=2; Path=/']);
    t.equal(res.body.toString(), '<a href="https://idp.example">moved</a>');
    t.match(res.headers.requestid, /^[0-9a-f-]{36}$/, 'our RequestID');
    t.equal(res.headers['x-upstream-requestid'], 'svc-1');
    t.equal(res.headers['preference-applied'], 'wait=30');
    t.equal(res.headers.ratelimit, '"svc";r=9;t=1', "no route limit here: the service's own header stays");
    t.notOk(res.headers['ratelimit-policy']);

    const seen = service.seen[0];
    t.equal(seen?.headers.authorization, own.Authorization, "the client's Authorization as sent");
    t.equal(seen?.headers.requestdate, own.RequestDate);
    t.equal(seen?.headers.signature, own.Signature);
    t.equal(seen?.headers.cookie, 'token=old; other=1');
    t.notOk(seen?.headers['x-gateway-subject'], 'no subject: nobody was authenticated');
    t.equal(seen?.headers['x-forwarded-for'], '127.0.0.1', 'the address as the gateway computed it');
    t.match(seen?.headers.prefer, /^wait=\d+$/);
    t.equal(seen?.headers['x-request-id'], res.headers.requestid);

    // Without credentials of its own, the client's request goes out with none at all.
    const bare = await request(gw, { method: 'POST', target: '/api/v2/login', body: '{"secret":"pw"}' });
    t.equal(bare.status, 302);
    const out = service.seen[1];
    t.equal(out?.body.toString(), '{"secret":"pw"}');
    for (const name of ['authorization', 'requestdate', 'signature', 'x-gateway-subject']) {
      t.notOk(out?.headers[name], `no ${name}`);
    }
    for (const s of service.seen) {
      t.notOk(
        GATEWAY_CREDENTIALS.includes(String(s.headers.authorization)),
        'never the gateway’s credential',
      );
    }
  });

  t.test(
    `auth ${auth}: an authenticated request is still forwarded as pass-through forwards it`,
    async (t) => {
      const { gw, service } = await frontDoor(t, { auth });
      const res = await call(gw, { method: 'GET', target: '/api/v2/self' });
      t.equal(res.status, 200);
      const seen = service.seen[0];
      t.equal(seen?.headers['x-gateway-subject'], 'admin');
      if (auth === 'signature') t.equal(seen?.signatureValid, true, "the gateway's own signature");
      if (auth === 'bearer') t.equal(seen?.headers.authorization, 'Bearer gateway-service-token');
      if (auth === 'client') t.equal(seen?.headers.authorization, `bhesignature ${TOKENS.admin.id}`);
    },
  );
}

t.test('headers a Connection header names stay on their hop, both ways', async (t) => {
  const { gw, service } = await frontDoor(t, { auth: 'client' });
  service.respond = (_req, res) => {
    res.writeHead(200, ['Connection', 'keep-alive, X-Answer-Hop', 'X-Answer-Hop', 'svc', 'X-Kept', 'yes']);
    res.end('{}');
  };
  const res = await request(gw, {
    method: 'GET',
    target: '/api/v2/spec',
    headers: { Connection: 'keep-alive, X-Hop', 'X-Hop': 'client', 'X-Other': 'on' },
  });
  t.equal(res.status, 200);
  t.notOk(res.headers['x-answer-hop'], "the answer's named header is dropped");
  t.equal(res.headers['x-kept'], 'yes');
  const seen = service.seen[0];
  t.notOk(seen?.headers['x-hop'], "the request's named header is dropped");
  t.equal(seen?.headers['x-other'], 'on');
});

t.test('a public request that failed once a byte of it was written is not sent again', async (t) => {
  // Two replicas of the service that cut every request they read; retries on: a GET that failed
  // would go to the other one.
  const replicas = [await startUpstream(), await startUpstream()];
  for (const replica of replicas) replica.respond = (_req, res) => void res.socket?.destroy();
  const gw = await startGateway({
    passthrough: {
      targets: replicas.map((r) => r.url),
      auth: AUTH_TYPES.client,
      retries: { attempts: 2, budget: '100%' },
    },
  });
  t.teardown(async () => {
    await gw.close();
    for (const replica of replicas) await replica.close();
  });
  const seen = () => replicas.reduce((n, r) => n + r.seen.length, 0);
  const res = await request(gw, { method: 'GET', target: '/api/v2/sso/okta/callback?code=one-time' });
  t.equal(res.status, 502);
  t.equal(res.json().errors[0].context, 'upstream');
  t.equal(seen(), 1, 'the one-time code went out once');
  // An authenticated GET is sent again to the other replica (the retry rule of contract §5).
  const again = await call(gw, { method: 'GET', target: '/api/v2/self' });
  t.equal(again.status, 502);
  t.equal(seen(), 3, 'the authenticated GET was tried on both replicas');
});
