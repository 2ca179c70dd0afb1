/**
 * The read API's query language, parsed: its defaults, `offset` for `skip`, the time window, sorts,
 * filters, parameters that are not filters, and every 400 with the context and message a client
 * sees in the envelope (the reference service's wording). What the stores answer: list.test.ts.
 */
import t from 'tap';
import { parseAuditQuery } from '../../src/audit/query.js';
import { GatewayError } from '../../src/errors.js';

const NOW = Date.parse('2026-11-27T18:00:00.000Z');
const parse = (query: string) => parseAuditQuery(new URLSearchParams(query), NOW);
const micros = (iso: string) => Date.parse(iso) * 1000;

/** The error `query` is refused with. */
function refusal(query: string): GatewayError {
  try {
    parse(query);
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error(`${query} was accepted`);
}

t.test('defaults: skip 0, limit 100, the year before now, newest first', async (t) => {
  const q = parse('');
  t.equal(q.skip, 0);
  t.equal(q.limit, 100);
  t.equal(q.before, NOW * 1000);
  t.equal(q.after, NOW * 1000 - 365 * 86_400_000_000);
  t.same(q.sort, [{ column: 'created_at', descending: true }]);
  t.same(q.filters, []);
});

t.test('offset stands for skip; skip wins when both are given; limit up to 1000', async (t) => {
  t.equal(parse('offset=7').skip, 7);
  t.equal(parse('skip=3&offset=7').skip, 3);
  t.equal(parse('limit=1000').limit, 1000);
  t.equal(parse('limit=0').limit, 0);
  t.equal(parse('skip=&limit=').limit, 100, 'empty means the default');
});

t.test(
  'before and after: RFC 3339 with offsets and up to nine fraction digits; after defaults from before',
  async (t) => {
    const q = parse('before=2026-01-02T03:04:05.123456789%2B01:00');
    t.equal(q.before, micros('2026-01-02T02:04:05.123Z') + 456, 'microseconds kept, nanoseconds dropped');
    t.equal(q.after, q.before - 365 * 86_400_000_000);
    t.equal(parse('after=2025-12-31T23:59:59Z').after, micros('2025-12-31T23:59:59Z'));
  },
);

t.test('sort_by: repeatable, - for descending', async (t) => {
  t.same(parse('sort_by=actor_name&sort_by=-id').sort, [
    { column: 'actor_name', descending: false },
    { column: 'id', descending: true },
  ]);
});

t.test('filters: split at the first colon, repeatable, in the order given', async (t) => {
  t.same(parse('actor_name=eq:a:b&id=gte:2&id=lt:9&created_at=gt:2026-01-01T00:00:00Z').filters, [
    { column: 'actor_name', predicate: 'eq', value: 'a:b' },
    { column: 'id', predicate: 'gte', value: 2 },
    { column: 'id', predicate: 'lt', value: 9 },
    { column: 'created_at', predicate: 'gt', value: micros('2026-01-01T00:00:00Z') },
  ]);
  t.same(parse('status=neq:').filters, [{ column: 'status', predicate: 'neq', value: '' }]);
});

t.test('a parameter that is not of the form predicate:value is ignored', async (t) => {
  t.same(parse('foo=bar&actor_name=alice&scope=x').filters, []);
});

t.test('every 400, in the envelope terms a client sees', async (t) => {
  const cases: Array<[string, string, string]> = [
    ['limit=1001', 'query:limit', 'query parameter "limit" is malformed: limit must not exceed 1000'],
    ['limit=ten', 'query:limit', 'query parameter "limit" is malformed: invalid limit'],
    ['limit=-1', 'query:limit', 'query parameter "limit" is malformed: invalid limit'],
    ['skip=1.5', 'query:skip', 'query parameter "skip" is malformed: invalid skip'],
    ['offset=-3', 'query:offset', 'query parameter "offset" is malformed: invalid offset'],
    ['skip=99999999999999999999', 'query:skip', 'query parameter "skip" is malformed: invalid skip'],
    [
      'before=yesterday',
      'query:before',
      'query parameter "before" is malformed: invalid RFC-3339 datetime format',
    ],
    [
      'after=2026-02-30T00:00:00Z',
      'query:after',
      'query parameter "after" is malformed: invalid RFC-3339 datetime format',
    ],
    [
      'after=2026-01-01',
      'query:after',
      'query parameter "after" is malformed: invalid RFC-3339 datetime format',
    ],
    ['sort_by=', 'query:sort_by', 'empty sort_by parameter supplied'],
    ['sort_by=commit_id', 'query:sort_by', 'column format does not support sorting'],
    ['sort_by=-', 'query:sort_by', 'column format does not support sorting'],
    ['sort_by=request_id', 'query:sort_by', 'column format does not support sorting'],
    ['commit_id=eq:x', 'query:commit_id', 'the specified column cannot be filtered: commit_id'],
    ['fields=eq:x', 'query:fields', 'the specified column cannot be filtered: fields'],
    ['actor_name=like:a', 'query:actor_name', 'there are errors in the query parameter filters specified'],
    [
      'actor_name=gt:a',
      'query:actor_name',
      'the specified filter predicate is not supported for this column: actor_name gt',
    ],
    [
      'status=~eq:a',
      'query:status',
      'the specified filter predicate is not supported for this column: status ~eq',
    ],
    ['id=~eq:1', 'query:id', 'the specified filter predicate is not supported for this column: id ~eq'],
    ['id=eq:one', 'query:id', 'query parameter "id" is malformed: id must be an integer'],
    ['id=eq:1e3', 'query:id', 'query parameter "id" is malformed: id must be an integer'],
    [
      'created_at=lt:now',
      'query:created_at',
      'query parameter "created_at" is malformed: created_at must be an RFC 3339 time',
    ],
  ];
  for (const [query, context, message] of cases) {
    const err = refusal(query);
    t.equal(err.status, 400, query);
    t.equal(err.context, context, query);
    t.equal(err.message, message, query);
  }
});

t.test('the order of faults is the service`s: sort, filters, skip, limit, before, after', async (t) => {
  t.equal(refusal('after=x&before=x&limit=x&skip=x&foo=eq:1&sort_by=x').context, 'query:sort_by');
  t.equal(refusal('after=x&before=x&limit=x&skip=x&foo=eq:1').context, 'query:foo');
  t.equal(refusal('after=x&before=x&limit=x&skip=x').context, 'query:skip');
  t.equal(refusal('after=x&before=x&limit=x').context, 'query:limit');
  t.equal(refusal('after=x&before=x').context, 'query:before');
});

t.test(
  'a parameter name that is not a plain word is never echoed (a query may carry a secret)',
  async (t) => {
    const err = refusal(`${encodeURIComponent('key=abc$secret')}=eq:1`);
    t.equal(err.context, 'query');
    t.equal(err.message, 'the specified column cannot be filtered: <not shown>');
    t.notMatch(err.message, /secret/);
    t.notMatch(refusal('id=eq:s3cr3t-value').message, /s3cr3t/, 'a value is never echoed');
  },
);
