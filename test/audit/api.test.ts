/**
 * `GET /api/v2/audit` through the front door (contract §12), on both stores: the answer's shape,
 * every filter column and predicate and every sort column checked against the whole trail, paging
 * and the time window, each 400 in the envelope, `audit:read` (its 403 recorded), HEAD and 405, and
 * the path left to the service without `serve_api`.
 */
import { SignJWT } from 'jose';
import t from 'tap';
import type { AuditEntry } from '../../src/audit/entry.js';
import { frontDoor } from '../helpers/front-door.js';
import { call, errorOf, JWT_SECRET, request, startGateway, TOKENS } from '../helpers/gateway.js';
import { requirePostgres } from '../helpers/postgres.js';
import { until } from '../helpers/wait.js';
import { auditedGateway, type Kind, patch } from './gateway-helpers.js';

const AUDITOR = {
  id: '9d4a7f2c-5b6e-4c1d-8f3a-4e5f60718293',
  key: 'auditor-key',
  subject: 'auditor',
  permissions: ['audit:read'],
};
const WITH_AUDITOR = {
  auth: {
    signature: { tokens: [...Object.values(TOKENS), AUDITOR] },
    jwt: { default_permissions: ['sso_providers:write'] },
  },
  audit: { serve_api: true },
};

const list = (gw: { port: number }, query: string, token = AUDITOR) =>
  call(gw, { method: 'GET', target: `/api/v2/audit${query === '' ? '' : `?${query}`}`, token });

const kinds: Kind[] = ['file'];
if (await requirePostgres(t)) kinds.push('postgres');

for (const kind of kinds) {
  t.test(`${kind}: every filter and sort of GET /api/v2/audit, against the whole trail`, async (t) => {
    const a = await auditedGateway(t, kind, WITH_AUDITOR);
    // A trail of several actors, actions and statuses: updates, a failure, refusals.
    const jwt = await new SignJWT({ sub: 'u-1', name: 'Jane Doe', email: 'jane@example.com' })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime('5m')
      .sign(Buffer.from(JWT_SECRET, 'base64'));
    t.equal((await patch(a.gw, 1, [{ name: 'name', value: 'A' }], { token: TOKENS.writer })).status, 200);
    t.equal((await patch(a.gw, 7, [{ name: 'name', value: 'B' }])).status, 200);
    const bearer = await patch(a.gw, 1, [{ name: 'name', value: 'C' }], {
      headers: { Authorization: `Bearer ${jwt}`, Signature: '', RequestDate: '' },
    });
    t.equal(bearer.status, 200, bearer.body.toString());
    t.equal((await patch(a.gw, 1, [{ name: 'name', value: 'x' }], { token: TOKENS.reader })).status, 403);
    t.equal((await list(a.gw, '', TOKENS.none)).status, 403, 'audit:read is needed');
    await until('the refusals are written', async () => (await a.entries()).length === 8);

    const all = await list(a.gw, 'sort_by=id&limit=1000');
    t.equal(all.status, 200);
    t.match(all.headers['content-type'], 'application/json');
    const body = all.json() as { count: number; limit: number; skip: number; data: { logs: AuditEntry[] } };
    t.same(Object.keys(body), ['count', 'limit', 'skip', 'data']);
    t.match(body, { count: 8, limit: 1000, skip: 0 });
    const logs = body.data.logs;
    t.same(logs, await a.entries(), 'the entries as stored, hash included');
    t.match(logs[4], { actor_id: 'u-1', actor_name: 'Jane Doe', actor_email: 'jane@example.com' });
    t.match(logs[7], {
      actor_id: TOKENS.none.id,
      action: 'UnauthorizedAccessAttempt',
      fields: { method: 'GET', path: '/api/v2/audit', permission: 'audit:read' },
    });

    const ids = async (query: string) => {
      const res = await list(a.gw, query);
      t.equal(res.status, 200, `${query}: ${res.body.toString()}`);
      return (res.json().data.logs as AuditEntry[]).map((e) => e.id);
    };
    const sorted = (key: (e: AuditEntry) => string | number, descending = false) =>
      [...logs]
        .sort((x, y) => {
          const [p, q] = [key(x), key(y)];
          const order = p < q ? -1 : p > q ? 1 : 0;
          return order !== 0 ? (descending ? -order : order) : descending ? y.id - x.id : x.id - y.id;
        })
        .map((e) => e.id);
    const where = (test: (e: AuditEntry) => boolean) =>
      logs
        .filter(test)
        .sort((x, y) => (y.created_at < x.created_at ? -1 : y.created_at > x.created_at ? 1 : y.id - x.id))
        .map((e) => e.id);

    t.same(
      await ids(''),
      where(() => true),
      'default: newest first',
    );
    for (const column of [
      'id',
      'actor_name',
      'actor_email',
      'action',
      'created_at',
      'source_ip_address',
      'status',
    ] as const) {
      t.same(
        await ids(`sort_by=${column}`),
        sorted((e) => e[column]),
        `sort_by=${column}`,
      );
      t.same(
        await ids(`sort_by=-${column}`),
        sorted((e) => e[column], true),
        `sort_by=-${column}`,
      );
    }
    for (const column of [
      'actor_id',
      'actor_name',
      'actor_email',
      'action',
      'request_id',
      'source_ip_address',
      'status',
    ] as const) {
      const value = logs[4]?.[column] as string;
      const q = encodeURIComponent(value);
      t.same(
        await ids(`${column}=eq:${q}`),
        where((e) => e[column] === value),
        `${column}=eq`,
      );
      t.same(
        await ids(`${column}=neq:${q}`),
        where((e) => e[column] !== value),
        `${column}=neq`,
      );
    }
    const mid = logs[3] as AuditEntry;
    const tests = {
      eq: (p: number, q: number) => p === q,
      neq: (p: number, q: number) => p !== q,
      gt: (p: number, q: number) => p > q,
      gte: (p: number, q: number) => p >= q,
      lt: (p: number, q: number) => p < q,
      lte: (p: number, q: number) => p <= q,
    };
    for (const [predicate, test] of Object.entries(tests)) {
      t.same(
        await ids(`id=${predicate}:${mid.id}`),
        where((e) => test(e.id, mid.id)),
        `id=${predicate}`,
      );
      const at = Date.parse(mid.created_at);
      t.same(
        await ids(`created_at=${predicate}:${mid.created_at}`),
        where((e) => test(Date.parse(e.created_at), at)),
        `created_at=${predicate}`,
      );
    }
    t.same(
      await ids('id=gt:2&id=lt:6&status=neq:intent'),
      where((e) => e.id > 2 && e.id < 6 && e.status !== 'intent'),
    );
    t.same(await ids('sort_by=id&limit=3&skip=2'), [3, 4, 5]);
    t.same(await ids('sort_by=id&limit=2&offset=6'), [7, 8]);
    const paged = (await list(a.gw, 'sort_by=id&limit=2&skip=1&other=ignored')).json();
    t.match(paged, { count: 8, limit: 2, skip: 1 });
    t.same(await ids(`before=${logs[0]?.created_at}`), []);
    t.same(await ids(`after=${new Date(Date.now() + 60_000).toISOString()}`), []);
    t.same(await ids('after=2000-01-01T00:00:00Z&before=2000-01-02T00:00:00Z'), []);
  });
}

