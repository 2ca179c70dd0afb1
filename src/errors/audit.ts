/**
 * The codes of the audit trail (contract §12): the trail that cannot record a change, and the read
 * API's query (`GET /api/v2/audit`), worded as the reference service words its own.
 */
import type { CodeFamily } from './entry.js';

/** Writing the trail. */
export const AUDIT = {
  GW_AUDIT_UNAVAILABLE: {
    status: 503,
    message: 'audit trail unavailable',
    label: 'audit_unavailable',
    reason:
      "The change's `intent` entry could not be made durable, so the change was not made (fail closed).",
    action: 'Operator: check the audit store (`/readyz` names it); the client may send the request again.',
  },
  GW_AUDIT_OUTCOME_LOST: {
    status: 500,
    message: 'audit outcome not recorded',
    label: 'audit_outcome_lost',
    reason:
      "A change was made, but its audit trail's outcome entry could not be written (contract §12): the change stands.",
    action: 'Operator: check the audit store; `gateway audit verify` lists the intent without outcome.',
  },
} as const satisfies CodeFamily;

/** The read API's query parameters. */
export const AUDIT_QUERY = {
  GW_AUDIT_QUERY_MALFORMED: {
    status: 400,
    message: 'query parameter "<parameter>" is malformed: <why>',
    reason:
      '`skip`, `offset`, `limit`, `before`, `after` or a filter value is not a valid integer or RFC 3339 time, or `limit` is above 1000.',
    action: 'Send integers for `skip` and `limit` (at most 1000), RFC 3339 times for `before` and `after`.',
  },
  GW_AUDIT_SORT_EMPTY: {
    status: 400,
    message: 'empty sort_by parameter supplied',
    reason: 'A `sort_by` parameter without a column.',
    action: 'Name a column, with a leading `-` to sort descending.',
  },
  GW_AUDIT_SORT_INVALID: {
    status: 400,
    message: 'column format does not support sorting',
    reason: '`sort_by` names a column that cannot be sorted.',
    action: 'Sort by id, actor_name, actor_email, action, created_at, source_ip_address or status.',
  },
  GW_AUDIT_FILTER_INVALID: {
    status: 400,
    message: 'there are errors in the query parameter filters specified',
    reason: 'A filter is not written `column=predicate:value` with a known predicate.',
    action: 'Write filters as `column=eq:value` (eq, neq, gt, gte, lt, lte).',
  },
  GW_AUDIT_FILTER_COLUMN: {
    status: 400,
    message: 'the specified column cannot be filtered: <column>',
    reason: 'A filter names a column the trail cannot be filtered by.',
    action:
      'Filter by actor_id, actor_name, actor_email, action, request_id, source_ip_address, status, id or created_at.',
  },
  GW_AUDIT_FILTER_PREDICATE: {
    status: 400,
    message: 'the specified filter predicate is not supported for this column: <column> <predicate>',
    reason: 'An ordering predicate (gt, gte, lt, lte) on a text column.',
    action: 'Use eq or neq on text columns; the ordering predicates apply to id and created_at.',
  },
} as const satisfies CodeFamily;
