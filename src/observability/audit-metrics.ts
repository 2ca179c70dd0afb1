/**
 * The audit trail's metrics (contract §12), defined with the others (`define.ts`): entries appended
 * by action and status (each pair the trail writes exported at 0), appends that failed, refusals
 * not recorded, and the head of the chain this process last appended.
 */
import type client from 'prom-client';
import type { MetricDefinitions } from './define.js';

/** The `action` and `status` pairs the trail writes: exported at 0 from the start. */
const ENTRY_SERIES = [
  { action: 'UpdateSSOIdentityProvider', status: 'intent' },
  { action: 'UpdateSSOIdentityProvider', status: 'success' },
  { action: 'UpdateSSOIdentityProvider', status: 'failure' },
  { action: 'UnauthorizedAccessAttempt', status: 'failure' },
];

export interface AuditMetrics {
  /** Entries appended, by action and status. */
  readonly entries: client.Counter<'action' | 'status'>;
  /** Appends that failed (any action). */
  readonly writeFailures: client.Counter;
  /** Refusals not recorded: over the per-identity limit. */
  readonly refusalsDropped: client.Counter;
  /** The id of the last entry this process appended (the head a cut tail is caught against). */
  readonly headId: client.Gauge;
}

/** The audit metrics, on `define`'s registry. */
export function auditMetrics(define: MetricDefinitions): AuditMetrics {
  return {
    entries: define.counter({
      name: 'gateway_audit_entries_total',
      help: 'Audit trail entries appended, by action and status (intent, success, failure).',
      labelNames: ['action', 'status'],
      zero: ENTRY_SERIES,
    }),
    writeFailures: define.counter({
      name: 'gateway_audit_write_failures_total',
      help: 'Audit trail entries that could not be written (an intent: the change refused with 503).',
    }),
    refusalsDropped: define.counter({
      name: 'gateway_audit_refusals_dropped_total',
      help: 'Refusals (403) not recorded in the audit trail: over 60 per identity a minute.',
    }),
    headId: define.gauge({
      name: 'gateway_audit_head_id',
      help: 'The id of the last audit trail entry this process appended (0: none yet).',
      // Across cluster workers appending to one trail: the newest head.
      aggregator: 'max',
    }),
  };
}
