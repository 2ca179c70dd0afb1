/**
 * The read API's queries answered by each real store from one fixture trail: every filter, sort and
 * window, paging and counts; both stores answer each query with the very same page. Text sorts in
 * code point order (PostgreSQL's "C"), which is not JavaScript's UTF-16 order: the fixture has a
 * name on each side of that difference.
 */
import t from 'tap';
import type { AuditEntry } from '../../src/audit/entry.js';
import { pageBody, parseAuditQuery } from '../../src/audit/query.js';
import { manualClock, newEntry, storesUnderTest } from './helpers.js';

const T = Date.parse('2026-06-01T12:00:00.000Z');
const DAY = 86_400_000;
const NOW = T + DAY;
const iso = (ms: number) => new Date(ms).toISOString();

/** The fixture: id (its place), time, name, email, action, status, address, request. */
const FIXTURE: Array<
  [number, string, string, 'Update' | 'Refused', 'intent' | 'success' | 'failure', string, string]
> = [
  [T - 400 * DAY, 'alice', 'a@example.com', 'Update', 'intent', '10.0.0.1', 'r1'],
  [T, 'alice', 'a@example.com', 'Update', 'success', '10.0.0.1', 'r1'],
  [T, 'bob', '', 'Refused', 'failure', '10.0.0.2', 'r2'],
  [T + 1000, 'Émile', 'e@example.com', 'Update', 'intent', '2001:db8::1', 'r3'],
  [T + 1000, 'Émile', 'e@example.com', 'Update', 'failure', '2001:db8::1', 'r3'],
  [T + 2000, 'zed', 'z@example.com', 'Refused', 'failure', '10.0.0.2', 'r4'],
  [T + 3500, '😀', '', 'Update', 'intent', '10.0.0.3', 'r5'],
  [T + 3501, '\uFB00', '', 'Update', 'success', '10.0.0.3', 'r5'],
  [T + 4000, 'alice', 'a@example.com', 'Update', 'intent', '10.0.0.1', 'r6'],
];

/** Each query and the ids of the page it answers (the count is all matching ids unless given). */
const CASES: Array<[string, number[], number?]> = [
  ['', [9, 8, 7, 6, 5, 4, 3, 2]],
  ['sort_by=created_at', [2, 3, 4, 5, 6, 7, 8, 9]],
  ['sort_by=id', [2, 3, 4, 5, 6, 7, 8, 9]],
  ['sort_by=-id', [9, 8, 7, 6, 5, 4, 3, 2]],
  ['sort_by=actor_name', [2, 9, 3, 6, 4, 5, 8, 7]],
  ['sort_by=-actor_name', [7, 8, 5, 4, 6, 3, 9, 2]],
  ['sort_by=actor_email', [3, 7, 8, 2, 9, 4, 5, 6]],
  ['sort_by=action', [3, 6, 2, 4, 5, 7, 8, 9]],
  ['sort_by=source_ip_address', [2, 9, 3, 6, 7, 8, 4, 5]],
  ['sort_by=status&sort_by=-id', [6, 5, 3, 9, 7, 4, 8, 2]],
  ['sort_by=-status&sort_by=created_at', [2, 8, 4, 7, 9, 3, 5, 6]],
  ['actor_name=eq:alice', [9, 2]],
  ['actor_name=neq:alice', [8, 7, 6, 5, 4, 3]],
  ['actor_id=eq:token-bob', [3]],
  ['actor_email=eq:', [8, 7, 3]],
  ['actor_email=neq:&actor_email=neq:a@example.com', [6, 5, 4]],
  ['action=eq:UnauthorizedAccessAttempt', [6, 3]],
  ['action=neq:UnauthorizedAccessAttempt&status=eq:intent', [9, 7, 4]],
  ['request_id=eq:r3', [5, 4]],
  ['source_ip_address=eq:2001:db8::1', [5, 4]],
  ['status=neq:intent', [8, 6, 5, 3, 2]],
  ['status=eq:nothing', []],
  ['id=eq:3', [3]],
  ['id=neq:3', [9, 8, 7, 6, 5, 4, 2]],
  ['id=gt:4&id=lte:7', [7, 6, 5]],
  ['id=gte:8', [9, 8]],
  ['id=lt:3', [2]],
  [`created_at=eq:${iso(T + 1000)}`, [5, 4]],
  [`created_at=neq:${iso(T)}`, [9, 8, 7, 6, 5, 4]],
  [`created_at=gt:${iso(T + 1000)}`, [9, 8, 7, 6]],
  [`created_at=gte:${iso(T + 1000)}`, [9, 8, 7, 6, 5, 4]],
  [`created_at=lt:${iso(T + 1000)}`, [3, 2]],
  [`created_at=lte:${iso(T + 1000)}`, [5, 4, 3, 2]],
  ['created_at=eq:2026-06-01T12:00:03.500001Z', []],
  ['created_at=gt:2026-06-01T12:00:03.500001Z', [9, 8]],
  ['created_at=eq:2026-06-01T14:00:03.5%2B02:00', [7]],
  [`after=${iso(T - 401 * DAY)}`, [9, 8, 7, 6, 5, 4, 3, 2, 1]],
  [`after=${iso(T - 401 * DAY)}&before=${iso(T)}`, [1]],
  [`before=${iso(T + 1000)}`, [3, 2]],
  [`after=${iso(T + 1000)}`, [9, 8, 7, 6]],
  [`after=${iso(T)}&before=${iso(T + 3501)}&sort_by=id`, [4, 5, 6, 7]],
  ['limit=2&skip=1', [8, 7], 8],
  ['limit=3&offset=6', [3, 2], 8],
  ['limit=0', [], 8],
  ['skip=100', [], 8],
  ['sort_by=id&limit=1&actor_name=eq:alice', [2], 2],
];

