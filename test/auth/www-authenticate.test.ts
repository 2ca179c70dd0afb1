/**
 * `WWW-Authenticate` on every 401 the gateway writes (contract §3): one header field, the bearer
 * form of RFC 6750 with the reason's text, the signed-request scheme's challenge, every scheme that
 * is on for a request without credentials; none on other statuses; a relayed 401 as it came.
 */
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { SignJWT } from 'jose';
import t, { type Test } from 'tap';
import {
  errorOf,
  JWT_SECRET,
  nowDate,
  signed,
  startGateway,
  type TestGateway,
  type TestResponse,
  TOKENS,
} from '../helpers/gateway.js';
import { startUpstream, upstreamBackend } from '../helpers/upstream.js';
import { formatRequestDate as rfc3339 } from '../../src/signing/request-date.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const SECRET = Buffer.from(JWT_SECRET, 'base64');
const now = () => Math.floor(Date.now() / 1000);

async function gateway(t: Test, over: Record<string, unknown> = {}) {
  const gw = await startGateway(over);
  t.teardown(() => gw.close());
  return gw;
}

interface Answer extends TestResponse {
  /** The header list as sent, each field on its own. */
  raw: string[];
}

/** The `WWW-Authenticate` fields of an answer, as sent (node:http would join repeated ones). */
function challenges(res: Answer): string[] {
  const out: string[] = [];
  for (let i = 0; i < res.raw.length; i += 2) {
    if (res.raw[i]?.toLowerCase() === 'www-authenticate') out.push(res.raw[i + 1] as string);
  }
  return out;
}

/** One GET, keeping the raw header list. */
function send(gw: TestGateway, headers: Record<string, string>, target = MEMBER): Promise<Answer> {
  return new Promise((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port: gw.port, path: target, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          raw: res.rawHeaders,
          body,
          json: () => JSON.parse(body.toString()),
        });
      });
    })
      .on('error', reject)
      .end();
  });
}

const bearerChallenge = (text: string) =>
  `Bearer realm="api", error="invalid_token", error_description="${text}"`;

function hs256(claims: Record<string, unknown>, alg = 'HS256') {
  return new SignJWT({ exp: now() + 300, permissions: ['*'], ...claims })
    .setProtectedHeader({ alg })
    .sign(SECRET);
}

t.test(
  'a request without credentials gets every challenge of the schemes that are on, Bearer first',
  async (t) => {
    const both = await gateway(t);
    const res = await send(both, {});
    t.same(errorOf(res), { status: 401, context: 'header:Authorization', message: 'not authenticated' });
    t.same(challenges(res), ['Bearer realm="api", bhesignature realm="api"'], 'one header field');
    const signatures = await gateway(t, { auth: { jwt: { hs256_secret: undefined } } });
    t.same(challenges(await send(signatures, {})), ['bhesignature realm="api"'], 'no bearer without a key');
    const bearer = await gateway(t, { auth: { signature: { tokens: [] } } });
    t.same(challenges(await send(bearer, {})), ['Bearer realm="api"'], 'no signature scheme without a token');
    const custom = await gateway(t, {
      auth: { signature: { scheme: 'corpsig' }, jwt: { hs256_secret: undefined, issuers: [] } },
    });
    t.same(challenges(await send(custom, {})), ['corpsig realm="api"'], 'the configured scheme word');
    const nothing = await gateway(t, {
      auth: { signature: { tokens: [] }, jwt: { hs256_secret: undefined } },
    });
    t.same(
      challenges(await send(nothing, {})),
      ['Bearer realm="api", bhesignature realm="api"'],
      'with no scheme on, both are named (a 401 always carries a challenge)',
    );
  },
);

