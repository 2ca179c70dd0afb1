/**
 * Routing as the service routes: on the path percent-decoded once, segment by segment. Every encoded
 * spelling of the three operations is that operation (its permission, its validation) and never
 * reaches pass-through; `//` and dot segments are answered 301 to the cleaned path; targets that
 * could be read as another path are 400.
 */
import t, { type Test } from 'tap';
import {
  call,
  errorOf,
  multipart,
  rawRequest,
  request,
  startGateway,
  TOKENS,
  type Tok,
} from '../helpers/gateway.js';
import { startUpstream, UPSTREAM_TOKEN_ID } from '../helpers/upstream.js';

/** A token that may only use pass-through: it must never reach an operation by another spelling. */
const PASSTHROUGH_ONLY: Tok = {
  id: '9d4a7f2c-5b6e-4c0d-8f5a-4e5f60718293',
  key: 'passthrough-key',
  subject: 'proxy-user',
  permissions: ['passthrough'],
};

async function setup(t: Test) {
  const stub = await startUpstream();
  const gw = await startGateway({
    auth: { signature: { tokens: [...Object.values(TOKENS), PASSTHROUGH_ONLY] } },
    passthrough: {
      url: stub.url,
      auth: { type: 'signature', token_id: UPSTREAM_TOKEN_ID, token_key: 'upstream-key' },
    },
  });
  t.teardown(async () => {
    await gw.close();
    await stub.close();
  });
  return { stub, gw };
}

/** Encoded spellings the service routes to each operation (gorilla/mux decodes the path once). */
const SPELLINGS = {
  UpdateSSOProvider: [
    '/api/v2/sso%2Dproviders/1',
    '/api/v2/sso%2dproviders/1',
    '/api/v2/%73so-providers/1',
    '/api/v2/%73%73%6F%2D%70%72%6F%76%69%64%65%72%73/1',
    '/%61pi/v2/sso-providers/1',
    '/api/%76%32/sso-providers/1',
    '/api/v2/sso-providers/%31',
  ],
  GetAssetGroupTagMember: [
    '/api/v2/asset%2Dgroup%2Dtags/1/members/101',
    '/api/v2/asset-group-tags/%31/%6Dembers/%3101',
    '/%61%70%69/v2/asset-group-tags/1/members/101?x=1',
  ],
  GetCollectorChecksum: [
    '/api/v2/%63ollectors/sharphound/latest/checksum',
    '/api/v2/collectors/%73harphound/%6Catest/check%73um',
    '/api/v2/collectors/sharphound/v2%2E10%2E0/checksum',
  ],
} as const;

const METHOD = { UpdateSSOProvider: 'PATCH', GetAssetGroupTagMember: 'GET', GetCollectorChecksum: 'GET' };

t.test('every encoded spelling of an operation is that operation, never pass-through', async (t) => {
  const { stub, gw } = await setup(t);
  for (const [operation, targets] of Object.entries(SPELLINGS)) {
    const method = METHOD[operation as keyof typeof METHOD];
    for (const target of targets) {
      // A token holding only `passthrough` is refused the operation's permission.
      const refused = await call(gw, { method, target, token: PASSTHROUGH_ONLY });
      t.equal(refused.status, 403, `${method} ${target} with a passthrough-only token`);
      t.same(errorOf(refused), { status: 403, context: 'permission', message: 'not authorized' });
    }
  }
  const lines = gw.logs.filter((l) => l.msg === 'request');
  t.same(
    [...new Set(lines.map((l) => l.operation))].sort(),
    ['GetAssetGroupTagMember', 'GetCollectorChecksum', 'UpdateSSOProvider'],
    'each line names the operation, none pass-through',
  );
  t.equal(stub.seen.length, 0, 'nothing reached the service');
});

t.test('an encoded spelling runs the operation with its validation and its answer', async (t) => {
  const { stub, gw } = await setup(t);
  for (const target of SPELLINGS.GetAssetGroupTagMember) {
    const res = await call(gw, { method: 'GET', target });
    t.equal(res.status, 200, target);
    t.equal(res.json().data.member.id, 101);
  }
  for (const target of SPELLINGS.GetCollectorChecksum) {
    const res = await call(gw, { method: 'GET', target });
    t.equal(res.status, 200, target);
    t.equal(res.headers['content-disposition'], 'attachment; filename="sharphound-v2.10.0.zip.sha256"');
  }
  // The id `%30` decodes to 0: the operation's own validation answers.
  const zero = await call(gw, { method: 'GET', target: '/api/v2/asset-group-tags/%30/members/101' });
  t.same(errorOf(zero), { status: 400, context: 'path:asset_group_tag_id', message: 'id is malformed' });
  const type = await call(gw, { method: 'GET', target: '/api/v2/collectors/%53harphound/latest/checksum' });
  t.same(errorOf(type), {
    status: 400,
    context: 'path:collector_type',
    message: 'Invalid collector type: Sharphound',
  });
  // A PATCH through an encoded spelling is validated as the operation (the form is checked).
  const bad = await call(gw, {
    method: 'PATCH',
    target: '/api/v2/sso%2Dproviders/1',
    body: 'not a form',
    headers: { 'Content-Type': 'text/plain' },
  });
  t.same(errorOf(bad), {
    status: 400,
    context: 'header:Content-Type',
    message: 'Content-Type must be multipart/form-data with a boundary',
  });
  const form = multipart([{ name: 'name', value: 'Renamed through %2D' }]);
  const ok = await call(gw, {
    method: 'PATCH',
    target: '/api/v2/%73so-providers/%31',
    body: form.body,
    headers: { 'Content-Type': form.contentType },
  });
  t.equal(ok.status, 200);
  t.equal(ok.json().data.name, 'Renamed through %2D');
  t.ok(
    gw.logs.some((l) => l.audit === 'sso_provider_update'),
    'the change is audited as the operation',
  );
  t.equal(stub.seen.length, 0, 'nothing reached the service');
});

