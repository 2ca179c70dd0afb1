/**
 * The audit trail's metrics (contract §12), defined once on the registry they are given. Defining
 * them again on the same registry (a reload) returns the same metrics.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { AUDIT_ACTIONS, type AuditAction, type AuditStatus } from './entry.js';

export interface AuditMetrics {
  /** Entries appended, by action and status. */
  readonly entries: Counter<'action' | 'status'>;
  /** Appends that failed (any action). */
  readonly writeFailures: Counter;
  /** Refusals not recorded: over the per-identity limit. */
  readonly refusalsDropped: Counter;
  /** The id of the last entry this process appended. */
  readonly headId: Gauge;
}

/** The statuses each action writes: the label pairs exported at 0 from the start. */
const SERIES: Readonly<Record<AuditAction, readonly AuditStatus[]>> = {
  UpdateSSOIdentityProvider: ['intent', 'success', 'failure'],
  UnauthorizedAccessAttempt: ['failure'],
};

/** The audit metrics on `registry`. */
export function createAuditMetrics(registry: Registry): AuditMetrics {
  const registers = [registry];
  const existing = <T>(name: string) => registry.getSingleMetric(name) as T | undefined;
  const entries =
    existing<Counter<'action' | 'status'>>('gateway_audit_entries_total') ??
    new Counter({
      name: 'gateway_audit_entries_total',
      help: 'Audit trail entries appended, by action and status',
      labelNames: ['action', 'status'],
      registers,
    });
  for (const action of AUDIT_ACTIONS) for (const status of SERIES[action]) entries.inc({ action, status }, 0);
  return {
    entries,
    writeFailures:
      existing<Counter>('gateway_audit_write_failures_total') ??
      new Counter({
        name: 'gateway_audit_write_failures_total',
        help: 'Audit trail entries that could not be written',
        registers,
      }),
    refusalsDropped:
      existing<Counter>('gateway_audit_refusals_dropped_total') ??
      new Counter({
        name: 'gateway_audit_refusals_dropped_total',
        help: 'Refusals (403) not recorded in the audit trail: over 60 per identity a minute',
        registers,
      }),
    headId:
      existing<Gauge>('gateway_audit_head_id') ??
      new Gauge({
        name: 'gateway_audit_head_id',
        help: 'The id of the last audit trail entry this process appended',
        registers,
      }),
  };
}