t.test('a refused bearer token says why, in the text of its reason', async (t) => {
  const gw = await gateway(t, {
    auth: { jwt: { issuer: 'https://issuer.test', audience: 'gw', max_token_age: '1m' } },
  });
  const good = { iss: 'https://issuer.test', aud: 'gw', iat: now() };
  t.equal((await send(gw, { Authorization: `Bearer ${await hs256(good)}` })).status, 200);
  const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const cases: Array<[string, string]> = [
    [await hs256({ ...good, exp: now() - 120 }), 'token expired'],
    [await hs256({ ...good, nbf: now() + 120 }), 'token not yet valid'],
    [await hs256({ ...good, iat: now() - 600 }), 'token too old'],
    [await hs256({ ...good, exp: undefined }), 'token has no expiry'],
    [await hs256({ ...good, iss: 'https://other.test' }), 'wrong issuer'],
    [await hs256({ ...good, aud: 'other' }), 'wrong audience'],
    [`${(await hs256(good)).slice(0, -4)}AAAA`, 'signature invalid'],
    [`${part({ alg: 'none' })}.${part({ ...good, exp: now() + 60 })}.`, 'algorithm not allowed'],
    [await hs256(good, 'HS512'), 'algorithm not allowed'],
    ['not-a-token', 'malformed token'],
  ];
  for (const [token, text] of cases) {
    const res = await send(gw, { Authorization: `Bearer ${token}` });
    t.equal(res.status, 401, text);
    t.same(challenges(res), [bearerChallenge(text)], text);
  }
  const none = await gateway(t, { auth: { jwt: { hs256_secret: undefined } } });
  t.same(challenges(await send(none, { Authorization: `Bearer ${await hs256(good)}` })), [
    bearerChallenge('signing keys unavailable'),
  ]);
});

t.test(
  'every 401 of the signed-request scheme names the scheme; a 400 or 403 has no challenge',
  async (t) => {
    const gw = await gateway(t, { auth: { signature: { scheme: 'corpsig', max_utc_offset: '0s' } } });
    const good = signed({ method: 'GET', target: MEMBER });
    const as = (h: Record<string, string>) => ({
      ...h,
      Authorization: h.Authorization!.replace('bhesignature', 'corpsig'),
    });
    const cases: Array<[string, Record<string, string>]> = [
      ['unknown token', { ...as(good), Authorization: `corpsig ${randomUUID()}` }],
      ['clock skew', as(signed({ method: 'GET', target: MEMBER, date: '2020-01-01T10:00:00Z' }))],
      [
        'a zone offset beyond max_utc_offset',
        as(signed({ method: 'GET', target: MEMBER, date: rfc3339(Date.now(), 120) })),
      ],
      [
        'digest mismatch',
        { ...as(good), Signature: signed({ method: 'GET', target: `${MEMBER}?x=1` }).Signature! },
      ],
    ];
    for (const [what, headers] of cases) {
      const res = await send(gw, headers);
      t.equal(res.status, 401, what);
      t.same(challenges(res), ['corpsig realm="api"'], what);
    }
    const faults: Array<[string, Record<string, string>]> = [
      ['malformed date', { ...as(good), RequestDate: 'yesterday' }],
      ['no signature', { Authorization: as(good).Authorization!, RequestDate: nowDate() }],
      ['two components', { Authorization: 'corpsig a b' }],
      ['unknown scheme', { Authorization: 'Basic abc' }],
      ['no permission', as(signed({ method: 'GET', target: MEMBER, token: TOKENS.writer }))],
    ];
    for (const [what, headers] of faults) {
      const res = await send(gw, headers);
      t.not(res.status, 401, what);
      t.same(challenges(res), [], `${what}: no WWW-Authenticate on a ${res.status}`);
    }
  },
);

t.test('a 401 relayed from an upstream passes as it came', async (t) => {
  const stub = await startUpstream();
  t.teardown(() => stub.close());
  stub.respond = (_req, res) => {
    res.writeHead(401, { 'Content-Type': 'application/json', 'WWW-Authenticate': 'Basic realm="upstream"' });
    res.end('{"upstream":"refused"}');
  };
  const gw = await gateway(t, { backends: { asset_group_tags: upstreamBackend(stub) } });
  const res = await send(gw, signed({ method: 'GET', target: MEMBER }));
  t.equal(res.status, 401);
  t.same(challenges(res), ['Basic realm="upstream"'], "the upstream's own challenge, not ours");
  t.equal(res.body.toString(), '{"upstream":"refused"}');
});
