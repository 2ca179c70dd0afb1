/**
 * The query language of `GET /api/v2/audit`, as the service reads it (contract §12): paging (`skip`
 * or `offset`, `limit`), a time window (`after < created_at < before`), `sort_by`, and filters
 * `column=predicate:value`. Parsed once into a validated query that every store answers alike.
 */
import { errors } from '../errors.js';
import type { AuditEntry } from './entry.js';
import { parseTime } from './time.js';

/** Columns `sort_by` accepts. */
export const SORT_COLUMNS = [
  'id',
  'actor_name',
  'actor_email',
  'action',
  'created_at',
  'source_ip_address',
  'status',
] as const;
export type SortColumn = (typeof SORT_COLUMNS)[number];

/** Text columns a filter compares with `eq` or `neq`. */
export const TEXT_COLUMNS = [
  'actor_id',
  'actor_name',
  'actor_email',
  'action',
  'request_id',
  'source_ip_address',
  'status',
] as const;
export type TextColumn = (typeof TEXT_COLUMNS)[number];

export type Predicate = 'eq' | 'neq' | 'gt' | 'gte' | 'lt' | 'lte';

/** One filter; a time is in microseconds since the epoch. */
export type AuditFilter =
  | { readonly column: TextColumn; readonly predicate: 'eq' | 'neq'; readonly value: string }
  | { readonly column: 'id' | 'created_at'; readonly predicate: Predicate; readonly value: number };

/** A validated query. Times are microseconds since the epoch. */
export interface AuditListQuery {
  readonly skip: number;
  readonly limit: number;
  /** Exclusive bounds of `created_at`. */
  readonly after: number;
  readonly before: number;
  /** Never empty; ties are broken by `id` in the direction of the first key. */
  readonly sort: ReadonlyArray<{ readonly column: SortColumn; readonly descending: boolean }>;
  /** All must hold. */
  readonly filters: readonly AuditFilter[];
}

/** The entries of one page and how many match in all. */
export interface AuditPage {
  readonly count: number;
  readonly limit: number;
  readonly skip: number;
  readonly logs: AuditEntry[];
}

/** The service's answer body for `page`. */
export function pageBody(page: AuditPage): {
  count: number;
  limit: number;
  skip: number;
  data: { logs: AuditEntry[] };
} {
  return { count: page.count, limit: page.limit, skip: page.skip, data: { logs: page.logs } };
}

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;
const YEAR_MICROS = 365 * 24 * 3_600_000 * 1000;

/** Parameters that are never filters. */
const PAGING = new Set(['skip', 'offset', 'limit', 'before', 'after', 'sort_by']);
/** Every predicate the service knows; which a column takes is decided after the column. */
const KNOWN_PREDICATES = new Set(['eq', 'neq', 'gt', 'gte', 'lt', 'lte', '~eq']);
const ORDERED_PREDICATES: readonly string[] = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte'];
const INTEGER = /^[+-]?\d+$/;

/**
 * The query `params` ask for, at `now` (milliseconds since the epoch); throws the catalogue's 400
 * for the first fault, checked in the service's order: sort, filters, skip, limit, before, after.
 */
export function parseAuditQuery(params: URLSearchParams, now: number = Date.now()): AuditListQuery {
  const sort = parseSort(params.getAll('sort_by'));
  const filters = parseFilters(params);
  const skipName = params.has('skip') ? 'skip' : 'offset';
  const skip = count(params.get(skipName), skipName, 0);
  const limit = count(params.get('limit'), 'limit', DEFAULT_LIMIT);
  if (limit > MAX_LIMIT) throw errors.auditQueryMalformed('limit', `limit must not exceed ${MAX_LIMIT}`);
  const before = time(params.get('before'), 'before', now * 1000);
  const after = time(params.get('after'), 'after', before - YEAR_MICROS);
  return { skip, limit, after, before, sort, filters };
}

function parseSort(values: string[]): AuditListQuery['sort'] {
  if (values.length === 0) return [{ column: 'created_at', descending: true }];
  return values.map((value) => {
    if (value === '') throw errors.auditEmptySort();
    const descending = value.startsWith('-');
    const column = descending ? value.slice(1) : value;
    if (!(SORT_COLUMNS as readonly string[]).includes(column)) throw errors.auditNotSortable();
    return { column: column as SortColumn, descending };
  });
}

function parseFilters(params: URLSearchParams): AuditFilter[] {
  const filters: AuditFilter[] = [];
  for (const [name, value] of params) {
    if (PAGING.has(name)) continue;
    const colon = value.indexOf(':');
    // Not of the form predicate:value: not a filter, so ignored.
    if (colon === -1) continue;
    const predicate = value.slice(0, colon);
    const operand = value.slice(colon + 1);
    if (!KNOWN_PREDICATES.has(predicate)) throw errors.auditBadFilters(name);
    if (name === 'id' || name === 'created_at') {
      if (!ORDERED_PREDICATES.includes(predicate)) throw errors.auditPredicateNotSupported(name, predicate);
      const parsed = name === 'id' ? integer(operand) : parseTime(operand);
      if (parsed === undefined) {
        throw errors.auditQueryMalformed(
          name,
          name === 'id' ? 'id must be an integer' : 'created_at must be an RFC 3339 time',
        );
      }
      filters.push({ column: name, predicate: predicate as Predicate, value: parsed });
    } else if ((TEXT_COLUMNS as readonly string[]).includes(name)) {
      if (predicate !== 'eq' && predicate !== 'neq') throw errors.auditPredicateNotSupported(name, predicate);
      filters.push({ column: name as TextColumn, predicate, value: operand });
    } else {
      throw errors.auditNotFilterable(name);
    }
  }
  return filters;
}

/** A signed integer as text, within the range a number holds exactly. */
function integer(text: string): number | undefined {
  if (!INTEGER.test(text)) return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : undefined;
}

/** A count parameter (`skip`, `limit`): absent or empty is `fallback`, else a non-negative integer. */
function count(text: string | null, name: string, fallback: number): number {
  if (text === null || text === '') return fallback;
  const value = integer(text);
  if (value === undefined || value < 0) throw errors.auditQueryMalformed(name, `invalid ${name}`);
  return value;
}

/** A time parameter: absent or empty is `fallback`, else RFC 3339. */
function time(text: string | null, name: string, fallback: number): number {
  if (text === null || text === '') return fallback;
  const value = parseTime(text);
  if (value === undefined) throw errors.auditQueryMalformed(name, 'invalid RFC-3339 datetime format');
  return value;
}