t.test(
  'a known path with another method, encoded, is still the operation’s 405 without pass-through',
  async (t) => {
    const gw = await startGateway();
    t.teardown(() => gw.close());
    const res = await call(gw, { method: 'GET', target: '/api/v2/sso%2Dproviders/1' });
    t.equal(res.status, 405);
    t.equal(res.headers.allow, 'PATCH');
  },
);

t.test('a double-encoded spelling is another path: forwarded, not the operation', async (t) => {
  const { stub, gw } = await setup(t);
  const target = '/api/v2/sso%252Dproviders/1';
  const res = await call(gw, { method: 'PATCH', target, token: PASSTHROUGH_ONLY, body: 'x' });
  t.equal(res.status, 200, 'the service answers');
  t.equal(stub.seen[0]?.url, target, 'sent byte for byte');
  const alone = await startGateway();
  t.teardown(() => alone.close());
  const unknown = await call(alone, { method: 'PATCH', target });
  t.equal(unknown.status, 404, 'without pass-through it is an unknown path');
});

t.test('// and dot segments: 301 to the cleaned path, before Prefer and authentication', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  const MEMBER = '/api/v2/asset-group-tags/1/members/101';
  for (const [target, location] of [
    ['/api/v2//asset-group-tags/1/members/101', MEMBER],
    ['//api/v2/asset-group-tags/1/members/101', MEMBER],
    ['/api/v2/asset-group-tags/1/./members/101', MEMBER],
    ['/api/v2/asset-group-tags/1/members/../members/101', MEMBER],
    ['/api/v2/x/%2e%2E/asset-group-tags/1/members/101', MEMBER],
    ['/api/v2/x/.%2e/asset-group-tags/1/members/101', MEMBER],
    ['/api/v2/asset-group-tags/1/members/101/.', MEMBER],
    ['/api/v2/asset-group-tags/1/members/101/x/..', MEMBER],
    // The query is kept as sent, a bare `?` and encoded bytes included.
    [`${MEMBER}//?a=%2F..&b`, `${MEMBER}/?a=%2F..&b`],
    ['/api/v2//x?', '/api/v2/x?'],
    // A trailing slash is kept, as Go's path.Clean under gorilla/mux keeps it.
    ['/api/v2/x//', '/api/v2/x/'],
    ['/api/v2/x/./', '/api/v2/x/'],
    ['/api/v2/x/../', '/api/v2/'],
    ['/api/..', '/'],
    ['//', '/'],
    // Every other byte of the path as sent: escapes stay escaped.
    ['/api/v2/%7Bx%7D//y', '/api/v2/%7Bx%7D/y'],
    // Never protocol-relative.
    ['//evil.example/x', '/evil.example/x'],
    ['/.//evil.example', '/evil.example'],
  ] as const) {
    for (const method of ['GET', 'PATCH', 'HEAD']) {
      const res = await request(gw, { method, target, headers: { Prefer: 'not valid' } });
      t.equal(res.status, 301, `${method} ${target}`);
      t.equal(res.headers.location, location, `${method} ${target}`);
      t.equal(res.body.length, 0, 'an empty body');
      t.equal(res.headers['content-length'], '0');
      t.match(res.headers.requestid, /^[0-9a-f-]{36}$/);
    }
  }
  const line = gw.logs.find((l) => l.msg === 'request' && l.status === 301);
  t.equal(line?.operation, 'unmatched');
  t.equal(line?.path, '/api/v2//asset-group-tags/1/members/101', 'the path as sent, no query');
});

t.test('targets that could be read as another path are 400, before routing', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  for (const target of [
    '/api/v2/asset-group-tags/1%2Fmembers/101',
    '/api/v2/asset-group-tags/1%2fmembers/101',
    '/api/v2/asset-group-tags/1%5Cmembers/101',
    '/api/v2/asset-group-tags\\1/members/101',
    '/api/v2/asset-group-tags/1/members/101%00',
    '/api/v2/asset-group-tags/1/members/101#x',
    '/api/v2/asset-group-tags/1/members/101?a=1#x',
    '/api/v2/asset-group-tags/1/members/%zz',
    '/api/v2/asset-group-tags/1/members/10%1',
    '/..',
    '/api/../../x',
    '/api/v2/%2e%2e/%2e%2e/%2e%2e/x',
    '/api/v2//../../..',
  ]) {
    const res = await call(gw, { method: 'GET', target });
    t.equal(res.status, 400, target);
    t.equal(errorOf(res).context, 'path', target);
    t.match(errorOf(res).message, /^invalid request target: /);
  }
  for (const raw of [
    `GET http://127.0.0.1:${gw.port}/api/v2/asset-group-tags/1/members/101 HTTP/1.1\r\nHost: x\r\n\r\n`,
    'OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n',
  ]) {
    const answer = await rawRequest(gw, raw);
    t.match(answer, /^HTTP\/1\.1 400 /, raw.split('\r\n')[0]);
    t.match(answer, /"context":"path"/);
  }
});

t.test('the character checks apply to the path: a query may hold them (but #)', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  const target = '/api/v2/asset-group-tags/1/members/101?a=%2F..%5C%00&b=\\&c=//x/../y';
  const res = await call(gw, { method: 'GET', target });
  t.equal(res.status, 200, 'signed over the raw target, routed on the path');
});

t.test('a trailing slash alone is not cleaned: 404', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  const res = await call(gw, { method: 'GET', target: '/api/v2/asset-group-tags/1/members/101/' });
  t.equal(res.status, 404);
  t.same(errorOf(res), { status: 404, context: 'path', message: 'resource not found' });
});
