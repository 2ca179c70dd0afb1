import { randomUUID } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { Readable } from 'node:stream';
import { SignJWT } from 'jose';
import t, { type Test } from 'tap';
import { createAuthenticate } from '../../src/auth/authenticate.js';
import { parseConfig } from '../../src/config/load.js';
import { createMetrics } from '../../src/observability/metrics.js';
import {
  errorOf,
  JWT_SECRET,
  multipart,
  rawRequest,
  request,
  signed,
  startGateway,
  type TestGateway,
  TOKENS,
} from '../helpers/gateway.js';
import { metric, metricsText } from '../helpers/metrics.js';
import { until } from '../helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const PATCH = '/api/v2/sso-providers/1';
const PREFIX = 'unable to validate request signature for client: ';

function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

async function jwt(claims: Record<string, unknown>, opts: { secret?: Buffer; alg?: string } = {}) {
  return new SignJWT({ exp: Math.floor(Date.now() / 1000) + 300, ...claims })
    .setProtectedHeader({ alg: opts.alg ?? 'HS256' })
    .sign(opts.secret ?? Buffer.from(JWT_SECRET, 'base64'));
}

/** Every secret the tests sent, to be searched for in the logs at the end. */
const sent: string[] = [];

async function refused(
  t: Test,
  gw: TestGateway,
  headers: Record<string, string>,
  want: { status: number; context: string; message: string | RegExp },
  opts: { method?: string; target?: string; body?: string } = {},
) {
  // Only values long enough that they cannot turn up in a log line by chance (a request id's hex).
  for (const value of [headers.Signature, headers.Authorization])
    if (value && value.length >= 16) sent.push(value);
  const res = await request(gw, {
    method: opts.method ?? 'GET',
    target: opts.target ?? MEMBER,
    headers,
    body: opts.body,
  });
  t.equal(res.status, want.status, String(want.message));
  t.match(errorOf(res), want, String(want.message));
  return res;
}

