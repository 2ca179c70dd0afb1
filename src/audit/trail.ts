/**
 * The audit trail as the request path uses it (contract §12): an update writes `intent` before its
 * change (failing closed: no durable intent, no change), then `success` (inside the change's
 * transaction when the trail shares its database, else right after the commit point) or `failure`;
 * a 403 writes one `UnauthorizedAccessAttempt` off the request path. Every appended entry is
 * counted, and the head it makes is logged and exported.
 */
import { randomUUID } from 'node:crypto';
import { errors, GatewayError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { AuditAction, AuditEntry, AuditStatus, NewAuditEntry } from './entry.js';
import { type AuditedProvider, refusalFields, updateFields } from './fields.js';
import type { AuditMetrics } from '../observability/audit-metrics.js';
import type { AuditListQuery, AuditPage } from './query.js';
import { RefusalLimiter } from './refusals.js';
import { type AuditSql, type AuditStore, NEVER } from './store.js';

/** Who made a request: token id, JWT `sub` or certificate subject; a JWT's `name`; its `email` or "". */
export interface AuditActor {
  readonly id: string;
  readonly name: string;
  readonly email: string;
}

/** The request an entry is about. */
export interface AuditRequest {
  readonly actor: AuditActor;
  /** The response's `RequestID`. */
  readonly requestId: string;
  /** The client address (contract §7). */
  readonly sourceIp: string;
}

/** An update that passed authentication, authorization and validation, about to be applied. */
export interface UpdateStart extends AuditRequest {
  readonly ssoProviderId: number;
  /** The provider as found before the change (unknown through an upstream). */
  readonly provider: AuditedProvider | undefined;
  /** The fields the form asks to set (`requestedChanges`). */
  readonly requested: readonly string[];
  /** The SHA-256 of the metadata file, when one was sent (`metadataSha256`). */
  readonly metadataSha256?: string | undefined;
}

/** What a committed update did: the provider after it, the fields that changed (`auditedChanges`). */
export interface UpdateOutcome {
  readonly provider: AuditedProvider | undefined;
  readonly changed: readonly string[];
}

/** The entries of one update, sharing one `commit_id`. */
export interface AuditedUpdate {
  readonly commitId: string;
  /** Appends `intent`; rejects with 503 `audit trail unavailable` (or the deadline's error) when it is not durable. */
  intent(signal?: AbortSignal): Promise<void>;
  /**
   * Writes `success` inside the change's transaction (call it before its COMMIT); undefined when the
   * trail does not share the change's database. Rejects with 503 `audit trail unavailable` when it
   * cannot (the change then rolls back with it).
   */
  readonly inTransaction: ((query: AuditSql, outcome: UpdateOutcome) => Promise<void>) | undefined;
  /**
   * After the commit point: publishes the entry written in the transaction, or appends `success`
   * (whatever the deadline); rejects with 500 `audit outcome not recorded` when that fails.
   */
  succeeded(outcome: UpdateOutcome): Promise<void>;
  /** The change was not made: appends `failure` with `error` (a public message). Never rejects. */
  failed(error: string): Promise<void>;
}

/** A 403 for a missing permission. */
export interface Refusal extends AuditRequest {
  /** The identity's canonical key, for the per-identity limit. */
  readonly principal: string;
  readonly method: string;
  /** The request's path; any query is cut off. */
  readonly path: string;
  /** The permission that was missing. */
  readonly permission: string;
}

export interface AuditTrail {
  /** Its store: `kind` and `where` for `/readyz`, `ready()`. */
  readonly store: AuditStore;
  update(start: UpdateStart): AuditedUpdate;
  /** Records a refusal off the request path (when `refused` is on); never throws, never waits. */
  refused(refusal: Refusal): void;
  list(query: AuditListQuery, signal?: AbortSignal): Promise<AuditPage>;
  /** Resolves once the refusals recorded so far are written (or failed). */
  settled(): Promise<void>;
  close(): Promise<void>;
}

export interface AuditTrailOptions {
  readonly logger: Logger;
  readonly metrics: AuditMetrics;
  /** Record 403 refusals (default true). */
  readonly refused?: boolean;
  /** The trail is in the providers' database: `success` goes in the change's transaction. */
  readonly sharesTransactions?: boolean;
  /** The clock of the refusals' per-identity limit (the store keeps its own for entries). */
  readonly now?: () => number;
}

/** The trail over `store`. */
export function createAuditTrail(store: AuditStore, options: AuditTrailOptions): AuditTrail {
  const { logger, metrics } = options;
  const limiter = new RefusalLimiter(options.now ?? Date.now);
  const pending = new Set<Promise<unknown>>();

  // Each action and status's counter, found once (a label look-up per entry is most of its cost).
  const counters = new Map<string, { inc(): void }>();
  const counted = (action: string, status: string) => {
    const key = `${action} ${status}`;
    let counter = counters.get(key);
    if (counter === undefined) {
      counter = metrics.entries.labels({ action, status });
      counters.set(key, counter);
    }
    return counter;
  };
  const published = (entry: AuditEntry): void => {
    counted(entry.action, entry.status).inc();
    metrics.headId.set(entry.id);
    logger.info(
      {
        audit_head_id: entry.id,
        audit_head_hash: entry.hash,
        audit_action: entry.action,
        audit_status: entry.status,
        commit_id: entry.commit_id,
      },
      'audit entry appended',
    );
  };
  const lost = (entry: NewAuditEntry, err: unknown): void => {
    metrics.writeFailures.inc();
    logger.error(
      {
        err: (err as Error)?.message ?? String(err),
        audit_store: store.where,
        audit_action: entry.action,
        audit_status: entry.status,
        commit_id: entry.commit_id,
      },
      'audit entry not written',
    );
  };
  const append = async (entry: NewAuditEntry, signal: AbortSignal): Promise<AuditEntry> => {
    try {
      const stored = await store.append(entry, signal);
      published(stored);
      return stored;
    } catch (err) {
      lost(entry, err);
      throw err;
    }
  };

  return {
    store,
    update(start) {
      const commitId = randomUUID();
      const entry = (status: AuditStatus, fields: Record<string, unknown>) =>
        newEntry(start, 'UpdateSSOIdentityProvider', status, commitId, fields);
      const fieldsOf = (provider: AuditedProvider | undefined, changed: readonly string[], error?: string) =>
        updateFields({ ...start, provider, changed, error });
      let written: AuditEntry | undefined;
      const inTransaction =
        options.sharesTransactions === true && store.appendIn !== undefined
          ? async (query: AuditSql, outcome: UpdateOutcome) => {
              const success = entry('success', fieldsOf(outcome.provider, outcome.changed));
              try {
                written = await (store.appendIn as NonNullable<AuditStore['appendIn']>)(query, success);
              } catch (err) {
                lost(success, err);
                // The change rolls back with it: refused as an intent would be (the deadline's stays).
                throw err instanceof GatewayError ? err : errors.auditUnavailable(err);
              }
            }
          : undefined;
      return {
        commitId,
        inTransaction,
        async intent(signal = NEVER) {
          try {
            await append(entry('intent', fieldsOf(start.provider, start.requested)), signal);
          } catch (err) {
            throw signal.aborted ? signal.reason : errors.auditUnavailable(err);
          }
        },
        async succeeded(outcome) {
          if (written !== undefined) return published(written);
          try {
            await append(entry('success', fieldsOf(outcome.provider, outcome.changed)), NEVER);
          } catch (err) {
            throw errors.auditOutcomeLost(err);
          }
        },
        async failed(error) {
          // An entry written in a transaction that did not commit does not exist.
          written = undefined;
          await append(entry('failure', fieldsOf(start.provider, start.requested, error)), NEVER).catch(
            () => undefined,
          );
        },
      };
    },

    refused(refusal) {
      if (options.refused === false) return;
      if (!limiter.admit(refusal.principal)) {
        metrics.refusalsDropped.inc();
        return;
      }
      const entry = newEntry(
        refusal,
        'UnauthorizedAccessAttempt',
        'failure',
        randomUUID(),
        refusalFields(refusal),
      );
      const writing = append(entry, NEVER).catch(() => undefined);
      pending.add(writing);
      void writing.then(() => pending.delete(writing));
    },

    list: (query, signal) => store.list(query, signal),
    settled: async () => {
      await Promise.all([...pending]);
    },
    async close() {
      await Promise.all([...pending]);
      await store.close();
    },
  };
}

function newEntry(
  request: AuditRequest,
  action: AuditAction,
  status: AuditStatus,
  commitId: string,
  fields: Record<string, unknown>,
): NewAuditEntry {
  return {
    actor_id: request.actor.id,
    actor_name: request.actor.name,
    actor_email: request.actor.email,
    action,
    fields,
    request_id: request.requestId,
    source_ip_address: request.sourceIp,
    status,
    commit_id: commitId,
  };
}
