/**
 * A query answered over entries in memory (the file store), exactly as the SQL of `sql-query.ts`
 * answers it: text compared byte for byte in UTF-8 (PostgreSQL's "C" collation), times in
 * microseconds, ties broken by `id` in the direction of the first sort key.
 */
import type { AuditEntry } from './entry.js';
import type { AuditFilter, AuditListQuery, AuditPage, SortColumn } from './query.js';
import { entryMicros } from './time.js';

/** A test of one entry: true when it matches the query's window and filters. */
export function matcher(query: AuditListQuery): (entry: AuditEntry) => boolean {
  const tests = query.filters.map(filterTest);
  return (entry) => {
    const t = entryMicros(entry.created_at);
    if (!(t > query.after && t < query.before)) return false;
    for (const test of tests) if (!test(entry)) return false;
    return true;
  };
}

/** The page `query` asks for, of `matching` (entries that passed `matcher`). */
export function pageOf(matching: AuditEntry[], query: AuditListQuery): AuditPage {
  matching.sort(comparator(query));
  return {
    count: matching.length,
    limit: query.limit,
    skip: query.skip,
    logs: matching.slice(query.skip, query.skip + query.limit),
  };
}

function filterTest(filter: AuditFilter): (entry: AuditEntry) => boolean {
  if (filter.column === 'id' || filter.column === 'created_at') {
    const column = filter.column;
    const value = filter.value;
    const of = (e: AuditEntry) => (column === 'id' ? e.id : entryMicros(e.created_at));
    switch (filter.predicate) {
      case 'eq':
        return (e) => of(e) === value;
      case 'neq':
        return (e) => of(e) !== value;
      case 'gt':
        return (e) => of(e) > value;
      case 'gte':
        return (e) => of(e) >= value;
      case 'lt':
        return (e) => of(e) < value;
      default:
        return (e) => of(e) <= value;
    }
  }
  const { column, value } = filter;
  return filter.predicate === 'eq' ? (e) => e[column] === value : (e) => e[column] !== value;
}

type Compare = (a: AuditEntry, b: AuditEntry) => number;

function comparator(query: AuditListQuery): Compare {
  const keys: Compare[] = query.sort.map(({ column, descending }) => {
    const compare = columnCompare(column);
    return descending ? (a, b) => compare(b, a) : compare;
  });
  if (!query.sort.some((s) => s.column === 'id')) {
    const descending = query.sort[0]?.descending === true;
    keys.push(descending ? (a, b) => b.id - a.id : (a, b) => a.id - b.id);
  }
  return (a, b) => {
    for (const key of keys) {
      const order = key(a, b);
      if (order !== 0) return order;
    }
    return 0;
  };
}

function columnCompare(column: SortColumn): Compare {
  if (column === 'id') return (a, b) => a.id - b.id;
  if (column === 'created_at') return (a, b) => entryMicros(a.created_at) - entryMicros(b.created_at);
  return (a, b) => textCompare(a[column], b[column]);
}

/** Code point order, as comparing UTF-8 bytes gives (not UTF-16 code units). */
function textCompare(a: string, b: string): number {
  if (a === b) return 0;
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}