t.test('the 400s of the query language, in the envelope; HEAD, 405 and the permission', async (t) => {
  const a = await auditedGateway(t, 'file', WITH_AUDITOR);
  const cases: Array<[string, string, string]> = [
    ['limit=1001', 'query:limit', 'query parameter "limit" is malformed: limit must not exceed 1000'],
    ['skip=x', 'query:skip', 'query parameter "skip" is malformed: invalid skip'],
    ['offset=-1', 'query:offset', 'query parameter "offset" is malformed: invalid offset'],
    [
      'before=yesterday',
      'query:before',
      'query parameter "before" is malformed: invalid RFC-3339 datetime format',
    ],
    [
      'after=2026-13-01T00:00:00Z',
      'query:after',
      'query parameter "after" is malformed: invalid RFC-3339 datetime format',
    ],
    ['sort_by=', 'query:sort_by', 'empty sort_by parameter supplied'],
    ['sort_by=hash', 'query:sort_by', 'column format does not support sorting'],
    ['hash=eq:00', 'query:hash', 'the specified column cannot be filtered: hash'],
    ['status=like:x', 'query:status', 'there are errors in the query parameter filters specified'],
    [
      'status=gt:x',
      'query:status',
      'the specified filter predicate is not supported for this column: status gt',
    ],
    ['id=eq:1.5', 'query:id', 'query parameter "id" is malformed: id must be an integer'],
    [
      'created_at=gt:today',
      'query:created_at',
      'query parameter "created_at" is malformed: created_at must be an RFC 3339 time',
    ],
  ];
  for (const [query, context, message] of cases) {
    t.same(errorOf(await list(a.gw, query)), { status: 400, context, message }, query);
  }
  const head = await call(a.gw, { method: 'HEAD', target: '/api/v2/audit', token: AUDITOR });
  t.equal(head.status, 200);
  t.equal(head.body.length, 0);
  const post = await call(a.gw, { method: 'POST', target: '/api/v2/audit', token: AUDITOR });
  t.equal(post.status, 405);
  t.equal(post.headers.allow, 'GET, HEAD');
  t.equal((await list(a.gw, '', TOKENS.admin)).status, 200, '"*" grants audit:read');
  t.equal((await list(a.gw, '', TOKENS.writer)).status, 403);
});

t.test('without serve_api the path is the service`s: 404 here, no trail read', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  const res = await request(gw, { method: 'GET', target: '/api/v2/audit' });
  t.match(errorOf(res), { status: 404, message: 'resource not found' });
});

t.test(
  'with the front door too: every spelling of /api/v2/audit is the trail`s, never the service`s',
  async (t) => {
    const { gw, service } = await frontDoor(t, { gateway: WITH_AUDITOR });
    const answer = await list(gw, 'limit=5');
    t.equal(answer.status, 200, 'answered from the trail');
    t.match(JSON.parse(answer.body.toString()), { limit: 5, skip: 0, data: { logs: [] } });
    const encoded = await call(gw, { method: 'GET', target: '/api/v2/%61udit', token: AUDITOR });
    t.equal(encoded.status, 200, 'an encoded spelling is the same route');
    const post = await call(gw, { method: 'POST', target: '/api/v2/audit', token: AUDITOR });
    t.equal(post.status, 405, 'another method is refused here, not forwarded');
    t.equal(post.headers.allow, 'GET, HEAD');
    t.equal(service.seen.length, 0, 'the service saw none of them');
    const below = await call(gw, { method: 'GET', target: '/api/v2/audit/x', token: TOKENS.admin });
    t.equal(below.status, 200, 'a path below it is the service`s');
    t.equal(service.seen.length, 1);
  },
);