t.test('every filter, sort and window, answered alike by both stores', async (t) => {
  const clock = manualClock();
  const pages: Array<Map<string, unknown>> = [];
  for (const { kind, store } of await storesUnderTest(t, clock.now)) {
    for (const [i, [time, name, email, action, status, address, request]] of FIXTURE.entries()) {
      clock.set(time);
      await store.append(
        newEntry({
          actor_id: `token-${name}`,
          actor_name: name,
          actor_email: email,
          action: action === 'Update' ? 'UpdateSSOIdentityProvider' : 'UnauthorizedAccessAttempt',
          status,
          source_ip_address: address,
          request_id: request,
          commit_id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        }),
      );
    }
    const answers = new Map<string, unknown>();
    for (const [query, ids, count] of CASES) {
      const page = await store.list(parseAuditQuery(new URLSearchParams(query), NOW));
      t.same(
        page.logs.map((e: AuditEntry) => e.id),
        ids,
        `${kind}: ${query || '(defaults)'}`,
      );
      t.equal(page.count, count ?? ids.length, `${kind}: ${query || '(defaults)'} count`);
      answers.set(query, pageBody(page));
    }
    pages.push(answers);
  }
  if (pages.length === 2)
    t.same(pages[0], pages[1], 'the file and PostgreSQL answer every query with one page');
  const body = pages[0]?.get('limit=2&skip=1') as {
    count: number;
    limit: number;
    skip: number;
    data: { logs: AuditEntry[] };
  };
  t.same(Object.keys(body), ['count', 'limit', 'skip', 'data']);
  t.match(body, { count: 8, limit: 2, skip: 1 });
  t.same(Object.keys(body.data.logs[0] as AuditEntry).sort(), [
    'action',
    'actor_email',
    'actor_id',
    'actor_name',
    'commit_id',
    'created_at',
    'fields',
    'hash',
    'id',
    'request_id',
    'source_ip_address',
    'status',
  ]);
});

t.test('ids sort as numbers, past 9 (never as text)', async (t) => {
  // A minute ago: an entry of this very millisecond is not yet before the default `before` (now).
  for (const { kind, store } of await storesUnderTest(t, manualClock(Date.now() - 60_000).now)) {
    for (let i = 0; i < 12; i++) await store.append(newEntry());
    // `before` defaults to now and is exclusive (§12): an entry of this very millisecond would not be
    // listed yet, so these queries are made as if a minute later.
    const ids = async (query: string) =>
      (await store.list(parseAuditQuery(new URLSearchParams(query), Date.now() + 60_000))).logs.map(
        (e) => e.id,
      );
    const ascending = Array.from({ length: 12 }, (_, i) => i + 1);
    t.same(await ids('sort_by=id'), ascending, kind);
    t.same(await ids('sort_by=-id'), [...ascending].reverse(), kind);
    t.same(await ids('id=gt:9&sort_by=id'), [10, 11, 12], kind);
    t.equal((await store.head())?.id, 12, `${kind}: the head`);
  }
});