t.test('authentication through the front door', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  const good = () => signed({ method: 'GET', target: MEMBER });

  t.test('a signed request gets through, whatever the case of the scheme word', async (t) => {
    for (const scheme of ['bhesignature', 'BHESignature']) {
      const h = good();
      h.Authorization = `${scheme} ${TOKENS.reader.id.toUpperCase()}`;
      h.Signature = signed({
        method: 'GET',
        target: MEMBER,
        token: TOKENS.reader,
        date: h.RequestDate,
      }).Signature;
      const res = await request(gw, { method: 'GET', target: MEMBER, headers: h });
      t.equal(res.status, 200, scheme);
    }
  });

  t.test('a token id in any form the reference reads as a UUID finds the token', async (t) => {
    const hex = TOKENS.reader.id.replace(/-/g, '');
    for (const id of [
      hex,
      `{${TOKENS.reader.id}}`,
      `urn:uuid:${TOKENS.reader.id}`,
      `{${hex.toUpperCase()}}`,
    ]) {
      const h = signed({ method: 'GET', target: MEMBER, token: TOKENS.reader });
      h.Authorization = `bhesignature ${id}`;
      const res = await request(gw, { method: 'GET', target: MEMBER, headers: h });
      t.equal(res.status, 200, id);
    }
    for (const id of [`${TOKENS.reader.id}}`, `{${TOKENS.reader.id}`, `${hex}0`, 'urn:uuid:{x}']) {
      await refused(
        t,
        gw,
        { ...good(), Authorization: `bhesignature ${id}` },
        { status: 400, context: 'header:Authorization', message: 'Token ID is malformed.' },
      );
    }
  });

  t.test('each literal message of the contract, with its status and context', async (t) => {
    const auth = 'header:Authorization';
    await refused(t, gw, {}, { status: 401, context: auth, message: 'not authenticated' });
    const twoParts = 'Expected only two components for the Authorization header.';
    for (const value of ['bhesignature', `bhesignature  ${TOKENS.admin.id}`, 'Bearer a b']) {
      await refused(t, gw, { Authorization: value }, { status: 400, context: auth, message: twoParts });
    }
    await refused(
      t,
      gw,
      { Authorization: 'Basic dXNlcjpwYXNz' },
      {
        status: 400,
        context: auth,
        message: 'Unexpected authorization scheme: basic.',
      },
    );
    await refused(
      t,
      gw,
      { Authorization: 'c2VjcmV0LWtleS1wYXN0ZWQ= x' },
      {
        status: 400,
        context: auth,
        message: 'Unexpected authorization scheme: <not shown>.',
      },
    );
    await refused(
      t,
      gw,
      { ...good(), Authorization: 'bhesignature not-a-uuid' },
      {
        status: 400,
        context: auth,
        message: 'Token ID is malformed.',
      },
    );
    const { RequestDate: _date, ...noDate } = good();
    await refused(t, gw, noDate, {
      status: 400,
      context: 'header:RequestDate',
      message: `${PREFIX}no request date header`,
    });
    for (const date of ['2024-01-01', '2024-01-01T10:15:00', 'Mon, 01 Jan 2024 10:15:00 GMT']) {
      await refused(
        t,
        gw,
        { ...good(), RequestDate: date },
        {
          status: 400,
          context: 'header:RequestDate',
          message: new RegExp(`^${PREFIX}malformed request date: .+`),
        },
      );
    }
    const { Signature: _sig, ...noSig } = good();
    await refused(t, gw, noSig, {
      status: 400,
      context: 'header:Signature',
      message: `${PREFIX}no signature header`,
    });
    for (const sig of ['abc', 'AAAA', '!!!!']) {
      await refused(
        t,
        gw,
        { ...good(), Signature: sig },
        {
          status: 400,
          context: 'header:Signature',
          message: new RegExp(`^${PREFIX}malformed signature header: .+`),
        },
      );
    }
    await refused(
      t,
      gw,
      { ...good(), Authorization: `bhesignature ${randomUUID()}` },
      {
        status: 401,
        context: auth,
        message: `${PREFIX}resource not found`,
      },
    );
  });

  t.test('checks run in the contract order: a bad token id wins over a missing date', async (t) => {
    await refused(
      t,
      gw,
      { Authorization: 'bhesignature x' },
      { status: 400, context: 'header:Authorization', message: 'Token ID is malformed.' },
    );
    await refused(
      t,
      gw,
      { Authorization: `bhesignature ${randomUUID()}`, RequestDate: 'x' },
      {
        status: 400,
        context: 'header:RequestDate',
        message: /malformed request date/,
      },
    );
  });

  t.test('a request date two hours off is refused in both directions', async (t) => {
    for (const [offset, direction] of [
      [-2, 'behind'],
      [2, 'ahead'],
    ] as const) {
      const date = rfc3339(Date.now() + offset * 3_600_000);
      const headers = signed({ method: 'GET', target: MEMBER, date });
      await refused(t, gw, headers, {
        status: 401,
        context: 'header:RequestDate',
        message: new RegExp(
          `^${PREFIX}signature too far ${direction} by (59\\.9\\d|60\\.0\\d) minutes\\. Server time is \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ\\. Client time is ${date}$`,
        ),
      });
    }
  });

  t.test('a body changed after signing is a digest mismatch', async (t) => {
    const form = multipart([{ name: 'name', value: 'signed name' }]);
    const tampered = form.body.toString().replace('signed name', 'other name');
    const headers = {
      ...signed({ method: 'PATCH', target: PATCH, body: form.body }),
      'Content-Type': form.contentType,
    };
    await refused(
      t,
      gw,
      headers,
      {
        status: 401,
        context: 'header:Signature',
        message: `${PREFIX}digest validation failed: signature digest mismatch`,
      },
      { method: 'PATCH', target: PATCH, body: tampered },
    );
  });

  t.test('the query string is part of the signed target', async (t) => {
    const headers = signed({ method: 'GET', target: MEMBER });
    await refused(
      t,
      gw,
      headers,
      { status: 401, context: 'header:Signature', message: /digest mismatch/ },
      {
        target: `${MEMBER}?x=1`,
      },
    );
    const withQuery = signed({ method: 'GET', target: `${MEMBER}?x=1` });
    t.equal((await request(gw, { method: 'GET', target: `${MEMBER}?x=1`, headers: withQuery })).status, 200);
  });

  t.test('the method is part of the signature', async (t) => {
    const headers = signed({ method: 'GET', target: MEMBER });
    const res = await request(gw, { method: 'HEAD', target: MEMBER, headers });
    t.equal(res.status, 401, 'a GET signature does not sign a HEAD');
  });

  t.test('bearer tokens', async (t) => {
    const member = (token: string) =>
      request(gw, { method: 'GET', target: MEMBER, headers: { Authorization: `Bearer ${token}` } });
    const good = await jwt({ sub: 'alice', permissions: ['asset_group_tags:read'] });
    sent.push(good);
    const ok = await member(good);
    t.equal(ok.status, 200);
    t.equal(ok.json().data.member.id, 101);
    const failed = { status: 401, context: 'header:Authorization', message: 'Token Authorization failed.' };
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ exp: 9e9, permissions: ['*'] })).toString('base64url')}.`;
    const bad = [
      ['expired', await jwt({ exp: Math.floor(Date.now() / 1000) - 60, permissions: ['*'] })],
      ['alg none', none],
      [
        'wrong secret',
        await jwt({ permissions: ['*'] }, { secret: Buffer.from('not-the-configured-secret-at-all') }),
      ],
    ] as const;
    for (const [name, token] of bad) {
      sent.push(token);
      const res = await member(token);
      t.equal(res.status, 401, name);
      t.match(errorOf(res), failed, name);
    }
    const noPermission = await jwt({ sub: 'bob', permissions: 'collectors:read' });
    sent.push(noPermission);
    const forbidden = await member(noPermission);
    t.equal(forbidden.status, 403);
    t.match(errorOf(forbidden), { status: 403, message: 'not authorized' });
  });

  t.test('a signed token without the permission is 403', async (t) => {
    const res = await request(gw, {
      method: 'GET',
      target: MEMBER,
      headers: signed({ method: 'GET', target: MEMBER, token: TOKENS.writer }),
    });
    t.equal(res.status, 403);
    t.match(errorOf(res), { status: 403, message: 'not authorized' });
  });

  t.test('log lines carry who, and never a key, signature or token', async (t) => {
    const logged = JSON.stringify(gw.logs);
    for (const secret of [...Object.values(TOKENS).map((k) => k.key), JWT_SECRET, ...sent]) {
      t.notOk(logged.includes(secret), `not logged: ${secret.slice(0, 12)}…`);
    }
    const lines = gw.logs.filter((l) => l.msg === 'request' && l.path === MEMBER);
    t.ok(
      lines.some(
        (l) => l.auth_scheme === 'signature' && l.subject === 'reader' && l.token_id === TOKENS.reader.id,
      ),
    );
    t.ok(lines.some((l) => l.auth_scheme === 'bearer' && l.subject === 'alice'));
    t.ok(lines.some((l) => l.auth_failure === 'digest_mismatch'));
    t.ok(lines.some((l) => l.auth_failure === 'expired'));
  });

  t.test('failures are counted by scheme and reason', async (t) => {
    const text = await metricsText(gw.adminUrl);
    const failures = (scheme: string, reason: string) =>
      metric(text, 'gateway_auth_failures_total', { scheme, reason });
    t.ok((failures('none', 'missing') ?? 0) >= 1, 'missing credentials');
    t.equal(failures('signature', 'clock_skew'), 2);
    t.equal(failures('bearer', 'bad_algorithm'), 1);
  });
});

t.test('body limits through the front door', async (t) => {
  const tmp = t.testdir();
  const gw = await startGateway({
    server: { max_body_size: 1000, body_memory_threshold: 0, body_idle_timeout: '300ms', tmp_dir: tmp },
  });
  t.teardown(() => gw.close());
  const big = 'x'.repeat(2000);
  const tooLarge = {
    status: 413,
    context: 'body',
    message: 'request body is larger than the limit of 1000 bytes',
  };
  const head = (h: Record<string, string>) =>
    Object.entries(h)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');

  t.test('a Content-Length over the limit is 413, before authentication', async (t) => {
    for (const headers of [signed({ method: 'PATCH', target: PATCH, body: big }), {}]) {
      const res = await request(gw, { method: 'PATCH', target: PATCH, headers, body: big });
      t.equal(res.status, 413);
      t.match(errorOf(res), tooLarge);
    }
  });

  t.test('a chunked body over the limit is 413 while streaming', async (t) => {
    const h = signed({ method: 'PATCH', target: PATCH, body: big });
    const chunk = `${(1500).toString(16)}\r\n${'x'.repeat(1500)}\r\n`;
    const answer = await rawRequest(
      gw,
      `PATCH ${PATCH} HTTP/1.1\r\nHost: x\r\n${head(h)}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunk}0\r\n\r\n`,
    );
    t.match(answer, /^HTTP\/1\.1 413 /);
    t.match(answer, tooLarge.message);
  });

  t.test('a stalled upload is 408', async (t) => {
    const h = signed({ method: 'PATCH', target: PATCH, body: 'abcdefghij' });
    const answer = await rawRequest(
      gw,
      `PATCH ${PATCH} HTTP/1.1\r\nHost: x\r\n${head(h)}Content-Length: 10\r\n\r\nabc`,
      1500,
    );
    t.match(answer, /^HTTP\/1\.1 408 /);
    t.match(answer, /request body was not received in time/);
  });

  t.test('a body spooled to disk is verified, used, and removed', async (t) => {
    const form = multipart([{ name: 'name', value: 'Spooled Provider' }]);
    const headers = {
      ...signed({ method: 'PATCH', target: PATCH, body: form.body }),
      'Content-Type': form.contentType,
    };
    const res = await request(gw, { method: 'PATCH', target: PATCH, headers, body: form.body });
    t.equal(res.status, 200, res.body.toString());
    t.equal(res.json().data.name, 'Spooled Provider');
    await until('the spooled body is removed', () => readdirSync(tmp).length === 0);
    t.same(readdirSync(tmp), [], 'no temporary file left');
  });
});

t.test('the deadline covers the body read', async (t) => {
  const gw = await startGateway({ server: { body_idle_timeout: '10s' } });
  t.teardown(() => gw.close());
  const h = { ...signed({ method: 'PATCH', target: PATCH, body: 'abcdefghij' }), Prefer: 'wait=1' };
  const head = Object.entries(h)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  const answer = await rawRequest(
    gw,
    `PATCH ${PATCH} HTTP/1.1\r\nHost: x\r\n${head}Content-Length: 10\r\n\r\nabc`,
    2500,
  );
  t.match(answer, /^HTTP\/1\.1 504 /);
  t.match(answer, /request timed out/);
});

t.test('a client gone before the verified body was handed over leaves no body behind', async (t) => {
  const config = parseConfig(
    `auth: { jwt: { hs256_secret: "${JWT_SECRET}" } }
backends:
  collectors: { type: local, path: c }
  sso_providers: { type: local, path: s.json }
  asset_group_tags: { type: local, path: a.json }`,
    t.testdir(),
  );
  const authenticate = createAuthenticate({
    auth: config.auth,
    server: config.server,
    metrics: createMetrics(),
    tmpDir: t.testdir(),
  });
  const authorization = `Bearer ${await jwt({ sub: 'carol' })}`;
  const req = Object.assign(Readable.from([Buffer.from('abc')]), {
    method: 'PATCH',
    headers: { authorization, 'content-length': '3' },
    rawHeaders: ['Authorization', authorization, 'Content-Length', '3'],
  });
  const ctx = {
    req,
    res: { closed: true },
    rawTarget: PATCH,
    path: PATCH,
    headers: [],
    log: {},
  } as never as Parameters<typeof authenticate>[0];
  await t.rejects(async () => authenticate(ctx), {
    status: 400,
    message: 'request body was not received completely',
  });
  t.equal(ctx.body?.size, 3, 'handed over so that the response cleanup can also dispose it');
});
