/**
 * A query as SQL over `audit_logs`: column names and operators come from fixed tables, every value
 * is a parameter. Text sorts by UTF-8 bytes (`COLLATE "C"`), as the file store sorts it.
 */
import type { AuditFilter, AuditListQuery, SortColumn } from './query.js';
import { formatMicros } from './time.js';

/**
 * The columns of an entry, in the shape `rowToEntry` reads (node-postgres reads a bigint as text).
 * No output name shadows a column: ORDER BY would sort by the output instead.
 */
export const ENTRY_COLUMNS = `id,
  to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_time,
  actor_id, actor_name, actor_email, action, fields, request_id, source_ip_address, status, commit_id, hash`;

const OPERATORS = { eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

const ORDER_BY: Readonly<Record<SortColumn, string>> = {
  id: 'id',
  created_at: 'created_at',
  actor_name: 'actor_name COLLATE "C"',
  actor_email: 'actor_email COLLATE "C"',
  action: 'action COLLATE "C"',
  source_ip_address: 'source_ip_address COLLATE "C"',
  status: 'status COLLATE "C"',
};

/** The WHERE clause of `query` and its values (`$1`…). */
export function whereOf(query: AuditListQuery): { where: string; values: unknown[] } {
  const values: unknown[] = [formatMicros(query.after), formatMicros(query.before)];
  const clauses = ['created_at > $1::timestamptz', 'created_at < $2::timestamptz'];
  for (const filter of query.filters) clauses.push(filterSql(filter, values));
  return { where: clauses.join(' AND '), values };
}

function filterSql(filter: AuditFilter, values: unknown[]): string {
  const op = OPERATORS[filter.predicate];
  if (filter.column === 'id') {
    values.push(String(filter.value));
    return `id ${op} $${values.length}::bigint`;
  }
  if (filter.column === 'created_at') {
    values.push(formatMicros(filter.value));
    return `created_at ${op} $${values.length}::timestamptz`;
  }
  values.push(filter.value);
  // The column is one of the fixed names the parser accepted.
  return `${filter.column} ${op} $${values.length}`;
}

/** The ORDER BY list of `query`: its keys, then `id` in the first key's direction. */
export function orderOf(query: AuditListQuery): string {
  const keys = query.sort.map((s) => `${ORDER_BY[s.column]} ${s.descending ? 'DESC' : 'ASC'}`);
  if (!query.sort.some((s) => s.column === 'id')) {
    keys.push(`id ${query.sort[0]?.descending === true ? 'DESC' : 'ASC'}`);
  }
  return keys.join(', ');
}

/** A row selected with `ENTRY_COLUMNS`. */
export interface EntryRow {
  id: string;
  created_time: string;
  actor_id: string;
  actor_name: string;
  actor_email: string;
  action: string;
  fields: Record<string, unknown>;
  request_id: string;
  source_ip_address: string;
  status: string;
  commit_id: string;
  hash: string;
}
